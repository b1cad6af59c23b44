"""A quirks-mode page's viewport where browser-use looks for it.

Why: browser-use 0.13.14 takes a document's viewport from its HTML element: the element's client
rect is the viewport's size, its scroll rect the viewport's scroll offset
(``DomService.is_element_visible_according_to_all_parents``). That holds in standards mode. In
quirks mode (a page without a doctype, or with an old one) CSSOM View gives the viewport's size and
scroll offset to the body element instead, and the HTML element's client rect is its own box: the
whole document. So on a quirks-mode page browser-use counts the whole document as in view, however
long it is and wherever it is scrolled. It lists every element of the page (the Bootstrap
cheatsheet of the benchmark corpus: 346 elements of ~1,800 rows), never says that content lies
below, and builds and serializes all of it.

What: in a quirks-mode document whose body is a ``<body>`` (not a ``<frameset>``), the HTML element
is given the body's client and scroll rects, which are the viewport's there: what the HTML element
has in standards mode. ``DOMSnapshot`` and a script read the same values (measured: in quirks mode
the body's rects are exactly the standards-mode HTML element's). Then browser-use's band (the
viewport +- its threshold) is the viewport's, as on any other page, and the walk leaves out far
content as it does elsewhere. Both routes to a state apply it: the walk in the page
(``in_page_state``: it reads the body's rects for the HTML element) and Chromium's three trees
(``offload_state`` and ``dom_capture``: ``fix_snapshot`` on the decoded snapshot, the documents in
quirks mode told by ``DOM.getDocument``'s ``compatibilityMode``).

Nothing is replaced in browser-use: the data it reads is corrected before it reads it. Off
(``BROWSER_USE_MCP_QUIRKS_VIEWPORT=false``), a quirks-mode page's state is browser-use's.
"""

from __future__ import annotations

import logging
from typing import Any

from browser_use_mcp.patches import Patch

logger = logging.getLogger(__name__)

BROWSER_USE_VERSION = '0.13.14'
_SERVICE = 'browser_use.dom.service:DomService'

active = False  # applied: both routes give a quirks-mode document's HTML element the body's rects


def quirks_documents(dom_tree: dict[str, Any], frames: bool = True) -> set[int]:
	"""Backend node ids of the documents ``DOM.getDocument`` (depth -1, pierced) says are in quirks
	mode: the root document and, with ``frames``, frames' content documents (found by a walk of the
	whole tree; without frames the root is all there is to look at)."""
	found: set[int] = set()
	root = dom_tree.get('root') if isinstance(dom_tree, dict) else None
	if not root:
		return found
	stack = [root]
	while stack:
		node = stack.pop()
		if node.get('nodeType') == 9 and node.get('compatibilityMode') == 'QuirksMode':
			found.add(node.get('backendNodeId'))
		if not frames:  # the root was all there is to look at
			break
		children = node.get('children')
		if children:
			stack.extend(children)
		shadows = node.get('shadowRoots')
		if shadows:
			stack.extend(shadows)
		content = node.get('contentDocument')
		if content:
			stack.append(content)
	return found


def fix_snapshot(snapshot: dict[str, Any], dom_tree: dict[str, Any]) -> int:
	"""Give the HTML element of each quirks-mode document of a decoded ``DOMSnapshot.captureSnapshot``
	answer the client and scroll rects of its body (see the module docstring). Returns how many
	documents were corrected."""
	documents = snapshot.get('documents') if isinstance(snapshot, dict) else None
	if not documents:
		return 0
	quirks = quirks_documents(dom_tree, frames=len(documents) > 1)
	if not quirks:
		return 0
	strings = snapshot.get('strings') or []
	fixed = 0
	for document in documents:
		nodes = document.get('nodes') or {}
		backend_ids = nodes.get('backendNodeId') or []
		if not backend_ids or backend_ids[0] not in quirks:
			continue
		parents, names = nodes.get('parentIndex') or [], nodes.get('nodeName') or []
		html = _child(parents, names, strings, 0, ('HTML',))
		body = _child(parents, names, strings, html, ('BODY', 'FRAMESET')) if html is not None else None
		if body is None or strings[names[body]] != 'BODY':
			continue
		layout = document.get('layout') or {}
		order = layout.get('nodeIndex') or []
		try:
			at_html, at_body = order.index(html), order.index(body)
		except ValueError:  # one of them has no layout object
			continue
		for field in ('clientRects', 'scrollRects'):
			rects = layout.get(field)
			if rects is not None and max(at_html, at_body) < len(rects):
				rects[at_html] = list(rects[at_body])
		fixed += 1
	return fixed


def _child(parents: list[int], names: list[int], strings: list[str], parent: int, wanted: tuple[str, ...]) -> int | None:
	"""The index of ``parent``'s first child (in document order) named one of ``wanted``."""
	for index in range(parent + 1, len(parents)):
		if parents[index] == parent and strings[names[index]] in wanted:
			return index
	return None


def _apply() -> None:
	global active
	active = True


def _revert() -> None:
	global active
	active = False


PATCH = Patch(
	name='quirks_viewport',
	title="a quirks-mode page's viewport",
	changes="in a quirks-mode document, the HTML element's client and scroll rects that browser-use reads as the "
	"viewport's are the body's (the viewport's in quirks mode), in the page walk and in Chromium's three trees",
	why='browser-use takes the viewport from the HTML element, which in quirks mode is the whole document: on a page '
	'without a doctype it counted every element as in view wherever the page was scrolled, listed all of them, and '
	'built and serialized the whole document for every state',
	package='browser-use',
	versions=(BROWSER_USE_VERSION,),
	sources={
		# reads the HTML frame's client rect as the viewport and its scroll rect as the scroll offset
		f'{_SERVICE}.is_element_visible_according_to_all_parents': '101f3aee87154477',
	},
	switch='quirks_viewport',
	when_refused="browser-use's reading: a quirks-mode page's whole document counts as in view",
	apply=_apply,
	revert=_revert,
	logger=logger.name,
	active_message="quirks-mode pages' viewport read from the body element, as in standards mode",
	refused_message="quirks-mode pages' viewport correction disabled: browser-use counts a quirks-mode page's whole "
	'document as in view',
)
