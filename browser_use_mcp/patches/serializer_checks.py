"""browser-use's two per-element checks of its serializer, with their constants made once.

Why: ``DOMTreeSerializer`` asks two questions of every element of the page (browser-use 0.13.14):

- ``_is_propagating_element`` (does this element's box hide its descendants from the list?), asked
  of every node and again of every contained child, builds a list of comparisons for each of its
  eight patterns on every call: ~60,000 list comprehensions on the Bootstrap cheatsheet, about a
  third of the serializer's time there;
- ``ClickableElementDetector.is_interactive`` builds its sets of tags, roles and attributes anew on
  every call, and joins an element's class list once per search word.

``propagating(patterns)`` answers the first from sets made once from the class's
``PROPAGATING_ELEMENTS`` (an instance given other patterns gets the original method);
``is_interactive`` is the second with its constants made once and the class list joined once.
The same tests in the same order, so the same answers (``tests/test_serializer_checks.py`` checks
both against the originals on every node of real pages and on generated elements). Together they
take the serializer's time on the cheatsheet from ~17 to ~11 ms (a profile's harness, ad hoc), and
``browser_get_state`` there ~5 ms (``benchmarks.state_corpus --compare-checks``).

It applies wherever browser-use serializes, in this process and in the page-state worker
(``offload_state`` applies the same patch there).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from typing import Any

from browser_use_mcp.patches import Patch, Saved

logger = logging.getLogger(__name__)

BROWSER_USE_VERSION = '0.13.14'
_SERIALIZER = 'browser_use.dom.serializer.serializer'
_CLICKABLE = 'browser_use.dom.serializer.clickable_elements'

_saved = Saved()

# is_interactive's constants, as browser-use 0.13.14 spells them inside the function
_SEARCH_WORDS = (
	'search',
	'magnify',
	'glass',
	'lookup',
	'find',
	'query',
	'search-icon',
	'search-btn',
	'search-button',
	'searchbox',
)
_SEARCH = re.compile('|'.join(re.escape(word) for word in _SEARCH_WORDS))  # any of them within a text
_FORM_CONTROLS = frozenset({'input', 'select', 'textarea'})
_INTERACTIVE_TAGS = frozenset({'button', 'input', 'select', 'textarea', 'a', 'details', 'summary', 'option', 'optgroup'})
_HANDLER_ATTRIBUTES = ('onclick', 'onmousedown', 'onmouseup', 'onkeydown', 'onkeyup', 'tabindex')
_ROLES = frozenset(
	{
		'button',
		'link',
		'menuitem',
		'option',
		'radio',
		'checkbox',
		'tab',
		'textbox',
		'combobox',
		'slider',
		'spinbutton',
		'search',
		'searchbox',
		'row',
		'cell',
		'gridcell',
	}
)
_AX_ROLES = _ROLES | {'listbox'}
_ICON_ATTRIBUTES = ('class', 'role', 'onclick', 'data-action', 'aria-label')
_AX_TRUE_IF_SET = ('focusable', 'editable', 'settable')
_AX_STATES = ('checked', 'expanded', 'pressed', 'selected')
_AX_FORM = ('required', 'autocomplete')


def propagating(patterns: Sequence[dict[str, Any]], original: Callable[..., bool]) -> Callable[..., bool]:
	"""``_is_propagating_element`` for ``patterns`` (the class's list): a pattern's key left None
	matches anything, as in the original. An instance whose ``PROPAGATING_ELEMENTS`` is another list,
	or a pattern with other keys, gets ``original``."""
	if any(set(p) - {'tag', 'role'} for p in patterns):
		return original
	every = any(p.get('tag') is None and p.get('role') is None for p in patterns)
	tags = frozenset(p['tag'] for p in patterns if p.get('tag') is not None and p.get('role') is None)
	roles = frozenset(p['role'] for p in patterns if p.get('tag') is None and p.get('role') is not None)
	pairs = frozenset((p['tag'], p['role']) for p in patterns if p.get('tag') is not None and p.get('role') is not None)

	def _is_propagating_element(self: Any, attributes: dict[str, str | None]) -> bool:
		if self.PROPAGATING_ELEMENTS is not patterns:
			return original(self, attributes)
		tag, role = attributes.get('tag'), attributes.get('role')
		return every or tag in tags or role in roles or (tag, role) in pairs

	return _is_propagating_element


def _form_control_below(element: Any, depth: int, element_type: Any) -> bool:
	"""A form control among ``element``'s descendants (shadow roots included), ``depth`` levels down."""
	if depth <= 0:
		return False
	for child in element.children_and_shadow_roots:
		if child.node_type != element_type:
			continue
		if child.tag_name in _FORM_CONTROLS or _form_control_below(child, depth - 1, element_type):
			return True
	return False


def is_interactive(node: Any) -> bool:
	"""``ClickableElementDetector.is_interactive`` of browser-use 0.13.14, test for test in its order."""
	from browser_use.dom.views import NodeType

	element = NodeType.ELEMENT_NODE
	if node.node_type != element:
		return False
	tag = node.tag_name
	if tag in ('html', 'body'):
		return False
	if node.has_js_click_listener:
		return True
	upper = tag.upper()
	if (tag and upper == 'IFRAME') or upper == 'FRAME':  # (the original's precedence)
		snapshot = node.snapshot_node
		if snapshot and snapshot.bounds and snapshot.bounds.width > 100 and snapshot.bounds.height > 100:
			return True
	attributes = node.attributes
	if tag == 'label':
		if attributes and attributes.get('for'):
			return False
		if _form_control_below(node, 2, element):
			return True
	if tag == 'span' and _form_control_below(node, 2, element):
		return True
	if attributes:
		classes = ' '.join(attributes.get('class', '').lower().split())
		if _SEARCH.search(classes):
			return True
		if _SEARCH.search(attributes.get('id', '').lower()):
			return True
		for name, value in attributes.items():
			if name.startswith('data-') and _SEARCH.search(value.lower()):
				return True
	ax = node.ax_node
	if ax and ax.properties:
		for prop in ax.properties:
			try:
				name = prop.name
				if name == 'disabled' and prop.value:
					return False
				if name == 'hidden' and prop.value:
					return False
				if name in _AX_TRUE_IF_SET and prop.value:
					return True
				if name in _AX_STATES:
					return True
				if name in _AX_FORM and prop.value:
					return True
				if name == 'keyshortcuts' and prop.value:
					return True
			except (AttributeError, ValueError):
				continue
	if tag and tag.lower() in _INTERACTIVE_TAGS:
		return True
	if attributes:
		if any(name in attributes for name in _HANDLER_ATTRIBUTES):
			return True
		if 'role' in attributes and attributes['role'] in _ROLES:
			return True
	if ax and ax.role and ax.role in _AX_ROLES:
		return True
	snapshot = node.snapshot_node
	if (
		snapshot
		and snapshot.bounds
		and 10 <= snapshot.bounds.width <= 50
		and 10 <= snapshot.bounds.height <= 50
		and attributes
		and any(name in attributes for name in _ICON_ATTRIBUTES)
	):
		return True
	return bool(snapshot and snapshot.cursor_style and snapshot.cursor_style == 'pointer')


def switch(on: bool) -> bool:
	"""Apply (``on``) or revert the patch in this process, whatever the configuration says; for a
	benchmark comparing the two in one run (``benchmarks/state_corpus.py --compare-checks``, which
	also sends it to the page-state worker)."""
	from browser_use_mcp import patches

	patches.revert(PATCH)
	patches.apply(PATCH, enabled=on)
	return on


def _apply() -> None:
	from browser_use.dom.serializer import clickable_elements, serializer

	cls = serializer.DOMTreeSerializer
	_saved.replace(cls, '_is_propagating_element', propagating(cls.PROPAGATING_ELEMENTS, cls._is_propagating_element))
	_saved.replace(clickable_elements.ClickableElementDetector, 'is_interactive', staticmethod(is_interactive))


def _revert() -> None:
	_saved.restore()


PATCH = Patch(
	name='serializer_checks',
	title="the serializer's per-element checks with their constants made once",
	changes="browser-use's ``DOMTreeSerializer._is_propagating_element`` answers from sets made once from "
	'``PROPAGATING_ELEMENTS``, and ``ClickableElementDetector.is_interactive`` runs the same tests in the same '
	'order with its sets made once, the class list joined once and the search words found by one regular expression (same answers).',
	why="both rebuilt their constants on every call, for every element: about a third of the serializer's time "
	'on a page of ~1,800 nodes (17 → 11 ms on the Bootstrap cheatsheet).',
	package='browser-use',
	versions=(BROWSER_USE_VERSION,),
	sources={
		f'{_SERIALIZER}:DOMTreeSerializer._is_propagating_element': 'fb83206270dd0326',
		f'{_CLICKABLE}:ClickableElementDetector.is_interactive': '510a83787a41e009',
	},
	replaces=(
		f'{_SERIALIZER}:DOMTreeSerializer._is_propagating_element',
		f'{_CLICKABLE}:ClickableElementDetector.is_interactive',
	),
	switch='serializer_checks',
	when_refused="browser-use's own checks: the serializer is slower on large pages",
	apply=_apply,
	revert=_revert,
	logger=logger.name,
	refused_message="browser-use's own per-element checks kept (slower on large pages)",
)
