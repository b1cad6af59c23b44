"""The dashboard end to end: the real server (HTTP, and stdio with --dashboard-port), real MCP
clients as the agents, and a real headless Chromium as the person's browser, driven over CDP.

One HTTP server with two tokens (two principals) serves the module; the tests run in order and
share its sessions, as an operator would see them.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import urllib.request
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import psutil
import pytest

from browser_use_mcp.catalog import HELD_BY_PERSON
from browser_use_mcp.providers.cdp_client import CdpConnection
from harness.httpserver import HttpServer, connect, free_port, http_server
from harness.servers import Background, Mcp, running_server, server_env, user_chromium

ALPHA = f'alpha-{uuid.uuid4().hex}'
# a session id that is markup and URL syntax at once: shown as text, encoded in URLs
ODD = 'alpha <b>odd</b> /?#%2F'
BETA = f'beta-{uuid.uuid4().hex}'
# where a test run may save what the person saw (CI keeps it if it likes; nothing depends on it)
SHOTS = Path(os.environ.get('DASHBOARD_SHOTS', '')) if os.environ.get('DASHBOARD_SHOTS') else None


class Person:
	"""A tab of the person's Chromium, driven over CDP the way a person would use it."""

	def __init__(self, cdp: CdpConnection) -> None:
		self.cdp = cdp

	@classmethod
	@contextlib.asynccontextmanager
	async def open(cls, browser_url: str) -> AsyncIterator[Person]:
		"""A new tab in a context of its own: a person with their own cookies."""
		opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
		with opener.open(f'{browser_url}/json/version', timeout=10) as reply:
			browser_ws = json.loads(reply.read())['webSocketDebuggerUrl']
		browser = await CdpConnection.open(browser_ws)
		try:
			context = (await browser.send('Target.createBrowserContext'))['browserContextId']
			target = (await browser.send('Target.createTarget', {'url': 'about:blank', 'browserContextId': context}))['targetId']
			port = browser_url.rsplit(':', 1)[1]
			cdp = await CdpConnection.open(f'ws://127.0.0.1:{port}/devtools/page/{target}')
			try:
				yield cls(cdp)
			finally:
				await cdp.close()
				with contextlib.suppress(Exception):
					await browser.send('Target.disposeBrowserContext', {'browserContextId': context})
		finally:
			await browser.close()

	async def js(self, expression: str) -> Any:
		reply = await self.cdp.send(
			'Runtime.evaluate', {'expression': expression, 'returnByValue': True, 'awaitPromise': True, 'userGesture': True}
		)
		if 'exceptionDetails' in reply:
			raise AssertionError(f'{expression[:80]} failed: {reply["exceptionDetails"]}')
		return reply['result'].get('value')

	async def wait(self, expression: str, timeout: float = 30) -> Any:
		loop = asyncio.get_running_loop()
		deadline = loop.time() + timeout
		while True:
			with contextlib.suppress(Exception):
				value = await self.js(expression)
				if value:
					return value
			if loop.time() > deadline:
				raise AssertionError(f'timed out waiting for {expression}')
			await asyncio.sleep(0.1)

	async def go(self, url: str) -> None:
		await self.cdp.send('Page.navigate', {'url': url})
		await asyncio.sleep(0.2)
		await self.wait("document.readyState === 'complete'")

	async def click_at(self, x: float, y: float) -> None:
		for kind in ('mouseMoved', 'mousePressed', 'mouseReleased'):
			extra = {} if kind == 'mouseMoved' else {'button': 'left', 'clickCount': 1}
			await self.cdp.send('Input.dispatchMouseEvent', {'type': kind, 'x': x, 'y': y, **extra})

	async def click(self, selector: str) -> None:
		box = await self.wait(
			f'(() => {{ const b = document.querySelector({json.dumps(selector)})?.getBoundingClientRect(); '
			'return b && b.width ? {x: b.x + b.width / 2, y: b.y + b.height / 2} : null; })()'
		)
		await self.click_at(box['x'], box['y'])

	async def type(self, text: str) -> None:
		for ch in text:
			await self.cdp.send('Input.dispatchKeyEvent', {'type': 'keyDown', 'key': ch, 'text': ch})
			await self.cdp.send('Input.dispatchKeyEvent', {'type': 'keyUp', 'key': ch})

	async def press(self, key: str) -> None:
		"""Enter or Escape on whatever has the focus."""
		code, text = {'Enter': (13, '\r'), 'Escape': (27, '')}[key]
		down = {'type': 'keyDown', 'key': key, 'code': key, 'windowsVirtualKeyCode': code, **({'text': text} if text else {})}
		await self.cdp.send('Input.dispatchKeyEvent', down)
		await self.cdp.send('Input.dispatchKeyEvent', {'type': 'keyUp', 'key': key, 'code': key, 'windowsVirtualKeyCode': code})

	async def screenshot(self, path: Path) -> None:
		shot = await self.cdp.send('Page.captureScreenshot', {'format': 'png'})
		path.parent.mkdir(parents=True, exist_ok=True)
		path.write_bytes(base64.b64decode(shot['data']))

	async def cards(self) -> list[str]:
		return await self.js("[...document.querySelectorAll('#cards > li')].map(c => c.dataset.sid)")

	async def sign_in(self, url: str, token: str) -> None:
		"""Open the dashboard and sign in with the form, as a person would."""
		await self.go(url)
		await self.wait("document.querySelector('#token') !== null")
		await self.click('#token')
		await self.type(token)
		await self.click('button[type=submit]')
		await self.wait('document.getElementById("cards") !== null')

	async def post(self, path: str, csrf: bool = True) -> tuple[int, Any]:
		"""A POST from the dashboard page's own origin, as its script sends them (or without the CSRF token)."""
		header = "{'X-CSRF-Token': document.querySelector('meta[name=csrf-token]').content}" if csrf else '{}'
		return await self.js(
			f'fetch({json.dumps(path)}, {{method: "POST", headers: {header}, body: "{{}}"}})'
			'.then(async r => [r.status, await r.json().catch(() => null)])'
		)


def sids(result: Any) -> set[str]:
	return {s['session_id'] for s in result.structured['sessions']}


@contextlib.asynccontextmanager
async def in_the_viewer(person: Person, server: HttpServer, sid: str) -> AsyncIterator[None]:
	"""A test that opens the large view of ``sid``: on failure, what the page and the server saw is
	in the message; afterwards the view is closed (a takeover released), whatever happened, so the
	next test starts from the cards."""
	try:
		yield
	except AssertionError as exc:
		url = f'/dashboard/api/sessions/{quote(sid, safe="")}/frame.jpg?size=large'
		frame = await person.js(f'fetch({json.dumps(url)}).then(async r => [r.status, r.status === 200 ? null : await r.text()])')
		state = await person.js(
			"({viewer: !document.getElementById('viewer').hidden, live: document.getElementById('live').className, "
			"src: document.getElementById('live').src.slice(0, 40), hidden: document.hidden})"
		)
		tail = server.log_text().splitlines()[-40:]
		raise AssertionError(f'{exc}\nlarge frame now: {frame}\npage: {state}\nserver log:\n' + '\n'.join(tail)) from exc
	finally:
		with contextlib.suppress(Exception):
			await person.js(
				"(async () => { const r = document.getElementById('release'); if (!r.hidden) r.click(); "
				'await new Promise(f => setTimeout(f, 300)); '
				"if (!document.getElementById('viewer').hidden) document.getElementById('viewer-close').click(); })()"
			)
			await person.wait("document.getElementById('viewer').hidden", timeout=10)


@pytest.fixture(scope='module')
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
	args = ['--auth-token', ALPHA, '--auth-token', BETA, '--log-level', 'debug', '--takeover-timeout', '60']
	with http_server(tmp_path_factory.mktemp('dashboard-home'), *args) as srv:
		yield srv


@pytest.fixture(scope='module')
def person_browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
	with user_chromium(tmp_path_factory.mktemp('person') / 'profile', '--window-size=1440,900') as (url, _proc):
		yield url


@pytest.fixture(scope='module')
async def alpha(server: HttpServer) -> AsyncIterator[Mcp]:
	async with Background(connect(server, ALPHA)) as mcp:
		yield mcp


@pytest.fixture(scope='module')
async def beta(server: HttpServer) -> AsyncIterator[Mcp]:
	async with Background(connect(server, BETA)) as mcp:
		yield mcp


@pytest.fixture(scope='module')
async def sessions(alpha: Mcp, beta: Mcp, site: str) -> dict[str, str]:
	"""Three sessions of alpha on different pages, one of beta."""
	pages = {'alpha-home': '/', 'alpha-form': '/form', 'alpha-epoch': '/epoch', ODD: '/two'}
	for sid, path in pages.items():
		await alpha.ok('browser_navigate', session_id=sid, url=f'{site}{path}')
	await beta.ok('browser_navigate', session_id='beta-only', url=f'{site}/two')
	return pages


@pytest.fixture(scope='module')
async def alice(server: HttpServer, person_browser: str, sessions: dict[str, str]) -> AsyncIterator[Person]:
	"""Alpha's operator, signed in with the sign-in form."""
	async with Person.open(person_browser) as person:
		await person.sign_in(f'http://127.0.0.1:{server.port}/dashboard', ALPHA)
		yield person


async def test_no_token_gets_401_and_the_sign_in_form(server: HttpServer) -> None:
	async with httpx.AsyncClient(base_url=f'http://127.0.0.1:{server.port}') as http:
		api = await http.get('/dashboard/api/sessions')
		assert api.status_code == 401
		wrong = await http.get('/dashboard/api/sessions', headers={'Authorization': 'Bearer not-a-token-of-this-server'})
		assert wrong.status_code == 401
		page = await http.get('/dashboard')
		assert page.status_code == 401 and '<form method="post" action="/dashboard/login">' in page.text
		refused = await http.get('/dashboard?token=wrong-token-xyz')
		assert refused.status_code == 401 and 'bumcp_dashboard' not in refused.headers.get('set-cookie', '')
		frame = await http.get('/dashboard/api/sessions/default/frame.jpg')
		assert frame.status_code == 401
		assert "frame-ancestors 'none'" in page.headers['content-security-policy']
		assert page.headers['x-frame-options'] == 'DENY'


async def test_bearer_header_lists_only_that_principals_sessions(server: HttpServer, sessions: dict[str, str]) -> None:
	async with httpx.AsyncClient(base_url=f'http://127.0.0.1:{server.port}') as http:
		mine = await http.get('/dashboard/api/sessions', headers={'Authorization': f'Bearer {ALPHA}'})
		assert mine.status_code == 200 and mine.headers['cache-control'] == 'no-store'
		assert {s['session_id'] for s in mine.json()['sessions']} == set(sessions)
		theirs = await http.get('/dashboard/api/sessions', headers={'Authorization': f'Bearer {BETA}'})
		assert {s['session_id'] for s in theirs.json()['sessions']} == {'beta-only'}
		other = await http.get('/dashboard/api/sessions/alpha-home/frame.jpg', headers={'Authorization': f'Bearer {BETA}'})
		assert other.status_code == 404
		odd = await http.get(
			f'/dashboard/api/sessions/{quote(ODD, safe="")}/frame.jpg', headers={'Authorization': f'Bearer {ALPHA}'}
		)
		assert odd.status_code == 200 and odd.headers['content-type'] == 'image/jpeg'


async def test_cards_list_exactly_the_principals_sessions_without_overlap(
	alice: Person, sessions: dict[str, str], tmp_path: Path
) -> None:
	assert await alice.js('location.pathname + location.search') == '/dashboard', 'signed in, back on the page'
	assert await alice.js('document.cookie') == '', 'the sign-in cookie is HttpOnly'
	await alice.wait(f'document.querySelectorAll("#cards > li").length === {len(sessions)}')
	assert set(await alice.cards()) == set(sessions)
	assert await alice.js("document.querySelector('#cards b') === null"), 'a session id is never markup'
	assert ODD in await alice.js("[...document.querySelectorAll('#cards .sid')].map(h => h.textContent)")
	await alice.wait('[...document.querySelectorAll(".thumb img")].every(i => i.classList.contains("loaded"))')
	boxes = await alice.js(
		"[...document.querySelectorAll('#cards > li')].map(c => { const b = c.getBoundingClientRect(); "
		'return {x: b.x, y: b.y, w: b.width, h: b.height}; })'
	)
	width, height = await alice.js('[innerWidth, innerHeight]')
	for i, a in enumerate(boxes):
		assert a['w'] > 200 and a['h'] > 200, f'card {i} is too small to read: {a}'
		assert a['x'] >= 0 and a['x'] + a['w'] <= width and a['y'] >= 0 and a['y'] < height, f'card {i} is off screen: {a}'
		for b in boxes[i + 1 :]:
			apart = (
				a['x'] + a['w'] <= b['x'] or b['x'] + b['w'] <= a['x'] or a['y'] + a['h'] <= b['y'] or b['y'] + b['h'] <= a['y']
			)
			assert apart, f'cards overlap: {a} {b}'
	await alice.screenshot(SHOTS / 'dashboard.png' if SHOTS else tmp_path / 'dashboard.png')
	text = await alice.js('document.body.innerText')
	assert 'browser_navigate' in text, 'the recent calls are listed'


async def test_the_page_asks_nothing_of_any_host_but_the_server(
	server: HttpServer, person_browser: str, sessions: dict[str, str]
) -> None:
	"""No CDN, font or analytics request: every request the dashboard makes goes to its own server."""
	async with Person.open(person_browser) as person:
		requested: list[str] = []
		person.cdp.on_event(
			lambda m: requested.append(m['params']['request']['url']) if m.get('method') == 'Network.requestWillBeSent' else None
		)
		await person.cdp.send('Network.enable')
		await person.sign_in(f'http://127.0.0.1:{server.port}/dashboard', ALPHA)
		await person.wait('[...document.querySelectorAll(".thumb img")].some(i => i.classList.contains("loaded"))')
		await person.click('#cards > li .thumb')
		await person.wait('document.getElementById("viewer").hidden === false')
		await person.wait('document.getElementById("live").naturalWidth > 0')
	own = f'http://127.0.0.1:{server.port}/dashboard'
	paths = {url.removeprefix(own).split('?')[0].rsplit('/', 1)[-1] for url in requested}
	assert {'dashboard.js', 'dashboard.css', 'sessions', 'frame.jpg'} <= paths, f'the page and its parts were seen: {paths}'
	strangers = [url for url in requested if not url.startswith(own) and not url.startswith(('data:', 'blob:'))]
	assert strangers == [], f'requests beyond the server: {strangers}'


async def test_a_thumbnail_changes_after_its_session_navigates(alice: Person, alpha: Mcp, site: str) -> None:
	pixels = (
		'(() => { const img = document.querySelector(\'#cards > li[data-sid="alpha-home"] .thumb img\'); '
		"const c = document.createElement('canvas'); c.width = img.naturalWidth; c.height = img.naturalHeight; "
		"c.getContext('2d').drawImage(img, 0, 0); return c.toDataURL(); })()"
	)
	before = await alice.wait(pixels)
	await alpha.ok('browser_navigate', session_id='alpha-home', url=f'{site}/long')
	await alice.wait(f'{pixels} !== {json.dumps(before)}', timeout=30)
	await alice.wait("document.querySelector('#cards > li[data-sid=\"alpha-home\"]').innerText.includes('/long')", timeout=10)


async def test_another_principal_sees_none_of_it_and_cannot_act_on_it(
	server: HttpServer, person_browser: str, sessions: dict[str, str], alpha: Mcp
) -> None:
	async with Person.open(person_browser) as bob:
		await bob.go(f'http://127.0.0.1:{server.port}/dashboard')
		await bob.wait("document.querySelector('#token') !== null")  # the sign-in form
		await bob.click('#token')
		await bob.type(BETA)
		await bob.click('button[type=submit]')
		await bob.wait('document.querySelectorAll("#cards > li").length === 1')
		assert await bob.cards() == ['beta-only']
		for action in ('close', 'takeover', 'input'):
			status, _ = await bob.post(f'/dashboard/api/sessions/alpha-home/{action}')
			assert status == 404, action
		status, _ = await bob.js("fetch('/dashboard/api/sessions/alpha-home/frame.jpg').then(r => [r.status, null])")
		assert status == 404
	assert set(sessions) <= sids(await alpha.ok('browser_list_sessions')), 'nothing was closed'


async def test_a_post_without_the_csrf_token_is_refused(alice: Person, alpha: Mcp) -> None:
	status, body = await alice.post('/dashboard/api/sessions/alpha-form/close', csrf=False)
	assert status == 403 and 'CSRF' in body['error']
	assert 'alpha-form' in sids(await alpha.ok('browser_list_sessions'))


async def test_takeover_click_and_type_reach_the_page_and_the_agent_waits_until_release(
	alice: Person, alpha: Mcp, server: HttpServer, tmp_path: Path
) -> None:
	sid = 'alpha-epoch'
	where = (
		await alpha.ok(
			'browser_evaluate',
			session_id=sid,
			expression='(() => { const b = id => document.getElementById(id).getBoundingClientRect(); const c = b("count"), '
			'n = b("name"); return {cx: (c.x + c.width / 2) / innerWidth, cy: (c.y + c.height / 2) / innerHeight, '
			'nx: (n.x + n.width / 2) / innerWidth, ny: (n.y + n.height / 2) / innerHeight}; })()',
		)
	).structured['result']
	async with in_the_viewer(alice, server, sid):
		await _take_over_and_drive(alice, alpha, server, sid, where, tmp_path)


async def _take_over_and_drive(alice: Person, alpha: Mcp, server: HttpServer, sid: str, where: Any, tmp_path: Path) -> None:
	await alice.click(f'#cards > li[data-sid="{sid}"] button.open')
	await alice.wait("!document.getElementById('viewer').hidden && document.getElementById('live').classList.contains('loaded')")
	await alice.click('#takeover')
	await alice.wait("!document.getElementById('release').hidden")

	# a second person (another login of the same principal) cannot take over at the same time
	async with httpx.AsyncClient(base_url=f'http://127.0.0.1:{server.port}', follow_redirects=True) as other:
		page = await other.get('/dashboard', headers={'Authorization': f'Bearer {ALPHA}'})
		csrf = page.text.split('name="csrf-token" content="')[1].split('"')[0]
		origin = f'http://127.0.0.1:{server.port}'
		refused = await other.post(f'/dashboard/api/sessions/{sid}/takeover', headers={'X-CSRF-Token': csrf, 'Origin': origin})
		assert refused.status_code == 409, refused.text

	progress: list[str | None] = []

	async def noted(done: float, total: float | None, message: str | None) -> None:
		progress.append(message)

	waiting = asyncio.create_task(
		alpha.client.call_tool(
			'browser_evaluate',
			{'session_id': sid, 'expression': "[sessionStorage.clicks || '', document.getElementById('name').value]"},
			read_timeout_seconds=120,
			progress_callback=noted,
		)
	)
	box = await alice.js(
		"(() => { const b = document.getElementById('live').getBoundingClientRect(); return [b.x, b.y, b.width, b.height]; })()"
	)
	await alice.click_at(box[0] + where['cx'] * box[2], box[1] + where['cy'] * box[3])
	await alice.click_at(box[0] + where['nx'] * box[2], box[1] + where['ny'] * box[3])
	await alice.type('hi')
	await alice.wait("document.querySelector('#cards > li[data-sid=\"alpha-epoch\"]').innerText.includes('driving')")
	for _ in range(150):  # the notice comes at once, and again every few seconds
		if HELD_BY_PERSON in progress:
			break
		await asyncio.sleep(0.1)
	assert HELD_BY_PERSON in progress, f'no progress notice: {progress}'
	assert not waiting.done(), "the agent's call ran while a person was driving"
	await alice.screenshot(tmp_path / 'takeover.png')
	await alice.click('#release')
	result = await asyncio.wait_for(waiting, 60)
	assert not result.is_error
	clicks, typed = result.structured_content['result']
	assert 'count' in clicks.split(), 'the click in the live view reached the page'
	assert typed == 'hi', 'the typing in the live view reached the page'
	await alice.click('#viewer-close')
	await alice.wait("document.getElementById('viewer').hidden")


async def test_a_running_call_shows_on_its_card(alice: Person, alpha: Mcp, site: str) -> None:
	card = 'document.querySelector(\'#cards > li[data-sid="alpha-form"]\').innerText'
	slow = asyncio.create_task(alpha.call('browser_navigate', session_id='alpha-form', url=f'{site}/slow?s=4'))
	try:
		await alice.wait(f"{card}.includes('busy') && {card}.includes('browser_navigate(url=')", timeout=15)
	finally:
		assert not (await slow).is_error
	await alice.wait(f"{card}.includes('idle for')", timeout=15)


async def test_keyboard_opens_the_live_view_and_the_wheel_scrolls_the_page(alice: Person, alpha: Mcp, server: HttpServer) -> None:
	sid = 'alpha-home'  # on /long since the thumbnail test
	async with in_the_viewer(alice, server, sid):
		await _scroll_with_the_wheel(alice, alpha, sid)


async def _scroll_with_the_wheel(alice: Person, alpha: Mcp, sid: str) -> None:
	await alice.js(f'document.querySelector(\'#cards > li[data-sid="{sid}"] .thumb\').focus()')
	await alice.press('Enter')
	await alice.wait("!document.getElementById('viewer').hidden && document.activeElement.id === 'takeover'")
	await alice.wait("document.getElementById('live').classList.contains('loaded')")  # a frame to scroll on
	await alice.press('Enter')
	await alice.wait("!document.getElementById('release').hidden")
	box = await alice.js(
		"(() => { const b = document.getElementById('live').getBoundingClientRect(); return [b.x + b.width / 2, b.y + b.height / 2]; })()"
	)
	await alice.cdp.send('Input.dispatchMouseEvent', {'type': 'mouseWheel', 'x': box[0], 'y': box[1], 'deltaX': 0, 'deltaY': 600})
	await asyncio.sleep(0.3)  # the page batches wheel events for 0.1 s
	await alice.click('#release')
	await alice.wait("document.getElementById('release').hidden")
	scrolled = 0
	for _ in range(25):  # Chromium scrolls on its compositor: the page's scrollY follows a frame or two later
		scrolled = (await alpha.ok('browser_evaluate', session_id=sid, expression='scrollY')).structured['result']
		if scrolled > 0:
			break
		await asyncio.sleep(0.2)
	page = (
		await alpha.ok(
			'browser_evaluate',
			session_id=sid,
			expression='[document.visibilityState, innerWidth, innerHeight, document.scrollingElement.scrollHeight, location.pathname]',
		)
	).structured['result']
	assert scrolled > 0, f'the wheel in the live view scrolled the page (visibility, size, height, path: {page})'
	await alice.press('Escape')
	await alice.wait("document.getElementById('viewer').hidden")


async def test_close_button_closes_the_session(alice: Person, alpha: Mcp) -> None:
	await alice.js('window.confirm = () => true')  # the "are you sure" dialog, answered as a person would
	await alice.click('#cards > li[data-sid="alpha-form"] button.danger')
	await alice.wait('!document.querySelector(\'#cards > li[data-sid="alpha-form"]\')')
	assert 'alpha-form' not in sids(await alpha.ok('browser_list_sessions'))


async def test_the_token_never_appears_in_the_log(server: HttpServer, alice: Person) -> None:
	log = server.log_text()
	assert 'GET /dashboard' in log, 'the access log is on (debug)'
	assert ALPHA not in log and BETA not in log


async def test_stdio_dashboard_port_serves_loopback_only_and_a_takeover_times_out(tmp_path: Path, site: str) -> None:
	port = free_port()
	home = tmp_path / 'home'
	async with running_server(home, '--dashboard-port', str(port), '--takeover-timeout', '2', env=server_env(home)) as mcp:
		await mcp.ok('browser_navigate', session_id='local-one', url=f'{site}/two')
		listening = {c.laddr for c in psutil.Process(mcp.pid).net_connections('inet') if c.status == psutil.CONN_LISTEN}
		assert {(a.ip, a.port) for a in listening if a.port == port} == {('127.0.0.1', port)}
		async with httpx.AsyncClient(base_url=f'http://127.0.0.1:{port}') as http:
			listed = await http.get('/dashboard/api/sessions')
			assert listed.status_code == 200
			assert [s['session_id'] for s in listed.json()['sessions']] == ['local-one']
			frame = await http.get('/dashboard/api/sessions/local-one/frame.jpg')
			assert frame.status_code == 200 and frame.content[:2] == b'\xff\xd8'
			rebound = await http.get('/dashboard/api/sessions', headers={'Host': 'evil.example:80'})
			assert rebound.status_code == 421, 'a DNS-rebound name is refused'
			page = await http.get('/dashboard')
			csrf = page.text.split('name="csrf-token" content="')[1].split('"')[0]
			headers = {'X-CSRF-Token': csrf, 'Origin': f'http://127.0.0.1:{port}'}
			api = '/dashboard/api/sessions/local-one'
			early = await http.post(f'{api}/input', headers=headers, json={'kind': 'click', 'x': 0.5, 'y': 0.5})
			assert early.status_code == 409, 'input only during a takeover'
			assert (await http.post(f'{api}/takeover', headers=headers)).status_code == 200
			bad = await http.post(f'{api}/input', headers=headers, json={'kind': 'click', 'x': 3, 'y': 0.5})
			assert bad.status_code == 400 and bad.json()['error'].startswith('x must be')
			foreign = await http.post(f'{api}/takeover', headers={**headers, 'Origin': 'http://evil.example'})
			assert foreign.status_code == 403, 'another origin is refused even with the token'
			# nobody sends input: the takeover ends after --takeover-timeout and the waiting call runs
			result = await mcp.ok('browser_evaluate', session_id='local-one', expression='document.title')
			assert result.structured['result'] == 'Page Two'
			assert (await http.get('/dashboard/api/sessions')).json()['sessions'][0]['takeover'] is None
			closed = await http.post(f'{api}/close', headers=headers)
			assert closed.status_code == 200 and closed.json() == {'closed': True}
		assert (await mcp.ok('browser_list_sessions')).text == 'No active browser sessions'
