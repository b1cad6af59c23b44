"""The egress policy in the network path: real server, real MCP client, real Chromium.

A trap server on 127.0.0.1 counts every TCP connection it accepts; a session under the policy
must never reach it, whichever way its page tries (navigation, location=, fetch, window.open, a
redirect from an allowed host, an <img>, a websocket, a name that resolves to loopback), while
the allowed test site keeps working. Both isolation modes run every test.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from harness.httpserver import connect, http_server
from harness.servers import Background, Mcp, running_server, server_env
from tests.fixtures import isolation_modes

isolation = isolation_modes()
pytestmark = pytest.mark.usefixtures('isolation')


class Trap(ThreadingHTTPServer):
	daemon_threads = True

	def __init__(self) -> None:
		super().__init__(('127.0.0.1', 0), TrapHandler)
		self.connections = 0
		self.lock = threading.Lock()

	def verify_request(self, request: Any, client_address: Any) -> bool:
		with self.lock:
			self.connections += 1
		return True

	@property
	def port(self) -> int:
		return self.server_address[1]


class TrapHandler(BaseHTTPRequestHandler):
	def do_GET(self) -> None:  # noqa: N802
		body = b'<html><head><title>Secret</title></head><body>secret</body></html>'
		self.send_response(200)
		self.send_header('Content-Length', str(len(body)))
		self.end_headers()
		self.wfile.write(body)

	def log_message(self, *args: object) -> None:
		pass


@pytest.fixture(scope='module')
def trap() -> Iterator[Trap]:
	server = Trap()
	threading.Thread(target=server.serve_forever, daemon=True).start()
	yield server
	server.shutdown()
	server.server_close()


def blocked_env(home: Path, **extra: str) -> dict[str, str]:
	"""The test environment without its allowance of private networks."""
	return server_env(home, BROWSER_USE_MCP_ALLOW_PRIVATE_NETWORKS='', **extra)


@pytest.fixture(scope='module')
async def guarded(tmp_path_factory: pytest.TempPathFactory, isolation: str, site: str) -> AsyncIterator[Mcp]:
	"""stdio with --block-private-networks; the operator's list names the test site (its address
	and port: the explicit allowance) and ``localhost`` (a name: still refused, as loopback)."""
	home = tmp_path_factory.mktemp('egress-home')
	env = blocked_env(home, BROWSER_USE_ALLOWED_DOMAINS=f'{site},localhost')
	async with Background(running_server(home, '--block-private-networks', env=env)) as server:
		yield server


async def js(mcp: Mcp, session: str, expression: str) -> Any:
	return (await mcp.ok('browser_evaluate', session_id=session, expression=expression)).structured['result']


async def attempts(mcp: Mcp, session: str, site: str, target: str) -> None:
	"""Every way a page reaches ``target`` (an origin such as http://localhost:1234) by itself,
	each from a fresh page of the allowed ``site``."""
	ws = target.replace('http://', 'ws://')
	for expression in (
		f'fetch("{target}/fetch").then(r => r.status, e => "error")',
		f'(() => {{ const i = new Image(); i.src = "{target}/img.png"; document.body.appendChild(i); return 1 }})()',
		f'new Promise(done => {{ const s = new WebSocket("{ws}/ws"); s.onerror = () => done("error"); '
		's.onopen = () => done("open"); setTimeout(() => done("timeout"), 3000) })',
		f'(() => {{ setTimeout(() => window.open("{target}/popup"), 0); return 1 }})()',
		f'(() => {{ setTimeout(() => {{ location.href = "{target}/location" }}, 0); return 1 }})()',
	):
		await mcp.ok('browser_navigate', session_id=session, url=f'{site}/two')
		await mcp.call('browser_evaluate', session_id=session, expression=expression)
		await asyncio.sleep(0.3)  # a popup or a navigation goes out after the call returns


async def test_a_page_cannot_reach_loopback_whichever_way_it_tries(guarded: Mcp, site: str, trap: Trap) -> None:
	mcp = guarded
	await mcp.ok('browser_navigate', session_id='g', url=f'{site}/two')
	# allowed traffic still flows: the page and a same-origin fetch
	assert await js(mcp, 'g', f'fetch("{site}/").then(r => r.status)') == 200
	before = trap.connections
	for origin in (f'http://localhost:{trap.port}', f'http://127.0.0.1:{trap.port}'):
		await attempts(mcp, 'g', site, origin)
	# a page-started navigation lands on the policy's page, saying why
	await mcp.ok('browser_navigate', session_id='g', url=f'{site}/two')
	await js(mcp, 'g', f'(() => {{ setTimeout(() => {{ location = "http://localhost:{trap.port}/x" }}, 0); return 1 }})()')
	await asyncio.sleep(1.0)
	text = await js(mcp, 'g', 'document.title + " | " + document.body.innerText')
	assert 'egress policy' in text and 'loopback' in text, text
	# a data: URL's script
	await mcp.ok('browser_navigate', session_id='g', url=f'{site}/two')
	await mcp.call(
		'browser_navigate', session_id='g', url=f'data:text/html,<script>location="http://localhost:{trap.port}/data"</script>'
	)
	await asyncio.sleep(1.0)
	assert trap.connections == before, 'the trap was never reached'


async def test_navigate_reports_the_refusal(guarded: Mcp, site: str, trap: Trap) -> None:
	mcp = guarded
	before = trap.connections
	# "localhost" is in the list, so the tool's own check lets it through: the network path refuses
	r = await mcp.call('browser_navigate', session_id='n', url=f'http://localhost:{trap.port}/secret')
	assert r.is_error and 'egress policy' in r.text and 'loopback' in r.text, r.text
	# a redirect from an allowed host: the next hop is a new request, refused
	r = await mcp.call('browser_navigate', session_id='n', url=f'{site}/redirect?to=http://localhost:{trap.port}/hop')
	assert r.is_error and 'egress policy' in r.text, r.text
	assert trap.connections == before
	await mcp.ok('browser_navigate', session_id='n', url=f'{site}/two')
	assert await js(mcp, 'n', 'document.title') == 'Page Two'


async def test_a_session_allow_list_holds_in_the_network_path(tmp_path: Path, site: str, trap: Trap) -> None:
	"""stdio keeps private networks open, but a session's allowed_domains is checked per request."""
	home = tmp_path / 'home'
	async with running_server(home) as mcp:
		await mcp.ok('browser_create_session', session_id='narrow', allowed_domains=[site])
		await mcp.ok('browser_navigate', session_id='narrow', url=f'{site}/two')
		before = trap.connections
		await attempts(mcp, 'narrow', site, f'http://127.0.0.1:{trap.port}')
		await mcp.ok('browser_navigate', session_id='narrow', url=f'{site}/two')
		r = await mcp.call('browser_navigate', session_id='narrow', url=f'{site}/redirect?to=http://127.0.0.1:{trap.port}/hop')
		assert r.is_error and 'allowed domains' in r.text, r.text
		assert trap.connections == before
		# a session without a list beside it reaches loopback as before (stdio)
		await mcp.ok('browser_navigate', session_id='open', url=f'http://127.0.0.1:{trap.port}/fine')
		assert trap.connections > before


async def test_http_blocks_private_networks_by_default(
	tmp_path: Path, site: str, trap: Trap, monkeypatch: pytest.MonkeyPatch
) -> None:
	home = tmp_path / 'home'
	monkeypatch.setattr('harness.httpserver.server_env', blocked_env)
	with http_server(home) as server:
		async with connect(server, None) as mcp:
			r = await mcp.call('browser_navigate', session_id='h', url=f'{site}/two')
			assert r.is_error and 'egress policy' in r.text and 'loopback' in r.text, r.text
			before = trap.connections
			r = await mcp.call('browser_navigate', url=f'http://localhost:{trap.port}/secret')  # the default session too
			assert r.is_error and 'egress policy' in r.text, r.text
			await mcp.call(
				'browser_navigate',
				session_id='h',
				url=f'data:text/html,<script>location="http://127.0.0.1:{trap.port}/data"</script>',
			)
			await asyncio.sleep(1.0)
			assert trap.connections == before
			# the server's own port is not reachable either (the MCP endpoint)
			r = await mcp.call('browser_navigate', session_id='h', url=f'http://127.0.0.1:{server.port}/mcp')
			assert r.is_error and 'egress policy' in r.text, r.text
	assert json.dumps({}) == '{}'


async def test_http_allow_private_networks_keeps_the_own_ports_closed(tmp_path: Path, site: str, trap: Trap) -> None:
	home = tmp_path / 'home'
	with http_server(home) as server:  # the tests' environment allows private networks
		async with connect(server, None) as mcp:
			await mcp.ok('browser_navigate', session_id='a', url=f'{site}/two')
			r = await mcp.call('browser_navigate', session_id='a', url=f'http://127.0.0.1:{server.port}/dashboard')
			assert r.is_error and 'port of this server' in r.text, r.text


async def test_a_session_proxy_is_chained_behind_the_door(tmp_path: Path, trap: Trap) -> None:
	"""The session's own proxy (with a login) carries its allowed traffic; the door logs in to it
	and still refuses what the session's list does not allow, before the proxy sees it."""
	from tests.e2e.test_session_options import NO_DNS, PASSWORD, PROXIED_HOST, USER, LoopbackProxy

	home = tmp_path / 'home'
	with LoopbackProxy((USER, PASSWORD)) as proxy:
		async with running_server(home, env=server_env(home, BROWSER_USE_MCP_CHROMIUM_ARGS=NO_DNS)) as mcp:
			login = {'server': proxy.url, 'username': USER, 'password': PASSWORD}
			await mcp.ok('browser_create_session', session_id='p', proxy=login, allowed_domains=[PROXIED_HOST])
			await mcp.ok('browser_navigate', session_id='p', url=f'http://{PROXIED_HOST}/secret')
			assert await js(mcp, 'p', 'document.getElementById("via").textContent') == 'via proxy'
			assert proxy.served == ['/secret'] and proxy.challenged == 0, 'the door sent the login with the request'
			before = trap.connections
			await mcp.call(
				'browser_evaluate',
				session_id='p',
				expression=f'fetch("http://{PROXIED_HOST}.evil/x").then(r => r.status, e => "error")',
			)
			await js(
				mcp, 'p', f'(() => {{ setTimeout(() => {{ location = "http://127.0.0.1:{trap.port}/x" }}, 0); return 1 }})()'
			)
			await asyncio.sleep(1.0)
			assert 'not in the allowed domains' in await js(mcp, 'p', 'document.body.innerText')
			assert proxy.served == ['/secret'] and trap.connections == before


async def test_contexts_in_an_attached_browser_go_through_a_door(tmp_path: Path, site: str, trap: Trap) -> None:
	"""--cdp-url: the contexts the server creates in someone's browser get their door too."""
	from harness.servers import user_chromium

	with user_chromium(tmp_path / 'user-browser') as (url, _proc):
		home = tmp_path / 'home'
		env = blocked_env(home, BROWSER_USE_ALLOWED_DOMAINS=site)
		async with running_server(home, '--cdp-url', url, '--block-private-networks', env=env) as mcp:
			await mcp.ok('browser_navigate', session_id='c', url=f'{site}/two')
			before = trap.connections
			await js(
				mcp, 'c', f'(() => {{ setTimeout(() => {{ location = "http://127.0.0.1:{trap.port}/x" }}, 0); return 1 }})()'
			)
			await asyncio.sleep(1.0)
			assert 'egress policy' in await js(mcp, 'c', 'document.body.innerText')
			assert trap.connections == before
