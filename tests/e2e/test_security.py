"""Security boundaries a session's browser must respect."""

from __future__ import annotations

import asyncio
import http.server
import os
import threading
from pathlib import Path

import pytest

from browser_use_mcp import urls
from harness.servers import Mcp, RawServer, server_env


async def test_navigate_refuses_a_disallowed_url_before_any_request(tmp_path: Path, site: str) -> None:
	"""browser-use blocks a disallowed navigation only after Chromium sent it; we refuse first."""
	hits: list[str] = []

	class Trap(http.server.BaseHTTPRequestHandler):
		def do_GET(self) -> None:  # noqa: N802
			hits.append(self.path)
			self.send_response(200)
			self.end_headers()

		def log_message(self, *args: object) -> None:
			pass

	trap = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Trap)
	threading.Thread(target=trap.serve_forever, daemon=True).start()
	home = tmp_path / 'home'
	allowed = site.split('://', 1)[1]
	server = await RawServer(home, env=server_env(home, BROWSER_USE_ALLOWED_DOMAINS=f'http://{allowed}')).start()
	try:
		async with server.client() as mcp:
			await mcp.ok('browser_navigate', session_id='guarded', url=f'{site}/two')
			r = await mcp.call('browser_navigate', session_id='guarded', url=f'http://localhost:{trap.server_address[1]}/secret')
			assert r.is_error and 'not allowed' in r.text, r.text
			assert hits == [], 'the disallowed URL was never requested'
			assert (await mcp.ok('browser_get_state', session_id='guarded')).json()['url'] == f'{site}/two'
			# the same guard covers a link opened in a new tab by browser_click
			trap_url = f'http://localhost:{trap.server_address[1]}/via-link'
			await mcp.ok(
				'browser_evaluate',
				session_id='guarded',
				expression=f'(() => {{ const a = document.createElement("a"); a.href = "{trap_url}"; a.textContent = "out"; document.body.appendChild(a); return true; }})()',
			)
			state = (await mcp.ok('browser_get_state', session_id='guarded')).json()
			link = next(e for e in state['interactive_elements'] if e.get('href') == trap_url)
			r = await mcp.call('browser_click', session_id='guarded', index=link['index'], new_tab=True)
			assert r.is_error and 'not allowed' in r.text, r.text
			assert hits == [], 'the disallowed link was never requested'
	finally:
		await server.stop()
		trap.shutdown()
		trap.server_close()


BROWSER_PAGES = (
	'chrome://gpucrash',
	'chrome://inducebrowsercrashforrealz',
	'CHROME://version/',
	' chrome://settings',
	'chrome-untrusted://terminal/',
	'devtools://devtools/bundled/inspector.html',
	'chrome-extension://abcdefghijklmnopabcdefghijklmnop/x.html',
	'chrome-search://local-ntp/',
	'about:version',
	'about:gpucrash',
)


async def test_browser_pages_are_refused_and_every_session_survives(mcp: Mcp, site: str) -> None:
	"""chrome://gpucrash and friends would crash the browser every tenant of a shard shares."""
	await mcp.ok('browser_navigate', session_id='bystander', url=f'{site}/two')
	await mcp.ok('browser_navigate', session_id='hostile', url=f'{site}/one')
	for url in BROWSER_PAGES:
		for new_tab in (False, True):
			r = await mcp.call('browser_navigate', session_id='hostile', url=url, new_tab=new_tab)
			assert r.is_error and 'page of the browser itself' in r.text and '--allow-browser-urls' in r.text, (url, r.text)
	# the page itself cannot get there either (Chromium's own rule): nothing crashes, nothing opens
	for expression in (
		'location = "chrome://gpucrash"; 1',
		'location.href = "chrome://inducebrowsercrashforrealz"; 1',
		'window.open("chrome://inducebrowsercrashforrealz"); window.open("chrome://gpucrash"); 1',
	):
		await mcp.ok('browser_evaluate', session_id='hostile', expression=expression)
	await asyncio.sleep(1.0)
	for session_id, path in (('hostile', '/one'), ('bystander', '/two')):
		state = await mcp.page_state(session_id)
		assert not state['url'].startswith('chrome'), state['url']
		await mcp.ok('browser_navigate', session_id=session_id, url=f'{site}{path}')
		assert (await mcp.page_state(session_id))['url'] == f'{site}{path}'
	tabs = (await mcp.ok('browser_list_tabs', session_id='hostile')).text
	assert 'chrome://' not in tabs, tabs


async def test_operator_may_allow_named_browser_pages(tmp_path: Path) -> None:
	home = tmp_path / 'home'
	# chrome://version is a page of the full Chromium (the headless shell has no chrome:// pages)
	env = server_env(home, BROWSER_USE_MCP_ALLOW_BROWSER_URLS='chrome://version', BROWSER_USE_MCP_HEADLESS_SHELL='false')
	server = await RawServer(home, env=env).start()
	try:
		async with server.client() as mcp:
			await mcp.ok('browser_navigate', session_id='ops', url='chrome://version')
			assert (await mcp.page_state('ops'))['url'].startswith('chrome://version')
			r = await mcp.call('browser_navigate', session_id='ops', url='chrome://gpucrash')
			assert r.is_error and 'page of the browser itself' in r.text, r.text
			# the full Chromium's singleton socket lives in a directory of its own in /tmp
			singleton = Path(os.readlink(next(home.rglob('SingletonSocket')))).parent
			assert singleton.is_dir()
		# shut down as a client does (stdin closed): the server removes that directory with its browser.
		# stop() alone kills the server, and only its sidecar would remove it, a moment after the test ended.
		server.close_stdin()
		assert await server.wait(20) == 0
	finally:
		await server.stop()
	assert not singleton.exists(), 'the browser left its singleton directory in /tmp'


@pytest.mark.parametrize(
	('url', 'page'),
	[
		('chrome://gpucrash', 'chrome://gpucrash'),
		('  Chrome://GPUcrash/x', 'chrome://gpucrash'),
		('chr\tome://version', 'chrome://version'),
		('about:blank', None),
		('about:blank#x', None),
		('ABOUT:version', 'about:version'),
		('https://example.com/chrome://x', None),
		('devtools://devtools/x', 'devtools://devtools'),
		('https://example.com/file:///etc/passwd', None),
	],
)
def test_browser_page_is_read_as_chromium_reads_it(url: str, page: str | None) -> None:
	assert urls.browser_page(url) == page
	assert (urls.refusal(url) is None) == (page is None)
	assert urls.refusal(url, ('chrome://version', 'chrome://gpucrash', 'devtools://devtools', 'about:version')) is None


LOCAL_FILES = (
	'file:///etc/passwd',
	'file://localhost/etc/passwd',
	'FILE://LOCALHOST/etc/passwd',
	'  file://127.0.0.1/etc/passwd',
	'fi\tle://localhost/etc/passwd',
	'file:/etc/passwd',
	'view-source:file:///etc/passwd',
	'view-source:http://127.0.0.1/',
	'filesystem:file:///etc/passwd',
)


@pytest.mark.parametrize('url', LOCAL_FILES)
def test_the_servers_files_are_refused_whatever_the_host(url: str) -> None:
	"""file://localhost/… and file://127.0.0.1/… open the server's disk as file:/// does (found by fuzzing:
	only the host-less form was refused, by the domain check)."""
	why = urls.refusal(url, ('chrome://version',))
	assert why is not None and "server's own disk" in why and 'browser_upload_file' in why, (url, why)
	message = {'method': 'Target.createTarget', 'params': {'url': url}}  # browser-use's own, the agent's included
	assert urls.refused_command(message) is not None
	assert urls.refusal('https://example.com/file://localhost/etc/passwd') is None


async def test_navigate_never_opens_the_servers_files(mcp: Mcp, site: str) -> None:
	await mcp.ok('browser_navigate', session_id='files', url=f'{site}/two')
	for url in ('file://localhost/etc/passwd', 'FILE://LOCALHOST/etc/passwd', 'file://127.0.0.1/etc/passwd'):
		for new_tab in (False, True):
			r = await mcp.call('browser_navigate', session_id='files', url=url, new_tab=new_tab)
			assert r.is_error and "server's own disk" in r.text, (url, r.text)
	html = (await mcp.ok('browser_get_html', session_id='files')).text
	assert 'root:' not in html
	assert (await mcp.page_state('files'))['url'] == f'{site}/two'
	tabs = (await mcp.ok('browser_list_tabs', session_id='files')).text
	assert 'file:' not in tabs, tabs


def test_allow_browser_urls_from_flag_and_env() -> None:
	from browser_use_mcp.cli import build_parser, cli_overrides
	from browser_use_mcp.config import load_config, validate

	ns = build_parser().parse_args(['--allow-browser-urls', 'chrome://version, about:version'])
	config = load_config({}, browser_use=False, **cli_overrides(ns))
	assert config.allow_browser_urls == ('chrome://version', 'about:version')
	config = load_config({'BROWSER_USE_MCP_ALLOW_BROWSER_URLS': 'chrome://gpu'}, browser_use=False)
	assert config.allow_browser_urls == ('chrome://gpu',)
	with pytest.raises(SystemExit, match='allow-browser-urls'):
		validate(config.with_overrides(allow_browser_urls=('https://example.com',)))
