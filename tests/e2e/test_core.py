"""The core promise, end to end: a real MCP client, the real server over stdio, real Chromium.

One server serves the whole module; every test uses its own session ids and the autouse
fixture closes all sessions after each test, so a failure cannot leak browsers into the next.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path

import psutil
import pytest

from browser_use_mcp.browser import OWNER_SWITCH, session_digest
from harness.servers import TEST_CHROMIUM_ARGS, Mcp, alive, autogroup, chromium_pids, wait_until
from tests.fixtures import isolation_modes

isolation = isolation_modes()  # every test here runs with a Chromium per session and with contexts


@pytest.fixture(autouse=True)
async def clean(mcp: Mcp):
	yield
	await mcp.call('browser_close_all')


def session_root(mcp: Mcp, session_id: str, principal: str = 'local') -> Path:
	digest = session_digest(principal, session_id)
	matches = list((mcp.home / 'state').glob(f'srv-*/s-{digest}-*'))
	assert len(matches) == 1, matches
	return matches[0]


async def get_state(mcp: Mcp, sid: str | None = None) -> dict:
	args = {} if sid is None else {'session_id': sid}
	return (await mcp.ok('browser_get_state', **args)).json()


async def evaluate(mcp: Mcp, sid: str, expression: str):
	return json.loads((await mcp.ok('browser_evaluate', session_id=sid, expression=expression)).text)


# -- sessions are created on first use and keep their state --------------------------------


async def test_first_call_creates_session_and_later_calls_reuse_its_page(mcp: Mcp, site: str) -> None:
	listed = await mcp.ok('browser_list_sessions')
	assert listed.text == 'No active browser sessions'
	r = await mcp.ok('browser_navigate', session_id='reuse', url=f'{site}/two')
	assert r.text == f'Navigated to: {site}/two'
	sessions = (await mcp.ok('browser_list_sessions')).json()
	assert [s['session_id'] for s in sessions] == ['reuse']
	state = await get_state(mcp, 'reuse')
	assert state['url'] == f'{site}/two'
	assert state['title'] == 'Page Two'


async def test_cookies_storage_and_history_persist_across_calls(mcp: Mcp, site: str) -> None:
	await mcp.ok('browser_navigate', session_id='persist', url=f'{site}/login?user=alice')
	await mcp.ok('browser_navigate', session_id='persist', url=f'{site}/storage?set=kept')
	await mcp.ok('browser_navigate', session_id='persist', url=f'{site}/whoami')
	assert (await get_state(mcp, 'persist'))['title'] == 'Who: alice'
	await mcp.ok('browser_navigate', session_id='persist', url=f'{site}/storage')
	assert await evaluate(mcp, 'persist', 'document.getElementById("v").textContent') == 'kept'
	r = await mcp.ok('browser_go_back', session_id='persist')
	assert r.text == 'Navigated back'
	assert (await get_state(mcp, 'persist'))['url'] == f'{site}/whoami'


async def test_real_titles_for_page_and_tabs(mcp: Mcp, site: str) -> None:
	await mcp.ok('browser_navigate', session_id='titles', url=f'{site}/')
	await mcp.ok('browser_navigate', session_id='titles', url=f'{site}/two', new_tab=True)
	state = await get_state(mcp, 'titles')
	assert state['title'] == 'Page Two'
	assert sorted(t['title'] for t in state['tabs']) == ['Home Page', 'Page Two']
	tabs = (await mcp.ok('browser_list_tabs', session_id='titles')).json()
	assert sorted(t['title'] for t in tabs) == ['Home Page', 'Page Two']
	assert all(len(t['tab_id']) == 4 for t in tabs)


# -- isolation ------------------------------------------------------------------------------


async def test_sessions_are_isolated(mcp: Mcp, site: str) -> None:
	await mcp.ok('browser_navigate', session_id='iso-a', url=f'{site}/login?user=alice')
	await mcp.ok('browser_navigate', session_id='iso-b', url=f'{site}/login?user=bob')
	await mcp.ok('browser_navigate', session_id='iso-a', url=f'{site}/storage?set=A')
	await mcp.ok('browser_navigate', session_id='iso-b', url=f'{site}/two')
	await mcp.ok('browser_navigate', session_id='iso-a', url=f'{site}/popup', new_tab=True)

	await mcp.ok('browser_navigate', session_id='iso-a', url=f'{site}/whoami')
	await mcp.ok('browser_navigate', session_id='iso-b', url=f'{site}/whoami')
	assert (await get_state(mcp, 'iso-a'))['title'] == 'Who: alice'
	assert (await get_state(mcp, 'iso-b'))['title'] == 'Who: bob'

	await mcp.ok('browser_navigate', session_id='iso-b', url=f'{site}/storage')
	assert await evaluate(mcp, 'iso-b', 'localStorage.getItem("v")') is None

	tabs_a = (await mcp.ok('browser_list_tabs', session_id='iso-a')).json()
	tabs_b = (await mcp.ok('browser_list_tabs', session_id='iso-b')).json()
	assert len(tabs_a) == 2 and len(tabs_b) == 1
	assert not {t['tab_id'] for t in tabs_a} & {t['tab_id'] for t in tabs_b}

	root_a, root_b = session_root(mcp, 'iso-a'), session_root(mcp, 'iso-b')
	assert root_a != root_b
	for sub in ('profile', 'downloads', 'files'):
		assert (root_a / sub).is_dir() and (root_b / sub).is_dir()
	assert (root_a / 'files' / 'browseruse_agent_data').is_dir()


async def test_downloads_land_in_the_sessions_own_directory(mcp: Mcp, site: str) -> None:
	await mcp.ok('browser_navigate', session_id='dl-a', url=f'{site}/')
	await mcp.ok('browser_navigate', session_id='dl-b', url=f'{site}/')
	await mcp.ok(
		'browser_evaluate',
		session_id='dl-a',
		expression=f'(() => {{ const a = document.createElement("a"); a.href = "{site}/download"; a.download = "hello.txt"; document.body.appendChild(a); a.click(); return true; }})()',
	)
	downloads_a = session_root(mcp, 'dl-a') / 'downloads'
	downloads_b = session_root(mcp, 'dl-b') / 'downloads'
	assert await asyncio.to_thread(wait_until, lambda: any(p.name == 'hello.txt' for p in downloads_a.iterdir()), 15)
	assert not any(downloads_b.iterdir())


async def test_six_concurrent_sessions_never_see_each_others_pages(mcp: Mcp, site: str) -> None:
	users = [f'user{i}' for i in range(6)]

	async def agent(user: str) -> list[str]:
		sid = f'six-{user}'
		seen = []
		for _ in range(3):
			await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/login?user={user}')
			await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/whoami')
			state = await get_state(mcp, sid)
			seen.append(state['title'])
			await mcp.ok('browser_scroll', session_id=sid)
		return seen

	results = await asyncio.gather(*(agent(u) for u in users))
	for user, seen in zip(users, results, strict=True):
		assert seen == [f'Who: {user}'] * 3
	assert len((await mcp.ok('browser_list_sessions')).json()) == 6


async def test_concurrent_first_calls_with_one_id_create_one_browser(mcp: Mcp, site: str, isolation: str) -> None:
	before = chromium_pids(mcp.browsers())
	results = await asyncio.gather(*(mcp.call('browser_navigate', session_id='race', url=f'{site}/two') for _ in range(8)))
	assert not any(r.is_error for r in results), [r.text for r in results]
	sessions = (await mcp.ok('browser_list_sessions')).json()
	assert [s['session_id'] for s in sessions] == ['race']
	roots = list((mcp.home / 'state').glob(f'srv-*/s-{session_digest("local", "race")}-*'))
	assert len(roots) == 1
	new_browsers = {
		pid for pid in chromium_pids(mcp.browsers()) - before if any(OWNER_SWITCH in a for a in psutil.Process(pid).cmdline())
	}
	# a context each: at most the shared Chromium that hosts it is new
	assert len(new_browsers) == 1 if isolation == 'browser' else len(new_browsers) <= 1


# -- default session and upstream compatibility -------------------------------------------


async def test_calls_without_session_id_behave_like_upstream(mcp: Mcp, site: str) -> None:
	r = await mcp.ok('browser_navigate', url=f'{site}/')
	assert r.text == f'Navigated to: {site}/'
	state = await get_state(mcp)
	assert state['url'] == f'{site}/'
	assert set(state) >= {'url', 'title', 'tabs', 'interactive_elements', 'viewport', 'page', 'scroll'}
	button = next(e for e in state['interactive_elements'] if e['tag'] == 'button')
	assert (await mcp.ok('browser_click', index=button['index'])).text == f'Clicked element {button["index"]}'
	field = next(e for e in state['interactive_elements'] if e['tag'] == 'input')
	assert field['placeholder'] == 'search here'
	r = await mcp.ok('browser_type', index=field['index'], text='hello')
	assert r.text == f"Typed 'hello' into element {field['index']}"
	r = await mcp.ok('browser_type', index=field['index'], text='someone@example.com')
	assert r.text == f'Typed <email> into element {field["index"]}'
	assert (await mcp.ok('browser_scroll', direction='down')).text == 'Scrolled down'
	sessions = (await mcp.ok('browser_list_sessions')).json()
	assert [(s['session_id'], s['default']) for s in sessions] == [('default', True)]
	profile = mcp.home / '.config' / 'browseruse' / 'profiles' / 'default'
	assert (profile / 'Default').is_dir(), 'default session should use the persistent profile'


async def test_default_session_falls_back_when_profile_is_locked(mcp: Mcp, site: str, tmp_path: Path) -> None:
	from browser_use.browser import BrowserProfile

	from browser_use_mcp.browser import ChromiumProcess, Owner, chromium_args, find_chromium

	profile_dir = mcp.home / '.config' / 'browseruse' / 'profiles' / 'default'
	profile_dir.mkdir(parents=True, exist_ok=True)
	profile = BrowserProfile(
		user_data_dir=profile_dir, downloads_path=tmp_path, headless=True, chromium_sandbox=False, enable_default_extensions=False
	)
	args = chromium_args(profile, user_args=TEST_CHROMIUM_ARGS)
	other = await ChromiumProcess.launch(find_chromium(), args, profile_dir, Owner.current())
	try:
		r = await mcp.ok('browser_navigate', url=f'{site}/two')
		assert r.text == f'Navigated to: {site}/two'
		assert any('locked' in t and str(other.pid) in t for t in r.texts[1:]), r.texts
		again = await mcp.ok('browser_get_state')
		assert len(again.texts) == 1, 'the note is said once'
	finally:
		await other.kill()


async def test_list_sessions_reports_real_state(mcp: Mcp, site: str) -> None:
	await mcp.ok('browser_navigate', session_id='listed', url=f'{site}/two')
	await mcp.ok('browser_navigate', session_id='listed', url=f'{site}/', new_tab=True)
	r = await mcp.ok('browser_list_sessions')
	(info,) = r.json()
	assert info['current_url'] == f'{site}/'
	assert info['tabs'] == 2
	assert info['active'] is True and info['default'] is False
	assert set(info) >= {
		'session_id',
		'created_at',
		'last_activity',
		'active',
		'current_url',
		'age_minutes',
		'idle_seconds',
		'expires_in_seconds',
	}
	assert 0 < info['expires_in_seconds'] <= 600
	assert r.structured == {'sessions': [info]}


async def test_create_session_mints_a_handle_and_states_retention(mcp: Mcp, site: str) -> None:
	r = await mcp.ok('browser_create_session')
	info = r.json()
	assert info['session_id'].startswith('browser_') and info['created'] is True
	assert info['idle_timeout_seconds'] == 600
	assert '600 s' in info['retention']
	handle = info['session_id']
	await mcp.ok('browser_navigate', session_id=handle, url=f'{site}/two')
	again = (await mcp.ok('browser_create_session', session_id=handle)).json()
	assert again['created'] is False
	other = (await mcp.ok('browser_create_session')).json()['session_id']
	assert other != handle


# -- closing ----------------------------------------------------------------------------------


async def test_close_session_and_close_all_release_every_browser_process(mcp: Mcp, site: str) -> None:
	await mcp.ok('browser_close_all')
	assert await asyncio.to_thread(wait_until, lambda: not mcp.browsers(), 10)
	for sid in ('c1', 'c2', 'c3'):
		await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/')
	all_pids = mcp.browsers()
	assert len(chromium_pids(all_pids)) >= 3
	c1_root = session_root(mcp, 'c1')
	r = await mcp.ok('browser_close_session', session_id='c1')
	assert r.text == 'Successfully closed session c1'
	assert not c1_root.exists(), 'temporary profile removed'
	# its Chromium (or, in a shared one, its context's renderer) goes
	assert await asyncio.to_thread(wait_until, lambda: mcp.browsers() < all_pids, 5)
	r = await mcp.ok('browser_close_all')
	assert r.text == 'Closed 2 sessions' and r.structured == {'closed': 2}
	assert await asyncio.to_thread(wait_until, lambda: not mcp.browsers(), 5)
	# gone, not just gone from the server's tree: a killed process still exiting (reparented, not yet a
	# zombie) is no longer the server's child but still exists for a moment on a loaded machine
	assert await asyncio.to_thread(wait_until, lambda: not any(alive(p) for p in all_pids), 5)
	assert (await mcp.ok('browser_close_all')).text == 'No active sessions to close'


async def test_closed_id_is_free_for_reuse(mcp: Mcp, site: str) -> None:
	await mcp.ok('browser_navigate', session_id='again', url=f'{site}/login?user=zed')
	await mcp.ok('browser_close_session', session_id='again')
	await mcp.ok('browser_navigate', session_id='again', url=f'{site}/whoami')
	assert (await get_state(mcp, 'again'))['title'] == 'Who: nobody'


async def test_close_session_cancels_the_call_in_flight(mcp: Mcp, site: str) -> None:
	await mcp.ok('browser_navigate', session_id='busy', url=f'{site}/')
	slow = asyncio.create_task(
		mcp.call('browser_evaluate', session_id='busy', expression='new Promise(r => setTimeout(() => r(1), 12000))')
	)
	await asyncio.sleep(0.5)
	started = asyncio.get_running_loop().time()
	r = await mcp.ok('browser_close_session', session_id='busy')
	assert r.text == 'Successfully closed session busy'
	result = await slow
	assert asyncio.get_running_loop().time() - started < 6
	assert result.is_error and 'closed' in result.text
	assert not (await mcp.ok('browser_list_sessions')).structured['sessions']


async def test_browser_close_closes_only_the_calling_session(mcp: Mcp, site: str) -> None:
	await mcp.ok('browser_navigate', session_id='keep', url=f'{site}/')
	await mcp.ok('browser_navigate', session_id='drop', url=f'{site}/')
	assert (await mcp.ok('browser_close', session_id='drop')).text == 'Browser closed'
	assert (await mcp.ok('browser_close', session_id='drop')).text == 'No browser session to close'
	assert [s['session_id'] for s in (await mcp.ok('browser_list_sessions')).json()] == ['keep']


# -- the remaining tools ------------------------------------------------------------------


async def test_click_link_by_index_and_by_coordinates(mcp: Mcp, site: str) -> None:
	await mcp.ok('browser_navigate', session_id='clicks', url=f'{site}/')
	state = await get_state(mcp, 'clicks')
	link = next(e for e in state['interactive_elements'] if e.get('href') == '/two')
	await mcp.ok('browser_click', session_id='clicks', index=link['index'])
	assert (await get_state(mcp, 'clicks'))['title'] == 'Page Two'
	await mcp.ok('browser_go_back', session_id='clicks')
	box = await evaluate(
		mcp,
		'clicks',
		'(() => { const r = document.getElementById("btn").getBoundingClientRect(); return [Math.round(r.x + r.width / 2), Math.round(r.y + r.height / 2)]; })()',
	)
	r = await mcp.ok('browser_click', session_id='clicks', coordinate_x=box[0], coordinate_y=box[1])
	assert r.text == f'Clicked at coordinates ({box[0]}, {box[1]})'
	assert await evaluate(mcp, 'clicks', 'document.getElementById("out").textContent') == 'clicked'


async def test_click_with_new_tab_opens_link_in_a_new_tab(mcp: Mcp, site: str) -> None:
	await mcp.ok('browser_navigate', session_id='nt', url=f'{site}/')
	state = await get_state(mcp, 'nt')
	link = next(e for e in state['interactive_elements'] if e.get('href') == '/two')
	r = await mcp.ok('browser_click', session_id='nt', index=link['index'], new_tab=True)
	assert r.text.startswith(f'Clicked element {link["index"]} and opened in new tab')
	tabs = (await mcp.ok('browser_list_tabs', session_id='nt')).json()
	assert sorted(t['url'] for t in tabs) == [f'{site}/', f'{site}/two']


async def test_tabs_switch_and_close(mcp: Mcp, site: str) -> None:
	await mcp.ok('browser_navigate', session_id='tabs', url=f'{site}/')
	await mcp.ok('browser_navigate', session_id='tabs', url=f'{site}/two', new_tab=True)
	tabs = (await mcp.ok('browser_list_tabs', session_id='tabs')).json()
	home = next(t for t in tabs if t['url'] == f'{site}/')
	two = next(t for t in tabs if t['url'] == f'{site}/two')
	r = await mcp.ok('browser_switch_tab', session_id='tabs', tab_id=home['tab_id'])
	assert r.text == f'Switched to tab {home["tab_id"]}: {site}/'
	assert (await get_state(mcp, 'tabs'))['title'] == 'Home Page'
	r = await mcp.ok('browser_close_tab', session_id='tabs', tab_id=two['tab_id'])
	assert r.text == f'Closed tab # {two["tab_id"]}, now on {site}/'
	assert len((await mcp.ok('browser_list_tabs', session_id='tabs')).json()) == 1


async def test_closing_the_focused_tab_reports_the_tab_now_focused(mcp: Mcp, site: str) -> None:
	await mcp.ok('browser_navigate', session_id='closefocus', url=f'{site}/')
	await mcp.ok('browser_navigate', session_id='closefocus', url=f'{site}/two', new_tab=True)
	tabs = (await mcp.ok('browser_list_tabs', session_id='closefocus')).json()
	two = next(t for t in tabs if t['url'] == f'{site}/two')
	r = await mcp.ok('browser_close_tab', session_id='closefocus', tab_id=two['tab_id'])
	assert r.text == f'Closed tab # {two["tab_id"]}, now on {site}/'
	assert (await get_state(mcp, 'closefocus'))['url'] == f'{site}/'


async def test_type_send_keys_evaluate_html_and_screenshot(mcp: Mcp, site: str) -> None:
	await mcp.ok('browser_navigate', session_id='misc', url=f'{site}/form')
	state = await get_state(mcp, 'misc')
	user = next(e for e in state['interactive_elements'] if e.get('placeholder') == 'user name')
	await mcp.ok('browser_type', session_id='misc', index=user['index'], text='carol')
	assert await evaluate(mcp, 'misc', 'document.getElementById("echo").textContent') == 'carol'
	await mcp.ok('browser_send_keys', session_id='misc', keys='Control+a')
	await mcp.ok('browser_send_keys', session_id='misc', keys='Backspace')
	assert await evaluate(mcp, 'misc', 'document.getElementById("user").value') == ''
	await mcp.ok('browser_type', session_id='misc', index=user['index'], text='dave')
	assert (await mcp.ok('browser_send_keys', session_id='misc', keys='Enter')).text == 'Sent keys: Enter'
	for _ in range(50):
		if (await get_state(mcp, 'misc'))['title'] == 'Logged in':
			break
		await asyncio.sleep(0.1)
	assert await evaluate(mcp, 'misc', 'document.getElementById("who").textContent') == 'logged in as dave'

	r = await mcp.ok('browser_evaluate', session_id='misc', expression='({a: [1, 2], b: "x"})')
	assert json.loads(r.text) == {'a': [1, 2], 'b': 'x'} and r.structured == {'result': {'a': [1, 2], 'b': 'x'}}
	html = (await mcp.ok('browser_get_html', session_id='misc', selector='#who')).text
	assert html == '<p id="who">logged in as dave</p>'
	assert '<html' in (await mcp.ok('browser_get_html', session_id='misc')).text
	assert (await mcp.ok('browser_get_html', session_id='misc', selector='#nope')).text == 'No element found for selector: #nope'

	shot = await mcp.ok('browser_screenshot', session_id='misc')
	meta = shot.json()
	assert meta['size_bytes'] > 1000 and meta['viewport']['width'] > 0
	assert len(shot.images) == 1 and shot.images[0].mime_type == 'image/png'
	with_shot = await mcp.ok('browser_get_state', session_id='misc', include_screenshot=True)
	assert len(with_shot.images) == 1 and 'screenshot_dimensions' in with_shot.json()


async def test_a_busy_core_goes_to_the_server_before_its_browsers(mcp: Mcp, site: str) -> None:
	"""Every process of a session's browser runs in an autogroup of its own at niceness 10
	(processes.yield_to_the_server), so beside a heavy page the loop every session shares is not
	left waiting for a core; the server's own group is untouched. (A process's own niceness is not
	checked: Chromium run as root raises some of its processes' priority itself.)"""
	import os

	from browser_use_mcp.processes import process_tree

	if not Path('/proc/self/autogroup').exists():
		pytest.skip('this kernel has no scheduling autogroups')
	await mcp.ok('browser_navigate', session_id='below', url=f'{site}/two')
	# crashpad's handlers start sessions of their own and sleep until a crash: not counted
	tree = {p.pid for root in chromium_pids(mcp.browsers()) for p in process_tree(root) if 'crashpad' not in p.name()}
	assert len(tree) >= 2, tree  # the browser and at least its renderer
	groups = {}
	for pid in tree:
		with contextlib.suppress(FileNotFoundError):  # a helper that ended meanwhile
			groups[pid] = autogroup(pid)
	server = autogroup(mcp.pid)
	assert {nice for _, nice in groups.values()} == {10}, groups
	assert server[0] not in {group for group, _ in groups.values()}
	assert server[1] == autogroup(os.getpid())[1], 'the server lowered its own group'
