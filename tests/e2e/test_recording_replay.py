"""The dashboard's side of recordings over HTTP: the link from each session card (live, and closed
but still kept), the replay page with console and network rows and the video, the zip of
everything, all of it the principal's own (another token gets the 404 of an unknown id), every
page-controlled string escaped, and the recordings' disk use in /metrics. One token-protected
server for the module, real Chromium, the loopback test site."""

from __future__ import annotations

import io
import json
import uuid
import zipfile
from collections.abc import Iterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from harness.httpserver import HttpServer, connect, http_server
from harness.servers import user_chromium
from tests.e2e.test_dashboard import SHOTS, Person

TOKENS = {name: f'{name}-token-{uuid.uuid4().hex}' for name in ('alpha', 'beta')}
EVIL = '<img src=x onerror=alert(1)>'  # a page-controlled string: logged to the console, in a URL


@pytest.fixture(scope='module')
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
	home = tmp_path_factory.mktemp('recording-replay-home')
	tokens = [arg for t in TOKENS.values() for arg in ('--auth-token', t)]
	with http_server(home, '--tools', 'all', *tokens) as srv:
		yield srv


def gauge(text: str, name: str) -> float:
	for family in text_string_to_metric_families(text):
		for sample in family.samples:
			if sample.name == name:
				return sample.value
	raise AssertionError(f'{name} not in /metrics')


async def test_cards_link_replay_rows_video_and_zip(server: HttpServer, site: str) -> None:
	base = f'http://127.0.0.1:{server.port}/dashboard'
	mine, theirs = ({'Authorization': f'Bearer {TOKENS[n]}'} for n in ('alpha', 'beta'))
	async with httpx.AsyncClient(timeout=60) as http, connect(server, TOKENS['alpha']) as alpha:
		metrics = await http.get(f'http://127.0.0.1:{server.port}/metrics', headers=mine)
		disk_before = gauge(metrics.text, 'browser_use_mcp_recordings_disk_bytes')
		await alpha.ok('browser_create_session', session_id='shown', record=['trace', 'har', 'video'])
		await alpha.ok('browser_create_session', session_id='plain')
		await alpha.ok('browser_navigate', url=f'{site}/console?tag={EVIL}', session_id='shown')
		await alpha.ok('browser_navigate', url=f'{site}/two', session_id='shown')

		# a live card links its replay; an unrecorded one does not
		cards = (await http.get(f'{base}/api/sessions', headers=mine)).json()
		links = {s['session_id']: s['replay'] for s in cards['sessions']}
		assert links == {'shown': '/dashboard/recordings/shown', 'plain': None}
		live = await http.get(f'{base}/recordings/shown', headers=mine)
		assert live.status_code == 200 and 'once the session is closed' in live.text

		await alpha.ok('browser_close_session', session_id='shown')
		cards = (await http.get(f'{base}/api/sessions', headers=mine)).json()
		assert [s['session_id'] for s in cards['sessions']] == ['plain']
		(closed,) = cards['recorded']
		assert closed['session_id'] == 'shown' and closed['replay'] == '/dashboard/recordings/shown'
		assert set(closed['kinds']) == {'trace', 'har', 'video'} and closed['closed']
		assert (await http.get(f'{base}/api/sessions', headers=theirs)).json()['recorded'] == []

		page = await http.get(f'{base}/recordings/shown', headers=mine)
		assert page.status_code == 200
		text = page.text
		assert EVIL not in text and '&lt;img src=x onerror=alert(1)&gt;' in text  # console text, escaped
		assert 'bad error' in text and 'missing-404' in text and '>404<' in text  # console and network rows
		assert '<video' in text and '/api/recordings/shown/video.webm' in text
		assert '/api/recordings/shown/recording.zip' in text

		video = await http.get(f'{base}/api/recordings/shown/video.webm', headers=mine)
		assert video.status_code == 200 and video.headers['content-type'] == 'video/webm'
		assert video.content[:4] == b'\x1a\x45\xdf\xa3'  # EBML: a WebM file
		har = await http.get(f'{base}/api/recordings/shown/recording.har', headers=mine)
		assert har.status_code == 200 and json.loads(har.content)['log']['version'] == '1.2'
		packed = await http.get(f'{base}/api/recordings/shown/recording.zip', headers=mine)
		assert packed.status_code == 200 and packed.headers['content-type'] == 'application/zip'
		names = set(zipfile.ZipFile(io.BytesIO(packed.content)).namelist())
		assert {'trace.jsonl', 'recording.har', 'video.webm', 'console.json', 'network.json'} <= names
		assert any(n.startswith('shot-') and n.endswith('.jpg') for n in names)

		for path in (
			'recordings/shown',
			*(f'api/recordings/shown/{f}' for f in ('video.webm', 'recording.har', 'recording.zip')),
		):
			other = await http.get(f'{base}/{path}', headers=theirs)
			unknown = await http.get(f'{base}/{path.replace("shown", "never-made")}', headers=mine)
			assert other.status_code == unknown.status_code == 404, path
			assert other.json() == unknown.json()
			assert (await http.get(f'{base}/{path}')).status_code == 401

		metrics = await http.get(f'http://127.0.0.1:{server.port}/metrics', headers=mine)
		assert gauge(metrics.text, 'browser_use_mcp_recordings') >= 1
		assert gauge(metrics.text, 'browser_use_mcp_recordings_disk_bytes') > disk_before + len(video.content) / 2


async def test_replay_renders_in_a_real_browser(server: HttpServer, site: str, tmp_path_factory: pytest.TempPathFactory) -> None:
	"""A person signs in, follows the card's link to the replay of a closed session: the video plays
	(its metadata loads), the tables are there, the console text stayed text."""
	async with connect(server, TOKENS['alpha']) as alpha:
		await alpha.ok('browser_create_session', session_id='watched', record=['trace', 'har', 'video'])
		await alpha.ok('browser_navigate', url=f'{site}/console?tag={EVIL}', session_id='watched')
		await alpha.ok('browser_navigate', url=f'{site}/two', session_id='watched')
		await alpha.ok('browser_close_session', session_id='watched')
		await alpha.ok('browser_create_session', session_id='live-recorded', record='trace')
		await alpha.ok('browser_create_session', session_id='live-plain')
	with user_chromium(tmp_path_factory.mktemp('replay-person') / 'profile', '--window-size=1280,1000') as (url, _proc):
		async with Person.open(url) as person:
			await person.sign_in(f'http://127.0.0.1:{server.port}/dashboard', TOKENS['alpha'])
			link = "[...document.querySelectorAll('#recorded-list a')].find(a => a.textContent === 'watched')"
			await person.wait(f'{link} !== undefined')
			# an open session's card links its replay when it is recorded
			card = "document.querySelector('#cards > li[data-sid={}] a.replay')"
			await person.wait(f'{card.format("live-recorded")} && !{card.format("live-recorded")}.hidden')
			assert await person.js(f'{card.format("live-recorded")}.pathname') == '/dashboard/recordings/live-recorded'
			assert await person.js(f'{card.format("live-plain")}.hidden')
			await person.go(await person.js(f'{link}.href'))
			assert await person.js('location.pathname') == '/dashboard/recordings/watched'
			await person.wait("document.querySelector('video').readyState >= 1")  # the WebM's metadata loaded
			assert await person.js("document.querySelector('video').videoWidth") > 0
			assert await person.js("document.querySelectorAll('table.rows tbody tr').length") >= 3
			assert await person.js("document.querySelector('img[src=x]') === null"), 'console text became markup'
			assert await person.js("[...document.querySelectorAll('td')].some(td => td.textContent.includes('onerror'))")
			# the screenshots load lazily and on their own time: bring each into view, then wait for all
			shots = "[...document.querySelectorAll('.timeline img')]"
			assert await person.js(f'{shots}.length') >= 2
			await person.wait(f'({shots}.forEach(i => i.scrollIntoView()), {shots}.every(i => i.complete && i.naturalWidth > 0))')
			await person.js('window.scrollTo(0, 0)')
			await person.screenshot(SHOTS / 'replay.png' if SHOTS else tmp_path_factory.mktemp('replay-shot') / 'replay.png')
