"""browser_console_messages and browser_network_requests: what a session's pages logged and fetched,
recorded from every tab (popups too), filtered, kept per session, bounded. Real server, real Chromium,
pages on loopback, in both isolation modes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from harness.servers import Background, Mcp, running_server
from tests.fixtures import isolation_modes

isolation = isolation_modes()


@pytest.fixture(scope='module')
async def mcp(tmp_path_factory: pytest.TempPathFactory, isolation: str) -> AsyncIterator[Mcp]:
	"""The debug tools are a group of their own: this server lists them beside the core ones."""
	async with Background(running_server(tmp_path_factory.mktemp('debug-home'), '--tools', 'core,debug')) as server:
		yield server


async def until(mcp: Mcp, tool: str, key: str, seen: Any, timeout: float = 10, **args: Any) -> dict[str, Any]:
	"""The tool's structured result once ``seen(entries)`` holds (the page loads its resources after navigate)."""
	loop = asyncio.get_running_loop()
	end = loop.time() + timeout
	while True:
		out = (await mcp.ok(tool, **args)).structured
		if seen(out[key]) or loop.time() > end:
			return out
		await asyncio.sleep(0.1)


def texts(messages: list[dict[str, Any]]) -> list[str]:
	return [m['text'] for m in messages]


async def test_console_and_network_of_a_page_filtered(mcp: Mcp, site: str) -> None:
	sid = 'console-a'
	await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/console?tag=a')
	out = await until(mcp, 'browser_console_messages', 'messages', lambda ms: any('boom' in t for t in texts(ms)), session_id=sid)
	levels = {m['text']: m['level'] for m in out['messages']}
	assert levels['hello a'] == 'log' and levels['careful warn'] == 'warning' and levels['bad error'] == 'error'
	(boom,) = [m for m in out['messages'] if 'boom uncaught' in m['text']]
	assert boom['level'] == 'error' and '/console' in boom['source'] and boom['tab']
	hello = next(m for m in out['messages'] if m['text'] == 'hello a')
	assert hello['source'].startswith(f'{site}/console?tag=a:') and hello['time'].endswith('Z')
	assert out['dropped'] == 0

	net = await until(
		mcp,
		'browser_network_requests',
		'requests',
		lambda rs: (
			{r['status'] for r in rs if 'missing-404' in r['url'] or 'pixel' in r['url']} >= {200, 404}
			and all(r['duration_ms'] is not None for r in rs if 'pixel' in r['url'])
		),
		session_id=sid,
	)
	by_url = {r['url'].removeprefix(site): r for r in net['requests']}
	missing = by_url['/missing-404?token=***']  # the secret query value is redacted
	assert missing['status'] == 404 and missing['method'] == 'GET' and missing['resource_type'] == 'Fetch'
	pixel = by_url['/pixel.png']
	assert pixel['status'] == 200 and pixel['resource_type'] == 'Image' and pixel['size'] > 0 and pixel['duration_ms'] >= 0
	assert by_url['/console?tag=a']['resource_type'] == 'Document' and by_url['/console?tag=a']['status'] == 200
	assert 's3cret' not in (await mcp.ok('browser_network_requests', session_id=sid)).text

	# filters narrow
	warn_up = (await mcp.ok('browser_console_messages', session_id=sid, level='warning')).structured
	assert 'hello a' not in texts(warn_up['messages']) and {'careful warn', 'bad error'} <= set(texts(warn_up['messages']))
	careful = (await mcp.ok('browser_console_messages', session_id=sid, text='CAREFUL')).structured
	assert texts(careful['messages']) == ['careful warn'] and careful['matched'] == 1
	last = (await mcp.ok('browser_console_messages', session_id=sid, limit=1)).structured
	assert len(last['messages']) == 1 and last['matched'] > 1
	only_404 = (await mcp.ok('browser_network_requests', session_id=sid, status=404)).structured['requests']
	assert [r['url'].removeprefix(site) for r in only_404 if 'favicon' not in r['url']] == ['/missing-404?token=***']
	pixels = (await mcp.ok('browser_network_requests', session_id=sid, url_contains='PIXEL')).structured['requests']
	assert [r['url'].removeprefix(site) for r in pixels] == ['/pixel.png']
	assert (await mcp.ok('browser_network_requests', session_id=sid, method='post')).structured['requests'] == []
	failed = {
		r['url'].removeprefix(site)
		for r in (await mcp.ok('browser_network_requests', session_id=sid, failed_only=True)).structured['requests']
	}
	assert '/missing-404?token=***' in failed and '/pixel.png' not in failed

	# another session sees none of it
	other = 'console-b'
	await mcp.ok('browser_navigate', session_id=other, url=f'{site}/two')
	theirs = (await mcp.ok('browser_console_messages', session_id=other)).structured['messages']
	assert not any('hello' in t or 'boom' in t for t in texts(theirs))
	their_requests = (await mcp.ok('browser_network_requests', session_id=other)).structured['requests']
	assert their_requests and not any('console' in r['url'] or 'pixel' in r['url'] for r in their_requests)


async def test_a_popups_console_is_recorded(mcp: Mcp, site: str) -> None:
	sid = 'console-popup'
	await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/console?tag=opener')
	state = await mcp.page_state(sid)
	(link,) = [e for e in state['interactive_elements'] if 'tag=pop' in e.get('href', '')]
	await mcp.ok('browser_click', session_id=sid, index=link['index'])
	out = await until(mcp, 'browser_console_messages', 'messages', lambda ms: 'hello pop' in texts(ms), session_id=sid)
	pop = next(m for m in out['messages'] if m['text'] == 'hello pop')
	opener = next(m for m in out['messages'] if m['text'] == 'hello opener')
	assert pop['tab'] and pop['tab'] != opener['tab']
	tabs = (await mcp.ok('browser_list_tabs', session_id=sid)).structured
	assert pop['tab'] in str(tabs)


async def test_old_messages_are_dropped_and_counted(mcp: Mcp, site: str) -> None:
	sid = 'console-many'
	await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/console?tag=many&n=600')
	out = await until(
		mcp, 'browser_console_messages', 'messages', lambda ms: 'bad error' in texts(ms), session_id=sid, limit=1000
	)
	assert len(out['messages']) == 500 and out['dropped'] > 100
	assert texts(out['messages'])[0] == 'hello many' and 'careful warn' in texts(out['messages'])


async def test_bad_filters_name_the_argument(mcp: Mcp) -> None:
	sid = 'console-bad'
	for tool, args, named in [
		('browser_console_messages', {'level': 'loud'}, 'level'),
		('browser_console_messages', {'limit': 0}, 'limit'),
		('browser_network_requests', {'status': 42}, 'status'),
		('browser_network_requests', {'method': 'G T'}, 'method'),
		('browser_network_requests', {'failed_only': 'yes'}, 'failed_only'),
	]:
		result = await mcp.call(tool, session_id=sid, **args)
		assert result.is_error and named in result.text, (tool, args, result.text)
