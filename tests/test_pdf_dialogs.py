"""Issue #26, the last parts: browser_save_pdf, the per-session dialogs option, and answering a dialog held in
another tab. Through a real server (both isolation modes, default --dialogs accept) on pages served from
127.0.0.1; the page's own state is read back with browser_evaluate, the PDF from the disk."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.servers import Background, Mcp, html_pages, running_server
from tests.fixtures import in_process_registry, isolation_modes

isolation = isolation_modes()

PAGES = {
	'/doc': """<h1>Invoice 4711</h1><p>Total: 42 EUR</p>""" + '<p>line</p>' * 200,
	'/dialogs': """<button id="a" onclick="alert('Hello there'); this.dataset.after = 'yes'">Alert</button>
<button id="c" onclick="window.confirmed = confirm('Delete it?')">Confirm</button>
<button id="later" onclick="setTimeout(() => { alert('Later on'); this.dataset.after = 'yes'; }, 800)">Later</button>
<button id="pop" onclick="window.popup = window.open('/plain')">Popup</button>""",
	'/plain': """<a href="/doc">Doc</a> <button>Go</button>""",
}


@pytest.fixture(scope='module')
def pages() -> Iterator[str]:
	with html_pages(PAGES) as base:
		yield base


@pytest.fixture(scope='module')
async def mcp(tmp_path_factory: pytest.TempPathFactory, isolation: str) -> AsyncIterator[Mcp]:
	async with Background(running_server(tmp_path_factory.mktemp('pdf-home'), '--tools', 'all')) as server:
		yield server


async def js(mcp: Mcp, session: str, expression: str) -> Any:
	return (await mcp.ok('browser_evaluate', session_id=session, expression=expression)).structured['result']


async def tab_ids(mcp: Mcp, session: str) -> dict[str, str]:
	"""path of the tab's URL -> its tab_id."""
	tabs = (await mcp.ok('browser_list_tabs', session_id=session)).structured['tabs']
	return {re.sub(r'^https?://[^/]+', '', t['url']): t['tab_id'] for t in tabs}


def written(text: str) -> tuple[Path, int]:
	found = re.search(r' to (/\S+) \((\d+) bytes\)', text)
	assert found, text
	return Path(found.group(1)), int(found.group(2))


async def test_a_dialog_held_in_another_tab_is_answered_by_its_tab_id(mcp: Mcp, pages: str) -> None:
	sid = 'dialog-tabs'
	await mcp.ok('browser_create_session', session_id=sid, dialogs='hold')
	await mcp.ok('browser_navigate', session_id=sid, url=f'{pages}/dialogs')
	await mcp.ok('browser_navigate', session_id=sid, url=f'{pages}/plain', new_tab=True)
	tabs = await tab_ids(mcp, sid)
	await mcp.ok('browser_switch_tab', session_id=sid, tab_id=tabs['/dialogs'])
	state = await mcp.page_state(sid)
	later = next(e['index'] for e in state['interactive_elements'] if e['text'] == 'Later')
	await mcp.ok('browser_click', session_id=sid, index=later)  # its alert opens 0.8 s on
	await mcp.ok('browser_switch_tab', session_id=sid, tab_id=tabs['/plain'])
	shown: dict[str, Any] = {}
	for _ in range(50):
		shown = await mcp.page_state(sid)
		if 'dialog' in shown:
			break
		await asyncio.sleep(0.1)
	# the current tab works as usual, and the state says where the dialog waits
	assert shown['url'] == f'{pages}/plain' and shown['interactive_elements']
	assert shown['dialog'] == {'type': 'alert', 'message': 'Later on', 'url': f'{pages}/dialogs', 'tab_id': tabs['/dialogs']}
	went = await mcp.ok('browser_navigate', session_id=sid, url=f'{pages}/doc')
	assert went.text.startswith('Navigated'), went.texts  # a dialog in another tab does not stop this one
	none_here = await mcp.call('browser_handle_dialog', session_id=sid, accept=True, tab_id=tabs['/plain'])
	assert none_here.is_error and 'tab' in none_here.text and tabs['/dialogs'] in none_here.text
	unknown = await mcp.call('browser_handle_dialog', session_id=sid, accept=True, tab_id='zzzz')
	assert unknown.is_error and "No tab with id 'zzzz'" in unknown.text
	answered = await mcp.ok('browser_handle_dialog', session_id=sid, accept=True, tab_id=tabs['/dialogs'])
	assert 'Later on' in answered.text and 'accepted' in answered.text
	assert 'dialog' not in await mcp.page_state(sid)
	await mcp.ok('browser_switch_tab', session_id=sid, tab_id=tabs['/dialogs'])
	for _ in range(20):  # the timer's handler runs on once the alert is answered
		if await js(mcp, sid, 'document.getElementById("later").dataset.after || null') == 'yes':
			break
		await asyncio.sleep(0.1)
	assert await js(mcp, sid, 'document.getElementById("later").dataset.after') == 'yes'
	await mcp.ok('browser_close_session', session_id=sid)


async def test_a_tab_paused_by_a_dialog_in_its_opener_ends_its_call_saying_where_to_answer(mcp: Mcp, pages: str) -> None:
	"""A popup shares its opener's renderer process, which Chromium pauses whole while a dialog shows: a call
	in the popup ends (after the bound on calls beside another tab's dialog) naming the tab to answer."""
	sid = 'dialog-popup'
	await mcp.ok('browser_create_session', session_id=sid, dialogs='hold')
	await mcp.ok('browser_navigate', session_id=sid, url=f'{pages}/dialogs')
	state = await mcp.page_state(sid)
	await mcp.ok(
		'browser_click', session_id=sid, index=next(e['index'] for e in state['interactive_elements'] if e['text'] == 'Popup')
	)
	tabs = await tab_ids(mcp, sid)
	assert set(tabs) == {'/dialogs', '/plain'}, tabs
	await mcp.ok('browser_switch_tab', session_id=sid, tab_id=tabs['/dialogs'])
	await mcp.ok('browser_evaluate', session_id=sid, expression='document.getElementById("later").click()')
	await mcp.ok('browser_switch_tab', session_id=sid, tab_id=tabs['/plain'])
	await asyncio.sleep(1.5)  # the alert is open in the opener now
	paused = await mcp.call('browser_evaluate', session_id=sid, expression='1 + 1')
	assert paused.is_error, paused.text
	assert f'tab {tabs["/dialogs"]}' in paused.text and f'browser_handle_dialog{{tab_id: "{tabs["/dialogs"]}"}}' in paused.text
	await mcp.ok('browser_handle_dialog', session_id=sid, accept=True, tab_id=tabs['/dialogs'])
	assert (await mcp.ok('browser_evaluate', session_id=sid, expression='1 + 1')).structured['result'] == 2
	await mcp.ok('browser_close_session', session_id=sid)


async def test_save_pdf_writes_the_page_into_the_sessions_files(mcp: Mcp, pages: str) -> None:
	sid = 'pdf'
	await mcp.ok('browser_navigate', session_id=sid, url=f'{pages}/doc')
	done = await mcp.ok('browser_save_pdf', session_id=sid)
	path, size = written(done.text)
	assert f'{pages}/doc' in done.text
	assert path.parent.name == 'files' and path.is_relative_to(mcp.home), path
	assert re.fullmatch(r'page-\d{8}-\d{6}\.pdf', path.name)
	data = path.read_bytes()
	assert data.startswith(b'%PDF-') and len(data) == size and b'%%EOF' in data[-64:]
	named = await mcp.ok('browser_save_pdf', session_id=sid, path='invoice.pdf', landscape=True)
	again, _ = written(named.text)
	assert again == path.parent / 'invoice.pdf' and again.read_bytes().startswith(b'%PDF-')
	# what the session saved, browser_upload_file can send: the same directory
	assert 'files directory as invoice.pdf' in named.text
	await mcp.ok('browser_close_session', session_id=sid)


async def test_save_pdf_refuses_names_that_leave_the_session_and_writes_nothing(mcp: Mcp, pages: str) -> None:
	sid = 'pdf-bad'
	await mcp.ok('browser_navigate', session_id=sid, url=f'{pages}/doc')
	before = {p for p in mcp.home.rglob('*') if p.is_file()}
	for bad in ('../escape.pdf', '/tmp/escape.pdf', 'a/b.pdf', 'notes.txt', '.hidden.pdf', 'x' * 101 + '.pdf'):
		result = await mcp.call('browser_save_pdf', session_id=sid, path=bad)
		assert result.is_error and 'path' in result.text, (bad, result.text)
	assert {p for p in mcp.home.rglob('*') if p.is_file() and p.suffix == '.pdf'} == {p for p in before if p.suffix == '.pdf'}
	assert not Path('/tmp/escape.pdf').exists()
	unknown = await mcp.call('browser_save_pdf', session_id=sid, tab_id='zzzz')
	assert unknown.is_error and "No tab with id 'zzzz'" in unknown.text
	await mcp.ok('browser_close_session', session_id=sid)


async def test_save_pdf_prints_the_tab_given_not_the_current_one(mcp: Mcp, pages: str) -> None:
	sid = 'pdf-tabs'
	await mcp.ok('browser_navigate', session_id=sid, url=f'{pages}/doc')
	await mcp.ok('browser_navigate', session_id=sid, url=f'{pages}/plain', new_tab=True)
	tabs = await tab_ids(mcp, sid)
	done = await mcp.ok('browser_save_pdf', session_id=sid, tab_id=tabs['/doc'], path='doc.pdf')
	assert f'{pages}/doc' in done.text
	current = await mcp.ok('browser_save_pdf', session_id=sid, path='plain.pdf')
	assert f'{pages}/plain' in current.text
	# the long page prints to more pages than the short one
	doc, plain = written(done.text)[0].read_bytes(), written(current.text)[0].read_bytes()
	assert len(doc) > len(plain)
	await mcp.ok('browser_close_session', session_id=sid)


async def test_a_session_can_hold_its_dialogs_on_a_server_that_accepts_them(mcp: Mcp, pages: str) -> None:
	made = await mcp.ok('browser_create_session', session_id='holds', dialogs='hold')
	assert made.structured['options'] == {'dialogs': 'hold'}
	await mcp.ok('browser_navigate', session_id='holds', url=f'{pages}/dialogs')
	await mcp.ok('browser_navigate', session_id='accepts', url=f'{pages}/dialogs')
	# the server's default (accept) for the other session: answered at once, the handler ran on
	await mcp.ok('browser_evaluate', session_id='accepts', expression='document.getElementById("a").click()')
	assert await js(mcp, 'accepts', 'document.getElementById("a").dataset.after') == 'yes'
	refused = await mcp.call('browser_handle_dialog', session_id='accepts', accept=True)
	assert refused.is_error and 'dialogs: "hold"' in refused.text
	# held for the caller in its own session
	state = await mcp.page_state('holds')
	button = next(e['index'] for e in state['interactive_elements'] if e['text'] == 'Confirm')
	clicked = await mcp.ok('browser_click', session_id='holds', index=button)
	assert 'confirm dialog' in ' '.join(clicked.texts)
	assert (await mcp.page_state('holds'))['dialog']['message'] == 'Delete it?'
	await mcp.ok('browser_handle_dialog', session_id='holds', accept=False)
	assert await js(mcp, 'holds', 'window.confirmed') is False
	# listed, and a clone holds them too
	listed = (await mcp.ok('browser_list_sessions')).structured['sessions']
	assert next(s for s in listed if s['session_id'] == 'holds')['options'] == {'dialogs': 'hold'}
	clone = await mcp.ok('browser_clone_session', from_session_id='holds', session_id='holds-too')
	assert 'hold' in clone.text or (clone.structured or {}).get('options') == {'dialogs': 'hold'}
	for sid in ('holds', 'accepts', 'holds-too'):
		await mcp.ok('browser_close_session', session_id=sid)


async def test_a_bad_dialogs_option_names_the_valid_ones(mcp: Mcp) -> None:
	bad = await mcp.call('browser_create_session', session_id='bad-dialogs', dialogs='sometimes')
	assert bad.is_error and 'dialogs' in bad.text and 'accept' in bad.text and 'hold' in bad.text
	listed = (await mcp.ok('browser_list_sessions')).structured['sessions']
	assert 'bad-dialogs' not in {s['session_id'] for s in listed}


# -- in process: the bounds, with a real Chromium and the limits made small ------------------------


@pytest.fixture(scope='module')
async def registry(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Any]:

	async with in_process_registry(Path(tmp_path_factory.mktemp('pdf-bounds')) / 'state', 'context', tools=('all',)) as registry:
		yield registry


async def test_a_pdf_over_the_bound_or_a_full_files_directory_writes_nothing(
	registry: Any, pages: str, monkeypatch: pytest.MonkeyPatch
) -> None:
	from browser_use_mcp.catalog import Catalog
	from browser_use_mcp.errors import BrowserActionFailed
	from browser_use_mcp.tools import actions
	from browser_use_mcp.tools.base import Call

	catalog = Catalog(registry)
	sid = {'session_id': 'bounds'}
	await catalog.call('browser_navigate', {**sid, 'url': f'{pages}/doc'}, Call())
	(state,) = [s for s in registry.sessions() if s.session_id == 'bounds']
	files = Path(state.dirs.files)
	monkeypatch.setattr(actions, 'MAX_PDF_BYTES', 4096)  # the /doc page prints to more than that
	with pytest.raises(BrowserActionFailed, match='larger than 0 MiB; nothing was written'):
		await catalog.call('browser_save_pdf', {**sid, 'path': 'big.pdf'}, Call())
	assert not [p for p in files.iterdir() if p.suffix == '.pdf' or p.name.endswith('.writing')]
	monkeypatch.setattr(actions, 'MAX_PDF_BYTES', 50 * 1024 * 1024)
	done = await catalog.call('browser_save_pdf', {**sid, 'path': 'one.pdf'}, Call())
	assert 'one.pdf' in done.text and (files / 'one.pdf').stat().st_size > 4096
	monkeypatch.setattr(actions, 'MAX_FILES_BYTES', 4096)  # one.pdf alone is over it now
	with pytest.raises(BrowserActionFailed, match='files directory already holds .* no PDF was written'):
		await catalog.call('browser_save_pdf', {**sid, 'path': 'two.pdf'}, Call())
	assert not (files / 'two.pdf').exists()


async def test_holding_dialogs_is_refused_where_the_hold_patch_is_off(registry: Any) -> None:
	from browser_use_mcp import patches
	from browser_use_mcp.catalog import Catalog
	from browser_use_mcp.errors import InvalidArgument
	from browser_use_mcp.patches import dialog_hold
	from browser_use_mcp.tools.base import Call

	catalog = Catalog(registry)
	before = patches.status_of(dialog_hold.PATCH)
	patches.revert(dialog_hold.PATCH)
	try:
		with pytest.raises(InvalidArgument, match='dialogs: this server cannot hold dialogs'):
			await catalog.call('browser_create_session', {'session_id': 'no-hold', 'dialogs': 'hold'}, Call())
		assert 'no-hold' not in {s.session_id for s in registry.sessions()}
	finally:
		if before is not None:
			patches.apply(dialog_hold.PATCH, enabled=before.state != 'off')
