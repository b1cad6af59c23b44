"""A page state read in the page, serialized by browser-use: ``python -m benchmarks.in_page_state``.

``benchmarks.in_page`` measured what reading the state's inputs in the page costs, and
``benchmarks.ax_substitute`` that browser-use's serializer says the same without Chromium's
accessibility tree and paint order on our pages. This puts the two together, end to end, as a
prototype (not the product's path): one ``Runtime.evaluate`` walks the composed tree (elements,
text, open shadow roots, same-origin frames) and returns, per node, what browser-use's enhanced
tree holds (attributes, box in document coordinates, the ten computed styles, client and scroll
rects, a control's live value and checked state, whether it scrolls, whether it has a click
listener); Python builds browser-use's ``EnhancedDOMTreeNode`` tree from it as ``DomService``
builds it from the three CDP trees (absolute positions, frame offsets, visibility with
``DomService.is_element_visible_according_to_all_parents``), gives each element the accessibility
node ``ax_substitute.derived_ax`` derives, runs browser-use's own ``DOMTreeSerializer`` (without
paint order), and fetches the backend node ids of the elements it listed (the indices; a
``DOM.describeNode`` each, sent together).

Per page (the corpus of ``python -m benchmarks.corpus --setup``, and with ``--site`` the test
site's pages), warm p50 of ``--repeats``: browser-use's state as the server reads it
(``DomService.get_dom_tree`` + the serializer, in process) beside the prototype, each step of the
prototype, and whether the two states' texts are the same. Figures only: nothing here passes or
fails.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import re
import statistics
import time
from typing import Any

from benchmarks.ax_substitute import derived_ax, each_page
from benchmarks.in_page import STYLES

BU_STATE = "browser-use's state"
SERVER_STATE = 'our browser_get_state'
OFFSET = 1_000_000_000  # the prototype's stand-in index for row i, until the real backend ids are in
STASH = "Symbol.for('browser-use-mcp in-page state')"  # the walked nodes, for the ids of the listed ones
# target -> a CDP session of the prototype's own on it (no DOM domain enabled)
ids_session: dict[str, str] = {}

WALK = r"""
(() => {
  const STYLES = __STYLES__;
  const SCROLLS = new Set(['auto', 'scroll', 'overlay']);
  const CLICK = ['click', 'mousedown', 'mouseup', 'pointerdown', 'pointerup'];
  const UA_SHADOW = (node, tag) => (tag === 'input' && !['checkbox', 'radio', 'hidden'].includes(node.type)) ||
    tag === 'select' || tag === 'option' || tag === 'textarea' || tag === 'details' ||
    (tag === 'img' && node.hasAttribute('alt') && node.complete && !node.naturalWidth) || tag === 'video' || tag === 'audio';
  const index = new Map(), table = [];
  const s = (v) => { let i = index.get(v); if (i === undefined) { i = table.length; table.push(v); index.set(v, i); } return i; };
  const rows = [], nodes = [];
  const BAND = 1000, MARGIN = 200;  // browser-use's viewport threshold, and a margin for text overflowing its box
  const bands = new Map();  // window -> its document's band
  const parentBox = new Map();  // element -> its box when far outside the band, null when its texts need boxes
  let frames = 0, listeners = 0;
  const listen = typeof getEventListeners === 'function' && document.querySelectorAll('*').length <= 10000;
  const listened = [];
  const visitDocument = (doc, parent) => {
    const me = rows.length;
    const root = doc.documentElement, view = doc.defaultView;
    // browser-use's band, as it computes it: the HTML element's client height (the viewport, or in quirks
    // mode the whole document) +- 1000 px, after the HTML element's scroll offset (0 in quirks mode)
    if (root && view) bands.set(view, {shift: view.scrollY - root.scrollTop, bottom: root.clientHeight + BAND});
    rows.push([9, parent, frames++]);
    nodes.push(doc);
    visitChildren(doc, me, doc.defaultView);
  };
  const visitChildren = (node, parent, win) => {
    for (let child = node.firstChild; child; child = child.nextSibling) visit(child, parent, win);
  };
  const visit = (node, parent, win) => {
    if (node.nodeType === 3) {
      const text = node.nodeValue;
      if (!text.trim()) return;
      const box = parentBox.get(node.parentNode);
      const band = bands.get(win);
      if (box && (box.bottom + band.shift < -BAND - MARGIN || box.top + band.shift > band.bottom + MARGIN)) {
        // its element is far outside the band of viewport +- 1000 px where browser-use sees anything: no box needed
        rows.push([3, parent, s(text), 0]);
        nodes.push(node);
        return;
      }
      const range = node.ownerDocument.createRange();
      range.selectNodeContents(node);
      if (range.getClientRects().length) {
        const b = range.getBoundingClientRect();
        rows.push([3, parent, s(text), 1, b.x + win.scrollX, b.y + win.scrollY, b.width, b.height]);
      } else {
        rows.push([3, parent, s(text), 0]);
      }
      nodes.push(node);
      return;
    }
    if (node.nodeType !== 1) return;
    const attrs = [];
    for (const a of node.attributes) attrs.push(s(a.name), s(a.value));
    const row = [1, parent, s(node.nodeName), attrs];
    const laidOut = node.getClientRects().length > 0;
    if (laidOut) {
      const b = node.getBoundingClientRect();
      const overflows = node.scrollWidth > node.clientWidth || node.scrollHeight > node.clientHeight;
      const band = bands.get(win);
      const inBand = b.bottom + band.shift >= -BAND && b.top + band.shift <= band.bottom;
      parentBox.set(node, inBand || overflows ? null : b);  // null: its texts get their own boxes
      // browser-use reads styles for visibility (in the band only), scrolling (an element whose content
      // overflows) and the cursor (of visible elements): elsewhere they change nothing
      const cs = inBand || overflows ? win.getComputedStyle(node) : null;
      const styles = cs ? STYLES.map((name) => s(cs.getPropertyValue(name))) : null;
      const scrolls = cs !== null && ((SCROLLS.has(cs.overflowX) && node.scrollWidth > node.clientWidth) ||
        (SCROLLS.has(cs.overflowY) && node.scrollHeight > node.clientHeight));
      row.push(1, b.x + win.scrollX, b.y + win.scrollY, b.width, b.height, styles,
        [node.clientLeft, node.clientTop, node.clientWidth, node.clientHeight],
        [node.scrollLeft, node.scrollTop, node.scrollWidth, node.scrollHeight], scrolls ? 1 : 0);
    } else {
      row.push(0);
    }
    const tag = node.localName;
    row.push(tag === 'input' || tag === 'textarea' ? s(node.value) : -1, tag === 'input' && node.checked ? 1 : 0);
    if (listen) {
      try {
        const found = getEventListeners(node);
        if (CLICK.some((kind) => found[kind])) listened.push(rows.length);
      } catch (e) {}
    }
    const me = rows.length;
    rows.push(row);
    nodes.push(node);
    if (UA_SHADOW(node, tag)) {  // Chromium's user-agent shadow root: the page cannot see it, CDP shows it
      rows.push([11, me, s('user-agent')]);
      nodes.push(null);
    }
    if (node.shadowRoot) {
      const root = rows.length;
      rows.push([11, me, s(node.shadowRoot.mode)]);
      nodes.push(node.shadowRoot);
      visitChildren(node.shadowRoot, root, win);
    }
    if (tag === 'iframe' || tag === 'frame') {
      let doc = null;
      try { doc = node.contentDocument; } catch (e) {}
      if (doc && doc.documentElement) visitDocument(doc, me);
      return;
    }
    visitChildren(node, me, win);
  };
  visitDocument(document, -1);
  globalThis[__STASH__] = nodes;
  return JSON.stringify({s: table, r: rows, l: listened.length > 100 ? [] : listened});
})()
""".replace('__STASH__', STASH).replace('__STYLES__', json.dumps(STYLES))


def build(walked: dict[str, Any], target_id: str, session_id: str | None) -> Any:
	"""browser-use's enhanced tree from the walk, as DomService builds it from the three trees."""
	from browser_use.dom.enhanced_snapshot import _SENSITIVE_AUTOCOMPLETE_PREFIXES, _SENSITIVE_INPUT_TYPES
	from browser_use.dom.views import DOMRect, EnhancedDOMTreeNode, EnhancedSnapshotNode, NodeType

	strings, rows, listened = walked['s'], walked['r'], set(walked['l'])
	built: list[Any] = []
	for i, row in enumerate(rows):
		kind, parent = row[0], (built[row[1]] if row[1] >= 0 else None)
		attributes: dict[str, str] = {}
		snapshot = None
		node_name, value, shadow, frame, scrollable = '#document', '', None, None, None
		if kind == 1:
			node_name = strings[row[2]]
			pairs = row[3]
			attributes = {strings[pairs[j]]: strings[pairs[j + 1]] for j in range(0, len(pairs), 2)}
			laid_out = row[4] == 1
			# laid out: [1, parent, name, attrs, 1, x, y, w, h, styles, client, scroll, scrolls, value, checked]
			# not:      [1, parent, name, attrs, 0, value, checked]
			at = 13 if laid_out else 5
			input_value, checked = row[at], row[at + 1] == 1
			sensitive = attributes.get('type', '').lower() in _SENSITIVE_INPUT_TYPES or attributes.get(
				'autocomplete', ''
			).lower().startswith(_SENSITIVE_AUTOCOMPLETE_PREFIXES)
			# Chromium's snapshot has no value for an empty control: nor does the attribute it becomes
			live = strings[input_value] or None if input_value >= 0 and not sensitive else None
			if laid_out:
				styles = {name: strings[index] for name, index in zip(STYLES, row[9], strict=True)} if row[9] else None
				snapshot = EnhancedSnapshotNode(
					is_clickable=None,
					cursor_style=styles.get('cursor') if styles else None,
					bounds=DOMRect(row[5], row[6], row[7], row[8]),
					clientRects=DOMRect(*row[10]),
					scrollRects=DOMRect(*row[11]),
					computed_styles=styles,
					paint_order=None,
					stacking_contexts=None,
					input_value=live,
					input_checked=checked,
				)
				scrollable = row[12] == 1
			else:
				snapshot = EnhancedSnapshotNode(None, None, None, None, None, None, None, None, live, checked)
			if node_name.upper() in ('INPUT', 'TEXTAREA'):
				if live is not None:
					attributes['value'] = live
				if checked:
					attributes['checked'] = 'true'
				else:
					attributes.pop('checked', None)
			if node_name == 'HTML':
				frame = f'frame-{built[row[1]].frame_id}' if parent is not None else None
			if node_name in ('IFRAME', 'FRAME'):
				frame = f'owner-{i}'
		elif kind == 3:
			node_name, value = '#text', strings[row[2]]
			styles = parent.snapshot_node.computed_styles if parent is not None and parent.snapshot_node else None
			bounds = DOMRect(row[4], row[5], row[6], row[7]) if row[3] == 1 else None
			snapshot = EnhancedSnapshotNode(None, None, bounds, None, None, styles if bounds else None, None, None)
		elif kind == 11:
			node_name, shadow = '#document-fragment', strings[row[2]]
		elif kind == 9:
			frame = str(row[2])
		node = EnhancedDOMTreeNode(
			node_id=i,
			backend_node_id=OFFSET + i,
			node_type=NodeType(kind),
			node_name=node_name,
			node_value=value,
			attributes=attributes,
			is_scrollable=scrollable or None,
			frame_id=frame,
			session_id=session_id,
			target_id=target_id,
			content_document=None,
			shadow_root_type=shadow,  # type: ignore[arg-type]
			shadow_roots=None,
			parent_node=parent,
			children_nodes=None,
			ax_node=None,
			snapshot_node=snapshot,
			is_visible=None,
			has_js_click_listener=i in listened,
			absolute_position=None,
			uuid='',  # nothing reads it; a uuid7 per node costs ~2 us
		)
		built.append(node)
		if parent is not None:
			if kind == 11:
				parent.shadow_roots = [*(parent.shadow_roots or []), node]
			elif kind == 9:
				parent.content_document = node
			else:
				parent.children_nodes = [*(parent.children_nodes or []), node]
	root = built[0]
	_finish(root, [], DOMRect(0.0, 0.0, 0.0, 0.0))
	return root


def _finish(node: Any, html_frames: list[Any], offset: Any) -> None:
	"""Positions, frames and visibility, in DomService._construct_enhanced_node's order."""
	from browser_use.dom.service import DomService
	from browser_use.dom.views import DOMRect, NodeType

	offset = DOMRect(offset.x, offset.y, offset.width, offset.height)
	snap = node.snapshot_node
	if snap is not None and snap.bounds is not None:
		node.absolute_position = DOMRect(
			snap.bounds.x + offset.x, snap.bounds.y + offset.y, snap.bounds.width, snap.bounds.height
		)
	frames = html_frames.copy()
	if node.node_type == NodeType.ELEMENT_NODE and node.node_name == 'HTML' and node.frame_id is not None:
		frames.append(node)
		if snap is not None and snap.scrollRects is not None:
			offset.x -= snap.scrollRects.x
			offset.y -= snap.scrollRects.y
	if node.node_name.upper() in ('IFRAME', 'FRAME') and snap is not None and snap.bounds is not None:
		frames.append(node)
		offset.x += snap.bounds.x
		offset.y += snap.bounds.y
	if node.content_document is not None:
		_finish(node.content_document, frames, offset)
	for shadow in node.shadow_roots or []:
		_finish(shadow, frames, offset)
	for child in node.children_nodes or []:
		_finish(child, frames, offset)
	node.is_visible = DomService.is_element_visible_according_to_all_parents(node, frames, 1000)
	if node.node_type == NodeType.ELEMENT_NODE:
		node.ax_node = derived_ax(node)


async def prototype(state: Any, timings: dict[str, list[float]]) -> tuple[str, dict[int, Any]]:
	from browser_use.dom.serializer.serializer import DOMTreeSerializer

	session = state.browser_session
	target = session.agent_focus_target_id
	cdp = await session.get_or_create_cdp_session(target, focus=False)
	send = cdp.cdp_client.send

	def lap(name: str, started: float) -> float:
		now = time.perf_counter()
		timings.setdefault(name, []).append((now - started) * 1000)
		return now

	began = started = time.perf_counter()
	answer = await send.Runtime.evaluate(
		params={'expression': WALK, 'returnByValue': True, 'includeCommandLineAPI': True}, session_id=cdp.session_id
	)
	started = lap('walk (in the page)', started)
	gc.disable()  # as the page-state worker builds: one collection after, not hundreds during
	try:
		walked = json.loads(answer['result']['value'])
		started = lap('decode', started)
		root = build(walked, target, cdp.session_id)
		started = lap('build the tree', started)
		serialized, _ = DOMTreeSerializer(root, None, paint_order_filtering=False).serialize_accessible_elements()
		text = serialized.llm_representation()
		started = lap("browser-use's serializer", started)
	finally:
		gc.enable()
	rows = [index - OFFSET for index in serialized.selector_map]
	# On a session of its own: on browser-use's, whose DOM domain is enabled, each describeNode also pushes
	# the node's path (siblings included) to the client as DOM.setChildNodes events: 1.5 s for 304 ids
	# on python stdtypes, against ~30 ms here
	own = ids_session.get(target)
	if own is None:
		attached = await session.cdp_client.send.Target.attachToTarget(params={'targetId': target, 'flatten': True})
		own = ids_session[target] = attached['sessionId']
	found = await send.Runtime.evaluate(
		params={'expression': f'{json.dumps(rows)}.map((i) => globalThis[{STASH}][i])', 'objectGroup': 'in-page-state'},
		session_id=own,
	)
	props = await send.Runtime.getProperties(
		params={'objectId': found['result']['objectId'], 'ownProperties': True}, session_id=own
	)
	handles = [p['value']['objectId'] for p in props['result'] if p['name'].isdigit()]
	described = await asyncio.gather(
		*(send.DOM.describeNode(params={'objectId': handle, 'depth': 0}, session_id=own) for handle in handles)
	)
	await send.Runtime.releaseObjectGroup(params={'objectGroup': 'in-page-state'}, session_id=own)
	real = {OFFSET + row: answer['node']['backendNodeId'] for row, answer in zip(rows, described, strict=True)}
	text = re.sub(r'\[(\d{10})\]', lambda m: f'[{real.get(int(m.group(1)), m.group(1))}]', text)
	selector_map = {real[index]: node for index, node in serialized.selector_map.items()}
	lap('backend ids of the listed', started)
	lap('total', began)
	return text, selector_map


async def reference(state: Any, timings: dict[str, list[float]]) -> tuple[str, dict[int, Any]]:
	from browser_use.dom.serializer.serializer import DOMTreeSerializer
	from browser_use.dom.service import DomService

	started = time.perf_counter()
	service = DomService(browser_session=state.browser_session)
	root, _ = await service.get_dom_tree(target_id=state.browser_session.agent_focus_target_id)
	serialized, _ = DOMTreeSerializer(root, None, paint_order_filtering=True).serialize_accessible_elements()
	text = serialized.llm_representation()
	timings.setdefault(BU_STATE, []).append((time.perf_counter() - started) * 1000)
	return text, dict(serialized.selector_map)


async def main(args: argparse.Namespace) -> None:
	import difflib

	from benchmarks.common import table
	from browser_use_mcp.tools.base import Call

	rows, shown, ids_rounds = [], [], []
	steps = ['walk (in the page)', 'decode', 'build the tree', "browser-use's serializer", 'backend ids of the listed']
	async with contextlib.aclosing(each_page(args, 'proto')) as opened:
		async for name, state, catalog in opened:
			timings: dict[str, list[float]] = {}
			for _ in range(args.repeats):
				ours, our_map = await prototype(state, timings)
				gc.collect()
				theirs, their_map = await reference(state, timings)
				started = time.perf_counter()
				await catalog.call('browser_get_state', {'session_id': 'proto'}, Call())
				timings.setdefault(SERVER_STATE, []).append((time.perf_counter() - started) * 1000)
			same = (
				'same'
				if ours == theirs
				else f'{sum(1 for d in difflib.ndiff(theirs.splitlines(), ours.splitlines()) if d[:1] in "+-")} lines differ'
			)
			if ours != theirs and args.show:
				diff = difflib.unified_diff(theirs.splitlines(), ours.splitlines(), lineterm='', n=0)
				shown.extend(f'{name}: {line[:220]}' for line in list(diff)[2 : 2 + args.show])
			p50 = {key: statistics.median(values) for key, values in timings.items()}
			rows.append(
				[
					name,
					len(their_map),
					len(our_map),
					same,
					f'{p50[BU_STATE]:.0f}',
					f'{p50[SERVER_STATE]:.0f}',
					f'{p50["total"]:.0f}',
					' / '.join(f'{p50[step]:.0f}' for step in steps),
				]
			)
			ids_rounds.append(f'{name}: {", ".join(f"{ms:.0f}" for ms in timings["backend ids of the listed"])}')
	print(
		table(
			f'browser-use state vs the in-page prototype, warm p50 of {args.repeats}, ms (in process)',
			[
				'page',
				'listed (browser-use)',
				'listed (prototype)',
				'text',
				BU_STATE,
				SERVER_STATE,
				'prototype',
				'walk / decode / build / serializer / ids',
			],
			rows,
		)
	)
	# their spread matters: inside the server they were erratic and grew from state to state on some pages
	print('backend ids of the listed, each round (ms):\n' + '\n'.join(ids_rounds))
	if shown:
		print('\n'.join(shown))


def parse(argv: list[str] | None = None) -> argparse.Namespace:
	parser = argparse.ArgumentParser(prog='python -m benchmarks.in_page_state', description=__doc__)
	parser.add_argument('--pages', nargs='*', help='corpus pages by (part of their) name; default: all')
	parser.add_argument('--site', action='store_true', help="also the test site's pages (harness/pages.py)")
	parser.add_argument('--repeats', type=int, default=5)
	parser.add_argument('--settle', type=float, default=3.0)
	parser.add_argument('--show', type=int, default=0, help='print up to N lines of each differing text')
	return parser.parse_args(argv)


if __name__ == '__main__':
	from benchmarks.common import run_in_scratch_home

	arguments = parse()
	run_in_scratch_home('bench-in-page-', lambda: main(arguments))
