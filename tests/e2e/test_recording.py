"""The flight recorder end to end (docs/recording.md): a real server over stdio, real Chromium,
the loopback test site. One server for the module; each test its own session ids."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from PIL import Image

from harness.servers import Background, Mcp, running_server

SECRET = 'sk-live_abcdef123456789'  # browser_type keeps text shaped like a token out of replies


@pytest.fixture(scope='module')
async def mcp(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Mcp]:
	home = tmp_path_factory.mktemp('recording-home')
	async with Background(running_server(home, '--tools', 'core,debug')) as server:  # get_recording is a debug tool
		yield server


def recordings_dir(mcp: Mcp) -> list[Path]:
	return [p for p in (mcp.home / 'state').glob('recordings/p-*/*') if p.is_dir()]


async def test_trace_lists_every_call_with_redaction_and_screenshots(mcp: Mcp, site: str) -> None:
	created = await mcp.ok('browser_create_session', session_id='rec-1', record=['trace'])
	assert created.structured['options'] == {'record': ['trace']}
	sid = {'session_id': 'rec-1'}
	host = site.split('://', 1)[1]
	await mcp.ok('browser_navigate', url=f'http://user:hunter2@{host}/', **sid)
	state = await mcp.page_state('rec-1')
	field = next(e['index'] for e in state['interactive_elements'] if e['tag'] == 'input')
	await mcp.ok('browser_type', index=field, text=SECRET, **sid)
	await mcp.ok('browser_navigate', url=f'{site}/two', **sid)
	await mcp.ok('browser_go_back', **sid)
	bad = await mcp.call('browser_click', index=9999, **sid)
	assert bad.is_error

	rec = (await mcp.ok('browser_get_recording', **sid)).structured
	assert rec['live'] is True and rec['truncated'] is None
	tools = [c['tool'] for c in rec['calls']]
	assert tools == [
		'browser_navigate',
		'browser_get_state',
		'browser_type',
		'browser_navigate',
		'browser_go_back',
		'browser_click',
	]
	assert [c['seq'] for c in rec['calls']] == [1, 2, 3, 4, 5, 6]
	first, _, typed, second, back, click = rec['calls']
	# secrets redacted: a URL's password, a typed token
	assert 'hunter2' not in str(rec) and SECRET not in str(rec)
	assert first['args']['url'] == f'http://***@{host}/'
	assert typed['args']['text'] == '***'
	# before: browser-use's record of the tab (the URL as navigated, its password redacted); after: the page's own
	assert second['url_before'].replace('***@', '').startswith(site) and second['url_after'] == f'{site}/two'
	assert second['title_after'] == 'Page Two'
	assert back['url_after'].rstrip('/') == site.rstrip('/')
	assert click['ok'] is False and click['error']
	assert all(c['duration_ms'] >= 0 for c in rec['calls'])
	# screenshots after page-changing calls only, real JPEGs, scaled to 640 px wide at most
	for call in rec['calls']:
		if call['tool'] == 'browser_get_state':
			assert call['screenshot'] is None
			continue
		if call['tool'] == 'browser_click':
			continue  # failed before acting; a screenshot is still taken of the page as it is
		path = Path(call['screenshot'])
		assert path.is_file(), call
		with Image.open(path) as img:
			assert img.format == 'JPEG'
			assert img.width <= 640
	# the text result is there, cut at the limit
	assert 'Two' in second['result'] or second['result']


def _centre(path: str) -> tuple[int, int, int]:
	with Image.open(path) as img:
		rgb = img.convert('RGB')
		return rgb.getpixel((rgb.width // 2, rgb.height // 2))


async def test_each_screenshot_shows_the_page_its_call_left(mcp: Mcp, site: str) -> None:
	"""A page-changing call's frame is asked for once the session is quiet, after a read that follows
	at once, or when the session is read: each way it shows the page as that call left it."""
	sid = {'session_id': 'rec-colours'}
	await mcp.ok('browser_create_session', record=['trace'], **sid)
	await mcp.ok('browser_navigate', url=f'{site}/two', **sid)
	paint = "document.documentElement.style.background = document.body.style.background = '{}'; 1"
	await mcp.ok('browser_evaluate', expression=paint.format('rgb(255, 0, 0)'), **sid)
	await mcp.ok('browser_get_state', **sid)  # a read right after: the red frame is asked for after it
	await asyncio.sleep(1.0)  # quiet: asked for and taken by now, with no call to prompt it
	(folder,) = [p for p in recordings_dir(mcp) if 'rec-colours' in (p / 'meta.json').read_text()]
	assert (folder / 'shot-00002.jpg').is_file()
	await mcp.ok('browser_evaluate', expression=paint.format('rgb(0, 0, 255)'), **sid)
	rec = (await mcp.ok('browser_get_recording', **sid)).structured  # asks for the blue one at once
	shots = {c['seq']: c['screenshot'] for c in rec['calls']}
	red, blue = _centre(shots[2]), _centre(shots[4])
	assert red[0] > 200 and red[1] < 60 and red[2] < 60, red
	assert blue[2] > 200 and blue[0] < 60 and blue[1] < 60, blue
	assert shots[3] is None  # the read has none


async def test_recording_survives_close(mcp: Mcp, site: str) -> None:
	await mcp.ok('browser_create_session', session_id='rec-2', record='trace')
	await mcp.ok('browser_navigate', url=f'{site}/two', session_id='rec-2')
	await mcp.ok('browser_close_session', session_id='rec-2')
	rec = (await mcp.ok('browser_get_recording', session_id='rec-2')).structured
	assert rec['live'] is False and rec['closed'] is not None
	assert [c['tool'] for c in rec['calls']] == ['browser_navigate']
	assert Path(rec['calls'][0]['screenshot']).is_file()


async def test_unrecorded_session_writes_nothing(mcp: Mcp, site: str) -> None:
	before = set(recordings_dir(mcp))
	await mcp.ok('browser_create_session', session_id='plain')
	await mcp.ok('browser_navigate', url=site, session_id='plain')
	assert set(recordings_dir(mcp)) == before
	missing = await mcp.call('browser_get_recording', session_id='plain')
	assert missing.is_error and 'not being recorded' in missing.text
	unknown = await mcp.call('browser_get_recording', session_id='never-made')
	assert unknown.is_error and 'not found' in unknown.text


@pytest.mark.parametrize(
	('kind', 'words'),
	[('nope', 'unknown kind'), (['trace', 'gif'], 'unknown kind'), (3, 'record')],
)
async def test_unknown_record_kind_is_refused(mcp: Mcp, kind: object, words: str) -> None:
	result = await mcp.call('browser_create_session', session_id='bad-kind', record=kind)
	assert result.is_error and words in result.text and ('trace' in result.text or kind == 3)
	assert 'bad-kind' not in {s['session_id'] for s in (await mcp.ok('browser_list_sessions')).structured['sessions']}
