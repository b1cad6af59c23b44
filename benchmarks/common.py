"""What every benchmark needs: servers (ours and upstream) behind real MCP stdio clients, the
loopback test site, memory of process trees, and small statistics.

Every server gets its own temporary HOME, browser-use config dir and state dir, telemetry off,
and headless Chromium; every page it loads is on 127.0.0.1. A server (and its browsers) is
stopped when its context exits, whatever happened inside.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import psutil
from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parent.parent
TAG_ENV = 'BROWSER_USE_MCP_BENCH_TAG'


def base_env(home: Path, **extra: str) -> dict[str, str]:
	"""The test suite's server environment (files inside ``home``, Chromium's traffic held on
	loopback by a dead proxy), plus what an upstream server needs to stay as quiet."""
	from harness.servers import server_env

	env = server_env(home, BROWSER_USE_SETUP_LOGGING='false', BROWSER_USE_LOGGING_LEVEL='error')
	env.pop('BROWSER_USE_MCP_STATE_DIR')
	env.pop('BROWSER_USE_MCP_LOG_LEVEL')
	env['BROWSER_USE_PROXY_URL'] = 'http://127.0.0.1:9'  # upstream reads its proxy from here
	# temp files inside home, which is removed afterwards: upstream's downloads dir (browser-use-downloads-*)
	# and its full Chromium's singleton directory (org.chromium.*), left behind when that Chromium is killed
	(home / 'tmp').mkdir(exist_ok=True)
	env['TMPDIR'] = str(home / 'tmp')
	# our servers get the settings the benchmark was run with (the Chromium and its priority, a patch
	# switched off for an A/B, ...); a server's own files stay in its home
	for name, value in os.environ.items():
		if name.startswith('BROWSER_USE_MCP_') and name not in ('BROWSER_USE_MCP_STATE_DIR', 'BROWSER_USE_MCP_CONFIG') and value:
			env[name] = value
	env.update(extra)
	return env


def upstream_config(home: Path) -> None:
	"""config.json for one upstream server: its own profile directory, headless."""
	config_dir = home / '.config' / 'browseruse'
	config_dir.mkdir(parents=True, exist_ok=True)
	ids = [str(uuid.uuid4()) for _ in range(3)]
	config = {
		'browser_profile': {
			ids[0]: {'id': ids[0], 'default': True, 'headless': True, 'user_data_dir': str(home / 'profile')},
		},
		'llm': {ids[1]: {'id': ids[1], 'default': True, 'model': 'gpt-4.1-mini'}},
		'agent': {ids[2]: {'id': ids[2], 'default': True}},
	}
	(config_dir / 'config.json').write_text(json.dumps(config, indent=2))


@dataclass
class Server:
	"""A connected MCP client and the process tree behind it."""

	kind: str  # 'ours' or 'upstream'
	client: Client
	pid: int
	home: Path
	timings: list[float] = field(default_factory=list)

	async def call(self, name: str, **arguments: Any) -> tuple[str, bool, float]:
		started = time.perf_counter()
		result = await self.client.call_tool(name, arguments, read_timeout_seconds=180)
		elapsed = time.perf_counter() - started
		texts = [c.text for c in result.content if getattr(c, 'type', None) == 'text']
		return (texts[0] if texts else ''), bool(result.is_error), elapsed

	async def ok(self, name: str, **arguments: Any) -> tuple[str, float]:
		text, error, elapsed = await self.call(name, **arguments)
		if error:
			raise RuntimeError(f'{self.kind} {name}({arguments}) failed: {text[:300]}')
		return text, elapsed

	def tree(self) -> list[psutil.Process]:
		from browser_use_mcp.browser import process_tree

		return process_tree(self.pid)

	def browser_roots(self) -> int:
		"""Main Chromium processes in this server's tree (one per session or spare)."""
		count = 0
		for proc in self.tree()[1:]:
			with contextlib.suppress(psutil.Error):
				cmdline = proc.cmdline()
				if 'chrom' in proc.name().lower() and not any(a.startswith('--type=') for a in cmdline):
					count += 1
		return count


def _tagged_pid(tag: str) -> int | None:
	me = psutil.Process()
	for child in me.children(recursive=True):
		with contextlib.suppress(psutil.Error):
			if child.environ().get(TAG_ENV) == tag and 'python' in child.name().lower():
				return child.pid
	return None


def server_params(kind: str, home: Path, tag: str, *args: str, env_extra: dict[str, str] | None = None) -> StdioServerParameters:
	"""How to spawn one server over stdio: ours (``-m browser_use_mcp``) or upstream (``-m browser_use.mcp``)."""
	extra = {TAG_ENV: tag, **(env_extra or {})}
	if kind == 'ours':
		env = base_env(home, BROWSER_USE_MCP_STATE_DIR=str(home / 'state'), BROWSER_USE_MCP_LOG_LEVEL='error', **extra)
		module = 'browser_use_mcp'
	else:
		upstream_config(home)
		env = base_env(home, **extra)
		module = 'browser_use.mcp'
	return StdioServerParameters(command=sys.executable, args=['-m', module, *args], env=env)


async def spawn_timing(kind: str) -> tuple[float, float]:
	"""Seconds from spawning a server to its answer to ``initialize``, and to its tool list."""
	home = Path(tempfile.mkdtemp(prefix=f'bench-{kind}-'))
	try:
		client = Client(server_params(kind, home, uuid.uuid4().hex), mode='legacy', read_timeout_seconds=180)
		started = time.perf_counter()
		async with client:
			initialized = time.perf_counter() - started
			await client.list_tools()
			listed = time.perf_counter() - started
		return initialized, listed
	finally:
		shutil.rmtree(home, ignore_errors=True)


@contextlib.asynccontextmanager
async def server(kind: str, *args: str, env_extra: dict[str, str] | None = None) -> AsyncIterator[Server]:
	"""Start one server over stdio: ours (``-m browser_use_mcp``) or upstream (``-m browser_use.mcp``)."""
	home = Path(tempfile.mkdtemp(prefix=f'bench-{kind}-'))
	tag = uuid.uuid4().hex
	client = Client(server_params(kind, home, tag, *args, env_extra=env_extra), mode='legacy', read_timeout_seconds=180)
	leftovers: list[psutil.Process] = []
	try:
		async with client:
			pid = None
			for _ in range(500):
				pid = _tagged_pid(tag)
				if pid:
					break
				await asyncio.sleep(0.01)
			assert pid, f'{kind} server process not found'
			srv = Server(kind, client, pid, home)
			try:
				yield srv
			finally:
				leftovers = srv.tree()  # upstream leaves its Chromium running when its server dies
	finally:
		for proc in leftovers:
			with contextlib.suppress(psutil.Error):
				proc.kill()
		psutil.wait_procs(leftovers, timeout=5)
		shutil.rmtree(home, ignore_errors=True)


@contextlib.asynccontextmanager
async def servers(count: int, kind: str, *args: str) -> AsyncIterator[list[Server]]:
	"""Start ``count`` servers side by side (concurrently), each held open by its own task: an
	MCP client's context must be left in the task that entered it."""
	stop = asyncio.Event()
	ready: list[asyncio.Future[Server]] = [asyncio.get_running_loop().create_future() for _ in range(count)]

	async def hold(future: asyncio.Future[Server]) -> None:
		try:
			async with server(kind, *args) as srv:
				future.set_result(srv)
				await stop.wait()
		except BaseException as exc:
			if not future.done():
				future.set_exception(exc)
			else:
				raise

	holders = [asyncio.create_task(hold(f)) for f in ready]
	try:
		yield list(await asyncio.gather(*ready))
	finally:
		stop.set()
		await asyncio.gather(*holders, return_exceptions=True)


# -- memory ----------------------------------------------------------------------------------------


@dataclass
class Memory:
	pss: int = 0
	uss: int = 0
	rss: int = 0
	processes: int = 0

	def __add__(self, other: Memory) -> Memory:
		return Memory(self.pss + other.pss, self.uss + other.uss, self.rss + other.rss, self.processes + other.processes)

	def mb(self) -> dict[str, float]:
		return {'pss_mb': mb(self.pss), 'uss_mb': mb(self.uss), 'rss_mb': mb(self.rss), 'processes': self.processes}


def memory_of(procs: Iterable[psutil.Process]) -> Memory:
	total = Memory()
	for proc in procs:
		with contextlib.suppress(psutil.Error):
			info = proc.memory_full_info()
			total += Memory(info.pss, info.uss, info.rss, 1)
	return total


def mb(value: float) -> float:
	return round(value / 2**20, 1)


class Spinners:
	"""Processes that keep a core busy each. ``lowest``: each in an autogroup of its own at niceness
	19 (what costs the others least the scheduler can give); ``stopped``: stopped (SIGSTOP) until
	``resume``."""

	def __init__(self, count: int, *, lowest: bool = False, stopped: bool = False) -> None:
		import subprocess

		code = ('import os, signal; os.kill(os.getpid(), signal.SIGSTOP)\n' if stopped else '') + 'while True: pass'
		self.procs = [
			subprocess.Popen(  # noqa: S603
				[sys.executable, '-c', code],
				start_new_session=lowest,
				stdin=subprocess.DEVNULL,
				stdout=subprocess.DEVNULL,
				stderr=subprocess.DEVNULL,
			)
			for _ in range(count)
		]
		if lowest:
			from browser_use_mcp.processes import set_autogroup

			for proc in self.procs:
				os.setpriority(os.PRIO_PROCESS, proc.pid, 19)
				set_autogroup(proc.pid, 19)

	def resume(self) -> None:
		for proc in self.procs:
			os.kill(proc.pid, signal.SIGCONT)

	def pause(self) -> None:
		for proc in self.procs:
			os.kill(proc.pid, signal.SIGSTOP)

	def close(self) -> None:
		for proc in self.procs:
			proc.kill()
			proc.wait()


@contextlib.contextmanager
def spinners(count: int, *, lowest: bool = False, stopped: bool = False) -> Iterator[Spinners]:
	spin = Spinners(count, lowest=lowest, stopped=stopped)
	try:
		yield spin
	finally:
		spin.close()


# -- numbers ---------------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
	"""The value at quantile ``q`` (0-1) of ``values``, nearest rank; nan when there are none."""
	if not values:
		return float('nan')
	ordered = sorted(values)
	return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def median_ms(values: list[float]) -> float:
	return round(statistics.median(values) * 1000, 1) if values else float('nan')


def ratio(a: float, b: float) -> float:
	return round(a / b, 2) if b else float('nan')


def table(title: str, header: list[str], rows: list[list[Any]]) -> str:
	cells = [[str(c) for c in header]] + [[_fmt(c) for c in row] for row in rows]
	widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
	lines = [f'### {title}', '', '| ' + ' | '.join(h.ljust(w) for h, w in zip(cells[0], widths, strict=True)) + ' |']
	lines.append('|' + '|'.join('-' * (w + 2) for w in widths) + '|')
	for row in cells[1:]:
		lines.append('| ' + ' | '.join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + ' |')
	return '\n'.join(lines) + '\n'


def _fmt(value: Any) -> str:
	if isinstance(value, float):
		return f'{value:.2f}' if abs(value) < 10 else f'{value:.1f}' if abs(value) < 1000 else f'{value:.0f}'
	return str(value)


def machine() -> dict[str, Any]:
	import importlib.metadata as md

	vm = psutil.virtual_memory()
	return {
		'cpus': psutil.cpu_count(),
		'memory_gb': round(vm.total / 2**30, 1),
		'available_gb_at_start': round(vm.available / 2**30, 1),
		'loadavg_at_start': [round(x, 2) for x in os.getloadavg()],
		'python': sys.version.split()[0],
		'browser_use': md.version('browser-use'),
		'bubus': md.version('bubus'),
		'mcp': md.version('mcp'),
		'chromium': _chromium_version(),
	}


def _chromium_version() -> str:
	import subprocess

	from browser_use_mcp.browser import find_chromium

	exe = find_chromium()
	if not exe:
		return 'not found'
	with contextlib.suppress(Exception):
		return subprocess.run([exe, '--version'], capture_output=True, text=True, timeout=20).stdout.strip()
	return 'unknown'


def run_in_scratch_home(prefix: str, main: Callable[[], Coroutine[Any, Any, Any]]) -> NoReturn:
	"""Run a benchmark's ``main()`` with a throw-away HOME and quiet browser-use/server logs, then exit 0
	(the scratch home is removed whatever happens)."""
	from harness.servers import server_env

	home = Path(tempfile.mkdtemp(prefix=prefix))
	try:
		os.environ.update(server_env(home, BROWSER_USE_SETUP_LOGGING='false', BROWSER_USE_LOGGING_LEVEL='error'))
		os.environ['BROWSER_USE_MCP_LOG_LEVEL'] = 'error'
		asyncio.run(main())
	finally:
		shutil.rmtree(home, ignore_errors=True)
	sys.exit(0)
