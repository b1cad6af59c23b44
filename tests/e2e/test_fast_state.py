"""The faster browser_get_state shows what browser-use's own capture shows, and never a stale page.

The get_state patches (``result_adapters``, ``dom_capture``, ``direct_state``, ``offload_state``) change how the
state is captured (and where: ``offload_state`` builds it in a worker process),
not what it says: a server with both switched off (their off switches) must return the same text
on the same page, elements inside an iframe and a shadow root, JS-listener-only clickables,
hidden and disabled ones included. And nothing is cached: a DOM or title change between two
calls is in the second.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from harness.servers import Background, Mcp, running_server, server_env
from tests.fixtures import isolation_modes

isolation = isolation_modes()  # a Chromium per session, and contexts through the CDP proxy

PATCHES_OFF = {
	'BROWSER_USE_MCP_CACHED_RESULT_TYPES': 'false',
	'BROWSER_USE_MCP_FAST_DOM_CAPTURE': 'false',
	'BROWSER_USE_MCP_DIRECT_STATE': 'false',
	'BROWSER_USE_MCP_OFFLOAD_STATE': 'false',
}


@pytest.fixture(scope='module')
async def plain(tmp_path_factory: pytest.TempPathFactory, isolation: str) -> AsyncIterator[Mcp]:
	"""A server with the get_state patches switched off: browser-use's own capture."""
	home = tmp_path_factory.mktemp('plain-home')
	async with Background(running_server(home, env=server_env(home, **PATCHES_OFF))) as server:
		yield server


@pytest.fixture(autouse=True)
async def clean(mcp: Mcp):
	yield
	await mcp.call('browser_close_all')


def canonical(page: dict[str, Any]) -> dict[str, Any]:
	"""``page`` with each element's index replaced by its rank. browser-use's indices are Chromium's
	backendNodeIds: handles that the renderer numbers in the order DevTools requests first touch
	the nodes, so two browsers (or one page asked in a different order) number the same elements
	differently. Everything else must be equal, element by element, in the same order."""
	indices = [e['index'] for e in page['interactive_elements']]
	assert len(set(indices)) == len(indices), 'an index names two elements'
	elements = [{**e, 'index': rank} for rank, e in enumerate(page['interactive_elements'])]
	return {**page, 'interactive_elements': elements}


def texts(page: dict[str, Any]) -> list[str]:
	return [e['text'] or e.get('placeholder', '') for e in page['interactive_elements']]


def test_the_plain_server_has_both_patches_off() -> None:
	"""Else the comparison below would compare a capture with itself."""
	from browser_use_mcp import patches
	from browser_use_mcp.config import load_config

	config = load_config(PATCHES_OFF, browser_use=False)
	for patch in patches.all_patches():
		if patch.name in ('result_adapters', 'dom_capture', 'direct_state', 'offload_state'):
			assert patches.preview(patch, config).state == 'off'
			assert patches.preview(patch, load_config({}, browser_use=False)).state == 'active'


@pytest.mark.parametrize('path', ['/rich', '/heavy'])
async def test_the_fast_state_equals_browser_uses_own_capture(mcp: Mcp, plain: Mcp, site: str, path: str) -> None:
	await mcp.ok('browser_navigate', session_id='fast', url=f'{site}{path}')
	await plain.ok('browser_navigate', session_id='plain', url=f'{site}{path}')
	fast, slow = canonical(await mcp.page_state('fast')), canonical(await plain.page_state('plain'))
	only_fast = [e for e in fast['interactive_elements'] if e not in slow['interactive_elements']]
	only_slow = [e for e in slow['interactive_elements'] if e not in fast['interactive_elements']]
	assert (only_fast, only_slow) == ([], [])
	assert fast == slow
	if path == '/rich':
		shown = texts(fast)
		for expected in (
			'Div with a click listener',
			'Span with a pointerdown listener',
			'Shadow button',
			'shadow input',
			'Inner count',
		):
			assert expected in shown, shown  # listener-only, shadow DOM and iframe elements are all there
		assert 'Hidden button' not in shown
	else:
		assert len(fast['interactive_elements']) > 500


async def test_a_dom_change_between_two_states_is_in_the_second(mcp: Mcp, site: str) -> None:
	sid = 'changes'
	await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/epoch')
	before = await mcp.page_state(sid)
	assert 'Row' not in texts(before) and before['title'] == 'Epoch'
	script = (
		"document.getElementById('rows').insertAdjacentHTML('beforeend', '<li><button>Row</button></li>');"
		"document.getElementById('count').remove(); document.title = 'Changed'; 1"
	)
	await mcp.ok('browser_evaluate', session_id=sid, expression=script)
	after = await mcp.page_state(sid)
	assert 'Row' in texts(after) and 'Count' not in texts(after) and 'Count' in texts(before)
	assert after['title'] == 'Changed' and after['tabs'][0]['title'] == 'Changed'
	# the new indices are the ones in use: the new button is clickable by the index just shown
	row = next(e['index'] for e in after['interactive_elements'] if e['text'] == 'Row')
	await mcp.ok('browser_click', session_id=sid, index=row)
	# a listener added without any DOM change is seen too (the listener scan is not cached)
	await mcp.ok(
		'browser_evaluate',
		session_id=sid,
		expression="const p = document.createElement('span'); p.textContent = 'Late listener'; document.body.append(p); 1",
	)
	assert 'Late listener' not in texts(await mcp.page_state(sid))
	await mcp.ok(
		'browser_evaluate',
		session_id=sid,
		expression="[...document.querySelectorAll('span')].at(-1).addEventListener('click', () => {}); 1",
	)
	assert 'Late listener' in texts(await mcp.page_state(sid))
