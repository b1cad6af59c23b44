"""Element indices are used only on the page they were read from (tools.common.PageEpoch).

An index from the last browser_get_state is refused, with a clear error and nothing done, once
its tab is no longer the current one, its document has been replaced (navigation, reload) or its
element is no longer attached; a change elsewhere in the page keeps it valid. The /epoch page
records every click in the tab's sessionStorage, so each test can tell what was really clicked.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from harness.servers import FULL_CHROMIUM, Mcp, Result
from tests.fixtures import isolation_modes

isolation = isolation_modes()  # CDP sessions differ between a Chromium per session and contexts


@pytest.fixture(autouse=True)
async def clean(mcp: Mcp):
	yield
	await mcp.call('browser_close_all')


async def indices(mcp: Mcp, sid: str) -> dict[str, int]:
	"""The current state's elements, by their text (or placeholder)."""
	state = (await mcp.ok('browser_get_state', session_id=sid)).json()
	return {e['text'] or e.get('placeholder', ''): e['index'] for e in state['interactive_elements']}


async def evaluate(mcp: Mcp, sid: str, expression: str) -> object:
	return json.loads((await mcp.ok('browser_evaluate', session_id=sid, expression=expression)).text)


async def clicks(mcp: Mcp, sid: str) -> list[str]:
	"""What was really clicked in the current tab, in order."""
	return (await evaluate(mcp, sid, 'sessionStorage.getItem("clicks") || ""')).split()


async def click(mcp: Mcp, sid: str, index: int) -> Result:
	return await mcp.call('browser_click', session_id=sid, index=index)


def assert_stale(result: Result, index: int, why: str) -> None:
	assert result.is_error, result.text
	assert result.text.startswith(f'Element with index {index} is stale: {why}'), result.text
	assert 'Nothing was done' in result.text and 'browser_get_state' in result.text
	assert 'Valid indices' not in result.text, 'stale indices are never offered as valid'


async def test_without_a_state_an_index_is_not_found(mcp: Mcp, site: str) -> None:
	sid = 'no-state'
	await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/epoch')
	r = await click(mcp, sid, 1)
	assert r.is_error
	assert r.text.startswith('Element with index 1 not found in the last browser_get_state of this session.')
	assert 'No state has been captured yet' in r.text
	assert await clicks(mcp, sid) == []


async def reload_by_script(mcp: Mcp, sid: str, site: str) -> None:
	"""A new document the server did not start: the page reloads itself."""
	await evaluate(mcp, sid, 'window.before = true; setTimeout(() => location.reload(), 0); 1')
	for _ in range(100):
		r = await mcp.call(
			'browser_evaluate', session_id=sid, expression='window.before === undefined && document.readyState === "complete"'
		)
		if r.is_error:  # asked while the old document went: said so, and the session goes on
			assert 'The page navigated (or its tab closed) while the expression ran' in r.text, r.text
			await asyncio.sleep(0.02)
		elif json.loads(r.text):
			return
	raise AssertionError('the page did not reload')


async def navigate_again(mcp: Mcp, sid: str, site: str) -> None:
	await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/epoch')


@pytest.mark.parametrize('new_document', [navigate_again, reload_by_script], ids=['navigate', 'reload'])
async def test_an_index_from_before_a_new_document_is_refused(mcp: Mcp, site: str, new_document) -> None:
	sid = f'new-document-{new_document.__name__}'
	await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/epoch')
	before = await indices(mcp, sid)
	await new_document(mcp, sid, site)  # the same layout again: the old index would land on "Count"
	assert_stale(await click(mcp, sid, before['Count']), before['Count'], 'the page has loaded a new document')
	typed = await mcp.call('browser_type', session_id=sid, index=before['your name'], text='x', include_state=True)
	assert_stale(typed, before['your name'], 'the page has loaded a new document')
	assert len(typed.texts) == 1, 'a refused action carries no state'
	r = await click(mcp, sid, 99999)
	assert_stale(r, 99999, 'the page has loaded a new document')
	assert await clicks(mcp, sid) == [], 'nothing was clicked'
	assert await evaluate(mcp, sid, 'document.getElementById("name").value') == ''

	now = await indices(mcp, sid)
	assert (await mcp.ok('browser_click', session_id=sid, index=now['Count'])).text == f'Clicked element {now["Count"]}'
	assert await clicks(mcp, sid) == ['count']


async def test_a_change_elsewhere_in_the_page_keeps_the_indices(mcp: Mcp, site: str) -> None:
	sid = 'unrelated'
	await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/epoch')
	e = await indices(mcp, sid)
	await mcp.ok('browser_click', session_id=sid, index=e['Add row'])  # an SPA adds a row
	await mcp.ok('browser_click', session_id=sid, index=e['Count'])
	await mcp.ok('browser_click', session_id=sid, index=e['Push'])  # history.pushState: same document
	await mcp.ok('browser_click', session_id=sid, index=e['Count'])
	await mcp.ok('browser_click', session_id=sid, index=e['Jump'])  # a #fragment: same document
	await mcp.ok('browser_type', session_id=sid, index=e['your name'], text='kept')
	await mcp.ok('browser_click', session_id=sid, index=e['Count'])
	assert await clicks(mcp, sid) == ['add', 'count', 'push', 'count', 'jump', 'count']
	assert await evaluate(mcp, sid, 'location.search + location.hash') == '?pushed=1#rows'
	assert await evaluate(mcp, sid, 'document.getElementById("name").value') == 'kept'

	r = await click(mcp, sid, 99999)  # the state is current: not found, and its indices are named
	assert r.is_error and r.text.startswith('Element with index 99999 not found') and 'Valid indices now' in r.text


async def test_a_removed_or_replaced_element_is_refused(mcp: Mcp, site: str) -> None:
	sid = 'replaced'
	await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/epoch')
	e = await indices(mcp, sid)
	await mcp.ok('browser_click', session_id=sid, index=e['Replace me'])  # the button replaces itself
	assert_stale(await click(mcp, sid, e['Replace me']), e['Replace me'], 'the element it named has been removed')
	await mcp.ok('browser_click', session_id=sid, index=e['Re-render'])  # the field is rendered anew
	typed = await mcp.call('browser_type', session_id=sid, index=e['your name'], text='lost')
	assert_stale(typed, e['your name'], 'the element it named has been removed')
	await mcp.ok('browser_click', session_id=sid, index=e['Count'])  # untouched: still valid
	assert await clicks(mcp, sid) == ['replace', 'rerender', 'count']
	assert await evaluate(mcp, sid, 'document.getElementById("name").value') == ''

	now = await indices(mcp, sid)
	assert now['Replace me'] != e['Replace me'] and now['your name'] != e['your name']
	await mcp.ok('browser_click', session_id=sid, index=now['Replace me'])
	await mcp.ok('browser_type', session_id=sid, index=now['your name'], text='found')
	assert await clicks(mcp, sid) == ['replace', 'rerender', 'count', 'replace']
	assert await evaluate(mcp, sid, 'document.getElementById("name").value') == 'found'


async def test_indices_of_another_tab_are_refused(mcp: Mcp, site: str) -> None:
	sid = 'tabs'
	await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/epoch')
	first = await indices(mcp, sid)
	(first_tab,) = [t['tab_id'] for t in (await mcp.ok('browser_list_tabs', session_id=sid)).json()]
	await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/epoch', new_tab=True)  # same layout, other tab
	assert_stale(await click(mcp, sid, first['Count']), first['Count'], 'another tab has become the current one')
	assert await clicks(mcp, sid) == []

	second = await indices(mcp, sid)
	await mcp.ok('browser_switch_tab', session_id=sid, tab_id=first_tab)
	assert_stale(await click(mcp, sid, second['Count']), second['Count'], 'another tab has become the current one')
	# the last state is the other tab's, so the first tab's older indices are not trusted either
	assert_stale(await click(mcp, sid, first['Count']), first['Count'], 'another tab has become the current one')
	assert await clicks(mcp, sid) == []

	again = await indices(mcp, sid)
	await mcp.ok('browser_click', session_id=sid, index=again['Count'])
	assert await clicks(mcp, sid) == ['count']


async def test_an_element_of_an_iframe_goes_stale_with_its_frame(mcp: Mcp, site: str) -> None:
	sid = 'frame'
	await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/epoch-frame')
	e = await indices(mcp, sid)
	await mcp.ok('browser_click', session_id=sid, index=e['Inner count'])
	assert await clicks(mcp, sid) == ['inner']
	await evaluate(mcp, sid, 'document.getElementById("inner").src = "/epoch-inner?again"; 1')
	for _ in range(100):
		if await evaluate(mcp, sid, 'document.getElementById("inner").contentWindow.location.search === "?again"'):
			break
	assert_stale(await click(mcp, sid, e['Inner count']), e['Inner count'], 'the element it named has been removed')
	assert await clicks(mcp, sid) == ['inner'], 'the new frame, laid out the same, was not clicked'
	now = await indices(mcp, sid)
	await mcp.ok('browser_click', session_id=sid, index=now['Inner count'])
	assert await clicks(mcp, sid) == ['inner', 'inner']


async def test_an_expression_outlived_by_its_page_is_a_clear_error_and_the_session_goes_on(mcp: Mcp, site: str) -> None:
	"""Chromium's "Inspected target navigated or closed" was passed on as an unexpected RuntimeError."""
	sid = 'evaluate-across-a-reload'
	await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/two')
	r = await mcp.call(
		'browser_evaluate', session_id=sid, expression='new Promise(() => setTimeout(() => location.reload(), 50))'
	)
	assert r.is_error and r.text.startswith('The page navigated (or its tab closed) while the expression ran'), r.text
	assert 'unexpectedly' not in r.text
	assert await evaluate(mcp, sid, 'location.pathname') == '/two'


async def test_a_pdf_in_the_headless_shell_is_reported_as_downloaded(mcp: Mcp, site: str) -> None:
	"""The headless shell (the default headless browser) has no PDF viewer: a navigation to a PDF is
	aborted as the file downloads. The reply says where the file went and how to see PDFs in the tab,
	as a result, not as an error (and not "check the URL"). The full Chromium shows the PDF in the tab."""
	sid = 'pdf-in-the-shell'
	r = await mcp.call('browser_navigate', session_id=sid, url=f'{site}/doc.pdf')
	assert not r.is_error, r.text
	if FULL_CHROMIUM:
		assert r.text == f'Navigated to: {site}/doc.pdf', r.text
		assert (await mcp.page_state(sid))['url'] == f'{site}/doc.pdf'
		return
	assert r.text.startswith(f'Navigated to: {site}/doc.pdf. The browser downloaded it instead of showing it: doc.pdf ('), r.text
	assert 'no PDF viewer' in r.text and '--no-headless-shell' in r.text and 'the tab still shows about:blank' in r.text, r.text
	saved = list((mcp.home / 'state').glob('srv-*/s-*/downloads/doc.pdf'))
	assert len(saved) == 1 and saved[0].read_bytes().startswith(b'%PDF'), saved
	assert f'({saved[0].stat().st_size:,} bytes)' in r.text, r.text
	await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/two')  # the session goes on
	assert await evaluate(mcp, sid, 'location.pathname') == '/two'


async def test_a_navigation_to_an_attachment_says_what_was_saved(mcp: Mcp, site: str) -> None:
	"""Any browser: a URL served as an attachment downloads; the reply names the file and its size and
	the page the tab still shows, with no PDF hint."""
	sid = 'attachment'
	await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/two')
	text = (await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/download')).text
	assert text == (
		f'Navigated to: {site}/download. The browser downloaded it instead of showing it: hello.txt (15 bytes) is saved '
		f"in the session's downloads; the tab still shows {site}/two."
	), text
	assert [p.read_text() for p in (mcp.home / 'state').glob('srv-*/s-*/downloads/hello.txt')] == ['hello download\n']


async def test_an_aborted_navigation_without_a_download_is_an_error_that_says_so(mcp: Mcp, site: str) -> None:
	"""A 204 No Content aborts the navigation and downloads nothing: an error that says what happened
	and what to do, not "check the URL"; the session goes on."""
	sid = 'no-content'
	await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/two')
	r = await mcp.call('browser_navigate', session_id=sid, url=f'{site}/nothing')
	assert r.is_error, r.text
	assert 'net::ERR_ABORTED' in r.text and 'no download started' in r.text and '204 No Content' in r.text, r.text
	assert 'Check the URL' not in r.text and 'PDF' not in r.text
	assert await evaluate(mcp, sid, 'location.pathname') == '/two'
