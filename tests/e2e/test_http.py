"""Streamable HTTP end to end: the real server in a subprocess, real MCP clients, real Chromium.

One token-protected server serves the whole module (starting Chromium is the slow part, and
tests use their own session ids); the no-token server for the shutdown test is separate
because that test ends its server. Pages come from the loopback test site only.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from browser_use_mcp import sessions
from browser_use_mcp.config import ServerConfig
from browser_use_mcp.transports.http import TokenPrincipals, check_exposure, check_tokens, is_loopback, principal_for_token
from harness.httpserver import ACCEPT, INITIALIZE, MODERN, TOKENS, HttpServer, connect, free_port, http_server, session_ids
from harness.servers import REPO, Mcp, chromium_pids, owned_processes, server_env, wait_until
from tests.fixtures import isolation_modes

# run with a Chromium per session and with contexts of shared Chromiums
isolation = isolation_modes()
pytestmark = pytest.mark.usefixtures('isolation')

HANDLE = re.compile(r'^browser_[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}(?P<suffix>[0-9a-f]{16})$')


@pytest.fixture(scope='module')
def server(tmp_path_factory: pytest.TempPathFactory, isolation: str) -> Iterator[HttpServer]:
	"""One server with four tokens: four principals."""
	tokens = [arg for t in TOKENS.values() for arg in ('--auth-token', t)]
	with http_server(tmp_path_factory.mktemp('http-home'), *tokens) as srv:
		yield srv


async def title_after(mcp: Mcp, url: str, session_id: str | None = None) -> str:
	"""Navigate, then read the page title (the test site puts the cookie's user in it)."""
	ids = {} if session_id is None else {'session_id': session_id}
	await mcp.ok('browser_navigate', url=url, **ids)
	return (await mcp.ok('browser_evaluate', expression='document.title', **ids)).structured['result']


def user_data_dirs(server_pid: int) -> set[Path]:
	"""The profile directories of the server's running browsers, from their command lines."""
	dirs = set()
	for pid in chromium_pids(owned_processes(server_pid)):
		with contextlib.suppress(psutil.Error):
			for arg in psutil.Process(pid).cmdline():
				if arg.startswith('--user-data-dir='):
					dirs.add(Path(arg.split('=', 1)[1]).resolve())
	return dirs


def persistent_profile(server: HttpServer) -> Path:
	return (server.home / '.config' / 'browseruse' / 'profiles' / 'default').resolve()


def same_error(a: str, id_a: str, b: str, id_b: str) -> bool:
	"""Two error texts that differ only in the id they name."""
	return a.replace(id_a, '<id>') == b.replace(id_b, '<id>')


# -- authentication ---------------------------------------------------------------------------

LIST_TOOLS = {'jsonrpc': '2.0', 'id': 2, 'method': 'tools/list', 'params': {}}


@pytest.mark.parametrize(
	('auth', 'version'),
	[
		(None, LATEST_HANDSHAKE_VERSION),
		('Bearer wrong-token', LATEST_HANDSHAKE_VERSION),
		('Bearer', LATEST_HANDSHAKE_VERSION),
		(f'Basic {TOKENS["alpha"]}', LATEST_HANDSHAKE_VERSION),
		(None, MODERN),
		('Bearer wrong-token', MODERN),
	],
	ids=['missing', 'wrong', 'empty', 'not-bearer', 'missing-modern', 'wrong-modern'],
)
def test_unauthenticated_requests_get_401(server: HttpServer, auth: str | None, version: str) -> None:
	headers = {**ACCEPT, 'MCP-Protocol-Version': version}
	if auth is not None:
		headers['Authorization'] = auth
	body = INITIALIZE if version != MODERN else LIST_TOOLS
	response = httpx.post(server.url, json=body, headers=headers, timeout=30)
	assert response.status_code == 401
	assert response.headers['WWW-Authenticate'].startswith('Bearer ')


def test_valid_token_is_accepted_and_never_logged(server: HttpServer) -> None:
	headers = {**ACCEPT, 'Authorization': f'Bearer {TOKENS["alpha"]}'}
	response = httpx.post(server.url, json=INITIALIZE, headers=headers, timeout=30)
	assert response.status_code == 200
	assert response.headers.get('mcp-session-id')
	log = server.log_text()
	assert all(token not in log for token in TOKENS.values())


def test_transport_session_is_bound_to_its_token(server: HttpServer) -> None:
	"""Another principal presenting a stolen Mcp-Session-Id is told it does not exist."""
	alpha = {**ACCEPT, 'Authorization': f'Bearer {TOKENS["alpha"]}', 'MCP-Protocol-Version': LATEST_HANDSHAKE_VERSION}
	sid = httpx.post(server.url, json=INITIALIZE, headers=alpha, timeout=30).headers['mcp-session-id']
	beta = {**alpha, 'Authorization': f'Bearer {TOKENS["beta"]}', 'Mcp-Session-Id': sid}
	response = httpx.post(server.url, json=LIST_TOOLS, headers=beta, timeout=30)
	assert response.status_code == 404
	unknown = httpx.post(server.url, json=LIST_TOOLS, headers={**beta, 'Mcp-Session-Id': uuid.uuid4().hex}, timeout=30)
	assert (response.status_code, response.text) == (unknown.status_code, unknown.text)


def test_foreign_host_header_is_rejected(server: HttpServer) -> None:
	"""DNS rebinding: a page served from another name must not reach the loopback server."""
	headers = {**ACCEPT, 'Authorization': f'Bearer {TOKENS["alpha"]}', 'Host': f'attacker.example:{server.port}'}
	response = httpx.post(server.url, json=INITIALIZE, headers=headers, timeout=30)
	assert response.status_code in (400, 403, 421)


# -- ownership --------------------------------------------------------------------------------


async def test_default_sessions_are_isolated_per_token(server: HttpServer, site: str) -> None:
	"""Unmodified clients (no session_id) with different tokens get different browsers."""
	async with connect(server, TOKENS['alpha']) as alpha, connect(server, TOKENS['beta'], MODERN) as beta:
		await alpha.ok('browser_navigate', url=f'{site}/login?user=alice')
		await beta.ok('browser_navigate', url=f'{site}/login?user=bob')
		assert await title_after(alpha, f'{site}/whoami') == 'Who: alice'
		assert await title_after(beta, f'{site}/whoami') == 'Who: bob'
		assert 'default' in await session_ids(alpha)
		assert 'default' in await session_ids(beta)
		# several principals: no default session may take the persistent profile (logins would leak)
		profiles = user_data_dirs(server.pid)
		assert len(profiles) >= 2 and persistent_profile(server) not in profiles
		await alpha.ok('browser_close')
		await beta.ok('browser_close')


async def test_other_principals_sessions_are_invisible(server: HttpServer, site: str) -> None:
	async with connect(server, TOKENS['alpha']) as alpha, connect(server, TOKENS['gamma']) as gamma:
		handle = (await alpha.ok('browser_create_session')).structured['session_id']
		assert await title_after(alpha, f'{site}/login?user=alice', handle) == 'Logged in'
		unknown = f'browser_{uuid.uuid4()}'

		# list: not there
		assert handle not in await session_ids(gamma)

		# close_session / close: exactly the answer an unknown id gets
		mine, never = (
			await gamma.call('browser_close_session', session_id=handle),
			await gamma.call('browser_close_session', session_id=unknown),
		)
		assert mine.is_error and never.is_error and same_error(mine.text, handle, never.text, unknown)
		mine, never = await gamma.call('browser_close', session_id=handle), await gamma.call('browser_close', session_id=unknown)
		assert not mine.is_error and same_error(mine.text, handle, never.text, unknown)

		# close_all closes only the caller's own sessions
		await gamma.ok('browser_create_session', session_id='gamma-own')
		closed = await gamma.ok('browser_close_all')
		assert closed.structured == {'closed': 1}
		assert handle in await session_ids(alpha)

		# create_session / a tool with the other's id: a separate, fresh session of the caller's own
		created = (await gamma.ok('browser_create_session', session_id=handle)).structured
		assert created['session_id'] == handle and created['created'] is True
		assert await title_after(gamma, f'{site}/whoami', handle) == 'Who: nobody'
		assert await title_after(alpha, f'{site}/whoami', handle) == 'Who: alice'
		assert await session_ids(gamma) == {handle}

		# closing gamma's copy leaves alpha's alone
		await gamma.ok('browser_close_session', session_id=handle)
		assert handle in await session_ids(alpha)
		assert await title_after(alpha, f'{site}/whoami', handle) == 'Who: alice'
		await alpha.ok('browser_close_session', session_id=handle)


# -- resume -----------------------------------------------------------------------------------


@pytest.mark.parametrize('second', ['legacy', MODERN, 'auto'])
async def test_session_survives_reconnect(server: HttpServer, site: str, second: str) -> None:
	"""Page, cookies and tabs are as left after the client disconnects and a new one resumes by
	handle, whichever protocol era either connection speaks."""
	async with connect(server, TOKENS['delta'], 'legacy') as first:
		handle = (await first.ok('browser_create_session')).structured['session_id']
		await first.ok('browser_navigate', url=f'{site}/login?user=carol', session_id=handle)
		await first.ok('browser_navigate', url=f'{site}/two', new_tab=True, session_id=handle)
		before = (await first.ok('browser_list_tabs', session_id=handle)).structured['tabs']
	async with connect(server, TOKENS['delta'], second) as again:
		if second == 'auto':
			assert again.client.session.protocol_version == MODERN
		assert handle in await session_ids(again)
		assert (await again.ok('browser_list_tabs', session_id=handle)).structured['tabs'] == before
		state = (await again.ok('browser_get_state', session_id=handle)).json()
		assert state['url'] == f'{site}/two'
		assert await title_after(again, f'{site}/whoami', handle) == 'Who: carol'
		await again.ok('browser_close_session', session_id=handle)


# -- concurrency ------------------------------------------------------------------------------


async def test_four_clients_two_sessions_each(server: HttpServer, site: str, isolation: str) -> None:
	"""Four principals use the same two session ids at once: eight sessions, no crosstalk."""
	names = list(TOKENS)
	modes = ['legacy', MODERN, 'legacy', MODERN]
	ids = ('work-1', 'work-2')
	# an earlier test's browsers, emptied, are going (at once here) but may not be gone yet: the counts below are this test's
	assert await asyncio.to_thread(wait_until, lambda: not user_data_dirs(server.pid), 10), user_data_dirs(server.pid)
	async with contextlib.AsyncExitStack() as stack:
		clients = [await stack.enter_async_context(connect(server, TOKENS[n], m)) for n, m in zip(names, modes, strict=True)]

		async def login(i: int, sid: str) -> None:
			await clients[i].ok('browser_navigate', url=f'{site}/login?user={names[i]}-{sid}', session_id=sid)

		async def whoami(i: int, sid: str) -> tuple[int, str, str]:
			return i, sid, await title_after(clients[i], f'{site}/whoami', sid)

		started = time.monotonic()
		await asyncio.gather(*(login(i, sid) for i in range(4) for sid in ids))
		results = await asyncio.gather(*(whoami(i, sid) for i in range(4) for sid in ids))
		elapsed = time.monotonic() - started
		assert {(i, sid): title for i, sid, title in results} == {
			(i, sid): f'Who: {names[i]}-{sid}' for i in range(4) for sid in ids
		}
		for client in clients:
			assert await session_ids(client) == set(ids)
		if isolation == 'browser':
			assert len(user_data_dirs(server.pid)) >= 8  # eight browsers, eight profiles
		else:  # eight contexts of one shared Chromium (up to 16 each, filled first), eight session directories
			assert len(user_data_dirs(server.pid)) == 1
			found = sorted(server.home.glob('state/srv-*/s-*/files'))
			assert len(found) == 8 + 1, found  # and the shared Chromium's own
		closed = await asyncio.gather(*(c.ok('browser_close_all') for c in clients))
		assert [r.structured['closed'] for r in closed] == [2, 2, 2, 2]
		print(f'\n8 sessions across 4 HTTP clients created, logged in and checked in {elapsed:.1f} s')


# -- handles ----------------------------------------------------------------------------------


def test_minted_handles_carry_64_random_bits(monkeypatch: pytest.MonkeyPatch) -> None:
	"""The handle is ``browser_`` + uuid7 + 16 hex digits taken straight from os.urandom(8), so
	it stays unguessable even to someone who knows the minute it was made."""
	handles = [sessions.new_session_id() for _ in range(4000)]
	assert len(set(handles)) == len(handles)
	suffixes = []
	for handle in handles:
		match = HANDLE.match(handle)
		assert match, handle
		assert uuid.UUID(handle[8:44]).version == 7
		suffixes.append(int(match['suffix'], 16))
	assert len(set(suffixes)) == len(suffixes)
	# no suffix bit is fixed (a constant or clock-derived bit would be)
	for bit in range(64):
		assert {(s >> bit) & 1 for s in suffixes} == {0, 1}, bit
	# and those 64 bits are the CSPRNG's output, verbatim
	monkeypatch.setattr(sessions.os, 'urandom', lambda n: bytes(range(0xA0, 0xA0 + n)))
	assert sessions.new_session_id().endswith('a0a1a2a3a4a5a6a7')


async def test_server_minted_handle_over_http(server: HttpServer) -> None:
	async with connect(server, TOKENS['beta'], MODERN) as beta:
		handles = [(await beta.ok('browser_create_session')).structured['session_id'] for _ in range(2)]
		assert all(HANDLE.match(h) for h in handles) and handles[0] != handles[1]
		await beta.ok('browser_close_all')


# -- without tokens ---------------------------------------------------------------------------


@pytest.mark.parametrize('host', ['0.0.0.0', '::', '192.168.1.10', 'example.internal'])
def test_refuses_to_expose_without_tokens(host: str) -> None:
	with pytest.raises(SystemExit, match='--auth-token'):
		check_exposure(ServerConfig(transport='http', host=host))
	check_exposure(ServerConfig(transport='http', host=host, auth_tokens=('t' * 32,)))
	check_exposure(ServerConfig(transport='http', host=host, allow_unauthenticated=True))


@pytest.mark.parametrize('host', ['127.0.0.1', '127.0.0.2', 'localhost', '::1', '[::1]'])
def test_loopback_needs_no_tokens(host: str) -> None:
	assert is_loopback(host)
	check_exposure(ServerConfig(transport='http', host=host))


def test_cli_refuses_before_binding(tmp_path: Path) -> None:
	"""The real command exits with the reason and never listens or launches a browser."""
	port = free_port()
	done = subprocess.run(
		[sys.executable, '-m', 'browser_use_mcp', '--transport', 'http', '--host', '0.0.0.0', '--port', str(port)],
		env=server_env(tmp_path),
		cwd=REPO,
		capture_output=True,
		text=True,
		timeout=90,
	)
	assert done.returncode == 2
	assert 'Refusing to serve HTTP on 0.0.0.0' in done.stderr


async def test_principal_is_a_digest_of_the_token() -> None:
	token = TOKENS['alpha']
	principal = principal_for_token(token)
	assert token not in principal and principal == principal_for_token(token) != principal_for_token(TOKENS['beta'])
	verifier = TokenPrincipals([token, TOKENS['beta']])
	found = await verifier.verify_token(token)
	assert found is not None and found.client_id == principal and token not in found.model_dump_json()
	assert await verifier.verify_token(token[:-1]) is None
	assert await verifier.verify_token('') is None


@pytest.mark.parametrize('tokens', [('',), ('good-token-0123456789', '  ')])
def test_empty_token_is_refused(tokens: tuple[str, ...]) -> None:
	with pytest.raises(SystemExit, match='empty'):
		check_tokens(ServerConfig(transport='http', auth_tokens=tokens))


async def test_no_tokens_one_principal_and_sigterm_closes_browsers(tmp_path: Path, site: str) -> None:
	"""Loopback without tokens: every client is the same principal. SIGTERM closes the sessions
	first, so a call in flight is answered (not cut off), then every browser and the server end."""
	with http_server(tmp_path / 'home') as srv:
		async with connect(srv, None) as one, connect(srv, None, MODERN) as two:
			await one.ok('browser_navigate', url=f'{site}/login?user=dave', session_id='shared')
			assert 'shared' in await session_ids(two)
			assert await title_after(two, f'{site}/whoami', 'shared') == 'Who: dave'
			# one principal: its default session gets the persistent profile, as on stdio
			await two.ok('browser_navigate', url=f'{site}/')
			assert persistent_profile(srv) in user_data_dirs(srv.pid)
			assert len(user_data_dirs(srv.pid)) == 2

			in_flight = asyncio.create_task(one.call('browser_navigate', url=f'{site}/slow?s=20', session_id='shared'))

			async def busy() -> bool:
				listed = (await two.ok('browser_list_sessions')).structured['sessions']
				return any(s['session_id'] == 'shared' and s['busy'] for s in listed)

			deadline = time.monotonic() + 30
			while not await busy():
				assert time.monotonic() < deadline and not in_flight.done(), 'the slow call never started'
				await asyncio.sleep(0.1)
			started = time.monotonic()
			srv.proc.send_signal(signal.SIGTERM)
			answer = await asyncio.wait_for(in_flight, 60)
			assert answer.is_error and 'server shut down' in answer.text, answer.text + '\n' + srv.log_text()
			code = await asyncio.to_thread(srv.proc.wait, 60)
			elapsed = time.monotonic() - started
		assert code == 0, srv.log_text()
		assert wait_until(lambda: not owned_processes(srv.pid), timeout=15), srv.log_text()
		print(f'\nSIGTERM to exit with two browsers and a call in flight: {elapsed:.1f} s')


def test_a_server_whose_port_was_taken_before_it_bound_is_started_on_another(
	tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
	"""The harness picks a free port and the server binds it a second later: another process may
	take it in between (its outgoing connection's local port). The harness then starts the server
	again on another port instead of failing every test of the module."""
	import socket

	from harness import httpserver

	taken = socket.socket()
	taken.bind(('127.0.0.1', 0))
	taken.listen()
	ports = iter([taken.getsockname()[1]])
	original = httpserver.free_port
	monkeypatch.setattr(httpserver, 'free_port', lambda: next(ports, None) or original())
	try:
		with http_server(tmp_path / 'home') as server:
			assert server.port != taken.getsockname()[1]
			assert 'Address already in use' not in server.log_text()
			assert server.proc.poll() is None
	finally:
		taken.close()
