"""Recordings outlive their server (recorder.py, ``Recordings.adopt``): real HTTP servers one after
the other on one HOME (so one state dir), real MCP clients with two tokens, real Chromium."""

from __future__ import annotations

import json
import signal
import stat
import time
import uuid
from pathlib import Path

import httpx

from harness.httpserver import HttpServer, connect, http_server, stop
from harness.servers import server_env

TOKENS = {name: f'{name}-token-{uuid.uuid4().hex}' for name in ('alpha', 'beta')}
ARGS = [arg for t in TOKENS.values() for arg in ('--auth-token', t)] + ['--tools', 'all']


def metas(home: Path) -> dict[str, Path]:
	"""session id -> meta.json of every recording kept under the state dir."""
	out = {}
	for meta in (home / 'state' / 'recordings').glob('p-*/*/meta.json'):
		out[json.loads(meta.read_text())['session_id']] = meta
	return out


async def same_as_unknown(server: HttpServer, token: str, sid: str) -> str:
	"""The error another token gets for ``sid``, checked to be the one a never-made id gets."""
	async with connect(server, token) as other:
		theirs = await other.call('browser_get_recording', session_id=sid)
		never = await other.call('browser_get_recording', session_id='never-made')
	assert theirs.is_error and never.is_error
	assert theirs.text.replace(sid, '<id>') == never.text.replace('never-made', '<id>')
	return theirs.text


async def test_a_recording_outlives_a_restart_for_its_principal_only(tmp_path: Path, site: str) -> None:
	home = tmp_path / 'home'
	with http_server(home, *ARGS) as first:
		async with connect(first, TOKENS['alpha']) as alpha:
			for sid in ('kept', 'aged'):
				await alpha.ok('browser_create_session', session_id=sid, record='trace')
				await alpha.ok('browser_navigate', url=f'{site}/two', session_id=sid)
				await alpha.ok('browser_navigate', url=site, session_id=sid)
				await alpha.ok('browser_close_session', session_id=sid)
			before = (await alpha.ok('browser_get_recording', session_id='kept')).structured
		assert stop(first) == 0, first.log_text()[-2000:]  # an orderly stop (SIGTERM)

	kept = metas(home)
	assert set(kept) == {'kept', 'aged'}, 'still there after the server stopped'
	folder = kept['kept'].parent
	assert 'kept' not in str(folder.relative_to(home)) and TOKENS['alpha'] not in kept['kept'].read_text()
	assert stat.S_IMODE(folder.stat().st_mode) == stat.S_IMODE(folder.parent.stat().st_mode) == 0o700
	assert stat.S_IMODE(kept['kept'].stat().st_mode) == 0o600
	aged = json.loads(kept['aged'].read_text())
	kept['aged'].write_text(json.dumps({**aged, 'closed_at': time.time() - 7200}))  # closed two hours ago

	with http_server(home, *ARGS, '--recordings-ttl', '3600') as second:
		async with connect(second, TOKENS['alpha']) as alpha:
			after = (await alpha.ok('browser_get_recording', session_id='kept')).structured
			expired = await alpha.call('browser_get_recording', session_id='aged')
		assert [c['tool'] for c in after['calls']] == ['browser_navigate', 'browser_navigate']
		assert after['calls'] == before['calls'] and after['closed'] == before['closed']
		assert after['live'] is False and after['truncated'] is None
		assert all(Path(c['screenshot']).read_bytes()[:3] == b'\xff\xd8\xff' for c in after['calls'])
		assert expired.is_error and 'has expired' in expired.text, expired.text
		assert not kept['aged'].parent.exists(), 'deleted at start-up'
		await same_as_unknown(second, TOKENS['beta'], 'kept')

		base = f'http://127.0.0.1:{second.port}/dashboard'
		mine, theirs = ({'Authorization': f'Bearer {TOKENS[n]}'} for n in ('alpha', 'beta'))
		async with httpx.AsyncClient(timeout=30) as http:
			page = await http.get(f'{base}/recordings/kept', headers=mine)
			assert page.status_code == 200 and 'browser_navigate' in page.text
			shot = await http.get(f'{base}/api/recordings/kept/shot-1.jpg', headers=mine)
			assert shot.status_code == 200 and shot.content[:3] == b'\xff\xd8\xff'
			listed = (await http.get(f'{base}/api/sessions', headers=mine)).json()
			assert [r['session_id'] for r in listed['recorded']] == ['kept'], listed
			assert (await http.get(f'{base}/api/sessions', headers=theirs)).json()['recorded'] == []
			zipped = await http.get(f'{base}/api/recordings/kept/recording.zip', headers=mine)
			assert zipped.status_code == 200 and zipped.content[:2] == b'PK'
			for url in (f'{base}/recordings/kept', f'{base}/api/recordings/kept/shot-1.jpg'):
				assert (await http.get(url, headers=theirs)).status_code == 404


async def test_a_recording_of_a_killed_server_is_adopted_as_truncated(tmp_path: Path, site: str) -> None:
	home = tmp_path / 'home'
	with http_server(home, *ARGS) as first:
		async with connect(first, TOKENS['alpha']) as alpha:
			await alpha.ok('browser_create_session', session_id='cut', record=['trace', 'har'])
			await alpha.ok('browser_navigate', url=f'{site}/two', session_id='cut')
			live = (await alpha.ok('browser_get_recording', session_id='cut')).structured
			assert live['live'] is True and len(live['calls']) == 1
		stop(first, signal.SIGKILL)  # mid-recording: nothing closes it

	assert json.loads(metas(home)['cut'].read_text())['closed_at'] is None
	with http_server(home, *ARGS) as second:
		async with connect(second, TOKENS['alpha']) as alpha:
			rec = (await alpha.ok('browser_get_recording', session_id='cut')).structured
			assert rec['live'] is False and rec['closed'] is not None and rec['closed'] >= rec['started']
			assert rec['truncated'] == 'server stopped'
			assert [c['tool'] for c in rec['calls']] == ['browser_navigate']
			assert Path(rec['calls'][0]['screenshot']).is_file()
			# the session itself is gone with its server: the same id records afresh
			await alpha.ok('browser_create_session', session_id='cut', record='trace')
			fresh = (await alpha.ok('browser_get_recording', session_id='cut')).structured
			assert fresh['live'] is True and fresh['calls'] == [] and fresh['directory'] != rec['directory']
		await same_as_unknown(second, TOKENS['beta'], 'cut')
	assert json.loads(metas(home)['cut'].read_text())['closed_at'] is not None, 'closed at the orderly stop'


async def test_a_second_server_on_the_state_dir_keeps_its_recordings_to_itself(tmp_path: Path, site: str) -> None:
	"""The first server owns <state dir>/recordings; a second one on the same state dir records into
	its scratch directory (and says so), which goes when it stops; the first one's stay."""
	home = tmp_path / 'home'
	with http_server(home, *ARGS) as first:
		async with connect(first, TOKENS['alpha']) as alpha:
			await alpha.ok('browser_create_session', session_id='first', record='trace')
			await alpha.ok('browser_navigate', url=site, session_id='first')
			await alpha.ok('browser_close_session', session_id='first')
		with http_server(home / 'second', *ARGS, env=server_env(home)) as second:
			async with connect(second, TOKENS['alpha']) as alpha:
				await alpha.ok('browser_create_session', session_id='second', record='trace')
				await alpha.ok('browser_navigate', url=site, session_id='second')
				rec = (await alpha.ok('browser_get_recording', session_id='second')).structured
				assert Path(rec['directory']).relative_to(home / 'state').parts[0].startswith('srv-')
				assert (await alpha.call('browser_get_recording', session_id='first')).is_error, 'the first one owns it'
			assert "recordings are kept in this server's scratch directory" in second.log_text(), second.log_text()
		assert not Path(rec['directory']).exists(), 'gone with the second server'
		async with connect(first, TOKENS['alpha']) as alpha:
			assert (await alpha.ok('browser_get_recording', session_id='first')).structured['calls']
	assert set(metas(home)) == {'first'}
