"""The interaction group (select, hover, drag, wait_for), element scrolling, date fields and tool groups,
through a real server (both isolation modes) on pages served from 127.0.0.1; every check reads the
page's own state back with browser_evaluate."""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from harness.pages import ACTION_PAGES
from harness.servers import Background, Mcp, Result, html_pages, running_server
from tests.fixtures import isolation_modes

isolation = isolation_modes()  # both: a Chromium per session, and contexts of a shared one


@pytest.fixture(scope='module')
def pages() -> Iterator[str]:
	with html_pages(ACTION_PAGES) as base:
		yield base


@pytest.fixture(scope='module')
async def mcp(tmp_path_factory: pytest.TempPathFactory, isolation: str) -> AsyncIterator[Mcp]:
	async with Background(running_server(tmp_path_factory.mktemp('actions-home'), '--tools', 'all')) as server:
		yield server


SID = 'actions-test'


async def open_page(mcp: Mcp, url: str) -> dict[str, Any]:
	await mcp.ok('browser_navigate', session_id=SID, url=url)
	return await mcp.page_state(SID)


def index_of(state: dict[str, Any], text: str = '', tag: str | None = None, nth: int = 0) -> int:
	found = [e['index'] for e in state['interactive_elements'] if text in e['text'] and (tag is None or e['tag'] == tag)]
	assert len(found) > nth, f'no element {tag or ""} {text!r} in {state["interactive_elements"]}'
	return found[nth]


async def js(mcp: Mcp, expression: str) -> Any:
	return (await mcp.ok('browser_evaluate', session_id=SID, expression=expression)).structured['result']


async def test_tool_groups_choose_what_is_listed(mcp: Mcp) -> None:
	names = {t.name for t in (await mcp.client.list_tools()).tools}
	assert {'browser_hover', 'browser_select_option', 'browser_get_options', 'browser_drag', 'browser_wait_for'} <= names
	assert 'browser_navigate' in names


async def test_select_one_and_many_fires_input_and_change(mcp: Mcp, pages: str) -> None:
	state = await open_page(mcp, f'{pages}/select')
	single, multi = index_of(state, tag='select'), index_of(state, tag='select', nth=1)
	listed = (await mcp.ok('browser_get_options', session_id=SID, index=single)).json()
	assert [(o['value'], o['label'], o['disabled']) for o in listed['options']][:3] == [
		('', 'Choose', False),
		('r', 'Red', False),
		('g', 'Green', False),
	]
	assert listed['multiple'] is False and listed['options'][3]['disabled'] is True
	done = await mcp.ok('browser_select_option', session_id=SID, index=single, labels=['green'])
	assert 'Green' in done.text
	assert await js(mcp, 'document.getElementById("single").value') == 'g'
	await mcp.ok('browser_select_option', session_id=SID, index=multi, values=['1', '3'])
	assert await js(mcp, '[...document.getElementById("multi").selectedOptions].map(o => o.value)') == ['1', '3']
	assert await js(mcp, 'window.events') == ['single:input', 'single:change', 'multi:input', 'multi:change']


async def test_select_refuses_bad_input_and_changes_nothing(mcp: Mcp, pages: str) -> None:
	state = await open_page(mcp, f'{pages}/select')
	single, button = index_of(state, tag='select'), index_of(state, 'Plain button')
	for arguments, words in [
		({'index': button, 'values': ['r']}, ['index', '<button>', 'not a <select>']),
		({'index': single, 'values': ['nope']}, ['values', "'nope'", "'r' ('Red')"]),
		({'index': single, 'values': ['r', 'g']}, ['single-choice']),
		({'index': single, 'values': ['b']}, ['disabled']),
		({'index': single}, ['values, labels']),
		({'index': single, 'values': ['r'], 'labels': ['Red']}, ['exactly one']),
	]:
		result = await mcp.call('browser_select_option', session_id=SID, **arguments)
		assert result.is_error, arguments
		for word in words:
			assert word in result.text, (arguments, result.text)
	assert await js(mcp, '[document.getElementById("single").value, window.events.length]') == ['', 0]
	refused = await mcp.call('browser_get_options', session_id=SID, index=button)
	assert refused.is_error and 'not a <select>' in refused.text


async def test_aria_listboxes_and_comboboxes_are_listed_and_clicked(mcp: Mcp, pages: str) -> None:
	state = await open_page(mcp, f'{pages}/listbox')
	box, combo = index_of(state, 'Apple'), index_of(state, 'Pick a colour')
	listed = (await mcp.ok('browser_get_options', session_id=SID, index=box)).json()
	assert listed['kind'] == 'listbox' and [o['label'] for o in listed['options']] == ['Apple', 'Pear']
	await mcp.ok('browser_select_option', session_id=SID, index=box, labels=['pear'])
	assert await js(mcp, 'document.getElementById("pear").getAttribute("aria-selected")') == 'true'
	hidden = (await mcp.ok('browser_get_options', session_id=SID, index=combo)).json()
	assert [o['value'] for o in hidden['options']] == ['red', 'blue']
	await mcp.ok('browser_select_option', session_id=SID, index=combo, values=['blue'])
	assert await js(mcp, 'document.getElementById("cb").textContent') == 'Blue'
	wrong = await mcp.call('browser_select_option', session_id=SID, index=box, labels=['Kiwi'])
	assert wrong.is_error and "'Kiwi'" in wrong.text and "'Pear'" in wrong.text


async def test_clicking_a_select_names_the_tools_that_work(mcp: Mcp, pages: str) -> None:
	state = await open_page(mcp, f'{pages}/select')
	result = await mcp.call('browser_click', session_id=SID, index=index_of(state, tag='select'))
	assert result.is_error
	assert 'browser_get_options' in result.text and 'browser_select_option' in result.text
	assert 'dropdown_options' not in result.text


async def test_hover_opens_css_menus_and_fires_mouseover(mcp: Mcp, pages: str) -> None:
	state = await open_page(mcp, f'{pages}/hover')
	await mcp.ok('browser_hover', session_id=SID, index=index_of(state, 'Menu'))
	assert await js(mcp, 'getComputedStyle(document.querySelector("#menu .sub")).display') == 'block'
	await mcp.ok('browser_hover', session_id=SID, index=index_of(state, 'Hover target'))
	assert await js(mcp, 'document.getElementById("over").dataset.over') == 'yes'
	assert await js(mcp, 'getComputedStyle(document.querySelector("#menu .sub")).display') == 'none'
	# an overlay that came after the state: the pointer goes there anyway, and the reply says what it is over
	veil = 'position:fixed;inset:0;background:rgba(0,0,0,.1)'
	await js(mcp, f'document.body.insertAdjacentHTML("beforeend", \'<div id="veil" style="{veil}"></div>\')')
	covered = await mcp.ok('browser_hover', session_id=SID, index=index_of(state, 'Hover target'))
	assert '<div id=veil>' in covered.text, covered.text
	await js(mcp, 'document.getElementById("veil").remove()')
	# below the fold: scrolled into view first
	await mcp.ok('browser_hover', session_id=SID, index=index_of(state, 'Far target'))
	assert await js(mcp, '[document.getElementById("far").dataset.over, window.scrollY > 0]') == ['yes', True]


async def test_drag_reorders_a_mouse_sortable_list(mcp: Mcp, pages: str) -> None:
	state = await open_page(mcp, f'{pages}/drag')
	alpha, gamma = index_of(state, 'Alpha', 'li'), index_of(state, 'Gamma', 'li')
	done = await mcp.ok('browser_drag', session_id=SID, from_index=alpha, to_index=gamma)
	assert 'mouse' in done.text
	assert await js(mcp, '[...document.querySelectorAll("li")].map(li => li.textContent)') == ['Beta', 'Gamma', 'Alpha']


async def test_drag_drops_on_an_html5_drop_zone(mcp: Mcp, pages: str) -> None:
	state = await open_page(mcp, f'{pages}/drag')
	done = await mcp.ok(
		'browser_drag', session_id=SID, from_index=index_of(state, 'Drag source'), to_index=index_of(state, 'Drop zone')
	)
	assert 'native' in done.text
	assert await js(mcp, 'document.getElementById("zone").textContent') == 'dropped payload-42'


async def test_drag_by_coordinates_and_refusals(mcp: Mcp, pages: str) -> None:
	state = await open_page(mcp, f'{pages}/drag')
	alpha = index_of(state, 'Alpha', 'li')
	refused = await mcp.call('browser_drag', session_id=SID, from_index=alpha, to_index=alpha)
	assert refused.is_error and 'to_index' in refused.text and 'itself' in refused.text
	missing = await mcp.call('browser_drag', session_id=SID, from_index=alpha)
	assert missing.is_error and 'to_index' in missing.text
	boxes = await js(
		mcp,
		'[...document.querySelectorAll("li")].map(li => { const r = li.getBoundingClientRect(); return [r.x + 20, r.y + 10]; })',
	)
	assert await js(mcp, '[...document.querySelectorAll("li")].map(li => li.textContent)') == ['Alpha', 'Beta', 'Gamma']
	(ax, ay), _, (gx, gy) = boxes
	await mcp.ok('browser_drag', session_id=SID, from_x=int(ax), from_y=int(ay), to_x=int(gx), to_y=int(gy))
	assert await js(mcp, '[...document.querySelectorAll("li")].map(li => li.textContent)') == ['Beta', 'Gamma', 'Alpha']


async def test_wait_for_returns_as_soon_as_the_page_changes(mcp: Mcp, pages: str) -> None:
	await mcp.ok('browser_navigate', session_id=SID, url=f'{pages}/wait')
	done = await mcp.ok('browser_wait_for', session_id=SID, text='Loaded late', text_gone='Loading', timeout_ms=10000)
	waited = int(done.text.split()[1])
	assert waited < 3000, done.text
	assert await js(mcp, 'document.getElementById("late").textContent') == 'Loaded late'
	await mcp.ok('browser_wait_for', session_id=SID, selector='#late', url='/wait', timeout_ms=1000)


async def test_wait_for_keeps_waiting_across_a_navigation(mcp: Mcp, pages: str) -> None:
	await mcp.ok('browser_navigate', session_id=SID, url=f'{pages}/later')
	await mcp.ok('browser_wait_for', session_id=SID, url='/select', text='Plain button', timeout_ms=10000)
	assert await js(mcp, 'location.pathname') == '/select'


async def test_wait_for_times_out_and_refuses_bad_arguments(mcp: Mcp, pages: str) -> None:
	await mcp.ok('browser_navigate', session_id=SID, url=f'{pages}/wait')
	late = await mcp.call('browser_wait_for', session_id=SID, text='never shown', timeout_ms=300)
	assert late.is_error and "'never shown'" in late.text and '300 ms' in late.text
	for arguments, word in [
		({}, 'at least one condition'),
		({'text': 'x', 'timeout_ms': -1}, 'timeout_ms'),
		({'text': 'x', 'timeout_ms': 10**6}, 'timeout_ms'),
		({'selector': 'a[', 'timeout_ms': 100}, 'not a valid CSS selector'),
	]:
		result = await mcp.call('browser_wait_for', session_id=SID, **arguments)
		assert result.is_error and word in result.text, (arguments, result.text)


async def test_scroll_with_an_index_scrolls_its_container_only(mcp: Mcp, pages: str) -> None:
	state = await open_page(mcp, f'{pages}/scroll')
	row = index_of(state, 'Row 1')
	done = await mcp.ok('browser_scroll', session_id=SID, index=row, direction='down', amount=200)
	assert 'div#box' in done.text
	assert await js(mcp, '[document.getElementById("box").scrollTop, window.scrollY]') == [200, 0]
	await mcp.ok('browser_scroll', session_id=SID, index=row, direction='up', amount=50)
	assert await js(mcp, 'document.getElementById("box").scrollTop') == 150
	await mcp.ok('browser_scroll', session_id=SID, direction='down')  # no index: the page, as before
	assert await js(mcp, '[document.getElementById("box").scrollTop, window.scrollY > 0]') == [150, True]


async def test_typing_into_date_fields_sets_their_iso_value_or_says_the_form(mcp: Mcp, pages: str) -> None:
	state = await open_page(mcp, f'{pages}/dates')
	inputs = [e['index'] for e in state['interactive_elements'] if e['tag'] == 'input']
	d, t, dt, m, w, text = inputs
	for index, typed, expected in [
		(d, '2011-01-06', '2011-01-06'),
		(d, '6 Jan 2011', '2011-01-06'),
		(d, '13/01/2011', '2011-01-13'),
		(t, '3:45 PM', '15:45'),
		(dt, '2011-01-06 15:45', '2011-01-06T15:45'),
		(m, 'Jan 2011', '2011-01'),
		(w, '2011-W01', '2011-W01'),
	]:
		await mcp.ok('browser_type', session_id=SID, index=index, text=typed)
		value = await js(mcp, f'document.querySelectorAll("input")[{inputs.index(index)}].value')
		assert value == expected, (typed, value)
	ambiguous = await mcp.call('browser_type', session_id=SID, index=d, text='01/06/2011')
	assert ambiguous.is_error and 'YYYY-MM-DD' in ambiguous.text
	nonsense = await mcp.call('browser_type', session_id=SID, index=d, text='soon')
	assert nonsense.is_error and 'YYYY-MM-DD' in nonsense.text
	assert await js(mcp, 'document.getElementById("d").value') == '2011-01-13'  # unchanged by the refusals
	assert 'd' in await js(mcp, 'window.changes')
	# browser_send_keys already takes combinations: select all, then delete
	await mcp.ok('browser_type', session_id=SID, index=text, text='hello')
	await mcp.ok('browser_send_keys', session_id=SID, keys='Control+a')
	await mcp.ok('browser_send_keys', session_id=SID, keys='Backspace')
	assert await js(mcp, 'document.getElementById("text").value') == ''


async def files_read(mcp: Mcp, count: int) -> Any:
	"""The page's ``window.got`` once it holds ``count`` files (at most 5 s): its change handler
	reads each file's text asynchronously, after the change event the tool caused."""
	wait = f"""new Promise(done => {{
		const started = Date.now();
		const check = () => (window.got.length >= {count} || Date.now() - started > 5000) ? done(window.got) : setTimeout(check, 20);
		check();
	}})"""
	return await js(mcp, wait)


async def upload(mcp: Mcp, **arguments: Any) -> Result:
	"""browser_upload_file (its argument ``name`` is also the name of Mcp.call's first parameter)."""
	raw = await mcp.client.call_tool('browser_upload_file', {'session_id': SID, **arguments}, read_timeout_seconds=60)
	texts = [c.text for c in raw.content if getattr(c, 'type', None) == 'text']
	return Result(raw, texts[0] if texts else '', bool(raw.is_error), [], texts)


async def test_upload_sends_inline_content_and_files_of_the_session_only(mcp: Mcp, pages: str) -> None:
	import base64

	state = await open_page(mcp, f'{pages}/upload')
	field = index_of(state, tag='input')
	content = base64.b64encode(b'hello upload').decode()
	done = await upload(mcp, index=field, content_base64=content, name='note.txt')
	assert not done.is_error and 'note.txt' in done.text, done.text
	assert await files_read(mcp, 1) == [['f', 'note.txt', 'hello upload']]
	# the file it saved is in the session's files directory: chosen again by its path, through the label
	label = index_of(state, 'Attach')
	again = await upload(mcp, index=label, path='uploads/note.txt')
	assert not again.is_error, again.text
	assert (await files_read(mcp, 2))[1] == ['hidden', 'note.txt', 'hello upload']
	for arguments, words in [
		({'index': field, 'path': '../../etc/passwd'}, ['path', 'outside']),
		({'index': field, 'path': '/etc/passwd'}, ['path', 'outside']),
		({'index': field, 'path': 'missing.txt'}, ['path', 'not a file']),
		({'index': field, 'content_base64': content, 'name': '../x'}, ['name']),
		({'index': field, 'content_base64': '***', 'name': 'x.txt'}, ['content_base64', 'base64']),
		({'index': field, 'content_base64': 'A' * (3 * 1024 * 1024), 'name': 'big.bin'}, ['content_base64', '2 MiB']),
		({'index': field}, ['exactly one']),
		({'index': index_of(state, 'Not an input'), 'path': 'uploads/note.txt'}, ['index', 'not a file input']),
	]:
		result = await upload(mcp, **arguments)
		assert result.is_error, arguments
		for word in words:
			assert word in result.text, (arguments, result.text)
	assert await js(mcp, 'window.got.length') == 2
	clicked = await mcp.call('browser_click', session_id=SID, index=field)
	assert clicked.is_error and 'browser_upload_file' in clicked.text


def test_refusals_of_a_core_server_say_how_to_get_the_tools() -> None:
	from types import SimpleNamespace

	from browser_use_mcp.config import ServerConfig
	from browser_use_mcp.errors import BrowserActionFailed
	from browser_use_mcp.tools.interaction import _check_click

	core = SimpleNamespace(config=ServerConfig())
	why = {'validation_error': 'Cannot click on <select> elements. Use dropdown_options(index=3) action instead.'}
	with pytest.raises(BrowserActionFailed, match=r'browser_get_options\{index: 3\}.*--tools core,interaction'):
		_check_click(core, why, 3)
	everything = SimpleNamespace(config=ServerConfig(tools=('all',)))
	with pytest.raises(BrowserActionFailed) as refused:
		_check_click(everything, why, 3)
	assert '--tools' not in str(refused.value) and 'dropdown_options' not in str(refused.value)


@pytest.mark.parametrize(
	('kind', 'text', 'value'),
	[
		('date', '2011-1-6', '2011-01-06'),
		('date', 'January 6, 2011', '2011-01-06'),
		('date', '06.01.2011', None),  # ambiguous: raises
		('date', '31/02/2011', None),
		('time', '12:05 am', '00:05'),
		('time', '24:00', None),
		('datetime-local', '2011-01-06T09:30', '2011-01-06T09:30'),
		('month', '02/2011', '2011-02'),
		('week', '2011W5', '2011-W05'),
		('week', '2011-W54', None),
	],
)
def test_date_forms(kind: str, text: str, value: str | None) -> None:
	from browser_use_mcp.tools.interaction import iso_value

	if text == '06.01.2011':
		with pytest.raises(ValueError, match='day/month'):
			iso_value(kind, text)
	else:
		assert iso_value(kind, text) == value


async def test_a_huge_argument_is_never_echoed_whole(mcp: Mcp, pages: str) -> None:
	"""Found by fuzzing: a 100 KB value came back whole in the reply of select_option, wait_for and
	get_html (every other tool cut its echo at 200 characters), into the model's context."""
	huge = 'q' * 100_000
	await mcp.ok('browser_navigate', session_id='echo', url=f'{pages}/select')
	select = next(e['index'] for e in (await mcp.page_state('echo'))['interactive_elements'] if e['tag'] == 'select')
	replies = [
		await mcp.call('browser_select_option', session_id='echo', index=select, values=[huge]),
		await mcp.call('browser_wait_for', session_id='echo', text_gone=huge, timeout_ms=100),
		await mcp.call('browser_wait_for', session_id='echo', selector='#' + huge, timeout_ms=100),
		await mcp.call('browser_get_html', session_id='echo', selector='#' + huge),
	]
	for reply in replies:
		assert len(reply.text) < 2_000 and re.search(r'100,00[01] characters', reply.text), reply.text[:300]
	await mcp.ok('browser_close_session', session_id='echo')


async def test_send_keys_refuses_a_shortcut_of_no_key_and_says_when_it_typed_text(mcp: Mcp, pages: str) -> None:
	"""Found by fuzzing: "Ctrl+Foo" answered "Sent keys: Ctrl+Foo" and nothing was pressed (browser-use sends a
	key event named Foo that no page acts on). Keys browser-use presses keep working; a string that is no key
	name is typed, as browser-use does, and the reply says so."""
	await open_page(mcp, f'{pages}/dates')
	await js(
		mcp,
		"""(() => { const f = document.getElementById('text'); f.value = ''; f.focus(); window.pressed = [];
		document.addEventListener('keydown', e => ['Control', 'Shift'].includes(e.key) ||
			window.pressed.push((e.ctrlKey ? 'Control+' : '') + (e.shiftKey ? 'Shift+' : '') + e.key), true);
		return 1; })()""",
	)
	for keys, words in [
		('Ctrl+Foo', ["'Foo'", 'is not a key', 'nothing was sent', 'Enter', 'Control+a', 'Shift+Tab']),
		('Control+NotAKey', ["'NotAKey'", 'is not a key']),
		('Control+Del', ["'Del'", "Did you mean 'Control+Delete'?"]),
	]:
		refused = await mcp.call('browser_send_keys', session_id=SID, keys=keys)
		assert refused.is_error, refused.text
		for word in words:
			assert word in refused.text, (word, refused.text)
	assert await js(mcp, 'window.pressed') == [], 'a refused shortcut sent nothing'

	await mcp.ok('browser_send_keys', session_id=SID, keys='x')
	for keys in ('Control+a', 'Shift+Tab', 'Tab', 'Escape', 'ArrowDown', 'PageDown', 'Enter', 'Control+Insert'):
		assert (await mcp.ok('browser_send_keys', session_id=SID, keys=keys)).text == f'Sent keys: {keys}'
	await js(mcp, "document.getElementById('text').focus(), 1")  # Tab moved the focus on
	typed = await mcp.ok('browser_send_keys', session_id=SID, keys='NotAKey')
	assert typed.text.startswith('Sent keys: NotAKey (typed as text, one character at a time'), typed.text
	pressed = await js(mcp, 'window.pressed')
	assert pressed[:9] == ['x', 'Control+a', 'Shift+Tab', 'Tab', 'Escape', 'ArrowDown', 'PageDown', 'Enter', 'Control+Insert']
	assert len(pressed) == 9 + len('NotAKey'), pressed  # then a key for each character typed
	assert await js(mcp, "document.getElementById('text').value") == 'xNotAKey'


def test_send_keys_reads_keys_as_browser_use_does() -> None:
	"""The tool refuses a shortcut from its copy of how browser-use's send_keys reads keys: a browser-use
	that reads them otherwise fails here, before the tool refuses keys it would press."""
	from browser_use.browser.watchdogs.default_action_watchdog import DefaultActionWatchdog

	from browser_use_mcp.tools.interaction import KEY_ALIASES, MODIFIERS, PRESSED_ALONE

	tree = ast.parse(textwrap.dedent(inspect.getsource(DefaultActionWatchdog.on_SendKeysEvent)))
	tables = {
		target.id: ast.literal_eval(node.value)
		for node in ast.walk(tree)
		if isinstance(node, ast.Assign)
		for target in node.targets
		if isinstance(target, ast.Name) and target.id in ('key_aliases', 'modifier_map', 'special_keys')
	}
	assert tables['key_aliases'] == KEY_ALIASES
	assert set(tables['modifier_map']) == MODIFIERS
	assert tables['special_keys'] == PRESSED_ALONE
