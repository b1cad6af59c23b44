"""A hostile client against the real HTTP server (issue #22, items 4 and 5): connections that send
nothing or half a header, huge bodies, a login link from another site, a token making transport
sessions without end, and secrets that must stay out of the log at ``--log-level debug``.

Everything stays on loopback: attackers connect from 127.0.0.2-127.0.0.5 (Linux routes all of
127/8 to lo), the legitimate client from 127.0.0.1. Each load is bounded and ends by itself.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import resource
import select
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from harness.httpserver import ACCEPT, INITIALIZE, HttpServer, connect, http_server
from harness.servers import wait_until

TOKEN = f'harden-{uuid.uuid4().hex}'
OTHER = f'other-{uuid.uuid4().hex}'
ATTACKERS = ('127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5')
HALF_HEADER = b'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl'
GARBAGE = b'\x16\x03\x01\x02\x00 not HTTP at all\r\n\r\n'  # a TLS hello, say: uvicorn answers 400 and warns


@contextlib.contextmanager
def soft_fd_limit(soft: int) -> Iterator[None]:
	"""Run the block (and what it starts) with this soft RLIMIT_NOFILE; restore it after."""
	before = resource.getrlimit(resource.RLIMIT_NOFILE)
	resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, before[1]), before[1]))
	try:
		yield
	finally:
		resource.setrlimit(resource.RLIMIT_NOFILE, before)


def raise_own_fd_limit(needed: int) -> None:
	soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
	if soft < needed:
		resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
	if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < needed:
		pytest.skip(f'this machine allows fewer than {needed} open files per process')


def attack(port: int, count: int, sources: tuple[str, ...]) -> list[socket.socket]:
	"""``count`` connections spread over ``sources``: of every four, two send nothing, one half a
	header, one garbage."""
	socks = []
	for i in range(count):
		sock = socket.socket()
		# the port is chosen at connect, per destination: thousands of binds beside the TIME_WAITs
		# of earlier tests would otherwise run into EADDRINUSE
		with contextlib.suppress(OSError):
			sock.setsockopt(socket.IPPROTO_IP, getattr(socket, 'IP_BIND_ADDRESS_NO_PORT', 24), 1)
		sock.bind((sources[i % len(sources)], 0))
		sock.settimeout(10)
		try:
			sock.connect(('127.0.0.1', port))
			if i % 4 == 1:
				sock.send(HALF_HEADER)
			elif i % 4 == 3:
				sock.send(GARBAGE)
		except OSError:
			sock.close()
			continue
		socks.append(sock)
	return socks


def attack_connections(server: HttpServer) -> int:
	"""Established connections of the server that come from an attacker address."""
	return sum(
		1
		for c in psutil.Process(server.pid).net_connections('tcp')
		if c.status == psutil.CONN_ESTABLISHED and c.raddr and c.raddr.ip in ATTACKERS
	)


async def test_idle_and_half_header_connections_neither_starve_a_client_nor_flood_the_log(tmp_path: Path) -> None:
	raise_own_fd_limit(4500)
	# the server starts with a soft limit of 1024, as on many machines: uvicorn alone ran out of
	# descriptors at the ~1000th idle connection and logged every failed accept
	with contextlib.ExitStack() as stack:
		with soft_fd_limit(1024):  # only while the server starts: it inherits the limit
			server = stack.enter_context(http_server(tmp_path / 'home', '--auth-token', TOKEN, '--header-timeout', '3'))
		pass_through = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
		socks: list[socket.socket] = []
		try:
			assert psutil.Process(server.pid).rlimit(psutil.RLIMIT_NOFILE)[0] == pass_through, 'soft limit raised to hard'
			socks = await asyncio.to_thread(attack, server.port, 4000, ATTACKERS)
			started = time.monotonic()
			async with connect(server, TOKEN) as mcp:
				listed = await mcp.ok('browser_list_sessions')
			took = time.monotonic() - started
			assert listed.text and took < 5, f'initialize + one tool call took {took:.1f} s beside 4000 idle connections'
			# each address keeps --max-connections-per-client (100); the rest were answered 429 and closed
			assert attack_connections(server) <= 100 * len(ATTACKERS)
			assert wait_until(lambda: attack_connections(server) == 0, timeout=10), 'idle connections outlived --header-timeout'
			ends = collections.Counter(_end_of(sock) for sock in socks)
			assert ends['open'] == 0, f'connections the server never closed: {ends}'
			# a refused connection that had sent bytes may see a reset before the answer: how many
			# do depends on the machine's load (3,238 of 3,600 answered once in CI, 90 % most runs)
			assert ends['429'] >= 0.8 * (4000 - 100 * len(ATTACKERS)), f'too few got a 429: {ends}'
		finally:
			for sock in socks:
				sock.close()
		size = server.log.stat().st_size
		assert size < 64 * 1024, f'the log grew to {size} bytes:\n{server.log_text()[-2000:]}'
		assert 'out of system resource' not in server.log_text()
		assert server.log_text().count('Invalid HTTP request received') <= 2, 'one line per 10 s, not one per request'


def _end_of(sock: socket.socket) -> str:
	"""How the server ended an attacking connection: ``429`` (refused with an answer), ``reset``,
	``closed`` (no answer), ``other`` (another answer), or ``open`` (not ended at all)."""
	sock.settimeout(0.01)
	try:
		data = sock.recv(64)
	except TimeoutError:
		return 'open'
	except OSError:
		return 'reset'
	if data.startswith(b'HTTP/1.1 429'):
		return '429'
	return 'closed' if data == b'' else 'other'


async def test_over_the_connection_cap_a_client_gets_503(tmp_path: Path) -> None:
	args = ('--auth-token', TOKEN, '--max-connections', '20', '--max-connections-per-client', '0', '--header-timeout', '30')
	with http_server(tmp_path / 'home', *args) as server:
		socks = await asyncio.to_thread(attack, server.port, 30, ('127.0.0.2',))
		try:
			assert len(socks) == 30, 'every connect was accepted by the kernel'
			time.sleep(0.5)
			answers = []
			for sock in socks:
				ready, _, _ = select.select([sock], [], [], 0)
				answers.append(sock.recv(64) if ready else b'')
			assert sum(a.startswith(b'HTTP/1.1 503') for a in answers) == 10, answers
			# the 20 admitted wait for a header, or got uvicorn's 400 for their garbage
			assert sum(a == b'' or a.startswith(b'HTTP/1.1 400') for a in answers) == 20, answers
		finally:
			for sock in socks:
				sock.close()


# -- one server for bodies, sign-in and secrets ----------------------------------------------


@pytest.fixture(scope='module')
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
	args = ('--auth-token', TOKEN, '--auth-token', OTHER, '--log-level', 'debug')
	with http_server(tmp_path_factory.mktemp('harden-home'), *args) as srv:
		yield srv


def rss(server: HttpServer) -> int:
	return psutil.Process(server.pid).memory_info().rss


def huge_login(server: HttpServer, *, chunked: bool) -> tuple[bytes, int]:
	"""POST 1 GiB to /dashboard/login, streamed 1 MiB at a time (declared up front or chunked),
	until the server answers or closes. Returns its answer and the peak RSS seen meanwhile."""
	gib = 1 << 30
	chunk = b'token=' + b'x' * ((1 << 20) - 6)
	head = (
		f'POST /dashboard/login HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nOrigin: http://127.0.0.1:{server.port}\r\n'
		'Content-Type: application/x-www-form-urlencoded\r\n'
		+ ('Transfer-Encoding: chunked\r\n' if chunked else f'Content-Length: {gib}\r\n')
		+ '\r\n'
	).encode()
	peak = 0
	with socket.create_connection(('127.0.0.1', server.port), timeout=30) as sock:
		sock.sendall(head)
		sent = 0
		while sent < gib:
			readable, _, _ = select.select([sock], [], [], 0)
			if readable:
				break
			try:
				sock.sendall(f'{len(chunk):x}\r\n'.encode() + chunk + b'\r\n' if chunked else chunk)
			except OSError:
				break
			sent += len(chunk)
			if sent % (16 << 20) == 0:
				peak = max(peak, rss(server))
		sock.settimeout(10)
		try:
			answer = sock.recv(256)
		except OSError:
			answer = b''
	return answer, max(peak, rss(server))


@pytest.mark.parametrize('chunked', [False, True], ids=['content-length', 'chunked'])
def test_a_gib_login_post_gets_413_and_memory_stays_bounded(server: HttpServer, chunked: bool) -> None:
	before = rss(server)
	answer, peak = huge_login(server, chunked=chunked)
	assert answer.startswith(b'HTTP/1.1 413'), answer
	assert peak - before < 64 << 20, f'RSS grew by {(peak - before) >> 20} MiB'
	time.sleep(0.5)
	assert rss(server) - before < 64 << 20


def test_a_huge_mcp_body_gets_413(server: HttpServer) -> None:
	headers = {**ACCEPT, 'Authorization': f'Bearer {TOKEN}', 'Content-Type': 'application/json'}

	def body() -> Iterator[bytes]:
		block = b' ' * (1 << 20)
		for _ in range(64):  # 64 MiB, more than the default 4 MiB
			yield block

	with contextlib.suppress(httpx.TransportError):  # the server may close before all is sent
		response = httpx.post(f'http://127.0.0.1:{server.port}/mcp', content=body(), headers=headers, timeout=30)
		assert response.status_code == 413


def test_a_token_in_the_dashboard_url_signs_nobody_in(server: HttpServer) -> None:
	with httpx.Client(base_url=f'http://127.0.0.1:{server.port}') as http:
		page = http.get(f'/dashboard?token={TOKEN}')
		assert page.status_code == 401 and 'does not sign you in' in page.text
		assert 'bumcp_dashboard' not in page.headers.get('set-cookie', ''), 'no sign-in cookie'
		assert http.get('/dashboard/api/sessions').status_code == 401


def test_sign_in_needs_the_forms_csrf_token_and_origin(server: HttpServer) -> None:
	origin = f'http://127.0.0.1:{server.port}'
	with httpx.Client(base_url=origin) as http:
		form = http.get('/dashboard')
		csrf = form.text.split('name="csrf" value="')[1].split('"')[0]
		assert http.cookies.get('bumcp_sign_in') == csrf
		attempts = {
			'no csrf': ({'token': TOKEN}, {'Origin': origin}),
			'wrong csrf': ({'token': TOKEN, 'csrf': 'guess'}, {'Origin': origin}),
			'no origin': ({'token': TOKEN, 'csrf': csrf}, {}),
			'other origin': ({'token': TOKEN, 'csrf': csrf}, {'Origin': 'http://evil.example'}),
		}
		for what, (data, headers) in attempts.items():
			refused = http.post('/dashboard/login', data=data, headers=headers)
			assert refused.status_code == 403, what
			assert 'bumcp_dashboard' not in refused.headers.get('set-cookie', ''), what
		# a login CSRF from another site has no sign-in cookie to pair the field with
		with httpx.Client(base_url=origin) as stranger:
			forged = stranger.post('/dashboard/login', data={'token': TOKEN, 'csrf': csrf}, headers={'Origin': origin})
			assert forged.status_code == 403
		signed = http.post('/dashboard/login', data={'token': TOKEN, 'csrf': csrf}, headers={'Origin': origin})
		assert signed.status_code == 303 and http.cookies.get('bumcp_dashboard')
		assert http.get('/dashboard/api/sessions').status_code == 200
	# the bearer header still works for scripts
	bearer = httpx.get(f'{origin}/dashboard/api/sessions', headers={'Authorization': f'Bearer {TOKEN}'})
	assert bearer.status_code == 200


async def test_no_secret_reaches_the_debug_log_or_a_listing(server: HttpServer, site: str) -> None:
	header_secret = f'hdr-{uuid.uuid4().hex}'
	key_secret = f'key-{uuid.uuid4().hex}'
	cookie_secret = f'cookie{uuid.uuid4().hex}'
	note_secret = f'note{uuid.uuid4().hex}'
	headers = {'Authorization': f'Bearer {header_secret}', 'X-Api-Key': key_secret}
	base = f'http://127.0.0.1:{server.port}'
	async with httpx.AsyncClient(base_url=base) as http:
		await http.get(f'/dashboard?token={TOKEN}')
		await http.get(f'/mcp?token={TOKEN}', headers={'Authorization': f'Bearer {TOKEN}'})
	host = site.split('://', 1)[1].split(':')[0]
	state = {
		'cookies': [{'name': 'auth', 'value': cookie_secret, 'domain': host, 'path': '/', 'httpOnly': True}],
		'origins': [{'origin': site, 'localStorage': [{'name': 'note', 'value': note_secret}]}],
	}
	async with connect(server, TOKEN) as mcp:
		created = await mcp.ok('browser_create_session', session_id='secretive', extra_http_headers=headers, storage_state=state)
		assert created.structured['options']['extra_http_headers'] == {'Authorization': 'redacted', 'X-Api-Key': 'redacted'}
		await mcp.ok('browser_navigate', session_id='secretive', url=f'{site}/two')
		saved = await mcp.ok('browser_save_state', session_id='secretive', path='secret.json')
		assert cookie_secret in saved.text and note_secret in saved.text, 'the caller gets its cookies and storage back'
		listed = (await mcp.ok('browser_list_sessions')).structured['sessions']
		shown = next(s for s in listed if s['session_id'] == 'secretive')['options']
		assert shown == {'extra_http_headers': {'Authorization': 'redacted', 'X-Api-Key': 'redacted'}}
		await mcp.ok('browser_create_session', session_id='restored', storage_state='secret.json')
	async with httpx.AsyncClient(base_url=base) as http:
		api = (await http.get('/dashboard/api/sessions', headers={'Authorization': f'Bearer {TOKEN}'})).json()
	card = next(s for s in api['sessions'] if s['session_id'] == 'secretive')
	assert card['options']['extra_http_headers'] == {'Authorization': 'redacted', 'X-Api-Key': 'redacted'}
	assert header_secret not in str(api) and key_secret not in str(api)
	log = server.log_text()
	assert 'DEBUG' in log and 'GET /dashboard' in log, 'the debug and access logs are on'
	for name, secret in {
		'token': TOKEN,
		'other token': OTHER,
		'header value': header_secret,
		'api key': key_secret,
		'cookie value': cookie_secret,
		'storage value': note_secret,
	}.items():
		assert secret not in log, f'the {name} is in the log'


# -- transport sessions ---------------------------------------------------------------------


def test_transport_sessions_are_capped_per_token_and_expire_when_idle(tmp_path: Path) -> None:
	args = ('--auth-token', TOKEN, '--auth-token', OTHER, '--max-transport-sessions', '3', '--transport-session-idle', '3')
	with http_server(tmp_path / 'home', *args) as server:
		mine = {**ACCEPT, 'Authorization': f'Bearer {TOKEN}', 'MCP-Protocol-Version': LATEST_HANDSHAKE_VERSION}
		theirs = {**mine, 'Authorization': f'Bearer {OTHER}'}

		def initialize(headers: dict[str, str]) -> httpx.Response:
			return httpx.post(server.url, json=INITIALIZE, headers=headers, timeout=30)

		sids = [initialize(mine).headers['mcp-session-id'] for _ in range(3)]
		over = initialize(mine)
		assert over.status_code == 429 and 'transport sessions' in over.text
		assert initialize(theirs).status_code == 200, 'the cap is per token'
		modern = httpx.post(
			server.url,
			json={'jsonrpc': '2.0', 'id': 2, 'method': 'tools/list', 'params': {}},
			headers={**mine, 'MCP-Protocol-Version': '2026-07-28'},
			timeout=30,
		)
		assert modern.status_code != 429, 'stateless requests make no transport session'
		ended = httpx.delete(server.url, headers={**mine, 'Mcp-Session-Id': sids[0]}, timeout=30)
		assert ended.status_code == 200
		assert initialize(mine).status_code == 200, 'a DELETE frees a place'
		time.sleep(4.5)  # --transport-session-idle 3
		gone = httpx.post(
			server.url,
			json={'jsonrpc': '2.0', 'id': 3, 'method': 'tools/list', 'params': {}},
			headers={**mine, 'Mcp-Session-Id': sids[1]},
			timeout=30,
		)
		assert gone.status_code == 404, 'an idle transport session expired'
		assert [initialize(mine).status_code for _ in range(3)] == [200, 200, 200]
