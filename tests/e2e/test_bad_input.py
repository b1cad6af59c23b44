"""Malformed calls get a clear is_error result; the server, the session and the disk stay intact."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import psutil
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import Mcp

CANARY = 'canary'


def _closed_port() -> int:
	with socket.socket() as sock:
		sock.bind(('127.0.0.1', 0))
		return sock.getsockname()[1]


CLOSED = f'http://127.0.0.1:{_closed_port()}/'

# (tool, arguments, words the error message must contain)
CORPUS: list[tuple[str, dict, tuple[str, ...]]] = [
	('browser_nope', {}, ('Unknown tool', 'browser_navigate')),
	('browser_navigate', {}, ('url', 'required')),
	('browser_navigate', {'url': 5}, ('url', 'string')),
	('browser_navigate', {'url': ''}, ('url',)),
	('browser_navigate', {'url': 'example.com'}, ('Invalid URL', 'https://')),
	('browser_navigate', {'url': 'javascript:alert(1)'}, ('Invalid URL',)),
	('browser_navigate', {'url': CLOSED}, ('failed', 'ERR_CONNECTION_REFUSED', 'reachable')),
	('browser_navigate', {'url': 'x' * 100_000}, ('Invalid URL',)),
	('browser_navigate', {'url': CLOSED, 'new_tab': 'yes'}, ('new_tab', 'boolean')),
	('browser_click', {}, ('index', 'coordinate_x')),
	('browser_click', {'index': -1}, ('index', 'greater than or equal')),
	('browser_click', {'index': 9999}, ('Element with index 9999 not found', 'browser_get_state')),
	('browser_click', {'index': '3'}, ('index', 'integer')),
	('browser_click', {'index': 1.5}, ('index', 'integer')),
	('browser_click', {'index': True}, ('index', 'integer')),
	('browser_click', {'coordinate_x': 10}, ('coordinate_y',)),
	('browser_click', {'coordinate_x': 10, 'coordinate_y': 2**40}, ('outside', 'viewport')),
	('browser_type', {'index': 9999, 'text': 'x'}, ('Element with index 9999 not found',)),
	('browser_type', {'index': 0}, ('text', 'required')),
	('browser_type', {'text': 'x'}, ('index', 'required')),
	('browser_scroll', {'direction': 'sideways'}, ('direction', "'up' or 'down'")),
	('browser_get_state', {'include_screenshot': 'no'}, ('include_screenshot', 'boolean')),
	('browser_get_html', {'selector': '##bad[['}, ('Invalid CSS selector',)),
	('browser_get_html', {'selector': ''}, ('selector',)),
	('browser_switch_tab', {'tab_id': 'ZZZZ'}, ('No tab with id', 'browser_list_tabs')),
	('browser_switch_tab', {'tab_id': ''}, ('tab_id',)),
	('browser_close_tab', {'tab_id': 'ZZZZ'}, ('No tab with id',)),
	('browser_close_tab', {}, ('tab_id', 'required')),
	('browser_evaluate', {'expression': 'throw new Error("boom")'}, ('JavaScript error', 'boom')),
	('browser_evaluate', {'expression': 'document.querySelector(")")'}, ('JavaScript error',)),
	('browser_evaluate', {'expression': ''}, ('expression',)),
	('browser_send_keys', {'keys': ''}, ('keys',)),
	('browser_send_keys', {'keys': 'k' * 5000}, ('keys',)),
	('retry_with_browser_use_agent', {'task': 'x', 'max_steps': 0}, ('max_steps',)),
	('retry_with_browser_use_agent', {'task': 'x', 'allowed_domains': 'a.com'}, ('allowed_domains', 'list')),
	('browser_extract_content', {}, ('query', 'required')),
	('browser_close_session', {}, ('session_id', 'required')),
	('browser_close_session', {'session_id': 'never-existed'}, ('not found', 'browser_list_sessions')),
	('browser_close_session', {'session_id': 7}, ('session_id', 'string')),
	('browser_create_session', {'session_id': ''}, ('session_id', 'empty')),
	('browser_navigate', {'url': 'about:blank', 'session_id': ''}, ('session_id', 'empty')),
	('browser_navigate', {'url': 'about:blank', 'session_id': 'x' * 5000}, ('session_id', '256')),
	('browser_navigate', {'url': 'about:blank', 'session_id': 'a\x00b'}, ('session_id', 'control')),
	('browser_navigate', {'url': 'about:blank', 'session_id': 12}, ('session_id', 'string')),
	('browser_navigate', {'url': 'about:blank', 'session_id': ['a']}, ('session_id', 'string')),
]


def outside_files(home: Path) -> list[str]:
	"""Files the server wrote anywhere but its own directories."""
	allowed = ('state/', '.config/browseruse/', 'Downloads/browser-use-mcp', '.browser-use-mcp')
	out = []
	for root, _dirs, files in os.walk(home):
		for name in files:
			rel = str(Path(root, name).relative_to(home))
			if not rel.startswith(allowed):
				out.append(rel)
	return out


@pytest.fixture(scope='module', autouse=True)
async def canary(mcp: Mcp, site: str):
	await mcp.ok('browser_navigate', session_id=CANARY, url=f'{site}/two')
	yield
	await mcp.call('browser_close_all')


async def assert_still_healthy(mcp: Mcp, site: str) -> None:
	assert psutil.pid_exists(mcp.pid)
	state = (await mcp.ok('browser_get_state', session_id=CANARY)).json()
	assert state['url']
	sessions = {s['session_id'] for s in (await mcp.ok('browser_list_sessions')).json()}
	assert CANARY in sessions, 'the session survived'


@pytest.mark.parametrize(('tool', 'arguments', 'words'), CORPUS, ids=[f'{t}-{i}' for i, (t, _a, _w) in enumerate(CORPUS)])
async def test_bad_input_gets_a_useful_error(mcp: Mcp, site: str, tool: str, arguments: dict, words: tuple[str, ...]) -> None:
	if tool not in ('browser_close_session', 'browser_create_session', 'browser_nope') and 'session_id' not in arguments:
		arguments = {**arguments, 'session_id': CANARY}
	result = await mcp.call(tool, **arguments)
	assert result.is_error, f'{tool}({arguments}) should fail, got {result.text[:200]}'
	for word in words:
		assert word.lower() in result.text.lower(), f'{word!r} not in {result.text!r}'
	await assert_still_healthy(mcp, site)


async def test_hostile_session_ids_stay_inside_the_servers_directories(mcp: Mcp, site: str) -> None:
	hostile = ['../../x', '/etc/passwd', '..', '.', 'C:\\Windows\\x', ' ', 'ünï©ødé-🙂', '$(rm -rf ~)', '%2e%2e%2f', 'x' * 256]
	for sid in hostile:
		result = await mcp.ok('browser_navigate', session_id=sid, url='about:blank')
		assert result.text == 'Navigated to: about:blank'
	listed = {s['session_id'] for s in (await mcp.ok('browser_list_sessions')).json()}
	assert set(hostile) <= listed
	assert outside_files(mcp.home) == []
	assert not Path('/x').exists() and not (mcp.home.parent / 'x').exists()
	for sid in hostile:
		await mcp.ok('browser_close_session', session_id=sid)
	await assert_still_healthy(mcp, site)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(session_id=st.one_of(st.text(max_size=300), st.integers(), st.none(), st.lists(st.text(max_size=3), max_size=2)))
async def test_any_session_id_is_answered_without_harm(mcp: Mcp, site: str, session_id: object) -> None:
	"""Closing is the cheapest call that resolves an id: every id gets an answer, never a crash."""
	result = await mcp.call('browser_close_session', session_id=session_id)
	assert result.is_error and result.text
	assert psutil.pid_exists(mcp.pid)


JSON = st.recursive(
	st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=50),
	lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
	max_leaves=8,
)
SHAPED_TOOLS = {
	'browser_click': ['index', 'coordinate_x', 'coordinate_y', 'new_tab'],
	'browser_type': ['index', 'text'],
	'browser_scroll': ['direction'],
	'browser_get_html': ['selector'],
	'browser_switch_tab': ['tab_id'],
	'browser_close_tab': ['tab_id'],
	'browser_send_keys': ['keys'],
	'browser_get_state': ['include_screenshot'],
}


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
async def test_any_argument_shape_is_answered_without_harm(mcp: Mcp, site: str, data: st.DataObject) -> None:
	tool = data.draw(st.sampled_from(sorted(SHAPED_TOOLS)))
	keys = st.sampled_from([*SHAPED_TOOLS[tool], 'extra', 'session_id'])
	arguments = data.draw(st.dictionaries(keys, JSON, max_size=4))
	if 'session_id' in arguments and arguments['session_id'] != CANARY:
		arguments['session_id'] = CANARY if isinstance(arguments['session_id'], str) else arguments['session_id']
	arguments.setdefault('session_id', CANARY)
	result = await mcp.call(tool, **arguments)
	assert result.text, 'every call gets an answer'
	if not result.is_error:
		assert tool in ('browser_get_state', 'browser_scroll', 'browser_get_html', 'browser_click', 'browser_send_keys', 'browser_type')
	assert psutil.pid_exists(mcp.pid)
	if data.draw(st.integers(0, 9)) == 0:
		await assert_still_healthy(mcp, site)
