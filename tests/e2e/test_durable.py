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

from tests.e2e.test_http import TOKENS, connect, http_server
from tests.support import Mcp, RawServer, server_env


def new_id(prefix: str) -> str:
	return f'{prefix}-{uuid.uuid4().hex[:8]}'


async def title(mcp: Mcp, sid: str) -> str:
	return (await mcp.ok('browser_evaluate', session_id=sid, expression='document.title')).structured['result']


async def listed(mcp: Mcp) -> dict[str, dict]:
	return {s['session_id']: s for s in (await mcp.ok('browser_list_sessions')).structured['sessions']}


def records(home: Path) -> list[Path]:
	return sorted((home / 'state' / 'durable').glob('p-*/*.json'))


async def stop(server: RawServer) -> None:
	"""An orderly stop (the host closes stdin), as a restart would be."""
	server.close_stdin()
	assert await server.wait(30) == 0, server.stderr_lines[-20:]
	await server.stop()


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
