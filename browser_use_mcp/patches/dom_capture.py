"""The page's DOM, layout and accessibility trees read in one round of CDP requests.

Why: for every page state browser-use's ``DomService._get_all_trees`` (0.13.14) sends its CDP
requests in four sequential steps before the ones that matter: a ``document.readyState``
evaluation whose answer it ignores, a script reading every iframe's scroll position that it only
logs, then the detection of elements with JavaScript click listeners (an evaluation, then
``Runtime.getProperties``, then ``DOM.describeNode`` per element, then a release), and only then
the snapshot, the DOM tree, the accessibility tree and the layout metrics in parallel. Each step
waits for the previous one's round trip: ~4 ms of a ~30 ms ``browser_get_state`` on a small page.

The patch replaces ``_get_all_trees`` with ``read_all_trees``, which skips the two readings
nobody uses and sends the listener detection together with the four tree requests. It returns
the same ``TargetAllTrees``: the same requests with the same parameters, the same listener
script semantics (click, mousedown, mouseup, pointerdown, pointerup; none on pages of more than
10,000 elements; none when more than browser-use's limit have one), the same waits and retry
(10 s, then 2 s more for the requests still pending), the same tolerance of a failed
accessibility tree and the same iframe limit. A renderer answers one session's requests in the
order they were sent, so on a page that is not changing the answers are identical; on a page that
is changing, the listener scan and the snapshot are now microseconds apart instead of
milliseconds. The listener scan's remote objects are released as one object group, without
waiting for the answer. The scan's evaluation asks for Chromium's deep serialization of its
array (made for WebDriver BiDi), whose elements carry their ``backendNodeId``: the ids come in
that one answer, where browser-use asks for the array's properties and then describes each
element (two more round trips on the state's path, more with many listeners). A browser whose
answer lacks an id for every element is asked the old way.

Second, while ``DomService.get_dom_tree`` builds its tree, ``get_or_create_cdp_session(target,
focus=False)`` answers from what it answered first for that target in the same build. The
builder asks it once per DOM node (to tag each node with its CDP session), and each ask reads a
private pydantic attribute and validates the session: ~20 us a node, over a third of the
Python time of a state on a page of 25,000 nodes. Within one build the answer cannot usefully
change: a target that detaches mid-build leaves its nodes with its old session id instead of
none, and an index of that state is refused as stale either way (``tools.common.is_attached``).
Every other caller, and every call with ``focus=True`` or no target, is untouched.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import itertools
import logging
import time
from typing import Any

from browser_use_mcp.patches import Patch, Saved
from browser_use_mcp.tasks import held

logger = logging.getLogger(__name__)

BROWSER_USE_VERSION = '0.13.14'
_SERVICE = 'browser_use.dom.service:DomService'

FIRST_WAIT = 10.0  # s for all tree requests, as browser-use waits
RETRY_WAIT = 2.0  # s for the retried ones
LISTENER_GRACE = 2.0  # s the listener scan may take after the trees arrived; then the state goes without it
HEAVY_PAGE = 10_000  # elements beyond which no listener scan is made (browser-use's threshold)
CLICK_EVENTS = ('click', 'mousedown', 'mouseup', 'pointerdown', 'pointerup')

_saved = Saved()
_groups = itertools.count()
# target id -> CDP session, while a DOM tree is being built in this context
_build_sessions: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
	'browser_use_mcp_dom_build_sessions', default=None
)


def snapshot_request() -> dict[str, object]:
	"""The DOMSnapshot.captureSnapshot parameters browser-use's tree building needs (both capture paths)."""
	from browser_use.dom.enhanced_snapshot import REQUIRED_COMPUTED_STYLES

	return {
		'computedStyles': REQUIRED_COMPUTED_STYLES,
		'includePaintOrder': True,
		'includeDOMRects': True,
		'includeBlendedBackgroundColors': False,
		'includeTextColorOpacities': False,
	}


def listener_script(limit: int, overflow: str) -> str:
	"""The elements with a click-like listener, as an array of references; ``overflow`` when more
	than ``limit`` have one; null without DevTools' command line API or on a heavy page."""
	kinds = ', '.join(f"'{kind}'" for kind in CLICK_EVENTS)
	return f"""(() => {{
	if (typeof getEventListeners !== 'function') return null;
	const elements = document.querySelectorAll('*');
	if (elements.length > {HEAVY_PAGE}) return null;
	const kinds = [{kinds}];
	const found = [];
	for (const element of elements) {{
		let listeners;
		try {{ listeners = getEventListeners(element); }} catch (e) {{ continue; }}
		if (kinds.some(kind => listeners[kind])) {{
			found.push(element);
			if (found.length > {limit}) return {overflow!r};
		}}
	}}
	return found;
}})()"""


# The array's elements serialized with their backendNodeId (Chromium's deep serialization, made
# for WebDriver BiDi): the ids come in the evaluation's own answer, with no further round trip.
DEEP_NODES = {'serialization': 'deep', 'maxDepth': 1, 'additionalParameters': {'maxNodeDepth': 0, 'includeShadowTree': 'none'}}


def backend_ids(value: Any) -> set[int] | None:
	"""The backendNodeIds of a deep-serialized array of elements; None when the answer does not
	carry every one of them (a browser without deep serialization): then they are asked for."""
	if not isinstance(value, dict) or value.get('type') != 'array' or not isinstance(value.get('value'), list):
		return None
	found = set()
	for item in value['value']:
		node = item.get('value') if isinstance(item, dict) and item.get('type') == 'node' else None
		backend_id = node.get('backendNodeId') if isinstance(node, dict) else None
		if not isinstance(backend_id, int):
			return None
		found.add(backend_id)
	return found


async def click_listener_ids(client: Any, session_id: str, script: str, batch: int) -> set[int]:
	"""backendNodeIds of the elements ``script`` finds; empty when anything fails (as upstream)."""
	group = f'browser_use_mcp_listeners_{next(_groups)}'
	send = client.send
	try:
		params = {
			'expression': script,
			'includeCommandLineAPI': True,
			'returnByValue': False,
			'objectGroup': group,
			'serializationOptions': DEEP_NODES,
		}
		evaluated = await send.Runtime.evaluate(params=params, session_id=session_id)
		array_id = (evaluated.get('result') or {}).get('objectId')
		if not array_id:
			return set()
		direct = backend_ids(evaluated['result'].get('deepSerializedValue'))
		if direct is not None:
			return direct
		listed = await send.Runtime.getProperties(params={'objectId': array_id, 'ownProperties': True}, session_id=session_id)
		object_ids = [
			prop['value']['objectId']
			for prop in listed.get('result', [])
			if isinstance(prop, dict)
			and str(prop.get('name', '')).isdigit()
			and isinstance(prop.get('value'), dict)
			and isinstance(prop['value'].get('objectId'), str)
		]
		found: set[int] = set()
		for start in range(0, len(object_ids), batch):
			described = await asyncio.gather(
				*(
					send.DOM.describeNode(params={'objectId': object_id}, session_id=session_id)
					for object_id in object_ids[start : start + batch]
				),
				return_exceptions=True,
			)
			for answer in described:
				backend_id = answer.get('node', {}).get('backendNodeId') if isinstance(answer, dict) else None
				if backend_id is not None:
					found.add(backend_id)
		return found
	except asyncio.CancelledError:
		raise
	except Exception as exc:
		logger.debug('click listener detection failed: %r', exc)
		return set()
	finally:
		# off the state's critical path: the renderer handles it after what was sent before
		held(asyncio.ensure_future(_release(send, group, session_id)), _releasing)


_releasing: set[asyncio.Task[Any]] = set()  # releases in flight (a task nobody references may be collected)


async def _release(send: Any, group: str, session_id: str) -> None:
	try:
		await send.Runtime.releaseObjectGroup(params={'objectGroup': group}, session_id=session_id)
	except Exception as exc:  # the page went away, and its objects with it
		logger.debug('could not release the listener scan objects: %r', exc)


async def read_all_trees(self: Any, target_id: str) -> Any:
	"""Stands in for ``DomService._get_all_trees`` (see the module docstring)."""
	from browser_use.dom import service as module
	from browser_use.dom.views import TargetAllTrees

	cdp_session = await self.browser_session.get_or_create_cdp_session(target_id=target_id, focus=False)
	client, session_id = cdp_session.cdp_client, cdp_session.session_id
	started = time.time()
	script = listener_script(module._MAX_JS_CLICK_LISTENER_ELEMENTS, module._JS_CLICK_LISTENER_OVERFLOW)
	listeners = asyncio.ensure_future(click_listener_ids(client, session_id, script, module._DESCRIBE_NODE_BATCH_SIZE))
	snapshot_params = snapshot_request()
	requests = {
		'snapshot': lambda: client.send.DOMSnapshot.captureSnapshot(params=snapshot_params, session_id=session_id),
		'dom_tree': lambda: client.send.DOM.getDocument(params={'depth': -1, 'pierce': True}, session_id=session_id),
		'ax_tree': lambda: self._get_ax_tree_for_all_frames(target_id),
		'device_pixel_ratio': lambda: self._get_viewport_ratio(target_id),
	}
	try:
		tasks = {key: asyncio.ensure_future(make()) for key, make in requests.items()}
		_, pending = await asyncio.wait(tasks.values(), timeout=FIRST_WAIT)
		if pending:
			for task in pending:
				task.cancel()
			for key, task in list(tasks.items()):
				if task in pending:
					tasks[key] = asyncio.ensure_future(requests[key]())
			_, still = await asyncio.wait([t for t in tasks.values() if not t.done()], timeout=RETRY_WAIT)
			for task in still:
				task.cancel()
		results: dict[str, Any] = {}
		failed = []
		for key, task in tasks.items():
			error: BaseException | None = None
			if not task.done() or task.cancelled():
				self.logger.warning(f'CDP request {key} timed out')
				error = TimeoutError()
			elif task.exception() is not None:
				error = task.exception()
				self.logger.warning(f'CDP request {key} failed with exception: {error}')
			if error is None:
				results[key] = task.result()
			elif key == 'ax_tree':
				results[key] = {'nodes': []}  # the structure is usable without accessibility names
			else:
				failed.append(key)
		if failed:
			raise TimeoutError(f'CDP requests failed or timed out: {", ".join(failed)}')
		trees_done = time.time()
		try:
			listener_ids = await asyncio.wait_for(asyncio.shield(listeners), LISTENER_GRACE)
		except TimeoutError:
			self.logger.debug('click listener detection still running; the state goes without it')
			listener_ids = set()
	finally:
		if not listeners.done():
			listeners.cancel()
	snapshot = results['snapshot']
	if snapshot and 'documents' in snapshot and len(snapshot['documents']) > self.max_iframes:
		self.logger.warning(
			f'⚠️ Limiting processing of {len(snapshot["documents"])} iframes on page to only first {self.max_iframes} to prevent crashes!'
		)
		snapshot['documents'] = snapshot['documents'][: self.max_iframes]
	from browser_use_mcp.patches import quirks_viewport

	if quirks_viewport.active:
		quirks_viewport.fix_snapshot(snapshot, results['dom_tree'])
	return TargetAllTrees(
		snapshot=snapshot,
		dom_tree=results['dom_tree'],
		ax_tree=results['ax_tree'],
		device_pixel_ratio=results['device_pixel_ratio'],
		cdp_timing={
			'cdp_parallel_calls_ms': (trees_done - started) * 1000,
			'js_listener_detection_ms': (time.time() - started) * 1000,
		},
		js_click_listener_backend_ids=listener_ids or None,
	)


def _remembering_sessions(get_dom_tree: Any) -> Any:
	"""``DomService.get_dom_tree`` with a session memo for the duration of the build."""

	@functools.wraps(get_dom_tree)
	async def build(self: Any, *args: Any, **kwargs: Any) -> Any:
		if _build_sessions.get() is not None:  # a nested build (a cross-origin iframe): the outer memo serves
			return await get_dom_tree(self, *args, **kwargs)
		token = _build_sessions.set({})
		try:
			return await get_dom_tree(self, *args, **kwargs)
		finally:
			_build_sessions.reset(token)

	return build


def _remembered(get_or_create_cdp_session: Any) -> Any:
	"""``BrowserSession.get_or_create_cdp_session``, answering from the build's memo when there is one."""

	@functools.wraps(get_or_create_cdp_session)
	async def get_session(self: Any, target_id: Any = None, focus: bool = True) -> Any:
		memo = _build_sessions.get()
		if memo is None or focus or target_id is None:
			return await get_or_create_cdp_session(self, target_id, focus)
		session = memo.get(target_id)
		if session is None:
			session = memo[target_id] = await get_or_create_cdp_session(self, target_id, focus)
		return session

	return get_session


def _apply() -> None:
	from browser_use.browser.session import BrowserSession
	from browser_use.dom.service import DomService

	_saved.replace(DomService, '_get_all_trees', read_all_trees)
	_saved.replace(DomService, 'get_dom_tree', _remembering_sessions(DomService.__dict__['get_dom_tree']))
	_saved.replace(BrowserSession, 'get_or_create_cdp_session', _remembered(BrowserSession.__dict__['get_or_create_cdp_session']))


def _revert() -> None:
	_saved.restore()


PATCH = Patch(
	name='dom_capture',
	title='page trees read in one round of CDP requests',
	changes='``DomService._get_all_trees`` is replaced by one that sends the click-listener scan together with the '
	"snapshot, DOM, accessibility and layout requests (its element ids in the evaluation's own answer, by deep "
	'serialization), and skips a ``readyState`` read and an iframe-scroll read whose '
	'answers browser-use does not use; during ``DomService.get_dom_tree``, '
	'``BrowserSession.get_or_create_cdp_session(target, focus=False)`` answers from its first answer for that target.',
	why='four sequential round trips before the tree requests cost ~4 ms of every browser_get_state on a small page, '
	'and a session lookup per DOM node (~20 us each) over a third of the Python time on a page of 25,000 nodes.',
	package='browser-use',
	versions=(BROWSER_USE_VERSION,),
	sources={
		f'{_SERVICE}._get_all_trees': '7eea4487ae2e6d2c',
		f'{_SERVICE}.get_dom_tree': 'da6b8cbcab93f199',  # its caller, and a session per node
		'browser_use.browser.session:BrowserSession.get_or_create_cdp_session': 'a49c489418bb941d',
		f'{_SERVICE}._get_ax_tree_for_all_frames': '635d591049e9bdab',
		f'{_SERVICE}._get_viewport_ratio': '51c08042009abd6f',
		'browser_use.dom.views:TargetAllTrees': 'c2dceef97b82c1b1',
	},
	replaces=(
		f'{_SERVICE}._get_all_trees',
		f'{_SERVICE}.get_dom_tree',
		'browser_use.browser.session:BrowserSession.get_or_create_cdp_session',
	),
	switch='fast_dom_capture',
	when_refused="browser-use's sequential requests and a session lookup per node: ~4 ms more per browser_get_state, "
	'more on large pages',
	apply=_apply,
	revert=_revert,
	logger=logger.name,
	refused_message="browser-use's sequential DOM capture kept (browser_get_state ~4 ms slower)",
)
