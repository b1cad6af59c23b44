"""Saving, restoring and cloning a session's storage state, end to end.

Real server over stdio (HTTP for the principal rule), real Chromium, pages from the loopback test
site: ``/signin`` sets an HttpOnly cookie and a localStorage note, ``/me`` shows both in its title.
The core tests run with a Chromium per session and with contexts of shared Chromiums.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from harness.httpserver import TOKENS, connect, http_server
from harness.servers import Mcp, chromium_pids, wait_until
from tests.fixtures import isolation_modes

isolation = isolation_modes()
pytestmark = pytest.mark.usefixtures('isolation')


def new_id(prefix: str) -> str:
	return f'{prefix}-{uuid.uuid4().hex[:8]}'


async def me(mcp: Mcp, site: str, sid: str | None) -> str:
	"""Who the site thinks is logged in and the note localStorage holds, as /me says in its title."""
	await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/me')
	return (await mcp.ok('browser_evaluate', session_id=sid, expression='document.title')).structured['result']


async def sign_in(mcp: Mcp, site: str, sid: str | None, user: str, note: str) -> None:
	await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/signin?user={user}&note={note}')


async def open_ids(mcp: Mcp) -> set[str]:
	return {s['session_id'] for s in (await mcp.ok('browser_list_sessions')).structured['sessions']}


async def close(mcp: Mcp, *sids: str) -> None:
	for sid in sids:
		await mcp.call('browser_close_session', session_id=sid)


def auth_cookies(saved: dict[str, Any]) -> list[dict[str, Any]]:
	return [c for c in saved['cookies'] if c['name'] == 'auth']


def notes(saved: dict[str, Any]) -> list[str]:
	return [i['value'] for o in saved['origins'] for i in o['localStorage'] if i['name'] == 'note']


async def test_save_then_create_from_the_object_starts_logged_in(mcp: Mcp, site: str) -> None:
	source = new_id('src')
	await sign_in(mcp, site, source, 'ann', 'n1')
	saved = await mcp.ok('browser_save_state', session_id=source)
	state = saved.structured
	assert set(state) == {'cookies', 'origins'}, "Playwright's storageState keys, nothing else"
	(cookie,) = auth_cookies(state)
	assert (cookie['value'], cookie['domain'], cookie['path'], cookie['httpOnly'], cookie['expires']) == (
		'ann',
		'127.0.0.1',
		'/',
		True,
		-1,
	)
	assert state['origins'] == [{'origin': site, 'localStorage': [{'name': 'note', 'value': 'n1'}]}]
	assert json.loads(saved.text.split('\n', 1)[1]) == state, 'the text carries the same JSON'

	created = await mcp.ok('browser_create_session', storage_state=state)
	sid = created.structured['session_id']
	assert created.structured['created'] is True
	assert await me(mcp, site, sid) == 'Me: ann / n1', 'cookie sent on the first request, localStorage there'
	tabs = (await mcp.ok('browser_list_tabs', session_id=sid)).structured['tabs']
	assert len(tabs) == 1, f'the tab that seeded localStorage is gone: {tabs}'
	await close(mcp, source, sid)


async def test_save_with_a_path_then_create_by_name_outlives_the_saver(mcp: Mcp, site: str) -> None:
	source = new_id('src')
	await sign_in(mcp, site, source, 'bob', 'n2')
	name = f'login-{uuid.uuid4().hex[:6]}.json'
	saved = await mcp.ok('browser_save_state', session_id=source, path=name)
	assert name in saved.text
	written = [p for p in (mcp.home / 'state').rglob(name) if p.parent.name == 'files']
	assert len(written) == 1, 'written to the session files directory'
	assert json.loads(written[0].read_text()) == saved.structured
	await close(mcp, source)  # the name is kept after the session that saved it

	sid = (await mcp.ok('browser_create_session', storage_state=name)).structured['session_id']
	assert await me(mcp, site, sid) == 'Me: bob / n2'
	await close(mcp, sid)


async def test_clone_is_logged_in_at_the_same_url_then_diverges(mcp: Mcp, site: str) -> None:
	source = new_id('src')
	await sign_in(mcp, site, source, 'cat', 'n3')
	assert await me(mcp, site, source) == 'Me: cat / n3'
	cloned = await mcp.ok('browser_clone_session', from_session_id=source)
	clone = cloned.structured['session_id']
	assert cloned.structured['created'] is True and clone != source
	page = (await mcp.ok('browser_get_state', session_id=clone)).json()
	assert (page['url'], page['title']) == (f'{site}/me', 'Me: cat / n3'), 'opened at the source URL, logged in'

	await mcp.ok('browser_navigate', session_id=clone, url=f'{site}/signout')
	assert await me(mcp, site, clone) == 'Me: nobody / none'
	assert await me(mcp, site, source) == 'Me: cat / n3', 'signing out of the clone leaves the source logged in'
	await sign_in(mcp, site, source, 'cat2', 'n4')
	assert await me(mcp, site, clone) == 'Me: nobody / none', "the source's new cookie and storage stay in the source"
	await close(mcp, source, clone)


async def test_a_clone_is_made_to_the_sources_order_and_state_combines_with_options(mcp: Mcp, site: str) -> None:
	source = new_id('made')
	order = {'viewport': {'width': 640, 'height': 480}, 'timezone': 'Asia/Tokyo', 'locale': 'de-DE'}
	await mcp.ok('browser_create_session', session_id=source, **order)
	await sign_in(mcp, site, source, 'gus', 'n8')
	saved = (await mcp.ok('browser_save_state', session_id=source)).structured
	cloned = (await mcp.ok('browser_clone_session', from_session_id=source)).structured
	made = (await mcp.ok('browser_create_session', storage_state=saved, timezone='America/New_York')).structured
	assert cloned['options'] == order and made['options'] == {'timezone': 'America/New_York'}
	probe = '[innerWidth, Intl.DateTimeFormat().resolvedOptions().timeZone, navigator.language]'
	for sid, expected in ((cloned['session_id'], [640, 'Asia/Tokyo', 'de-DE']), (made['session_id'], None)):
		assert await me(mcp, site, sid) == 'Me: gus / n8'
		seen = (await mcp.ok('browser_evaluate', session_id=sid, expression=probe)).json()
		if expected is not None:
			assert seen == expected, 'the clone has the source options'
		else:
			assert seen[1] == 'America/New_York' and seen[0] != 640, 'the restored session has its own options only'
	await close(mcp, source, cloned['session_id'], made['session_id'])


async def test_the_default_session_saves_and_clones(mcp: Mcp, site: str) -> None:
	await sign_in(mcp, site, None, 'dot', 'n5')
	state = (await mcp.ok('browser_save_state')).structured
	assert [c['value'] for c in auth_cookies(state)] == ['dot'] and notes(state) == ['n5']
	clone = (await mcp.ok('browser_clone_session', from_session_id='default')).structured['session_id']
	assert await me(mcp, site, clone) == 'Me: dot / n5'
	await mcp.ok('browser_navigate', url=f'{site}/signout')
	await close(mcp, clone)


async def test_sessions_never_see_each_others_cookies(mcp: Mcp, site: str) -> None:
	first, second, fresh = new_id('a'), new_id('b'), new_id('c')
	await sign_in(mcp, site, first, 'eve', 'n6')
	await sign_in(mcp, site, second, 'fay', 'n7')
	await mcp.ok('browser_navigate', session_id=fresh, url=f'{site}/two')
	theirs = (await mcp.ok('browser_save_state', session_id=second)).structured
	assert [c['value'] for c in auth_cookies(theirs)] == ['fay'] and notes(theirs) == ['n7']
	assert (await mcp.ok('browser_save_state', session_id=fresh)).structured == {'cookies': [], 'origins': []}
	await close(mcp, first, second, fresh)


BAD_STATES = [
	([], 'must be an object'),
	(5, 'must be an object'),
	({'cookie': []}, 'storage_state.cookie'),
	({'cookies': 'x'}, 'storage_state.cookies'),
	({'cookies': [{'value': 'v', 'domain': 'h'}]}, 'storage_state.cookies[0].name'),
	({'cookies': [{'name': 'n', 'value': 'v', 'domain': 'h', 'sameSite': 'lax'}]}, 'storage_state.cookies[0].sameSite'),
	({'origins': [{'origin': 'ftp://host'}]}, 'storage_state.origins[0].origin'),
	({'origins': [{'origin': 'http://host/path'}]}, 'storage_state.origins[0].origin'),
	({'origins': [{'origin': 'http://host', 'localStorage': [{'name': 'k'}]}]}, 'storage_state.origins[0].localStorage[0].value'),
	('never-saved.json', 'no saved state named'),
	('../x.json', 'plain file name'),
	('/etc/passwd', 'plain file name'),
	('a/b.json', 'plain file name'),
]


@pytest.mark.parametrize(('value', 'says'), BAD_STATES, ids=[repr(v)[:40] for v, _ in BAD_STATES])
async def test_a_bad_storage_state_is_refused_and_creates_nothing(mcp: Mcp, value: Any, says: str) -> None:
	before = await open_ids(mcp)
	sid = new_id('bad')
	result = await mcp.call('browser_create_session', session_id=sid, storage_state=value)
	assert result.is_error, result.text
	assert says in result.text and 'storage_state' in result.text, result.text
	assert await open_ids(mcp) == before, 'no session created'


def ours(home: Path) -> set[Path]:
	"""The files under the server's home that are not Chromium's own (profiles change by themselves)."""
	return {p for p in home.rglob('*') if p.is_file() and not any(part.startswith('profile') for part in p.parts)}


@pytest.mark.parametrize('path', ['../x.json', '/etc/passwd', 'a/b.json', '..', 'x.txt', '.hidden.json', 'a..json', ''])
async def test_a_bad_path_is_refused_and_writes_nothing(mcp: Mcp, site: str, path: str) -> None:
	sid = new_id('path')
	await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/two')
	before, passwd = ours(mcp.home), os.stat('/etc/passwd').st_mtime_ns
	result = await mcp.call('browser_save_state', session_id=sid, path=path)
	assert result.is_error and 'path' in result.text, result.text
	assert ours(mcp.home) == before and os.stat('/etc/passwd').st_mtime_ns == passwd, 'nothing written'
	await close(mcp, sid)


async def test_storage_state_is_for_new_sessions_only(mcp: Mcp, site: str) -> None:
	sid = new_id('open')
	await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/two')
	result = await mcp.call('browser_create_session', session_id=sid, storage_state={'cookies': []})
	assert result.is_error and 'already open' in result.text, result.text
	taken = await mcp.call('browser_clone_session', from_session_id=sid, session_id=sid)
	assert taken.is_error and 'already open' in taken.text, taken.text
	missing = await mcp.call('browser_clone_session', from_session_id=new_id('nobody'))
	assert missing.is_error and 'not found' in missing.text, missing.text
	await close(mcp, sid)


async def test_a_principal_cannot_load_anothers_saved_state(tmp_path: Path, site: str) -> None:
	tokens = [arg for t in (TOKENS['alpha'], TOKENS['beta']) for arg in ('--auth-token', t)]
	with http_server(tmp_path / 'home', *tokens) as server:
		async with connect(server, TOKENS['alpha']) as alpha, connect(server, TOKENS['beta']) as beta:
			await sign_in(alpha, site, 'mine', 'gus', 'n8')
			await alpha.ok('browser_save_state', session_id='mine', path='shared-name.json')
			refused = await beta.call('browser_create_session', storage_state='shared-name.json')
			unknown = await beta.call('browser_create_session', storage_state='other-name.json')
			assert refused.is_error and unknown.is_error
			assert refused.text.replace('shared-name', 'other-name') == unknown.text, 'indistinguishable from a name never saved'
			assert await open_ids(beta) == set(), 'nothing created for beta'
			own = (await alpha.ok('browser_create_session', storage_state='shared-name.json')).structured['session_id']
			assert await me(alpha, site, own) == 'Me: gus / n8'

			secret = f'secret-{uuid.uuid4().hex}'
			cookie = {'name': 'auth', 'value': secret, 'domain': '127.0.0.1', 'httpOnly': True}
			seeded = (await alpha.ok('browser_create_session', storage_state={'cookies': [cookie]})).structured['session_id']
			saved = (await alpha.ok('browser_save_state', session_id=seeded, path='secret.json')).structured
			assert [c['value'] for c in auth_cookies(saved)] == [secret]
		assert secret not in server.log_text(), 'cookie values are never logged'


async def test_a_state_the_browser_refuses_leaves_no_session(mcp: Mcp) -> None:
	before, browsers = await open_ids(mcp), chromium_pids(mcp.browsers())
	insecure_none = {'name': 'n', 'value': 'v', 'domain': '127.0.0.1', 'sameSite': 'None', 'secure': False}
	result = await mcp.call('browser_create_session', session_id=new_id('refused'), storage_state={'cookies': [insecure_none]})
	assert result.is_error and 'No session was created' in result.text, result.text
	assert await open_ids(mcp) == before
	assert wait_until(lambda: chromium_pids(mcp.browsers()) <= browsers), 'its browser is gone too'
