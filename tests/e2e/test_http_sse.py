"""The legacy HTTP+SSE transport (GET /sse, POST /messages/), end to end: the real server in a
subprocess, the 1.x Python SDK's own client (tests/compat/sse_client_v1.py, run in .venv-mcp1),
raw HTTP for what a well-behaved client never sends, and real Chromium.

Servers are started (and always stopped) by harness/httpserver.py's helpers; /sse is served
next to /mcp, and one principal's browser sessions are the same whichever transport reaches
them. Pages come from the loopback test site only.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCResponse

from browser_use_mcp.transports.http import LegacySse
from harness.httpserver import HttpServer, connect, http_server, session_ids
from harness.servers import REPO, owned_processes, wait_until

TOKENS = {name: f'{name}-token-{uuid.uuid4().hex}' for name in ('alpha', 'beta')}
MCP1_PYTHON = REPO / '.venv-mcp1' / 'bin' / 'python'
MCP1_CLIENT = REPO / 'tests' / 'compat' / 'sse_client_v1.py'
INITIALIZE = {
	'jsonrpc': '2.0',
	'id': 1,
	'method': 'initialize',
	'params': {'protocolVersion': '2024-11-05', 'capabilities': {}, 'clientInfo': {'name': 'raw', 'version': '0'}},
}
INITIALIZED = {'jsonrpc': '2.0', 'method': 'notifications/initialized'}


def sse_url(server: HttpServer) -> str:
	return f'http://127.0.0.1:{server.port}/sse'


def bearer(name: str | None) -> dict[str, str]:
	return {'Authorization': f'Bearer {TOKENS[name]}'} if name else {}


@pytest.fixture(scope='module')
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
	"""One server, two tokens: two principals."""
	tokens = [arg for t in TOKENS.values() for arg in ('--auth-token', t)]
	with http_server(tmp_path_factory.mktemp('sse-home'), *tokens) as srv:
		yield srv


def run_v1_client(server: HttpServer, token: str | None, page: str, *args: str) -> tuple[int, Any]:
	"""The 1.x SDK's client against the server: its exit code and the JSON it printed."""
	if not MCP1_PYTHON.exists():
		pytest.fail(f'{MCP1_PYTHON} is missing: run ./scripts/setup.sh, which installs mcp==1.2.1 there', pytrace=False)
	env = {k: v for k, v in os.environ.items() if k != 'MCP_BEARER_TOKEN'}
	if token:
		env['MCP_BEARER_TOKEN'] = token
	done = subprocess.run(
		[str(MCP1_PYTHON), str(MCP1_CLIENT), sse_url(server), page, *args],
		env=env,
		cwd=REPO,
		capture_output=True,
		text=True,
		timeout=120,
	)
	assert done.stdout.strip(), f'the 1.x client printed nothing (exit {done.returncode}):\n{done.stderr}'
	return done.returncode, json.loads(done.stdout)


# -- a raw SSE connection -----------------------------------------------------------------------


class RawSse:
	"""An open GET /sse, read event by event."""

	def __init__(self, response: httpx.Response) -> None:
		self.response = response
		self._lines = response.aiter_lines()

	async def event(self, timeout: float = 30) -> tuple[str, str] | None:
		"""The next event as (name, data); None once the server has ended the stream."""
		name, data = 'message', []
		async with asyncio.timeout(timeout):
			async for line in self._lines:
				if not line:
					if data:
						return name, '\n'.join(data)
					continue
				field, _, value = line.partition(':')
				value = value.removeprefix(' ')
				if field == 'event':
					name = value
				elif field == 'data':
					data.append(value)
		return None

	async def message(self, request_id: int, timeout: float = 30) -> dict[str, Any]:
		"""The server's answer to ``request_id``, skipping whatever comes before it."""
		while True:
			event = await self.event(timeout)
			assert event is not None, f'the stream ended before the answer to request {request_id}'
			if event[0] == 'message' and json.loads(event[1]).get('id') == request_id:
				return json.loads(event[1])


@contextlib.asynccontextmanager
async def raw_sse(http: httpx.AsyncClient, server: HttpServer, token: str | None) -> AsyncIterator[tuple[RawSse, str]]:
	"""Open GET /sse; yields the stream and the URL its ``endpoint`` event says to POST to."""
	async with http.stream('GET', sse_url(server), headers=bearer(token)) as response:
		assert response.status_code == 200, response.status_code
		sse = RawSse(response)
		event = await sse.event()
		assert event is not None and event[0] == 'endpoint', event
		assert event[1].startswith('/messages/?session_id='), event
		yield sse, f'http://127.0.0.1:{server.port}{event[1]}'


# -- the 1.x client ---------------------------------------------------------------------------


async def test_v1_client_shares_sessions_with_mcp_endpoint(server: HttpServer, site: str) -> None:
	"""The 1.x SDK's client connects, lists the tools /mcp lists, browses; the session it made is
	its principal's over /mcp too, and invisible to another principal."""
	sid = f'legacy-{uuid.uuid4().hex[:8]}'
	page = f'{site}/login?user=alice'
	code, report = await asyncio.to_thread(run_v1_client, server, TOKENS['alpha'], page, '--session-id', sid)
	assert code == 0, report
	assert report['protocol_version'] == '2024-11-05' and report['server'] == 'browser-use-mcp'
	assert not report['navigate']['is_error'], report['navigate']
	assert not report['state']['is_error'], report['state']
	assert report['state']['json']['url'] == page

	async with connect(server, TOKENS['alpha']) as alpha, connect(server, TOKENS['beta']) as beta:
		listed = await alpha.client.list_tools()
		assert report['tools'] == [t.name for t in listed.tools]
		# beta: none of alpha's sessions, made over either transport
		assert await session_ids(beta) == set()
		# alpha over /mcp: the very browser the SSE client left, cookie and all
		assert sid in await session_ids(alpha)
		assert (await alpha.ok('browser_get_state', session_id=sid)).json()['url'] == page
		await alpha.ok('browser_navigate', url=f'{site}/whoami', session_id=sid)
		title = (await alpha.ok('browser_evaluate', expression='document.title', session_id=sid)).structured['result']
		assert title == 'Who: alice'
		await alpha.ok('browser_close_session', session_id=sid)


@pytest.mark.parametrize('token', [None, 'wrong-token'], ids=['missing', 'wrong'])
async def test_v1_client_without_valid_token_gets_401(server: HttpServer, site: str, token: str | None) -> None:
	code, report = await asyncio.to_thread(run_v1_client, server, token, f'{site}/')
	assert (code, report) == (3, {'http_status': 401})


# -- raw HTTP ---------------------------------------------------------------------------------


async def test_sse_endpoints_require_a_token(server: HttpServer) -> None:
	async with httpx.AsyncClient(timeout=30) as http:
		for headers in ({}, {'Authorization': 'Bearer wrong-token'}, {'Authorization': f'Basic {TOKENS["alpha"]}'}):
			got = await http.get(sse_url(server), headers=headers)
			assert got.status_code == 401 and got.headers['WWW-Authenticate'].startswith('Bearer ')
			posted = await http.post(
				f'http://127.0.0.1:{server.port}/messages/?session_id={uuid.uuid4().hex}', json=INITIALIZE, headers=headers
			)
			assert posted.status_code == 401 and posted.headers['WWW-Authenticate'].startswith('Bearer ')


async def test_sse_session_is_bound_to_its_token(server: HttpServer) -> None:
	"""Another principal POSTing to a stolen /messages/ URL is told the session does not exist,
	in the same words as for an id nobody has used; its owner's POSTs are accepted."""
	async with httpx.AsyncClient(timeout=30) as http, raw_sse(http, server, 'alpha') as (sse, endpoint):
		stolen = await http.post(endpoint, json=INITIALIZE, headers=bearer('beta'))
		unknown = await http.post(endpoint.split('=')[0] + '=' + uuid.uuid4().hex, json=INITIALIZE, headers=bearer('beta'))
		assert stolen.status_code == 404
		assert (stolen.status_code, stolen.text) == (unknown.status_code, unknown.text)
		assert (await http.post(endpoint, json=INITIALIZE, headers={})).status_code == 401

		# nothing beta sent reached alpha's session: the first answer on it is to alpha's own request
		own = await http.post(endpoint, json={**INITIALIZE, 'id': 7}, headers=bearer('alpha'))
		assert own.status_code == 202
		first = await sse.event()
		assert first is not None and json.loads(first[1])['id'] == 7, first


async def test_foreign_host_header_is_rejected(server: HttpServer) -> None:
	"""DNS rebinding: a page served from another name reaches neither SSE endpoint."""
	foreign = {**bearer('alpha'), 'Host': f'attacker.example:{server.port}'}
	async with httpx.AsyncClient(timeout=30) as http:
		got = await http.get(sse_url(server), headers=foreign)
		assert got.status_code in (400, 403, 421)
		async with raw_sse(http, server, 'alpha') as (_sse, endpoint):
			posted = await http.post(endpoint, json=INITIALIZE, headers=foreign)
			assert posted.status_code in (400, 403, 421)


# -- shutdown ---------------------------------------------------------------------------------


def assert_streams_ended_by_the_server(log: str) -> None:
	"""uvicorn did not have to give up on an open stream and cancel its handler mid-response."""
	assert 'graceful shutdown exceeded' not in log and 'Exception in ASGI application' not in log, log


async def test_sigterm_answers_the_call_in_flight_and_ends_the_stream(tmp_path: Path, site: str) -> None:
	"""An open SSE stream does not hold the server up: on SIGTERM the call still running over it
	gets its "server shut down" answer, the stream ends, the server exits 0 and its browser is gone."""
	with http_server(tmp_path / 'home') as srv:
		async with httpx.AsyncClient(timeout=30) as http, raw_sse(http, srv, None) as (sse, endpoint):
			assert (await http.post(endpoint, json=INITIALIZE)).status_code == 202
			assert 'result' in await sse.message(1)
			assert (await http.post(endpoint, json=INITIALIZED)).status_code == 202
			call = {
				'jsonrpc': '2.0',
				'id': 2,
				'method': 'tools/call',
				'params': {'name': 'browser_navigate', 'arguments': {'url': f'{site}/slow?s=20', 'session_id': 'slow'}},
			}
			assert (await http.post(endpoint, json=call)).status_code == 202

			async with connect(srv, None) as watcher:

				async def busy() -> bool:
					listed = (await watcher.ok('browser_list_sessions')).structured['sessions']
					return any(s['session_id'] == 'slow' and s['busy'] for s in listed)

				deadline = time.monotonic() + 30
				while not await busy():
					assert time.monotonic() < deadline, 'the slow call never started'
					await asyncio.sleep(0.1)

			started = time.monotonic()
			srv.proc.send_signal(signal.SIGTERM)
			answer = await sse.message(2)
			assert answer['result']['isError'] is True and 'server shut down' in answer['result']['content'][0]['text'], answer
			assert await sse.event() is None  # the server ended the stream
			code = await asyncio.to_thread(srv.proc.wait, 30)
			elapsed = time.monotonic() - started
		assert code == 0, srv.log_text()
		assert wait_until(lambda: not owned_processes(srv.pid), timeout=15), srv.log_text()
		assert_streams_ended_by_the_server(srv.log_text())
		print(f'\nSIGTERM to exit with an SSE stream open and a call in flight: {elapsed:.1f} s')


async def test_sigterm_with_idle_sse_stream_exits_promptly(tmp_path: Path) -> None:
	"""The server ends an open stream itself: uvicorn never has to give up waiting on it."""
	with http_server(tmp_path / 'home') as srv:
		async with httpx.AsyncClient(timeout=30) as http, raw_sse(http, srv, None) as (sse, _endpoint):
			started = time.monotonic()
			srv.proc.send_signal(signal.SIGTERM)
			assert await sse.event(timeout=5) is None
			ended = time.monotonic() - started
			code = await asyncio.to_thread(srv.proc.wait, 30)
			elapsed = time.monotonic() - started
		log = srv.log_text()
		assert code == 0, log
		assert_streams_ended_by_the_server(log)
		print(f'\nSIGTERM with an idle SSE stream open: stream ended in {ended:.2f} s, exit in {elapsed:.1f} s')


# -- LegacySse.close, in process ----------------------------------------------------------------


HOST = [(b'host', b'127.0.0.1:8000')]


class AnswersAfter:
	"""Stands in for the MCP ``Server``: answers each request after ``delay`` s (never if None)."""

	def __init__(self, delay: float | None) -> None:
		self.delay = delay
		self.received = asyncio.Event()

	def create_initialization_options(self) -> None:
		return None

	async def run(self, read: Any, write: Any, _options: None) -> None:
		async with read, write:
			async for item in read:
				self.received.set()
				await asyncio.sleep(self.delay if self.delay is not None else 3600)
				await write.send(SessionMessage(JSONRPCResponse(jsonrpc='2.0', id=item.message.id, result={})))


async def open_stream_with_request_in_flight(legacy: LegacySse, server: AnswersAfter) -> tuple[asyncio.Task[None], list[Any]]:
	"""GET /sse straight into the ASGI app, then POST one request and wait until the server has
	it; returns the GET's task and the ASGI messages it has sent."""
	sent: list[Any] = []
	never = asyncio.Event()

	async def wait_forever() -> dict[str, Any]:
		await never.wait()
		return {'type': 'http.disconnect'}

	async def record(message: Any) -> None:
		sent.append(message)

	get = {'type': 'http', 'method': 'GET', 'path': '/sse', 'root_path': '', 'query_string': b'', 'headers': HOST}
	task = asyncio.create_task(legacy.stream(get, wait_forever, record))
	try:
		async with asyncio.timeout(5):
			body = b''
			while b'session_id=' not in body:
				await asyncio.sleep(0.01)
				body = b''.join(m.get('body', b'') for m in sent)
			session = body.split(b'session_id=')[1].split(b'\r\n')[0]
			await post_ping(legacy, session)
			await server.received.wait()
	except BaseException:
		task.cancel()
		raise
	return task, sent


async def post_ping(legacy: LegacySse, session: bytes) -> None:
	"""POST /messages/ straight into the ASGI app: one ping request, which must be accepted."""
	post = {
		'type': 'http',
		'method': 'POST',
		'path': '/messages/',
		'root_path': '',
		'query_string': b'session_id=' + session,
		'headers': [*HOST, (b'content-type', b'application/json')],
	}
	request = json.dumps({'jsonrpc': '2.0', 'id': 5, 'method': 'ping'}).encode()
	answered: list[Any] = []

	async def request_body() -> dict[str, Any]:
		return {'type': 'http.request', 'body': request, 'more_body': False}

	async def post_answer(message: Any) -> None:
		answered.append(message)

	await legacy.transport.handle_post_message(post, request_body, post_answer)
	assert answered[0]['status'] == 202


@pytest.mark.parametrize(('delay', 'drain', 'answered'), [(0.3, 5.0, True), (None, 0.3, False)], ids=['answered', 'cut'])
async def test_close_waits_for_answers_in_flight_then_ends_streams(delay: float | None, drain: float, answered: bool) -> None:
	"""``close`` keeps a stream open until the requests sent on it are answered, for at most the
	drain time, then ends the event stream properly (a final empty body, not a dropped socket)."""
	server = AnswersAfter(delay)
	legacy = LegacySse(server, None)  # type: ignore[arg-type]
	task, sent = await open_stream_with_request_in_flight(legacy, server)
	try:
		started = time.monotonic()
		await legacy.close(drain)
		await asyncio.wait_for(task, 5)
		elapsed = time.monotonic() - started
	finally:
		task.cancel()
	body = b''.join(m.get('body', b'') for m in sent)
	assert (b'"id":5' in body) is answered, body
	assert elapsed < (0.3 + 1 if answered else drain + 1)
	assert sent[-1] == {'type': 'http.response.body', 'body': b'', 'more_body': False}
