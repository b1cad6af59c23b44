"""The flight recorder without a browser: kinds, settings, redaction, caps, a disk that refuses,
expiry and eviction (recorder.py). The end-to-end tests are tests/e2e/test_recording*.py."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from browser_use_mcp.config import load_config
from browser_use_mcp.recorder import Recording, RecordingExpired, Recordings, parse_kinds, read_trace, redact


def test_kinds() -> None:
	assert parse_kinds('trace') == ('trace',) == parse_kinds(['trace', 'TRACE'])
	assert parse_kinds(['har', 'Video', 'trace', 'har']) == ('har', 'video', 'trace')
	for bad, words in (('pcap', 'unknown kind'), (['trace', 'gif'], 'unknown kind'), (3, 'list'), ([1], 'list')):
		with pytest.raises(ValueError, match=words) as info:
			parse_kinds(bad)
		assert 'valid kinds: trace, har, video' in str(info.value)


def test_server_wide_setting(tmp_path: Path) -> None:
	env = {'BROWSER_USE_MCP_STATE_DIR': str(tmp_path)}
	assert load_config(env, browser_use=False).record == ()
	assert load_config({**env, 'BROWSER_USE_MCP_RECORD': 'trace'}, browser_use=False).record == ('trace',)
	config = load_config(env, browser_use=False, record=('trace',), recordings_ttl=60.0)
	assert config.record == ('trace',) and config.recordings_ttl == 60.0
	assert load_config({**env, 'BROWSER_USE_MCP_RECORD': 'har,video'}, browser_use=False).record == ('har', 'video')
	with pytest.raises(SystemExit, match='--record.*unknown kind'):
		load_config({**env, 'BROWSER_USE_MCP_RECORD': 'movie'}, browser_use=False)


def test_redaction() -> None:
	args = {
		'url': 'https://me:hunter2@example.com/x',
		'password': 'hunter2',
		'extra_http_headers': {'Authorization': 'Bearer abc'},
		'nested': {'api_key': 'k', 'fine': 'ok'},
		'text': 'x' * 5000,
	}
	out = redact(args)
	assert 'hunter2' not in json.dumps(out) and 'Bearer' not in json.dumps(out)
	assert out['url'] == 'https://***@example.com/x'
	assert out['extra_http_headers'] == {'Authorization': '***'}
	assert out['nested'] == {'api_key': '***', 'fine': 'ok'}
	assert len(out['text']) == 2000


async def record_calls(rec: Recording, count: int) -> None:
	state = SimpleNamespace(browser_session=None)  # no browser: page reads and screenshots give None
	for i in range(count):
		seen = await rec.before(state, read_only=True)
		await rec.after(state, 'browser_get_state', True, {'n': i}, 0.0, 0.01, 'x' * 100, None, seen)


async def test_size_cap_truncates(tmp_path: Path) -> None:
	recordings = Recordings(tmp_path / 'rec', size_cap=1024)
	rec = recordings.start('p', 's')
	assert rec is not None
	await record_calls(rec, 20)
	assert rec.truncated and 'size cap' in rec.truncated
	lines = read_trace(rec)
	assert 'truncated' in lines[-1] or any('truncated' in line for line in lines)
	assert 0 < len([line for line in lines if 'seq' in line]) < 20
	assert rec.size <= 1024 + 200
	assert json.loads((rec.path / 'meta.json').read_text())['truncated'] == rec.truncated, 'said for the next server'


@pytest.mark.skipif(os.geteuid() == 0, reason='root writes anywhere')
async def test_unwritable_directory_truncates_without_raising(tmp_path: Path) -> None:
	rec = Recordings(tmp_path / 'rec').start('p', 's')
	assert rec is not None
	rec.path.chmod(0o500)
	rec.trace.chmod(0o400)
	try:
		await record_calls(rec, 2)
		assert rec.truncated and 'could not write' in rec.truncated
	finally:
		rec.path.chmod(0o700)


async def test_vanished_directory_truncates_without_raising(tmp_path: Path) -> None:
	rec = Recordings(tmp_path / 'rec').start('p', 's')
	assert rec is not None
	import shutil

	shutil.rmtree(rec.path)  # as a full disk would refuse: every write fails
	await record_calls(rec, 2)
	assert rec.truncated and 'could not write' in rec.truncated


async def test_ttl_principal_and_eviction(tmp_path: Path) -> None:
	recordings = Recordings(tmp_path / 'rec', ttl=100.0, total_cap=10_000)
	mine = recordings.start('alice', 'a')
	assert mine is not None and 'a' not in mine.path.name.split('-')  # the id is never a path component
	assert recordings.get('bob', 'a') is None  # another principal: as unknown
	await mine.close()
	assert recordings.get('alice', 'a') is mine
	recordings.sweep(now=mine.closed_at + 101)
	with pytest.raises(RecordingExpired):
		recordings.get('alice', 'a')
	recordings.purge()
	assert not mine.path.exists()

	old, new = recordings.start('alice', 'old'), recordings.start('alice', 'new')
	assert old is not None and new is not None
	await old.close()
	await new.close()
	old.size = new.size = 6_000  # together over the total cap: the older closed one goes
	recordings.sweep()
	assert recordings.get('alice', 'new') is new
	with pytest.raises(RecordingExpired):
		recordings.get('alice', 'old')


def test_flags(tmp_path: Path) -> None:
	from browser_use_mcp import cli

	overrides = cli.cli_overrides(cli.build_parser().parse_args(['--record', 'trace', '--recordings-ttl', '60']))
	assert overrides == {'record': ('trace',), 'recordings_ttl': 60.0}
	config = load_config({'BROWSER_USE_MCP_STATE_DIR': str(tmp_path)}, browser_use=False, **overrides)
	assert (config.record, config.recordings_ttl) == (('trace',), 60.0)


def har_events(log: Any, sid: str = 'S1') -> None:
	"""A page, its redirect, a 404 and a failed request, as Chromium's Network events tell them."""
	t0, wall = 1000.0, 1_790_000_000.0
	timing = {'requestTime': t0 + 0.001, 'dnsStart': -1, 'dnsEnd': -1, 'connectStart': 0.5, 'connectEnd': 1.5}
	timing |= {'sslStart': -1, 'sslEnd': -1, 'sendStart': 2.0, 'sendEnd': 2.5, 'receiveHeadersEnd': 10.0}
	req = {'url': 'http://127.0.0.1:1/a?token=s3cret&x=1', 'method': 'GET', 'headers': {'Cookie': 'sid=abc', 'Accept': '*/*'}}
	log.on_request({'requestId': '1', 'request': req, 'timestamp': t0, 'wallTime': wall, 'type': 'Document'}, sid)
	redirect = {'status': 302, 'statusText': 'Found', 'headers': {'Location': '/b'}, 'mimeType': '', 'protocol': 'http/1.1'}
	req2 = {'url': 'http://127.0.0.1:1/b', 'method': 'GET', 'headers': {}}
	log.on_request(
		{'requestId': '1', 'request': req2, 'timestamp': t0 + 0.02, 'wallTime': wall + 0.02, 'redirectResponse': redirect}, sid
	)
	resp = {'status': 200, 'statusText': 'OK', 'headers': {'Set-Cookie': 'sid=def', 'Content-Type': 'text/html'}}
	resp |= {'mimeType': 'text/html', 'protocol': 'http/1.1', 'timing': timing, 'encodedDataLength': 100}
	log.on_response({'requestId': '1', 'response': resp, 'type': 'Document'}, sid)
	log.on_finished({'requestId': '1', 'timestamp': t0 + 0.05, 'encodedDataLength': 600}, sid)
	log.on_request({'requestId': '2', 'request': {'url': 'http://127.0.0.1:1/missing', 'method': 'POST', 'headers': {}, 'postData': 'a=1'}, 'timestamp': t0 + 0.06, 'wallTime': wall + 0.06}, sid)  # fmt: skip
	log.on_response({'requestId': '2', 'response': {'status': 404, 'statusText': 'Not Found', 'headers': {}, 'mimeType': 'text/html'}}, sid)  # fmt: skip
	log.on_finished({'requestId': '2', 'timestamp': t0 + 0.07, 'encodedDataLength': 50}, sid)
	log.on_request({'requestId': '3', 'request': {'url': 'http://127.0.0.1:1/gone', 'method': 'GET', 'headers': {}}, 'timestamp': t0 + 0.08}, sid)  # fmt: skip
	log.on_failed({'requestId': '3', 'timestamp': t0 + 0.09, 'errorText': 'net::ERR_CONNECTION_REFUSED'}, sid)


def test_har_log_is_har_1_2_with_secrets_redacted() -> None:
	from browser_use_mcp.har import HarLog
	from tests.e2e.test_recording_media import check_har

	log = HarLog()
	har_events(log)
	entries = check_har(log.build())
	assert [(e['request']['method'], e['response']['status']) for e in entries] == [
		('GET', 302),
		('GET', 200),
		('POST', 404),
		('GET', 0),
	]
	first, page, missing, failed = entries
	assert first['response']['redirectURL'] == '/b'
	assert 's3cret' not in json.dumps(entries) and 'sid=abc' not in json.dumps(entries) and 'sid=def' not in json.dumps(entries)
	assert {'name': 'x', 'value': '1'} in first['request']['queryString']
	assert page['response']['bodySize'] == 500 and page['timings']['connect'] == 1.0 and page['timings']['wait'] == 7.5
	assert missing['request']['postData'] == {'mimeType': 'application/octet-stream', 'text': 'a=1'}
	assert failed['response']['_error'] == 'net::ERR_CONNECTION_REFUSED'


def test_har_log_is_bounded() -> None:
	from browser_use_mcp.har import HarLog

	log = HarLog(entry_cap=3)
	for i in range(10):
		har_events(log, sid=f'S{i}')
	har = log.build()['log']
	assert len(har['entries']) == 3 and 'not kept' in har['comment']


async def test_har_on_a_vanished_directory_truncates_without_raising(tmp_path: Path) -> None:
	import shutil

	rec = Recordings(tmp_path / 'rec').start('p', 's', ('har',))
	assert rec is not None and rec.har is not None
	har_events(rec.har)
	shutil.rmtree(rec.path)  # as a full disk would refuse: every write fails
	await rec.snapshot()
	assert rec.truncated and 'could not write recording.har' in rec.truncated


async def test_video_without_ffmpeg_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
	from browser_use_mcp.screencast import Screencast

	monkeypatch.setenv('IMAGEIO_FFMPEG_EXE', str(tmp_path / 'no-ffmpeg-here'))
	cast = Screencast(tmp_path / 'video.webm', 10_000)
	await cast._start_video()
	assert cast.proc is None and cast.video_error and 'could not start ffmpeg' in cast.video_error
	await cast.stop()


def test_a_recordings_dir_that_cannot_be_made_says_why(tmp_path: Path) -> None:
	blocker = tmp_path / 'recordings'
	blocker.write_text('a file where the directory should be')
	recordings = Recordings(blocker)
	assert recordings.start('p', 's', ('trace', 'har')) is None
	assert str(blocker) in recordings.last_error and len(recordings) == 0


# -- recordings outlive the server (adopted by the next one on the same state dir) ----------------


async def test_a_restart_adopts_closed_and_cut_short_recordings_and_drops_expired_ones(tmp_path: Path) -> None:
	import stat
	import time

	first = Recordings.open(tmp_path / 'state', tmp_path / 'scratch-1', ttl=600.0)
	assert first.persistent and first.root == tmp_path / 'state' / 'recordings'
	closed, open_, old = first.start('alice', 'done'), first.start('alice', 'killed'), first.start('bob', 'old')
	assert closed is not None and open_ is not None and old is not None
	await record_calls(closed, 2)
	await record_calls(open_, 1)
	await closed.close()
	await old.close()
	meta = json.loads((old.path / 'meta.json').read_text())
	assert meta['principal'] != 'bob' and 'bob' not in json.dumps(meta), 'the principal only as its digest'
	(old.path / 'meta.json').write_text(json.dumps({**meta, 'closed_at': time.time() - 3600}))
	for path in (closed.path, closed.path.parent, first.root):
		assert stat.S_IMODE(path.stat().st_mode) == 0o700, path
	assert stat.S_IMODE((closed.path / 'meta.json').stat().st_mode) == 0o600
	# a second server on the same state dir meanwhile: its recordings are its own, in its scratch dir
	second = Recordings.open(tmp_path / 'state', tmp_path / 'scratch-2')
	assert not second.persistent and second.root == tmp_path / 'scratch-2' / 'recordings'
	assert await second.adopt() == 0
	first.release()  # the server stops (killed: "killed" was never closed)

	again = Recordings.open(tmp_path / 'state', tmp_path / 'scratch-3', ttl=600.0)
	try:
		assert await again.adopt() == 2
		done = again.get('alice', 'done')
		assert done is not None and done.closed_at == closed.closed_at and done.truncated is None
		assert [e['seq'] for e in read_trace(done) if 'seq' in e] == [1, 2]
		assert done.size == sum(f.stat().st_size for f in done.path.iterdir() if f.name != 'meta.json')
		cut = again.get('alice', 'killed')
		assert cut is not None and cut.closed_at is not None and cut.truncated == 'server stopped'
		assert json.loads((cut.path / 'meta.json').read_text())['truncated'] == 'server stopped'
		assert again.get('bob', 'done') is None and again.get('bob', 'killed') is None, 'matched by principal'
		with pytest.raises(RecordingExpired):
			again.get('bob', 'old')
		assert not old.path.exists() and not old.path.parent.exists()
		assert sorted(r.session_id for r in again.of('alice')) == ['done', 'killed']
		assert again.of('bob') == []
	finally:
		again.release()


async def test_adoption_keeps_the_total_cap_and_deletes_unreadable_directories(tmp_path: Path) -> None:
	first = Recordings.open(tmp_path / 'state', tmp_path / 'scratch')
	recs = [first.start('p', f's{i}') for i in range(3)]
	for rec in recs:
		assert rec is not None
		await record_calls(rec, 3)
		await rec.close()
	stray = first.root / 'p-0123' / 'junk'
	stray.mkdir(parents=True)
	first.release()
	sizes = [r.size for r in recs if r is not None]
	again = Recordings.open(tmp_path / 'state', tmp_path / 'scratch', total_cap=sizes[1] + sizes[2] + 10)
	try:
		assert await again.adopt() == 2
		with pytest.raises(RecordingExpired):
			again.get('p', 's0')  # the oldest went first
		assert again.get('p', 's2') is not None
		assert not stray.exists() and recs[0] is not None and not recs[0].path.exists()
	finally:
		again.release()


def test_har_pages_are_each_tabs_main_frame_documents() -> None:
	"""A page per navigation of a tab's main frame (its redirects and an in-process iframe's document
	are not pages), timed by its tab's Page events; requests carry the page their tab showed, those of
	an out-of-process iframe too; another tab has pages of its own."""
	from browser_use_mcp.har import HarLog
	from tests.e2e.test_recording_media import check_har

	log = HarLog()
	log.tab_of = {'S1': 'T1', 'S1b': 'T1', 'F1': 'IF1', 'S2': 'T2'}.get
	t0, wall = 2000.0, 1_790_000_000.0

	def request(rid: str, url: str, at: float, sid: str = 'S1', kind: str = 'Document', frame: str = 'T1', **extra: Any) -> None:
		params = {'requestId': rid, 'request': {'url': url, 'method': 'GET', 'headers': {}}, 'timestamp': t0 + at}
		log.on_request(params | {'wallTime': wall + at, 'type': kind, 'frameId': frame, **extra}, sid)

	log.on_loaded({'timestamp': t0 - 1}, 'S1')  # before any page: nothing to time
	request('n1', 'http://127.0.0.1:1/a?token=s3cret', 0.0)
	request('n1', 'http://127.0.0.1:1/b', 0.01, redirectResponse={'status': 302, 'headers': {'Location': '/b'}})
	request('js', 'http://127.0.0.1:1/app.js', 0.02, kind='Script')
	request('inner', 'http://127.0.0.1:1/frame', 0.03, frame='child')  # an in-process iframe's document
	log.in_tab('IF1', 'S1')
	request('oopif', 'http://127.0.0.1:2/ad', 0.04, sid='F1', frame='IF1')  # an out-of-process iframe's document
	log.on_content_loaded({'timestamp': t0 + 0.045}, 'F1')  # the out-of-process iframe's own: not its tab's
	log.on_content_loaded({'timestamp': t0 + 0.05}, 'S1b')  # another CDP session of the same tab
	log.on_loaded({'timestamp': t0 + 0.08}, 'S1')
	log.on_loaded({'timestamp': t0 + 0.09}, 'S1')  # a second load event of the page does not move it
	request('n2', 'http://127.0.0.1:1/next', 0.5)
	request('other', 'http://127.0.0.1:1/tab2', 0.6, sid='S2', frame='T2')
	request('late', 'http://127.0.0.1:1/late.js', 0.7, kind='Script')
	har = log.build()
	entries = check_har(har)
	pages = har['log']['pages']
	assert [(p['id'], p['title']) for p in pages] == [
		('page_1', 'http://127.0.0.1:1/a?token=***'),
		('page_2', 'http://127.0.0.1:1/next'),
		('page_3', 'http://127.0.0.1:1/tab2'),
	]
	assert pages[0]['pageTimings'] == {'onContentLoad': 50.0, 'onLoad': 80.0}
	assert pages[1]['pageTimings'] == {'onContentLoad': -1, 'onLoad': -1}
	assert pages[0]['startedDateTime'] == entries[0]['startedDateTime']
	assert [e.get('pageref') for e in entries] == ['page_1'] * 5 + ['page_2', 'page_3', 'page_2']


def test_har_pages_are_bounded_and_no_entry_names_a_dropped_page(monkeypatch: pytest.MonkeyPatch) -> None:
	from browser_use_mcp import har as har_module
	from browser_use_mcp.har import HarLog

	log = HarLog(page_cap=2)
	log.tab_of = lambda session_id: 'T1'
	for i in range(5):
		params = {'requestId': f'n{i}', 'request': {'url': f'http://127.0.0.1:1/{i}', 'method': 'GET', 'headers': {}}}
		log.on_request(params | {'timestamp': 10.0 + i, 'type': 'Document', 'frameId': 'T1'}, 'S1')
	har = log.build()['log']
	assert [p['id'] for p in har['pages']] == ['page_4', 'page_5']
	assert [e.get('pageref') for e in har['entries']] == [None, None, None, 'page_4', 'page_5']
	# the tabs whose page is remembered are bounded too: the oldest is forgotten
	monkeypatch.setattr(har_module, 'TABS_CAP', 3)
	log = HarLog()
	log.tab_of = lambda session_id: session_id
	for i in range(6):
		params = {'requestId': 'n', 'request': {'url': 'http://127.0.0.1:1/', 'method': 'GET', 'headers': {}}}
		log.on_request(params | {'timestamp': 1.0, 'type': 'Document', 'frameId': f'T{i}'}, f'T{i}')
		log.in_tab(f'F{i}', f'T{i}')
	assert list(log.current) == ['T3', 'T4', 'T5'] and list(log.frame_parents) == ['F3', 'F4', 'F5']


def test_har_pages_of_a_tab_whose_target_is_unknown_follow_its_first_documents_frame() -> None:
	from browser_use_mcp.har import HarLog

	log = HarLog()  # no watcher: the target of a CDP session is not known
	for rid, frame in (('a', 'M'), ('b', 'child'), ('c', 'M')):
		params = {'requestId': rid, 'request': {'url': f'http://127.0.0.1:1/{rid}', 'method': 'GET', 'headers': {}}}
		log.on_request(params | {'timestamp': 1.0, 'type': 'Document', 'frameId': frame}, 'S9')
	har = log.build()['log']
	assert [p['title'] for p in har['pages']] == ['http://127.0.0.1:1/a', 'http://127.0.0.1:1/c']
	assert [e['pageref'] for e in har['entries']] == ['page_1', 'page_1', 'page_2']


def test_har_takes_headers_and_cookies_as_chromium_sent_and_received_them_hop_by_hop() -> None:
	"""ExtraInfo events give each hop of a request, in order, the headers as sent and as received, whether
	they come before or after the hop's own event; cookies are listed by name with their attributes, held
	back or refused ones with Chromium's reasons, and no value is kept."""
	from browser_use_mcp.har import HarLog
	from tests.e2e.test_recording_media import check_har

	log = HarLog()
	sid, url = 'S1', 'http://127.0.0.1:1'

	def request(at: float, path: str, **extra: Any) -> None:
		params = {'requestId': 'r', 'request': {'url': url + path, 'method': 'GET', 'headers': {'Accept': '*/*'}}}
		log.on_request(params | {'timestamp': 10.0 + at, 'type': 'Document', **extra}, sid)

	sent_first = {'requestId': 'r', 'headers': {'Accept': '*/*', 'Host': '127.0.0.1:1', 'Cookie': 'sid=v1; gone=v2'}}
	sent_first['associatedCookies'] = [
		{
			'cookie': {
				'name': 'sid',
				'value': 'v1',
				'path': '/',
				'domain': '127.0.0.1',
				'expires': -1,
				'httpOnly': True,
				'secure': False,
			},
			'blockedReasons': [],
		},  # fmt: skip
		{'cookie': {'name': 'third', 'value': 'v3'}, 'blockedReasons': ['SameSiteStrict']},
	]
	log.on_request_extra(sent_first, sid)  # before the request itself, as Chromium may tell it
	request(0.0, '/a')
	redirect = {'requestId': 'r', 'statusCode': 302, 'headers': {'Location': '/b', 'Set-Cookie': 'next=v4; Path=/b; Secure'}}
	redirect['blockedCookies'] = [{'blockedReasons': ['SameSiteNoneInsecure'], 'cookieLine': 'bad=v5; SameSite=None'}]
	log.on_response_extra(redirect, sid)
	request(0.01, '/b', redirectResponse={'status': 302, 'statusText': 'Found', 'headers': {'Location': '/b'}})
	expires = 'Wed, 21 Oct 2037 07:28:00 GMT'
	final = {'requestId': 'r', 'statusCode': 200, 'headers': {'Set-Cookie': f'sid=v6; Domain=127.0.0.1; Expires={expires}; HttpOnly\nplain=v7'}}  # fmt: skip
	log.on_response_extra(final, sid)
	log.on_request_extra({'requestId': 'r', 'headers': {'Host': '127.0.0.1:1', 'Cookie': 'next=v4'}}, sid)  # after its hop
	log.on_response({'requestId': 'r', 'response': {'status': 200, 'headers': {}, 'mimeType': 'text/html'}}, sid)
	log.on_finished({'requestId': 'r', 'timestamp': 10.05}, sid)
	first, second = check_har(log.build())
	assert first['request']['cookies'] == [{'name': 'sid', 'value': '***', 'path': '/', 'domain': '127.0.0.1', 'httpOnly': True, 'secure': False}]  # fmt: skip
	assert first['request']['_blockedCookies'] == [{'name': 'third', 'reasons': ['SameSiteStrict']}]
	assert {'name': 'Cookie', 'value': '***'} in first['request']['headers']
	assert {'name': 'Host', 'value': '127.0.0.1:1'} in first['request']['headers']
	assert first['response']['cookies'] == [{'name': 'next', 'value': '***', 'path': '/b', 'secure': True}]
	assert first['response']['_blockedCookies'] == [{'name': 'bad', 'reasons': ['SameSiteNoneInsecure']}]
	assert {'name': 'Location', 'value': '/b'} in first['response']['headers']
	assert {'name': 'Host', 'value': '127.0.0.1:1'} in second['request']['headers'] and second['request']['cookies'] == []
	assert second['response']['cookies'] == [
		{'name': 'sid', 'value': '***', 'domain': '127.0.0.1', 'expires': '2037-10-21T07:28:00.000Z', 'httpOnly': True},
		{'name': 'plain', 'value': '***'},
	]
	assert '_blockedCookies' not in second['response']
	from browser_use_mcp.har import _cookie, _set_cookies

	assert _cookie('far', {'expires': 1e20}) == {'name': 'far', 'value': '***'}  # no date says it: left out
	late = {'Set-Cookie': 'late=v8; Expires=Fri, 31 Dec 9999 23:59:59 -1200'}  # a page's text: past the year 9999 in UTC
	assert _set_cookies(late) == [{'name': 'late', 'value': '***'}]
	text = json.dumps(log.build())
	assert not any(f'v{i}' in text for i in range(1, 8)), 'a cookie value was kept'


def test_har_extra_info_that_never_finds_its_request_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
	from browser_use_mcp import har as har_module
	from browser_use_mcp.har import HarLog

	monkeypatch.setattr(har_module, 'EARLY_CAP', 4)
	log = HarLog()
	for i in range(10):
		log.on_request_extra({'requestId': f'r{i}', 'headers': {}}, 'S1')
	assert list(log.early) == [('S1', f'r{i}') for i in range(6, 10)]
	params = {'requestId': 'r9', 'request': {'url': 'http://127.0.0.1:1/', 'method': 'GET', 'headers': {}}, 'timestamp': 1.0}
	log.on_request(params, 'S1')  # its request came at last: taken, and forgotten as early
	assert ('S1', 'r9') not in log.early and log.build()['log']['entries'][0]['request']['headers'] == []
