"""Sessions on a real Selenium Grid 4 standalone (--grid-url), started by these tests on 127.0.0.1.

What only this provider can get wrong: a Grid session left open (or queued) after its MCP
session ends; a browser that died on the Grid read as a silent, empty page instead of an error;
a full Grid making the caller wait forever; downloads stranded on the node. Every Grid the module
starts is stopped (with every chromedriver and Chromium it started), whatever happens.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psutil
import pytest

from browser_use_mcp.config import load_config
from browser_use_mcp.doctor import check_grid
from browser_use_mcp.files import GRID_PARTIAL
from browser_use_mcp.providers.grid import grid_capabilities
from harness.gridserver import GridServer
from harness.servers import BLACKHOLE_PROXY, RawServer, wait_until

SLOTS = 2


@pytest.fixture(scope='module')
def grid(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GridServer]:
	with GridServer(tmp_path_factory.mktemp('grid'), max_sessions=SLOTS) as server:
		yield server


@pytest.fixture
async def raw(grid: GridServer) -> AsyncIterator[list[RawServer]]:
	servers: list[RawServer] = []
	yield servers
	for server in servers:
		server.close_stdin()  # an orderly shutdown first; stop() then kills whatever is left
		await server.wait(20)
		await server.stop()
	# whatever a test did, it leaves the Grid empty for the next one
	assert await asyncio.to_thread(wait_until, lambda: busy_slots(grid) == 0, 15), 'every Grid session was deleted'


async def start(raw: list[RawServer], grid: GridServer, home: Path, *args: str) -> RawServer:
	server = await RawServer(home, '--grid-url', grid.url, *args).start()
	raw.append(server)
	return server


def grid_get(grid: GridServer, path: str) -> dict:
	opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
	with opener.open(grid.url + path, timeout=10) as reply:
		return json.loads(reply.read())['value']


def busy_slots(grid: GridServer) -> int:
	return sum(1 for node in grid_get(grid, '/status')['nodes'] for slot in node['slots'] if slot.get('session'))


def grid_browsers(grid: GridServer) -> list[psutil.Process]:
	"""Main processes of the Chromiums the Grid's chromedrivers started."""
	out = []
	for proc in psutil.Process(grid.pid).children(recursive=True):
		try:
			cmdline = proc.cmdline()
		except psutil.Error:
			continue
		if cmdline and 'chrom' in cmdline[0] and 'driver' not in cmdline[0] and not any(a.startswith('--type=') for a in cmdline):
			out.append(proc)
	return out


async def test_grid_sessions_are_isolated_listed_and_deleted_on_close(
	raw: list[RawServer], grid: GridServer, tmp_path: Path, site: str
) -> None:
	server = await start(raw, grid, tmp_path / 'home')
	async with server.client() as mcp:
		await mcp.ok('browser_navigate', session_id='g-ann', url=f'{site}/login?user=ann')
		await mcp.ok('browser_navigate', session_id='g-ben', url=f'{site}/whoami')
		assert busy_slots(grid) == 2, 'one Grid session per MCP session'
		# state and click work remotely
		await mcp.ok('browser_navigate', session_id='g-ann', url=f'{site}/')
		page = (await mcp.ok('browser_get_state', session_id='g-ann')).json()
		button = next(e for e in page['interactive_elements'] if e['tag'] == 'button')
		await mcp.ok('browser_click', session_id='g-ann', index=button['index'])
		assert (await mcp.ok('browser_get_state', session_id='g-ann')).json()['title'] == 'Clicked'
		await mcp.ok('browser_navigate', session_id='g-ann', url=f'{site}/whoami')
		titles = {sid: (await mcp.ok('browser_get_state', session_id=sid)).json()['title'] for sid in ('g-ann', 'g-ben')}
		assert titles == {'g-ann': 'Who: ann', 'g-ben': 'Who: nobody'}, 'separate cookie jars'
		listed = {s['session_id']: s for s in (await mcp.ok('browser_list_sessions')).structured['sessions']}
		assert set(listed) == {'g-ann', 'g-ben'}
		for info in listed.values():
			assert info['location'].startswith('grid http://'), info['location']
		await mcp.ok('browser_close_session', session_id='g-ann')
		# the Grid's /status shows a deleted session for a moment; no idle timeout is waited for
		assert await asyncio.to_thread(wait_until, lambda: busy_slots(grid) == 1, 5), 'close ends the Grid session'
		await mcp.ok('browser_close_all')
		assert await asyncio.to_thread(wait_until, lambda: busy_slots(grid) == 0, 5)
		assert await asyncio.to_thread(wait_until, lambda: not grid_browsers(grid), 10), 'the node stopped the browsers'


async def test_the_default_session_runs_on_the_grid_and_shutdown_deletes_it(
	raw: list[RawServer], grid: GridServer, tmp_path: Path, site: str
) -> None:
	server = await start(raw, grid, tmp_path / 'home')
	async with server.client() as mcp:
		await mcp.ok('browser_navigate', url=f'{site}/two')
		(info,) = (await mcp.ok('browser_list_sessions')).structured['sessions']
		assert info['default'] and info['location'].startswith('grid ')
		assert busy_slots(grid) == 1
	server.close_stdin()  # the client leaves: an orderly shutdown
	assert await server.wait(20) == 0
	assert await asyncio.to_thread(wait_until, lambda: busy_slots(grid) == 0, 5), 'shutdown deleted the Grid session'


async def test_a_killed_server_leaves_no_session_on_the_grid(raw: list[RawServer], grid: GridServer, tmp_path: Path) -> None:
	server = await start(raw, grid, tmp_path / 'home')
	async with server.client() as mcp:
		await mcp.ok('browser_create_session', session_id='g-1')
		await mcp.ok('browser_create_session', session_id='g-2')
		assert busy_slots(grid) == 2
		server.proc.kill()
		# the sidecar ends them, not the Grid's idle timeout minutes later
		assert await asyncio.to_thread(wait_until, lambda: busy_slots(grid) == 0, 15), 'the Grid sessions were deleted'


async def test_a_browser_that_dies_on_the_grid_is_an_error_on_the_next_call_not_a_stale_page(
	raw: list[RawServer], grid: GridServer, tmp_path: Path, site: str
) -> None:
	server = await start(raw, grid, tmp_path / 'home')
	async with server.client() as mcp:
		await mcp.ok('browser_navigate', session_id='g-crash', url=f'{site}/two')
		(chromium,) = grid_browsers(grid)
		chromium.kill()
		await asyncio.sleep(2.5)  # a heartbeat or two
		started = time.monotonic()
		result = await mcp.call('browser_get_state', session_id='g-crash')
		took = time.monotonic() - started
		assert result.is_error, f'a dead browser must not read as a page: {result.text[:200]}'
		assert 'Selenium Grid session ended' in result.text, result.text
		assert took < 15, f'reported at once, not after a CDP timeout ({took:.1f} s)'
		# the id is free again: the next call gets a fresh Grid browser
		again = await mcp.call('browser_navigate', session_id='g-crash', url=f'{site}/two')
		if again.is_error:  # the one-time "lost its browser" answer, then a new session
			await mcp.ok('browser_navigate', session_id='g-crash', url=f'{site}/two')
		assert await asyncio.to_thread(wait_until, lambda: busy_slots(grid) == 1, 5), 'the dead one was deleted'


async def test_a_full_grid_is_a_clear_retryable_error_and_nothing_stays_queued(
	raw: list[RawServer], grid: GridServer, tmp_path: Path, site: str
) -> None:
	server = await start(raw, grid, tmp_path / 'home', '--grid-timeout', '2')
	async with server.client() as mcp:
		for n in range(SLOTS):
			await mcp.ok('browser_create_session', session_id=f'g-{n}')
		result = await mcp.call('browser_create_session', session_id='g-late')
		assert result.is_error
		assert 'at capacity' in result.text and f'{SLOTS} of {SLOTS}' in result.text, result.text
		assert 'Retry' in result.text
		assert await asyncio.to_thread(wait_until, lambda: grid_get(grid, '/se/grid/newsessionqueue/queue') == [], 10), (
			'our request left the Grid queue'
		)
		await mcp.ok('browser_close_session', session_id='g-0')
		await mcp.ok('browser_create_session', session_id='g-late')
		await asyncio.sleep(1)
		assert busy_slots(grid) == SLOTS, 'no abandoned request took a slot behind our back'


async def test_downloads_on_the_node_come_back_to_the_sessions_directory(
	raw: list[RawServer], grid: GridServer, tmp_path: Path, site: str
) -> None:
	server = await start(raw, grid, tmp_path / 'home')
	async with server.client() as mcp:
		await mcp.ok('browser_navigate', session_id='g-dl', url=f'{site}/two')
		await mcp.ok(
			'browser_evaluate',
			session_id='g-dl',
			expression=f'(() => {{ const a = document.createElement("a"); a.href = "{site}/download"; a.download = "f.txt"; document.body.appendChild(a); a.click(); return 1; }})()',
		)
		(downloads,) = (server.home / 'state').glob('srv-*/s-*/downloads')

		# whole, under its own name (the copy from the node is written as .<name>.grid-partial, then renamed)
		def whole() -> list[Path]:
			return [p for p in downloads.iterdir() if not p.name.endswith(GRID_PARTIAL)]

		assert await asyncio.to_thread(wait_until, lambda: bool(whole()), 15), 'the download came back'
		(path,) = whole()
		assert path.read_bytes() == b'hello download\n'
		session_id = next(s for n in grid_get(grid, '/status')['nodes'] for s in [sl.get('session') for sl in n['slots']] if s)
		names = grid_get(grid, f'/session/{session_id["sessionId"]}/se/files')['names']
		assert path.name in names, 'it went through the Grid, not straight to our disk'


async def test_grid_settings_that_make_no_sense_stop_the_server_with_the_reason(tmp_path: Path) -> None:
	cases = [
		(('--grid-url', 'http://127.0.0.1:9'), 'No Selenium Grid answers at --grid-url http://127.0.0.1:9'),
		(('--grid-url', 'grid.example:4444'), 'must be the http(s):// address of a Selenium Grid'),
		(('--grid-url', 'http://127.0.0.1:9', '--grid-capabilities', '[1]'), 'a JSON object'),
		(('--grid-url', 'http://127.0.0.1:9', '--grid-capabilities', '{bad'), 'Invalid value for --grid-capabilities'),
		(('--grid-url', 'http://127.0.0.1:9', '--cdp-url', 'http://127.0.0.1:9'), 'cannot be used together'),
		(('--grid-url', 'http://127.0.0.1:9', '--grid-timeout', '0'), 'grid timeout must be > 0'),
	]
	for args, words in cases:
		server = await RawServer(tmp_path / 'home', *args).start()
		code = await asyncio.wait_for(server.proc.wait(), 30)
		await server.stop()
		assert code != 0, (args, code)
		assert words in server.stderr.decode(), (args, server.stderr.decode()[-500:])


def test_our_flags_go_to_the_node_and_the_users_capabilities_win() -> None:
	caps = grid_capabilities(
		['--headless=new', '--user-data-dir=/tmp/x', BLACKHOLE_PROXY, '--remote-debugging-port=0'],
		{'platformName': 'linux', 'goog:chromeOptions': {'args': ['--lang=de'], 'binary': '/opt/chrome'}},
	)
	options = caps['goog:chromeOptions']
	assert options['args'] == ['--headless=new', BLACKHOLE_PROXY, '--lang=de'], 'local paths and ports stay here'
	assert options['binary'] == '/opt/chrome' and caps['platformName'] == 'linux' and caps['se:downloadsEnabled'] is True
	config = load_config({'BROWSER_USE_MCP_GRID_URL': 'http://g:4444', 'BROWSER_USE_MCP_GRID_CAPABILITIES': '{"a": 1}'})
	assert config.grid_url == 'http://g:4444' and dict(config.grid_capabilities) == {'a': 1}


def test_doctor_checks_a_grid(grid: GridServer) -> None:
	checks = {c.name: c for c in check_grid(grid.url, {})}
	assert all(c.status == 'ok' for c in checks.values()), checks
	assert 'CDP' in ' '.join(c.summary for c in checks.values())
	(dead,) = check_grid('http://127.0.0.1:9', {})
	assert dead.status == 'fail' and dead.fix and '127.0.0.1:9' in dead.summary


async def test_grid_sessions_take_session_options_but_a_proxy(
	raw: list[RawServer], grid: GridServer, tmp_path: Path, site: str
) -> None:
	server = await start(raw, grid, tmp_path / 'home')
	async with server.client() as mcp:
		refused = await mcp.call('browser_create_session', session_id='g-opt', proxy={'server': 'http://127.0.0.1:3128'})
		assert refused.is_error and 'proxy: a Selenium Grid node' in refused.text, refused.text
		assert busy_slots(grid) == 0, 'nothing was made for it'
		options = {
			'viewport': {'width': 500, 'height': 600},
			'user_agent': 'GridOptions/1.0',
			'locale': 'fr-FR',
			'timezone': 'America/New_York',
			'extra_http_headers': {'X-Grid-Option': 'yes'},
		}
		await mcp.ok('browser_create_session', session_id='g-opt', **options)
		await mcp.ok('browser_navigate', session_id='g-opt', url=f'{site}/headers')
		expression = (
			'[navigator.userAgent, navigator.language, Intl.DateTimeFormat().resolvedOptions().timeZone, innerWidth, '
			'JSON.parse(document.getElementById("headers").textContent)["x-grid-option"]]'
		)
		seen = (await mcp.ok('browser_evaluate', session_id='g-opt', expression=expression)).structured['result']
		assert seen == ['GridOptions/1.0', 'fr-FR', 'America/New_York', 500, 'yes']
		await mcp.ok('browser_close_all')


async def test_upload_copies_the_file_to_the_node_and_the_site_receives_its_bytes(
	raw: list[RawServer], grid: GridServer, tmp_path: Path, site: str
) -> None:
	import base64
	import hashlib

	data = bytes(range(256)) * 300  # binary, 76,800 bytes
	server = await start(raw, grid, tmp_path / 'home', '--tools', 'all')
	async with server.client() as mcp:
		await mcp.ok('browser_navigate', session_id='g-up', url=f'{site}/upload')
		state = await mcp.page_state('g-up')
		field = next(e['index'] for e in state['interactive_elements'] if e['tag'] == 'input')
		arguments = {'session_id': 'g-up', 'index': field, 'content_base64': base64.b64encode(data).decode(), 'name': 'blob.bin'}
		chose = await mcp.client.call_tool('browser_upload_file', arguments, read_timeout_seconds=60)  # Mcp.ok has a name
		text = chose.content[0].text
		assert not chose.is_error and 'blob.bin' in text and 'Selenium Grid node' in text, text
		# the browser on the node read the node's copy: the Grid keeps uploads in its temp dir (harness/gridserver.py)
		copies = [p for p in grid.tmp_dir.rglob('blob.bin') if p.is_file()]
		assert copies and all(c.read_bytes() == data for c in copies), copies
		assert not any(c.is_relative_to(server.home) for c in copies)
		state = await mcp.page_state('g-up')
		send = next(e['index'] for e in state['interactive_elements'] if e['text'] == 'Send')
		await mcp.ok('browser_click', session_id='g-up', index=send)
		received = await mcp.ok(
			'browser_evaluate', session_id='g-up', expression='[...document.querySelectorAll(".got")].map(p => p.textContent)'
		)
		assert received.structured['result'] == [f'blob.bin:{len(data)}:{hashlib.sha256(data).hexdigest()}']
