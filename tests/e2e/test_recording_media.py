"""The recorder's HAR and video kinds end to end (docs/recording.md): a real server over stdio, real
Chromium, the loopback test site, and the real decoders (json for HAR 1.2, the imageio-ffmpeg
wheel's ffmpeg for the video). In both isolation modes: in a shared Chromium a session's HAR must
hold its own traffic only."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import imageio_ffmpeg
import pytest

from browser_use_mcp.har import decode_body
from harness.servers import Background, Mcp, running_server
from tests.fixtures import isolation_modes

isolation = isolation_modes()


@pytest.fixture(scope='module')
async def mcp(tmp_path_factory: pytest.TempPathFactory, isolation: str) -> AsyncIterator[Mcp]:
	home = tmp_path_factory.mktemp('recording-media-home')
	async with Background(running_server(home, '--tools', 'core,debug')) as server:
		yield server


def check_har(har: dict[str, Any]) -> list[dict[str, Any]]:
	"""The fields HAR 1.2 requires (http://www.softwareishard.com/blog/har-12-spec/), with their types."""
	log = har['log']
	assert log['version'] == '1.2'
	assert isinstance(log['creator']['name'], str) and isinstance(log['creator']['version'], str)
	assert isinstance(log['entries'], list) and isinstance(log['pages'], list)
	for page in log['pages']:
		assert isinstance(page['startedDateTime'], str) and page['startedDateTime'].endswith('Z')
		assert isinstance(page['id'], str) and isinstance(page['title'], str)
		assert all(
			isinstance(page['pageTimings'][k], int | float) and page['pageTimings'][k] >= -1 for k in ('onContentLoad', 'onLoad')
		)
	ids = [page['id'] for page in log['pages']]
	assert len(set(ids)) == len(ids)
	for entry in log['entries']:
		assert 'pageref' not in entry or entry['pageref'] in ids, entry.get('pageref')
		assert isinstance(entry['startedDateTime'], str) and entry['startedDateTime'].endswith('Z')
		assert isinstance(entry['time'], int | float) and entry['time'] >= 0
		req, resp, timings = entry['request'], entry['response'], entry['timings']
		for key, kind in (
			('method', str),
			('url', str),
			('httpVersion', str),
			('cookies', list),
			('headers', list),
			('queryString', list),
			('headersSize', int),
			('bodySize', int),
		):
			assert isinstance(req[key], kind), (key, req)
		for key, kind in (
			('status', int),
			('statusText', str),
			('httpVersion', str),
			('cookies', list),
			('headers', list),
			('content', dict),
			('redirectURL', str),
			('headersSize', int),
			('bodySize', int),
		):
			assert isinstance(resp[key], kind), (key, resp)
		assert isinstance(resp['content']['size'], int) and isinstance(resp['content']['mimeType'], str)
		assert all(set(h) == {'name', 'value'} for h in req['headers'] + resp['headers'])
		assert isinstance(entry['cache'], dict)
		for key in ('send', 'wait', 'receive'):
			assert isinstance(timings[key], int | float) and timings[key] >= 0, (key, timings)
		for key in ('blocked', 'dns', 'connect', 'ssl'):
			assert timings.get(key, -1) >= -1
	return log['entries']


async def har_of(mcp: Mcp, sid: str, seen: Any, timeout: float = 10) -> tuple[dict[str, Any], dict[str, Any]]:
	"""browser_get_recording's answer and the HAR it points to, once ``seen(log)`` holds."""
	end = asyncio.get_running_loop().time() + timeout
	while True:
		rec = (await mcp.ok('browser_get_recording', session_id=sid)).structured
		har = json.loads(Path(rec['har']).read_text(encoding='utf-8'))
		if seen(har['log']) or asyncio.get_running_loop().time() > end:
			return rec, har
		await asyncio.sleep(0.2)


async def test_har_holds_the_sessions_loopback_traffic_with_a_404(mcp: Mcp, site: str) -> None:
	await mcp.ok('browser_create_session', session_id='har-1', record=['har'])
	await mcp.ok('browser_create_session', session_id='har-other')  # beside it, unrecorded, same Chromium when shared
	await mcp.ok('browser_navigate', session_id='har-other', url=f'{site}/two?who=other')
	await mcp.ok('browser_navigate', session_id='har-1', url=f'{site}/console?tag=har')
	await mcp.ok('browser_navigate', session_id='har-other', url=f'{site}/long?who=other')

	def complete(log: dict[str, Any]) -> bool:
		entries = log['entries']
		statuses = {e['response']['status'] for e in entries if 'missing-404' in e['request']['url']}
		pixel = [e for e in entries if 'pixel.png' in e['request']['url'] and e['response']['content'].get('text')]
		loaded = any(p['pageTimings']['onLoad'] >= 0 for p in log['pages'] if '/console' in p['title'])
		return 404 in statuses and bool(pixel) and loaded

	rec, har = await har_of(mcp, 'har-1', complete)
	assert rec['kinds'] == ['har'] and rec['video'] is None
	entries = check_har(har)
	urls = [e['request']['url'] for e in entries]
	assert any(u.startswith(f'{site}/console?tag=har') for u in urls), urls
	assert not any('who=other' in u for u in urls), 'another session traffic leaked into this HAR'
	assert all(u.startswith(('http://127.0.0.1', 'data:', 'blob:')) for u in urls), urls
	doc = next(e for e in entries if e['request']['url'].startswith(f'{site}/console'))
	assert doc['response']['status'] == 200 and doc['response']['content']['mimeType'] == 'text/html'
	# the page it loaded, timed by the tab's events, holds the requests made after it began
	page = next(p for p in har['log']['pages'] if p['id'] == doc['pageref'])
	assert page['title'].startswith(f'{site}/console?tag=har')
	assert 0 <= page['pageTimings']['onContentLoad'] <= page['pageTimings']['onLoad'], page
	assert 'hello' in decode_body(doc['response']['content']).decode()
	missing = next(e for e in entries if 'missing-404' in e['request']['url'])
	assert missing['response']['status'] == 404 and missing['pageref'] == doc['pageref']
	pixel = next(e for e in entries if 'pixel.png' in e['request']['url'] and e['response']['content'].get('text'))
	assert decode_body(pixel['response']['content']).startswith(b'\x89PNG')
	assert pixel['response']['content']['encoding'] == 'base64'
	# the file survives the session, complete
	await mcp.ok('browser_close_session', session_id='har-1')
	await mcp.ok('browser_close_session', session_id='har-other')
	closed = (await mcp.ok('browser_get_recording', session_id='har-1')).structured
	assert closed['live'] is False
	assert len(check_har(json.loads(Path(closed['har']).read_text(encoding='utf-8')))) >= len(entries)


async def test_har_lists_cookies_by_name_and_the_headers_as_sent_without_their_values(mcp: Mcp, site: str) -> None:
	await mcp.ok('browser_create_session', session_id='har-cookies', record=['har'])
	await mcp.ok('browser_navigate', session_id='har-cookies', url=f'{site}/signin?user=Zorro7&note=n')
	await mcp.ok('browser_navigate', session_id='har-cookies', url=f'{site}/me')

	def sent(log: dict[str, Any]) -> bool:
		return any(e['request']['url'] == f'{site}/me' and e['request']['cookies'] for e in log['entries'])

	_, har = await har_of(mcp, 'har-cookies', sent)
	entries = check_har(har)
	signin = next(e for e in entries if e['request']['url'].startswith(f'{site}/signin'))
	me = next(e for e in entries if e['request']['url'] == f'{site}/me')
	assert signin['response']['cookies'] == [{'name': 'auth', 'value': '***', 'path': '/', 'httpOnly': True}]
	assert [(c['name'], c['value']) for c in me['request']['cookies']] == [('auth', '***')]
	assert me['request']['cookies'][0]['httpOnly'] is True
	# the headers as Chromium sent them, the network stack's own among them (the cookie redacted)
	names = {h['name'].lower(): h['value'] for h in me['request']['headers']}
	assert names['cookie'] == '***' and 'host' in names, names
	told = [me['request']['headers'], me['request']['cookies'], signin['response']['headers'], signin['response']['cookies']]
	assert 'Zorro7' not in json.dumps(told)
	await mcp.ok('browser_close_session', session_id='har-cookies')


async def test_video_decodes_with_frames(mcp: Mcp, site: str) -> None:
	await mcp.ok('browser_create_session', session_id='video-1', record=['video', 'trace'])
	sid = {'session_id': 'video-1'}
	await mcp.ok('browser_navigate', url=f'{site}/', **sid)
	await mcp.ok('browser_navigate', url=f'{site}/two', **sid)
	await mcp.ok('browser_scroll', **sid)
	await mcp.ok('browser_navigate', url=f'{site}/long', **sid)
	await mcp.ok('browser_close_session', **sid)
	rec = (await mcp.ok('browser_get_recording', **sid)).structured
	assert set(rec['kinds']) == {'video', 'trace'} and rec['video_note'] is None
	video = Path(rec['video'])
	assert video.suffix == '.webm' and video.stat().st_size > 0
	frames, seconds = await asyncio.to_thread(imageio_ffmpeg.count_frames_and_secs, str(video))
	assert frames > 0 and seconds >= 0
	reader = imageio_ffmpeg.read_frames(str(video))
	meta = next(reader)
	assert meta['size'][0] <= 640
	reader.close()
	# the trace's screenshots came from the same screencast
	shots = [c['screenshot'] for c in rec['calls'] if c['tool'] == 'browser_navigate']
	assert shots and all(s and Path(s).is_file() for s in shots)
	assert all(Path(s).read_bytes()[:2] == b'\xff\xd8' for s in shots)  # JPEG


async def test_the_cast_follows_tabs_and_survives_a_closed_one(mcp: Mcp, site: str) -> None:
	"""A popup, a switch to it and back, the popup closed: every page-changing call still gets its
	frame (of the tab focused then), the session goes on, the video decodes."""
	sid = {'session_id': 'video-tabs'}
	await mcp.ok('browser_create_session', record=['trace', 'video', 'har'], **sid)
	await mcp.ok('browser_navigate', url=f'{site}/popup', **sid)
	state = await mcp.page_state('video-tabs')
	(link,) = [e for e in state['interactive_elements'] if e.get('href', '').endswith('/two')]
	await mcp.ok('browser_click', index=link['index'], **sid)
	tabs = (await mcp.ok('browser_list_tabs', **sid)).structured['tabs']
	assert len(tabs) == 2
	ids = [t['tab_id'] for t in tabs]
	await mcp.ok('browser_switch_tab', tab_id=ids[1], **sid)
	await mcp.ok('browser_navigate', url=f'{site}/long', **sid)
	await mcp.ok('browser_close_tab', tab_id=ids[1], **sid)
	await mcp.ok('browser_navigate', url=f'{site}/two', **sid)
	await mcp.ok('browser_close_session', **sid)
	rec = (await mcp.ok('browser_get_recording', **sid)).structured
	assert rec['video_note'] is None and rec['truncated'] is None
	shots = {
		c['seq']: c['screenshot'] for c in rec['calls'] if c['tool'] != 'browser_get_state' and c['tool'] != 'browser_list_tabs'
	}
	assert all(shots.values()), rec['calls']
	last = rec['calls'][-1]
	assert last['tool'] == 'browser_navigate' and last['url_after'] == f'{site}/two'
	frames, _ = await asyncio.to_thread(imageio_ffmpeg.count_frames_and_secs, rec['video'])
	assert frames > 0
	urls = [e['request']['url'] for e in json.loads(Path(rec['har']).read_text(encoding='utf-8'))['log']['entries']]
	assert f'{site}/long' in urls and f'{site}/popup' in urls  # both tabs' traffic
