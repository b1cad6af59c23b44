"""include_state: the tools that change the page can return the page state after their action.

With include_state true, the result's second text block is what a browser_get_state right after
would return (url, title, interactive elements), and its indices are the session's current ones.
Without it, the result is the one text block it always was.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any

import pytest

from browser_use_mcp.tools.base import Reply
from browser_use_mcp.tools.common import with_page_state
from harness.servers import Mcp

# each tool that takes include_state: a page to start from, and the arguments of two calls of it
# (the first without include_state, the second with it), with the text each must answer
Setup = Callable[[Mcp, str, str], Awaitable[tuple[dict[str, Any], str, dict[str, Any], str]]]


@pytest.fixture(autouse=True)
async def clean(mcp: Mcp):
	yield
	await mcp.call('browser_close_all')


def by_text(page: dict[str, Any]) -> dict[str, int]:
	return {e['text'] or e.get('placeholder', ''): e['index'] for e in page['interactive_elements']}


async def tab_ids(mcp: Mcp, sid: str) -> list[str]:
	return [t['tab_id'] for t in (await mcp.ok('browser_list_tabs', session_id=sid)).json()]


async def navigate(mcp: Mcp, sid: str, site: str) -> tuple[dict, str, dict, str]:
	return {'url': f'{site}/two'}, f'Navigated to: {site}/two', {'url': f'{site}/epoch'}, f'Navigated to: {site}/epoch'


async def click(mcp: Mcp, sid: str, site: str) -> tuple[dict, str, dict, str]:
	await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/epoch')
	e = by_text(await mcp.page_state(sid))
	return {'index': e['Add row']}, f'Clicked element {e["Add row"]}', {'index': e['Add row']}, f'Clicked element {e["Add row"]}'


async def type_text(mcp: Mcp, sid: str, site: str) -> tuple[dict, str, dict, str]:
	await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/epoch')
	i = by_text(await mcp.page_state(sid))['your name']
	one, two = {'index': i, 'text': 'one'}, {'index': i, 'text': 'two'}
	return one, f"Typed 'one' into element {i}", two, f"Typed 'two' into element {i}"


async def send_keys(mcp: Mcp, sid: str, site: str) -> tuple[dict, str, dict, str]:
	await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/form')
	return {'keys': 'Tab'}, 'Sent keys: Tab', {'keys': 'Tab'}, 'Sent keys: Tab'


async def scroll(mcp: Mcp, sid: str, site: str) -> tuple[dict, str, dict, str]:
	await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/long')
	return {}, 'Scrolled down', {'direction': 'down'}, 'Scrolled down'


async def go_back(mcp: Mcp, sid: str, site: str) -> tuple[dict, str, dict, str]:
	for path in ('/', '/two', '/epoch'):
		await mcp.ok('browser_navigate', session_id=sid, url=f'{site}{path}')
	return {}, 'Navigated back', {}, 'Navigated back'


async def switch_tab(mcp: Mcp, sid: str, site: str) -> tuple[dict, str, dict, str]:
	await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/epoch')
	await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/', new_tab=True)
	first, second = await tab_ids(mcp, sid)
	return (
		{'tab_id': first},
		f'Switched to tab {first}: {site}/epoch',
		{'tab_id': second},
		f'Switched to tab {second}: {site}/',
	)


async def close_tab(mcp: Mcp, sid: str, site: str) -> tuple[dict, str, dict, str]:
	await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/epoch')
	await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/two', new_tab=True)
	await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/', new_tab=True)
	_first, second, third = await tab_ids(mcp, sid)
	return {'tab_id': third}, f'Closed tab # {third}, now on ', {'tab_id': second}, f'Closed tab # {second}, now on '


TOOLS: dict[str, Setup] = {
	'browser_navigate': navigate,
	'browser_click': click,
	'browser_type': type_text,
	'browser_send_keys': send_keys,
	'browser_scroll': scroll,
	'browser_go_back': go_back,
	'browser_switch_tab': switch_tab,
	'browser_close_tab': close_tab,
}


def same_text(text: str, expected: str) -> bool:
	"""The reply's text is the expected one (for "now on <url>", whichever tab browser-use focuses)."""
	return text.startswith(expected) if expected.endswith('now on ') else text == expected


def shown(page: dict[str, Any]) -> tuple[str, str, list[dict[str, Any]]]:
	return page['url'], page['title'], page['interactive_elements']


@pytest.mark.parametrize('tool', list(TOOLS))
async def test_the_state_after_the_action_is_what_get_state_says_next(mcp: Mcp, site: str, tool: str) -> None:
	sid = f'with-state-{tool}'
	plain_args, plain_text, with_args, with_text = await TOOLS[tool](mcp, sid, site)

	plain = await mcp.ok(tool, session_id=sid, **plain_args)
	assert plain.texts == [plain.text], 'without include_state: one text block, as before'
	assert same_text(plain.text, plain_text)

	reply = await mcp.ok(tool, session_id=sid, include_state=True, **with_args)
	assert same_text(reply.text, with_text), 'the first block is the text it always was'
	assert len(reply.texts) == 2 and not reply.images and reply.structured is None
	after = json.loads(reply.texts[1])
	assert shown(after) == shown(await mcp.page_state(sid))


async def test_indices_of_an_included_state_are_the_current_ones(mcp: Mcp, site: str) -> None:
	sid = 'usable'
	await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/two')  # something to go back to
	opened = await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/epoch', include_state=True)
	e = by_text(json.loads(opened.texts[1]))
	added = await mcp.ok('browser_click', session_id=sid, index=e['Add row'], include_state=True)
	row = by_text(json.loads(added.texts[1]))['Row']  # only in the state the click returned
	await mcp.ok('browser_click', session_id=sid, index=row)
	await mcp.ok('browser_click', session_id=sid, index=e['Replace me'], include_state=True)
	assert (await mcp.call('browser_click', session_id=sid, index=e['Replace me'])).is_error, 'stale after the replace'
	clicks = await mcp.ok('browser_evaluate', session_id=sid, expression='sessionStorage.getItem("clicks")')
	assert json.loads(clicks.text).split() == ['add', 'row', 'replace']

	back = await mcp.ok('browser_go_back', session_id=sid, include_state=True)
	two = json.loads(back.texts[1])
	assert two['title'] == 'Page Two'
	r = await mcp.call('browser_click', session_id=sid, index=e['Count'])  # the state of /two replaced that of /epoch
	assert r.is_error and r.text.startswith(f'Element with index {e["Count"]} not found in the last browser_get_state')
	valid = sorted(el['index'] for el in two['interactive_elements'])
	assert f'Valid indices now: {valid[0]}-{valid[-1]}.' in r.text


async def test_the_five_step_workflow_takes_three_calls(mcp: Mcp, site: str) -> None:
	"""navigate, get_state, click, get_state, go_back: the two get_state calls are folded in."""
	sid = 'workflow'
	home = await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/', include_state=True)
	link = by_text(json.loads(home.texts[1]))['Go to two']
	two = await mcp.ok('browser_click', session_id=sid, index=link, include_state=True)
	assert json.loads(two.texts[1])['title'] == 'Page Two'
	back = await mcp.ok('browser_go_back', session_id=sid, include_state=True)
	page = json.loads(back.texts[1])
	assert (page['url'], page['title']) == (f'{site}/', 'Home Page')
	assert 'Go to two' in by_text(page)


async def test_a_state_that_cannot_be_captured_leaves_the_action_a_success() -> None:
	"""The action has happened: its reply stays a success and the second block says what went wrong."""

	class Broken:
		agent_focus_target_id = 'T1'
		event_bus = None  # no watchdog either: the state is asked of the session, whether direct_state is applied or not
		_dom_watchdog = None

		async def get_or_create_cdp_session(self, **_: Any) -> Any:
			raise RuntimeError('no page')

		async def get_browser_state_summary(self, **_: Any) -> Any:
			raise RuntimeError('the browser went away')

	reply = await with_page_state(SimpleNamespace(browser_session=Broken(), page_epoch=None), Reply('Scrolled down'))
	assert reply.text == 'Scrolled down'
	assert reply.page_state == (
		'Could not capture the page state: the browser went away. Call browser_get_state before using element indices.'
	)
