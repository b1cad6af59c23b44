"""More ways to act on the page: choose options, hover, drag, wait for something (the `interaction` group).

Each acts on an element by its index from browser_get_state (checked like a click's, ``common.element``)
or at viewport coordinates, through CDP on the element's own session: real mouse events
(``Input.dispatchMouseEvent``) where the page must see a pointer, a function run on the element
where a form control's value is set (with the input and change events a user's choice fires).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import os
import re
import time
import weakref
from pathlib import Path
from typing import Any

from pydantic import Field

from browser_use_mcp.errors import BrowserActionFailed, InvalidArgument, script_error
from browser_use_mcp.files import write_whole
from browser_use_mcp.patches import internals
from browser_use_mcp.sessions import SessionState
from browser_use_mcp.tools.base import Args, Call, IncludeState, tool
from browser_use_mcp.tools.common import cdp_page, clip, current_url, element, resolve_tab, viewport_size

logger = logging.getLogger('browser_use_mcp.tools')


# -- running a function on an element -------------------------------------------------------


async def call_on(state: SessionState, node: Any, function: str, *args: Any) -> Any:
	"""Run ``function`` (JS, ``this`` is the element) in the element's own frame and return its
	JSON value; a script error is raised."""
	cdp = await state.browser_session.cdp_client_for_node(node)
	send, session_id = cdp.cdp_client.send, cdp.session_id
	resolved = await send.DOM.resolveNode(params={'backendNodeId': node.backend_node_id}, session_id=session_id)
	object_id = resolved['object']['objectId']
	try:
		params = {
			'functionDeclaration': function,
			'objectId': object_id,
			'arguments': [{'value': a} for a in args],
			'returnByValue': True,
		}
		result = await send.Runtime.callFunctionOn(params=params, session_id=session_id)
	finally:
		with contextlib.suppress(Exception):
			await send.Runtime.releaseObject(params={'objectId': object_id}, session_id=session_id)
	message = script_error(result, 'JavaScript exception')
	if message is not None:
		raise BrowserActionFailed(f'The page refused the action: {message.splitlines()[0][:300]}')
	return result.get('result', {}).get('value')


DESCRIBE = """function() {
	const role = this.getAttribute && this.getAttribute('role');
	return '<' + this.tagName.toLowerCase() + (this.type && this.tagName === 'INPUT' ? ' type=' + this.type : '')
		+ (role ? ' role=' + role : '') + '>';
}"""


# -- the pointer ---------------------------------------------------------------------------


async def element_point(state: SessionState, node: Any, index: int, object_id: str | None = None) -> tuple[Any, float, float]:
	"""Scroll the element (or the object ``object_id`` of its frame) into view and return (its CDP
	session, x, y): the centre of its part inside the viewport, in the coordinates of that session's page."""
	cdp = await state.browser_session.cdp_client_for_node(node)
	send, session_id = cdp.cdp_client.send, cdp.session_id
	backend = {'objectId': object_id} if object_id else {'backendNodeId': node.backend_node_id}
	with contextlib.suppress(Exception):  # an element that cannot scroll (fixed) may be in view anyway
		await send.DOM.scrollIntoViewIfNeeded(params=backend, session_id=session_id)
	try:
		quads = (await send.DOM.getContentQuads(params=backend, session_id=session_id)).get('quads') or []
	except Exception:
		quads = []
	metrics = await send.Page.getLayoutMetrics(session_id=session_id)
	view = metrics.get('cssLayoutViewport') or {}
	width, height = float(view.get('clientWidth') or 0), float(view.get('clientHeight') or 0)
	for quad in quads:
		xs, ys = quad[0::2], quad[1::2]
		left, right = max(min(xs), 0.0), min(max(xs), width or max(xs))
		top, bottom = max(min(ys), 0.0), min(max(ys), height or max(ys))
		if right - left >= 1 and bottom - top >= 1:
			return cdp, (left + right) / 2, (top + bottom) / 2
	raise BrowserActionFailed(
		f'Element {index} has no visible box to point at (hidden, zero-sized or outside the page). Nothing was done. '
		'Call browser_get_state to see what is on the page now.'
	)


async def mouse(cdp: Any, kind: str, x: float, y: float, buttons: int = 0, button: str = 'none') -> None:
	params: dict[str, Any] = {'type': kind, 'x': x, 'y': y, 'buttons': buttons, 'button': button}
	if kind in ('mousePressed', 'mouseReleased'):
		params['clickCount'] = 1
	await cdp.cdp_client.send.Input.dispatchMouseEvent(params=params, session_id=cdp.session_id)


class HoverArgs(Args):
	index: int = Field(ge=0, description='Index of the element to move the mouse over, from browser_get_state.')
	include_state: IncludeState = False


@tool('Hover', destructive=False, idempotent=True, open_world=True)
async def browser_hover(state: SessionState, args: HoverArgs, call: Call) -> str:
	"""Move the mouse over an element of the session's current page (by index from browser_get_state), after
	scrolling it into view: real mouse events, so CSS :hover menus, tooltips and mouseover handlers react.
	Call browser_get_state (or pass include_state) to see what appeared."""
	node = await element(state, args.index)
	cdp, x, y = await element_point(state, node, args.index)
	cover = await covered_by(cdp, node, x, y)
	await mouse(cdp, 'mouseMoved', x, y)
	done = f'Hovering over element {args.index} at ({x:.0f}, {y:.0f})'
	if cover:
		done += f'; note: {cover} covers that point, so the page sees the mouse over it rather than element {args.index}'
	return done


# Whether the element at the point is ``this`` or inside it (through shadow roots); else what it is.
CONTAINS = """function(other) {
	for (let el = other; el; el = el.parentNode || el.host) if (el === this) return null;
	const role = other.getAttribute && other.getAttribute('role');
	return '<' + (other.tagName || '#text').toLowerCase() + (other.id ? ' id=' + other.id : '') + (role ? ' role=' + role : '') + '>';
}"""


async def covered_by(cdp: Any, node: Any, x: float, y: float) -> str | None:
	"""What the browser hit-tests at (x, y) when it is not the element or inside it; None when it is,
	or when that cannot be told (the pointer then simply goes there)."""
	send, session_id = cdp.cdp_client.send, cdp.session_id
	objects = []
	try:
		hit = await send.DOM.getNodeForLocation(
			params={'x': int(x), 'y': int(y), 'includeUserAgentShadowDOM': False}, session_id=session_id
		)
		for backend in (node.backend_node_id, hit['backendNodeId']):
			resolved = await send.DOM.resolveNode(params={'backendNodeId': backend}, session_id=session_id)
			objects.append(resolved['object']['objectId'])
		params = {
			'functionDeclaration': CONTAINS,
			'objectId': objects[0],
			'arguments': [{'objectId': objects[1]}],
			'returnByValue': True,
		}
		answer = await send.Runtime.callFunctionOn(params=params, session_id=session_id)
		return (answer.get('result') or {}).get('value')
	except Exception as exc:  # e.g. the point is in another frame's renderer
		logger.debug('could not hit-test (%.0f, %.0f): %s', x, y, str(exc)[:200])
		return None
	finally:
		for object_id in objects:
			with contextlib.suppress(Exception):
				await send.Runtime.releaseObject(params={'objectId': object_id}, session_id=session_id)


# -- select ------------------------------------------------------------------------------

# The listbox an element stands for: itself (role=listbox), or the one a combobox controls or holds.
LISTBOX = """const listboxOf = (el) => {
	const role = el.getAttribute && el.getAttribute('role');
	if (role === 'listbox') return el;
	if (role !== 'combobox') return null;
	for (const id of (el.getAttribute('aria-controls') || el.getAttribute('aria-owns') || '').split(/\\s+/)) {
		const target = id && el.ownerDocument.getElementById(id);
		if (target && target.getAttribute('role') === 'listbox') return target;
	}
	return el.querySelector('[role=listbox]');
};
const ariaOptions = (box) => [...box.querySelectorAll('[role=option]')].map((o, i) => {
	const label = (o.getAttribute('aria-label') || o.textContent || '').replace(/\\s+/g, ' ').trim();
	return {index: i, value: o.getAttribute('data-value') || o.id || label, label,
		selected: o.getAttribute('aria-selected') === 'true', disabled: o.getAttribute('aria-disabled') === 'true'};
});"""

OPTIONS = (
	"""function() {
	const norm = (s) => (s || '').replace(/\\s+/g, ' ').trim();
	"""
	+ LISTBOX
	+ """
	if (this.tagName !== 'SELECT') {
		const box = listboxOf(this);
		if (!box) return null;
		const options = ariaOptions(box);
		return {kind: 'listbox', multiple: box.getAttribute('aria-multiselectable') === 'true',
			disabled: box.getAttribute('aria-disabled') === 'true', options: options.slice(0, 500), total: options.length,
			shown: box.getClientRects().length > 0};
	}
	return {kind: 'select', multiple: this.multiple, disabled: this.disabled, options: [...this.options].slice(0, 500).map((o, i) => (
		{index: i, value: o.value, label: norm(o.label), selected: o.selected,
		disabled: o.disabled || (o.parentElement.tagName === 'OPTGROUP' && o.parentElement.disabled)}
	)), total: this.options.length};
}"""
)

# The option ``i`` of the element's listbox, to point the mouse at.
ARIA_OPTION = (
	"""function(i) {
	"""
	+ LISTBOX
	+ """
	const box = listboxOf(this);
	return box ? box.querySelectorAll('[role=option]')[i] || null : null;
}"""
)

SELECT = """function(wanted, by) {
	const norm = (s) => (s || '').replace(/\\s+/g, ' ').trim();
	if (this.tagName !== 'SELECT') return {error: 'not_select'};
	const opts = [...this.options];
	const listed = () => opts.slice(0, 100).map((o) => ({value: o.value, label: norm(o.label)}));
	const picked = [], missing = [];
	for (const w of wanted) {
		let o;
		if (by === 'value') o = opts.find((o) => o.value === w);
		else o = opts.find((o) => norm(o.label) === norm(w)) || opts.find((o) => norm(o.label).toLowerCase() === norm(w).toLowerCase());
		if (o) { if (!picked.includes(o)) picked.push(o); } else missing.push(w);
	}
	if (missing.length) return {error: 'missing', missing, options: listed()};
	if (picked.length > 1 && !this.multiple) return {error: 'single', options: listed()};
	if (this.disabled) return {error: 'disabled_select'};
	const off = picked.filter((o) => o.disabled || (o.parentElement.tagName === 'OPTGROUP' && o.parentElement.disabled));
	if (off.length) return {error: 'disabled', disabled: off.map((o) => norm(o.label))};
	if (this.multiple) for (const o of opts) o.selected = picked.includes(o);
	else picked[0].selected = true;
	this.dispatchEvent(new Event('input', {bubbles: true, composed: true}));
	this.dispatchEvent(new Event('change', {bubbles: true}));
	return {selected: [...this.selectedOptions].map((o) => ({value: o.value, label: norm(o.label)}))};
}"""


def _not_a_select(index: int, what: str, argument: str = 'index') -> InvalidArgument:
	return InvalidArgument(
		f'{argument}: element {index} is a {what}, not a <select> or an ARIA listbox or combobox. Nothing was changed. '
		'Give the index of one from browser_get_state; for other dropdowns click them open with browser_click, then '
		'click the option.'
	)


class GetOptionsArgs(Args):
	index: int = Field(ge=0, description='Index of a <select> element, from browser_get_state.')


@tool('List the options of a select', read_only=True, open_world=False)
async def browser_get_options(state: SessionState, args: GetOptionsArgs, call: Call) -> str:
	"""List the options of a <select> element of the session's current page (by index from browser_get_state), or
	of an ARIA listbox (role=listbox, or the one a role=combobox controls): JSON with multiple, and each option's
	value, label, selected and disabled. Pass a value or label to browser_select_option to choose one."""
	node = await element(state, args.index)
	found = await call_on(state, node, OPTIONS)
	if found is None:
		raise _not_a_select(args.index, await call_on(state, node, DESCRIBE))
	out = {
		'index': args.index,
		'kind': found['kind'],
		'multiple': found['multiple'],
		'disabled': found['disabled'],
		'options': found['options'],
	}
	if found['total'] > len(found['options']):
		out['note'] = f'the first {len(found["options"])} of {found["total"]} options'
	return json.dumps(out, ensure_ascii=False)


class SelectOptionArgs(Args):
	index: int = Field(ge=0, description='Index of a <select> element, from browser_get_state.')
	values: list[str] | None = Field(
		None, description='The option values to select (their value attribute). Several only in a multi-select.'
	)
	labels: list[str] | None = Field(
		None,
		description='The option labels to select, as shown (white space and case are forgiven). Give values or labels.',
	)
	include_state: IncludeState = False


# destructive: the field's choice is replaced; idempotent: the same choice again changes nothing
@tool('Select an option', destructive=True, idempotent=True, open_world=True)
async def browser_select_option(state: SessionState, args: SelectOptionArgs, call: Call) -> str:
	"""Choose options of a <select> element of the session's current page (by index from browser_get_state), by
	value or by label; in a multi-select exactly the options given end up selected. Fires the input and change
	events a user's choice fires. An ARIA listbox or combobox gets mouse clicks on the options given instead
	(opened first when hidden). browser_get_options lists the choices."""
	if bool(args.values) == bool(args.labels):
		raise InvalidArgument(
			'values, labels: give exactly one of them, a non-empty list (browser_get_options lists the values and labels).'
		)
	wanted, by = (args.values, 'value') if args.values else (args.labels, 'label')
	argument = 'values' if by == 'value' else 'labels'
	node = await element(state, args.index)
	result = await call_on(state, node, SELECT, wanted, by)
	error = result.get('error') if isinstance(result, dict) else 'no answer'
	if error == 'not_select':
		listed = await call_on(state, node, OPTIONS)
		if listed is None:
			raise _not_a_select(args.index, await call_on(state, node, DESCRIBE))
		return await _select_aria(state, node, args.index, listed, wanted, by, argument)
	if error == 'missing':
		options = ', '.join(f'{o["value"]!r} ({o["label"]!r})' for o in result['options'])
		raise InvalidArgument(
			f'{argument}: element {args.index} has no option with the {by} {", ".join(map(clip, result["missing"][:20]))}. '
			f'Nothing was changed. Its options (value (label)): {options}.'
		)
	if error == 'single':
		raise InvalidArgument(
			f'{argument}: element {args.index} is a single-choice <select>; give one {by}. Nothing was changed.'
		)
	if error == 'disabled_select':
		raise BrowserActionFailed(f'Element {args.index} is a disabled <select>: it cannot be changed. Nothing was changed.')
	if error == 'disabled':
		raise BrowserActionFailed(
			f'{argument}: option(s) {", ".join(map(repr, result["disabled"]))} of element {args.index} are disabled. '
			'Nothing was changed.'
		)
	if error:
		raise BrowserActionFailed(f'Selecting in element {args.index} failed: {error}')
	chosen = ', '.join(f'{o["label"]!r} (value {o["value"]!r})' for o in result['selected']) or 'nothing'
	return f'Selected {chosen} in element {args.index}'


def _matches(option: dict[str, Any], want: str, by: str) -> bool:
	if by == 'value':
		return option['value'] == want
	return ' '.join(option['label'].split()).lower() == ' '.join(want.split()).lower()


async def _select_aria(
	state: SessionState, node: Any, index: int, listed: dict[str, Any], wanted: list[str], by: str, argument: str
) -> str:
	"""Choose in an ARIA listbox the way a user does: open it (a combobox whose list is hidden is clicked
	first), then click each option with the mouse; the page's own script decides what that selects."""
	options = listed['options']
	picked, missing = [], []
	for want in wanted:
		match = next((o for o in options if _matches(o, want, by)), None)
		if match is None:
			missing.append(want)
		elif match not in picked:
			picked.append(match)
	if missing:
		shown = ', '.join(f'{o["value"]!r} ({o["label"]!r})' for o in options[:100])
		raise InvalidArgument(
			f'{argument}: the listbox of element {index} has no option with the {by} {", ".join(map(clip, missing[:20]))}. '
			f'Nothing was changed. Its options (value (label)): {shown}.'
		)
	if len(picked) > 1 and not listed['multiple']:
		raise InvalidArgument(f'{argument}: the listbox of element {index} is single-choice; give one {by}. Nothing was changed.')
	off = [o['label'] for o in picked if o['disabled']]
	if off or listed['disabled']:
		what = f'option(s) {", ".join(map(repr, off))} are' if off else 'the listbox is'
		raise BrowserActionFailed(f'{argument}: {what} disabled (aria-disabled) in element {index}. Nothing was changed.')
	if not listed.get('shown'):
		cdp, x, y = await element_point(state, node, index)
		await _click(cdp, x, y)
	for option in picked:
		if option['selected'] and listed['multiple']:
			continue  # a click would toggle it off
		object_id = await _object(state, node, ARIA_OPTION, option['index'])
		if object_id is None:
			raise BrowserActionFailed(f'The option {option["label"]!r} of element {index} went away while choosing.')
		cdp, x, y = await element_point(state, node, index, object_id)
		await _click(cdp, x, y)
	after = await call_on(state, node, OPTIONS)
	now = [o['label'] for o in (after or {}).get('options', []) if o['selected']]
	chosen = ', '.join(repr(o['label']) for o in picked)
	if after is None or after['kind'] != 'listbox':
		return f'Clicked {chosen} in the listbox of element {index}'
	return (
		f'Clicked {chosen} in the listbox of element {index}; selected now (aria-selected): {", ".join(map(repr, now)) or "none"}'
	)


async def _object(state: SessionState, node: Any, function: str, *args: Any) -> str | None:
	"""The object id of the element ``function`` (``this``: the element ``node``) returns, or None."""
	cdp = await state.browser_session.cdp_client_for_node(node)
	send, session_id = cdp.cdp_client.send, cdp.session_id
	resolved = await send.DOM.resolveNode(params={'backendNodeId': node.backend_node_id}, session_id=session_id)
	owner = resolved['object']['objectId']
	try:
		params = {'functionDeclaration': function, 'objectId': owner, 'arguments': [{'value': a} for a in args]}
		found = await send.Runtime.callFunctionOn(params=params, session_id=session_id)
	finally:
		with contextlib.suppress(Exception):
			await send.Runtime.releaseObject(params={'objectId': owner}, session_id=session_id)
	return (found.get('result') or {}).get('objectId')


async def _click(cdp: Any, x: float, y: float) -> None:
	await mouse(cdp, 'mouseMoved', x, y)
	await mouse(cdp, 'mousePressed', x, y, buttons=1, button='left')
	await mouse(cdp, 'mouseReleased', x, y, button='left')


# -- drag ----------------------------------------------------------------------------------

# An element the browser drags natively (HTML5 drag and drop) rather than a page's mouse handlers.
DRAGGABLE = """function() {
	const el = this.nodeType === 1 ? this : this.parentElement;
	return !!(el && el.closest('[draggable="true"], a[href], img'));
}"""
DRAGGABLE_AT = """(p) => { const el = document.elementFromPoint(p.x, p.y);
	return !!(el && el.closest('[draggable="true"], a[href], img')); }"""
DRAG_STEPS = 8
DRAG_START_WAIT = 0.3  # s for Chromium to report that a native drag began

# per CDP client: the drag data of the drags Chromium intercepted, by CDP session
_intercepted: weakref.WeakKeyDictionary[Any, dict[str | None, asyncio.Future[Any]]] = weakref.WeakKeyDictionary()


def _watch_drags(client: Any) -> dict[str | None, asyncio.Future[Any]] | None:
	"""Where Input.dragIntercepted events of ``client`` land; None when they cannot be watched."""
	waiting = _intercepted.get(client)
	if waiting is not None:
		return waiting
	waiting = {}

	def on_drag(params: Any, session_id: str | None) -> None:
		future = waiting.get(session_id)
		if future is not None and not future.done():
			future.set_result(params.get('data') if isinstance(params, dict) else None)

	try:
		internals.hook_cdp_event(client, 'Input.dragIntercepted', on_drag)
	except internals.Unavailable as exc:
		logger.info('native drags are not watched (%s): drags use mouse events only', exc)
		return None
	_intercepted[client] = waiting
	return waiting


class DragArgs(Args):
	from_index: int | None = Field(None, ge=0, description='Index of the element to drag, from browser_get_state.')
	to_index: int | None = Field(None, ge=0, description='Index of the element to drop it on, from browser_get_state.')
	from_x: int | None = Field(None, ge=0, description='Or: where to start, in CSS pixels from the left of the viewport.')
	from_y: int | None = Field(None, ge=0, description='Or: where to start, in CSS pixels from the top of the viewport.')
	to_x: int | None = Field(None, ge=0, description='Or: where to drop, in CSS pixels from the left of the viewport.')
	to_y: int | None = Field(None, ge=0, description='Or: where to drop, in CSS pixels from the top of the viewport.')
	include_state: IncludeState = False


def _end(index: int | None, x: int | None, y: int | None, which: str) -> None:
	if index is not None and (x is not None or y is not None):
		raise InvalidArgument(f'{which}_index and {which}_x/{which}_y: give the index or the coordinates, not both.')
	if index is None and (x is None or y is None):
		raise InvalidArgument(f'{which}_index: give it (from browser_get_state), or both {which}_x and {which}_y.')


@tool('Drag and drop', destructive=True, idempotent=False, open_world=True)
async def browser_drag(state: SessionState, args: DragArgs, call: Call) -> str:
	"""Drag from one element (or point) of the session's current page and drop on another: a real mouse press,
	moves and release, so sortable lists react; a native HTML5 drag (draggable elements, links, images) also
	gets its dragenter, dragover and drop events. Give from_index and to_index from browser_get_state, or
	viewport coordinates (from_x, from_y, to_x, to_y)."""
	_end(args.from_index, args.from_x, args.from_y, 'from')
	_end(args.to_index, args.to_x, args.to_y, 'to')
	if args.from_index is not None and args.from_index == args.to_index:
		raise InvalidArgument(f'to_index: element {args.to_index} cannot be dropped onto itself. Nothing was done.')
	if args.from_index is None and (args.from_x, args.from_y) == (args.to_x, args.to_y):
		raise InvalidArgument('to_x/to_y: the drop point is the start point; nothing would move. Nothing was done.')
	if args.from_index is not None:
		source = await element(state, args.from_index)
		target = await element(state, args.to_index) if args.to_index is not None else None
		cdp, x0, y0 = await element_point(state, source, args.from_index)
		native = bool(await call_on(state, source, DRAGGABLE))
	else:
		source = None
		target = await element(state, args.to_index) if args.to_index is not None else None
		cdp = await cdp_page(state)
		x0, y0 = float(args.from_x), float(args.from_y)
		native = bool(await _evaluate_in(cdp, f'({DRAGGABLE_AT})({json.dumps({"x": x0, "y": y0})})'))
	if target is not None:
		to_cdp, x1, y1 = await element_point(state, target, args.to_index)
		if to_cdp.session_id != cdp.session_id:
			raise InvalidArgument('to_index: the drop target is in another frame than the dragged element; not supported.')
		if args.from_index is not None:  # scrolling to the target may have moved the source
			cdp, x0, y0 = await element_point(state, source, args.from_index)
	else:
		x1, y1 = float(args.to_x), float(args.to_y)
	width, height = await viewport_size(state)
	for name, (px, py) in (('from', (x0, y0)), ('to', (x1, y1))):
		if width and height and not (0 <= px < width and 0 <= py < height):
			raise InvalidArgument(
				f'{name}: the point ({px:.0f}, {py:.0f}) is outside the {width}x{height} viewport; the two ends must be '
				'visible together. Scroll first, or use a larger window.'
			)
	notes = []
	for index, end, (px, py) in ((args.from_index, source, (x0, y0)), (args.to_index, target, (x1, y1))):
		cover = await covered_by(cdp, end, px, py) if end is not None else None
		if cover:
			notes.append(f'{cover} covers element {index} there, so the page sees the mouse on it')
	how = await _drag(cdp, (x0, y0), (x1, y1), native)
	what = f'element {args.from_index}' if args.from_index is not None else f'({x0:.0f}, {y0:.0f})'
	onto = f'element {args.to_index}' if args.to_index is not None else f'({x1:.0f}, {y1:.0f})'
	return f'Dragged {what} onto {onto} ({how})' + ''.join(f'; note: {n}' for n in notes)


async def _evaluate_in(cdp: Any, expression: str) -> Any:
	result = await cdp.cdp_client.send.Runtime.evaluate(
		params={'expression': expression, 'returnByValue': True}, session_id=cdp.session_id
	)
	return result.get('result', {}).get('value')


async def _drag(cdp: Any, start: tuple[float, float], end: tuple[float, float], native: bool) -> str:
	send, session_id = cdp.cdp_client.send, cdp.session_id
	waiting = _watch_drags(cdp.cdp_client) if native else None
	intercepting = waiting is not None
	drag_data: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
	if intercepting:
		waiting[session_id] = drag_data
		await send.Input.setInterceptDrags(params={'enabled': True}, session_id=session_id)
	(x0, y0), (x1, y1) = start, end
	pressed = False
	try:
		await mouse(cdp, 'mouseMoved', x0, y0)
		await mouse(cdp, 'mousePressed', x0, y0, buttons=1, button='left')
		pressed = True
		for step in range(1, DRAG_STEPS + 1):
			t = step / DRAG_STEPS
			await mouse(cdp, 'mouseMoved', x0 + (x1 - x0) * t, y0 + (y1 - y0) * t, buttons=1, button='left')
			if intercepting and step == 1:  # past the drag threshold: a native drag starts now, or never
				with contextlib.suppress(TimeoutError):
					await asyncio.wait_for(asyncio.shield(drag_data), DRAG_START_WAIT)
				if drag_data.done():
					break
		if drag_data.done():
			data = drag_data.result() or {'items': [], 'dragOperationsMask': 1}
			for kind in ('dragEnter', 'dragOver', 'drop'):
				params = {'type': kind, 'x': x1, 'y': y1, 'data': data}
				await send.Input.dispatchDragEvent(params=params, session_id=session_id)
			await mouse(cdp, 'mouseReleased', x1, y1, button='left')
			return 'native drag and drop'
		await mouse(cdp, 'mouseReleased', x1, y1, button='left')
		pressed = False
		return 'mouse press, moves and release'
	finally:
		if pressed and not drag_data.done():
			with contextlib.suppress(Exception):
				await mouse(cdp, 'mouseReleased', x1, y1, button='left')
		if intercepting:
			waiting.pop(session_id, None)
			with contextlib.suppress(Exception):
				await send.Input.setInterceptDrags(params={'enabled': False}, session_id=session_id)


# -- wait ----------------------------------------------------------------------------------

MAX_WAIT_MS = 30_000

# Resolves as soon as every given condition holds (checked on each DOM change, at most once per task,
# and every 100 ms for what changes without one), or with what is still unmet when time is up.
WAIT = """(c) => new Promise((resolve) => {
	const unmet = () => {
		const out = [];
		const text = document.body ? document.body.innerText : '';
		if (c.text !== null && !text.includes(c.text)) out.push('text');
		if (c.text_gone !== null && text.includes(c.text_gone)) out.push('text_gone');
		if (c.selector !== null) {
			const el = document.querySelector(c.selector);
			if (!el || !el.getClientRects().length) out.push('selector');
		}
		if (c.url !== null && !location.href.includes(c.url)) out.push('url');
		return out;
	};
	let queued = false, obs = null, poll = null, limit = null;
	const done = (value) => { if (obs) obs.disconnect(); clearInterval(poll); clearTimeout(limit); resolve(value); };
	const check = () => { queued = false; if (!unmet().length) done({met: true}); };
	if (!unmet().length) return resolve({met: true});
	obs = new MutationObserver(() => { if (!queued) { queued = true; setTimeout(check, 0); } });
	obs.observe(document, {subtree: true, childList: true, characterData: true, attributes: true});
	poll = setInterval(check, 100);
	limit = setTimeout(() => done({met: false, unmet: unmet(), url: location.href}), c.ms);
})"""


class WaitForArgs(Args):
	text: str | None = Field(None, min_length=1, description='Wait until this text is shown on the page.')
	text_gone: str | None = Field(None, min_length=1, description='Wait until this text is no longer shown on the page.')
	selector: str | None = Field(
		None, min_length=1, description='Wait until an element matching this CSS selector is on the page and rendered.'
	)
	url: str | None = Field(None, min_length=1, description="Wait until the page's URL contains this.")
	timeout_ms: int = Field(
		5000, description=f'Give up after this many milliseconds (0 to {MAX_WAIT_MS}): an error says what never happened.'
	)


@tool('Wait for a condition', read_only=True, open_world=False)
async def browser_wait_for(state: SessionState, args: WaitForArgs, call: Call) -> str:
	"""Wait until the session's current page shows a text, stops showing one, has an element matching a CSS
	selector, or has a URL containing a string (all the conditions given), and return as soon as it does; an
	error names what did not happen within timeout_ms."""
	conditions = {'text': args.text, 'text_gone': args.text_gone, 'selector': args.selector, 'url': args.url}
	given = {k: v for k, v in conditions.items() if v is not None}
	if not given:
		raise InvalidArgument('text, text_gone, selector, url: give at least one condition to wait for.')
	if not 0 <= args.timeout_ms <= MAX_WAIT_MS:
		raise InvalidArgument(f'timeout_ms: {args.timeout_ms} is outside 0 to {MAX_WAIT_MS} milliseconds.')
	if args.selector is not None:
		cdp = await cdp_page(state)
		probe = f'(() => {{ try {{ document.createDocumentFragment().querySelector({json.dumps(args.selector)}); return null; }} catch (e) {{ return String(e.message); }} }})()'
		bad = await _evaluate_in(cdp, probe)
		if bad:
			raise InvalidArgument(f'selector: {clip(args.selector)} is not a valid CSS selector ({str(bad)[:200]}).')
	loop = asyncio.get_running_loop()
	started = loop.time()
	end = started + args.timeout_ms / 1000
	outcome: Any = None
	while True:
		remaining = max(0, int((end - loop.time()) * 1000))
		expression = f'({WAIT})({json.dumps({**conditions, "ms": remaining})})'
		try:
			cdp = await cdp_page(state)
			answer = await asyncio.wait_for(
				cdp.cdp_client.send.Runtime.evaluate(
					params={'expression': expression, 'returnByValue': True, 'awaitPromise': True}, session_id=cdp.session_id
				),
				remaining / 1000 + 5,
			)
			outcome = answer.get('result', {}).get('value')
		except TimeoutError:
			outcome = None
		except Exception as exc:  # the page navigated away (its context is gone): check the new one
			logger.debug('wait_for: the page changed while waiting (%s); checking again', str(exc)[:200])
			outcome = None
		if isinstance(outcome, dict) and outcome.get('met'):
			took = (loop.time() - started) * 1000
			return f'Waited {took:.0f} ms: {_conditions(given)}'
		if loop.time() >= end:
			break
		await asyncio.sleep(0.05)
	unmet = (outcome or {}).get('unmet') if isinstance(outcome, dict) else None
	missed = {k: given[k] for k in (unmet or given) if k in given}
	url = outcome.get('url') if isinstance(outcome, dict) else None
	raise BrowserActionFailed(
		f'Timed out after {args.timeout_ms} ms waiting for {_conditions(missed, negate=True)} '
		f'(page: {url or await current_url(state)}). Check the page with browser_get_state, or wait longer.'
	)


def _conditions(given: dict[str, str], negate: bool = False) -> str:
	words = {
		'text': ('text {} is shown', 'text {} to appear'),
		'text_gone': ('text {} is gone', 'text {} to disappear'),
		'selector': ('selector {} matches a rendered element', 'selector {} to match a rendered element'),
		'url': ('the URL contains {}', 'the URL to contain {}'),
	}
	return ' and '.join(words[k][negate].format(clip(v)) for k, v in given.items())


# -- upload --------------------------------------------------------------------------------

MAX_UPLOAD_BYTES = 2 * 1024 * 1024  # inline content: its base64 (~2.7 MB) fits the 4 MiB an HTTP request may carry
UPLOADS = 'uploads'  # where inline content is written, inside the session's files directory

# The file input an element stands for: itself, the control of a <label>, or the one input inside it
# (sites hide the real input behind a styled label or button).
FILE_INPUT = """function() {
	const isFile = (el) => el && el.tagName === 'INPUT' && el.type === 'file';
	if (isFile(this)) return this;
	if (this.tagName === 'LABEL' && isFile(this.control)) return this.control;
	const inside = this.querySelectorAll ? this.querySelectorAll('input[type=file]') : [];
	return inside.length === 1 ? inside[0] : null;
}"""
FILES_SET = (
	'function() { return {count: this.files.length, names: [...this.files].map((f) => f.name), multiple: this.multiple}; }'
)


class UploadFileArgs(Args):
	index: int = Field(
		ge=0, description='Index of the file input (or of the label or button that holds it), from browser_get_state.'
	)
	path: str | None = Field(
		None,
		min_length=1,
		description="A file in the session's files directory, relative to it (e.g. uploads/report.pdf). Give this, or "
		'content_base64 with name.',
	)
	content_base64: str | None = Field(
		None,
		min_length=1,
		description=f'The file itself, base64-encoded (at most {MAX_UPLOAD_BYTES // (1024 * 1024)} MiB once decoded); '
		"it is saved as uploads/<name> in the session's files directory, then chosen.",
	)
	name: str | None = Field(None, min_length=1, max_length=200, description='The file name for content_base64, e.g. cv.pdf.')
	include_state: IncludeState = False


def _upload_source(state: SessionState, args: UploadFileArgs) -> Any:
	"""The file to choose, inside the session's files directory (inline content is written there first)."""
	import base64
	import binascii
	from pathlib import Path

	if (args.path is None) == (args.content_base64 is None):
		raise InvalidArgument('path, content_base64: give exactly one (with content_base64, also name).')
	files = Path(state.dirs.files).resolve()
	if args.content_base64 is not None:
		name = args.name or ''
		if not name or name in ('.', '..') or any(c in name for c in '/\\\0'):
			raise InvalidArgument('name: give a plain file name (no directories) for content_base64, e.g. photo.png.')
		if len(args.content_base64) > (MAX_UPLOAD_BYTES * 4) // 3 + 4:
			raise InvalidArgument(f'content_base64: more than {MAX_UPLOAD_BYTES} bytes once decoded; the limit is 2 MiB.')
		try:
			data = base64.b64decode(args.content_base64, validate=True)
		except (binascii.Error, ValueError):
			raise InvalidArgument('content_base64: not valid base64.') from None
		if len(data) > MAX_UPLOAD_BYTES:
			raise InvalidArgument(f'content_base64: {len(data)} bytes once decoded; the limit is {MAX_UPLOAD_BYTES} (2 MiB).')
		target = files / UPLOADS / name
		target.parent.mkdir(parents=True, exist_ok=True)
		target.write_bytes(data)
		return target
	wanted = Path(args.path)
	resolved = (wanted if wanted.is_absolute() else files / wanted).resolve()
	if not resolved.is_relative_to(files):
		raise InvalidArgument(
			f"path: {args.path!r} is outside the session's files directory; only files inside it can be uploaded. Give a "
			'path relative to it, or send the file as content_base64 with name.'
		)
	if not resolved.is_file():
		raise InvalidArgument(
			f"path: {args.path!r} is not a file in the session's files directory. Send it as content_base64 with name."
		)
	return resolved


@tool('Upload a file', destructive=True, idempotent=True, open_world=True)
async def browser_upload_file(state: SessionState, args: UploadFileArgs, call: Call) -> str:
	"""Choose a file for a file input of the session's current page (by index from browser_get_state; a label or
	button holding the input will do): a file from the session's own files directory (path), or one sent inline
	(content_base64 and name, at most 2 MiB). The page gets its input and change events; submit the form as usual."""
	node = await element(state, args.index)
	source = await asyncio.to_thread(_upload_source, state, args)
	chosen_path = await _reachable_path(state, source)
	cdp = await state.browser_session.cdp_client_for_node(node)
	send, session_id = cdp.cdp_client.send, cdp.session_id
	resolved = await send.DOM.resolveNode(params={'backendNodeId': node.backend_node_id}, session_id=session_id)
	owner = resolved['object']['objectId']
	found = await send.Runtime.callFunctionOn(
		params={'functionDeclaration': FILE_INPUT, 'objectId': owner}, session_id=session_id
	)
	target = (found.get('result') or {}).get('objectId')
	try:
		if not target:
			raise InvalidArgument(
				f'index: element {args.index} is a {await call_on(state, node, DESCRIBE)}, not a file input, nor a label or '
				'element holding exactly one. Nothing was chosen.'
			)
		await send.DOM.setFileInputFiles(params={'files': [chosen_path], 'objectId': target}, session_id=session_id)
		chosen = await send.Runtime.callFunctionOn(
			params={'functionDeclaration': FILES_SET, 'objectId': target, 'returnByValue': True}, session_id=session_id
		)
	finally:
		for object_id in (owner, target):
			if object_id:
				with contextlib.suppress(Exception):
					await send.Runtime.releaseObject(params={'objectId': object_id}, session_id=session_id)
	value = (chosen.get('result') or {}).get('value') or {}
	if source.name not in (value.get('names') or []):
		raise BrowserActionFailed(f'The file input of element {args.index} did not take {source.name!r}.')
	where = ' (copied to the Selenium Grid node first)' if chosen_path != str(source) else ''
	return f'Chose {source.name} ({source.stat().st_size} bytes) in the file input of element {args.index}{where}'


async def _reachable_path(state: SessionState, source: Path) -> str:
	"""The path of ``source`` as the session's browser can read it: ours, or on a Selenium Grid the path
	of a copy on its node (the browser there cannot read this server's files)."""
	from browser_use_mcp.providers.grid import GridEndpoint, GridError

	endpoint = getattr(state.browser, 'endpoint', None)
	if not isinstance(endpoint, GridEndpoint):
		return str(source)
	try:
		return await endpoint.upload(source)
	except GridError as exc:
		raise BrowserActionFailed(
			f'Copying {source.name} to the Selenium Grid node failed ({exc}); nothing was chosen. The Grid must accept '
			'WebDriver file uploads (POST /session/<id>/se/file, on by default in Grid 4).'
		) from None


# -- save as PDF ---------------------------------------------------------------------------

MAX_PDF_BYTES = 50 * 1024 * 1024  # one PDF; a longer document is refused, nothing is written
MAX_FILES_BYTES = 500 * 1024 * 1024  # the session's files directory: no PDF is added beyond it
PDF_TIMEOUT = 60.0  # s the browser gets to lay out and print the page
PDF_CHUNK = 1024 * 1024  # bytes read from the browser's PDF stream at a time
PDF_NAME = re.compile(r'[A-Za-z0-9][A-Za-z0-9._-]{0,99}\.pdf')
# how Chromium refuses Page.printToPDF where it cannot print (a browser with a window)
NO_PRINTING = ('not implemented', 'not available', 'not supported', 'printing is disabled')


class SavePdfArgs(Args):
	path: str | None = Field(
		None,
		min_length=1,
		max_length=104,
		description="File name of the PDF, a plain name ending in .pdf (e.g. invoice.pdf), written into the session's "
		'files directory (never elsewhere; an existing file of that name is replaced). Default: page-<date>-<time>.pdf.',
	)
	tab_id: str | None = Field(
		None,
		min_length=1,
		max_length=64,
		description='The tab_id (browser_list_tabs) of the tab to print; omit for the current tab.',
	)
	landscape: bool = Field(False, description='Landscape pages instead of portrait.')


def _pdf_name(path: str | None) -> str:
	if path is None:
		return time.strftime('page-%Y%m%d-%H%M%S.pdf', time.gmtime())
	if not PDF_NAME.fullmatch(path) or '..' in path:
		raise InvalidArgument(
			f'path: {path[:200]!r} is not allowed: give a plain file name ending in .pdf (letters, digits, ".", "_", "-"; '
			'at most 104 characters; no directories, no ".."), e.g. "invoice.pdf". It is written into the session\'s '
			'own files directory, never anywhere else.'
		)
	return path


def _files_size(directory: Path) -> int:
	total = 0
	for root, _, names in os.walk(directory):
		for name in names:
			with contextlib.suppress(OSError):
				total += os.lstat(os.path.join(root, name)).st_size
	return total


def _write_pdf(directory: Path, name: str, chunks: list[bytes]) -> Path:
	"""Write ``directory/name`` whole or not at all, private to the server's user."""
	directory.mkdir(parents=True, exist_ok=True, mode=0o700)
	target = directory / name
	if target.resolve().parent != directory.resolve():  # belt and braces: _pdf_name forbids it already
		raise InvalidArgument(f"path: {name!r} would leave the session's files directory.")
	return write_whole(target, chunks)


@tool('Save the page as PDF', destructive=False, idempotent=False, open_world=False)
async def browser_save_pdf(state: SessionState, args: SavePdfArgs, call: Call) -> str:
	"""Print the session's current page (or the tab given) to a PDF file in the session's files directory, as
	Chromium's print preview would lay it out (print stylesheet, backgrounds, A4/Letter pages as the page asks);
	the result gives the file's path and size. Needs a headless browser (the default)."""
	name = _pdf_name(args.path)
	files = Path(state.dirs.files)
	if args.tab_id is not None:
		target = await resolve_tab(state, args.tab_id)
		cdp = await state.browser_session.get_or_create_cdp_session(target_id=target, focus=False)
	else:
		cdp = await cdp_page(state)
	send, session_id = cdp.cdp_client.send, cdp.session_id
	used = await asyncio.to_thread(_files_size, files)
	if used >= MAX_FILES_BYTES:
		raise BrowserActionFailed(
			f"The session's files directory already holds {used // (1024 * 1024)} MiB (the limit is "
			f'{MAX_FILES_BYTES // (1024 * 1024)} MiB); no PDF was written. Close the session to free it, or use a new one.'
		)
	params = {'landscape': args.landscape, 'printBackground': True, 'transferMode': 'ReturnAsStream'}
	try:
		printed = await asyncio.wait_for(send.Page.printToPDF(params=params, session_id=session_id), PDF_TIMEOUT)
	except TimeoutError:
		raise BrowserActionFailed(
			f'Printing the page to PDF took more than {PDF_TIMEOUT:.0f} s; nothing was written. A very long page may print '
			'faster in parts (scroll to what you need and save it, or browser_get_html).'
		) from None
	except Exception as exc:
		message = str(exc)
		if any(words in message.lower() for words in NO_PRINTING):
			raise BrowserActionFailed(
				"This session's browser cannot print to PDF: Chromium prints only when headless, and this one has a window "
				f'({message[:200]}). Nothing was written. A server started headless (the default; not --headed or '
				'BROWSER_USE_HEADLESS=false) can; browser_screenshot works here.'
			) from None
		raise BrowserActionFailed(
			f'Printing the page to PDF failed: {message.splitlines()[0][:300] if message else exc!r}'
		) from None
	stream = printed.get('stream')
	chunks: list[bytes] = []
	size = 0
	try:
		if not stream:  # an older browser that ignores transferMode sends it whole
			chunks.append(base64.b64decode(printed.get('data') or ''))
			size = len(chunks[0])
		while stream:
			read = await asyncio.wait_for(
				send.IO.read(params={'handle': stream, 'size': PDF_CHUNK}, session_id=session_id), PDF_TIMEOUT
			)
			data = read.get('data') or ''
			chunk = base64.b64decode(data) if read.get('base64Encoded') else data.encode('latin-1')
			size += len(chunk)
			if size > MAX_PDF_BYTES:
				break
			chunks.append(chunk)
			if read.get('eof'):
				break
	finally:
		if stream:
			with contextlib.suppress(Exception):
				await send.IO.close(params={'handle': stream}, session_id=session_id)
	if size > MAX_PDF_BYTES:
		raise BrowserActionFailed(
			f'The PDF of this page is larger than {MAX_PDF_BYTES // (1024 * 1024)} MiB; nothing was written. Save a '
			'shorter page, or read it with browser_get_html.'
		)
	if not chunks or not chunks[0].startswith(b'%PDF'):
		raise BrowserActionFailed('The browser returned no PDF for this page; nothing was written.')
	written = await asyncio.to_thread(_write_pdf, files, name, chunks)
	return f"Saved a PDF of {await _url_of(cdp)} to {written} ({size} bytes); in the session's files directory as {name}"


async def _url_of(cdp: Any) -> str:
	with contextlib.suppress(Exception):
		info = await cdp.cdp_client.send.Target.getTargetInfo(params={'targetId': cdp.target_id})
		return info['targetInfo']['url']
	return 'the page'
