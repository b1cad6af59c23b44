"""Durable sessions (browser_create_session{persist}, --persist-sessions), end to end.

Real server subprocesses on one HOME (so one state dir), a real MCP client, real Chromium, the loopback
test site: ``/signin`` sets an HttpOnly cookie and a localStorage note, ``/me`` shows both in its title.
"""

from __future__ import annotations

import asyncio
import stat
import time
import uuid
from pathlib import Path

from harness.durable import records, stop
from harness.httpserver import TOKENS, connect, http_server
from harness.servers import Mcp, RawServer, server_env, wait_until


def new_id(prefix: str) -> str:
	return f'{prefix}-{uuid.uuid4().hex[:8]}'


async def title(mcp: Mcp, sid: str) -> str:
	return (await mcp.ok('browser_evaluate', session_id=sid, expression='document.title')).structured['result']


async def listed(mcp: Mcp) -> dict[str, dict]:
	return {s['session_id']: s for s in (await mcp.ok('browser_list_sessions')).structured['sessions']}


async def test_a_durable_session_outlives_its_server_and_is_deleted_for_good(tmp_path: Path, site: str) -> None:
	home, sid = tmp_path / 'home', new_id('shop')
	first = await RawServer(home).start()
	try:
		async with first.client() as mcp:
			made = await mcp.ok('browser_create_session', session_id=sid, persist=True)
			assert made.structured['persisted'] is True
			await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/signin?user=ann&note=n1')
			await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/me')
			assert await title(mcp, sid) == 'Me: ann / n1'
	finally:
		await stop(first)

	[record] = records(home)
	assert sid not in str(record.relative_to(home)), 'never a raw id in a path'
	assert stat.S_IMODE(record.stat().st_mode) == 0o600
	assert stat.S_IMODE(record.parent.stat().st_mode) == 0o700
	assert stat.S_IMODE(record.parent.parent.stat().st_mode) == 0o700
	assert 'ann' in record.read_text(), 'the HttpOnly cookie is kept'

	second = await RawServer(home).start()
	try:
		async with second.client() as mcp:
			before = (await listed(mcp))[sid]
			assert (before['running'], before['persisted'], before['active']) == (False, True, False)
			assert before['current_url'] == f'{site}/me'

			started = time.perf_counter()
			reopened = await mcp.ok('browser_evaluate', session_id=sid, expression='document.title')
			reopen_ms = (time.perf_counter() - started) * 1000
			assert reopened.structured['result'] == 'Me: ann / n1', 'same cookie, same localStorage, same page'
			assert 'restored durable session' in '\n'.join(reopened.texts), reopened.texts
			print(f'reopen ms: {reopen_ms:.0f}; record bytes: {record.stat().st_size}')
			after = (await listed(mcp))[sid]
			assert (after['running'], after['persisted']) == (True, True)

			assert (await mcp.ok('browser_delete_session', session_id=sid)).text == f'Deleted session {sid}'
			assert records(home) == [], 'its files are gone'
			assert sid not in await listed(mcp)
			again = await mcp.call('browser_delete_session', session_id=sid)
			assert again.is_error and 'not found' in again.text.lower()
			fresh = await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/me')
			assert 'restored' not in '\n'.join(fresh.texts)
			assert await title(mcp, sid) == 'Me: nobody / none', 'deleted means a fresh session next time'
	finally:
		await second.stop()


async def test_a_corrupted_record_gives_a_note_and_a_fresh_session(tmp_path: Path, site: str) -> None:
	home, sid = tmp_path / 'home', new_id('broken')
	server = await RawServer(home, '--persist-sessions').start()
	try:
		async with server.client() as mcp:
			await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/signin?user=bob&note=n2')
			await mcp.ok('browser_close_session', session_id=sid)  # closing keeps a durable session
			[record] = records(home)
			assert 'bob' in record.read_text()
			record.write_text('{"version": 1, "session_id": ')
			result = await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/me')
			text = '\n'.join(result.texts)
			assert 'could not be restored' in text and 'fresh, empty session' in text, text
			assert await title(mcp, sid) == 'Me: nobody / none'

			await mcp.ok('browser_close_session', session_id=sid)
			record.unlink()  # deleted underneath: simply a new session, durable again (the flag)
			await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/me')
			assert await title(mcp, sid) == 'Me: nobody / none'
			assert records(home) == [record]
	finally:
		await server.stop()


async def test_a_second_server_on_the_same_state_dir_refuses_to_start(tmp_path: Path) -> None:
	home = tmp_path / 'home'
	first = await RawServer(home, '--persist-sessions').start()
	second = None
	try:
		async with first.client() as mcp:
			assert (await mcp.ok('browser_list_sessions')).structured == {'sessions': []}
			second = await RawServer(home, '--persist-sessions', env=server_env(home)).start()
			assert await second.wait(30) == 2
			said = '\n'.join(second.stderr_lines)
			assert f'owned by another running browser-use-mcp server (pid {first.pid})' in said, said
	finally:
		if second is not None:
			await second.stop()
		await first.stop()


async def test_another_principal_can_neither_list_reopen_nor_delete_it(tmp_path: Path, site: str) -> None:
	tokens = [arg for t in (TOKENS['alpha'], TOKENS['beta']) for arg in ('--auth-token', t)]
	sid = new_id('mine')
	with http_server(tmp_path / 'home', *tokens, '--persist-sessions') as server:
		async with connect(server, TOKENS['alpha']) as alpha, connect(server, TOKENS['beta']) as beta:
			await alpha.ok('browser_navigate', session_id=sid, url=f'{site}/signin?user=cat&note=n3')
			await alpha.ok('browser_close_session', session_id=sid)
			assert (await listed(alpha))[sid]['running'] is False
			assert sid not in await listed(beta)
			refused = await beta.call('browser_delete_session', session_id=sid)
			unknown = await beta.call('browser_delete_session', session_id='never-used')
			assert refused.is_error and unknown.is_error
			assert refused.text.replace(sid, 'X') == unknown.text.replace('never-used', 'X'), 'as for an unknown id'
			theirs = await beta.ok('browser_navigate', session_id=sid, url=f'{site}/me')
			assert 'restored' not in '\n'.join(theirs.texts)
			assert await title(beta, sid) == 'Me: nobody / none', "beta got a session of its own, not alpha's"
			await alpha.ok('browser_navigate', session_id=sid, url=f'{site}/me')
			assert await title(alpha, sid) == 'Me: cat / n3'


async def test_idle_expiry_keeps_a_durable_session(tmp_path: Path, site: str) -> None:
	home, sid = tmp_path / 'home', new_id('idle')
	server = await RawServer(home, '--persist-sessions', '--idle-timeout', '1').start()
	try:
		async with server.client() as mcp:
			await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/signin?user=dan&note=n4')
			await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/me')
			deadline = time.monotonic() + 15
			while (await listed(mcp))[sid]['running'] and time.monotonic() < deadline:
				await asyncio.sleep(0.2)
			assert (await listed(mcp))[sid]['running'] is False, 'expired, still listed as durable'
			back = await mcp.ok('browser_evaluate', session_id=sid, expression='document.title')
			assert back.structured['result'] == 'Me: dan / n4', 'no "lost its state" error: reopened instead'
			assert 'restored durable session' in '\n'.join(back.texts)
	finally:
		await server.stop()


def record_shows(home: Path, *words: str) -> bool:
	"""The one durable record on disk names all of ``words`` (a save after the calls has landed)."""
	found = records(home)
	return len(found) == 1 and all(w in found[0].read_text() for w in words)


async def test_each_page_change_is_saved_so_a_killed_server_loses_nothing(tmp_path: Path, site: str) -> None:
	home, sid = tmp_path / 'home', new_id('crash')
	first = await RawServer(home).start()
	try:
		async with first.client() as mcp:
			await mcp.ok('browser_create_session', session_id=sid, persist=True)
			assert not record_shows(home, 'eve'), 'the record made at creation has no cookie yet'
			await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/signin?user=eve&note=n5')
			await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/me')
			# saved in the background after the calls, while the session goes on running
			assert wait_until(lambda: record_shows(home, 'eve', f'{site}/me'), timeout=30), records(home)
			assert (await listed(mcp))[sid]['running'] is True
	finally:
		await first.stop()  # SIGKILL: no orderly save at the end

	second = await RawServer(home).start()
	try:
		async with second.client() as mcp:
			back = await mcp.ok('browser_evaluate', session_id=sid, expression='document.title')
			assert back.structured['result'] == 'Me: eve / n5', 'the page and its cookie, as the last save had them'
			assert 'restored durable session' in '\n'.join(back.texts)
	finally:
		await second.stop()


async def test_every_tab_and_the_creation_options_come_back(tmp_path: Path, site: str) -> None:
	home, sid = tmp_path / 'home', new_id('tabs')
	options = {'viewport': {'width': 500, 'height': 700}, 'locale': 'de-DE'}
	first = await RawServer(home).start()
	try:
		async with first.client() as mcp:
			await mcp.ok('browser_create_session', session_id=sid, persist=True, **options)
			await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/two')
			await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/form', new_tab=True)
			tabs = (await mcp.ok('browser_list_tabs', session_id=sid)).structured['tabs']
			first_tab = next(t['tab_id'] for t in tabs if t['url'] == f'{site}/two')
			await mcp.ok('browser_switch_tab', session_id=sid, tab_id=first_tab)  # /two is the focused tab again
	finally:
		await stop(first)

	second = await RawServer(home).start()
	try:
		async with second.client() as mcp:
			back = await mcp.ok(
				'browser_evaluate', session_id=sid, expression='[location.href, innerWidth, navigator.language].join(" ")'
			)
			assert back.structured['result'] == f'{site}/two 500 de-DE', 'the focused tab, with the options it was made with'
			note = '\n'.join(back.texts)
			assert 'and 1 other tab(s)' in note and 're-applied its options (viewport, locale)' in note, note
			tabs = (await mcp.ok('browser_list_tabs', session_id=sid)).structured['tabs']
			assert sorted(t['url'] for t in tabs) == [f'{site}/form', f'{site}/two']
			listed_options = (await listed(mcp))[sid].get('options')
			assert listed_options is None or listed_options['locale'] == 'de-DE'
	finally:
		await stop(second)


async def test_options_no_longer_accepted_give_a_note_and_the_defaults(tmp_path: Path, site: str) -> None:
	import json

	home, sid = tmp_path / 'home', new_id('opts')
	server = await RawServer(home).start()
	try:
		async with server.client() as mcp:
			await mcp.ok('browser_create_session', session_id=sid, persist=True, locale='de-DE')
			await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/two')
			await mcp.ok('browser_close_session', session_id=sid)
			[record] = records(home)
			data = json.loads(record.read_text())
			assert data['options'] == {'locale': 'de-DE'}
			data['options']['locale'] = 'not a locale!'  # edited, or a rule tightened since
			record.write_text(json.dumps(data))
			back = await mcp.ok('browser_evaluate', session_id=sid, expression='location.href')
			note = '\n'.join(back.texts)
			assert back.structured['result'] == f'{site}/two'
			assert 'could not be re-applied (locale: ' in note and "it reopens with the server's defaults" in note, note
	finally:
		await server.stop()
