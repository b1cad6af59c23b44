"""browser_get_state read in the page: one walk instead of Chromium's three trees.

Why: on real pages browser-use 0.13.14's state is bound by what it reads. It asks Chromium for three
trees of the whole document (``DOMSnapshot.captureSnapshot``, ``DOM.getDocument``, and the
accessibility tree of every frame, which Chromium computes afresh for each request: ~185 ms on
python stdtypes before anything is sent), several MB of JSON that are then decoded and joined node
by node. ``benchmarks.in_page`` measured the three trees' answer and decode alone at about our
whole state's time (stdtypes: 1,366 + 687 ms), where one walk of the page reading the same inputs
took 237 + 75 ms.

What this does, for the states ``browser_get_state`` and ``include_state`` ask for (within
``offload_state.compact_state``; anything else keeps browser-use's own pipeline):

- One call (``Runtime.callFunctionOn`` on the document's memo, below) walks the composed tree in
  the page (elements, texts, open shadow roots, same-origin frames) and returns, per node, what browser-use's enhanced tree holds:
  attributes, box in document coordinates, the computed styles browser-use reads, client and
  scroll rects where its scroll test can use them, a control's live value, checked and
  indeterminate state, whether it scrolls, whether it has a
  click listener (DevTools' ``getEventListeners``, with browser-use's limits). The answer stays in
  the inspector's object group; its text comes back undecoded (straight from our browser's pipe
  when the session's browser is one of ours) and goes to the page-state worker.
- The worker builds browser-use's ``EnhancedDOMTreeNode`` tree from it as ``DomService`` builds it
  from the three trees (absolute positions, frame offsets, visibility with browser-use's own
  ``is_element_visible_according_to_all_parents``), gives every element an accessibility node
  derived from the DOM (``derived_ax``: the role and the properties browser-use reads, with
  Chromium's quirks), stands in for Chromium's user-agent shadow roots, and runs browser-use's own
  ``DOMTreeSerializer``, without paint order (the walk cannot see it).
- Far content is left out: a subtree far outside browser-use's band (its root and the root's parent
  both beyond it by more than a margin, the parent plain, nothing inside near the band, scrolling,
  in a shadow root or a frame) is dropped from the walk's rows as it ends. browser-use lists and
  shows nothing from there; on a long page it was most of what was sent, built and serialized.
- The listed elements' backend node ids (the indices) come in one more call: the walked nodes,
  deep-serialized as WebDriver BiDi asks for them, carry their ``backendNodeId``. The selector map
  is then the same as browser-use's: same indices, stale-index guarantees unchanged.
- Ids already known are not asked again: the walk runs on a memo kept for its document in the
  inspector's object group (out of the page's reach), which tags every element it walks (a
  ``WeakMap``, so the same element gets the same tag in every walk of the document, and a look-alike
  a new one). The server keeps, per page, the backend id of each tag the last state listed; only the
  listed elements new since then are asked for. A new document (or inspector session) loses the memo:
  the next walk makes another.
- A walk whose answer is the same as the last walk's on the same memo (a digest of it, ``walk_key``)
  reuses that walk's build: the build is a function of the answer alone. One build is kept per
  session, on the memo walked last.

Sameness: ``benchmarks.in_page_state --site`` and ``tests/test_in_page_state.py`` compare the state's
text with browser-use's own pipeline, character for character, on the corpus and the test site.
Intended differences: no paint-order filter (an element entirely hidden under an opaque one is
listed), and the accessible name is not computed (browser-use's state text does not show it). On a
quirks-mode page both routes take the viewport from the body element (``quirks_viewport``), where
browser-use alone would count the whole document as in view.

Falls back to the three trees (``offload_state``'s path) when the page has a frame whose document it
cannot read (cross-origin: Chromium's trees have it, the page does not), more frames than
browser-use's ``max_iframes``, a walk that fails (a page that broke a built-in it uses), or a
listed node whose id does not come back. The walk runs in the page's own world, as browser-use's
listener scan does: a page that lies about its layout to its own scripts lies to the state too.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import functools
import hashlib
import itertools
import json
import logging
import re
import time
import weakref
from typing import Any

from browser_use_mcp.errors import script_error
from browser_use_mcp.patches import Patch, per_connection

logger = logging.getLogger(__name__)

BROWSER_USE_VERSION = '0.13.14'
_SERVICE = 'browser_use.dom.service:DomService'
OFFSET = 1_000_000_000  # the worker's stand-in index for walked row i; the real backend ids replace it
GROUP = 'browser-use-mcp-page-walk'  # the inspector object group holding a walk until its ids are read
WAIT = 10.0  # s for the walk and the ids (browser-use's first wait for its trees)

_groups = itertools.count(1)
_releasing: set[asyncio.Future[None]] = set()
fallbacks: dict[str, int] = {}  # why the trees were read instead, and how often (for tests and benchmarks)
last_timing: dict[str, float] = {}  # the last walked state's steps, ms (for benchmarks)
REMEMBER = True  # walks on a memo per document, and ids known from it (False: benchmarks' "as before")
REUSE = True  # a walk the same as the memo's last one reuses that walk's build (False: benchmarks' "as before")
AHEAD_MOST_SKIPS = 8  # builds ahead skipped at most on a document after their builds went unused
ahead_counts: collections.Counter[str] = collections.Counter()  # builds ahead: built, used, missed (for metrics and tests)


def _fell_back(why: str) -> None:
	fallbacks[why] = fallbacks.get(why, 0) + 1
	logger.debug('page state from the three trees: %s', why)


# computed styles browser-use asks the snapshot for that nothing reads on this route: the paint-order
# filter's background colour (the walk has no paint order), and two nothing in browser-use 0.13.14 reads
UNREAD_STYLES = ('background-color', 'pointer-events', 'position')


def _styles() -> list[str]:
	"""The computed styles the walk reads, in browser-use's order."""
	from browser_use.dom.enhanced_snapshot import REQUIRED_COMPUTED_STYLES

	return [name for name in REQUIRED_COMPUTED_STYLES if name not in UNREAD_STYLES]


# -- the walk (in the page) ----------------------------------------------------------------------

WALK = r"""
function () {
  const memo = this;  // the page's memo (MEMO): its elements' tags, and DevTools' getEventListeners
  const STYLES = __STYLES__;
  const SCROLLS = new Set(['auto', 'scroll', 'overlay']);
  const SVG = 'http://www.w3.org/2000/svg';
  // Chromium's whitespace (ASCII, and the other characters of bidi class WS), not JavaScript's trim()'s
  const BLANK = /^[\t\n\v\f\r \u1680\u2000-\u200a\u2028\u205f\u3000]*$/;
  const CLICK = __CLICK__;
  const UA_SHADOW = (node, tag) => (tag === 'input' && !['checkbox', 'radio', 'hidden'].includes(node.type)) ||
    tag === 'select' || tag === 'option' || tag === 'textarea' || tag === 'details' ||
    (tag === 'img' && node.hasAttribute('alt') && node.complete && !node.naturalWidth) || tag === 'video' || tag === 'audio';
  const index = new Map(), table = [];
  const s = (v) => { let i = index.get(v); if (i === undefined) { i = table.length; table.push(v); index.set(v, i); } return i; };
  const rows = [], nodes = [];
  const BAND = __BAND__, MARGIN = 200;  // browser-use's viewport threshold, and a margin for text overflowing its box
  const LEAVE_FAR = __LEAVE_FAR__;  // far content left out (below; false only in a benchmark)
  const bands = new Map();  // window -> its document's band
  const QUIRKS = __QUIRKS__;  // quirks_viewport: a quirks-mode document's HTML element gets its body's rects
  const viewports = new Map();  // HTML element -> the body whose client and scroll rects are the viewport's
  const unseen = new Set();  // elements without a box (their texts get none either)
  const parentBox = new Map();  // element -> its box when far outside the band, null when its texts need boxes
  let frames = 0;
  // rows that keep a far subtree (below): a shadow root, a frame, a scroller, an element near the band
  let keepers = 0, left = 0;
  const listen = memo.listeners !== null && document.querySelectorAll('*').length <= __HEAVY__;
  const listened = [];
  const visitDocument = (doc, parent) => {
    const me = rows.length;
    const root = doc.documentElement, view = doc.defaultView;
    // browser-use's band, as it computes it: the HTML element's client height (the viewport, or in quirks
    // mode the whole document) +- 1000 px, after the HTML element's scroll offset (0 in quirks mode)
    // (its scroll offsets read once: nothing scrolls during the walk, and each read of a window's
    // scrollX asks Chromium whether layout is clean: a quarter of the walk's own time on stdtypes).
    // With QUIRKS, a quirks-mode document's HTML element reads as its body, whose client and scroll
    // rects are the viewport's in that mode (CSSOM View), as the three trees are corrected
    if (root && view) {
      const body = QUIRKS && doc.compatMode === 'BackCompat' && doc.body && doc.body.localName === 'body' ? doc.body : null;
      if (body) viewports.set(root, body);
      const port = body || root;
      const x = view.scrollX, y = view.scrollY;
      bands.set(view, {shift: y - port.scrollTop, bottom: port.clientHeight + BAND, x, y});
    }
    if (parent >= 0) keepers++;
    rows.push([9, parent, frames++]);
    nodes.push(doc);
    visitChildren(doc, me, doc.defaultView, 0);
  };
  const attributes = (node) => {
    const pairs = [];
    for (const a of node.attributes) pairs.push(s(a.name), s(a.value));
    return pairs;
  };
  // far: 1 for a plain element far outside the band (or without a box, under one), whose subtree may go
  const visitChildren = (node, parent, win, far) => {
    for (let child = node.firstChild; child; child = child.nextSibling) visit(child, parent, win, far);
  };
  const visit = (node, parent, win, parentFar) => {
    if (node.nodeType === 3) {
      const text = node.nodeValue;
      if (BLANK.test(text)) return;  // as DevTools leaves them out: a no-break space is not blank
      const box = parentBox.get(node.parentNode);
      const band = bands.get(win);
      if (unseen.has(node.parentNode) || box && (box.bottom + band.shift < -BAND - MARGIN || box.top + band.shift > band.bottom + MARGIN)) {
        // its element is far outside the band of viewport +- 1000 px where browser-use sees anything: no box needed
        rows.push([3, parent, parentFar ? text : s(text), 0]);  // (under a far parent: interned if kept, at the end)
        nodes.push(node);
        return;
      }
      const range = node.ownerDocument.createRange();
      range.selectNodeContents(node);
      if (range.getClientRects().length) {
        const b = range.getBoundingClientRect();
        rows.push([3, parent, s(text), 1, b.x + band.x, b.y + band.y, b.width, b.height]);
      } else {
        rows.push([3, parent, s(text), 0]);
      }
      nodes.push(node);
      return;
    }
    if (node.nodeType !== 1) return;
    const start = rows.length, strings = table.length, kept = keepers, heard = listened.length;
    const row = [1, parent, s(node.nodeName), null];
    // checkVisibility first: it answers without laying out what Chromium skips (a closed <details>'s
    // content, content-visibility: hidden), which getClientRects would lay out, and keep laid out,
    // and which the snapshot (so browser-use) does not see
    const checks = node.checkVisibility !== undefined;  // (Chromium 105 on)
    const seen = !checks || node.checkVisibility();
    if (!seen) unseen.add(node);
    const tag = node.localName;
    // seen by checkVisibility, it has a layout object, which the snapshot gives a box (a <wbr> too, 0 px
    // wide, where getClientRects has none); but SVG's resources (defs, gradients, ...) have none there
    const laidOut = seen && (checks && node.namespaceURI !== SVG || node.getClientRects().length > 0);
    let far = laidOut ? 0 : parentFar;  // an element without a box is as far as its parent
    if (laidOut) {
      const b = node.getBoundingClientRect();
      const band = bands.get(win);
      const inBand = b.bottom + band.shift >= -BAND && b.top + band.shift <= band.bottom;
      // browser-use reads styles for visibility (in the band only), scrolling (an element whose content
      // overflows) and the cursor (of visible elements): elsewhere they change nothing
      let cs = inBand ? win.getComputedStyle(node) : null;
      // its sizes: in the band they matter only where content can scroll (browser-use's scroll test asks
      // for overflow auto, scroll or overlay) and for a document or a frame; beyond it, overflowing
      // content may reach back into the band
      const sized = cs === null || tag === 'html' || tag === 'iframe' || tag === 'frame' ||
        SCROLLS.has(cs.overflowX) || SCROLLS.has(cs.overflowY);
      const port = (tag === 'html' && viewports.get(node)) || node;  // (a quirks-mode HTML element: its body)
      const cw = sized ? port.clientWidth : 0, ch = sized ? port.clientHeight : 0;
      const sw = sized ? port.scrollWidth : 0, sh = sized ? port.scrollHeight : 0;
      const overflows = sw > cw || sh > ch;
      if (b.bottom + band.shift < -BAND - MARGIN || b.top + band.shift > band.bottom + MARGIN) far = 1;
      else keepers++;
      if (overflows) keepers++;
      parentBox.set(node, inBand || overflows ? null : b);  // null: its texts get their own boxes
      if (cs === null && overflows) cs = win.getComputedStyle(node);
      const styles = cs ? STYLES.map((name) => s(cs.getPropertyValue(name))) : null;
      const scrolls = cs !== null && ((SCROLLS.has(cs.overflowX) && sw > cw) || (SCROLLS.has(cs.overflowY) && sh > ch));
      // client and scroll rects: browser-use reads them to tell a scroller (content overflowing), and of
      // a document's HTML element and a frame; elsewhere they change nothing, and each read costs
      const rects = overflows || tag === 'html' || tag === 'iframe' || tag === 'frame';
      row.push(1, b.x + band.x, b.y + band.y, b.width, b.height, styles,
        rects ? [port.clientLeft, port.clientTop, cw, ch] : null,
        rects ? [port.scrollLeft, port.scrollTop, sw, sh] : null, scrolls ? 1 : 0);
    } else {
      row.push(0);
    }
    // the attributes of an element that may be left out (far, under a far parent) are read once it is kept
    const later = far && parentFar && tag !== 'iframe' && tag !== 'frame';
    if (!later) row[3] = attributes(node);
    // checked (1), and an indeterminate checkbox (2): what its accessibility node says ("mixed")
    row.push(tag === 'input' || tag === 'textarea' ? s(node.value) : -1,
      tag === 'input' ? (node.checked ? 1 : 0) | (node.indeterminate && node.type === 'checkbox' ? 2 : 0) : 0);
    if (listen) {
      try {
        const found = memo.listeners(node);
        if (CLICK.some((kind) => found[kind])) listened.push(rows.length);
      } catch (e) {}
    }
    const me = rows.length;
    rows.push(row);
    nodes.push(node);
    if (UA_SHADOW(node, tag)) {  // Chromium's user-agent shadow root: the page cannot see it, CDP shows it
      keepers++;
      rows.push([11, me, s('user-agent')]);
      nodes.push(null);
    }
    if (node.shadowRoot) {
      keepers++;
      const root = rows.length;
      rows.push([11, me, s(node.shadowRoot.mode)]);
      nodes.push(node.shadowRoot);
      visitChildren(node.shadowRoot, root, win, far);
    }
    if (tag === 'iframe' || tag === 'frame') {
      keepers++;
      let doc = null;
      try { doc = node.contentDocument; } catch (e) {}
      if (doc === null) throw BLOCKED;  // cross-origin: its document is not the page's to read (the trees are)
      else if (doc.documentElement) visitDocument(doc, me);
      return;
    }
    // a plain element far outside the band (not a scroller, no shadow root, no frame) hands its farness
    // to its children: one whose whole subtree is far, with nothing kept in it, is left out (below)
    visitChildren(node, me, win, far && keepers === kept ? far : 0);
    if (LEAVE_FAR && far && parentFar && keepers === kept && node.getRootNode() === document) {
      // far outside the band with its parent, nothing in it browser-use could list, show or count
      // (no box near the band, no scroller, shadow root or frame), and in the top document's own
      // tree: as if it were not there. Its parent, far too and plain, is listed by nothing, so no
      // listed element's text (two levels deep) loses it either.
      left++;
      rows.length = nodes.length = start;
      listened.length = heard;
      for (let i = strings; i < table.length; i++) index.delete(table[i]);
      table.length = strings;
    } else if (later) {
      row[3] = attributes(node);
    }
  };
  const BLOCKED = {};
  try {
    visitDocument(document, -1);
  } catch (e) {
    if (e !== BLOCKED) throw e;
    return {text: null, nodes: [], blocked: 1, frames};  // no further: the state is read from the trees
  }
  for (const row of rows) if (row[0] === 3 && typeof row[2] === 'string') row[2] = s(row[2]);
  // kept by reference, in the inspector's object group only (the page cannot see it): the text for
  // the state, the nodes for the backend ids of the listed ones, the memo to keep for the next walk
  // the text for the state comes back with the walk's answer, unless there are more frames than browser-use reads
  if (frames > __FRAMES__) return {text: null, nodes: [], blocked: 0, frames, left, memo};
  // each kept element's tag: the same number for the same element in every walk on this memo (so of
  // this document), which the server maps to the backend id it was given for it last time
  const tags = memo.tags, tagged = rows.map((row, i) => {
    if (row[0] !== 1) return 0;
    let tag = tags.get(nodes[i]);
    if (tag === undefined) { tag = memo.next++; tags.set(nodes[i], tag); }
    return tag;
  });
  const text = JSON.stringify({s: table, r: rows, l: listened.length > __LISTENED__ ? [] : listened, g: tagged});
  return {text, nodes, blocked: 0, frames, left, memo};
}
"""
# a memo for the walks of one document, kept in the inspector's MEMO_GROUP (out of the page's reach): a
# tag per element it has walked (held weakly), and DevTools' getEventListeners (command-line API: only
# an evaluation may ask for it, and the walk on a memo is a function call)
MEMO = "({tags: new WeakMap(), next: 1, listeners: typeof getEventListeners === 'function' ? getEventListeners : null})"


FOCUSABLE_TAGS = {'button', 'select', 'textarea', 'summary'}
TEXT_INPUTS = {'', 'text', 'email', 'tel', 'url', 'password', 'search', 'number', 'date', 'time', 'datetime-local', 'month'}
INPUT_ROLES = {
	'button': 'button',
	'submit': 'button',
	'reset': 'button',
	'image': 'button',
	'checkbox': 'checkbox',
	'radio': 'radio',
	'range': 'slider',
	'number': 'spinbutton',
	'search': 'searchbox',
}


def implicit_role(node: Any) -> str | None:
	"""The role a page script can tell from the element alone (HTML-AAM), for the roles browser-use reads."""
	tag, attrs = node.tag_name, node.attributes or {}
	explicit = attrs.get('role', '').split()
	if explicit:
		return explicit[0]
	if tag in ('a', 'area'):
		return 'link' if 'href' in attrs else None
	if tag == 'button':
		return 'button'
	if tag == 'input':
		kind = attrs.get('type', '').lower()
		if kind == 'hidden':
			return None
		if kind in INPUT_ROLES:
			return INPUT_ROLES[kind]
		return 'combobox' if 'list' in attrs else 'textbox'
	if tag == 'textarea':
		return 'textbox'
	if tag == 'select':
		return 'listbox' if 'multiple' in attrs or int(attrs.get('size', '1') or 1) > 1 else 'combobox'
	if tag == 'option':
		return 'option'
	if tag == 'hr':
		return 'separator'
	if tag in ('td',):
		return 'cell'
	if tag == 'th':
		return 'columnheader'
	if tag == 'tr':
		return 'row'
	return None


def _level(node: Any) -> int | None:
	"""A heading's level, or a list item's nesting depth, as Chromium exposes them."""
	tag = node.tag_name
	if tag in ('h1', 'h2', 'h3', 'h4', 'h5', 'h6'):
		return int(tag[1])
	if tag != 'li' or (node.attributes or {}).get('role', 'listitem') != 'listitem':
		return None
	depth, parent = 0, node.parent_node
	while parent is not None:
		if parent.tag_name in ('ul', 'ol', 'menu'):
			depth += 1
		parent = parent.parent_node
	return depth or None


def _number(given: str | None, default: float) -> float | int:
	try:
		value = float(given) if given not in (None, '') else float(default)
	except ValueError:
		value = float(default)
	return int(value) if value.is_integer() else value


def _first_option_empty(node: Any) -> bool:
	"""Whether the select shows an option without a value (no option says selected: the first)."""
	options = []
	stack = list(reversed(node.children_nodes or []))
	while stack:
		child = stack.pop()
		if child.tag_name == 'option':
			options.append(child)
		elif child.tag_name == 'optgroup':
			stack.extend(reversed(child.children_nodes or []))
	if not options:
		return True
	chosen = next((o for o in options if 'selected' in (o.attributes or {})), options[0])
	value = (chosen.attributes or {}).get('value')
	if value is None:
		value = chosen.get_all_children_text() if hasattr(chosen, 'get_all_children_text') else ''
	return value == ''


def _in_disabled_fieldset(node: Any) -> bool:
	parent = node.parent_node
	while parent is not None:
		if parent.tag_name == 'fieldset' and 'disabled' in (parent.attributes or {}):
			return True
		parent = parent.parent_node
	return False


def derived_ax(node: Any, mixed: bool = False) -> Any:
	from browser_use.dom.views import EnhancedAXNode, EnhancedAXProperty

	tag, attrs = node.tag_name, node.attributes or {}
	role = implicit_role(node)
	kind = attrs.get('type', '').lower()
	snap = node.snapshot_node
	props: list[tuple[str, Any]] = []
	checkable = role in ('checkbox', 'radio')
	required = 'required' in attrs or attrs.get('aria-required') == 'true'
	if tag in ('input', 'textarea', 'select', 'button') and kind != 'hidden':  # Chromium lists it first
		# Chromium reports a failed constraint at once on a checkbox, on a text field only once edited
		unchecked = snap is not None and not snap.input_checked and 'checked' not in attrs
		# and on a select whose chosen option has no value (the page can tell: select.validity.valueMissing)
		empty_choice = tag == 'select' and required and _first_option_empty(node)
		props.append(('invalid', 'true' if (role == 'checkbox' and required and unchecked) or empty_choice else 'false'))
	disabled = tag in ('button', 'input', 'select', 'textarea', 'option', 'optgroup', 'fieldset') and (
		'disabled' in attrs or _in_disabled_fieldset(node)
	)
	if disabled or attrs.get('aria-disabled') == 'true':
		props.append(('disabled', True))
	focusable = not disabled and (
		(tag in ('a', 'area') and 'href' in attrs)
		or (tag == 'input' and kind != 'hidden')
		or tag in FOCUSABLE_TAGS
		or ('tabindex' in attrs)
		or attrs.get('contenteditable', 'false') != 'false'
		or bool(node.is_scrollable)  # Chromium makes scrollable containers keyboard-focusable
	)
	if focusable:
		props.append(('focusable', True))
	editable = (tag == 'input' and kind in TEXT_INPUTS) or tag == 'textarea' or attrs.get('contenteditable', 'false') != 'false'
	if editable and not disabled:
		props.append(('editable', 'plaintext'))
		props.append(('settable', True))
	elif tag == 'hr':
		props.append(('settable', True))  # Chromium's: a separator could be a splitter, whose value is settable
		props.append(('orientation', 'horizontal'))
	if role in ('checkbox', 'radio', 'switch', 'menuitemcheckbox', 'menuitemradio'):
		live = snap.input_checked if snap is not None and snap.input_checked is not None else 'checked' in attrs
		state = 'mixed' if mixed and role == 'checkbox' else 'true' if live else 'false'
		props.append(('checked', attrs.get('aria-checked', state)))
	if 'aria-expanded' in attrs:
		props.append(('expanded', attrs['aria-expanded'] == 'true'))
	if 'aria-pressed' in attrs:
		props.append(('pressed', attrs['aria-pressed']))
	if role in ('option', 'tab', 'row', 'gridcell') and ('aria-selected' in attrs or tag == 'option'):
		props.append(('selected', attrs.get('aria-selected', 'true' if 'selected' in attrs else 'false') == 'true'))
	if required and not checkable and tag != 'select':  # Chromium does not expose it there
		props.append(('required', True))
	if tag == 'select' and role == 'combobox':
		props.append(('expanded', False))
	if tag == 'summary' and node.parent_node is not None and node.parent_node.tag_name == 'details':
		props.append(('expanded', 'open' in (node.parent_node.attributes or {})))
	if role == 'listbox':
		multiple = (tag == 'select' and 'multiple' in attrs) or attrs.get('aria-multiselectable') == 'true'
		props.append(('multiselectable', multiple))
	if kind == 'range' and tag == 'input':
		for name, given, default in (('valuemin', attrs.get('min'), 0), ('valuemax', attrs.get('max'), 100)):
			props.append((name, _number(given, default)))
		live = snap.input_value if snap is not None and snap.input_value is not None else attrs.get('value')
		if live is not None:
			props.append(('valuetext', live))
	if 'aria-autocomplete' in attrs or (tag == 'input' and 'list' in attrs):
		props.append(('autocomplete', attrs.get('aria-autocomplete', 'list')))
	if attrs.get('aria-keyshortcuts'):
		props.append(('keyshortcuts', attrs['aria-keyshortcuts']))
	if tag in ('input', 'textarea', 'select') and kind != 'hidden':
		value = snap.input_value if snap is not None else None
		if value and kind != 'password':
			props.append(('value', value))
	if attrs.get('accesskey'):
		props.append(('keyshortcuts', f'Alt+{attrs["accesskey"]}'))  # Chromium's modifier on Linux
	level = _level(node)
	if level:
		props.append(('level', level))
	return EnhancedAXNode(
		ax_node_id=f'derived-{node.backend_node_id}',
		ignored=False,
		role=role,
		name=None,
		description=None,
		properties=[EnhancedAXProperty(name=name, value=value) for name, value in props] or None,  # type: ignore[arg-type]
		# a select's options (a details' summary and content) are its accessibility children:
		# browser-use's compound components need them
		child_ids=['derived'] if tag in ('select', 'details') else None,
	)


# -- the tree, in the worker ---------------------------------------------------------------------


def tree(walked: dict[str, Any], target_id: str, session_id: str | None, threshold: int | None) -> Any:
	"""browser-use's enhanced tree from the walk, as DomService builds it from the three trees."""
	from browser_use.dom.enhanced_snapshot import _SENSITIVE_AUTOCOMPLETE_PREFIXES, _SENSITIVE_INPUT_TYPES
	from browser_use.dom.views import DOMRect, EnhancedDOMTreeNode, EnhancedSnapshotNode, NodeType

	strings, rows, listened = walked['s'], walked['r'], set(walked['l'])
	node_types = {kind.value: kind for kind in NodeType}  # (an enum's call costs ~0.4 us a row)
	mixed: set[int] = set()  # indeterminate checkboxes, by row
	style_names = _styles()
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
			input_value, checked = row[at], row[at + 1] & 1 == 1
			if row[at + 1] & 2:
				mixed.add(i)
			sensitive = attributes.get('type', '').lower() in _SENSITIVE_INPUT_TYPES or attributes.get(
				'autocomplete', ''
			).lower().startswith(_SENSITIVE_AUTOCOMPLETE_PREFIXES)
			# Chromium's snapshot has no value for an empty control: nor does the attribute it becomes
			live = strings[input_value] or None if input_value >= 0 and not sensitive else None
			if laid_out:
				styles = {name: strings[index] for name, index in zip(style_names, row[9], strict=True)} if row[9] else None
				snapshot = EnhancedSnapshotNode(
					is_clickable=None,
					cursor_style=styles.get('cursor') if styles else None,
					bounds=DOMRect(row[5], row[6], row[7], row[8]),
					clientRects=DOMRect(*row[10]) if row[10] else None,
					scrollRects=DOMRect(*row[11]) if row[11] else None,
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
			node_type=node_types[kind],
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
				if parent.shadow_roots is None:
					parent.shadow_roots = []
				parent.shadow_roots.append(node)
			elif kind == 9:
				parent.content_document = node
			else:
				if parent.children_nodes is None:
					parent.children_nodes = []
				parent.children_nodes.append(node)  # (a list made anew per child: quadratic on a wide parent)
	root = built[0]
	_finish(root, threshold, mixed)
	return root


def _finish(root: Any, threshold: int | None, mixed: set[int] | frozenset[int] = frozenset()) -> None:
	"""Positions, frames and visibility, as ``DomService._construct_enhanced_node`` sets them (without
	its recursion: a deep page must not end in a RecursionError), and the derived accessibility nodes."""
	from browser_use.dom.service import DomService
	from browser_use.dom.views import DOMRect, NodeType

	# each node's frames and offset are its parent's, new ones made only where a document or a frame
	# changes them (a list and a rect per node cost ~1.5 ms of a 1,800-node build)
	stack: list[tuple[Any, list[Any], Any]] = [(root, [], DOMRect(0.0, 0.0, 0.0, 0.0))]
	while stack:
		node, frames, offset = stack.pop()
		snap = node.snapshot_node
		bounds = snap.bounds if snap is not None else None
		if bounds is not None:
			node.absolute_position = DOMRect(bounds.x + offset.x, bounds.y + offset.y, bounds.width, bounds.height)
		if node.node_type == NodeType.ELEMENT_NODE and node.node_name == 'HTML' and node.frame_id is not None:
			frames = [*frames, node]
			if snap is not None and snap.scrollRects is not None:
				offset = DOMRect(offset.x - snap.scrollRects.x, offset.y - snap.scrollRects.y, offset.width, offset.height)
		if bounds is not None and node.node_name.upper() in ('IFRAME', 'FRAME'):
			frames = [*frames, node]
			offset = DOMRect(offset.x + bounds.x, offset.y + bounds.y, offset.width, offset.height)
		for child in reversed(node.children_nodes or []):
			stack.append((child, frames, offset))
		for shadow in reversed(node.shadow_roots or []):
			stack.append((shadow, frames, offset))
		if node.content_document is not None:
			stack.append((node.content_document, frames, offset))
		node.is_visible = DomService.is_element_visible_according_to_all_parents(node, frames, threshold)
		# the serializer reads an element's accessibility node to list it, and lists only visible
		# elements, scrollers and file inputs: ~40 % of a long page's elements are neither (each
		# derived node costs ~4 us)
		if node.node_type == NodeType.ELEMENT_NODE and (node.is_visible or node.is_scrollable or node.node_name == 'INPUT'):
			node.ax_node = derived_ax(node, node.node_id in mixed)


def walk_script(threshold: int | None, most_frames: int, leave_far: bool = True) -> str:
	"""The walk as an expression to evaluate (with the command-line API), on a new memo."""
	return f'({walk_function(threshold, most_frames, leave_far)}).call({MEMO})'


def walk_function(threshold: int | None, most_frames: int, leave_far: bool = True) -> str:
	"""The walk, a function called on its memo (``MEMO``), for browser-use's viewport threshold (None:
	no band, every box and style read) and its ``max_iframes``; made once per pair (and per state of
	the ``quirks_viewport`` patch). ``leave_far=False`` keeps far content (benchmarks)."""
	from browser_use_mcp.patches import quirks_viewport

	return _walk_function(threshold, most_frames, leave_far, quirks_viewport.active)


@functools.lru_cache(maxsize=8)
def _walk_function(threshold: int | None, most_frames: int, leave_far: bool, quirks: bool) -> str:
	from browser_use.dom import service as module

	from browser_use_mcp.patches.dom_capture import CLICK_EVENTS, HEAVY_PAGE

	return (
		WALK.replace('__STYLES__', json.dumps(_styles()))
		.replace('__CLICK__', json.dumps(list(CLICK_EVENTS)))
		.replace('__HEAVY__', str(HEAVY_PAGE))
		.replace('__LISTENED__', str(module._MAX_JS_CLICK_LISTENER_ELEMENTS))
		.replace('__BAND__', 'Infinity' if threshold is None else str(int(threshold)))
		.replace('__FRAMES__', str(int(most_frames)))
		.replace('__LEAVE_FAR__', 'true' if leave_far else 'false')
		.replace('__QUIRKS__', 'true' if quirks else 'false')
	)


# the walk's answer: the holder's object id (kept in its object group) and, serialized with it, its
# fields, the text among them: one round trip (its other fields are not arrays: ``nodes`` is not sent)
HOLDER = {'serialization': 'deep', 'maxDepth': 1}
# a walk's answer from which the worker builds its state: its text is compact (strings interned), and
# a build costs ~0.3 ms per KB of it in process (``benchmarks.in_page_state --far``: checkout 18 KB,
# 5.6 ms; cheatsheet 144 KB, 47 ms): below this the loop is held ~5 ms at most, and the worker's hop
# would cost more than that
WALK_RAW_MIN = 16 * 1024
_OBJECT_ID = re.compile(rb'"objectId":"([^"\\]+)"')


@dataclasses.dataclass
class Walk:
	"""One walk of a page: the holder's object id, and its text (the whole answer undecoded when
	large: the worker reads it; else decoded)."""

	holder: str
	text: Any  # str, or offload_state.RawAnswer of the whole answer
	left: int | None  # far subtrees left out (None: in a large answer, not read here)


class _StaleMemo(Exception):
	"""The memo is gone (its document, or the inspector session that held it)."""


# how Chromium answers a call on an object that is gone: its document's context, or the session's
_GONE = ('Cannot find context with specified id', 'Could not find object with given id', 'Inspected target navigated')


async def walk(
	call: Any, threshold: int | None, most_frames: int, group: str, leave_far: bool = True, memo: str | None = None
) -> Walk:
	"""Walk the page on ``call`` (``offload_state.page_caller``), its answer kept in ``group``: on the
	memo whose object id is ``memo`` (``_StaleMemo`` when it is gone), or on a new one (the holder's
	``memo``, for ``keep_memo``)."""
	from browser_use_mcp.patches import offload_state

	if memo is None:
		method, params = (
			'Runtime.evaluate',
			{'expression': walk_script(threshold, most_frames, leave_far), 'includeCommandLineAPI': True},
		)
	else:
		method, params = (
			'Runtime.callFunctionOn',
			{'objectId': memo, 'functionDeclaration': walk_function(threshold, most_frames, leave_far)},
		)
	params.update(objectGroup=group, serializationOptions=HOLDER)
	try:
		answer = await call(method, params, raw=True, least=WALK_RAW_MIN)
	except Exception as exc:
		if memo is not None and any(gone in str(exc) for gone in _GONE):
			raise _StaleMemo(str(exc)) from exc
		raise
	if isinstance(answer, offload_state.RawAnswer):  # a large page: the text stays undecoded
		raw = answer.text.encode() if isinstance(answer.text, str) else answer.text
		# the holder's own id: the page's text is a JSON string in there, its quotes escaped
		found = _OBJECT_ID.findall(raw[-400:]) or _OBJECT_ID.findall(raw)
		if len(found) != 1:
			raise _Fallback('the walk answered without its object')
		return Walk(found[0].decode(), answer, None)
	failed = _exception(answer)
	if failed is not None:
		raise _Fallback(f'the walk failed: {failed}')
	fields = _fields(answer['result'])
	if fields.get('blocked'):
		raise _Fallback('a frame whose document the page cannot read (cross-origin)')
	if not isinstance(fields.get('text'), str):
		raise _Fallback('more frames than browser-use reads' if fields.get('frames') else 'the walk gave no text')
	return Walk(answer['result']['objectId'], fields['text'], fields.get('left'))


def walk_text(walked: Walk) -> str:
	"""A walk's text, decoded here (benchmarks and tests: the state's route leaves it to the worker)."""
	return _text_of(walked.text)


def _text_of(text: Any) -> str:
	"""The walk's text from ``Walk.text``: itself, or read out of the whole undecoded answer."""
	from browser_use_mcp.patches import offload_state

	if isinstance(text, str):
		return text
	return _fields(offload_state._answer(text)['result'])['text']


def _fields(result: dict[str, Any]) -> dict[str, Any]:
	"""The walk holder's primitive fields from its deep serialization."""
	deep = (result.get('deepSerializedValue') or {}).get('value') or []
	return {name: value.get('value') for name, value in deep if isinstance(value, dict)}


# -- the worker side -----------------------------------------------------------------------------


@dataclasses.dataclass
class WalkJob:
	"""What the worker needs to build the state of one walk (all picklable)."""

	text: Any  # the walk's text, or its whole answer undecoded (offload_state.RawAnswer)
	target_id: str
	cdp_session_id: str | None
	browser_session_id: str
	threshold: int | None


def build_walked(job: WalkJob) -> Any:
	"""browser-use's tree and serializer on a walk (in the worker, or in process for a small page):
	``offload_state.Built`` whose indices are ``OFFSET`` + the walked row."""
	from browser_use_mcp.patches import offload_state

	return offload_state.collected(_build_walked, job)


def _build_walked(job: WalkJob, garbage: list[Any]) -> Any:
	from browser_use_mcp.patches import offload_state

	started, cpu = time.perf_counter(), time.thread_time()
	walked = json.loads(_text_of(job.text))
	decoded = time.perf_counter()
	garbage.append(walked)
	root = tree(walked, job.target_id, job.cdp_session_id, job.threshold)
	built = offload_state.serialized(root, False, job.browser_session_id, garbage, (started, decoded, cpu))
	tags = walked.get('g')
	if tags is not None:  # the listed elements' tags (``_backend_ids``)
		built.tags = {index: tags[index - OFFSET] for index in built.elements}
	return built


# -- the main side -------------------------------------------------------------------------------


class _Fallback(Exception):
	"""The trees are read instead (the message says why)."""


def _exception(answer: Any) -> str | None:
	found = script_error(answer, 'an exception')
	return None if found is None else found[:200]


async def walked_state(service: Any) -> Any:
	"""``(SerializedDOMState, None, timing)`` from a walk of the focused page, or None to read the
	three trees instead."""
	try:
		return await asyncio.wait_for(_walked_state(service), WAIT)
	except _Fallback as why:
		_fell_back(str(why))
		return None
	except TimeoutError:
		_fell_back('the walk took too long')
		return None


async def build_ahead(service: Any) -> str:
	"""Walk the focused page and build its state in the worker for the read that follows (``ahead.py``):
	kept on the page's memo as a read's build is, so a read whose walk answers the same reuses it, and
	a read that comes while it is being built waits for it rather than building it again. Nothing
	else changes: no ids asked, no state made, ``last_timing`` and ``fallbacks`` left alone. Answers
	what it did: ``built``, ``unchanged`` (the memo's build is this walk's), ``small`` (a page built
	in process, cheap at the read), ``busy`` (the worker took a read's build meanwhile), ``skipped`` (its last build ahead was not used: a page that keeps
	changing), or ``none`` (no memo, REUSE off, a walk that fell back)."""
	if not (REUSE and REMEMBER):
		return 'none'
	try:
		return await asyncio.wait_for(_walked_state(service, ahead=True), WAIT)
	except (_Fallback, TimeoutError):
		return 'none'


async def _walked_state(service: Any, ahead: bool = False) -> Any:
	from browser_use.dom.views import SerializedDOMState

	from browser_use_mcp.patches import offload_state

	started = time.perf_counter()
	session = service.browser_session
	target_id = session.agent_focus_target_id
	cdp_session = await session.get_or_create_cdp_session(target_id=target_id, focus=False)
	call = offload_state.page_caller(session, cdp_session)
	group = f'{GROUP}-{next(_groups)}'
	memos = per_connection(_memos, session, lambda _client: collections.OrderedDict(), 'page memos') if REMEMBER else None
	memo = None
	if memos is not None:
		memo = memos.get(cdp_session.session_id)
		if memo is not None:
			memos.move_to_end(cdp_session.session_id)
			if ahead and memo.small:  # built in process at the read, cheaply: nothing to gain
				return 'small'
			if ahead and memo.ahead_skips > 0:  # the last ones were not used: a page that keeps changing
				memo.ahead_skips -= 1
				return 'skipped'
	kept: asyncio.Future[Memo | None] | None = None
	try:
		try:
			walked = await walk(call, service.viewport_threshold, service.max_iframes, group, memo=memo and memo.object_id)
		except _StaleMemo:  # a new document (or inspector session) since the last walk
			memo = None
			walked = await walk(call, service.viewport_threshold, service.max_iframes, group)
		if memo is None and memos is not None:  # the walk's new memo, kept for the next walk while this one is built
			kept = asyncio.ensure_future(keep_memo(call, walked.holder, memos, cdp_session.session_id))
		holder, text = walked.holder, walked.text
		read = time.perf_counter()
		job = WalkJob(text, target_id, cdp_session.session_id, session.id, service.viewport_threshold)
		key = walk_key(walked, job) if REUSE and memos is not None else None
		# a page that reads as at the last walk of its document builds the same state: that one
		built = memo.built if memo is not None and key is not None and memo.built_key == key else None
		reused = built is not None
		small = not isinstance(text, offload_state.RawAnswer)
		if ahead:
			if reused:
				return 'unchanged'
			if kept is not None:
				memo = await kept
			if memo is not None:
				memo.small = small
			if small or not await offload_state.pool.wait_ready(offload_state.START_WAIT):
				return 'small'
			if memo is None or key is None:
				return 'none'
			if offload_state.pool.in_flight:  # a read's build came first: its turn
				return 'busy'
			await memo.build_ahead(key, job, memos)
			return 'built'
		joined = False
		if memo is not None:
			pending = memo.pending
			if not reused and key is not None and pending is not None and pending.key == key:
				pending.joined = True  # being built ahead: this read waits for that build
				memo.ahead_used(True)
				built = await asyncio.shield(pending.future)
				reused = joined = True
			elif memo.ahead_key is not None:  # was the build made ahead for this read the one it needed?
				memo.ahead_used(memo.ahead_key == key)
		if not reused:
			if memo is not None:
				memo.pending = None  # a build ahead of another walk, if one is still going, is not kept
			if not small and await offload_state.pool.wait_ready(offload_state.START_WAIT):
				built = await offload_state.pool.run(job, build_walked)
			else:  # a small page: cheaper here than a hop
				built = build_walked(job)
		built_at = time.perf_counter()
		if kept is not None:
			memo = await kept
		if memo is not None:
			memo.small = small
			if key is not None and not reused:
				memo.keep_build(key, built, memos)
		real, asked = await _backend_ids(call, holder, list(built.elements), built.tags, memo)
	finally:
		if kept is not None and not kept.done():
			kept.cancel()
		release = asyncio.ensure_future(_release(call, group))
		_releasing.add(release)  # (a task nobody holds may be collected before it runs)
		release.add_done_callback(_releasing.discard)
	elements: dict[int, Any] = {}
	for stand_in, node in built.elements.items():
		_renumber(node, real[stand_in])
		elements[node.backend_node_id] = node
	frames = [node for node in elements.values() if node.node_name.upper() in ('IFRAME', 'FRAME')]
	if frames:  # the frame an iframe element owns (few, if any, are listed)
		await _owned_frames(call, frames)
	pagination = [
		{
			**button,
			'backend_node_id': real.get(button['backend_node_id'], button['backend_node_id']),
			'selector_index': real.get(button['selector_index'], button['selector_index']),
		}
		for button in built.pagination
	]
	state = SerializedDOMState(_root=None, selector_map=elements)
	offload_state.remember_pagination(state.selector_map, pagination)
	timing = {
		'walk_ms': (read - started) * 1000,
		**({'build_reused': 1.0} if reused else built.timing),
		**({'build_joined': 1.0} if joined else {}),
		'build_total_ms': (built_at - read) * 1000,
		'ids_ms': (time.perf_counter() - built_at) * 1000,
		'ids_known': len(real) - asked,  # listed elements whose ids the memo knew
		'ids_asked': asked,
		'get_serialized_dom_tree_total_ms': (time.perf_counter() - started) * 1000,
	}
	last_timing.clear()
	last_timing.update(timing)
	return state, None, timing


@dataclasses.dataclass
class _Ahead:
	"""A build made ahead, under way."""

	key: bytes  # its walk's ``walk_key``
	future: asyncio.Future[Any]  # its ``offload_state.Built``
	joined: bool = False  # a read of the same walk waits for it


@dataclasses.dataclass
class Memo:
	"""A document's memo in the page (``MEMO``), and what the server knows of its tags: the backend id
	of each element listed in the last state."""

	object_id: str
	known: dict[int, int] = dataclasses.field(default_factory=dict)  # tag -> backend node id
	built_key: bytes | None = None  # ``walk_key`` of the last walk built on this memo
	built: Any = None  # that walk's ``offload_state.Built``
	pending: _Ahead | None = None  # a build ahead under way
	ahead_key: bytes | None = None  # the key of the last build made ahead, until a read says whether it was used
	ahead_backoff: int = 0  # builds ahead skipped after the last unused one (doubling up to AHEAD_MOST_SKIPS)
	ahead_skips: int = 0  # of those, still to skip
	small: bool = False  # its last walk was small: built in process, cheaply, nothing to build ahead

	def ahead_used(self, used: bool) -> None:
		"""A read said whether the last build ahead was the one it needed."""
		self.ahead_key = None
		self.ahead_backoff = 0 if used else min(max(1, 2 * self.ahead_backoff), AHEAD_MOST_SKIPS)
		self.ahead_skips = self.ahead_backoff
		ahead_counts['used' if used else 'missed'] += 1

	def keep_build(self, key: bytes, built: Any, memos: collections.OrderedDict[str | None, Memo]) -> None:
		"""Keep ``built`` for a next walk with the same ``key``: on this memo only, of the connection's
		``memos`` (one build kept per session: browser-use keeps the last state's nodes anyway)."""
		for other in memos.values():
			if other is not self:
				other.built_key = other.built = None
		self.built_key, self.built = key, built

	async def build_ahead(self, key: bytes, job: WalkJob, memos: collections.OrderedDict[str | None, Memo]) -> None:
		"""Build ``job`` in the worker and keep it as a read's build. The build goes on when the caller
		is cancelled (a call came): a read of the same walk waits for it (``pending``)."""
		from browser_use_mcp.patches import offload_state

		future = asyncio.ensure_future(offload_state.pool.run(job, build_walked))
		pending = self.pending = _Ahead(key, future)

		def done(finished: asyncio.Future[Any]) -> None:
			if self.pending is not pending:
				return  # a read built another walk meanwhile: that one is kept
			self.pending = None
			if not finished.cancelled() and finished.exception() is None:
				ahead_counts['built'] += 1
				self.keep_build(key, finished.result(), memos)
				if not pending.joined:  # (a read that waited for it has said it was used)
					self.ahead_key = key

		future.add_done_callback(done)
		await asyncio.shield(future)


def walk_key(walked: Walk, job: WalkJob) -> bytes:
	"""A digest of everything a walk's build is made from: the walk's text (in a large answer, all
	of it but the message id and the holder's object id, which change from call to call) and the
	job's other fields. Two walks with the same key build the same state."""
	from browser_use_mcp.patches import offload_state

	digest = hashlib.blake2b(digest_size=16)
	digest.update(repr((job.target_id, job.cdp_session_id, job.browser_session_id, job.threshold)).encode())
	text = walked.text
	if isinstance(text, offload_state.RawAnswer):
		raw = text.text.encode() if isinstance(text.text, str) else text.text
		holder = walked.holder.encode()
		start = raw.find(b',') + 1  # after '{"id":<n>,'
		cut = raw.rfind(holder)
		digest.update(b'raw:')
		if cut < start:
			digest.update(raw[start:])
		else:
			digest.update(raw[start:cut])
			digest.update(raw[cut + len(holder) :])
	else:
		digest.update(b'text:')
		digest.update(text.encode())
	return digest.digest()


MEMOS = 32  # memos remembered per browser connection (one per CDP session to a page: the oldest forgotten first)
MEMO_GROUP = 'browser-use-mcp-page-memo'  # the inspector object group that keeps them (the page's lifetime)
# by the session's root CDP client: they go with its connection (a closed session keeps none)
_memos: weakref.WeakKeyDictionary[Any, collections.OrderedDict[str | None, Memo]] = weakref.WeakKeyDictionary()


async def keep_memo(call: Any, holder: str, memos: collections.OrderedDict[str | None, Memo], key: str | None) -> Memo | None:
	"""Keep the memo the walk on ``holder`` made, for the next walks of its document (None when it
	could not be kept: the next walk makes another)."""
	try:
		answer = await call(
			'Runtime.callFunctionOn',
			{'objectId': holder, 'functionDeclaration': 'function () { return this.memo; }', 'objectGroup': MEMO_GROUP},
		)
		object_id = (answer.get('result') or {}).get('objectId')
	except Exception:  # the page is gone: so is the memo
		return None
	if not isinstance(object_id, str):
		return None
	memo = memos[key] = Memo(object_id)
	memos.move_to_end(key)
	while len(memos) > MEMOS:
		memos.popitem(last=False)
	return memo


async def _backend_ids(
	call: Any, holder: str, stand_ins: list[int], tags: dict[int, int] | None = None, memo: Memo | None = None
) -> tuple[dict[int, int], int]:
	"""The backend node ids of the walked nodes ``stand_ins`` name: those of elements the memo's last
	state listed (by their ``tags``) as it learnt them, the others in one call; and how many were
	asked for. The memo then knows this state's."""
	known = memo.known if memo is not None and tags is not None else {}
	real = {index: known[tags[index]] for index in stand_ins if tags and tags.get(index) in known}
	asked = [index for index in stand_ins if index not in real]
	if asked:
		real.update(await _ask_ids(call, holder, asked))
	if memo is not None and tags is not None:
		memo.known = {tags[index]: real[index] for index in stand_ins}
	return real, len(asked)


async def _ask_ids(call: Any, holder: str, stand_ins: list[int]) -> dict[int, int]:
	"""The backend node ids of the walked nodes ``stand_ins`` name, in one call."""
	from browser_use_mcp.patches.dom_capture import DEEP_NODES

	rows = [index - OFFSET for index in stand_ins]
	answer = await call(
		'Runtime.callFunctionOn',
		{
			'objectId': holder,
			'functionDeclaration': 'function (rows) { return rows.map((i) => this.nodes[i]); }',
			'arguments': [{'value': rows}],
			'serializationOptions': DEEP_NODES,
		},
	)
	failed = _exception(answer)
	if failed is not None:
		raise _Fallback(f'the ids could not be read: {failed}')
	items = ((answer.get('result') or {}).get('deepSerializedValue') or {}).get('value') or []
	ids = [item.get('value', {}).get('backendNodeId') if isinstance(item, dict) else None for item in items]
	if len(ids) != len(rows) or not all(isinstance(i, int) for i in ids):
		raise _Fallback('a listed node came back without its backend id')
	return dict(zip(stand_ins, ids, strict=True))


def _renumber(node: Any, backend_id: int) -> None:
	node.backend_node_id = backend_id
	for child in node.children_nodes or []:  # the detached text child offload_state made
		child.backend_node_id = backend_id
		child.node_id = -backend_id


async def _owned_frames(call: Any, frames: list[Any]) -> None:
	answers = await asyncio.gather(
		*(call('DOM.describeNode', {'backendNodeId': node.backend_node_id, 'depth': 0}) for node in frames),
		return_exceptions=True,
	)
	for node, answer in zip(frames, answers, strict=True):
		found = answer.get('node', {}).get('frameId') if isinstance(answer, dict) else None
		node.frame_id = found


async def _release(call: Any, group: str) -> None:
	try:
		await call('Runtime.releaseObjectGroup', {'objectGroup': group})
	except Exception:  # the page is gone, and the group with it
		pass


def _apply() -> None:
	from browser_use_mcp.patches import offload_state

	offload_state.walked_route = walked_state


def _revert() -> None:
	from browser_use_mcp.patches import offload_state

	offload_state.walked_route = None
	fallbacks.clear()


PATCH = Patch(
	name='in_page_state',
	title='page state read in the page',
	changes='for browser_get_state and include_state (with ``offload_state``), the page is read by one walk in the page '
	"instead of Chromium's snapshot, DOM and accessibility trees, leaving out plain content far outside browser-use's "
	"band; browser-use's own serializer lists its elements (accessibility nodes derived from the DOM, no paint-order "
	"filter) and the listed ones get their backend ids (asked for only when the page's memo has not seen them listed); a walk that "
	"answers what the memo's last walk answered reuses that walk's build.",
	why='reading and decoding the three trees was as long as the whole state on real pages (stdtypes: 1.4 s + 0.7 s); '
	'a walk reading the same inputs takes a fraction of it, and the state it gives is the same text.',
	package='browser-use',
	versions=(BROWSER_USE_VERSION,),
	sources={
		'browser_use.dom.serializer.serializer:DOMTreeSerializer.serialize_accessible_elements': '9c3e2d369e26ce91',
		'browser_use.dom.views:EnhancedDOMTreeNode': '489001e674180251',
		'browser_use.dom.serializer.serializer:DOMTreeSerializer.__init__': '36ebac6c03c08cc6',
		f'{_SERVICE}.is_element_visible_according_to_all_parents': '101f3aee87154477',
		f'{_SERVICE}.get_dom_tree': 'da6b8cbcab93f199',  # what the tree built from the walk copies
		f'{_SERVICE}.detect_pagination_buttons': 'eb88258463d61e07',
	},
	replaces=(),
	switch='in_page_state',
	when_refused="the three trees are read for every state (offload_state's path): about twice as long on real pages",
	apply=_apply,
	revert=_revert,
	logger=logger.name,
	refused_message='page states read from the three trees',
)
