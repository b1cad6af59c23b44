"""The ``serializer_checks`` patch answers as browser-use's own two checks do.

``_is_propagating_element`` and ``is_interactive`` are compared with the originals (taken from the
patch's saved values, or from the class when the patch is not active) on every node of real pages,
as Chromium's three trees and our walk give them, and on generated elements that reach every
branch of ``is_interactive``: tags, attributes, accessibility properties (including values that
raise), sizes, cursors and nested form controls."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from harness.pages import ACTION_PAGES


def originals() -> tuple[Callable[..., bool], Callable[..., bool]]:
	"""browser-use's own ``_is_propagating_element`` and ``is_interactive``."""
	from browser_use.dom.serializer.clickable_elements import ClickableElementDetector
	from browser_use.dom.serializer.serializer import DOMTreeSerializer

	from browser_use_mcp.patches import is_active, serializer_checks

	if not is_active('serializer_checks'):
		return DOMTreeSerializer._is_propagating_element, ClickableElementDetector.is_interactive
	saved = serializer_checks._saved
	return (
		saved.original(DOMTreeSerializer, '_is_propagating_element'),
		saved.original(ClickableElementDetector, 'is_interactive').__func__,
	)


def fast_propagating() -> Callable[..., bool]:
	from browser_use.dom.serializer.serializer import DOMTreeSerializer

	from browser_use_mcp.patches import serializer_checks

	original, _ = originals()
	return serializer_checks.propagating(DOMTreeSerializer.PROPAGATING_ELEMENTS, original)


def nodes_of(root: Any) -> Iterator[Any]:
	stack = [root]
	while stack:
		node = stack.pop()
		yield node
		stack.extend(node.children_and_shadow_roots)
		if node.content_document is not None:
			stack.append(node.content_document)


def same_answers(root: Any) -> int:
	"""Compare both checks on every node of the tree; how many elements were compared."""
	from browser_use.dom.serializer.serializer import DOMTreeSerializer
	from browser_use.dom.views import NodeType

	from browser_use_mcp.patches import serializer_checks

	propagating, interactive = originals()
	fast = fast_propagating()
	serializer = DOMTreeSerializer(root, None, paint_order_filtering=False)
	elements = 0
	for node in nodes_of(root):
		assert serializer_checks.is_interactive(node) == interactive(node), (node.tag_name, node.attributes)
		if node.node_type == NodeType.ELEMENT_NODE:
			elements += 1
			attributes = {'tag': node.tag_name.lower(), 'role': (node.attributes or {}).get('role')}
			assert fast(serializer, attributes) == propagating(serializer, attributes), attributes
	return elements


async def test_both_checks_answer_as_browser_use_on_real_pages(catalog: Any, site: str, action_pages: str) -> None:
	"""Every node of the test site's and the action pages' trees: from Chromium's three trees (real
	accessibility properties) and from the walk (derived ones)."""
	from browser_use.dom.service import DomService

	from browser_use_mcp.patches import in_page_state, offload_state
	from browser_use_mcp.tools.base import Call

	compared = 0
	paths = ['/', '/form', '/rich', '/epoch-frame', '/long', *ACTION_PAGES]
	for path in paths:
		url = f'{action_pages if path in ACTION_PAGES else site}{path}'
		await catalog.call('browser_navigate', {'session_id': 'checks', 'url': url}, Call())
		(state,) = [s for s in catalog.sessions.sessions() if s.session_id == 'checks']
		session = state.browser_session
		target = session.agent_focus_target_id
		root, _ = await DomService(browser_session=session).get_dom_tree(target_id=target)
		compared += same_answers(root)
		cdp = await session.get_or_create_cdp_session(target, focus=False)
		call = offload_state.page_caller(session, cdp)
		try:
			walked = await in_page_state.walk(call, 1000, 100, 'checks-walk')
			compared += same_answers(
				in_page_state.tree(json.loads(in_page_state.walk_text(walked)), target, cdp.session_id, 1000)
			)
		finally:
			await call('Runtime.releaseObjectGroup', {'objectGroup': 'checks-walk'})
	assert compared > 500, compared  # real pages' worth of elements were compared


TAGS = ['div', 'span', 'label', 'a', 'button', 'input', 'select', 'textarea', 'iframe', 'frame', 'html', 'body']
TAGS += ['details', 'summary', 'option', 'optgroup', 'li', 'img', 'svg', 'IFRAME', 'Span', '']
ATTRIBUTES = {
	'class': ['btn', 'Search-Box', 'x  glass\ty', 'nav item', '', 'MAGNIFY'],
	'id': ['q', 'site-search', 'Lookup', ''],
	'data-action': ['open', 'find-more', ''],
	'data-x': ['QUERY', 'plain'],
	'for': ['name', ''],
	'role': ['button', 'link', 'combobox', 'presentation', 'cell', 'listbox', 'none', ''],
	'onclick': ['go()'],
	'tabindex': ['0', '-1'],
	'aria-label': ['close', ' '],
	'onkeyup': ['k()'],
}
AX_PROPERTIES = ['disabled', 'hidden', 'focusable', 'editable', 'settable', 'checked', 'expanded', 'pressed']
AX_PROPERTIES += ['selected', 'required', 'autocomplete', 'keyshortcuts', 'level', 'invalid']
AX_ROLES = [None, 'button', 'generic', 'listbox', 'row', 'StaticText', 'searchbox']


class Raising:
	"""A property value whose truth raises ValueError (the original skips such a property)."""

	def __bool__(self) -> bool:
		raise ValueError('no truth')


def element(rng: random.Random, depth: int = 0) -> Any:
	from browser_use.dom.views import (
		DOMRect,
		EnhancedAXNode,
		EnhancedAXProperty,
		EnhancedDOMTreeNode,
		EnhancedSnapshotNode,
		NodeType,
	)

	kind = NodeType.TEXT_NODE if rng.random() < 0.1 else NodeType.ELEMENT_NODE
	attributes = {name: rng.choice(values) for name, values in ATTRIBUTES.items() if rng.random() < 0.2}
	ax = None
	if rng.random() < 0.7:
		properties = [
			EnhancedAXProperty(name=rng.choice(AX_PROPERTIES), value=rng.choice([True, False, 'plaintext', '', 0, Raising()]))
			for _ in range(rng.randrange(4))
		]
		ax = EnhancedAXNode('ax', False, rng.choice(AX_ROLES), None, None, properties or None, None)  # type: ignore[arg-type]
	snapshot = None
	if rng.random() < 0.8:
		bounds = (
			DOMRect(0, 0, rng.choice([0, 10, 30, 50, 51, 120]), rng.choice([0, 9, 10, 40, 101, 200]))
			if rng.random() < 0.8
			else None
		)
		cursor = rng.choice([None, 'pointer', 'auto', 'text'])
		snapshot = EnhancedSnapshotNode(None, cursor, bounds, None, None, None, None, None)
	node = EnhancedDOMTreeNode(
		node_id=rng.randrange(1 << 20),
		backend_node_id=1,
		node_type=kind,
		node_name=rng.choice(TAGS).upper() if kind == NodeType.ELEMENT_NODE else '#text',
		node_value='',
		attributes=attributes,
		is_scrollable=None,
		is_visible=True,
		absolute_position=None,
		target_id='t',
		frame_id=None,
		session_id=None,
		content_document=None,
		shadow_root_type=None,
		shadow_roots=None,
		parent_node=None,
		children_nodes=None,
		ax_node=ax,
		snapshot_node=snapshot,
		has_js_click_listener=rng.random() < 0.05,
		uuid='',
	)
	if depth < 3 and rng.random() < 0.5:
		node.children_nodes = [element(rng, depth + 1) for _ in range(rng.randrange(1, 3))]
	if depth < 3 and rng.random() < 0.1:
		node.shadow_roots = [element(rng, depth + 1)]
	return node


def test_both_checks_answer_as_browser_use_on_generated_elements() -> None:
	from browser_use.dom.serializer.serializer import DOMTreeSerializer

	from browser_use_mcp.patches import serializer_checks

	propagating, interactive = originals()
	fast = fast_propagating()
	serializer = DOMTreeSerializer(element(random.Random(0)), None, paint_order_filtering=False)
	rng = random.Random(24)
	answers = set()
	for _ in range(20_000):
		node = element(rng)
		try:
			expected: Any = interactive(node)
		except Exception as error:  # the same exception, if any
			with pytest.raises(type(error)):
				serializer_checks.is_interactive(node)
			continue
		assert serializer_checks.is_interactive(node) == expected, (node.tag_name, node.attributes, node.ax_node)
		answers.add(expected)
	assert answers == {True, False}
	roles = [None, '', 'button', 'combobox', 'link', 'Button']
	for tag in ['a', 'button', 'div', 'span', 'input', 'p', 'A', '']:
		for role in roles:
			attributes = {'tag': tag, 'role': role}
			assert fast(serializer, attributes) == propagating(serializer, attributes), attributes


def test_other_patterns_get_the_original_answer() -> None:
	"""Patterns with a key left out (None: anything matches) and an instance given its own list."""
	from browser_use.dom.serializer.serializer import DOMTreeSerializer

	from browser_use_mcp.patches import serializer_checks

	original, _ = originals()
	patterns = [{'tag': None, 'role': 'tab'}, {'tag': 'nav', 'role': None}, {'tag': 'li', 'role': 'menuitem'}]
	fast = serializer_checks.propagating(patterns, original)
	serializer = DOMTreeSerializer(element(random.Random(1)), None, paint_order_filtering=False)
	serializer.PROPAGATING_ELEMENTS = patterns  # type: ignore[misc]
	seen = set()
	for tag in ['nav', 'li', 'div', None]:
		for role in ['tab', 'menuitem', None, 'button']:
			attributes = {'tag': tag, 'role': role}
			answer = fast(serializer, attributes)
			assert answer == original(serializer, attributes), attributes
			seen.add(answer)
	assert seen == {True, False}
	serializer.PROPAGATING_ELEMENTS = [{'tag': 'div', 'role': None}]  # type: ignore[misc]
	assert fast(serializer, {'tag': 'div', 'role': None}) is True  # not the list the sets were made from
	assert serializer_checks.propagating([{'tag': 'a', 'role': None, 'id': 'x'}], original) is original
