"""browser_get_state's CPU work done in a worker process, not on the one event loop.

Why: on a page of a few thousand elements, browser-use 0.13.14's page state is Python work: the
CDP answers (snapshot, DOM and accessibility trees of ~25,000 nodes, several MB of JSON) are
decoded by cdp-use's message loop, ``DomService.get_dom_tree`` builds one ``EnhancedDOMTreeNode``
per DOM node, then ``DOMTreeSerializer`` walks it to pick the interactive elements. ~1 s on a
~5,000-element page, all of it on the event loop every session shares: while session A read such
a page, session B's 68 ms navigation took up to 758 ms.

What the patch does, only for the states ``browser_get_state`` and ``include_state`` ask for
(``compact_state()`` marks them; an agent run, content extraction and anything else keep
browser-use's own path, which they need for its text representation):

- ``DomService.get_serialized_dom_tree`` reads the same trees with the same CDP requests as the
  ``dom_capture`` patch (snapshot, DOM, accessibility tree of every frame, layout metrics and the
  click-listener scan, sent together), but the three large answers are not decoded on the loop.
  When the session's browser is a Chromium of ours (``cdp_proxy.pipe_behind``), the three
  requests go straight onto its DevTools pipe (``PipeMux.send_undecoded``) and their answers come
  back as the pipe's bytes: never relayed through our CDP endpoint's websocket to cdp-use, where
  each multi-MB answer held the loop three times (the pipe's reader, the endpoint's send,
  cdp-use's receive), 20-80 ms each on the corpus's largest page. For any other browser, cdp-use
  is asked not to decode them: their ids are in a range of our own, and cdp-use's ``json`` name
  becomes ``_JsonHook``, whose ``loads`` hands back a large answer with such an id as its text
  (``RawAnswer``), undecoded. Every other message is decoded as before.
- The answers' text goes to a worker process (``ProcessPoolExecutor``, spawned once, browser-use's
  DOM modules imported there), which decodes them and runs browser-use's own ``get_dom_tree``
  and ``DOMTreeSerializer.serialize_accessible_elements`` on them, unchanged, without Python's
  cyclic garbage collector (its passes over the ~700,000 objects of a 17,000-element page's build
  were half the build's time); the tree's parent links, its only cycles, are dropped after it
  is serialized, and what a build leaves is freed by a thread of the worker once the answer is
  on its way (~0.1-0.2 s of deallocation on that page), with a stand-in for
  the browser session that answers the node's CDP session id. It sends back the selector map
  (index -> ``EnhancedDOMTreeNode``), each node detached from the tree: no parent, and as its only
  child a text node holding what ``get_all_children_text(max_depth=2)`` gave in the worker; and
  what ``DomService.detect_pagination_buttons`` found on the whole nodes.
- The state is ``SerializedDOMState(_root=None, selector_map=...)``, whose indices, elements,
  attributes, positions, snapshot and accessibility data are browser-use's. Clicking and typing
  by index use the node's backendNodeId, session, target, frame, tag, attributes and children's
  text, all there. What differs: the node has no ``parent_node`` (its ``xpath`` is its tag alone:
  browser-use only logs it on these paths) and no subtree beyond that text; the DOM watchdog's
  ``enhanced_dom_tree`` is left empty (content extraction builds its own, as it does when none
  is cached); ``DomService.detect_pagination_buttons`` answers what the worker found for that
  selector map.
- The worker is spawned at the first large page, which waits for it (its import, ~1-4 s; up to
  ``START_WAIT``) rather than being built on the loop. When it cannot start, when a page has
  cross-origin iframes browser-use is configured to descend into (those need more CDP), or when
  anything fails, the state is built as browser-use builds it. Small pages (no answer of
  ``RAW_MIN`` bytes or more) are built in process, as before: there the worker's hop would cost
  more than it saves.

Refused or off: browser-use's own pipeline on the event loop.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import contextvars
import dataclasses
import functools
import gc
import itertools
import json
import logging
import multiprocessing
import os
import queue
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any, TypedDict

from browser_use_mcp.patches import Patch, Saved, is_active, pin_problems, quirks_viewport
from browser_use_mcp.processes import yield_to_the_server

logger = logging.getLogger(__name__)

BROWSER_USE_VERSION = '0.13.14'
CDP_USE_VERSION = '1.4.5'
_SERVICE = 'browser_use.dom.service:DomService'

RAW_MIN = 256 * 1024  # bytes of an answer from which it is worth leaving undecoded
RAW_LEAST = 8 * 1024  # the least any request may ask for (``page_caller``'s ``least``)
WORKER_NICE = 10  # the worker's scheduling niceness (and its autogroup's): a busy core goes to the event loop first
WORKERS = 1  # processes; each ~55 MB with browser-use's DOM modules imported
FIRST_ID = 1 << 29  # our request ids: above cdp-use's counter, below the context endpoint's 2**30
WAIT = 10.0  # s for the tree requests (browser-use's first wait)
KEPT_PAGINATIONS = 16  # states whose pagination buttons are kept (sessions building states at once)
START_WAIT = 20.0  # s the first large page waits for the worker to start; then it is built in process
# The large answers straight from our browser's pipe, and builds without the cyclic collector. False:
# as before those two changes (cdp-use relays the answers, the collector runs during builds), for a
# benchmark comparing the two call by call in one run (benchmarks/state_corpus.py --compare-fast).
FAST = True

_enabled = False
_saved = Saved()
_ids = itertools.count(FIRST_ID)
_raw_ids: dict[int, int] = {}  # id -> the size from which its answer is left undecoded
_compact: contextvars.ContextVar[bool] = contextvars.ContextVar('browser_use_mcp_compact_state', default=False)
# (CDP session id, Page.getFrameTree answer) the caller read just before the state
_frames: contextvars.ContextVar[tuple[str, dict[str, Any]] | None] = contextvars.ContextVar(
	'browser_use_mcp_known_frames', default=None
)


def active() -> bool:
	"""Whether this patch is applied (page states for ``compact_state`` built off the loop)."""
	return _enabled


@contextlib.contextmanager
def compact_state(frames: tuple[str | None, dict[str, Any] | None] = (None, None)) -> Iterator[None]:
	"""Within this block, page states may be built off the loop (``browser_get_state``'s own).
	``frames``: the frame tree of a CDP session that the caller has just read (to tell which
	document the state is of); the accessibility read of that session's state takes its frames
	from it instead of asking again, one round trip fewer on the state's path."""
	token = _compact.set(True)
	known = _frames.set(frames if frames[0] else None)  # type: ignore[arg-type]
	try:
		yield
	finally:
		_frames.reset(known)
		_compact.reset(token)


# -- cdp-use: large answers handed back undecoded -----------------------------------------------


class RawAnswer:
	"""The text of a CDP answer (``{"id": .., "result": ..}``), not decoded: a str from cdp-use, the
	pipe's bytes from our own browser's pipe."""

	__slots__ = ('text',)

	def __init__(self, text: str | bytes) -> None:
		self.text = text


class _JsonHook:
	"""Stands in for the ``json`` module in ``cdp_use.client``: ``loads`` leaves a large answer to
	one of our requests undecoded; everything else is ``json``'s."""

	dumps = staticmethod(json.dumps)

	@staticmethod
	def loads(raw: Any, *args: Any, **kwargs: Any) -> Any:
		if _raw_ids and isinstance(raw, str) and len(raw) >= RAW_LEAST and raw.startswith('{"id":'):
			end = raw.find(',', 6, 24)
			message_id = int(raw[6:end]) if end > 0 and raw[6:end].isdigit() else None
			least = _raw_ids.get(message_id) if message_id is not None else None
			if least is not None and len(raw) >= least and raw.startswith('"result"', end + 1):
				return {'id': message_id, 'result': RawAnswer(raw)}
		return json.loads(raw, *args, **kwargs)

	def __getattr__(self, name: str) -> Any:
		return getattr(json, name)


def _least(asked: int | None) -> int:
	"""The size from which a request's answer stays undecoded: what it asked for (``RAW_MIN`` if
	nothing), never under ``RAW_LEAST``."""
	return max(RAW_MIN if asked is None else asked, RAW_LEAST)


async def send_undecoded(
	client: Any, method: str, params: dict[str, Any], session_id: str | None, least: int | None = None
) -> Any:
	"""``client.send_raw``, with an id of ours: an answer of ``least`` bytes or more (``RAW_MIN`` by
	default) comes back as a ``RawAnswer``."""
	ws = client.ws
	if ws is None:
		raise ConnectionError('the CDP connection is closed')
	message_id = next(_ids)
	future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
	client.pending_requests[message_id] = future
	_raw_ids[message_id] = _least(least)
	try:
		message = {'id': message_id, 'method': method, 'params': params}
		if session_id:
			message['sessionId'] = session_id
		await ws.send(json.dumps(message))
		return await future
	finally:
		_raw_ids.pop(message_id, None)
		client.pending_requests.pop(message_id, None)


# -- the worker ----------------------------------------------------------------------------------


@dataclasses.dataclass
class Job:
	"""What the worker needs to build the state of one target (all picklable)."""

	target_id: str
	cdp_session_id: str | None
	browser_session_id: str
	snapshot: Any  # dict, or the answer's text
	dom_tree: Any
	ax_trees: list[Any]  # root frame first
	device_pixel_ratio: float
	listener_ids: set[int]
	settings: dict[str, Any]  # DomService's options
	collector_off: bool = True  # built without the cyclic collector (``FAST``)
	quirks: bool = False  # quirks_viewport: quirks-mode documents' HTML elements get their bodies' rects


@dataclasses.dataclass
class Built:
	elements: dict[int, Any]  # index -> detached EnhancedDOMTreeNode
	pagination: list[dict[str, Any]]
	timing: dict[str, float]
	needs_browser: bool = False  # more CDP was needed (cross-origin iframes): build in process instead
	tags: dict[int, int] | None = None  # a walked state's: each element's tag in its page's memo (in_page_state)


class NeedsBrowser(Exception):
	pass


class _Stand_in_session:  # noqa: N801
	"""What ``get_dom_tree`` asks of a browser session, answered without a browser."""

	def __init__(self, cdp_session_id: str | None) -> None:
		self._session = type('CDPSessionStandIn', (), {'session_id': cdp_session_id})()
		self.logger = logging.getLogger('browser_use_mcp.state_worker')

	async def get_or_create_cdp_session(self, target_id: Any = None, focus: bool = True) -> Any:
		return self._session

	async def get_all_frames(self) -> Any:
		raise NeedsBrowser('cross-origin iframes')

	def __getattr__(self, name: str) -> Any:
		raise NeedsBrowser(name)


def _answer(value: Any, ax: bool = False) -> Any:
	"""The ``result`` of an answer left undecoded; ``ax``: of an accessibility tree, of whose nodes
	only the fields browser-use reads are kept."""
	if isinstance(value, RawAnswer):
		value = value.text
	if not isinstance(value, (str, bytes)):
		return value
	decoders = _decoders()
	if decoders is None:
		return json.loads(value)['result']
	return decoders[1 if ax else 0].decode(value)['result']


_decoders_made: tuple[Any, Any] | None | bool = False


def _decoders() -> tuple[Any, Any] | None:
	"""msgspec's JSON decoders (any JSON; an accessibility tree's answer), or None without msgspec.

	msgspec decodes the same JSON into the same dicts and lists as ``json`` (2-3 times faster, and
	fewer objects for the collector). For the accessibility tree, the largest answer (12 MB on the
	corpus's largest page), it builds each node with only the fields browser-use's
	``DomService._build_enhanced_ax_node`` and its lookup read, skipping the rest (name sources,
	ignored reasons, Chromium's own role, frame and parent ids): a third of the decoding time, and
	what is kept is the same."""
	global _decoders_made
	if _decoders_made is False:
		try:
			import msgspec
		except ImportError:
			_decoders_made = None
		else:
			_decoders_made = (msgspec.json.Decoder(), msgspec.json.Decoder(_AXAnswer))
	return _decoders_made  # type: ignore[return-value]


class _AXValue(TypedDict, total=False):
	value: Any


class _AXProperty(TypedDict, total=False):
	name: Any
	value: _AXValue


class _AXNode(TypedDict, total=False):  # what DomService._build_enhanced_ax_node and get_dom_tree read
	nodeId: Any
	ignored: Any
	role: _AXValue
	name: _AXValue
	description: _AXValue
	properties: list[_AXProperty]
	childIds: list[Any]
	backendDOMNodeId: Any


class _AXResult(TypedDict, total=False):
	nodes: list[_AXNode]


class _AXAnswer(TypedDict):
	result: _AXResult


def _run(coroutine: Any) -> Any:
	"""Run a coroutine that never waits on anything (the stand-in answers at once)."""
	try:
		coroutine.send(None)
	except StopIteration as done:
		return done.value
	coroutine.close()
	raise NeedsBrowser('the tree build waited on something')


def _detached(node: Any, text_node_type: Any) -> Any:
	"""``node`` without its tree: no parent, one text child holding its children's text."""
	text = node.get_all_children_text(max_depth=2)
	child = dataclasses.replace(
		node,
		node_id=-node.backend_node_id,
		node_type=text_node_type,
		node_name='#text',
		node_value=text,
		attributes={},
		parent_node=None,
		children_nodes=None,
		content_document=None,
		shadow_roots=None,
		shadow_root_type=None,
		ax_node=None,
		snapshot_node=None,
		absolute_position=None,
		has_js_click_listener=False,
		_compound_children=[],
	)
	return dataclasses.replace(
		node, parent_node=None, children_nodes=[child] if text else None, content_document=None, shadow_roots=None
	)


_service_class: Any = None


def _service(trees: Any, cdp_session_id: str | None, settings: dict[str, Any]) -> Any:
	"""A ``DomService`` whose ``_get_all_trees`` answers ``trees``. The class is made once: a class
	made per build (a cycle through its own namespace) would hold the decoded answers, a few
	hundred thousand objects, until the cyclic collector found them."""
	global _service_class
	if _service_class is None:
		from browser_use.dom.service import DomService

		class Service(DomService):
			_trees: Any = None

			async def _get_all_trees(self, target_id: Any) -> Any:
				return self._trees

		_service_class = Service
	service = _service_class(_Stand_in_session(cdp_session_id), logging.getLogger('browser_use_mcp.state_worker'), **settings)
	service._trees = trees
	return service


def _unlink(root: Any) -> None:
	"""Drop the tree's parent links (its only cycles), so it is freed as soon as it is no longer used."""
	stack = [root]
	while stack:
		node = stack.pop()
		node.parent_node = None
		if node.children_nodes:
			stack.extend(node.children_nodes)
		if node.shadow_roots:
			stack.extend(node.shadow_roots)
		if node.content_document is not None:
			stack.append(node.content_document)


@contextlib.contextmanager
def _no_cyclic_collector() -> Iterator[None]:
	"""Without the cyclic collector while a state is built. A build allocates ~700,000 objects on a
	17,000-element page (the decoded answers, then a node, its snapshot and accessibility data per
	DOM node), and every 700 allocations the collector ran, older generations scanning everything
	built so far: half of the build's time on that page. Nothing a build makes needs it while it
	runs. What it leaves in cycles (the tree's parent links, dropped by ``_unlink``; browser-use's
	recursive inner functions, whose closures hold the tree's lookups) is collected after the
	build: in the worker, where the collector is off for good, by ``_free_trash`` once the answer
	is on its way; in process (small pages), by the collector's next pass."""
	was = gc.isenabled()
	gc.disable()
	try:
		yield
	finally:
		if was:
			gc.enable()


@contextlib.contextmanager
def _cyclic_collector() -> Iterator[None]:
	"""With the collector, as builds ran before ``_no_cyclic_collector`` (for comparisons)."""
	was = gc.isenabled()
	gc.enable()
	try:
		yield
	finally:
		if not was:
			gc.disable()


def build(job: Job) -> Built:
	"""browser-use's own tree build and serializer on trees read elsewhere (runs in the worker)."""
	return collected(_build, job, job.collector_off)


def collected(make: Any, job: Any, collector_off: bool = True) -> Built:
	"""``make(job, garbage)``, without the cyclic collector (``collector_off``); what it leaves in
	``garbage`` is freed after the answer is on its way (in the worker), or at once."""
	garbage: list[Any] = []
	try:
		with _no_cyclic_collector() if collector_off else _cyclic_collector():
			return make(job, garbage)
	finally:
		if _in_worker and garbage:  # freeing ~700,000 objects takes ~0.1-0.2 s: after the answer is sent
			_trash.put(list(garbage))
		garbage.clear()


_in_worker = False
_trash: queue.SimpleQueue[list[Any]] = queue.SimpleQueue()
FREE_AFTER = 0.1  # s: what a build leaves is freed this long after it ended (its answer is sent meanwhile)


def _free_trash() -> None:
	"""The worker's thread that frees what builds leave, once their answers are on their way, then
	runs the cyclic collector (off otherwise in the worker): ~0.1-0.4 s on a 17,000-element page,
	while the server sends the answer and the next state's CDP requests are answered."""
	while True:
		garbage = _trash.get()
		time.sleep(FREE_AFTER)
		garbage.clear()
		del garbage
		if _trash.empty():
			gc.collect()


def _build(job: Job, garbage: list[Any]) -> Built:
	from browser_use.dom.views import TargetAllTrees

	started, cpu = time.perf_counter(), time.thread_time()
	snapshot = _answer(job.snapshot)
	max_iframes = job.settings.get('max_iframes', 100)
	if snapshot and 'documents' in snapshot and len(snapshot['documents']) > max_iframes:
		snapshot['documents'] = snapshot['documents'][:max_iframes]
	ax_nodes: list[Any] = []
	for ax_tree in job.ax_trees:
		ax_nodes.extend(_answer(ax_tree, ax=True).get('nodes', []))
	dom_tree = _answer(job.dom_tree)
	if job.quirks:
		from browser_use_mcp.patches.quirks_viewport import fix_snapshot

		fix_snapshot(snapshot, dom_tree)
	trees = TargetAllTrees(
		snapshot=snapshot,
		dom_tree=dom_tree,
		ax_tree={'nodes': ax_nodes},
		device_pixel_ratio=job.device_pixel_ratio,
		cdp_timing={},
		js_click_listener_backend_ids=job.listener_ids or None,
	)
	decoded = time.perf_counter()
	garbage.append(trees)
	service = _service(trees, job.cdp_session_id, job.settings)
	try:
		root, _ = _run(service.get_dom_tree(target_id=job.target_id, all_frames=None))
	except NeedsBrowser:
		return Built({}, [], {}, needs_browser=True)
	finally:
		service._trees = None
	return serialized(
		root, job.settings.get('paint_order_filtering', True), job.browser_session_id, garbage, (started, decoded, cpu)
	)


def serialized(
	root: Any, paint_order: bool, browser_session_id: str, garbage: list[Any], marks: tuple[float, float, float]
) -> Built:
	"""browser-use's serializer on a built tree: its selector map detached, its pagination buttons, and
	the build's timing (``marks``: when the build started and its answers were decoded, its CPU time then)."""
	from browser_use.dom.serializer.serializer import DOMTreeSerializer
	from browser_use.dom.service import DomService
	from browser_use.dom.views import NodeType

	started, decoded, cpu = marks
	built = time.perf_counter()
	garbage.append(root)
	try:
		state, _ = DOMTreeSerializer(
			root, None, paint_order_filtering=paint_order, session_id=browser_session_id
		).serialize_accessible_elements()
		garbage.append(state)
		pagination = DomService.detect_pagination_buttons(state.selector_map)
		serialized = time.perf_counter()
		elements = {index: _detached(node, NodeType.TEXT_NODE) for index, node in state.selector_map.items()}
	finally:
		_unlink(root)
	return Built(
		elements,
		pagination,
		{
			'decode_ms': (decoded - started) * 1000,
			'tree_ms': (built - decoded) * 1000,
			'serialize_ms': (serialized - built) * 1000,
			'detach_ms': (time.perf_counter() - serialized) * 1000,
			'build_cpu_ms': (time.thread_time() - cpu) * 1000,
		},
	)


# patches of the serializer the worker applies when the server has them
IN_WORKER_TOO = ('paint_order_index', 'serializer_checks')
# the classes of a built state's nodes, sent back from the worker as their constructor's arguments
COMPACT_CLASSES = ('EnhancedDOMTreeNode', 'EnhancedSnapshotNode', 'EnhancedAXNode', 'EnhancedAXProperty', 'DOMRect')


def compact_reducer(cls: type) -> Any:
	"""A pickle reducer that sends a dataclass instance as ``cls(*values)``, every field in order; None
	when ``cls`` could not be rebuilt that way (a field its ``__init__`` does not take, a
	``__post_init__``). A slots dataclass otherwise pickles as a list of values that
	``__setstate__`` sets one by one after asking ``dataclasses.fields`` for their names, per
	instance: ~3 ms of the server's loads and ~4 ms of the worker's dumps for the 346 elements of the
	Bootstrap cheatsheet (1.2 and 3.0 this way, 174 KB → 109 KB)."""
	if not dataclasses.is_dataclass(cls) or hasattr(cls, '__post_init__'):
		return None
	fields = dataclasses.fields(cls)
	if not all(f.init for f in fields):
		return None
	names = tuple(f.name for f in fields)

	def reduce(obj: Any) -> tuple[type, tuple[Any, ...]]:
		return cls, tuple([getattr(obj, name) for name in names])

	return reduce


def _compact_pickles() -> None:
	"""Register ``compact_reducer`` with multiprocessing's pickler (in the worker: its answers)."""
	from multiprocessing.reduction import ForkingPickler

	from browser_use.dom import views

	for name in COMPACT_CLASSES:
		cls = getattr(views, name, None)
		reducer = compact_reducer(cls) if isinstance(cls, type) else None
		if reducer is not None:
			ForkingPickler.register(cls, reducer)


def compact_classes(_job: Any = None) -> list[str]:
	"""The classes this process's multiprocessing pickler sends compact (``pool.run(None, compact_classes)``
	asks the worker)."""
	from multiprocessing.reduction import ForkingPickler

	return sorted(cls.__name__ for cls in ForkingPickler._extra_reducers if cls.__name__ in COMPACT_CLASSES)


def _warm(parent: int, patch_names: tuple[str, ...] = ()) -> None:
	"""The worker's initializer: leave with the server, import what ``build`` uses once, and apply
	the serializer's patches the server applied."""
	import importlib

	global _in_worker
	threading.Thread(target=_leave_with, args=(parent,), name='leave-with-server', daemon=True).start()
	threading.Thread(target=_free_trash, name='free-built-states', daemon=True).start()
	_in_worker = True
	# batch work: the server's loop goes first. In a session of its own, so that it weighs against
	# the browsers as one more batch process, not as part of the server (processes.yield_to_the_server)
	with contextlib.suppress(OSError):
		os.setsid()
	yield_to_the_server(WORKER_NICE)  # (this process)
	import browser_use.dom.serializer.serializer  # noqa: F401
	import browser_use.dom.service  # noqa: F401

	from browser_use_mcp import patches

	for name in patch_names:
		patches.apply(importlib.import_module(f'browser_use_mcp.patches.{name}').PATCH, enabled=True)
	_compact_pickles()
	# the cyclic collector runs after each build (``_free_trash``), never during one nor while its
	# answer is sent; what the imports made is never looked at again
	gc.disable()
	gc.freeze()


def _leave_with(parent: int) -> None:
	"""End this worker once the server is gone. A worker holds both ends of its job queue's pipe,
	so a killed server's pipe never reads as closed to it."""
	while os.getppid() == parent:
		time.sleep(0.5)
	os._exit(0)


def _ping() -> int:
	return os.getpid()


@contextlib.contextmanager
def _main_not_reimported() -> Iterator[None]:
	"""A spawned process imports the parent's ``__main__`` again (by file or by module name) before
	it runs anything; a program embedding the server without an ``if __name__ == '__main__'`` guard
	would run again in the worker. The worker needs none of it: while a worker is spawned (within
	``submit``), ``__main__`` names no file and no module."""
	main = sys.modules.get('__main__')
	if main is None:
		yield
		return
	saved = {name: main.__dict__[name] for name in ('__spec__', '__file__') if name in main.__dict__}
	main.__dict__['__spec__'] = None
	main.__dict__.pop('__file__', None)
	try:
		yield
	finally:
		main.__dict__.pop('__spec__', None)
		main.__dict__.update(saved)


class _Pool:
	"""The worker processes, started on first need; until they answer, ``ready`` is False."""

	def __init__(self) -> None:
		self._lock = threading.Lock()
		self.executor: concurrent.futures.ProcessPoolExecutor | None = None
		self._started: concurrent.futures.Future[int] | None = None
		self.broken = False
		self._exit_registered = False
		self.in_flight = 0  # jobs sent and not answered yet (a build ahead is made only when it is 0)

	def ready(self) -> bool:
		"""Whether the workers can take a job now; starts them (without waiting) when not yet."""
		if self.broken:
			return False
		with self._lock:
			if self.executor is None:
				context = multiprocessing.get_context('spawn')
				self.executor = concurrent.futures.ProcessPoolExecutor(
					WORKERS,
					mp_context=context,
					initializer=_warm,
					initargs=(os.getpid(), tuple(name for name in IN_WORKER_TOO if is_active(name))),
				)
				with _main_not_reimported():
					self._started = self.executor.submit(_ping)
				if not self._exit_registered:  # before the interpreter tears down what the executor's threads use
					atexit.register(self.shutdown, True)
					self._exit_registered = True
				logger.info('starting %d page-state worker process(es)', WORKERS)
			started = self._started
		if started is None or not started.done():
			return False
		if started.exception() is not None:
			logger.warning('the page-state worker could not start (%s); states are built in process', started.exception())
			self.broken = True
			return False
		from browser_use_mcp import busy

		busy.WATCH.add_process(started.result())  # a worker that keeps a core busy yields too (once per watch)
		return True

	async def wait_ready(self, timeout: float) -> bool:
		"""Whether the workers can take a job, waiting up to ``timeout`` for them to start (the
		first large page waits for the spawn rather than holding the loop with an in-process build)."""
		if self.ready():
			return True
		started = self._started
		if started is None:
			return False
		with contextlib.suppress(Exception):
			await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(started)), timeout)
		return self.ready()

	async def run(self, job: Any, fn: Any = None) -> Built:
		"""``fn(job)`` in the worker (``build`` by default)."""
		assert self.executor is not None
		try:
			with self._lock:
				self.in_flight += 1
			try:
				with _main_not_reimported():  # a worker that died is replaced within submit
					submitted = self.executor.submit(fn or build, job)
			except BaseException:
				self._answered(None)
				raise
			submitted.add_done_callback(self._answered)
			return await asyncio.wrap_future(submitted)
		except concurrent.futures.process.BrokenProcessPool:
			logger.warning('the page-state worker died; a new one is started for the next large page')
			with self._lock:
				self.executor, self._started = None, None
			raise

	def _answered(self, _done: concurrent.futures.Future[Any] | None) -> None:  # (on the executor's thread)
		with self._lock:
			self.in_flight -= 1

	def shutdown(self, wait: bool = False) -> None:
		with self._lock:
			executor, self.executor, self._started = self.executor, None, None
		if executor is not None:
			executor.shutdown(wait=wait, cancel_futures=True)


pool = _Pool()


# -- the main side -------------------------------------------------------------------------------


@dataclasses.dataclass
class _Trees:
	snapshot: Any
	dom_tree: Any
	ax_trees: list[Any]
	device_pixel_ratio: float
	listener_ids: set[int]
	cdp_session_id: str | None

	def large(self) -> bool:
		return any(isinstance(a, RawAnswer) for a in (self.snapshot, self.dom_tree, *self.ax_trees))


def page_caller(browser_session: Any, cdp_session: Any, direct: bool = True) -> Any:
	"""``call(method, params, raw=False)`` on a page's CDP session: straight onto our browser's pipe
	when it is one of ours and ``direct`` (never relayed through the CDP endpoint to cdp-use), else
	through cdp-use. With ``raw``, an answer of ``least`` bytes or more (at least ``RAW_LEAST``) comes
	back undecoded (``RawAnswer``); an error is raised as cdp-use says it."""
	from browser_use_mcp.providers.cdp_proxy import pipe_behind

	client, session_id = cdp_session.cdp_client, cdp_session.session_id
	pipe = pipe_behind(browser_session.cdp_url) if session_id and direct else None

	async def call(method: str, params: dict[str, Any], raw: bool = False, least: int | None = None) -> Any:
		if pipe is None:
			if raw:
				return await send_undecoded(client, method, params, session_id, least)
			return await client.send_raw(method, params, session_id=session_id)
		answer = await pipe.send_undecoded(next(_ids), method, params, session_id)
		if answer.find(b'"result":', 6, 40) < 0:  # an error (small)
			error = json.loads(answer).get('error') or {}
			raise RuntimeError(f'{method}: {error.get("message", "CDP error")} ({error.get("code")})')
		if raw and len(answer) >= _least(least):
			return RawAnswer(answer)
		return json.loads(answer)['result']

	return call


async def read_trees(service: Any, target_id: str) -> _Trees:
	"""The requests of ``dom_capture.read_all_trees``, the three large answers left undecoded."""
	from browser_use.dom import service as module

	from browser_use_mcp.patches.dom_capture import click_listener_ids, listener_script, snapshot_request

	cdp_session = await service.browser_session.get_or_create_cdp_session(target_id=target_id, focus=False)
	client, session_id = cdp_session.cdp_client, cdp_session.session_id
	call = page_caller(service.browser_session, cdp_session, direct=FAST)

	async def large(method: str, params: dict[str, Any]) -> Any:
		"""One of the large answers, undecoded (a small page's decoded: its build stays in process)."""
		return await call(method, params, raw=True)

	script = listener_script(module._MAX_JS_CLICK_LISTENER_ELEMENTS, module._JS_CLICK_LISTENER_OVERFLOW)
	listeners = asyncio.ensure_future(click_listener_ids(client, session_id, script, module._DESCRIBE_NODE_BATCH_SIZE))

	snapshot_params = snapshot_request()

	async def ax_trees() -> list[Any]:
		known = _frames.get()
		if known is not None and known[0] == session_id:
			frame_tree = known[1]  # read a moment ago, to tell the document: its frames are these
		else:
			frame_tree = await client.send.Page.getFrameTree(session_id=session_id)

		def frame_ids(node: dict[str, Any]) -> list[str]:
			ids = [node['frame']['id']]
			for child in node.get('childFrames') or []:
				ids.extend(frame_ids(child))
			return ids

		answers = await asyncio.gather(
			*(large('Accessibility.getFullAXTree', {'frameId': frame_id}) for frame_id in frame_ids(frame_tree['frameTree'])),
			return_exceptions=True,
		)
		if isinstance(answers[0], BaseException):
			raise answers[0]
		return [a for a in answers if not isinstance(a, BaseException)]

	try:
		snapshot, dom_tree, ax, ratio = await asyncio.wait_for(
			asyncio.gather(
				large('DOMSnapshot.captureSnapshot', snapshot_params),
				large('DOM.getDocument', {'depth': -1, 'pierce': True}),
				ax_trees(),
				service._get_viewport_ratio(target_id),
			),
			WAIT,
		)
		try:
			listener_ids = await asyncio.wait_for(asyncio.shield(listeners), 2.0)
		except TimeoutError:
			listener_ids = set()
	finally:
		if not listeners.done():
			listeners.cancel()
	return _Trees(snapshot, dom_tree, ax, ratio, listener_ids, session_id)


_pagination: dict[int, tuple[dict[int, Any], list[dict[str, Any]]]] = {}  # id(selector map) -> (it, its buttons)


async def _offloaded(service: Any) -> Any:
	"""``(SerializedDOMState, None, timing)`` built by the worker, or None to build in process."""
	from browser_use.dom.views import SerializedDOMState

	started = time.perf_counter()
	target_id = service.browser_session.agent_focus_target_id
	trees = await read_trees(service, target_id)
	read = time.perf_counter()
	job = Job(
		target_id=target_id,
		cdp_session_id=trees.cdp_session_id,
		browser_session_id=service.browser_session.id,
		snapshot=trees.snapshot,
		dom_tree=trees.dom_tree,
		ax_trees=trees.ax_trees,
		device_pixel_ratio=trees.device_pixel_ratio,
		listener_ids=trees.listener_ids,
		collector_off=FAST,
		quirks=quirks_viewport.active,
		settings={
			'cross_origin_iframes': service.cross_origin_iframes,
			'paint_order_filtering': service.paint_order_filtering,
			'max_iframes': service.max_iframes,
			'max_iframe_depth': service.max_iframe_depth,
			'viewport_threshold': service.viewport_threshold,
		},
	)
	if trees.large() and await pool.wait_ready(START_WAIT):
		built = await pool.run(job)
	else:  # a small page (cheaper here than a hop), or no worker could be started
		built = build(job)
	if built.needs_browser:
		return None
	state = SerializedDOMState(_root=None, selector_map=built.elements)
	remember_pagination(state.selector_map, built.pagination)
	timing = {'get_all_trees_total_ms': (read - started) * 1000, **built.timing}
	timing['get_serialized_dom_tree_total_ms'] = (time.perf_counter() - started) * 1000
	return state, None, timing


def remember_pagination(selector_map: dict[int, Any], buttons: list[dict[str, Any]]) -> None:
	"""What ``detect_pagination_buttons`` answers for ``selector_map`` (found where it was built)."""
	_pagination[id(selector_map)] = (selector_map, buttons)
	while len(_pagination) > KEPT_PAGINATIONS:  # each is asked for right after its state is built
		_pagination.pop(next(iter(_pagination)))


# The in-page route (``in_page_state``), when that patch is active: a state from one walk of the page,
# or None to read the three trees
walked_route: Any = None


def _serialized_tree(original: Any) -> Any:
	@functools.wraps(original)
	async def get_serialized_dom_tree(self: Any, previous_cached_state: Any = None) -> Any:
		if _enabled and _compact.get():
			try:
				route = walked_route
				result = await route(self) if route is not None else None
				if result is None:
					result = await _offloaded(self)
			except asyncio.CancelledError:
				raise
			except Exception as exc:
				logger.info('page state built in process: %s: %s', type(exc).__name__, exc)
				result = None
			if result is not None:
				return result
		return await original(self, previous_cached_state)

	return get_serialized_dom_tree


def _pagination_buttons(original: Any) -> Any:
	@functools.wraps(original)
	def detect_pagination_buttons(selector_map: dict[int, Any]) -> list[dict[str, Any]]:
		known = _pagination.get(id(selector_map))
		if known is not None and known[0] is selector_map:
			return known[1]
		return original(selector_map)

	return detect_pagination_buttons


def _apply() -> None:
	global _enabled
	import cdp_use.client
	from browser_use.dom.service import DomService

	_saved.replace(DomService, 'get_serialized_dom_tree', _serialized_tree(DomService.__dict__['get_serialized_dom_tree']))
	detect = DomService.__dict__['detect_pagination_buttons'].__func__
	_saved.replace(DomService, 'detect_pagination_buttons', staticmethod(_pagination_buttons(detect)))
	_saved.replace(cdp_use.client, 'json', _JsonHook())
	_enabled = True


def _revert() -> None:
	global _enabled
	_enabled = False
	_saved.restore()
	_pagination.clear()


def _checks() -> list[str]:
	found = pin_problems(
		'cdp-use',
		(CDP_USE_VERSION,),
		{
			'cdp_use.client:CDPClient._handle_messages': 'aadafa3b1676b0e7',
			'cdp_use.client:CDPClient.send_raw': 'e4cf09f79f25715e',
		},
	)
	import cdp_use.client

	if getattr(cdp_use.client, 'json', None) not in (json,) and not isinstance(cdp_use.client.json, _JsonHook):
		found.append('cdp_use.client.json is no longer the json module')
	return found


PATCH = Patch(
	name='offload_state',
	title='page state built in a worker process',
	changes='for browser_get_state and include_state, ``DomService.get_serialized_dom_tree`` leaves the large CDP answers '
	"undecoded (read straight from our browser's pipe, or cdp-use's ``json`` name answers them as text) and runs browser-use's own tree build and serializer on "
	'them in a worker process, which returns the selector map with each node detached from its tree; '
	'``DomService.detect_pagination_buttons`` answers what the worker found for that map.',
	why='decoding and building the tree of a ~5,000-element page took ~1 s of Python on the event loop every session '
	"shares: another session's 68 ms navigation took up to 758 ms meanwhile. Relaying the multi-MB answers through "
	'the CDP endpoint held the loop 20-80 ms at a time; the cyclic collector was half of the build on large pages.',
	package='browser-use',
	versions=(BROWSER_USE_VERSION,),
	sources={
		f'{_SERVICE}.get_serialized_dom_tree': '9a7cc394722924b5',
		f'{_SERVICE}.get_dom_tree': 'da6b8cbcab93f199',
		f'{_SERVICE}.detect_pagination_buttons': 'eb88258463d61e07',
		f'{_SERVICE}._get_ax_tree_for_all_frames': '635d591049e9bdab',
		f'{_SERVICE}._get_viewport_ratio': '51c08042009abd6f',
		f'{_SERVICE}._get_all_trees': '7eea4487ae2e6d2c',
		'browser_use.dom.serializer.serializer:DOMTreeSerializer.__init__': '36ebac6c03c08cc6',
		'browser_use.dom.serializer.serializer:DOMTreeSerializer.serialize_accessible_elements': '9c3e2d369e26ce91',
		'browser_use.dom.views:EnhancedDOMTreeNode': '489001e674180251',
		'browser_use.dom.views:TargetAllTrees': 'c2dceef97b82c1b1',
	},
	replaces=(
		f'{_SERVICE}.get_serialized_dom_tree',
		f'{_SERVICE}.detect_pagination_buttons',
		'cdp_use.client:json',
	),
	switch='offload_state',
	when_refused="browser-use's pipeline on the event loop: a large page's state stalls every other session for its "
	'duration (~1 s on ~5,000 elements)',
	apply=_apply,
	revert=_revert,
	checks=_checks,
	logger=logger.name,
	refused_message='page states built on the event loop (a large page stalls the other sessions)',
)
