"""The server over Streamable HTTP in a subprocess, and a real MCP client for it.

``http_server`` runs ``python -m browser_use_mcp --transport http`` on a free loopback port and always
stops it (and the browsers it started); ``connect`` is an ``mcp.Client`` over Streamable HTTP that
presents a bearer token. ``TOKENS`` are four random tokens, one per principal, that a test or
benchmark may pass as ``--auth-token``.
"""

from __future__ import annotations

import contextlib
import random
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types.version import LATEST_HANDSHAKE_VERSION, LATEST_MODERN_VERSION

from harness.servers import REPO, Mcp, owned_processes, server_env, wait_until

TOKENS = {name: f'{name}-token-{uuid.uuid4().hex}' for name in ('alpha', 'beta', 'gamma', 'delta')}
MODERN = LATEST_MODERN_VERSION

# raw JSON-RPC over HTTP, for requests a client library would not send
INITIALIZE = {
	'jsonrpc': '2.0',
	'id': 1,
	'method': 'initialize',
	'params': {'protocolVersion': LATEST_HANDSHAKE_VERSION, 'capabilities': {}, 'clientInfo': {'name': 't', 'version': '0'}},
}
ACCEPT = {'Accept': 'application/json, text/event-stream'}


# -- the server process -----------------------------------------------------------------------


@dataclass
class HttpServer:
	proc: subprocess.Popen[bytes]
	port: int
	home: Path
	log: Path

	@property
	def url(self) -> str:
		return f'http://127.0.0.1:{self.port}/mcp'

	@property
	def pid(self) -> int:
		return self.proc.pid

	def log_text(self) -> str:
		return self.log.read_text(errors='replace')


PORT_ATTEMPTS = 3  # a server whose port was taken before it could bind it is started again on another


LOWEST_PORT = 10000  # free_port picks from here up to the ephemeral range


def _ephemeral_start() -> int:
	"""The first port of the range the kernel picks outgoing connections' local ports from."""
	try:
		return int(Path('/proc/sys/net/ipv4/ip_local_port_range').read_text().split()[0])
	except (OSError, ValueError, IndexError):
		return 32768


def free_port() -> int:
	"""A loopback port that was free a moment ago, for a server the test starts on it. Picked below the
	ephemeral range, where no outgoing connection is given its local port: a port from that range (what
	binding port 0 returns) can be taken by any connection made before the server binds it. Another
	test may still pick the same one; ``http_server`` starts again on another port then."""
	top = _ephemeral_start()
	if top - LOWEST_PORT >= 1000:
		for _ in range(20):
			port = random.randrange(LOWEST_PORT, top)
			with socket.socket() as sock:
				try:
					sock.bind(('127.0.0.1', port))
				except OSError:
					continue
				return port
	with socket.socket() as sock:
		sock.bind(('127.0.0.1', 0))
		return sock.getsockname()[1]


def stop(server: HttpServer, sig: int = signal.SIGTERM, timeout: float = 30) -> int | None:
	"""Signal the server, wait for it, and kill it and its browsers if it did not finish."""
	leftovers = owned_processes(server.pid)
	if server.proc.poll() is None:
		server.proc.send_signal(sig)
	try:
		code: int | None = server.proc.wait(timeout)
	except subprocess.TimeoutExpired:
		server.proc.kill()
		server.proc.wait(10)
		code = None
	for pid in leftovers | owned_processes(server.pid):
		with contextlib.suppress(psutil.NoSuchProcess):
			psutil.Process(pid).kill()
	return code


@contextlib.contextmanager
def http_server(home: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[HttpServer]:
	"""``python -m browser_use_mcp --transport http`` on a free loopback port; always stopped.
	``env``: the server's whole environment (default: ``server_env(home)``)."""
	home.mkdir(parents=True, exist_ok=True)
	log = home / 'server.log'
	argv = [sys.executable, '-m', 'browser_use_mcp', '--transport', 'http', '--host', '127.0.0.1', '--port']
	for attempt in range(PORT_ATTEMPTS):
		# the port was free a moment ago; until the server binds it, another process's outgoing
		# connection may take it as its local port (it is in the ephemeral range): then another port
		port = free_port()
		with log.open('wb') as out:
			proc = subprocess.Popen(
				[*argv, str(port), *args],
				env=server_env(home) if env is None else env,
				cwd=REPO,
				stdin=subprocess.DEVNULL,
				stdout=out,
				stderr=subprocess.STDOUT,
			)
		server = HttpServer(proc, port, home, log)
		try:
			banner = f':{port}/mcp'
			if not wait_until(lambda b=banner, s=server: b in s.log_text() or s.proc.poll() is not None, timeout=90):
				raise RuntimeError('HTTP server did not start:\n' + server.log_text())
			if proc.poll() is not None:
				raise RuntimeError(f'HTTP server exited with {proc.returncode}:\n' + server.log_text())
		except BaseException as exc:
			stop(server)
			if 'Address already in use' in str(exc) and attempt + 1 < PORT_ATTEMPTS:
				continue
			raise
		try:
			yield server
		finally:
			stop(server)
		return


@contextlib.asynccontextmanager
async def connect(server: HttpServer, token: str | None, mode: str = 'legacy') -> AsyncIterator[Mcp]:
	"""An MCP client over Streamable HTTP presenting ``token``; ``mode`` as ``mcp.Client`` takes it."""
	headers = {'Authorization': f'Bearer {token}'} if token else None
	async with create_mcp_http_client(headers=headers) as http:
		async with Client(streamable_http_client(server.url, http_client=http), mode=mode, read_timeout_seconds=120) as client:
			yield Mcp(client, server.pid, server.home)


async def session_ids(mcp: Mcp) -> set[str]:
	listed = (await mcp.ok('browser_list_sessions')).structured['sessions']
	return {s['session_id'] for s in listed}
