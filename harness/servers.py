"""Starting the real server as a subprocess (stdio) and talking to it with the real MCP client.

``running_server``/``Background``/``Mcp``: a server and an ``mcp.Client`` on its stdio; ``RawServer``: the
process itself, for lifecycle checks (signals, stdin closed, leftover browsers); ``server_env``: an
environment that keeps every file of the server in one home; ``user_chromium``: a Chromium the user
started (for --cdp-url); ``html_pages``: ad hoc pages on 127.0.0.1; ``wait_until`` and process helpers.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import psutil
from mcp import Client, StdioServerParameters

from browser_use_mcp.processes import find_spawned_server, owned_processes, stop_server

REPO = Path(__file__).resolve().parent.parent

# Tests must not send a byte beyond loopback, but Chromium preconnects to Google services at
# start whatever its flags say. A proxy on a closed loopback port makes every such connection
# fail on this machine; loopback pages bypass proxies implicitly.
BLACKHOLE_PROXY = '--proxy-server=http://127.0.0.1:9'
TEST_CHROMIUM_ARGS = (BLACKHOLE_PROXY,)


# What a named session is in the servers tests start ('browser' or 'context'), set per module by
# the ``isolation`` fixture (tests/fixtures.isolation_modes): modules that must hold in both modes run twice.
ISOLATION = 'context'

# The browser test servers launch: Chromium's headless shell, the server's default when headless, or
# with BROWSER_USE_MCP_TEST_BROWSER=full the full Chromium (.ci/run runs a part of the suite that way,
# for servers run with --no-headless-shell, --headed or browser-use's extensions). The variable is
# the harness's: server_env drops every BROWSER_USE* variable of the test process.
FULL_CHROMIUM = os.environ.get('BROWSER_USE_MCP_TEST_BROWSER', '').strip().lower() == 'full'


def server_env(home: Path, **extra: str) -> dict[str, str]:
	"""An environment that keeps the server's every file inside ``home``."""
	env = {k: v for k, v in os.environ.items() if not k.startswith(('BROWSER_USE', 'OPENAI', 'ANTHROPIC', 'GOOGLE_API'))}
	env.update(
		HOME=str(home),
		XDG_CONFIG_HOME=str(home / '.config'),
		XDG_RUNTIME_DIR='',
		BROWSER_USE_CONFIG_DIR=str(home / '.config' / 'browseruse'),
		BROWSER_USE_MCP_STATE_DIR=str(home / 'state'),
		BROWSER_USE_HEADLESS='true',
		ANONYMIZED_TELEMETRY='false',
		BROWSER_USE_MCP_LOG_LEVEL='info',
		PYTHONPATH=str(REPO),
		BROWSER_USE_MCP_CHROMIUM_ARGS=BLACKHOLE_PROXY,
		BROWSER_USE_MCP_ISOLATION=ISOLATION,
		BROWSER_USE_MCP_SHARED_BROWSER_IDLE='0',  # an empty shared Chromium goes at once: tests count processes
		# the test site is on 127.0.0.1: HTTP servers (which block private networks by default) must
		# be told to allow it; tests/e2e/test_egress.py clears this to test the block itself
		BROWSER_USE_MCP_ALLOW_PRIVATE_NETWORKS='true',
	)
	if FULL_CHROMIUM:
		env['BROWSER_USE_MCP_HEADLESS_SHELL'] = 'false'
	env.update(extra)
	return env


@dataclass
class Result:
	raw: Any
	text: str
	is_error: bool
	images: list[Any] = field(default_factory=list)
	texts: list[str] = field(default_factory=list)

	def json(self) -> Any:
		return json.loads(self.text)

	@property
	def structured(self) -> Any:
		return self.raw.structured_content


class Mcp:
	"""A connected client plus the server process behind it."""

	def __init__(self, client: Client, pid: int, home: Path) -> None:
		self.client = client
		self.pid = pid
		self.home = home

	async def call(self, name: str, timeout: float = 60, **arguments: Any) -> Result:
		raw = await self.client.call_tool(name, arguments, read_timeout_seconds=timeout)
		texts = [c.text for c in raw.content if getattr(c, 'type', None) == 'text']
		images = [c for c in raw.content if getattr(c, 'type', None) == 'image']
		return Result(raw, texts[0] if texts else '', bool(raw.is_error), images, texts)

	async def ok(self, name: str, **arguments: Any) -> Result:
		result = await self.call(name, **arguments)
		assert not result.is_error, f'{name}({arguments}) failed: {result.text}'
		return result

	async def page_state(self, session_id: str | None = None) -> dict[str, Any]:
		"""browser_get_state of a session (the default one without an id), parsed."""
		return (await self.ok('browser_get_state', **({} if session_id is None else {'session_id': session_id}))).json()

	def browsers(self) -> set[int]:
		return owned_processes(self.pid)


def autogroup(pid: int) -> tuple[str, int]:
	"""(group, niceness) of a process's scheduling autogroup (Linux), e.g. ('/autogroup-42', 10).
	A process that no ancestor moved to a session of its own (setsid) is in the kernel's default
	group, whose file reads empty and whose niceness is always 0: ('/', 0), as for PID 1 in a
	container, and for whatever a CI runner starts without setsid."""
	text = Path(f'/proc/{pid}/autogroup').read_text().split()
	if not text:
		return '/', 0
	group, _, nice = text
	return group, int(nice)


def chromium_pids(pids: set[int]) -> set[int]:
	out = set()
	for pid in pids:
		with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
			if 'chrom' in psutil.Process(pid).name().lower():
				out.add(pid)
	return out


def alive(pid: int) -> bool:
	"""Whether process ``pid`` exists and is not a zombie. Gone between the two questions (a killed process
	being reaped by init) counts as gone, not as an error."""
	try:
		return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
	except psutil.Error:
		return False


def wait_until(predicate: Any, timeout: float = 10.0, interval: float = 0.05) -> bool:
	deadline = time.monotonic() + timeout
	while time.monotonic() < deadline:
		if predicate():
			return True
		time.sleep(interval)
	return bool(predicate())


@contextlib.asynccontextmanager
async def running_server(home: Path, *args: str, env: dict[str, str] | None = None) -> AsyncIterator[Mcp]:
	"""Start ``python -m browser_use_mcp`` over stdio; on exit make sure it and its browsers are gone."""
	home.mkdir(parents=True, exist_ok=True)
	params = StdioServerParameters(command=sys.executable, args=['-m', 'browser_use_mcp', *args], env=env or server_env(home))
	before = {c.pid for c in psutil.Process().children()}
	client = Client(params, mode='legacy', read_timeout_seconds=120)
	pid = None
	try:
		async with client:
			pid = find_spawned_server(before)
			if pid is None:
				raise RuntimeError('server process not found')
			yield Mcp(client, pid, home)
	finally:
		if pid is not None:
			stop_server(pid)


@contextlib.contextmanager
def user_chromium(profile: Path, *args: str, executable: str | None = None) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
	"""A headless Chromium started as a user would (remote debugging on, its own profile), with
	an about:blank tab: (its http://127.0.0.1:port CDP address, the process). Always killed.
	``executable``: another build than the system's Chromium (the headless shell, for a benchmark)."""
	from browser_use_mcp.browser import find_chromium

	argv = [
		executable or find_chromium() or 'chromium',
		'--headless=new',
		'--no-sandbox',
		BLACKHOLE_PROXY,
		f'--user-data-dir={profile}',
	]
	argv += ['--remote-debugging-port=0', '--no-first-run', *args, 'about:blank']
	proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
	try:
		port_file = profile / 'DevToolsActivePort'

		def port() -> str | None:  # Chromium creates the file before it writes the port into it
			words = port_file.read_text().split() if port_file.exists() else []
			return words[0] if len(words) >= 2 else None  # the port line is complete once the path follows

		assert wait_until(lambda: port() is not None, 15), 'the test browser did not start'
		yield f'http://127.0.0.1:{port()}', proc
	finally:
		os.killpg(proc.pid, signal.SIGKILL)
		proc.wait(5)
		from browser_use_mcp.sidecar import release_singleton

		release_singleton(profile)  # killed, it leaves its singleton's directory in /tmp


class Background:
	"""Hold an async context open in its own task, so fixtures can set up and tear down from
	different tasks (anyio cancel scopes must exit in the task that entered them)."""

	def __init__(self, cm: Any) -> None:
		self._cm = cm
		self._stop = None
		self._task = None

	async def __aenter__(self) -> Any:
		import asyncio

		ready: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
		self._stop = asyncio.Event()

		async def hold() -> None:
			try:
				async with self._cm as value:
					ready.set_result(value)
					await self._stop.wait()
			except BaseException as exc:
				if not ready.done():
					ready.set_exception(exc)
				else:
					raise

		self._task = asyncio.create_task(hold())
		return await ready

	async def __aexit__(self, *exc: object) -> None:
		self._stop.set()
		await self._task


class RawServer:
	"""The server as a plain subprocess whose stdin, signals and death the test controls.

	The MCP client's own stdio transport kills the server's whole process tree when it
	disconnects, which would hide exactly the leaks the lifecycle tests look for; this one
	never touches the process.
	"""

	def __init__(self, home: Path, *args: str, env: dict[str, str] | None = None) -> None:
		self.home = home
		self.args = args
		self.env = env or server_env(home)
		self.proc: Any = None
		self.stderr = b''

	async def start(self) -> RawServer:
		import asyncio

		self.home.mkdir(parents=True, exist_ok=True)
		self.proc = await asyncio.create_subprocess_exec(
			sys.executable,
			'-m',
			'browser_use_mcp',
			*self.args,
			stdin=asyncio.subprocess.PIPE,
			stdout=asyncio.subprocess.PIPE,
			stderr=asyncio.subprocess.PIPE,
			env=self.env,
		)
		self._stderr_task = asyncio.create_task(self._drain_stderr())
		return self

	async def _drain_stderr(self) -> None:
		while True:
			chunk = await self.proc.stderr.read(65536)
			if not chunk:
				return
			self.stderr += chunk

	@property
	def pid(self) -> int:
		return self.proc.pid

	@property
	def stderr_lines(self) -> list[str]:
		return self.stderr.decode('utf-8', 'replace').splitlines()

	@contextlib.asynccontextmanager
	async def transport(self) -> AsyncIterator[Any]:
		import anyio
		import mcp.types as types
		from mcp.shared.message import SessionMessage

		read_writer, read_stream = anyio.create_memory_object_stream(0)
		write_stream, write_reader = anyio.create_memory_object_stream(0)

		async def reader() -> None:
			async with read_writer:
				while True:
					line = await self.proc.stdout.readline()
					if not line:
						return
					try:
						message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
					except ValueError as exc:
						await read_writer.send(exc)
						continue
					await read_writer.send(SessionMessage(message))

		async def writer() -> None:
			async with write_reader:
				async for session_message in write_reader:
					data = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
					with contextlib.suppress(BrokenPipeError, ConnectionResetError):
						self.proc.stdin.write(data.encode() + b'\n')
						await self.proc.stdin.drain()

		async with anyio.create_task_group() as tg:
			tg.start_soon(reader)
			tg.start_soon(writer)
			try:
				yield read_stream, write_stream
			finally:
				tg.cancel_scope.cancel()

	@contextlib.asynccontextmanager
	async def client(self) -> AsyncIterator[Mcp]:
		client = Client(self.transport(), mode='legacy', read_timeout_seconds=120)
		async with client:
			yield Mcp(client, self.pid, self.home)

	def close_stdin(self) -> None:
		with contextlib.suppress(Exception):
			self.proc.stdin.close()

	async def wait(self, timeout: float) -> int | None:
		import asyncio

		try:
			code = await asyncio.wait_for(self.proc.wait(), timeout)
		except TimeoutError:
			return None
		with contextlib.suppress(TimeoutError):  # the last log lines are still in the pipe
			await asyncio.wait_for(asyncio.shield(self._stderr_task), 5)
		return code

	async def stop(self) -> None:
		"""Whatever happened, leave no server and no browser of it behind."""
		if self.proc is None:
			return
		leftovers = owned_processes(self.proc.pid)
		if self.proc.returncode is None:
			with contextlib.suppress(ProcessLookupError):
				self.proc.kill()
			await self.wait(10)
		for pid in leftovers | owned_processes(self.proc.pid):
			with contextlib.suppress(psutil.NoSuchProcess):
				psutil.Process(pid).kill()
		self._stderr_task.cancel()


@contextlib.contextmanager
def html_pages(pages: dict[str, str], doctype: bool = True) -> Iterator[str]:
	"""Serve ``pages`` (path -> body HTML, each wrapped in a page titled with its path) on 127.0.0.1;
	yields the base URL. Any other path is a 404. ``doctype=False``: without one (quirks mode)."""
	head = '<!doctype html>' if doctype else ''

	class Pages(BaseHTTPRequestHandler):
		def log_message(self, *args: object) -> None:
			pass

		def do_GET(self) -> None:  # noqa: N802
			body = pages.get(self.path.split('?')[0])
			data = f'{head}<html><head><meta charset="utf-8"><title>{self.path}</title></head><body>{body}</body></html>'
			self.send_response(200 if body is not None else 404)
			self.send_header('Content-Type', 'text/html; charset=utf-8')
			self.send_header('Cache-Control', 'no-store')
			self.end_headers()
			self.wfile.write(data.encode())

	server = ThreadingHTTPServer(('127.0.0.1', 0), Pages)
	threading.Thread(target=server.serve_forever, daemon=True).start()
	try:
		yield f'http://127.0.0.1:{server.server_address[1]}'
	finally:
		server.shutdown()
		server.server_close()
