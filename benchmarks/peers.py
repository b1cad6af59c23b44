"""Drivers for the peer MCP servers, so the benchmarks can run them side by side with ours.

``python -m benchmarks.peers [--n 4 | --n 1,4,16] [--only playwright] [--no-latency]`` is a smoke
runner: it starts the loopback test site, runs the 5-step workflow for N = 1 and N (or the listed
values) on every installed peer, measures warm per-tool latency, and prints tables.

The peers (installed by ``scripts/peers.sh`` into ``benchmarks/peers/node_modules``, versions
pinned in ``benchmarks/peers/package.json``; no browser is downloaded, both use the system Chromium):

- ``playwright``: ``@playwright/mcp`` over Streamable HTTP on a free loopback port, ``--isolated``:
  each MCP client connection (one per agent) gets its own browser context in one Chromium.
- ``chrome-devtools``: ``chrome-devtools-mcp`` over stdio, one server and one MCP connection for
  every agent: each agent opens its own page in its own ``isolatedContext`` (``new_page``) and
  routes every later call by ``pageId``.

Both run headless with ``--no-sandbox`` (we run as root), with every file (profile, temp dir,
crash reports, output files) inside a temporary HOME, and with their Chromium's traffic held on
loopback by a dead proxy (``--proxy-server=http://127.0.0.1:9``, 127.0.0.1 bypassed); the flags
are checked on the Chromium command lines after every run. Every process a driver starts is
stopped when its context exits, whatever happened inside, and a sweep makes sure none is left.

Tool names and arguments come from the peers' ``tools/list`` (0.0.83 and 1.11.0):

=============  ================================  ===========================================
step           playwright                        chrome-devtools
=============  ================================  ===========================================
navigate       browser_navigate{url}             new_page{url, isolatedContext} (first), then
                                                 navigate_page{pageId, type: url, url}
state          browser_snapshot{}                take_snapshot{pageId}
click          browser_click{target: ref}        click{pageId, uid}
go back        browser_navigate_back{}           navigate_page{pageId, type: back}
screenshot     browser_take_screenshot{scale}    take_screenshot{pageId}
=============  ================================  ===========================================
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import re
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import psutil
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from benchmarks.common import mb, median_ms, memory_of, table
from harness.httpserver import free_port

PEERS_DIR = Path(__file__).resolve().parent / 'peers'
MODULES = PEERS_DIR / 'node_modules'
DEAD_PROXY = 'http://127.0.0.1:9'
TAG_ENV = 'BROWSER_USE_MCP_PEER_TAG'
STEPS = ('navigate', 'state', 'click', 'state_after', 'go_back')
TOOLS = ('navigate', 'snapshot', 'click', 'screenshot')
CALL_TIMEOUT = 180


@dataclass(frozen=True)
class Peer:
	kind: str
	package: str
	entry: str  # the server's script, relative to node_modules
	transport: str


PEERS = {
	'playwright': Peer('playwright', '@playwright/mcp', '@playwright/mcp/cli.js', 'streamable-http'),
	'chrome-devtools': Peer(
		'chrome-devtools', 'chrome-devtools-mcp', 'chrome-devtools-mcp/build/src/bin/chrome-devtools-mcp.js', 'stdio'
	),
}
KINDS = tuple(PEERS)


class PeerError(RuntimeError):
	pass


def pinned_versions() -> dict[str, str]:
	return json.loads((PEERS_DIR / 'package.json').read_text())['dependencies']


def installed_version(package: str) -> str | None:
	with contextlib.suppress(OSError, ValueError, KeyError):
		return json.loads((MODULES / package / 'package.json').read_text())['version']
	return None


def chromium() -> str | None:
	from browser_use_mcp.browser import find_chromium

	# what our server launches by default: the headless shell when installed (as @playwright/mcp itself
	# does headless), else the full Chromium; BROWSER_USE_MCP_CHROMIUM names another
	return find_chromium(os.environ.get('BROWSER_USE_MCP_CHROMIUM') or None, headless_shell=True)


async def peer_available(kind: str) -> str | None:
	"""None when ``kind`` can run here, else the reason to print."""
	peer = PEERS.get(kind)
	if peer is None:
		return f'unknown peer {kind!r} (known: {", ".join(KINDS)})'
	node = shutil.which('node')
	if not node:
		return 'node not found (install Node.js >= 20, then run scripts/peers.sh)'
	want = pinned_versions().get(peer.package)
	got = installed_version(peer.package)
	if got is None or not (MODULES / peer.entry).is_file():
		return f'{peer.package} not installed (run scripts/peers.sh)'
	if got != want:
		return f'{peer.package} {got} installed, {want} pinned (run scripts/peers.sh)'
	if not chromium():
		return 'no Chromium found'
	proc = await asyncio.create_subprocess_exec(node, '--version', stdout=asyncio.subprocess.PIPE)
	out, _ = await proc.communicate()
	version = out.decode().strip()
	found = re.match(r'v(\d+)', version)
	if not found or int(found.group(1)) < 20:
		return f'node {version or "(no version)"} is too old (need >= 20)'
	return None


# -- one agent's view of a peer -----------------------------------------------------------------


@dataclass
class Agent:
	"""One agent: its own MCP connection (playwright) or its own page in its own isolated context
	on the shared connection (chrome-devtools)."""

	kind: str
	name: str
	client: Client
	page_id: int | None = None

	async def call(self, tool: str, **arguments: Any) -> tuple[str, float]:
		started = time.perf_counter()
		result = await self.client.call_tool(tool, arguments, read_timeout_seconds=CALL_TIMEOUT)
		elapsed = time.perf_counter() - started
		text = '\n'.join(c.text for c in result.content if getattr(c, 'type', None) == 'text')
		if result.is_error:
			raise PeerError(f'{self.kind} {tool}({arguments}) failed: {text[:400]}')
		return text, elapsed

	async def navigate(self, url: str) -> tuple[str, float]:
		if self.kind == 'playwright':
			return await self.call('browser_navigate', url=url)
		if self.page_id is None:  # the agent's first navigation opens its page in its own context
			text, elapsed = await self.call('new_page', url=url, isolatedContext=self.name)
			found = re.search(rf'^(\d+): .*isolatedContext={re.escape(self.name)}(?=\s|$)', text, re.M)
			if not found:
				raise PeerError(f'chrome-devtools new_page: no page in context {self.name!r}: {text[:400]}')
			self.page_id = int(found.group(1))
			return text, elapsed
		return await self.call('navigate_page', pageId=self.page_id, type='url', url=url)

	async def snapshot(self) -> tuple[str, float]:
		if self.kind == 'playwright':
			return await self.call('browser_snapshot')
		return await self.call('take_snapshot', pageId=self.page_id)

	async def click(self, ref: str) -> tuple[str, float]:
		if self.kind == 'playwright':
			return await self.call('browser_click', target=ref)
		return await self.call('click', pageId=self.page_id, uid=ref)

	async def go_back(self) -> tuple[str, float]:
		if self.kind == 'playwright':
			return await self.call('browser_navigate_back')
		return await self.call('navigate_page', pageId=self.page_id, type='back')

	async def screenshot(self) -> tuple[str, float]:
		if self.kind == 'playwright':
			return await self.call('browser_take_screenshot', scale='css')
		return await self.call('take_screenshot', pageId=self.page_id)

	def ref(self, snapshot: str, name: str) -> str:
		"""The ref (playwright, ``[ref=e3]``) or uid (chrome-devtools, ``uid=1_2``) of the element
		whose accessible name is ``name`` in a snapshot."""
		quoted = re.escape(json.dumps(name))
		pattern = rf'{quoted}.*?\[ref=([^\]\s]+)\]' if self.kind == 'playwright' else rf'uid=(\S+) \S+ {quoted}'
		found = re.search(pattern, snapshot)
		if not found:
			raise PeerError(f'{self.kind}: no element {name!r} in snapshot: {snapshot[:400]}')
		return found.group(1)

	def url(self, snapshot: str) -> str | None:
		pattern = r'^- Page URL: (\S+)' if self.kind == 'playwright' else r'RootWebArea .*?url="([^"]*)"'
		found = re.search(pattern, snapshot, re.M)
		return found.group(1) if found else None


# -- a running peer -----------------------------------------------------------------------------


@dataclass
class PeerServer:
	kind: str
	home: Path
	tag: str
	command: list[str]
	pid: int = 0
	url: str | None = None  # playwright: the Streamable HTTP endpoint
	client: Client | None = None  # chrome-devtools: the one stdio connection
	notes: list[str] = field(default_factory=list)

	def processes(self) -> list[psutil.Process]:
		"""The server and everything it started: its process tree, plus any tagged process that
		left it (a browser whose parent died, a crash handler reparented away)."""
		from browser_use_mcp.browser import process_tree

		procs = {p.pid: p for p in process_tree(self.pid)} if self.pid else {}
		for proc in tagged(self.tag):
			procs.setdefault(proc.pid, proc)
		return list(procs.values())

	def browsers(self) -> list[psutil.Process]:
		"""The main Chromium processes (no ``--type=``) among them."""
		out = []
		for proc in self.processes():
			with contextlib.suppress(psutil.Error):
				exe = os.path.basename(proc.exe())  # not the name: chrome-devtools-mcp retitles its node process
				if exe.startswith(('chromium', 'chrome')) and 'crashpad' not in exe:
					if not any(a.startswith('--type=') for a in proc.cmdline()):
						out.append(proc)
		return out

	def check_chromium_flags(self) -> dict[str, Any]:
		"""Every Chromium of this peer is headless, unsandboxed and behind the dead proxy with
		127.0.0.1 bypassed; raises otherwise. Also lists any non-loopback socket of the tree."""
		browsers = self.browsers()
		if not browsers:
			raise PeerError(f'{self.kind}: no Chromium found in its process tree')
		for proc in browsers:
			args = proc.cmdline()
			missing = [
				want
				for want, ok in (
					(f'--proxy-server={DEAD_PROXY}', f'--proxy-server={DEAD_PROXY}' in args),
					(
						'--proxy-bypass-list=...127.0.0.1...',
						any(a.startswith('--proxy-bypass-list=') and '127.0.0.1' in a for a in args),
					),
					('--no-sandbox', '--no-sandbox' in args),
					('--headless', any(a == '--headless' or a.startswith('--headless=') for a in args)),
				)
				if not ok
			]
			if missing:
				raise PeerError(f'{self.kind}: Chromium {proc.pid} lacks {missing}: {" ".join(args)[:600]}')
		outside = set()
		for proc in self.processes():
			with contextlib.suppress(psutil.Error):
				for conn in proc.net_connections(kind='inet'):
					if conn.raddr and not (conn.raddr.ip.startswith('127.') or conn.raddr.ip == '::1'):
						outside.add(f'{proc.name()}->{conn.raddr.ip}:{conn.raddr.port}')
		if outside:
			raise PeerError(f'{self.kind}: connections off loopback: {sorted(outside)}')
		return {'browsers': len(browsers), 'flags_ok': True, 'off_loopback_connections': 0}

	@contextlib.asynccontextmanager
	async def agents(self, count: int, prefix: str = 'agent') -> AsyncIterator[list[Agent]]:
		"""``count`` agents: a connection each (playwright), or pages of the one connection
		(chrome-devtools: the page and its context appear on the agent's first navigation)."""
		names = [f'{prefix}-{i}' for i in range(count)]
		if self.kind == 'chrome-devtools':
			assert self.client is not None
			yield [Agent(self.kind, name, self.client) for name in names]
			return
		assert self.url is not None
		_quiet_teardown_race()
		try:
			async with contextlib.AsyncExitStack() as stack:
				out = []
				for name in names:  # entered and left in this task, in order: an MCP client's scope needs that
					client = Client(self.url, mode='legacy', read_timeout_seconds=CALL_TIMEOUT)
					out.append(Agent(self.kind, name, await stack.enter_async_context(client)))
				yield out
		except BaseExceptionGroup as group:
			raise _leaf(group) from group


class _ClosedStreamFilter(logging.Filter):
	"""Drops the SDK's 'Error parsing SSE message' records caused by a message that arrives after
	its client has closed its read stream (a teardown race, not a failure)."""

	def filter(self, record: logging.LogRecord) -> bool:
		exc = record.exc_info[1] if record.exc_info else None
		return not isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError)


def _quiet_teardown_race() -> None:
	log = logging.getLogger('mcp.client.streamable_http')
	if not any(isinstance(f, _ClosedStreamFilter) for f in log.filters):
		log.addFilter(_ClosedStreamFilter())


def tagged(tag: str) -> list[psutil.Process]:
	"""Live processes whose environment carries ``TAG_ENV=tag`` (what a peer started inherits it)."""
	out = []
	for proc in psutil.process_iter():
		with contextlib.suppress(psutil.Error):
			if proc.environ().get(TAG_ENV) == tag and proc.status() != psutil.STATUS_ZOMBIE:
				out.append(proc)
	return out


def peer_env(home: Path, tag: str) -> dict[str, str]:
	"""Every file a peer or its Chromium writes goes inside ``home``; no browser download, no
	update check, no usage statistics."""
	for sub in ('.config', '.cache', '.local/share', 'tmp', 'output'):
		(home / sub).mkdir(parents=True, exist_ok=True)
	env = {k: v for k, v in os.environ.items() if not k.startswith(('BROWSER_USE', 'PLAYWRIGHT_', 'PUPPETEER_'))}
	env.update(
		HOME=str(home),
		XDG_CONFIG_HOME=str(home / '.config'),
		XDG_CACHE_HOME=str(home / '.cache'),
		XDG_DATA_HOME=str(home / '.local/share'),
		TMPDIR=str(home / 'tmp'),  # both peers create their temporary Chromium profiles here
		PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD='1',
		PUPPETEER_SKIP_DOWNLOAD='1',
		CHROME_DEVTOOLS_MCP_NO_UPDATE_CHECKS='1',
		CHROME_DEVTOOLS_MCP_NO_USAGE_STATISTICS='1',
		CHROME_DEVTOOLS_MCP_NO_CONFIG_DISCOVERY='1',
		NO_PROXY='127.0.0.1,localhost',
		**{TAG_ENV: tag},
	)
	return env


def peer_command(kind: str, home: Path, port: int | None = None) -> list[str]:
	node = shutil.which('node') or 'node'
	exe = chromium() or '/usr/bin/chromium'
	script = str(MODULES / PEERS[kind].entry)
	if kind == 'playwright':
		return [
			node,
			script,
			'--headless',
			'--isolated',
			'--executable-path',
			exe,
			'--no-sandbox',
			'--port',
			str(port),
			'--host',
			'127.0.0.1',
			'--allowed-hosts',
			f'127.0.0.1:{port}',
			'--proxy-server',
			DEAD_PROXY,
			'--proxy-bypass',
			'127.0.0.1',
			'--output-dir',
			str(home / 'output'),
		]
	return [
		node,
		script,
		'--headless',
		'--isolated',
		'--executablePath',
		exe,
		'--chromeArg=--no-sandbox',
		f'--chromeArg=--proxy-server={DEAD_PROXY}',
		'--chromeArg=--proxy-bypass-list=127.0.0.1',
		'--no-usage-statistics',
		'--no-performance-crux',
	]


def log_tail(home: Path, limit: int = 1500) -> str:
	with contextlib.suppress(OSError):
		return (home / 'server.log').read_text(errors='replace')[-limit:]
	return ''


async def _wait_listening(port: int, proc: asyncio.subprocess.Process, home: Path, timeout: float = 60) -> None:
	deadline = time.monotonic() + timeout
	while True:
		if proc.returncode is not None:
			raise PeerError(f'playwright server exited with {proc.returncode}: {log_tail(home)}')
		with contextlib.suppress(OSError):
			_, writer = await asyncio.open_connection('127.0.0.1', port)
			writer.close()
			with contextlib.suppress(OSError):
				await writer.wait_closed()
			return
		if time.monotonic() > deadline:
			raise PeerError(f'playwright server not listening on {port} after {timeout:.0f} s: {log_tail(home)}')
		await asyncio.sleep(0.05)


def _direct_child(tag: str) -> int | None:
	for child in psutil.Process().children():
		with contextlib.suppress(psutil.Error):
			if child.environ().get(TAG_ENV) == tag:
				return child.pid
	return None


@contextlib.asynccontextmanager
async def peer(kind: str) -> AsyncIterator[PeerServer]:
	"""Start one ``kind`` server (its Chromium starts on the first tool call); stop it and every
	process it started on exit, then check that none is left."""
	reason = await peer_available(kind)
	if reason:
		raise PeerError(f'{kind}: {reason}')
	home = Path(tempfile.mkdtemp(prefix=f'bench-peer-{kind}-'))
	tag = uuid.uuid4().hex
	env = peer_env(home, tag)
	srv = PeerServer(kind, home, tag, [])
	seen: dict[int, psutil.Process] = {}
	log = (home / 'server.log').open('w')
	proc: asyncio.subprocess.Process | None = None
	try:
		if kind == 'playwright':
			port = free_port()
			srv.command = peer_command(kind, home, port)
			proc = await asyncio.create_subprocess_exec(
				*srv.command,
				cwd=str(home),
				env=env,
				stdin=asyncio.subprocess.DEVNULL,
				stdout=log,
				stderr=log,
				start_new_session=True,
			)
			srv.pid = proc.pid
			await _wait_listening(port, proc, home)
			srv.url = f'http://127.0.0.1:{port}/mcp'
			try:
				yield srv
			finally:
				seen.update((p.pid, p) for p in srv.processes())
		else:
			srv.command = peer_command(kind, home)
			params = StdioServerParameters(command=srv.command[0], args=srv.command[1:], env=env, cwd=str(home))
			client = Client(stdio_client(params, errlog=log), mode='legacy', read_timeout_seconds=CALL_TIMEOUT)
			try:
				async with client:
					srv.pid = _direct_child(tag) or 0
					if not srv.pid:
						raise PeerError('chrome-devtools server process not found')
					srv.client = client
					try:
						yield srv
					finally:
						seen.update((p.pid, p) for p in srv.processes())  # its Chromium outlives it (#2621)
			except BaseExceptionGroup as group:
				raise _leaf(group) from group
	finally:
		await _stop(srv, proc, seen)
		log.close()
		shutil.rmtree(home, ignore_errors=True)


async def _stop(srv: PeerServer, proc: asyncio.subprocess.Process | None, seen: dict[int, psutil.Process]) -> None:
	"""Ask the server to stop (SIGTERM: it closes its browser), then kill whatever of its tree is
	left, and sweep every process carrying its tag. Raises if one survives."""
	seen.update((p.pid, p) for p in srv.processes())
	if proc is not None and proc.returncode is None:
		with contextlib.suppress(ProcessLookupError):
			proc.terminate()
		with contextlib.suppress(TimeoutError):
			await asyncio.wait_for(proc.wait(), 5)
	for _ in range(3):
		seen.update((p.pid, p) for p in tagged(srv.tag))
		alive = [p for p in seen.values() if _alive(p)]
		if not alive:
			break
		for p in alive:
			with contextlib.suppress(psutil.Error):
				p.kill()
		await asyncio.to_thread(psutil.wait_procs, alive, 5)
	if proc is not None and proc.returncode is None:
		with contextlib.suppress(TimeoutError, ProcessLookupError):
			await asyncio.wait_for(proc.wait(), 5)
	left = [p for p in seen.values() if _alive(p)] + [p for p in tagged(srv.tag) if p.pid not in seen]
	if left:
		raise PeerError(f'{srv.kind}: processes survived the stop: {[p.pid for p in left]}')


def _leaf(group: BaseExceptionGroup) -> BaseException:
	"""The one exception inside nested task-group wrappers (the group itself when there are several)."""
	exc: BaseException = group
	while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
		exc = exc.exceptions[0]
	return exc


def _alive(proc: psutil.Process) -> bool:
	try:
		return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
	except psutil.Error:
		return False


# -- what the benchmarks measure ---------------------------------------------------------------


async def workflow(agent: Agent, site: str) -> list[float]:
	"""navigate to SITE/, snapshot, click "Go to two", snapshot (URL must be SITE/two), go back;
	each step's latency (s)."""
	steps = []
	_, t = await agent.navigate(f'{site}/')
	steps.append(t)
	text, t = await agent.snapshot()
	steps.append(t)
	_, t = await agent.click(agent.ref(text, 'Go to two'))
	steps.append(t)
	text, t = await agent.snapshot()
	steps.append(t)
	if agent.url(text) != f'{site}/two':
		raise PeerError(f'{agent.kind} {agent.name}: after the click the page is {agent.url(text)!r}: {text[:300]}')
	_, t = await agent.go_back()
	steps.append(t)
	return steps


async def peer_workflow(kind: str, n: int, site: str) -> dict[str, Any]:
	"""N agents run the 5-step workflow at once on one ``kind`` server. The server is started and
	the agents' MCP connections opened before the clock starts; the browser (launched on the first
	tool call) and every context are inside it. PSS is measured after the run, all contexts open."""
	async with peer(kind) as srv, srv.agents(n) as agents:
		started = time.perf_counter()
		steps = await asyncio.gather(*(workflow(a, site) for a in agents))
		wall = time.perf_counter() - started
		mem = memory_of(srv.processes())
		server_mem = memory_of([psutil.Process(srv.pid)])
		check = srv.check_chromium_flags()
		command = srv.command
	return {
		'kind': kind,
		'n': n,
		'wall_s': round(wall, 2),
		**mem.mb(),
		'pss_per_agent_mb': round(mb(mem.pss) / n, 1),
		'server_node_pss_mb': mb(server_mem.pss),
		**check,
		'steps_ms': [[round(t * 1000, 1) for t in agent] for agent in steps],
		'step_p50_ms': {name: median_ms([agent[i] for agent in steps]) for i, name in enumerate(STEPS)},
		'command': command,
	}


async def peer_tool_latency(kind: str, site: str, repeats: int = 20) -> dict[str, Any]:
	"""Warm per-tool latency on one agent, as section (d) measures ours: a warm-up round, then
	``repeats`` navigations (alternating / and /two), snapshots, clicks on the "Press me" button
	and screenshots."""
	async with peer(kind) as srv, srv.agents(1, 'warm') as (agent,):
		await agent.navigate(f'{site}/')
		text, _ = await agent.snapshot()
		await agent.click(agent.ref(text, 'Press me'))
		await agent.screenshot()
		times: dict[str, list[float]] = {tool: [] for tool in TOOLS}
		for i in range(repeats):
			times['navigate'].append((await agent.navigate(f'{site}/{"two" if i % 2 else ""}'))[1])
		await agent.navigate(f'{site}/')
		text, _ = await agent.snapshot()
		button = agent.ref(text, 'Press me')
		for _ in range(repeats):
			times['snapshot'].append((await agent.snapshot())[1])
		for _ in range(repeats):
			times['click'].append((await agent.click(button))[1])
		for _ in range(repeats):
			times['screenshot'].append((await agent.screenshot())[1])
		check = srv.check_chromium_flags()
	return {
		'kind': kind,
		'repeats': repeats,
		**check,
		'tools': {tool: {'p50_ms': median_ms(v), 'ms': [round(t * 1000, 1) for t in v]} for tool, v in times.items()},
	}


# -- smoke runner -------------------------------------------------------------------------------


def show_workflow(runs: list[dict[str, Any]]) -> str:
	rows = [
		[
			r['kind'],
			r['n'],
			r['wall_s'],
			r['pss_mb'],
			r['pss_per_agent_mb'],
			r['server_node_pss_mb'],
			r['processes'],
			r['browsers'],
			*(r['step_p50_ms'][s] for s in STEPS),
		]
		for r in runs
	]
	return table(
		'Peers: N agents x 5-step workflow (navigate, snapshot, click link, snapshot, go back), one server each',
		[
			'peer',
			'N',
			'wall (s)',
			'PSS (MB)',
			'PSS/agent',
			'node PSS',
			'procs',
			'Chromiums',
			*(f'{s} p50 (ms)' for s in STEPS),
		],
		rows,
	)


def show_latency(results: list[dict[str, Any]]) -> str:
	rows = [[r['kind'], *(r['tools'][t]['p50_ms'] for t in TOOLS)] for r in results]
	return table('Peers: warm per-tool latency, one agent (p50 ms)', ['peer', *TOOLS], rows)


async def main(args: argparse.Namespace) -> int:
	from harness.pages import PageServer

	counts = args.n if len(args.n) > 1 else sorted({1, *args.n})
	runs: list[dict[str, Any]] = []
	latencies: list[dict[str, Any]] = []
	failed = False
	with PageServer() as site:
		site.httpd.handle_error = lambda *_: None  # browsers closing mid-request are expected here
		for kind in args.only or KINDS:
			reason = await peer_available(kind)
			if reason:
				print(f'{kind}: skipped: {reason}', file=sys.stderr)
				continue
			for n in counts:
				print(f'running {kind} N={n}...', file=sys.stderr, flush=True)
				try:
					runs.append(await peer_workflow(kind, n, site.url))
				except Exception as exc:
					failed = True
					print(f'{kind} N={n} failed: {exc!r}', file=sys.stderr)
			if args.latency:
				print(f'running {kind} per-tool latency...', file=sys.stderr, flush=True)
				try:
					latencies.append(await peer_tool_latency(kind, site.url, args.repeats))
				except Exception as exc:
					failed = True
					print(f'{kind} latency failed: {exc!r}', file=sys.stderr)
	if runs:
		print(show_workflow(runs))
		for kind in dict.fromkeys(r['kind'] for r in runs):
			print(f'{kind}: {" ".join(next(r["command"] for r in runs if r["kind"] == kind))}\n')
	if latencies:
		print(show_latency(latencies))
	if args.json:
		Path(args.json).write_text(json.dumps({'workflow': runs, 'latency': latencies}, indent=2))
	return 1 if failed else 0


def parse(argv: list[str] | None = None) -> argparse.Namespace:
	parser = argparse.ArgumentParser(prog='python -m benchmarks.peers', description=__doc__.split('\n\n')[0])
	parser.add_argument(
		'--n', type=lambda v: [int(x) for x in v.split(',')], default=[4], help='N, or a list like 1,4,16 (one N means 1 and N)'
	)
	parser.add_argument('--only', type=lambda v: [k for k in v.split(',') if k], help=f'peers to run ({",".join(KINDS)})')
	parser.add_argument('--no-latency', dest='latency', action='store_false', help='skip the per-tool latency run')
	parser.add_argument('--repeats', type=int, default=20, help='per-tool repeats after the warm-up (default 20)')
	parser.add_argument('--json', help='also write every raw number to this file')
	return parser.parse_args(argv)


if __name__ == '__main__':
	sys.exit(asyncio.run(main(parse())))
