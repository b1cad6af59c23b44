"""Sessions as browser contexts of shared Chromiums (--isolation context), and --cdp-url.

What only this mode can get wrong: sessions in one Chromium seeing each other's tabs, cookies,
storage, downloads or history; a shared Chromium's death reaching beyond its own sessions;
closing one context disturbing another; an attached browser being closed or killed by us.
Everything each test starts is stopped by ``raw`` and the ``chromium`` fixture, whatever happens.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psutil
import pytest

from browser_use_mcp.browser import OWNER_SWITCH, session_digest
from harness.servers import RawServer, owned_processes, server_env, user_chromium, wait_until


@pytest.fixture
async def raw() -> AsyncIterator[list[RawServer]]:
	servers: list[RawServer] = []
	yield servers
	for server in servers:
		await server.stop()


async def start(raw: list[RawServer], home: Path, *args: str) -> RawServer:
	server = await RawServer(home, '--isolation', 'context', *args).start()
	raw.append(server)
	return server


def shared_browsers(server_pid: int) -> list[psutil.Process]:
	"""Main processes of the server's Chromiums (renderers carry --type=), oldest first."""
	roots = []
	for pid in owned_processes(server_pid):
		try:
			proc = psutil.Process(pid)
			cmdline = proc.cmdline()
		except psutil.Error:
			continue
		if any(a.startswith(OWNER_SWITCH) for a in cmdline) and not any(a.startswith('--type=') for a in cmdline):
			roots.append(proc)
	return sorted(roots, key=lambda p: p.create_time())


async def test_sessions_in_one_shared_browser_share_nothing(raw: list[RawServer], tmp_path: Path, site: str) -> None:
	server = await start(raw, tmp_path / 'home', '--contexts-per-browser', '8', '--spread-browsers', '1')
	users = ['ann', 'ben', 'cat', 'dan']
	async with server.client() as mcp:
		for i, user in enumerate(users):
			sid = f'ctx-{user}'
			await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/login?user={user}')
			await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/storage?set={user}')
			for n in range(i):  # each session opens a different number of extra tabs
				await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/two?{user}={n}', new_tab=True)
		assert len(shared_browsers(server.pid)) == 1, 'all four sessions live in one Chromium'
		for i, user in enumerate(users):
			sid = f'ctx-{user}'
			tabs = (await mcp.ok('browser_list_tabs', session_id=sid)).structured['tabs']
			assert len(tabs) == i + 1, tabs
			assert all(user in t['url'] for t in tabs[1:]), 'only its own tabs'
			await mcp.ok('browser_switch_tab', session_id=sid, tab_id=tabs[0]['tab_id'])
			await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/whoami')
			assert (await mcp.page_state(sid))['title'] == f'Who: {user}', 'its own cookie jar'
			await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/storage')
			stored = (await mcp.ok('browser_evaluate', session_id=sid, expression='localStorage.getItem("v")')).structured
			assert stored == {'result': user}, 'its own localStorage'
			history = (await mcp.ok('browser_evaluate', session_id=sid, expression='history.length')).structured['result']
			assert history == 5, 'its own history: about:blank, login, storage, whoami, storage'
			await mcp.ok('browser_go_back', session_id=sid)
			assert (await mcp.page_state(sid))['title'] == f'Who: {user}'
		# downloads land in the downloading session's directory only
		await mcp.ok(
			'browser_evaluate',
			session_id='ctx-ann',
			expression=f'(() => {{ const a = document.createElement("a"); a.href = "{site}/download"; a.download = "f.txt"; document.body.appendChild(a); a.click(); return 1; }})()',
		)
		downloads = {p.parent.name: p for p in (server.home / 'state').glob('srv-*/s-*/downloads')}
		assert await asyncio.to_thread(wait_until, lambda: sum(1 for d in downloads.values() for _ in d.iterdir()) == 1, 15), (
			'the download arrived'
		)
		holders = [name for name, d in downloads.items() if any(d.iterdir())]
		assert holders == [next(n for n in downloads if n.startswith(f's-{session_digest("local", "ctx-ann")}-'))]
		listed = {s['session_id'] for s in (await mcp.ok('browser_list_sessions')).structured['sessions']}
		assert listed == {f'ctx-{u}' for u in users}
	# the proxy's own commands (detaching another context's pages, above all) were all understood
	assert 'must have integer' not in server.stderr.decode(), 'Chromium refused a command id of the proxy'


async def test_list_tabs_never_shows_another_sessions_tab_while_it_opens_and_closes_tabs(
	raw: list[RawServer], tmp_path: Path, site: str
) -> None:
	server = await start(raw, tmp_path / 'home')
	async with server.client() as mcp:
		await mcp.ok('browser_navigate', session_id='busy', url=f'{site}/two')
		await mcp.ok('browser_navigate', session_id='watcher', url=f'{site}/whoami')
		cycles = 0

		async def churn() -> None:
			nonlocal cycles
			for n in range(5):
				await mcp.ok('browser_navigate', session_id='busy', url=f'{site}/two?churn={n}', new_tab=True)
				tabs = (await mcp.ok('browser_list_tabs', session_id='busy')).structured['tabs']
				await mcp.ok('browser_close_tab', session_id='busy', tab_id=tabs[-1]['tab_id'])
				cycles += 1

		churning = asyncio.create_task(churn())
		seen: list[list[str]] = []
		while not churning.done():  # watch the whole time the other session opens and closes tabs
			tabs = (await mcp.ok('browser_list_tabs', session_id='watcher')).structured['tabs']
			seen.append([t['url'] for t in tabs])
		await churning
		assert cycles == 5 and len(seen) >= 5
		assert all(urls == [f'{site}/whoami'] for urls in seen), seen


async def test_a_shared_browser_crash_stays_inside_its_shard(raw: list[RawServer], tmp_path: Path, site: str) -> None:
	server = await start(raw, tmp_path / 'home', '--contexts-per-browser', '2', '--spread-browsers', '2')
	async with server.client() as mcp:
		for sid in ('s1', 's2', 's3', 's4'):
			await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/login?user={sid}')
		# spread over two Chromiums (--spread-browsers 2), then each to the least busy:
		# s1 and s3 in the first, s2 and s4 in the second
		first, second = shared_browsers(server.pid)
		victims = {first.pid, *(c.pid for c in first.children(recursive=True))}
		os.kill(first.pid, signal.SIGKILL)
		assert await asyncio.to_thread(wait_until, lambda: not any(psutil.pid_exists(p) for p in victims), 5)
		for sid in ('s1', 's3'):
			lost = await mcp.call('browser_get_state', session_id=sid)
			assert lost.is_error and 'browser died' in lost.text and 'shared Chromium' in lost.text, lost.text
		for sid in ('s2', 's4'):
			await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/whoami')
			assert (await mcp.page_state(sid))['title'] == f'Who: {sid}', 'the other shard is untouched'
		assert second.is_running()
		await mcp.ok('browser_navigate', session_id='s1', url=f'{site}/whoami')  # starts afresh
		assert (await mcp.page_state('s1'))['title'] == 'Who: nobody'
		pids = owned_processes(server.pid)
	os.kill(server.pid, signal.SIGTERM)
	assert await server.wait(15) is not None
	assert await asyncio.to_thread(wait_until, lambda: not any(psutil.pid_exists(p) for p in pids), 5)
	assert list((server.home / 'state').glob('srv-*')) == []


async def test_closing_a_context_leaves_the_others_in_its_browser_alone(raw: list[RawServer], tmp_path: Path, site: str) -> None:
	server = await start(raw, tmp_path / 'home')
	async with server.client() as mcp:
		await mcp.ok('browser_navigate', session_id='stays', url=f'{site}/two')
		await mcp.ok('browser_navigate', session_id='goes', url=f'{site}/two')
		loading = asyncio.create_task(mcp.call('browser_navigate', session_id='stays', url=f'{site}/slow?s=2'))
		await asyncio.sleep(0.3)
		await mcp.ok('browser_close_session', session_id='goes')
		result = await loading
		assert not result.is_error, result.text
		assert (await mcp.page_state('stays'))['title'] == 'Slow'
		assert len(shared_browsers(server.pid)) == 1


# -- --cdp-url -------------------------------------------------------------------------------------


@pytest.fixture
def chromium(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen]]:
	"""A browser the test starts itself, as a user would (remote debugging on), with its own tab."""
	with user_chromium(tmp_path / 'user-browser') as found:
		yield found


def page_urls(url: str) -> list[str]:
	opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
	with opener.open(f'{url}/json/list', timeout=5) as reply:
		return [t['url'] for t in json.loads(reply.read()) if t.get('type') == 'page']


async def test_cdp_url_drives_the_users_browser_and_never_closes_it(
	raw: list[RawServer], tmp_path: Path, site: str, chromium: tuple[str, subprocess.Popen]
) -> None:
	url, browser = chromium
	opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
	opener.open(urllib.request.Request(f'{url}/json/new?{site}/two', method='PUT'), timeout=5).close()
	home = tmp_path / 'home'
	server = await RawServer(home, '--cdp-url', url, env=server_env(home)).start()
	raw.append(server)
	async with server.client() as mcp:
		mine = (await mcp.ok('browser_list_tabs')).structured['tabs']
		assert f'{site}/two' in [t['url'] for t in mine], 'the default session drives the browser as it is'
		await mcp.ok('browser_navigate', session_id='named', url=f'{site}/login?user=nina')
		named = (await mcp.ok('browser_list_tabs', session_id='named')).structured['tabs']
		assert [t['url'] for t in named] == [f'{site}/login?user=nina'], 'a fresh context sees only its own tab'
		assert not shared_browsers(server.pid), 'the server started no browser of its own'
		await mcp.ok('browser_close_all')
		assert browser.poll() is None and f'{site}/two' in page_urls(url), 'close_all left the user tab alone'
		assert f'{site}/login?user=nina' not in page_urls(url), 'the named context is gone'
	os.kill(server.pid, signal.SIGTERM)
	assert await server.wait(15) is not None
	time.sleep(0.5)
	assert browser.poll() is None and f'{site}/two' in page_urls(url), 'nor did shutdown close it'


async def test_cdp_url_that_answers_nothing_stops_the_server_at_start(tmp_path: Path) -> None:
	home = tmp_path / 'home'
	server = await RawServer(home, '--cdp-url', 'http://127.0.0.1:9', env=server_env(home)).start()
	try:
		assert await server.wait(30) == 2
		assert re.search(
			r'No browser answers at --cdp-url http://127\.0\.0\.1:9 .*--remote-debugging-port', server.stderr.decode()
		)
	finally:
		await server.stop()


async def test_an_attached_browser_that_goes_away_is_named_in_the_error(
	raw: list[RawServer], tmp_path: Path, site: str, chromium: tuple[str, subprocess.Popen]
) -> None:
	url, browser = chromium
	home = tmp_path / 'home'
	server = await RawServer(home, '--cdp-url', url, env=server_env(home)).start()
	raw.append(server)
	async with server.client() as mcp:
		await mcp.ok('browser_navigate', session_id='n', url=f'{site}/two')
		await mcp.ok('browser_navigate', url=f'{site}/two')
		os.killpg(browser.pid, signal.SIGKILL)
		browser.wait(5)
		await asyncio.sleep(0.5)
		lost = await mcp.call('browser_get_state', session_id='n')
		assert lost.is_error and f'the browser at {url} went away' in lost.text, lost.text
		# the default session restarts instead of failing, which it cannot without the browser
		default = await mcp.call('browser_get_state')
		assert default.is_error and url in default.text, default.text


async def test_prewarm_hands_out_ready_contexts(raw: list[RawServer], tmp_path: Path, site: str) -> None:
	server = await start(raw, tmp_path / 'home', '--prewarm', '2')
	async with server.client() as mcp:
		await mcp.ok('browser_navigate', session_id='first', url=f'{site}/two')
		created = [(await mcp.ok('browser_create_session')).structured['session_id'] for _ in range(3)]
		for sid in created:
			await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/login?user={sid[-6:]}')
		titles = [(await mcp.page_state(sid))['title'] for sid in created]
		assert titles == ['Logged in'] * 3
		assert len(shared_browsers(server.pid)) == 1, 'spares are contexts of the shared Chromium (one: --spread-browsers 1)'


# -- settings that make no sense ----------------------------------------------------------------------


@pytest.mark.parametrize(
	('env', 'words'),
	[
		({'BROWSER_USE_MCP_ISOLATION': 'tabs'}, 'isolation must be browser or context'),
		({'BROWSER_USE_MCP_CONTEXTS_PER_BROWSER': '0'}, 'contexts per browser must be >= 1'),
		({'BROWSER_USE_MCP_CONTEXTS_PER_BROWSER': 'many'}, 'BROWSER_USE_MCP_CONTEXTS_PER_BROWSER'),
		({'BROWSER_USE_MCP_SPREAD_BROWSERS': '0'}, 'spread browsers must be >= 1'),
		({'BROWSER_USE_MCP_CDP_URL': 'localhost:9222'}, 'must be an http(s):// or ws(s):// URL'),
		({'BROWSER_USE_MCP_SHARED_BROWSER_IDLE': '-1'}, 'shared browser idle time must be >= 0'),
		({'BROWSER_USE_MCP_CHROMIUM_NICE': '20'}, 'chromium nice must be 0 to 19'),
		({'BROWSER_USE_MCP_CHROMIUM_NICE': '-5'}, 'chromium nice must be 0 to 19'),
		({'BROWSER_USE_MCP_CHROMIUM_NICE': 'low'}, 'BROWSER_USE_MCP_CHROMIUM_NICE'),
	],
)
def test_nonsense_isolation_settings_stop_the_server_with_the_reason(env: dict[str, str], words: str) -> None:
	from browser_use_mcp.config import load_config

	with pytest.raises(SystemExit, match=re.escape(words)):
		load_config(env, browser_use=False)


def test_the_isolation_flags_reach_the_configuration() -> None:
	from browser_use_mcp.cli import build_parser, cli_overrides
	from browser_use_mcp.config import load_config

	ns = build_parser().parse_args(
		['--isolation', 'context', '--contexts-per-browser', '4', '--cdp-url', 'http://127.0.0.1:9222']
	)
	config = load_config({}, browser_use=False, **cli_overrides(ns))
	assert (config.isolation, config.contexts_per_browser, config.cdp_url) == ('context', 4, 'http://127.0.0.1:9222')
	upstream = load_config({'BROWSER_USE_CDP_URL': 'http://127.0.0.1:9333'}, browser_use=False)
	assert upstream.cdp_url == 'http://127.0.0.1:9333', "upstream's variable is honoured"
