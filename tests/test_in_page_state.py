"""browser_get_state read by one walk in the page says what the three CDP trees say.

The in-page route (``browser_use_mcp.patches.in_page_state``) is the default; ``offload_state``'s
three trees are its fallback and its reference. Each test asks the same session for its state both
ways, at the same moment, through the catalogue (the page-state worker, the ids, the answer's JSON),
and requires the same element list, element for element: index, tag, text, href, placeholder and
form state. And that the walk was the route taken, or the fallback when it must be."""

from __future__ import annotations

import gc
import json
import weakref
from typing import Any

import pytest

from harness.pages import ACTION_PAGES

CROSS_ORIGIN = '<button id=mine>Mine</button><iframe src="{other}/framed" width=300 height=100></iframe>'
HOSTILE = """<button id=a>First</button><a href="/x">Link</a>
<script>JSON.stringify = () => { throw new Error('this page broke JSON.stringify'); };</script>"""
# content far below the band browser-use sees (viewport +- 1000 px), nested inside a far section: what
# browser-use still lists or shows from there (a fixed or absolutely placed button that lands in view,
# a scroller, a file input, a shadow root, a frame, a select) must stay; plain far content may go
FAR = """<button id=top>Top</button><div style="height:4000px"></div>
<section>
<div><div><p>Far text <a href="/a1">far link</a> <button>far button</button></p><ul><li><a href="/a2">two</a></li></ul></div></div>
<div><div><div style="position:fixed;top:10px;right:10px"><button id=fixed>Fixed</button></div></div></div>
<div><div><div style="position:absolute;top:200px;left:300px"><button id=placed>Placed</button></div></div></div>
<div><div><div style="height:60px;overflow:auto"><p>scroll me</p><p>line</p><p>line</p><p>line</p><p>line</p></div></div></div>
<div><div><input type=file id=far-file></div></div>
<div><div><span aria-label="far label" tabindex=0>labelled</span></div></div>
<div><div id=host></div></div>
<div><div><iframe srcdoc="<button>in frame</button>" width=200 height=50></iframe></div></div>
<div><div><select><option>a</option><option>b</option></select> <details><summary>more</summary>hidden</details></div></div>
<div><div><div><div><span>deep</span> <em>plain</em> text</div></div></div></div>
</section>
<script>document.getElementById('host').attachShadow({mode: 'open'}).innerHTML = '<button>shadow far</button><input style="display:none" value=unseen>';</script>"""
# elements with a layout object and no fragment (SVG resources), an empty inline, a column, a display:
# contents wrapper: the walk tells them as the snapshot does
ODD = """<a href="/w">long word</a> <span onclick="1"></span>
<svg width=40 height=20><defs><linearGradient id=g role=button tabindex=0 onclick="1"><stop offset=0 stop-color=red></stop>
</linearGradient></defs><rect width=20 height=20 fill="url(#g)" role=button tabindex=0 aria-label=square></rect>
<g onclick="1"><rect x=22 width=18 height=20></rect></g></svg>
<table><colgroup><col onclick="1" style="width:40px"><col></colgroup><tr><td><button>in table</button><td>two</table>
<span style="display:contents" onclick="1"><button>contents child</button></span>"""
# checkboxes set indeterminate by script (one checked underneath), and a radio (which has no such state)
MIXED = """<label><input type=checkbox id=a> a</label> <label><input type=checkbox id=b checked> b</label>
<label><input type=checkbox id=c> c</label> <label><input type=radio id=d name=r> d</label>
<script>for (const id of ['a', 'b', 'd']) document.getElementById(id).indeterminate = true;</script>"""
# content overflowing boxes in the band: hidden, visible, clipped (sizes not read: nothing scrolls) and
# scrolling vertically and sideways (sizes read: browser-use shows them as scrollable)
OVERFLOW = """<div style="height:40px;overflow:hidden"><p>line</p><p>line</p><p>line</p><button>under hidden</button></div>
<div style="height:40px"><p>visible</p><p>overflow</p><p>spills</p><a href="/v">spilled link</a></div>
<div style="height:40px;overflow:clip"><p>clipped</p><p>clipped</p><button>clipped button</button></div>
<div style="height:40px;overflow-y:auto"><p>a</p><p>b</p><p>c</p><button>in scroller</button></div>
<div style="width:80px;overflow-x:scroll;white-space:nowrap">a long line that scrolls sideways <a href="/x">side</a></div>
<div style="height:40px;overflow:overlay"><p>a</p><p>b</p><p>c</p><button>in overlay</button></div>"""
SCALED = '<button>One</button><input placeholder=name value=typed><a href="/far" style="margin-top:1500px;display:block">Far</a>'


async def call(catalog: Any, tool: str, **arguments: Any) -> str:
	from browser_use_mcp.tools.base import Call

	return (await catalog.call(tool, arguments, Call())).text


async def both_ways(catalog: Any, session_id: str = 'walk') -> tuple[list[Any], list[Any], dict[str, int]]:
	"""The state's elements by the walk and by the three trees, and why the walk fell back, if it did.
	The trees are read before the walk and after it, and must say the same: a walk must leave the
	page as it found it (laying out what Chromium skips, a closed <details>, would change what the
	snapshot sees from then on)."""
	from browser_use_mcp.patches import in_page_state, offload_state

	route = offload_state.walked_route
	assert route is not None, 'the in-page route is the default'

	async def by_trees() -> list[Any]:
		offload_state.walked_route = None
		try:
			return json.loads(await call(catalog, 'browser_get_state', session_id=session_id))['interactive_elements']
		finally:
			offload_state.walked_route = route

	before = await by_trees()
	in_page_state.fallbacks.clear()
	in_page_state.last_timing.clear()
	walked = json.loads(await call(catalog, 'browser_get_state', session_id=session_id))['interactive_elements']
	fell_back = dict(in_page_state.fallbacks)
	if not fell_back:
		assert in_page_state.last_timing.get('ids_ms') is not None, 'the state came from a walk'
	assert await by_trees() == before, 'the walk changed what the trees see'
	return walked, before, fell_back


@pytest.mark.parametrize(
	'path', ['/', '/form', '/rich', '/epoch-frame', '/select', '/dates', '/upload', '/listbox', '/scroll', '/drag']
)
async def test_the_walk_lists_what_the_trees_list(catalog: Any, site: str, action_pages: str, path: str) -> None:
	"""Pages with a same-origin frame, an open shadow root, listeners, hidden and disabled elements,
	selects, date fields, a file input, a listbox, scrollers and draggables."""
	url = f'{action_pages if path in ACTION_PAGES else site}{path}'
	await call(catalog, 'browser_navigate', session_id='walk', url=url)
	walked, trees, fell_back = await both_ways(catalog)
	assert fell_back == {}
	assert walked == trees
	assert len(trees) >= 1 or path == '/wait'


async def test_a_scrolled_page_sees_the_same_band(catalog: Any, site: str) -> None:
	"""Scrolled down, browser-use sees the viewport +- 1000 px around where the page now is."""
	await call(catalog, 'browser_navigate', session_id='walk', url=f'{site}/long')
	await call(catalog, 'browser_evaluate', session_id='walk', expression='window.scrollTo(0, 2500); window.scrollY')
	walked, trees, fell_back = await both_ways(catalog)
	assert fell_back == {} and walked == trees


async def test_a_scaled_session_lists_the_same(catalog: Any) -> None:
	"""A session at device scale factor 2: the walk's CSS pixels are what browser-use makes of the
	snapshot's device pixels."""
	from harness.servers import html_pages

	await call(catalog, 'browser_create_session', session_id='scaled', device_scale_factor=2)
	with html_pages({'/scaled': SCALED}) as url:
		await call(catalog, 'browser_navigate', session_id='scaled', url=f'{url}/scaled')
		walked, trees, fell_back = await both_ways(catalog, 'scaled')
	assert fell_back == {} and walked == trees
	assert [e['tag'] for e in walked] == ['button', 'input', 'a']


async def test_a_cross_origin_frame_sends_the_state_to_the_trees(catalog: Any) -> None:
	"""A frame of another origin (another port of 127.0.0.1: same site, in the page's process) is in
	Chromium's trees but not the page's to read: the trees are read instead, and the answer is theirs."""
	from harness.servers import html_pages

	with html_pages({'/framed': '<button id=theirs>Theirs</button>'}) as other:
		with html_pages({'/host': CROSS_ORIGIN.format(other=other)}) as url:
			await call(catalog, 'browser_navigate', session_id='walk', url=f'{url}/host')
			walked, trees, fell_back = await both_ways(catalog)
	assert list(fell_back) == ['a frame whose document the page cannot read (cross-origin)']
	assert walked == trees and any(e['text'] == 'Mine' for e in walked)


async def test_a_page_that_breaks_a_builtin_gets_the_trees_state(catalog: Any) -> None:
	"""The walk runs in the page's world: a page that broke what it uses gets the trees' state, not an error."""
	from harness.servers import html_pages

	with html_pages({'/hostile': HOSTILE}) as url:
		await call(catalog, 'browser_navigate', session_id='walk', url=f'{url}/hostile')
		walked, trees, fell_back = await both_ways(catalog)
	assert len(fell_back) == 1 and next(iter(fell_back)).startswith('the walk failed')
	assert walked == trees and [e['tag'] for e in walked] == ['button', 'a']


async def test_indices_from_the_walk_act_and_go_stale(catalog: Any, site: str) -> None:
	"""A walked state's indices are backend node ids: a click by one acts on that element, and after a
	navigation the index is refused as stale, as with the trees."""
	from browser_use_mcp.errors import StaleElement

	await call(catalog, 'browser_navigate', session_id='walk', url=f'{site}/epoch')
	state = json.loads(await call(catalog, 'browser_get_state', session_id='walk'))
	button = next(e for e in state['interactive_elements'] if e['tag'] == 'button')
	assert 'Clicked' in await call(catalog, 'browser_click', session_id='walk', index=button['index'])
	await call(catalog, 'browser_navigate', session_id='walk', url=f'{site}/form')
	with pytest.raises(StaleElement, match='stale'):
		await call(catalog, 'browser_click', session_id='walk', index=button['index'])


async def serialized_text(state: Any, walked: bool) -> str:
	"""browser-use's own text representation of the page (``llm_representation``), its tree built from
	a walk (with the real backend ids as indices) or from the three trees."""
	from browser_use.dom.serializer.serializer import DOMTreeSerializer
	from browser_use.dom.service import DomService

	from benchmarks.in_page_state import walked_llm_text

	if not walked:
		service = DomService(browser_session=state.browser_session)
		root, _ = await service.get_dom_tree(target_id=state.browser_session.agent_focus_target_id)
		serialized, _ = DOMTreeSerializer(root, None, paint_order_filtering=True).serialize_accessible_elements()
		return serialized.llm_representation()
	text, walk = await walked_llm_text(state)
	assert isinstance(walk.text, str), 'a small page: its text is decoded with the answer'
	return text


@pytest.mark.parametrize('path', ['/rich', '/epoch-frame', '/select', '/dates', '/upload', '/listbox', '/scroll'])
async def test_the_walked_tree_serializes_to_browser_use_text(catalog: Any, site: str, action_pages: str, path: str) -> None:
	"""Stronger than the element lists: browser-use's whole text representation of the tree built from
	the walk (its shadow roots, the accessibility data its lines show) is the one of the three trees,
	character for character."""
	url = f'{action_pages if path in ACTION_PAGES else site}{path}'
	await call(catalog, 'browser_navigate', session_id='walk', url=url)
	(state,) = [s for s in catalog.sessions.sessions() if s.session_id == 'walk']
	assert await serialized_text(state, True) == await serialized_text(state, False)


async def left_out(state: Any) -> int:
	"""How many far subtrees a walk of the session's page leaves out."""
	from benchmarks.in_page_state import walked_llm_text

	_, walk = await walked_llm_text(state)
	assert walk.left is not None, 'a small page: its answer is decoded'
	return walk.left


@pytest.mark.parametrize('scrolled', [0, 4200])
async def test_far_content_left_out_changes_nothing(catalog: Any, scrolled: int) -> None:
	"""The walk leaves out plain subtrees far outside browser-use's band (the work that made long pages
	slow), and keeps what browser-use lists or shows from there: a fixed or absolutely placed button
	that lands in view, a scroller, a file input, a shadow root, a frame, a select. The element list
	and browser-use's whole text are the three trees', at the top and scrolled to the far part."""
	from harness.servers import html_pages

	with html_pages({'/far': FAR}) as url:
		await call(catalog, 'browser_navigate', session_id='walk', url=f'{url}/far')
		await call(catalog, 'browser_evaluate', session_id='walk', expression=f'window.scrollTo(0, {scrolled}); window.scrollY')
		(state,) = [s for s in catalog.sessions.sessions() if s.session_id == 'walk']
		assert await left_out(state) > 0, 'nothing was far enough to leave out'
		walked, trees, fell_back = await both_ways(catalog)
		assert fell_back == {} and walked == trees
		assert await serialized_text(state, True) == await serialized_text(state, False)
	listed = {e['text'] for e in walked}
	if scrolled:
		assert {'Fixed', 'far link', 'far button', 'shadow far', 'in frame'} <= listed, listed
	else:
		assert {'Top', 'Fixed', 'Placed'} <= listed and 'far link' not in listed, listed


@pytest.mark.parametrize('corrected', [True, False])
@pytest.mark.parametrize('scrolled', [0, 4200])
async def test_a_quirks_mode_page_sees_its_viewport(catalog: Any, scrolled: int, corrected: bool) -> None:
	"""A page without a doctype (quirks mode): browser-use reads the viewport from the HTML element,
	which there is the whole document. With ``quirks_viewport`` the HTML element reads as its body
	(the viewport's size and scroll offset in quirks mode), on both routes: the band is the viewport's
	as on a standards-mode page, far content is left out of the walk, and the walk and the three trees
	still say the same, element list and whole text. Off, both routes list the whole document as
	browser-use does, wherever it is scrolled."""
	from browser_use_mcp.patches import quirks_viewport
	from harness.servers import html_pages
	from tests.fixtures import patches_active, patches_reverted

	with (
		patches_active(quirks_viewport.PATCH) if corrected else patches_reverted(quirks_viewport.PATCH),
		html_pages({'/far': FAR}, doctype=False) as url,
	):
		await call(catalog, 'browser_navigate', session_id='walk', url=f'{url}/far')
		mode = await call(
			catalog, 'browser_evaluate', session_id='walk', expression=f'window.scrollTo(0, {scrolled}); document.compatMode'
		)
		assert 'BackCompat' in mode
		(state,) = [s for s in catalog.sessions.sessions() if s.session_id == 'walk']
		walked, trees, fell_back = await both_ways(catalog)
		assert fell_back == {} and walked == trees
		assert await serialized_text(state, True) == await serialized_text(state, False)
		if corrected:
			assert await left_out(state) > 0, 'the band is the viewport: far content is left out'
	listed = {e['text'] for e in walked}
	if not corrected:  # browser-use's reading: the whole document is in view
		assert {'Top', 'Fixed', 'Placed', 'far link', 'far button', 'in frame'} <= listed, listed
	elif scrolled:
		assert {'Fixed', 'far link', 'far button', 'shadow far', 'in frame'} <= listed and 'Top' not in listed, listed
	else:
		assert {'Top', 'Fixed', 'Placed'} <= listed and 'far link' not in listed, listed


# a quirks-mode document in a frame (a data: URL has no doctype here): its own viewport is the frame's
QUIRKS_FRAME = (
	'<iframe width=300 height=200 src="data:text/html,<button>frame top</button>'
	"<div style='height:1500px'></div><button>frame deep</button>\"></iframe>"
)


@pytest.mark.parametrize('corrected', [True, False])
async def test_a_quirks_mode_frame_sees_its_own_viewport(catalog: Any, corrected: bool) -> None:
	"""A quirks-mode document in a frame (opaque origin: the state comes from the three trees), on a
	standards-mode page: its band is the frame's viewport (200 px +- 1,000) with ``quirks_viewport``, its
	whole document without."""
	from browser_use_mcp.patches import quirks_viewport
	from harness.servers import html_pages
	from tests.fixtures import patches_active, patches_reverted

	with (
		patches_active(quirks_viewport.PATCH) if corrected else patches_reverted(quirks_viewport.PATCH),
		html_pages({'/framed': QUIRKS_FRAME}) as url,
	):
		await call(catalog, 'browser_navigate', session_id='walk', url=f'{url}/framed')
		state = json.loads(await call(catalog, 'browser_get_state', session_id='walk'))
	listed = {e['text'] for e in state['interactive_elements']}
	assert 'frame top' in listed, listed
	assert ('frame deep' in listed) is not corrected, listed


async def test_a_mid_sized_page_is_built_in_the_worker(catalog: Any, site: str, worker_jobs: list[Any]) -> None:
	"""A walk's text is compact: a page of ~1,000 elements is ~150 KB of it and ~70 ms of build. From
	``WALK_RAW_MIN`` on, the build runs in the page-state worker, never on the loop every session
	shares; a light page's stays in process (the worker's hop would cost more than its build)."""
	from browser_use_mcp.patches import in_page_state, offload_state

	built_in_worker = worker_jobs
	await call(catalog, 'browser_navigate', session_id='walk', url=f'{site}/')
	await call(catalog, 'browser_get_state', session_id='walk')
	assert built_in_worker == [] and in_page_state.last_timing.get('ids_ms') is not None
	await call(catalog, 'browser_navigate', session_id='walk', url=f'{site}/heavy')
	await call(catalog, 'browser_get_state', session_id='walk')
	assert len(built_in_worker) == 1 and isinstance(built_in_worker[0], in_page_state.WalkJob)
	assert isinstance(built_in_worker[0].text, offload_state.RawAnswer)
	# and its nodes come back as their constructors' arguments (offload_state.compact_reducer)
	assert await offload_state.pool.run(None, offload_state.compact_classes) == sorted(offload_state.COMPACT_CLASSES)


MEMO_PAGE = """<div id=list><button id=keep>Keep</button><button id=swap>Swap</button>
<a href="/one" id=moved>Moved</a><input id=typed placeholder=name></div><div id=other><button>Other</button></div>"""


async def test_repeat_states_know_their_ids_and_nothing_stale(catalog: Any, site: str) -> None:
	"""A page's memo maps each element it walked to a tag, and the server each listed tag to its
	backend id: a second state of an unchanged page asks for no id. An element replaced by a look-alike
	(same tag, same text, same place), one added before the others, and one moved elsewhere must
	still get their own ids, the same as the trees give; a new document starts a new memo."""
	from browser_use_mcp.patches import in_page_state
	from harness.servers import html_pages

	with html_pages({'/memo': MEMO_PAGE}) as url:
		await call(catalog, 'browser_navigate', session_id='walk', url=f'{url}/memo')
		first, trees, fell_back = await both_ways(catalog)
		assert fell_back == {} and first == trees and len(first) == 5
		again, trees, _ = await both_ways(catalog)
		assert again == first == trees
		assert (in_page_state.last_timing['ids_known'], in_page_state.last_timing['ids_asked']) == (5, 0)

		await call(
			catalog,
			'browser_evaluate',
			session_id='walk',
			expression=(
				"(() => { const old = document.getElementById('swap'), look = old.cloneNode(true); old.replaceWith(look);"
				" const added = document.createElement('button'); added.textContent = 'Added';"
				" document.getElementById('list').prepend(added);"
				" document.getElementById('other').append(document.getElementById('moved')); return 1; })()"
			),
		)
		changed, trees, fell_back = await both_ways(catalog)
		assert fell_back == {} and changed == trees
		by_text = {element['text']: element['index'] for element in changed}
		before = {element['text']: element['index'] for element in first}
		assert by_text['Swap'] != before['Swap'], 'the look-alike is another element'
		assert by_text['Keep'] == before['Keep'] and by_text['Moved'] == before['Moved']
		# the look-alike and the added button are new to the memo: their ids were asked for
		assert (in_page_state.last_timing['ids_known'], in_page_state.last_timing['ids_asked']) == (4, 2)

		await call(catalog, 'browser_navigate', session_id='walk', url=f'{url}/memo')
		reloaded, trees, fell_back = await both_ways(catalog)
		assert fell_back == {} and reloaded == trees
		assert in_page_state.last_timing['ids_known'] == 0, 'a new document: a new memo'
		assert {element['index'] for element in reloaded}.isdisjoint(before.values())

	# the memos go with the session's connection
	(state,) = [s for s in catalog.sessions.sessions() if s.session_id == 'walk']
	assert len(in_page_state._memos[state.browser_session.cdp_client]) == 1
	client = weakref.ref(state.browser_session.cdp_client)
	del state
	await call(catalog, 'browser_close_session', session_id='walk')
	gc.collect()
	assert client() is None and len(in_page_state._memos) == 0, 'a closed session keeps no memo'


REUSE_PAGE = """<style>.gone { display: none }</style><button id=press onclick="document.title = 'pressed'">Press</button>
<input id=name placeholder=name><p id=para><a href="/x">Link</a></p>"""


async def test_an_unchanged_page_reuses_its_build_and_any_change_builds_anew(catalog: Any) -> None:
	"""A walk that reads the page as the last walk of its document did builds the same state: that
	build is reused. Anything the walk reads makes it build again: a value typed (no DOM mutation),
	a class that hides an element (only styles change), an element added. A reused state is the
	trees' state, and its indices act. One build is kept per session, on its latest page."""
	from browser_use_mcp.patches import in_page_state
	from harness.servers import html_pages

	def reused() -> bool:
		return in_page_state.last_timing.get('build_reused') == 1.0

	async def state() -> list[Any]:
		in_page_state.last_timing.clear()
		found = json.loads(await call(catalog, 'browser_get_state', session_id='walk'))['interactive_elements']
		assert in_page_state.last_timing.get('ids_ms') is not None, 'the state came from a walk'
		return found

	async def run(expression: str) -> str:
		return await call(catalog, 'browser_evaluate', session_id='walk', expression=expression)

	with html_pages({'/reuse': REUSE_PAGE, '/other': '<button>Elsewhere</button>'}) as url:
		await call(catalog, 'browser_navigate', session_id='walk', url=f'{url}/reuse')
		first = await state()
		assert not reused(), "a new document's first walk is built"
		again = await state()
		assert reused() and again == first, 'the same page, the same walk: the build is reused'

		await run("document.getElementById('name').value = 'typed'")
		typed = await state()
		assert not reused()
		assert [e.get('value') for e in typed if e.get('placeholder') == 'name'] == ['typed']

		await run("document.getElementById('para').className = 'gone'")
		hidden = await state()
		assert not reused() and not [e for e in hidden if e.get('tag') == 'a'], 'a style change builds anew'

		await run("document.body.append(Object.assign(document.createElement('button'), {textContent: 'Added'}))")
		added = await state()
		assert not reused() and [e['text'] for e in added if e.get('tag') == 'button'] == ['Press', 'Added']

		walked, trees, fell_back = await both_ways(catalog)
		assert fell_back == {} and reused() and walked == trees == added, "a reused state is the trees' state"
		(press,) = [e['index'] for e in walked if e.get('text') == 'Press']
		await call(catalog, 'browser_click', session_id='walk', index=press)
		assert 'pressed' in await run('document.title')

		# a second tab's page: its build is kept, the first tab's let go
		await call(catalog, 'browser_navigate', session_id='walk', url=f'{url}/other', new_tab=True)
		await state()
		await state()
		assert reused()
	(session,) = [s for s in catalog.sessions.sessions() if s.session_id == 'walk']
	memos = in_page_state._memos[session.browser_session.cdp_client]
	assert len(memos) == 2 and [memo.built is not None for memo in memos.values()] == [False, True]


async def compared(catalog: Any, html: str) -> tuple[list[Any], list[Any], dict[str, int], str]:
	"""A page of ``html`` read both ways: the walk's elements, the trees', why the walk fell back, and
	browser-use's whole text from the walk, which must be the trees' character for character."""
	from harness.servers import html_pages

	with html_pages({'/page': html}) as url:
		await call(catalog, 'browser_navigate', session_id='walk', url=f'{url}/page')
		walked, trees, fell_back = await both_ways(catalog)
		(state,) = [s for s in catalog.sessions.sessions() if s.session_id == 'walk']
		text = await serialized_text(state, True)
		assert text == await serialized_text(state, False)
	return walked, trees, fell_back, text


async def test_elements_without_a_box_of_their_own_are_read_as_the_trees_read_them(catalog: Any) -> None:
	"""Once checkVisibility says an element has a layout object, the walk takes it to have a box (no
	getClientRects per element), except in SVG, whose resources (defs, gradients) have a layout object
	and no box: those are asked. The element list and browser-use's whole text are the three trees'."""
	walked, trees, fell_back, _ = await compared(catalog, ODD)
	assert fell_back == {} and walked == trees
	assert {'in table', 'contents child'} <= {e['text'] for e in walked}, walked


async def test_an_indeterminate_checkbox_is_mixed_as_the_trees_say(catalog: Any) -> None:
	"""A checkbox a script set indeterminate is "mixed" in Chromium's accessibility tree, checked or not
	underneath, and browser-use's text says so; the walk sends that state and derives the same (it said
	checked or unchecked before). The state's own form state keeps the box's checked value, both ways."""
	walked, trees, fell_back, text = await compared(catalog, MIXED)
	assert fell_back == {} and walked == trees
	assert text.count('mixed') == 2, text


async def test_overflowing_content_in_the_band_is_read_as_the_trees_read_it(catalog: Any) -> None:
	"""In the band the walk reads an element's sizes only where its content can scroll (overflow auto,
	scroll or overlay) or for a document or frame: elsewhere browser-use's scroll test makes nothing of
	them. Boxes overflowing hidden, visibly or clipped, and scrollers both ways: the element list and
	browser-use's whole text (its scroll marks among it) are the three trees'."""
	walked, trees, fell_back, text = await compared(catalog, OVERFLOW)
	assert fell_back == {} and walked == trees
	assert {'in scroller', 'side', 'in overlay', 'spilled link'} <= {e['text'] for e in walked}, walked
	assert text.count('scroll') >= 3, text
