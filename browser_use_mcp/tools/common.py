"""Small helpers the tool handlers share: dispatching browser-use events, finding things, and the
page state whose element indices the index-taking tools use (its epoch)."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from browser_use_mcp import dialogs, urls
from browser_use_mcp.errors import (
	ActionTimedOut,
	BrowserActionFailed,
	ElementNotFound,
	InvalidArgument,
	StaleElement,
	TabNotFound,
	script_error,
)
from browser_use_mcp.patches import direct_state, early_page_info, internals, offload_state
from browser_use_mcp.tools.base import Image, Reply, as_json

if TYPE_CHECKING:
	from browser_use_mcp.sessions import PageMemory, SessionState

logger = logging.getLogger('browser_use_mcp.tools')

FOCUS_RECOVERY = 0.5  # s browser-use gets to re-focus by itself before we pick a tab
FOCUS_POLL = 0.05


def _first_line(exc: BaseException) -> str:
	text = str(exc).strip() or type(exc).__name__
	text = text.splitlines()[0][:500]
	for prefix in ('Navigation failed: ', 'Failed: '):
		text = text.removeprefix(prefix)
	return text


# browser-use's own time limits, as its errors say them: bubus's "Event handler <module.Class.on_XEvent>#id(…)
# timed out after 30.0s" and Page.navigate's "Page.navigate() timed out after 30.0s (…ms) for <url>"
_RAN_OUT = re.compile(r'^(?:Event handler \S.* |Page\.navigate\(\) )timed out after (\d+(?:\.\d+)?)s\b')


def ran_out(exc: BaseException, event: Any = None) -> float | None:
	"""The limit (s) browser-use gave an action that ``exc`` says ran out of time, or None. Its text
	names browser-use's internal event handlers, which mean nothing to a caller (found by fuzzing)."""
	found = _RAN_OUT.match(str(exc).strip())
	if found is None:
		return None
	limit = getattr(event, 'event_timeout', None)
	return float(limit) if isinstance(limit, (int, float)) and limit > 0 else float(found.group(1))


async def dispatch(state: SessionState, event: Any, action: str) -> Any:
	"""Dispatch a browser-use event on the session's bus; raise its handler error, if any."""
	bus = state.browser_session.event_bus
	done = await bus.dispatch(event)
	try:
		return await done.event_result(raise_if_any=True, raise_if_none=False)
	except asyncio.CancelledError:
		raise
	except Exception as exc:
		limit = ran_out(exc, event)
		if limit is not None:
			raise ActionTimedOut(f'{action} failed: it did not finish within {limit:g} s', limit) from exc
		raise BrowserActionFailed(f'{action} failed: {_first_line(exc)}') from exc


def check_allowed(state: SessionState, url: str) -> None:
	"""Refuse a URL the profile's allowed/prohibited domains forbid before the browser sends
	anything: browser-use's own check runs only after the request has gone out. Fails closed:
	with domains restricted, a URL that cannot be checked is refused too."""
	if url.startswith(('about:', 'data:')):
		return
	try:
		allowed = internals.url_allowed(state.browser_session, url)
	except internals.Unavailable as exc:
		raise BrowserActionFailed(
			f'Refused to open {url[:200]}: this server restricts which sites its browsers may visit (allowed_domains/'
			f'prohibited_domains), but cannot check this URL against those settings ({str(exc)[:300]}), so nothing was '
			'sent. This is a server problem, not a bad URL: its operator can run `browser-use-mcp doctor` for the cause.'
		) from None
	if not allowed:
		raise InvalidArgument(
			f"{url[:200]} is not allowed by this server's allowed_domains/prohibited_domains settings; "
			'navigate to an allowed site instead.'
		)


def clip(value: str, limit: int = 200) -> str:
	"""``value`` as a reply quotes it: repr'd, and cut after ``limit`` characters (a 100 KB argument echoed
	whole filled the model's context, found by fuzzing)."""
	return repr(value[:limit]) + (f'... ({len(value):,} characters)' if len(value) > limit else '')


def check_browser_page(state: SessionState, url: str) -> None:
	"""Refuse the browser's own pages (chrome://…, about: other than blank) unless the operator allowed them."""
	why = urls.refusal(url, state.config.allow_browser_urls)
	if why is not None:
		raise InvalidArgument(why)


async def open_url(state: SessionState, url: str, new_tab: bool, action: str) -> None:
	"""Every navigation a tool starts: refused up front when it is a page of the browser itself
	(chrome://…) or the configured domains forbid it."""
	from browser_use.browser.events import NavigateToUrlEvent

	check_browser_page(state, url)
	check_allowed(state, url)
	try:
		await dispatch(state, NavigateToUrlEvent(url=url, new_tab=new_tab), action)
	except ActionTimedOut as exc:
		# a site that takes the connection and never answers (found by fuzzing: the error named browser-use's
		# event handlers, and the tab's pending navigation then held every later call until its deadline)
		shown = await stop_loading(state)
		tab = 'the new tab' if new_tab else 'the tab'
		where = f'; {tab} shows {shown[:200]}' if shown else ''
		raise ActionTimedOut(
			f'{action} failed: the page did not answer within {exc.limit:g} s (the site sent no response), so the '
			f'browser stopped loading it{where}. Check that the site is up and answering, then try again.',
			exc.limit,
		) from exc


STOP_BOUND = 3.0  # s for each CDP step of stop_loading


async def stop_loading(state: SessionState) -> str | None:
	"""Stop the focused tab's pending navigation and say what it shows then (None if that cannot be read).
	A navigation still waiting for its response holds every command to the tab's page: without this,
	the next browser_get_state waited out its whole deadline."""
	try:
		cdp = await asyncio.wait_for(cdp_page(state), STOP_BOUND)
		await asyncio.wait_for(cdp.cdp_client.send.Page.stopLoading(session_id=cdp.session_id), STOP_BOUND)
	except (Exception, TimeoutError) as exc:
		logger.info('could not stop a navigation that timed out: %s', _first_line(exc))
		return None
	return await shown_url(state, STOP_BOUND) or None


async def shown_url(state: SessionState, bound: float = 2.0) -> str | None:
	"""The URL the focused tab shows, as the browser process knows it (the page itself need not answer):
	'' when no page is committed in it, which is what a navigation away from a page stuck in a script
	leaves (found by fuzzing: browser-use's navigation returned as if it had happened); None when the
	browser cannot be asked within ``bound`` s."""
	session = state.browser_session
	target = session.agent_focus_target_id
	if not target:
		return None
	try:
		info = await asyncio.wait_for(session.cdp_client.send.Target.getTargetInfo(params={'targetId': target}), bound)
	except (Exception, TimeoutError):
		return None
	url = info.get('targetInfo', {}).get('url')
	return url if isinstance(url, str) else None


@dataclass(frozen=True)
class PageEpoch:
	"""What one page state showed (browser_get_state, or include_state): the focused tab, the
	document in its main frame, and the elements by index. An index is used only while its tab is
	still the focused one, that document still loaded and its element still attached: anything
	else is refused as stale rather than acted on whatever is there now."""

	target_id: str | None
	loader_id: str | None  # None: unknown, so no index of this state is used
	elements: dict[int, Any]


# In the element's own document and world: attached (shadow roots included) to a document that
# is still shown in its frame (a document navigated away from has no window).
ATTACHED = 'function() { return this.isConnected && this.ownerDocument.defaultView !== null; }'


async def document_id(state: SessionState) -> tuple[str | None, str | None]:
	"""The focused tab and the loaderId of its main frame's document. A reload or a cross-document
	navigation brings a new loaderId; a same-document one (history.pushState, a #fragment) keeps it."""
	target_id, loader_id, _frames = await read_document(state)
	return target_id, loader_id


async def read_document(state: SessionState) -> tuple[str | None, str | None, tuple[str | None, Any]]:
	"""``document_id``, and the frame tree it was read from with its CDP session's id (a page state
	reads its frames from it)."""
	try:
		cdp = await cdp_page(state)
		tree = await cdp.cdp_client.send.Page.getFrameTree(session_id=cdp.session_id)
		return cdp.target_id, tree['frameTree']['frame']['loaderId'], (cdp.session_id, tree)
	except Exception as exc:  # e.g. the tab is gone or between documents: no index is trusted
		logger.info('could not identify the current document: %s', _first_line(exc))
		return state.browser_session.agent_focus_target_id, None, (None, None)


async def is_attached(state: SessionState, node: Any) -> bool:
	"""Whether ``node`` is still attached to a live document, asked in the CDP session it was
	captured in: a backendNodeId means nothing in another renderer (or names another node)."""
	try:
		cdp = await state.browser_session.cdp_client_for_node(node)
		if node.session_id and cdp.session_id != node.session_id:
			return False  # the session of its frame is gone, and so is the node
		send, session_id = cdp.cdp_client.send, cdp.session_id
		resolved = await send.DOM.resolveNode(params={'backendNodeId': node.backend_node_id}, session_id=session_id)
		object_id = resolved['object']['objectId']
		try:
			params = {'functionDeclaration': ATTACHED, 'objectId': object_id, 'returnByValue': True}
			checked = await send.Runtime.callFunctionOn(params=params, session_id=session_id)
		finally:
			await send.Runtime.releaseObject(params={'objectId': object_id}, session_id=session_id)
	except Exception as exc:  # "No node with given id found": its document or the node itself is gone
		logger.debug('element %s counts as detached: %s', node.backend_node_id, _first_line(exc))
		return False
	return checked.get('result', {}).get('value') is True


def _not_found(index: int, hint: str) -> ElementNotFound:
	return ElementNotFound(
		f'Element with index {index} not found in the last browser_get_state of this session. {hint} '
		'Call browser_get_state to refresh the element indices, then retry with an index from it.'
	)


def _stale(index: int, why: str) -> StaleElement:
	return StaleElement(
		f'Element with index {index} is stale: {why} since the last browser_get_state of this session. Nothing was '
		'done. Call browser_get_state for the current indices, then retry with an index from it.'
	)


def _document_change(then: PageMemory, now: tuple[str | None, str | None]) -> str | None:
	"""Why the page is no longer the one ``then`` showed, or None if it still is."""
	target, loader = now
	if target != then.target_id:
		return 'another tab has become the current one (tabs were switched, opened or closed)'
	if then.loader_id is None or loader is None:
		return 'the page could not be confirmed to be the same document'
	if loader != then.loader_id:
		return 'the page has loaded a new document (it navigated or reloaded)'
	return None


async def _no_node() -> bool:
	return False


async def element(state: SessionState, index: int) -> Any:
	"""The element ``index`` names in the session's last page state, if it still names it there."""
	epoch = state.page_epoch
	if epoch is None:
		raise _not_found(index, 'No state has been captured yet.')
	node = epoch.elements.get(index)
	now, attached = await asyncio.gather(document_id(state), _no_node() if node is None else is_attached(state, node))
	changed = _document_change(epoch, now)
	if changed:
		raise _stale(index, changed)
	if node is None:
		known = sorted(epoch.elements)
		hint = f'Valid indices now: {known[0]}-{known[-1]}.' if known else 'The last state had no interactive elements.'
		raise _not_found(index, hint)
	if not attached:
		raise _stale(index, 'the element it named has been removed from the page or replaced')
	return node


LARGE_STATE = 300  # elements from which a state's text is made in a thread (~20 ms for 750)


def _element_info(index: int, node: Any, live: dict[str, Any] | None = None) -> dict[str, Any]:
	info: dict[str, Any] = {'index': index, 'tag': node.tag_name, 'text': node.get_all_children_text(max_depth=2)[:100]}
	for attr in ('placeholder', 'href'):
		if node.attributes.get(attr):
			info[attr] = node.attributes[attr]
	if FORM_STATE:
		info.update(form_state(node))
	if live:
		info.update(live)
	return info


# Form state of an element, from what the capture already holds: the DOM snapshot's live value and
# checked state (browser-use leaves out password, file and hidden inputs and payment/one-time-code
# fields), and the accessibility tree's disabled, expanded and checked. Only keys that apply, and
# disabled only when true: a page without forms gets no longer.
FORM_STATE = True  # False: states without form state (benchmarks.form_state measures what it costs)
NO_VALUE_TYPES = frozenset({'checkbox', 'radio', 'file', 'hidden', 'submit', 'button', 'reset', 'image', 'password'})
CHECKABLE_ROLES = frozenset({'checkbox', 'radio', 'switch', 'menuitemcheckbox', 'menuitemradio'})
VALUE_CHARS = 200


def form_state(node: Any) -> dict[str, Any]:
	out: dict[str, Any] = {}
	tag = (node.tag_name or '').lower()
	kind = (node.attributes.get('type') or 'text').lower() if tag == 'input' else ''
	snap = node.snapshot_node
	if tag in ('input', 'textarea') and kind not in NO_VALUE_TYPES and snap is not None and snap.input_value:
		out['value'] = snap.input_value[:VALUE_CHARS]
	if kind in ('checkbox', 'radio') and snap is not None and snap.input_checked is not None:
		out['checked'] = snap.input_checked
	ax = node.ax_node
	props = {str(getattr(p.name, 'value', p.name)): p.value for p in (ax.properties or [])} if ax is not None else {}
	if 'checked' not in out and 'checked' in props and (ax.role in CHECKABLE_ROLES or kind in ('checkbox', 'radio')):
		checked = props['checked']
		out['checked'] = 'mixed' if checked == 'mixed' else checked in (True, 'true')
	if ((ax is not None and ax.role == 'option') or tag == 'option') and props.get('selected') in (True, 'true'):
		out['selected'] = True
	if props.get('disabled') in (True, 'true'):
		out['disabled'] = True
	if 'expanded' in props and props['expanded'] is not None:
		out['expanded'] = props['expanded'] in (True, 'true')
	return out


# What the snapshot has not: the chosen option(s) of a <select>, and whether a password field is
# filled (its value is never read back). One small script per such element, all at once.
LIVE_FORM = """function() {
	if (this.tagName === 'SELECT') {
		const chosen = [...this.selectedOptions].map(o => o.label || o.text);
		return chosen.length ? {selected: this.multiple ? chosen : chosen[0]} : {};
	}
	return this.value ? {value: '<redacted>'} : {};
}"""
LIVE_FORM_MAX = 50


async def _live_form(state: SessionState, elements: dict[int, Any]) -> dict[int, dict[str, Any]]:
	wanted = [
		(i, n)
		for i, n in elements.items()
		if (n.tag_name or '').lower() == 'select'
		or ((n.tag_name or '').lower() == 'input' and (n.attributes.get('type') or '').lower() == 'password')
	][:LIVE_FORM_MAX]
	if not wanted:
		return {}

	async def one(node: Any) -> dict[str, Any]:
		cdp = await state.browser_session.cdp_client_for_node(node)
		send, sid = cdp.cdp_client.send, cdp.session_id
		obj = (await send.DOM.resolveNode(params={'backendNodeId': node.backend_node_id}, session_id=sid))['object']
		try:
			params = {'functionDeclaration': LIVE_FORM, 'objectId': obj['objectId'], 'returnByValue': True}
			result = await send.Runtime.callFunctionOn(params=params, session_id=sid)
		finally:  # released, not waited for: its answer says nothing the state needs (one round trip fewer)
			released = asyncio.ensure_future(send.Runtime.releaseObject(params={'objectId': obj['objectId']}, session_id=sid))
			_releasing.add(released)  # a failed release (the page went away) is not news
			released.add_done_callback(lambda t: (_releasing.discard(t), t.cancelled() or t.exception()))
		value = result.get('result', {}).get('value')
		return value if isinstance(value, dict) else {}

	try:
		found = await asyncio.wait_for(asyncio.gather(*(one(n) for _, n in wanted), return_exceptions=True), LIVE_FORM_TIMEOUT)
	except TimeoutError:  # a state without them rather than none
		return {}
	return {i: r for (i, _), r in zip(wanted, found, strict=True) if isinstance(r, dict) and r}


LIVE_FORM_TIMEOUT = 2.0


_releasing: set[asyncio.Future[Any]] = set()  # releases in flight (a task nobody references may be collected)


# browser_get_state's first reads, started beside the focus check before it (``read_ahead``): the
# focused tab they were started for, and the read of its document
_read_ahead: contextvars.ContextVar[tuple[str | None, asyncio.Future[Any]] | None] = contextvars.ContextVar(
	'browser_use_mcp_read_ahead', default=None
)


@contextlib.contextmanager
def read_ahead(state: SessionState) -> Iterator[None]:
	"""Within this block, a page state's first two reads (its document, and browser-use's check for
	pending requests) start now, beside the focus check that comes before every tool, instead of one
	after the other behind it: two round trips fewer in a row on a state. ``capture_state`` uses them
	only when the focused tab is still the one they were started for; a focus check that moves the
	focus (the tab was closed) leaves them unused, and the state reads its own. Not started while a
	dialog is held: its page answers no script until the dialog is."""
	bs = state.browser_session
	held = dialogs.of(state)
	if (held is not None and held.pending) or bs.agent_focus_target_id is None:
		yield
		return
	with early_page_info.requested(bs):
		document = asyncio.ensure_future(read_document(state))
		token = _read_ahead.set((bs.agent_focus_target_id, document))
		try:
			yield
		finally:
			_read_ahead.reset(token)
			if not document.done():
				document.cancel()


async def capture_state(state: SessionState, include_screenshot: bool = False) -> Reply:
	"""The focused page as browser_get_state describes it. Its indices become the session's current
	ones: a new page epoch, whose document is read first (a navigation during the capture then makes
	its indices stale, never wrong)."""
	bs = state.browser_session
	held = dialogs.of(state)
	if held is not None and held.pending:
		blocking = held.pending.get((await cdp_page(state)).session_id)
		if blocking is not None:  # its page runs no script until it is answered: nothing to capture
			return Reply(as_json({'url': blocking.url, 'dialog': blocking.describe(), 'interactive_elements': []}))
	# browser-use's check for pending requests is sent now, beside the document's read (early_page_info);
	# the titles are read while browser-use captures the DOM (their round trips overlap its own); they
	# are only shown, never part of the epoch.
	ahead, ahead_for = _read_ahead.get(), bs.agent_focus_target_id
	if ahead is not None:
		_read_ahead.set(None)  # once: a second state of the same call (none today) reads its own
	with early_page_info.requested(bs):  # the read-ahead's, when it was for this tab
		if ahead is not None and ahead[0] == ahead_for:
			target_id, loader_id, frames = await ahead[1]
		else:
			target_id, loader_id, frames = await read_document(state)
		titles_read = asyncio.gather(tab_titles(state), current_title(state))
		try:
			# only the selector map is used: it may be built off the loop; the page info is read beside
			# the trees; the frames to read the accessibility trees of are the ones just read
			with offload_state.compact_state(frames):
				summary = await direct_state.request_state(bs, include_screenshot)
		except BaseException:
			titles_read.cancel()
			with contextlib.suppress(BaseException):
				await titles_read
			raise
	elements = {} if summary.state_error else dict(summary.dom_state.selector_map)
	state.page_epoch = PageEpoch(target_id, loader_id, elements)
	titles, title = await titles_read
	if summary.state_error:
		raise BrowserActionFailed(f'Could not capture the page state: {summary.state_error}')
	focus = bs.agent_focus_target_id
	if focus and title is not None:
		titles[focus] = title
	result: dict[str, Any] = {
		'url': summary.url,
		'title': title if title is not None else titles.get(focus, summary.title),
		'tabs': [{'url': t.url, 'title': titles.get(t.target_id, t.title)} for t in summary.tabs],
		'interactive_elements': [],
	}
	if held is not None and held.pending:  # in another tab
		result['dialog'] = held.first().describe(with_tab=True)
	if summary.page_info:
		pi = summary.page_info
		result['viewport'] = {'width': pi.viewport_width, 'height': pi.viewport_height}
		result['page'] = {'width': pi.page_width, 'height': pi.page_height}
		result['scroll'] = {'x': pi.scroll_x, 'y': pi.scroll_y}
	images = []
	if include_screenshot and summary.screenshot:
		images.append(Image(summary.screenshot))
		if summary.page_info:
			result['screenshot_dimensions'] = {
				'width': summary.page_info.viewport_width,
				'height': summary.page_info.viewport_height,
			}

	live = await _live_form(state, elements) if FORM_STATE else {}

	def text() -> str:
		result['interactive_elements'] = [_element_info(i, n, live.get(i)) for i, n in elements.items()]
		return as_json(result)

	# a large list is tens of ms of pure Python (as_json's indent=2): in a thread, which lets the loop
	# run every few ms, rather than in one step of the loop every session shares
	return Reply(text() if len(elements) < LARGE_STATE else await asyncio.to_thread(text), images=images)


async def with_page_state(state: SessionState, reply: Reply) -> Reply:
	"""``reply`` with the page state after its action as a second text block (include_state). The
	action has happened whatever the capture does, so a failed capture is said there, not raised."""
	try:
		reply.page_state = (await capture_state(state)).text
	except Exception as exc:
		if not isinstance(exc, BrowserActionFailed):
			logger.warning('could not capture the page state after the action: %s', _first_line(exc))
		why = exc.message if isinstance(exc, BrowserActionFailed) else f'Could not capture the page state: {_first_line(exc)}'
		reply.page_state = f'{why.rstrip(".")}. Call browser_get_state before using element indices.'
	return reply


async def cdp_page(state: SessionState) -> Any:
	"""The CDP session of the focused tab."""
	return await state.browser_session.get_or_create_cdp_session(target_id=None, focus=False)


async def visible_jpeg(state: SessionState, max_width: float, quality: int, bound: float | None = None) -> tuple[bytes, int, int]:
	"""The visible part of the focused page as a JPEG at most ``max_width`` px wide, scaled by Chromium
	itself (no image work in the server), and the viewport's CSS size. ``bound``: s for each CDP step."""
	import base64

	cdp = await asyncio.wait_for(cdp_page(state), bound)
	send, sid = cdp.cdp_client.send, cdp.session_id
	metrics = await asyncio.wait_for(send.Page.getLayoutMetrics(session_id=sid), bound)
	view = metrics.get('cssVisualViewport') or metrics.get('cssLayoutViewport') or {}
	width = float(view.get('clientWidth') or 0) or 1280.0
	height = float(view.get('clientHeight') or 0) or 800.0
	params: dict[str, Any] = {
		'format': 'jpeg',
		'quality': quality,
		'optimizeForSpeed': True,
		# the visible part of the page, in document coordinates, scaled down to max_width
		'clip': {
			'x': float(view.get('pageX') or 0),
			'y': float(view.get('pageY') or 0),
			'width': width,
			'height': height,
			'scale': min(1.0, max_width / width),
		},
	}
	shot = await asyncio.wait_for(send.Page.captureScreenshot(params=params, session_id=sid), bound)
	return base64.b64decode(shot['data']), int(width), int(height)


# Chromium's answers when returnByValue cannot copy the value (found by fuzzing: they were "failed unexpectedly")
NOT_JSON = ('Object reference chain is too long', "Object couldn't be returned by value")


async def evaluate(state: SessionState, expression: str, *, await_promise: bool = False, timeout: float = 15.0) -> Any:
	"""Evaluate JS in the focused tab; return its JSON value or raise with the JS error."""
	cdp = await cdp_page(state)
	params: dict[str, Any] = {'expression': expression, 'returnByValue': True, 'awaitPromise': await_promise}
	try:
		result = await asyncio.wait_for(cdp.cdp_client.send.Runtime.evaluate(params=params, session_id=cdp.session_id), timeout)
	except RuntimeError as exc:
		if any(why in str(exc) for why in NOT_JSON):  # a cycle, nesting too deep, a Symbol or a BigInt inside
			raise BrowserActionFailed(
				f"The expression's value cannot be returned as JSON ({_first_line(exc)[:160]}): it holds a cycle, nesting "
				'deeper than Chromium copies, a Symbol or a BigInt. Return plain data instead, e.g. JSON.stringify(value) '
				'or a few of its fields.'
			) from None
		if 'navigated or closed' not in str(exc):
			raise
		raise BrowserActionFailed(  # Chromium's -32000 "Inspected target navigated or closed"
			'The page navigated (or its tab closed) while the expression ran: its result is lost. Call '
			'browser_get_state to see where the tab is, then evaluate again once the new page has loaded.'
		) from None
	except TimeoutError:
		try:  # a crashed or wedged tab never answers this either: bounded, so the call keeps its deadline
			await asyncio.wait_for(cdp.cdp_client.send.Runtime.terminateExecution(session_id=cdp.session_id), 2.0)
		except (Exception, TimeoutError) as exc:  # the script may still be running: the next call in this tab would wait on it
			logger.warning('could not stop an expression that ran past %.0f s: %s', timeout, _first_line(exc))
		raise BrowserActionFailed(
			f'The expression did not finish within {timeout:.0f} s and was stopped. Avoid long-running loops or '
			'unresolved promises.'
		) from None
	message = script_error(result, 'JavaScript exception')
	if message is not None:
		raise BrowserActionFailed(f'JavaScript error: {message.splitlines()[0][:500]}')
	value = result.get('result', {})
	if value.get('type') == 'undefined':
		return None
	return value.get('value')


async def page_titles(state: SessionState) -> dict[str, str]:
	"""The browser's open pages, as document title by target id; raises when the browser cannot be asked."""
	targets = await state.browser_session.cdp_client.send.Target.getTargets()
	return {t['targetId']: t.get('title', '') for t in targets.get('targetInfos', []) if t.get('type') == 'page'}


async def tab_titles(state: SessionState) -> dict[str, str]:
	"""Real document titles by target id (browser-use's cache often holds the host instead); empty,
	with a warning in the log, when the browser cannot be asked: callers then use browser-use's."""
	try:
		return await page_titles(state)
	except Exception as exc:
		logger.warning("could not read the tabs' titles from the browser (%s); using browser-use's", _first_line(exc))
		return {}


async def list_tabs(state: SessionState) -> list[dict[str, str]]:
	tabs = await state.browser_session.get_tabs()
	titles = await tab_titles(state)
	out = []
	for tab in tabs:
		if titles and tab.target_id not in titles:
			continue  # closed in the browser; browser-use has not processed the detach yet
		title = titles.get(tab.target_id, tab.title or '')
		if title == tab.url:  # Chromium shows the URL while a page has no <title>
			title = tab.title or ''
		out.append({'tab_id': tab.target_id[-4:], 'url': tab.url, 'title': title, '_target_id': tab.target_id})
	return out


async def resolve_tab(state: SessionState, tab_id: str) -> str:
	tabs = await list_tabs(state)
	matches = [t['_target_id'] for t in tabs if t['_target_id'].endswith(tab_id)]
	if len(matches) == 1:
		return matches[0]
	available = ', '.join(f'{t["tab_id"]} ({t["url"]})' for t in tabs) or 'none'
	if not matches:
		raise TabNotFound(
			f'No tab with id {tab_id!r} in this session. Open tabs: {available}. Call browser_list_tabs for the current ids.'
		)
	raise TabNotFound(f'Tab id {tab_id!r} is ambiguous in this session. Open tabs: {available}. Use the 4-character id.')


def public_tabs(tabs: list[dict[str, str]]) -> list[dict[str, str]]:
	return [{k: v for k, v in t.items() if not k.startswith('_')} for t in tabs]


async def saved_download(
	state: SessionState, name: str, size: Any, path: Any = None, url: str | None = None, copy_bound: float = 10.0
) -> str:
	"""How a reply names a file a tool's download saved: its name and, when known, its size, read from
	disk once the file is whole (``whole_size``: ``url`` and ``copy_bound`` are its); where
	browser_read_file finds it, when the server offers that tool and the file is in the downloads."""
	if path:
		size = await whole_size(state, str(path), size, url, copy_bound)
	sized = f' ({size:,} bytes)' if isinstance(size, int) and size > 0 else ''
	text = f"{name}{sized} is saved in the session's downloads"
	offered = 'interaction' in state.config.tools or 'all' in state.config.tools
	readable = await asyncio.to_thread(_in_downloads, state, str(path)) if offered and path else None
	return f'{text} (browser_read_file reads it as {readable})' if readable else text


def _in_downloads(state: SessionState, path: str) -> str | None:
	"""``path`` as browser_read_file takes it (downloads/<name>), or None when it is not in the session's
	downloads. Blocking (it resolves links)."""
	try:
		relative = os.path.relpath(os.path.realpath(path), os.path.realpath(state.dirs.downloads))
	except ValueError:
		return None
	if relative.startswith('..') or os.path.isabs(relative):
		return None
	return f'downloads/{Path(relative).as_posix()}'


SETTLE_BOUND = 2.0  # s a downloaded file may take to be whole again after browser-use's second copy truncated it
AUTO_DOWNLOAD_POLL = 0.02  # s between looks at browser-use's own second copy of a downloaded file


def auto_downloads(state: SessionState) -> set[str]:
	"""The URLs the session's downloads watchdog is fetching again itself right now (empty when unreadable)."""
	try:
		return internals.auto_downloads(internals.downloads_watchdog(state.browser_session))
	except internals.Unavailable:
		return set()


async def whole_size(state: SessionState, path: str, reported: Any, url: str | None = None, copy_bound: float = 10.0) -> Any:
	"""The size on disk of a file a download saved, once it is whole: browser-use's downloads watchdog
	fetches an attachment or a PDF it saw in a response once more and writes it over the browser's
	file (empty for a moment). Waits while that copy of ``url`` (of any URL without one) is being
	written, ``copy_bound`` s at most, then while the file is shorter than ``reported``, SETTLE_BOUND
	s at most; ``reported`` when the file cannot be read."""
	loop = asyncio.get_running_loop()
	deadline = loop.time() + copy_bound
	fetching = auto_downloads(state)
	while (url in fetching if url else fetching) and loop.time() < deadline:
		await asyncio.sleep(AUTO_DOWNLOAD_POLL)
	deadline = loop.time() + SETTLE_BOUND
	while True:
		try:
			size = await asyncio.to_thread(os.path.getsize, path)
		except OSError:
			return reported
		if not isinstance(reported, int) or size >= reported or loop.time() >= deadline:
			return size
		await asyncio.sleep(AUTO_DOWNLOAD_POLL)


async def current_url(state: SessionState) -> str:
	return await state.browser_session.get_current_page_url()


async def viewport_size(state: SessionState) -> tuple[int, int]:
	"""The focused tab's viewport in CSS pixels, (0, 0) when it cannot be read."""
	try:
		cdp = await cdp_page(state)
		metrics = await cdp.cdp_client.send.Page.getLayoutMetrics(session_id=cdp.session_id)
	except Exception as exc:  # e.g. the page is between documents; callers do without
		logger.info('could not read the viewport size: %s', _first_line(exc))
		return 0, 0
	viewport = metrics.get('cssLayoutViewport') or {}
	return int(viewport.get('clientWidth') or 0), int(viewport.get('clientHeight') or 0)


async def current_title(state: SessionState) -> str | None:
	"""The focused page's document.title, read from the page itself (target info can lag)."""
	try:
		title = await evaluate(state, 'document.title', timeout=5)
	except Exception as exc:  # e.g. the page is between documents; callers use the target's title
		logger.info('could not read the page title: %s', _first_line(exc))
		return None
	return title if isinstance(title, str) else None


async def ensure_focus(state: SessionState) -> None:
	"""Make sure the session has a live focused tab before a tool acts.

	When the focused tab goes away (closed by a tool, by the page itself, or crashed),
	browser-use re-focuses asynchronously, and until it does, navigation is silently skipped
	and scrolling fails. Give its recovery a moment, then focus the newest open tab (or a
	new blank one) ourselves. When the browser cannot even list its tabs, say so in the log and
	let the tool try as things are: its own error is clearer than ours would be.
	"""
	bs = state.browser_session
	loop = asyncio.get_running_loop()
	deadline = loop.time() + FOCUS_RECOVERY
	while True:
		try:
			live = await page_titles(state)
		except Exception as exc:
			logger.warning(
				'cannot list the tabs to check the focused one (%s: %s); calling the tool as things are',
				type(exc).__name__,
				str(exc)[:300],
			)
			return
		if bs.agent_focus_target_id in live:
			return
		if loop.time() >= deadline:
			break
		await asyncio.sleep(FOCUS_POLL)
	logger.info('the focused tab is gone; focusing %s', 'the newest tab' if live else 'a new blank tab')
	if live:
		target = list(live)[-1]
	else:
		created = await bs.cdp_client.send.Target.createTarget(params={'url': 'about:blank'})
		target = created['targetId']
	await bs.get_or_create_cdp_session(target_id=target, focus=True)


# -- a tab that crashed or stopped answering ------------------------------------------------
#
# CDP commands sent to a tab whose renderer died, or whose page runs a script that never
# yields, are never answered: a call would wait forever. The catalogue bounds every call
# (``catalog.deadline``); these helpers tell which of the two happened and recover from a crash.


def watch_crashes(state: SessionState) -> None:
	"""Note, once per browser, every renderer crash of the session's tabs: Chromium sends
	``Inspector.targetCrashed`` on each CDP session of the crashed tab (nobody else listens to it)."""
	bs = state.browser_session
	if state.crash_watch is bs:
		return
	state.crash_watch = bs

	def on_crash(params: Any, session_id: str | None) -> None:
		if session_id:
			state.crashed_sessions.add(session_id)
		state.crash_signal.set()

	root = internals.root_cdp_client(bs)
	try:
		if root is None:
			raise internals.Unavailable('no root CDP client')
		internals.hook_cdp_event(root, 'Inspector.targetCrashed', on_crash)
	except internals.Unavailable as exc:
		logger.info('tab crashes are not watched (%s): a crashed tab shows as a call that overran its deadline', exc)


async def focused_tab_crashed(state: SessionState) -> bool:
	"""Whether the renderer of the session's focused tab died (its CDP sessions got a crash event)."""
	if not state.crashed_sessions:
		return False
	try:
		cdp = await asyncio.wait_for(cdp_page(state), 2.0)
	except (Exception, TimeoutError):
		return False
	return cdp.session_id in state.crashed_sessions


async def replace_crashed_tab(state: SessionState) -> str:
	"""Close the focused (crashed) tab and focus another one, or a new blank one; its URL."""
	bs = state.browser_session
	target = bs.agent_focus_target_id
	with contextlib.suppress(Exception, TimeoutError):
		await asyncio.wait_for(bs.cdp_client.send.Target.closeTarget(params={'targetId': target}), 3.0)
	for _ in range(20):  # the browser closes it asynchronously
		with contextlib.suppress(Exception):
			if target not in await asyncio.wait_for(page_titles(state), 2.0):
				break
		await asyncio.sleep(0.05)
	try:
		await asyncio.wait_for(ensure_focus(state), 5.0)
		return await asyncio.wait_for(current_url(state), 2.0)
	except (Exception, TimeoutError):
		return 'another tab'


def tab_crashed_error(tool: str, now_on: str, before: bool) -> BrowserActionFailed:
	when = 'before this call' if before else 'during the call'
	return BrowserActionFailed(
		f"{tool} failed: the session's tab crashed {when} (its page's renderer process died; the browser and "
		f'the session are fine). The crashed tab was closed and the session is now on {now_on}. Navigate to the '
		'page again and retry; if the page crashes again, it is the page (too much memory, a browser bug).'
	)


def tab_hung_error(tool: str, deadline: float, url: str) -> BrowserActionFailed:
	return BrowserActionFailed(
		f'{tool} did not finish within its {deadline:g} s limit and was stopped: the tab ({url}) is not responding '
		'(a script that never ends, or a page that hangs). The session keeps working: close that tab with '
		'browser_close_tab (browser_list_tabs shows its tab_id), or navigate it elsewhere, then retry.'
	)
