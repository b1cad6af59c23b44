"""Sessions made to order: browser_create_session's options, seen from the page, per session only.

One real server per isolation mode (a Chromium per session, and contexts of shared Chromiums),
several sessions in it. Every option is read back from the page itself; a session created
without options beside them shows the defaults; bad options create nothing.

The server runs without the tests' usual black-hole proxy (harness/servers.BLACKHOLE_PROXY): that is
an operator's proxy, under which a session proxy is refused (tests/unit/test_session_options.py covers
the refusal). Instead, host-name lookups fail for everything but localhost, so nothing leaves
loopback; a proxied page is one the test's own proxy answers itself.
"""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from browser_use_mcp.browser import session_digest
from harness.servers import Background, Mcp, RawServer, server_env
from tests.e2e.test_core import evaluate as js
from tests.e2e.test_core import get_state
from tests.fixtures import isolation_modes

isolation = isolation_modes()
pytestmark = pytest.mark.usefixtures('isolation')

NO_DNS = '--host-resolver-rules="MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"'
PROXIED_HOST = 'proxied.test'  # answered by the test proxy itself; never resolved
USER, PASSWORD = 'login-7f3a', 's3cret-pw'


class LoopbackProxy(ThreadingHTTPServer):
	"""A forward proxy on 127.0.0.1 that answers requests for PROXIED_HOST itself, counting them;
	with ``login``, a request without the right Proxy-Authorization gets a 407 challenge."""

	daemon_threads = True

	def __init__(self, login: tuple[str, str] | None = None) -> None:
		super().__init__(('127.0.0.1', 0), ProxyHandler)
		self.login = login
		self.served: list[str] = []  # paths served with a page
		self.challenged = 0  # 407s sent
		self.lock = threading.Lock()

	@property
	def url(self) -> str:
		return f'http://127.0.0.1:{self.server_address[1]}'

	def __enter__(self) -> LoopbackProxy:
		threading.Thread(target=self.serve_forever, daemon=True).start()
		return self

	def __exit__(self, *exc: object) -> None:
		self.shutdown()
		self.server_close()


class ProxyHandler(BaseHTTPRequestHandler):
	protocol_version = 'HTTP/1.1'
	server: LoopbackProxy

	def log_message(self, *args: object) -> None:
		pass

	def _reply(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
		self.send_response(status)
		for key, value in {'Content-Type': 'text/html', 'Content-Length': str(len(body)), **(headers or {})}.items():
			self.send_header(key, value)
		self.end_headers()
		self.wfile.write(body)

	def do_GET(self) -> None:  # noqa: N802
		target = urlsplit(self.path)
		if target.hostname != PROXIED_HOST:
			self._reply(502, b'not proxied here')  # e.g. Chromium's own background requests
			return
		login = self.server.login
		if login is not None:
			expected = 'Basic ' + base64.b64encode(f'{login[0]}:{login[1]}'.encode()).decode()
			if self.headers.get('Proxy-Authorization') != expected:
				with self.server.lock:
					self.server.challenged += 1
				self._reply(407, b'login', {'Proxy-Authenticate': 'Basic realm="test"'})
				return
		if target.path != '/favicon.ico':  # Chromium asks for it when it likes
			with self.server.lock:
				self.server.served.append(target.path)
		self._reply(200, b'<html><head><title>Via proxy</title></head><body><p id="via">via proxy</p></body></html>')

	def do_CONNECT(self) -> None:  # noqa: N802
		self._reply(405, b'no tunnels')


@pytest.fixture(scope='module')
async def server(tmp_path_factory: pytest.TempPathFactory, isolation: str) -> AsyncIterator[RawServer]:
	"""The server, its log (stderr) kept for the tests to read."""
	home = tmp_path_factory.mktemp('options-home')
	raw = RawServer(home, env=server_env(home, BROWSER_USE_MCP_CHROMIUM_ARGS=NO_DNS))
	try:
		yield await raw.start()
	finally:
		raw.close_stdin()  # it ends its browsers and exits; stop() makes sure of it
		await raw.wait(20)
		await raw.stop()


@pytest.fixture(scope='module')
async def mcp(server: RawServer) -> AsyncIterator[Mcp]:
	async with Background(server.client()) as client:
		yield client


@pytest.fixture(scope='module')
def proxy() -> Iterator[LoopbackProxy]:
	with LoopbackProxy() as server:
		yield server


@pytest.fixture(scope='module')
def login_proxy() -> Iterator[LoopbackProxy]:
	with LoopbackProxy((USER, PASSWORD)) as server:
		yield server


PAGE_FACTS = """({
	ua: navigator.userAgent,
	tz: Intl.DateTimeFormat().resolvedOptions().timeZone,
	lang: navigator.language,
	width: window.innerWidth,
	height: window.innerHeight,
	dpr: window.devicePixelRatio,
})"""

GEO = """new Promise(done => navigator.geolocation.getCurrentPosition(
	p => done({lat: p.coords.latitude, lon: p.coords.longitude, acc: p.coords.accuracy}),
	e => done({error: e.message}), {timeout: 10000}))"""


async def create(mcp: Mcp, sid: str, **options: Any) -> dict[str, Any]:
	result = await mcp.ok('browser_create_session', session_id=sid, **options)
	assert result.structured == result.json()
	return result.structured


async def listed(mcp: Mcp) -> dict[str, dict[str, Any]]:
	sessions = (await mcp.ok('browser_list_sessions')).structured['sessions']
	return {s['session_id']: s for s in sessions}


async def tab_titled(mcp: Mcp, sid: str, title: str, tries: int = 50) -> dict[str, str]:
	"""The session's tab showing a page titled ``title``, once the browser lists it (a popup opens
	asynchronously, and browser-use may not know its URL yet)."""
	for _ in range(tries):
		tabs = (await mcp.ok('browser_list_tabs', session_id=sid)).json()
		found = [t for t in tabs if t['title'] == title]
		if found:
			return found[0]
		await asyncio.sleep(0.2)
	raise AssertionError(f'no tab titled {title!r}: {tabs}')


async def headers_seen(mcp: Mcp, sid: str, site: str) -> dict[str, str]:
	await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/headers')
	return json.loads(await js(mcp, sid, 'document.getElementById("headers").textContent'))


PHONE = {
	'viewport': {'width': 390, 'height': 700},
	'device_scale_factor': 3,
	'user_agent': 'OptionsTest/1.0 (phone)',
	'locale': 'de-DE',
	'timezone': 'Asia/Tokyo',
	'geolocation': {'latitude': 52.52, 'longitude': 13.405, 'accuracy': 25},
	'extra_http_headers': {'X-Options-Test': 'phone-1'},
}


async def test_each_option_is_visible_from_the_page_and_only_in_its_session(mcp: Mcp, site: str) -> None:
	created = await create(mcp, 'phone', **PHONE)
	assert created['created'] is True
	assert list(created)[-2:] == ['options', 'persisted'], 'new keys come after the existing ones, in the order they came'
	shown = {**PHONE, 'geolocation': {'latitude': 52.52, 'longitude': 13.405, 'accuracy': 25}}
	assert created['options'] == {**shown, 'extra_http_headers': {'X-Options-Test': 'redacted'}}, 'header values are never shown'
	await create(mcp, 'plain')
	await mcp.ok('browser_navigate', session_id='phone', url=f'{site}/')
	await mcp.ok('browser_navigate', session_id='plain', url=f'{site}/')

	phone = await js(mcp, 'phone', PAGE_FACTS)
	assert phone == {
		'ua': 'OptionsTest/1.0 (phone)',
		'tz': 'Asia/Tokyo',
		'lang': 'de-DE',
		'width': 390,
		'height': 700,
		'dpr': 3,
	}
	assert await js(mcp, 'phone', GEO) == {'lat': 52.52, 'lon': 13.405, 'acc': 25}
	assert await js(mcp, 'phone', 'new Intl.NumberFormat().format(1234.5)') == '1.234,5'
	seen = await headers_seen(mcp, 'phone', site)
	assert seen['x-options-test'] == 'phone-1'
	assert seen['user-agent'] == 'OptionsTest/1.0 (phone)'
	assert seen['accept-language'].startswith('de-DE')

	# the session beside it, in the same server (and, with contexts, the same Chromium): defaults
	plain = await js(mcp, 'plain', PAGE_FACTS)
	assert plain['ua'] != phone['ua'] and 'OptionsTest' not in plain['ua']
	assert plain['tz'] != 'Asia/Tokyo'
	assert plain['lang'] != 'de-DE'
	assert (plain['width'], plain['dpr']) != (390, 3)
	assert 'x-options-test' not in await headers_seen(mcp, 'plain', site)
	assert 'error' in await js(mcp, 'plain', GEO), 'no geolocation permission without the option'

	sessions = await listed(mcp)
	assert sessions['phone']['options'] == created['options']
	assert sessions['plain']['options'] == {}
	assert list(sessions['phone'])[-3:] == ['options', 'running', 'persisted'], 'new keys come after the existing ones'
	await mcp.ok('browser_close_session', session_id='plain')


async def test_new_tabs_and_popups_get_the_options(mcp: Mcp, site: str) -> None:
	# relies on 'phone' from the test above
	await mcp.ok('browser_navigate', session_id='phone', url=f'{site}/popup', new_tab=True)
	facts = await js(mcp, 'phone', PAGE_FACTS)
	assert (facts['ua'], facts['tz'], facts['lang'], facts['width']) == ('OptionsTest/1.0 (phone)', 'Asia/Tokyo', 'de-DE', 390)
	state = await get_state(mcp, 'phone')
	link = next(e['index'] for e in state['interactive_elements'] if e.get('href') == '/two')
	await mcp.ok('browser_click', session_id='phone', index=link)
	popup = await tab_titled(mcp, 'phone', 'Page Two')
	await mcp.ok('browser_switch_tab', session_id='phone', tab_id=popup['tab_id'])
	assert await js(mcp, 'phone', 'location.pathname') == '/two'
	facts = await js(mcp, 'phone', PAGE_FACTS)
	assert (facts['ua'], facts['tz'], facts['lang']) == ('OptionsTest/1.0 (phone)', 'Asia/Tokyo', 'de-DE')
	assert (await headers_seen(mcp, 'phone', site))['x-options-test'] == 'phone-1'
	await mcp.ok('browser_close_session', session_id='phone')


async def test_a_proxy_carries_the_session_traffic(mcp: Mcp, proxy: LoopbackProxy) -> None:
	await create(mcp, 'proxied', proxy={'server': proxy.url})
	await create(mcp, 'direct')
	before = len(proxy.served)
	await mcp.ok('browser_navigate', session_id='proxied', url=f'http://{PROXIED_HOST}/one')
	assert await js(mcp, 'proxied', 'document.getElementById("via").textContent') == 'via proxy'
	assert proxy.served[before:] == ['/one']
	# no proxy for the session beside it: the name does not even resolve
	result = await mcp.call('browser_navigate', session_id='direct', url=f'http://{PROXIED_HOST}/two')
	assert result.is_error or 'via proxy' not in str(await js(mcp, 'direct', 'document.body.innerText'))
	assert proxy.served[before:] == ['/one']
	for sid in ('proxied', 'direct'):
		await mcp.ok('browser_close_session', session_id=sid)


async def test_a_proxy_login_is_answered_and_never_shown(mcp: Mcp, login_proxy: LoopbackProxy, server: RawServer) -> None:
	options = {'server': login_proxy.url, 'username': USER, 'password': PASSWORD}
	created = await mcp.ok('browser_create_session', session_id='login', proxy=options)
	assert created.structured['options']['proxy'] == {'server': login_proxy.url, 'credentials': 'redacted'}
	await mcp.ok('browser_navigate', session_id='login', url=f'http://{PROXIED_HOST}/secret')
	assert await js(mcp, 'login', 'document.getElementById("via").textContent') == 'via proxy'
	assert login_proxy.challenged >= 1, 'the proxy asked for a login'
	assert login_proxy.served and set(login_proxy.served) == {'/secret'}
	listing = await mcp.ok('browser_list_sessions')
	for text in (created.text, listing.text, json.dumps(listing.structured)):
		assert PASSWORD not in text and USER not in text
	await mcp.ok('browser_close_session', session_id='login')
	logged = server.stderr.decode('utf-8', 'replace')
	assert "session 'login' created" in logged, 'the log is read'
	assert PASSWORD not in logged


async def test_allowed_domains_narrow_the_session(mcp: Mcp, site: str) -> None:
	port = urlsplit(site).port
	created = await create(mcp, 'narrow', allowed_domains=['127.0.0.1'])
	assert created['options'] == {'allowed_domains': ['127.0.0.1']}
	await mcp.ok('browser_navigate', session_id='narrow', url=f'{site}/two')
	refused = await mcp.call('browser_navigate', session_id='narrow', url=f'http://localhost:{port}/')
	assert refused.is_error and 'not allowed' in refused.text
	assert (await js(mcp, 'narrow', 'location.pathname')) == '/two'
	# the server itself allows everything: another session goes there
	await create(mcp, 'wide')
	await mcp.ok('browser_navigate', session_id='wide', url=f'http://localhost:{port}/two')
	for sid in ('narrow', 'wide'):
		await mcp.ok('browser_close_session', session_id=sid)


BAD: list[tuple[dict[str, Any], tuple[str, ...]]] = [
	({'viewport': {'width': 0, 'height': 0}}, ('viewport.width', '100')),
	({'viewport': {'width': 100000, 'height': 800}}, ('viewport.width', '8192')),
	({'viewport': {'width': 800, 'height': 600, 'depth': 2}}, ('viewport', 'depth', 'valid keys: width, height')),
	({'device_scale_factor': 0}, ('device_scale_factor', 'greater than 0')),
	({'device_scale_factor': 9}, ('device_scale_factor', '5')),
	({'timezone': 'Mars/Olympus_Mons'}, ('timezone', 'IANA')),
	({'timezone': 'posixrules'}, ('timezone',)),  # in the tz database, but not a zone Chromium accepts
	# found by fuzzing: a directory of the tz database, and a name too long for a file, leaked a server path
	({'timezone': 'America'}, ('timezone', 'IANA')),
	({'timezone': 'x' * 300}, ('timezone', 'IANA')),
	({'locale': 'german please'}, ('locale', 'BCP 47')),
	({'proxy': {'server': 'ftp://127.0.0.1:21'}}, ('proxy.server', 'socks5')),
	({'proxy': {'server': 'http://127.0.0.1'}}, ('proxy.server', 'port')),
	({'proxy': {'server': 'http://127.0.0.1:8080', 'user': 'x'}}, ('proxy', 'user', 'valid keys')),
	({'proxy': {'server': 'http://127.0.0.1:8080', 'password': PASSWORD}}, ('proxy', 'username and password')),
	({'geolocation': {'latitude': 95, 'longitude': 0}}, ('geolocation.latitude', '90')),
	({'geolocation': {'latitude': 0, 'longitude': -181}}, ('geolocation.longitude', '180')),
	({'extra_http_headers': {'X-Evil': 'a\r\nSet-Cookie: x=1'}}, ('extra_http_headers', 'CR, LF')),
	({'extra_http_headers': {'Bad Name': 'x'}}, ('extra_http_headers', 'header name')),
	# found by fuzzing: accepted, then every navigation of the session failed with ERR_INVALID_ARGUMENT
	({'extra_http_headers': {'Host': 'evil'}}, ('extra_http_headers', 'set by the browser itself')),
	({'extra_http_headers': {'content-length': '5'}}, ('extra_http_headers', 'set by the browser itself')),
	({'user_agent': 'a\nb'}, ('user_agent', 'control')),
	({'allowed_domains': []}, ('allowed_domains', 'at least one')),
	({'viewport': 'big'}, ('viewport',)),
]


@pytest.mark.parametrize(('options', 'words'), BAD, ids=[str(i) for i in range(len(BAD))])
async def test_bad_options_are_refused_and_create_nothing(mcp: Mcp, options: dict[str, Any], words: tuple[str, ...]) -> None:
	before = set(await listed(mcp))
	dirs = session_dirs(mcp)
	result = await mcp.call('browser_create_session', session_id='bad', **options)
	assert result.is_error, result.text
	for word in words:
		assert word in result.text, (word, result.text)
	assert PASSWORD not in result.text
	assert 'site-packages' not in result.text and 'failed unexpectedly' not in result.text, result.text
	assert set(await listed(mcp)) == before
	assert session_dirs(mcp) <= dirs, 'no directory was made for it'


def session_dirs(mcp: Mcp) -> set[Path]:
	"""The sessions' directories (not those of shared Chromiums, which come and go by themselves)."""
	shared = f's-{session_digest("local", "shared-browser")}-'
	return {p for p in (mcp.home / 'state').glob('srv-*/s-*') if not p.name.startswith(shared)}


async def test_options_are_only_for_a_new_session(mcp: Mcp, site: str) -> None:
	await mcp.ok('browser_navigate', session_id='lazy', url=f'{site}/')  # created on first use: server defaults
	assert (await listed(mcp))['lazy']['options'] == {}
	refused = await mcp.call('browser_create_session', session_id='lazy', timezone='Asia/Tokyo')
	assert refused.is_error and 'already open' in refused.text and 'browser_close_session' in refused.text
	again = await mcp.ok('browser_create_session', session_id='lazy')  # without options: as before
	assert again.structured['created'] is False and again.structured['options'] == {}
	assert await js(mcp, 'lazy', 'Intl.DateTimeFormat().resolvedOptions().timeZone') != 'Asia/Tokyo'
	await mcp.ok('browser_close_session', session_id='lazy')
	remade = await create(mcp, 'lazy', timezone='Asia/Tokyo')
	assert remade['created'] is True
	await mcp.ok('browser_navigate', session_id='lazy', url=f'{site}/')
	assert await js(mcp, 'lazy', 'Intl.DateTimeFormat().resolvedOptions().timeZone') == 'Asia/Tokyo'
	await mcp.ok('browser_close_session', session_id='lazy')
