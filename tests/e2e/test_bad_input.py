"""Malformed calls get a clear is_error result; the server, the session and the disk stay intact."""

from __future__ import annotations

import json
import os
import re
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.servers import Mcp
from tests.fixtures import isolation_modes

# run with a Chromium per session and with contexts of shared Chromiums
isolation = isolation_modes()
pytestmark = pytest.mark.usefixtures('isolation')

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
	('browser_navigate', {'url': 'javascript:alert(1)'}, ('Invalid URL', 'browser_evaluate')),
	# found by fuzzing: suggested https://javascript:alert(1) and https:////127.0.0.1/, or answered with a CDP error dict
	('browser_navigate', {'url': '//127.0.0.1/x'}, ('Invalid URL', 'e.g. https://127.0.0.1/x.')),
	('browser_navigate', {'url': 'not a url'}, ('Invalid URL', 'e.g. https://example.com.')),
	('browser_navigate', {'url': 'http://256.256.256.256/'}, ('Invalid URL', 'IPv4')),
	('browser_navigate', {'url': 'http://127.0.0.1:99999/'}, ('Invalid URL', 'port')),
	('browser_evaluate', {'expression': '(() => { const a = {}; a.a = a; return a; })()'}, ('cannot be returned as JSON',)),
	('browser_evaluate', {'expression': '({s: Symbol()})'}, ('cannot be returned as JSON', 'JSON.stringify')),
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
	('browser_type', {'index': 0, 'text': 'x', 'include_state': 'yes'}, ('include_state', 'boolean')),
	('browser_go_back', {'include_state': 1}, ('include_state', 'boolean')),
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
	# found by fuzzing: answered "Sent keys: Ctrl+Foo" and nothing was pressed
	('browser_send_keys', {'keys': 'Ctrl+Foo'}, ("'Foo'", 'is not a key', 'Enter')),
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
	st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=50),
	lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
	max_leaves=8,
)

# What each argument accepts, spelled out from the documented schemas (docs/tools.md), not read
# from the server's models: (required, accepts). Types are strict: 1.0 is not an integer, true
# is not 1, null only where the schema allows it.
Accepts = Callable[[Any], bool]


def _optional(accepts: Accepts) -> Accepts:
	return lambda v: v is None or accepts(v)


def _index(v: Any) -> bool:
	return type(v) is int and v >= 0


def _boolean(v: Any) -> bool:
	return type(v) is bool


def _text(shortest: int = 0, longest: int | None = None) -> Accepts:
	return lambda v: type(v) is str and shortest <= len(v) and (longest is None or len(v) <= longest)


SHAPES: dict[str, dict[str, tuple[bool, Accepts]]] = {
	'browser_click': {
		'index': (False, _optional(_index)),
		'coordinate_x': (False, _optional(_index)),
		'coordinate_y': (False, _optional(_index)),
		'new_tab': (False, _boolean),
		'include_state': (False, _boolean),
	},
	'browser_type': {'index': (True, _index), 'text': (True, _text()), 'include_state': (False, _boolean)},
	'browser_scroll': {
		'direction': (False, lambda v: type(v) is str and v in ('up', 'down')),
		'include_state': (False, _boolean),
	},
	'browser_get_html': {'selector': (False, _optional(_text(1)))},
	'browser_switch_tab': {'tab_id': (True, _text(1, 64)), 'include_state': (False, _boolean)},
	'browser_close_tab': {'tab_id': (True, _text(1, 64)), 'include_state': (False, _boolean)},
	'browser_send_keys': {'keys': (True, _text(1, 200)), 'include_state': (False, _boolean)},
	'browser_get_state': {'include_screenshot': (False, _boolean)},
}


# Values that are valid, or nearly, for each argument, drawn three times as often as arbitrary
# JSON, so that the valid paths are exercised as much as the refusals.
NEAR: dict[str, st.SearchStrategy[Any]] = {
	'index': st.integers(-2, 40),
	'coordinate_x': st.integers(-5, 1500),
	'coordinate_y': st.integers(-5, 1000),
	'new_tab': st.booleans(),
	'include_screenshot': st.booleans(),
	'include_state': st.booleans(),
	'text': st.text(max_size=20),
	'direction': st.sampled_from(['up', 'down', 'Up', 'left', '']),
	'selector': st.sampled_from(['a', 'h1', 'body > *', '#nope', '##bad[[', '', 'a[href="/"]']),
	'tab_id': st.text(alphabet='0123456789ABCDEFabcdef', max_size=6) | st.text(max_size=70),
	'keys': st.sampled_from(['Enter', 'Escape', 'Tab', 'ArrowDown', 'Control+a', 'Shift+Tab', 'a', '+', 'x' * 201])
	| st.text(max_size=12),
	'extra': JSON,
	'session_id': st.sampled_from([CANARY, CANARY, None]),  # null: the default session
}


def _either(result: Any, ok: bool, errors: tuple[str, ...]) -> None:
	"""A success that says exactly what was done, or one of the errors this input may get."""
	if result.is_error:
		assert any(e in result.text for e in errors), f'unexpected error: {result.text[:300]}'
	else:
		assert ok, f'unexpected success: {result.text[:300]}'


def _click(a: dict[str, Any], r: Any) -> None:
	x, y, index = a.get('coordinate_x'), a.get('coordinate_y'), a.get('index')
	if (x is None) != (y is None):
		_either(r, False, ('coordinate_x and coordinate_y must be given together',))
	elif x is not None:  # coordinates win over an index
		_either(r, r.text == f'Clicked at coordinates ({x}, {y})', ('are outside the', 'Click failed', 'Click refused'))
	elif index is None:
		_either(r, False, ('Provide either index',))
	else:
		errors = (
			f'Element with index {index} not found',
			f'Element with index {index} is stale',
			f'Click on element {index} failed',
			'Click refused',
		)
		_either(r, r.text.startswith(f'Clicked element {index}'), errors)


def _type(a: dict[str, Any], r: Any) -> None:
	i = a['index']
	typed = r.text.startswith('Typed ') and r.text.endswith(f' into element {i}')
	errors = (f'Element with index {i} not found', f'Element with index {i} is stale', f'Typing into element {i} failed')
	_either(r, typed, errors)


def _get_html(a: dict[str, Any], r: Any) -> None:
	selector = a.get('selector')
	if selector is None:
		_either(r, r.text.startswith('<html'), ())
	else:
		found = r.text.startswith('<') or r.text == f'No element found for selector: {selector}'
		_either(r, found, ('Invalid CSS selector',))


def _tab(verb: str, done: str) -> Callable[[dict[str, Any], Any], None]:
	def check(a: dict[str, Any], r: Any) -> None:
		t = a['tab_id']
		_either(r, r.text.startswith(done.format(t)), ('No tab with id', 'is ambiguous', f'{verb} tab {t} failed'))

	return check


MODIFIER = r'(?i:ctrl|control|alt|option|meta|cmd|command|shift)'


def _send_keys(a: dict[str, Any], r: Any) -> None:
	"""Sent (or typed, said after the keys); refused only for modifiers then something that is no key."""
	k = a['keys']
	shortcut = re.fullmatch(rf'(?:\s*{MODIFIER}\s*\+)+(.+)', k, re.DOTALL)
	errors = (f'Sending keys {k!r} failed',) + (('is not a key',) if shortcut and len(shortcut.group(1)) > 1 else ())
	_either(r, r.text == f'Sent keys: {k}' or r.text.startswith(f'Sent keys: {k} (typed as text'), errors)


def _get_state(a: dict[str, Any], r: Any) -> None:
	_either(r, 'url' in json.loads(r.text) and (a.get('include_screenshot') or not r.images), ())


OUTCOMES: dict[str, Callable[[dict[str, Any], Any], None]] = {
	'browser_click': _click,
	'browser_type': _type,
	'browser_scroll': lambda a, r: _either(r, r.text == f'Scrolled {a.get("direction", "down")}', ()),
	'browser_get_html': _get_html,
	'browser_switch_tab': _tab('Switching to', 'Switched to tab {}: '),
	'browser_close_tab': _tab('Closing', 'Closed tab # {}, now on '),
	'browser_send_keys': _send_keys,
	'browser_get_state': _get_state,
}


def check_answer(tool: str, arguments: dict[str, Any], result: Any) -> None:
	"""What ``tool`` must answer to ``arguments``: a validation error naming every bad argument; an
	error about a session_id that is not a string; or what the tool does with valid input."""
	assert result.text, 'every call gets an answer'
	assert 'failed unexpectedly' not in result.text, f'a crash: {result.text[:300]}'
	given = {k: v for k, v in arguments.items() if k not in ('session_id', 'extra')}
	bad = [
		name
		for name, (required, accepts) in SHAPES[tool].items()
		if (name in given and not accepts(given[name])) or (required and name not in given)
	]
	if bad:
		assert result.is_error and result.text.startswith(f'Invalid arguments for {tool}: '), result.text[:300]
		for name in bad:
			assert name in result.text, f'{name} not named in {result.text[:300]}'
		return
	session_id = arguments.get('session_id')
	if session_id is not None and not isinstance(session_id, str):
		assert result.is_error and 'session_id must be a string' in result.text, result.text[:300]
		return
	OUTCOMES[tool](given, result)
	if given.get('include_state') is True and not result.is_error:  # the page state follows the usual text
		after = result.texts[1] if len(result.texts) > 1 else ''
		assert after.startswith('{') or after.startswith('Could not capture the page state'), result.texts[:2]


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
async def test_any_argument_shape_gets_its_answer_and_no_harm(mcp: Mcp, site: str, data: st.DataObject) -> None:
	tool = data.draw(st.sampled_from(sorted(SHAPES)))
	names = data.draw(st.lists(st.sampled_from([*SHAPES[tool], 'extra', 'session_id']), max_size=4, unique=True))
	arguments = {name: data.draw(st.one_of(NEAR[name], NEAR[name], NEAR[name], JSON), label=name) for name in names}
	if isinstance(arguments.get('session_id'), str):
		arguments['session_id'] = CANARY  # any string id would just open another session
	arguments.setdefault('session_id', CANARY)  # null stays null: the default session
	result = await mcp.call(tool, **arguments)
	check_answer(tool, arguments, result)
	assert psutil.pid_exists(mcp.pid)
	sessions = {s['session_id'] for s in (await mcp.ok('browser_list_sessions')).json()}
	assert CANARY in sessions, 'the session survived'
	if data.draw(st.integers(0, 9)) == 0:
		await assert_still_healthy(mcp, site)


async def test_a_page_too_large_for_one_image_says_what_to_do(mcp: Mcp, site: str) -> None:
	"""Found by fuzzing: Chromium's refusal came back as "failed unexpectedly: RuntimeError {...}"."""
	await mcp.ok('browser_navigate', session_id='tall', url=f'{site}/two')
	await mcp.ok('browser_evaluate', session_id='tall', expression="document.body.style.height = '2000000px'; 1")
	refused = await mcp.call('browser_screenshot', session_id='tall', full_page=True)
	if refused.is_error:  # a Chromium of the session's own refuses it; a shared one's context here captured it
		assert 'too large' in refused.text and 'browser_scroll' in refused.text, refused.text
		assert 'unexpectedly' not in refused.text
	else:
		assert refused.images
	shown = await mcp.ok('browser_screenshot', session_id='tall')
	assert shown.images
	await mcp.ok('browser_close_session', session_id='tall')


@pytest.fixture(scope='module')
def widgets() -> Iterator[str]:
	from harness.pages import ACTION_PAGES
	from harness.servers import html_pages

	with html_pages(ACTION_PAGES) as url:
		yield url


async def test_typing_into_what_takes_no_text_says_which_tool_does(mcp: Mcp, widgets: str) -> None:
	"""Found by fuzzing: "Typed '/etc/passwd' into element N" on a file input, a button and a select,
	and nothing happened."""
	await mcp.ok('browser_navigate', session_id='typing', url=f'{widgets}/upload')
	elements = (await mcp.page_state('typing'))['interactive_elements']
	file_input = next(e['index'] for e in elements if e['tag'] == 'input')
	button = next(e['index'] for e in elements if e['tag'] == 'button')
	refused = await mcp.call('browser_type', session_id='typing', index=file_input, text='/etc/passwd')
	assert refused.is_error and 'file input' in refused.text and 'browser_upload_file' in refused.text, refused.text
	refused = await mcp.call('browser_type', session_id='typing', index=button, text='x')
	assert refused.is_error and 'browser_click' in refused.text, refused.text
	files = await mcp.ok('browser_evaluate', session_id='typing', expression='document.getElementById("f").files.length')
	assert files.structured == {'result': 0}, files.text
	await mcp.ok('browser_navigate', session_id='typing', url=f'{widgets}/select')
	select = next(e['index'] for e in (await mcp.page_state('typing'))['interactive_elements'] if e['tag'] == 'select')
	refused = await mcp.call('browser_type', session_id='typing', index=select, text='Red')
	assert refused.is_error and 'browser_select_option' in refused.text, refused.text
	too_long = await mcp.call('browser_type', session_id='typing', index=select, text='z' * 10_001)
	assert too_long.is_error and '10000' in too_long.text.replace(',', ''), too_long.text
	await mcp.ok('browser_close_session', session_id='typing')
