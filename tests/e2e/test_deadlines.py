"""Every call ends by its tool's deadline, with what happened and what to do, when the session's
tab crashed (its renderer died; the browser lives) or hangs (a script that never yields).

CDP commands to such a tab are never answered: browser_evaluate took 75 s to answer, and
browser_get_state ran for minutes. The renderer is killed from outside (as an out-of-memory kill
or a renderer bug would); the hang is a page script that never ends.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path

import psutil
import pytest

from browser_use_mcp.catalog import DEADLINE_SCALE_ENV, deadline
from harness.servers import RawServer, running_server, server_env

SCALE = 0.2  # browser_evaluate 5 s, browser_get_state 12 s


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[RawServer]:
	home = tmp_path / 'home'
	raw = await RawServer(home, env=server_env(home, **{DEADLINE_SCALE_ENV: str(SCALE)})).start()
	yield raw
	raw.close_stdin()
	await raw.wait(20)
	await raw.stop()


def kill_renderers(server: RawServer) -> int:
	"""SIGKILL the page renderers of the server's browsers (the test's only session): the tab crashes."""
	killed = 0
	for proc in psutil.Process(server.proc.pid).children(recursive=True):
		try:
			if '--type=renderer' in proc.cmdline() and '--extension-process' not in proc.cmdline():
				proc.kill()
				killed += 1
		except psutil.Error:
			continue
	return killed


async def test_a_crashed_tab_is_said_at_once_and_replaced(server: RawServer, site: str) -> None:
	async with server.client() as mcp:
		await mcp.ok('browser_navigate', url=f'{site}/two')
		assert kill_renderers(server) >= 1
		await asyncio.sleep(0.5)
		started = time.monotonic()
		result = await asyncio.wait_for(mcp.call('browser_evaluate', expression='1 + 1'), 60)
		took = time.monotonic() - started
		assert result.is_error, result.text
		assert 'crashed' in result.text and 'now on' in result.text, result.text
		assert took <= deadline('browser_evaluate') * SCALE + 3, f'{took:.1f} s'
		# the session goes on, in a working tab
		await mcp.ok('browser_get_state')
		await mcp.ok('browser_navigate', url=f'{site}/two')
		assert (await mcp.ok('browser_evaluate', expression='location.pathname')).structured['result'] == '/two'

		# a crash during a call ends that call at once, not at its deadline
		await mcp.ok('browser_evaluate', expression='setTimeout(() => { while (true) {} }, 300); 1')
		await asyncio.sleep(0.6)  # the tab hangs: the next call waits on it
		state = asyncio.ensure_future(mcp.call('browser_get_state'))
		await asyncio.sleep(1.5)
		kill_renderers(server)
		started = time.monotonic()
		result = await asyncio.wait_for(state, 60)
		assert result.is_error and 'crashed during the call' in result.text, result.text
		assert time.monotonic() - started < 5
		await mcp.ok('browser_get_state')

		# a navigation after a crash just works on the replacement tab, and says what happened
		kill_renderers(server)
		await asyncio.sleep(0.5)
		went = await mcp.ok('browser_navigate', url=f'{site}/two')
		assert any('tab had crashed' in t for t in went.texts), went.texts
		assert (await mcp.ok('browser_evaluate', expression='location.pathname')).structured['result'] == '/two'


async def test_a_hung_tab_ends_the_call_by_its_deadline_and_the_session_keeps_working(server: RawServer, site: str) -> None:
	async with server.client() as mcp:
		await mcp.ok('browser_navigate', url=f'{site}/two')
		await mcp.ok('browser_evaluate', expression='setTimeout(() => { while (true) {} }, 300); 1')
		await asyncio.sleep(0.5)
		limit = deadline('browser_get_state') * SCALE
		started = time.monotonic()
		result = await asyncio.wait_for(mcp.call('browser_get_state'), 90)
		took = time.monotonic() - started
		assert result.is_error, result.text[:300]
		assert 'not responding' in result.text and 'browser_close_tab' in result.text, result.text
		assert took <= limit + 5, f'{took:.1f} s against a {limit:g} s deadline'
		# what the error says to do works
		tabs = (await mcp.ok('browser_list_tabs')).structured['tabs']
		await mcp.ok('browser_navigate', url=f'{site}/', new_tab=True)
		await mcp.ok('browser_close_tab', tab_id=tabs[0]['tab_id'])
		assert (await mcp.ok('browser_get_state')).json()['url'].rstrip('/') == site.rstrip('/')


async def test_a_navigation_away_from_a_hung_page_is_not_said_to_have_happened(server: RawServer, site: str) -> None:
	"""Found by fuzzing: after a page stuck in a script, browser_navigate elsewhere answered "Navigated to"
	while the tab stayed where it was, and the next browser_get_state ran out its deadline."""
	async with server.client() as mcp:
		await mcp.ok('browser_navigate', url=f'{site}/two')
		await mcp.ok('browser_evaluate', expression='setTimeout(() => { while (true) {} }, 300); 1')
		await asyncio.sleep(0.5)
		result = await asyncio.wait_for(mcp.call('browser_navigate', url=f'{site}/'), 90)
		assert result.is_error, result.text
		assert 'did not happen' in result.text and 'browser_close_tab' in result.text, result.text
		# what the error says to do works
		tabs = (await mcp.ok('browser_list_tabs')).structured['tabs']
		await mcp.ok('browser_navigate', url=f'{site}/', new_tab=True)
		await mcp.ok('browser_close_tab', tab_id=tabs[0]['tab_id'])
		assert (await mcp.ok('browser_get_state')).json()['url'].rstrip('/') == site.rstrip('/')


NAVIGATION_LIMIT = 3  # s: browser-use's own limit on a navigation (TIMEOUT_NavigateToUrlEvent, 30 s by default)


async def test_a_site_that_never_answers_is_said_plainly_and_leaves_the_tab_usable(tmp_path: Path, site: str) -> None:
	"""Found by fuzzing: a loopback server that took the connection and never answered failed the navigation
	with browser-use's internal handler names ("…on_NavigateToUrlEvent#… timed out after 30.0s"), and the
	tab's pending navigation then held the next browser_get_state until its 60 s deadline."""
	home = tmp_path / 'home'
	env = server_env(home, TIMEOUT_NavigateToUrlEvent=str(NAVIGATION_LIMIT))
	with socket.socket() as silent:  # the kernel completes the handshake; nothing ever reads or answers
		silent.bind(('127.0.0.1', 0))
		silent.listen(16)
		hung = f'http://127.0.0.1:{silent.getsockname()[1]}/slow'
		async with running_server(home, env=env) as mcp:
			await mcp.ok('browser_navigate', url=f'{site}/two')
			for new_tab, shows in ((False, f'the tab shows {site}/two'), (True, 'the new tab shows about:blank')):
				started = time.monotonic()
				result = await mcp.call('browser_navigate', url=hung, new_tab=new_tab, timeout=30)
				assert result.is_error, result.text
				assert f'did not answer within {NAVIGATION_LIMIT} s' in result.text, result.text
				assert shows in result.text and 'try again' in result.text, result.text
				assert 'Event' not in result.text and 'on_' not in result.text and '#' not in result.text, result.text
				assert time.monotonic() - started < NAVIGATION_LIMIT + 5
				# the tab answers at once: its navigation was stopped, not left pending
				state = await asyncio.wait_for(mcp.call('browser_get_state', timeout=30), 10)
				assert not state.is_error, state.text
				assert state.json()['url'] == (f'{site}/two' if not new_tab else 'about:blank'), state.text[:300]
			tabs = (await mcp.ok('browser_list_tabs')).structured['tabs']
			assert [t['url'] for t in tabs] == [f'{site}/two', 'about:blank'], tabs


async def test_a_hung_background_tab_does_not_hold_save_or_clone(server: RawServer, site: str) -> None:
	"""Found by fuzzing: a tab stuck in a script, not the focused one, made browser_save_state fail at its
	deadline (45 s) naming the healthy tab, and browser_clone_session take a minute. A hung tab's page
	answers nothing (its localStorage cannot be read); the others' state is saved, and the reply says
	which origin was left out and why."""
	from harness.servers import html_pages

	with html_pages({'/stuck': '<p>stuck</p>'}) as other:
		async with server.client() as mcp:
			await mcp.ok('browser_navigate', url=f'{site}/two')
			await mcp.ok('browser_evaluate', expression="localStorage.setItem('kept', 'here'); 1")
			tabs = (await mcp.ok('browser_list_tabs')).structured['tabs']
			await mcp.ok('browser_navigate', url=f'{other}/stuck', new_tab=True)
			await mcp.ok('browser_evaluate', expression="localStorage.setItem('lost', 'there'); 1")
			await mcp.ok('browser_evaluate', expression='setTimeout(() => { while (true) {} }, 300); 1')
			await asyncio.sleep(0.6)
			await mcp.ok('browser_switch_tab', tab_id=tabs[0]['tab_id'])

			started = time.monotonic()
			saved = await asyncio.wait_for(mcp.call('browser_save_state'), 90)
			took = time.monotonic() - started
			assert not saved.is_error, saved.text
			assert took < 8, f'{took:.1f} s'
			said = ' '.join(saved.texts)
			assert 'did not answer' in said and other in said, said
			origins = {o['origin']: o['localStorage'] for o in saved.structured['origins']}
			assert origins == {site.rstrip('/'): [{'name': 'kept', 'value': 'here'}]}, origins

			started = time.monotonic()
			clone = await asyncio.wait_for(mcp.call('browser_clone_session', from_session_id='default', session_id='copy'), 90)
			took = time.monotonic() - started
			assert not clone.is_error, clone.text
			assert took < 15, f'{took:.1f} s'
			said = ' '.join(clone.texts)
			assert 'did not answer' in said and other in said, said
			stored = await mcp.ok('browser_evaluate', session_id='copy', expression="localStorage.getItem('kept')")
			assert stored.structured['result'] == 'here'
