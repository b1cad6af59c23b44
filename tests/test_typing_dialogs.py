"""Issue #26, the rest: typing that leaves autocompletes open, and JavaScript dialogs held for the
caller to answer. Through a real server (both isolation modes) on pages served from 127.0.0.1; every
check reads the page's own state back with browser_evaluate."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from harness.servers import Background, Mcp, html_pages, running_server
from tests.fixtures import isolation_modes

isolation = isolation_modes()

PAGES = {
	# opens on input, closes on blur: the behaviour of jQuery UI's autocomplete (without jQuery)
	'/autocomplete': """<label>City <input id="city" autocomplete="off"></label>
<ul id="menu" role="listbox" style="display:none"></ul>
<button id="other">Elsewhere</button>
<script>
const cities = ['Paris', 'Parma', 'Prague', 'Oslo'];
const city = document.getElementById('city'), menu = document.getElementById('menu');
window.log = [];
city.addEventListener('input', () => {
	window.log.push('input');
	const hits = cities.filter(c => city.value && c.toLowerCase().startsWith(city.value.toLowerCase()));
	menu.innerHTML = hits.map(c => '<li role="option">' + c + '</li>').join('');
	menu.style.display = hits.length ? 'block' : 'none';
});
city.addEventListener('blur', () => { window.log.push('blur'); menu.style.display = 'none'; });
city.addEventListener('change', () => window.log.push('change'));
</script>""",
	'/form': """<input id="name" value="from html"> <textarea id="bio"></textarea>
<input id="pw" type="password"> <input id="pw2" type="password">
<label><input id="agree" type="checkbox" checked> Agree</label> <label><input id="news" type="checkbox"> News</label>
<label><input type="radio" name="r" id="r1"> One</label> <label><input type="radio" name="r" id="r2" checked> Two</label>
<select id="colour"><option>Red</option><option selected>Green</option></select>
<select id="many" multiple size="3"><option selected>A</option><option>B</option><option selected>C</option></select>
<button id="off" disabled>Disabled</button> <button id="menu" aria-expanded="false">Menu</button>
<div role="checkbox" aria-checked="mixed" tabindex="0">Some</div>
<script>document.getElementById('name').value = 'typed by script'; document.getElementById('bio').value = 'hello';
document.getElementById('pw').value = 'secret-1234';</script>""",
	'/plain': """<a href="/form">Form</a> <button>Go</button>""",
	'/dialogs': """<button id="a" onclick="alert('Hello there'); this.dataset.after = 'yes'">Alert</button>
<button id="c" onclick="window.confirmed = confirm('Delete it?')">Confirm</button>
<button id="p" onclick="window.answer = prompt('Your name?', 'nobody')">Prompt</button>
<button id="leave" onclick="window.onbeforeunload = (e) => { e.preventDefault(); e.returnValue = ''; }">Guard</button>
<button id="later" onclick="setTimeout(() => { alert('Later'); window.late = 'answered'; }, 400)">Later</button>""",
}


@pytest.fixture(scope='module')
def pages() -> Iterator[str]:
	with html_pages(PAGES) as base:
		yield base


@pytest.fixture(scope='module')
async def mcp(tmp_path_factory: pytest.TempPathFactory, isolation: str) -> AsyncIterator[Mcp]:
	home = tmp_path_factory.mktemp('typing-home')
	async with Background(running_server(home, '--tools', 'all', '--dialogs', 'hold')) as server:
		yield server


SID = 'typing-test'


async def open_page(mcp: Mcp, url: str, session: str = SID) -> dict[str, Any]:
	await mcp.ok('browser_navigate', session_id=session, url=url)
	return await mcp.page_state(session)


def index_of(state: dict[str, Any], tag: str, nth: int = 0, text: str = '') -> int:
	found = [e['index'] for e in state['interactive_elements'] if e['tag'] == tag and text in e['text']]
	assert len(found) > nth, f'no element {tag} in {state["interactive_elements"]}'
	return found[nth]


async def js(mcp: Mcp, expression: str, session: str = SID) -> Any:
	return (await mcp.ok('browser_evaluate', session_id=session, expression=expression)).structured['result']


async def test_typing_leaves_an_autocomplete_open(mcp: Mcp, pages: str) -> None:
	state = await open_page(mcp, f'{pages}/autocomplete')
	field = index_of(state, 'input')
	done = await mcp.ok('browser_type', session_id=SID, index=field, text='Par')
	assert 'left it' not in done.text
	shown = await js(mcp, '[menu.style.display, [...menu.children].map(li => li.textContent), window.log.includes("blur")]')
	assert shown == ['block', ['Paris', 'Parma'], False]
	assert await js(mcp, 'document.activeElement.id') == 'city'
	# the suggestions are elements of the next state, to be clicked
	state = await mcp.page_state(SID)
	assert any(e['text'] == 'Parma' for e in state['interactive_elements']) or 'Parma' in str(state)


async def test_typing_with_blur_leaves_the_field_as_a_user_would(mcp: Mcp, pages: str) -> None:
	state = await open_page(mcp, f'{pages}/autocomplete')
	done = await mcp.ok('browser_type', session_id=SID, index=index_of(state, 'input'), text='Os', blur=True)
	assert 'left it' in done.text
	assert await js(mcp, '[city.value, menu.style.display, window.log.includes("blur"), document.activeElement === city]') == [
		'Os',
		'none',
		True,
		False,
	]


async def test_a_held_alert_is_told_shown_and_answered(mcp: Mcp, pages: str) -> None:
	state = await open_page(mcp, f'{pages}/dialogs')
	clicked = await mcp.ok('browser_click', session_id=SID, index=index_of(state, 'button', text='Alert'))
	told = ' '.join(clicked.texts)
	assert 'alert dialog' in told and 'Hello there' in told and 'browser_handle_dialog' in told
	shown = await mcp.page_state(SID)
	assert shown['dialog'] == {'type': 'alert', 'message': 'Hello there', 'url': f'{pages}/dialogs'}
	blocked = await mcp.call('browser_evaluate', session_id=SID, expression='1 + 1')  # the page runs no script
	assert blocked.is_error and 'alert dialog is open' in blocked.text and 'browser_handle_dialog' in blocked.text
	answered = await mcp.ok('browser_handle_dialog', session_id=SID, accept=True)
	assert 'Hello there' in answered.text and 'accepted' in answered.text
	assert await js(mcp, 'document.getElementById("a").dataset.after') == 'yes'
	assert 'dialog' not in await mcp.page_state(SID)
	none = await mcp.call('browser_handle_dialog', session_id=SID, accept=True)
	assert none.is_error and 'No dialog is open' in none.text


async def test_confirm_and_prompt_get_the_callers_answer(mcp: Mcp, pages: str) -> None:
	state = await open_page(mcp, f'{pages}/dialogs')
	await mcp.ok('browser_click', session_id=SID, index=index_of(state, 'button', text='Confirm'))
	assert (await mcp.page_state(SID))['dialog']['type'] == 'confirm'
	wrong = await mcp.call('browser_handle_dialog', session_id=SID, accept=True, prompt_text='x')
	assert wrong.is_error and 'prompt_text' in wrong.text
	await mcp.ok('browser_handle_dialog', session_id=SID, accept=False)
	assert await js(mcp, 'window.confirmed') is False
	await mcp.ok('browser_click', session_id=SID, index=index_of(state, 'button', text='Prompt'))
	assert (await mcp.page_state(SID))['dialog'] == {
		'type': 'prompt',
		'message': 'Your name?',
		'url': f'{pages}/dialogs',
		'default_prompt': 'nobody',
	}
	done = await mcp.ok('browser_handle_dialog', session_id=SID, accept=True, prompt_text='Ada')
	assert "'Ada'" in done.text
	assert await js(mcp, 'window.answer') == 'Ada'


async def test_a_dialog_opened_between_calls_is_told_on_the_next_one(mcp: Mcp, pages: str) -> None:
	state = await open_page(mcp, f'{pages}/dialogs')
	await mcp.ok('browser_click', session_id=SID, index=index_of(state, 'button', text='Later'))
	await asyncio.sleep(0.8)
	listed = await mcp.ok('browser_list_tabs', session_id=SID)
	notes = [t for t in listed.texts[1:] if 'Later' in t and 'alert' in t]
	assert len(notes) == 1, listed.texts
	await mcp.ok('browser_handle_dialog', session_id=SID, accept=True)
	assert await js(mcp, 'window.late') == 'answered'


async def test_a_leave_page_dialog_is_held_until_answered(mcp: Mcp, pages: str) -> None:
	state = await open_page(mcp, f'{pages}/dialogs')
	await mcp.ok('browser_click', session_id=SID, index=index_of(state, 'button', text='Guard'))  # also a user gesture
	going = await mcp.ok('browser_navigate', session_id=SID, url=f'{pages}/autocomplete')
	assert 'beforeunload' in ' '.join(going.texts) or 'leave-page' in ' '.join(going.texts), going.texts
	assert (await mcp.page_state(SID))['dialog']['type'] == 'beforeunload'
	await mcp.ok('browser_handle_dialog', session_id=SID, accept=False)  # stay
	assert await js(mcp, 'location.pathname') == '/dialogs'
	await mcp.ok('browser_navigate', session_id=SID, url=f'{pages}/autocomplete')
	await mcp.ok('browser_handle_dialog', session_id=SID, accept=True)  # leave
	await asyncio.sleep(0.3)
	assert await js(mcp, 'location.pathname') == '/autocomplete'


def by_text(state: dict[str, Any], tag: str, text: str = '', nth: int = 0) -> dict[str, Any]:
	return state['interactive_elements'][
		[e['index'] for e in state['interactive_elements']].index(index_of(state, tag, nth, text))
	]


async def test_the_state_carries_each_form_fields_current_state(mcp: Mcp, pages: str) -> None:
	state = await open_page(mcp, f'{pages}/form')
	assert 'secret-1234' not in str(state)
	inputs = [e for e in state['interactive_elements'] if e['tag'] == 'input']
	assert inputs[0]['value'] == 'typed by script'  # the live value, not the attribute
	assert by_text(state, 'textarea')['value'] == 'hello'
	passwords = [e for e in inputs if e.get('value') == '<redacted>']
	assert len(passwords) == 1  # the filled one; the empty one carries no value
	checks = [e.get('checked') for e in inputs if 'checked' in e]
	assert checks == [True, False, False, True], inputs
	assert by_text(state, 'select')['selected'] == 'Green'
	assert by_text(state, 'select', nth=1)['selected'] == ['A', 'C']
	assert [e['text'] for e in state['interactive_elements'] if e['tag'] == 'option' and e.get('selected')] == ['A', 'C']
	menu = by_text(state, 'button', 'Menu')
	assert menu['expanded'] is False and 'disabled' not in menu
	assert by_text(state, 'div', 'Some')['checked'] == 'mixed'
	await mcp.ok('browser_type', session_id=SID, index=index_of(state, 'textarea'), text='changed')
	assert by_text(await mcp.page_state(SID), 'textarea')['value'] == 'changed'


async def test_a_page_without_forms_gets_no_new_keys(mcp: Mcp, pages: str) -> None:
	state = await open_page(mcp, f'{pages}/plain')
	assert [sorted(e) for e in state['interactive_elements']] == [['href', 'index', 'tag', 'text'], ['index', 'tag', 'text']]


async def test_without_hold_there_is_no_dialog_to_answer() -> None:
	from types import SimpleNamespace

	from browser_use_mcp.config import ServerConfig
	from browser_use_mcp.errors import InvalidArgument
	from browser_use_mcp.tools.interaction import HandleDialogArgs, browser_handle_dialog

	state = SimpleNamespace(config=ServerConfig(dialogs='accept'))
	with pytest.raises(InvalidArgument, match='--dialogs hold'):
		await browser_handle_dialog.handler(state, HandleDialogArgs(accept=True), None)  # type: ignore[arg-type]
