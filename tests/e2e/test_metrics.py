"""Health, readiness and Prometheus metrics, and JSON log lines, end to end (issue #27 items 3-4).

The real server in a subprocess, real MCP clients, real Chromium (contexts of a shared one), the
real Prometheus text parser. One token-protected server on loopback serves most of the module;
the not-ready cases use servers that never launch a working browser (a fake Grid that stops
answering, a "Chromium" that exits at once), so they cost a server start each and no browser.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import json
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from browser_use_mcp.catalog import Catalog
from browser_use_mcp.config import ServerConfig
from browser_use_mcp.metrics import Metrics, needs_token
from browser_use_mcp.server import build_server
from browser_use_mcp.sessions import SessionRegistry
from browser_use_mcp.transports.http import TokenPrincipals, build_app, principal_for_token
from harness.httpserver import HttpServer, connect, free_port, http_server
from harness.servers import running_server, wait_until

ALPHA = f'alpha-token-{uuid.uuid4().hex}'
BETA = f'beta-token-{uuid.uuid4().hex}'


def scrape(base: str, token: str | None = None) -> dict[str, Any]:
	headers = {'Authorization': f'Bearer {token}'} if token else {}
	reply = httpx.get(f'{base}/metrics', headers=headers, timeout=10)
	assert reply.status_code == 200, reply.text
	return {f.name: f for f in text_string_to_metric_families(reply.text)}


def value(families: dict[str, Any], family: str, sample: str | None = None, **labels: str) -> float:
	"""The sum of ``family``'s samples named ``sample`` (default: the family's name) whose labels include ``labels``."""
	found = families.get(family)
	if found is None:
		return 0.0
	name = sample or family
	return sum(s.value for s in found.samples if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()))


@pytest.fixture(scope='module')
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
	args = ('--auth-token', ALPHA, '--auth-token', BETA, '--log-format', 'json', '--log-level', 'info')
	with http_server(tmp_path_factory.mktemp('metrics-home'), *args) as srv:
		yield srv


def base_of(server: HttpServer) -> str:
	return f'http://127.0.0.1:{server.port}'


def ready(base: str, timeout: float = 60) -> bool:
	return wait_until(lambda: httpx.get(f'{base}/readyz', timeout=5).status_code == 200, timeout=timeout, interval=0.2)


# -- health and readiness -----------------------------------------------------------------------


def test_healthz_and_readyz_on_loopback_need_no_token(server: HttpServer) -> None:
	base = base_of(server)
	health = httpx.get(f'{base}/healthz', timeout=5)
	assert health.status_code == 200
	assert health.json()['status'] == 'ok'
	assert ready(base)
	assert httpx.get(f'{base}/readyz', timeout=5).json() == {'status': 'ready'}
	# a rebound DNS name is refused, as on the dashboard
	assert httpx.get(f'{base}/metrics', headers={'Host': 'attacker.example'}, timeout=5).status_code == 421


# -- metrics that move --------------------------------------------------------------------------


async def test_metrics_follow_sessions_and_calls(server: HttpServer) -> None:
	base = base_of(server)
	assert ready(base)
	alpha, beta = principal_for_token(ALPHA), principal_for_token(BETA)
	before = scrape(base)
	calls = 'browser_use_mcp_tool_calls'
	latency = 'browser_use_mcp_tool_call_duration_seconds'
	async with connect(server, ALPHA) as a, connect(server, BETA) as b:
		await a.ok('browser_navigate', url='about:blank', session_id='m1')
		await b.ok('browser_navigate', url='about:blank', session_id='m2')
		for _ in range(3):
			await a.ok('browser_list_tabs', session_id='m1')
		failed = await a.call('browser_switch_tab', session_id='m1', tab_id='ZZZZ')
		assert failed.is_error

		after = scrape(base)
		sessions = 'browser_use_mcp_sessions'
		assert value(after, sessions, principal=alpha) == 1
		assert value(after, sessions, principal=beta) == 1
		assert value(after, sessions, provider='shared') == 2
		assert value(after, sessions, state='idle') == 2
		assert value(after, 'browser_use_mcp_shared_browsers') >= 1
		assert value(after, 'browser_use_mcp_shard_contexts') == 2
		assert value(after, 'browser_use_mcp_takeovers') == 0
		assert value(after, 'browser_use_mcp_ready') == 1

		def moved(family: str, sample: str, **labels: str) -> float:
			return value(after, family, sample, **labels) - value(before, family, sample, **labels)

		assert moved(calls, f'{calls}_total', tool='browser_navigate', outcome='ok') == 2
		assert moved(calls, f'{calls}_total', tool='browser_list_tabs', outcome='ok') == 3
		assert moved(calls, f'{calls}_total', tool='browser_switch_tab', outcome='error') == 1
		assert moved(latency, f'{latency}_count', tool='browser_navigate') == 2
		assert moved(latency, f'{latency}_count', tool='browser_list_tabs') == 3
		# every list_tabs took less than the largest finite bucket
		assert moved(latency, f'{latency}_bucket', tool='browser_list_tabs', le='900.0') == 3
		assert moved(latency, f'{latency}_sum', tool='browser_navigate') > 0

		# Chromium memory is sampled in the background and cached a few seconds
		def memory() -> bool:
			now = scrape(base)
			return value(now, 'browser_use_mcp_chromium_memory_bytes', kind='pss') > 0 and (
				value(now, 'browser_use_mcp_chromium_processes') >= 2
			)

		assert wait_until(memory, timeout=15, interval=1)

		await b.ok('browser_close_session', session_id='m2')
		closed = scrape(base)
		assert value(closed, sessions) == 1
		assert value(closed, sessions, principal=beta) == 0
		assert value(closed, 'browser_use_mcp_shard_contexts') == 1
		await a.ok('browser_close_session', session_id='m1')
	async with httpx.AsyncClient(timeout=10) as client:
		text = (await client.get(f'{base}/metrics')).text
	assert ALPHA not in text and BETA not in text


async def test_a_call_the_client_abandons_counts_as_cancelled(server: HttpServer) -> None:
	base = base_of(server)
	calls = 'browser_use_mcp_tool_calls'

	def cancelled() -> float:
		return value(scrape(base), calls, f'{calls}_total', tool='browser_evaluate', outcome='cancelled')

	before = cancelled()
	async with connect(server, ALPHA) as a:
		await a.ok('browser_navigate', url='about:blank', session_id='m3')
		with contextlib.suppress(TimeoutError):
			await asyncio.wait_for(
				a.call('browser_evaluate', session_id='m3', expression='new Promise(r => setTimeout(r, 8000))'), 1.0
			)
		assert await asyncio.to_thread(wait_until, lambda: cancelled() == before + 1, 10, 0.2)
		await a.ok('browser_close_session', session_id='m3')


# -- JSON logs ----------------------------------------------------------------------------------


async def test_json_log_lines_carry_session_principal_tool_and_no_token(server: HttpServer) -> None:
	async with connect(server, ALPHA) as a:
		await a.ok('browser_navigate', url='about:blank', session_id='logs-1')
		await a.ok('browser_list_tabs', session_id='logs-1')
		await a.ok('browser_close_session', session_id='logs-1')
	# a line with a bearer token in it (the masking filter must still apply in JSON mode)
	async with httpx.AsyncClient(timeout=5) as client:
		await client.post(f'{base_of(server)}/mcp', headers={'Authorization': f'Bearer {ALPHA}x'})
	text = server.log_text()
	assert ALPHA not in text and BETA not in text
	entries = [json.loads(line) for line in text.splitlines()]  # every line: the banner too
	assert any(':' + str(server.port) + '/mcp' in e['message'] for e in entries)
	for entry in entries:
		assert {'time', 'level', 'logger', 'message'} <= entry.keys()
	ended = [e for e in entries if e.get('tool') == 'browser_list_tabs' and e.get('session_id') == 'logs-1']
	assert ended, [e for e in entries if e.get('tool')][-5:]
	line = ended[-1]
	assert line['principal'] == principal_for_token(ALPHA)
	assert line['outcome'] == 'ok' and line['duration_ms'] >= 0
	# lines from inside the call carry it too (the session's creation)
	assert any(
		e.get('tool') == 'browser_navigate' and 'created' in e['message'] for e in entries if e.get('session_id') == 'logs-1'
	)


def test_json_formatter_masks_secrets_in_message_and_traceback() -> None:
	import io
	import logging

	from browser_use_mcp.logs import JsonFormatter, Redact, SessionTag, hide

	secret = f'server-secret-{uuid.uuid4().hex}'
	hide(secret)
	stream = io.StringIO()
	handler = logging.StreamHandler(stream)
	handler.setFormatter(JsonFormatter())
	handler.addFilter(SessionTag())
	handler.addFilter(Redact())
	log = logging.getLogger('test.metrics.json')
	log.addHandler(handler)
	log.propagate = False
	try:
		log.warning('Authorization: Bearer abc.def and %s in url?token=xyz', secret)
		try:
			raise RuntimeError(f'failed with {secret}')
		except RuntimeError:
			log.exception('boom')
	finally:
		log.removeHandler(handler)
	lines = [json.loads(line) for line in stream.getvalue().splitlines()]
	assert len(lines) == 2
	dump = stream.getvalue()
	assert secret not in dump and 'abc.def' not in dump and 'xyz' not in dump
	assert lines[1]['level'] == 'error' and 'RuntimeError' in lines[1]['exception']


# -- who may read them --------------------------------------------------------------------------


@pytest.mark.parametrize(
	('host', 'tokens', 'public', 'expected'),
	[
		('127.0.0.1', True, False, False),
		('::1', True, False, False),
		('0.0.0.0', True, False, True),
		('0.0.0.0', True, True, False),
		('0.0.0.0', False, False, False),  # --allow-unauthenticated: there is no token to ask for
	],
)
def test_who_needs_a_token(host: str, tokens: bool, public: bool, expected: bool) -> None:
	assert needs_token(host, tokens, public) is expected


@pytest.mark.parametrize('public', [False, True])
async def test_beyond_loopback_the_endpoints_take_the_mcp_tokens(public: bool) -> None:
	"""The app a non-loopback bind serves, driven in process (nothing listens anywhere)."""
	config = ServerConfig(host='0.0.0.0', auth_tokens=(ALPHA,), metrics_public=public)
	registry = SessionRegistry(config)
	verifier = TokenPrincipals(config.auth_tokens)
	metrics = Metrics(registry)
	app = build_app(build_server(Catalog(registry), metrics=metrics), config, verifier, None, metrics)
	transport = httpx.ASGITransport(app=app)
	async with httpx.AsyncClient(transport=transport, base_url='http://203.0.113.7:8000') as client:
		for path in ('/healthz', '/readyz', '/metrics'):
			bare = await client.get(path)
			wrong = await client.get(path, headers={'Authorization': 'Bearer not-a-token-of-this-server'})
			right = await client.get(path, headers={'Authorization': f'Bearer {ALPHA}'})
			if public:
				assert bare.status_code != 401 and wrong.status_code != 401
			else:
				assert bare.status_code == 401 and wrong.status_code == 401
				assert bare.headers['www-authenticate'].startswith('Bearer')
			assert right.status_code in (200, 503)  # /readyz: this registry never started
		assert (await client.get('/readyz', headers={'Authorization': f'Bearer {ALPHA}'})).json()['status'] == 'not ready'


# -- not ready ----------------------------------------------------------------------------------


class _FakeGrid(http.server.BaseHTTPRequestHandler):
	def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
		body = json.dumps({'value': {'ready': True, 'message': 'Selenium Grid ready.', 'nodes': []}}).encode()
		self.send_response(200)
		self.send_header('Content-Type', 'application/json')
		self.send_header('Content-Length', str(len(body)))
		self.end_headers()
		self.wfile.write(body)

	def log_message(self, *_args: Any) -> None:
		pass


@contextlib.contextmanager
def fake_grid() -> Iterator[http.server.ThreadingHTTPServer]:
	"""Just enough of a Grid's /status on loopback for the server to start with --grid-url."""
	grid = http.server.ThreadingHTTPServer(('127.0.0.1', 0), _FakeGrid)
	thread = threading.Thread(target=grid.serve_forever, daemon=True)
	thread.start()
	try:
		yield grid
	finally:
		grid.shutdown()
		grid.server_close()


def test_a_grid_that_stops_answering_makes_the_server_not_ready(tmp_path: Any) -> None:
	with fake_grid() as grid:
		url = f'http://127.0.0.1:{grid.server_address[1]}'
		with http_server(tmp_path / 'grid-home', '--grid-url', url) as srv:
			base = base_of(srv)
			assert ready(base)
			grid.shutdown()
			grid.server_close()

			def refused() -> bool:
				reply = httpx.get(f'{base}/readyz', timeout=5)
				return reply.status_code == 503 and 'does not answer' in reply.json()['reason']

			assert wait_until(refused, timeout=10, interval=0.3)
			assert httpx.get(f'{base}/healthz', timeout=5).status_code == 200  # alive all the same
			assert value(scrape(base), 'browser_use_mcp_ready') == 0


async def test_a_chromium_that_cannot_start_makes_the_server_not_ready(tmp_path: Any) -> None:
	with http_server(tmp_path / 'false-home', '--chromium', '/bin/false') as srv:
		base = base_of(srv)
		assert ready(base)  # nothing has tried to launch yet
		async with connect(srv, None) as mcp:
			result = await mcp.call('browser_navigate', url='about:blank', session_id='never')
			assert result.is_error
		await asyncio.sleep(2.1)  # past the readiness cache
		async with httpx.AsyncClient(timeout=5) as client:
			reply = await client.get(f'{base}/readyz')
		assert reply.status_code == 503
		assert reply.json()['reason'].startswith('the last Chromium launch failed')
		assert value(scrape(base), 'browser_use_mcp_tool_calls', 'browser_use_mcp_tool_calls_total', outcome='error') == 1


# -- stdio with --dashboard-port ----------------------------------------------------------------


async def test_stdio_serves_health_and_metrics_beside_the_dashboard(tmp_path: Any) -> None:
	port = free_port()
	async with running_server(tmp_path / 'stdio-home', '--dashboard-port', str(port)) as mcp:
		base = f'http://127.0.0.1:{port}'
		async with httpx.AsyncClient(timeout=10) as client:
			assert (await client.get(f'{base}/healthz')).json()['status'] == 'ok'
			await mcp.ok('browser_list_sessions')
			await mcp.ok('browser_list_sessions')
			families = {f.name: f for f in text_string_to_metric_families((await client.get(f'{base}/metrics')).text)}
		total = 'browser_use_mcp_tool_calls_total'
		assert value(families, 'browser_use_mcp_tool_calls', total, tool='browser_list_sessions', outcome='ok') == 2
		assert value(families, 'browser_use_mcp_sessions') == 0
