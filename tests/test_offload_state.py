"""browser_get_state built in a worker process (browser_use_mcp.patches.offload_state) says what
browser-use's own pipeline says, and its elements can be clicked and typed into by index.

The unit half pins the cdp-use hook (only our own large answers are left undecoded) and that a
built state survives the trip between processes. The Chromium half reads the same live page both
ways, browser-use's ``get_serialized_dom_tree`` on the loop and the worker's, and compares every
element of the selector map field by field; then clicks and types by index on the heavy page with
the state built by the worker. The e2e comparison over MCP is in tests/e2e/test_fast_state.py.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import pickle
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from browser_use_mcp.catalog import Catalog
from browser_use_mcp.patches import bus_locks, direct_state, offload_state
from browser_use_mcp.sessions import SessionRegistry
from browser_use_mcp.tools.base import Call
from tests.fixtures import in_process_registry, patches_active

# -- unit: the hook on cdp-use -------------------------------------------------------------------


def test_only_our_large_answers_are_left_undecoded(monkeypatch: pytest.MonkeyPatch) -> None:
	monkeypatch.setattr(offload_state, 'RAW_LEAST', 64)
	hook = offload_state._JsonHook()

	def chromium(message: dict[str, Any]) -> str:  # as Chromium writes its messages: compact, the id first
		return json.dumps(message, separators=(',', ':'))

	ours, other = offload_state.FIRST_ID + 7, 12
	picky = ours + 1  # a request that asked for its answer undecoded only from 10,000 bytes
	monkeypatch.setattr(offload_state, '_raw_ids', {ours: 64, picky: 10_000})
	big = {'nodes': ['x' * 100]}
	answer = chromium({'id': ours, 'result': big, 'sessionId': 'S'})
	undecoded = hook.loads(answer)
	assert undecoded['id'] == ours and isinstance(undecoded['result'], offload_state.RawAnswer)
	assert offload_state._answer(undecoded['result']) == big
	# another request's answer, an error to ours, a small answer, an event: decoded as before
	assert hook.loads(chromium({'id': other, 'result': big})) == {'id': other, 'result': big}
	assert hook.loads(chromium({'id': picky, 'result': big})) == {'id': picky, 'result': big}
	error = {'id': ours, 'error': {'message': 'x' * 100}}
	assert hook.loads(chromium(error)) == error
	assert hook.loads(chromium({'id': ours, 'result': {}})) == {'id': ours, 'result': {}}
	event = {'method': 'DOM.documentUpdated', 'params': {'x': 'y' * 100}}
	assert hook.loads(chromium(event)) == event
	assert hook.dumps is json.dumps and hook.JSONDecodeError is json.JSONDecodeError


async def test_an_undecoded_request_cleans_up_after_itself() -> None:
	sent: list[dict[str, Any]] = []

	class Ws:
		async def send(self, text: str) -> None:
			sent.append(json.loads(text))

	class Client:
		ws = Ws()
		pending_requests: dict[int, asyncio.Future[Any]] = {}

	client = Client()
	request = asyncio.ensure_future(offload_state.send_undecoded(client, 'DOM.getDocument', {'depth': -1}, 'S1'))
	await asyncio.sleep(0)
	(message,) = sent
	assert message['id'] >= offload_state.FIRST_ID and message['sessionId'] == 'S1' and message['id'] in offload_state._raw_ids
	client.pending_requests[message['id']].set_result({'root': {}})
	assert await request == {'root': {}}
	assert message['id'] not in offload_state._raw_ids and client.pending_requests == {}


# -- with Chromium: the same elements as browser-use's own pipeline -------------------------------


@pytest.fixture(scope='module', params=['context', 'browser'])
async def registry(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> AsyncIterator[SessionRegistry]:
	"""An in-process registry with the patches the state path goes through; afterwards each patch
	as it was."""
	with patches_active(bus_locks.PATCH, direct_state.PATCH, offload_state.PATCH):
		async with in_process_registry(
			Path(tmp_path_factory.mktemp('offload')) / 'state', request.param, idle_timeout=600
		) as registry:
			# the three trees' path (the walk in the page, taken first by default, is tests/test_in_page_state.py's)
			route, offload_state.walked_route = offload_state.walked_route, None
			try:
				yield registry
			finally:
				offload_state.walked_route = route


@pytest.fixture
async def everything_to_the_worker(monkeypatch: pytest.MonkeyPatch) -> list[str]:
	"""Every answer left undecoded and every build sent to the worker, once it is up; the
	targets of the jobs it was sent."""
	monkeypatch.setattr(offload_state, 'RAW_MIN', 0)
	monkeypatch.setattr(offload_state, 'RAW_LEAST', 0)
	deadline = time.monotonic() + 120
	while not offload_state.pool.ready():
		assert time.monotonic() < deadline, 'the worker did not start'
		await asyncio.sleep(0.1)
	sent = offload_state.pool.run

	async def counted(job: offload_state.Job) -> offload_state.Built:
		runs.append(job.target_id)
		return await sent(job)

	runs: list[str] = []
	monkeypatch.setattr(offload_state.pool, 'run', counted)
	return runs


def described(node: Any) -> dict[str, Any]:
	"""What a state, a click or typing reads of a node. Not its ``node_id``: DOM.getDocument numbers
	the nodes afresh at every capture, and nothing reads it."""
	return {
		'backend_node_id': node.backend_node_id,
		'tag': node.tag_name,
		'node_name': node.node_name,
		'node_type': node.node_type,
		'attributes': node.attributes,
		'text': node.get_all_children_text(max_depth=2),
		'session_id': node.session_id,
		'target_id': node.target_id,
		'frame_id': node.frame_id,
		'is_visible': node.is_visible,
		'is_scrollable': node.is_scrollable,
		'has_js_click_listener': node.has_js_click_listener,
		'absolute_position': node.absolute_position,
		'shadow_root_type': node.shadow_root_type,
		'snapshot': node.snapshot_node,
		'ax': node.ax_node,
	}


async def both_ways(registry: SessionRegistry, session: str) -> tuple[dict[int, Any], dict[int, Any]]:
	from browser_use.dom.service import DomService

	state = next(s for s in registry.sessions() if s.session_id == session)
	service = DomService(browser_session=state.browser_session)
	own, _, _ = await service.get_serialized_dom_tree()  # not a compact state: browser-use's own path
	with offload_state.compact_state():
		built, tree, _ = await service.get_serialized_dom_tree()
	assert tree is None and built._root is None  # the worker's state: a selector map, no tree
	return own.selector_map, built.selector_map


@pytest.mark.parametrize('path', ['/rich', '/form', '/epoch', '/heavy'])
async def test_the_worker_lists_what_browser_use_lists(
	registry: SessionRegistry, site: str, path: str, everything_to_the_worker: list[str]
) -> None:
	catalog = Catalog(registry)
	await catalog.call('browser_navigate', {'session_id': 'same', 'url': f'{site}{path}'}, Call())
	own, built = await both_ways(registry, 'same')
	assert everything_to_the_worker, 'the state was not built by the worker'
	assert list(built) == list(own)  # the same indices (backendNodeIds of this document), in the same order
	for index in own:
		assert described(built[index]) == described(own[index]), index
	assert len(own) >= (500 if path == '/heavy' else 3)
	# the pagination browser-use finds on its whole nodes is what it is told for the worker's map
	from browser_use.dom.service import DomService

	assert DomService.detect_pagination_buttons(built) == offload_state._pagination[id(built)][1]


@pytest.fixture(scope='module')
def corpus() -> Iterator[str]:
	from benchmarks.corpus import CorpusServer

	with CorpusServer() as server:
		yield server.url


def _corpus_pages() -> list[Any]:
	from benchmarks.corpus import PAGES, available

	return [pytest.param(p.path, id=p.name.replace(' ', '-')) for p in PAGES if not p.synthetic and available(p)] or [
		pytest.param('', marks=pytest.mark.skip(reason='no corpus page installed: python -m benchmarks.corpus --setup'))
	]


@pytest.mark.parametrize('path', _corpus_pages())
async def test_the_worker_lists_what_browser_use_lists_on_real_pages(
	registry: SessionRegistry, corpus: str, path: str, everything_to_the_worker: list[str]
) -> None:
	"""The corpus of the benchmarks (Debian's documentation pages: forms, long reference text, big
	tables, an index of links, a JavaScript app), each built both ways: browser-use's own pipeline
	in process, and the worker's (answers straight from the pipe, no cyclic collector, the tree's
	links dropped after it). Every listed element is the same: index, tag, attributes, text,
	snapshot and accessibility data, position, session. The intended differences are in the tree
	around them, which the state does not show: a worker's node has no parent (its xpath is its
	tag alone) and, as its only child, a text node holding its children's text."""
	catalog = Catalog(registry)
	await catalog.call('browser_navigate', {'session_id': 'corpus', 'url': f'{corpus}{path}'}, Call())
	count = {'session_id': 'corpus', 'expression': "document.querySelectorAll('*').length"}
	counted, deadline = '', time.monotonic() + 20
	while time.monotonic() < deadline:  # the search page renders its results after load: until it stops growing
		now = (await catalog.call('browser_evaluate', count, Call())).text
		if now == counted:
			break
		counted = now
		await asyncio.sleep(0.5)
	own, built = await both_ways(registry, 'corpus')
	assert everything_to_the_worker, 'the state was not built by the worker'
	assert list(built) == list(own)
	for index in own:
		assert described(built[index]) == described(own[index]), index
	assert len(own) >= 20, len(own)


async def test_a_node_survives_the_trip_between_processes(registry: SessionRegistry, site: str) -> None:
	catalog = Catalog(registry)
	await catalog.call('browser_navigate', {'session_id': 'trip', 'url': f'{site}/rich'}, Call())
	own, _ = await both_ways(registry, 'trip')
	node = next(n for n in own.values() if n.tag_name == 'button')
	from browser_use.dom.views import NodeType

	copy = pickle.loads(pickle.dumps(offload_state._detached(node, NodeType.TEXT_NODE)))
	assert described(copy) == described(node)
	assert copy.parent_node is None and copy.xpath == 'button'


async def test_clicks_and_typing_by_index_use_the_workers_elements(
	registry: SessionRegistry, site: str, everything_to_the_worker: list[str]
) -> None:
	catalog = Catalog(registry)
	sid = 'act'

	async def call(name: str, **args: Any) -> str:
		return (await catalog.call(name, {'session_id': sid, **args}, Call())).text

	await call('browser_navigate', url=f'{site}/heavy')
	marker = "document.addEventListener('click', e => { document.title = 'clicked ' + e.target.name; }); 1"
	await call('browser_evaluate', expression=marker)
	runs = len(everything_to_the_worker)
	elements = json.loads(await call('browser_get_state'))['interactive_elements']
	assert len(everything_to_the_worker) == runs + 1, 'the state was not built by the worker'
	clicked = next(e for e in elements if e.get('placeholder') == 'value 5')
	typed = next(e for e in elements if e.get('placeholder') == 'value 3')
	await call('browser_click', index=clicked['index'])
	await call('browser_type', index=typed['index'], text='typed by index')
	got = await call('browser_evaluate', expression="[document.title, document.querySelector('[name=v3]').value]")
	assert 'clicked v5' in got and 'typed by index' in got, got


def test_the_state_fields_a_click_reads_are_kept() -> None:
	"""``_detached`` replaces only the tree links: every other field of the node is copied."""
	from browser_use.dom.views import EnhancedDOMTreeNode

	tree_links = {'parent_node', 'children_nodes', 'content_document', 'shadow_roots'}
	fields = {f.name for f in dataclasses.fields(EnhancedDOMTreeNode)}
	assert tree_links <= fields  # else _detached would need another look


def test_the_worker_leaves_with_a_killed_server(tmp_path: Path) -> None:
	"""A SIGKILLed server leaves no worker behind (the worker watches its parent, from a session of
	its own at a lower priority), and a program without a ``__main__`` guard is not run again in the
	worker."""
	import os
	import signal
	import subprocess
	import sys

	import psutil

	from harness.servers import REPO, autogroup, wait_until

	script = tmp_path / 'unguarded.py'
	script.write_text(
		'import sys, time\n'
		f'sys.path.insert(0, {str(REPO)!r})\n'
		'from browser_use_mcp.patches import offload_state\n'
		'print("started", flush=True)\n'
		'while not offload_state.pool.ready(): time.sleep(0.05)\n'
		'print(offload_state.pool._started.result(), flush=True)\n'
		'time.sleep(120)\n'
	)
	server = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
	try:
		assert server.stdout is not None
		assert server.stdout.readline().strip() == 'started'
		worker = int(server.stdout.readline())  # not "started" again: the worker did not run the script
		# batch work below the server's loop: a session (so an autogroup) of its own, niced
		assert os.getsid(worker) == worker
		assert psutil.Process(worker).nice() == offload_state.WORKER_NICE
		if os.path.exists('/proc/self/autogroup'):
			assert autogroup(worker)[1] == offload_state.WORKER_NICE
	finally:
		server.send_signal(signal.SIGKILL)
		server.wait()

	def gone() -> bool:
		try:
			with open(f'/proc/{worker}/stat') as stat:
				return stat.read().split(') ', 1)[1].startswith('Z')  # ended, not yet reaped
		except FileNotFoundError:
			return True

	left = not wait_until(gone, timeout=10)
	if left:
		os.kill(worker, signal.SIGKILL)
	assert not left, f'worker {worker} outlived its server'


# -- the paint-order index: the same union as browser-use's, faster --------------------------------

coordinate = st.floats(min_value=-600, max_value=3000, allow_nan=False, allow_infinity=False)


@st.composite
def rectangles(draw: st.DrawFn) -> tuple[float, float, float, float]:
	x, y = draw(coordinate), draw(coordinate)
	return x, y, x + draw(st.floats(0, 1500)), y + draw(st.floats(0, 1500))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), rectangles()), max_size=120), st.integers(3, 200))
def test_the_indexed_union_answers_what_browser_uses_answers(steps: list[Any], cap: int) -> None:
	from browser_use.dom.serializer.paint_order import Rect

	from browser_use_mcp.patches import paint_order_index

	capped = type('Capped', (_original_union(),), {'__slots__': (), '_MAX_RECTS': cap})  # reach the cap too
	plain, fast = capped(), paint_order_index.indexed(capped)()
	for adding, (x1, y1, x2, y2) in steps:
		rect = Rect(x1, y1, x2, y2)
		if adding:
			assert fast.add(rect) == plain.add(rect)
		else:
			assert fast.contains(rect) == plain.contains(rect)
		assert fast._rects == plain._rects  # the same pieces, in the same order


def test_the_indexed_union_survives_rectangles_without_bands() -> None:
	from browser_use.dom.serializer.paint_order import Rect

	from browser_use_mcp.patches import paint_order_index

	original = _original_union()
	plain, fast = original(), paint_order_index.indexed(original)()
	for rect in (Rect(0, 0, 10, float('inf')), Rect(0, -1e9, 5, 1e9), Rect(2, 2, 4, 4), Rect(0, 5, 20, 8)):
		assert fast.contains(rect) == plain.contains(rect) and fast.add(rect) == plain.add(rect)
		assert fast._rects == plain._rects


def _original_union() -> type:
	from browser_use.dom.serializer import paint_order

	union = paint_order.RectUnionPure
	return union.__mro__[1] if union.__name__ == 'IndexedRectUnion' else union


def test_built_nodes_pickle_compact_and_come_back_equal() -> None:
	"""The worker sends a built state's nodes as their constructors' arguments: the same nodes (every
	field, shared objects still shared) in fewer bytes; a dataclass that could not be rebuilt that
	way keeps pickle's own reduction."""
	import copyreg
	import dataclasses
	import io
	import pickle

	from browser_use.dom import views

	from browser_use_mcp.patches import offload_state

	def node(node_id: int, text: str, snapshot: Any, children: list[Any] | None = None) -> Any:
		return views.EnhancedDOMTreeNode(
			node_id=node_id,
			backend_node_id=node_id + 100,
			node_type=views.NodeType.ELEMENT_NODE if children is not None else views.NodeType.TEXT_NODE,
			node_name='BUTTON' if children is not None else '#text',
			node_value=text,
			attributes={'class': 'btn', 'aria-label': text},
			is_scrollable=None,
			is_visible=True,
			absolute_position=views.DOMRect(1.0, 2.5, 30.0, 40.0),
			target_id='target',
			frame_id=None,
			session_id='session',
			content_document=None,
			shadow_root_type=None,
			shadow_roots=None,
			parent_node=None,
			children_nodes=children,
			ax_node=views.EnhancedAXNode(
				'ax', False, 'button', 'name', None, [views.EnhancedAXProperty('focusable', True)], None
			),
			snapshot_node=snapshot,
			has_js_click_listener=True,
			hidden_elements_info=[{'tag': 'a', 'text': 'far', 'pages': 2.0}],
			has_hidden_content=True,
			uuid=f'uuid-{node_id}',
		)

	shared = views.EnhancedSnapshotNode(
		True, 'pointer', views.DOMRect(0, 0, 5, 5), None, None, {'cursor': 'pointer'}, 3, None, 'v', False
	)
	elements = {i: node(i, f'element {i}', shared, [node(-i, f'text {i}', None)]) for i in range(1, 60)}
	built = offload_state.Built(elements, [{'button_type': 'next', 'backend_node_id': 7}], {'tree_ms': 1.0}, tags={1: 2})

	table = copyreg.dispatch_table.copy()
	for name in offload_state.COMPACT_CLASSES:
		cls = getattr(views, name)
		reducer = offload_state.compact_reducer(cls)
		assert reducer is not None, name
		table[cls] = reducer
	out = io.BytesIO()
	pickler = pickle.Pickler(out, pickle.HIGHEST_PROTOCOL)
	pickler.dispatch_table = table
	pickler.dump(built)
	back = pickle.loads(out.getvalue())
	assert back == built
	assert back.elements[1].snapshot_node is back.elements[2].snapshot_node  # still one object
	assert back.elements[3].uuid == 'uuid-3' and back.elements[3].children_nodes[0].node_value == 'text 3'
	assert len(out.getvalue()) < len(pickle.dumps(built, pickle.HIGHEST_PROTOCOL))

	@dataclasses.dataclass
	class Derived:
		a: int
		b: int = dataclasses.field(init=False, default=0)

	@dataclasses.dataclass
	class Checked:
		a: int

		def __post_init__(self) -> None:
			self.a += 1

	assert offload_state.compact_reducer(Derived) is None and offload_state.compact_reducer(Checked) is None
