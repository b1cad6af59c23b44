"""The flight recorder over HTTP: a recording belongs to its principal, and a tiny size cap
truncates it. One token-protected server (recording capped at 4 KB) for the module."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from harness.httpserver import HttpServer, connect, http_server
from harness.servers import server_env

TOKENS = {name: f'{name}-token-{uuid.uuid4().hex}' for name in ('alpha', 'beta')}
CAP = 4096  # bytes: room for the first entries, not for a screenshot


@pytest.fixture(scope='module')
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
	home = tmp_path_factory.mktemp('recording-http-home')
	tokens = [arg for t in TOKENS.values() for arg in ('--auth-token', t)]
	env = server_env(home, BROWSER_USE_MCP_RECORDING_SIZE_CAP=str(CAP))
	with http_server(home, '--tools', 'all', *tokens, env=env) as srv:
		yield srv


async def test_another_token_cannot_fetch_and_a_tiny_cap_truncates(server: HttpServer, site: str) -> None:
	async with connect(server, TOKENS['alpha']) as alpha, connect(server, TOKENS['beta']) as beta:
		await alpha.ok('browser_create_session', session_id='mine', record='trace')
		await alpha.ok('browser_navigate', url=f'{site}/two', session_id='mine')
		await alpha.ok('browser_get_state', session_id='mine')
		await alpha.ok('browser_navigate', url=site, session_id='mine')

		theirs = await beta.call('browser_get_recording', session_id='mine')
		never = await beta.call('browser_get_recording', session_id='never-made')
		assert theirs.is_error and never.is_error
		assert theirs.text.replace('mine', '<id>') == never.text.replace('never-made', '<id>')

		rec = (await alpha.ok('browser_get_recording', session_id='mine')).structured
		assert rec['truncated'] and 'size cap' in rec['truncated']
		assert len(rec['calls']) < 3  # navigate, get_state (2,000 characters of result), navigate: not all fit
		folder = Path(rec['directory'])
		assert sum(f.stat().st_size for f in folder.iterdir()) <= CAP + 200  # the one "truncated" line may pass it
		assert '"truncated"' in (folder / 'trace.jsonl').read_text().splitlines()[-1]
		# the session itself carries on, and the recording no longer grows
		await alpha.ok('browser_navigate', url=f'{site}/two', session_id='mine')
		again = (await alpha.ok('browser_get_recording', session_id='mine')).structured
		assert again['calls'] == rec['calls'] and again['size_bytes'] == rec['size_bytes']


async def test_replay_page_is_escaped_and_its_principals_only(server: HttpServer, site: str) -> None:
	base = f'http://127.0.0.1:{server.port}/dashboard'
	async with connect(server, TOKENS['alpha']) as alpha:
		await alpha.ok('browser_create_session', session_id='replayed', record='trace')
		await alpha.ok('browser_navigate', url=f'{site}/two?q=<script>alert(1)</script>', session_id='replayed')
		rec = (await alpha.ok('browser_get_recording', session_id='replayed')).structured
	assert rec['calls'][0]['screenshot'], rec  # the first call and its small JPEG fit in the cap
	mine, theirs = ({'Authorization': f'Bearer {TOKENS[n]}'} for n in ('alpha', 'beta'))
	async with httpx.AsyncClient(timeout=30) as http:
		page = await http.get(f'{base}/recordings/replayed', headers=mine)
		assert page.status_code == 200 and 'text/html' in page.headers['content-type']
		assert '<script>' not in page.text and '&lt;script&gt;' in page.text
		assert 'browser_navigate' in page.text and '/api/recordings/replayed/shot-1.jpg' in page.text
		shot = await http.get(f'{base}/api/recordings/replayed/shot-1.jpg', headers=mine)
		assert shot.status_code == 200 and shot.content[:3] == b'\xff\xd8\xff'  # a JPEG
		for url in (f'{base}/recordings/replayed', f'{base}/api/recordings/replayed/shot-1.jpg'):
			other = await http.get(url, headers=theirs)
			unknown = await http.get(url.replace('replayed', 'never-made'), headers=mine)
			assert other.status_code == unknown.status_code == 404
			assert other.json() == unknown.json()
		assert (await http.get(f'{base}/recordings/replayed')).status_code == 401


async def test_a_video_over_its_cap_stops_and_says_so_while_the_session_works(server: HttpServer, site: str) -> None:
	"""Half the 4 KB cap is less than one frame: ffmpeg stops at its -fs limit, the video says why,
	and the session's calls go on (as with a full disk)."""
	async with connect(server, TOKENS['alpha']) as alpha:
		sid = {'session_id': 'tiny-video'}
		await alpha.ok('browser_create_session', record=['video', 'har'], **sid)
		for path in ('/', '/long', '/two', '/long'):
			await alpha.ok('browser_navigate', url=f'{site}{path}', **sid)
			await alpha.ok('browser_scroll', **sid)
		await alpha.ok('browser_close_session', **sid)
		rec = (await alpha.ok('browser_get_recording', **sid)).structured
		assert rec['video_note'], rec
		assert rec['truncated'] and 'size cap' in rec['truncated']  # the HAR did not fit either
		assert 'size cap' in rec['video_note']
		if rec['video']:  # ffmpeg checks -fs between packets: the one keyframe that passed it stays
			assert Path(rec['video']).stat().st_size < 64 * 1024
