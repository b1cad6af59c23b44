"""Could the state do without Chromium's accessibility tree and paint order? ``python -m benchmarks.ax_substitute``.

An in-page state (``benchmarks.in_page``) could read all of browser-use's inputs in the page except
two: Chromium's accessibility tree (computing it alone takes ~190 ms on python stdtypes, before
10+ MB are sent) and the layout's paint order. This measures what leaving them out would change in
what ``browser_get_state`` lists, with browser-use's own serializer: on each corpus page (``python
-m benchmarks.corpus --setup``), the page's enhanced tree is captured as browser-use captures it,
then serialized three ways:

- as is (the reference);
- with every element's accessibility node replaced by one derived from the DOM alone, as a page
  script could: the role from an explicit ``role`` or the element's implicit one (HTML-AAM, the few
  roles browser-use's checks read), the properties browser-use reads (focusable, editable, settable,
  checked, selected, expanded, pressed, disabled, required, autocomplete, keyshortcuts, invalid,
  the value of a control) from attributes, the element's kind and its live value;
- without paint-order filtering (what a state without paint order would do).

It prints, per page, how many elements the reference lists, how many of them each variant lists
too, how many it lists that the reference does not, how many of the common ones are shown with a
different line of text, and whether the state's whole text is the same; ``--site`` adds the test
site's pages (shadow DOM, frames, listeners, hidden and disabled elements, the action tools'
widgets), ``--show N`` prints up to N differences per page with the accessibility node browser-use
saw. The derivation's rules (``derived_ax``) were written against these pages, Chromium's quirks
included (a ``<hr>`` is a settable separator, an access key is a keyboard shortcut ``Alt+<key>``, a
required text field is not invalid until edited): a page with widgets they do not cover may show
differences. Figures only: nothing here passes or fails.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator
from typing import Any

SITE_PAGES = ('/', '/form', '/rich', '/epoch', '/epoch-frame', '/long', '/popup')
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


def derived_ax(node: Any) -> Any:
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
		props.append(('checked', attrs.get('aria-checked', 'true' if live else 'false')))
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


def substitute(root: Any) -> None:
	from browser_use.dom.views import NodeType

	stack = [root]
	while stack:
		node = stack.pop()
		if node.node_type == NodeType.ELEMENT_NODE:
			node.ax_node = derived_ax(node)
		stack.extend(node.children_nodes or [])
		stack.extend(node.shadow_roots or [])
		if node.content_document is not None:
			stack.append(node.content_document)


def lines(selector_map: dict[int, Any], text: str) -> dict[int, str]:
	"""Each listed element's line in the state's text, by index."""
	out: dict[int, str] = {}
	for line in text.splitlines():
		stripped = line.strip().lstrip('*|').lstrip('|')
		if stripped.startswith('[') and ']' in stripped:
			head = stripped[1 : stripped.index(']')]
			if head.isdigit() and int(head) in selector_map:
				out[int(head)] = stripped
	return out


def _ax(node: Any) -> str:
	if node is None or node.ax_node is None:
		return 'no accessibility node'
	props = ', '.join(f'{p.name}={p.value}' for p in node.ax_node.properties or [])
	return f'role={node.ax_node.role} {props}'


def _text_diff(reference: str, other: str) -> str:
	"""'same', or how many lines of the state's whole text differ."""
	if reference == other:
		return f'same ({len(reference):,} chars)'
	import difflib

	changed = sum(1 for line in difflib.ndiff(reference.splitlines(), other.splitlines()) if line[:1] in '+-')
	return f'{changed} lines differ'


async def variants(state: Any, nodes: dict[str, dict[int, Any]], texts: dict[str, str]) -> dict[str, dict[int, str]]:
	from browser_use.dom.serializer.serializer import DOMTreeSerializer
	from browser_use.dom.service import DomService

	service = DomService(browser_session=state.browser_session)
	target = state.browser_session.agent_focus_target_id
	out = {}
	for name in ('reference', 'derived accessibility', 'no paint order'):
		root, _ = await service.get_dom_tree(target_id=target)
		if name == 'derived accessibility':
			substitute(root)
		serialized, _ = DOMTreeSerializer(
			root, None, paint_order_filtering=name != 'no paint order'
		).serialize_accessible_elements()
		text = serialized.llm_representation()
		out[name] = lines(serialized.selector_map, text)
		texts[name] = text
		nodes[name] = dict(serialized.selector_map)
		if name == 'reference':
			everything = {}
			stack = [root]
			while stack:
				node = stack.pop()
				everything[node.backend_node_id] = node
				stack.extend(node.children_nodes or [])
				stack.extend(node.shadow_roots or [])
				if node.content_document is not None:
					stack.append(node.content_document)
			nodes['all'] = everything
	return out


async def each_page(args: argparse.Namespace, session_id: str) -> AsyncIterator[tuple[str, Any, Any]]:
	"""Each page asked for (the corpus's; with --site the test site's too), served on 127.0.0.1 and opened
	in one session of a registry in process (contexts), --settle seconds later: its name, the session's
	state and the catalogue."""
	from benchmarks.corpus import PAGES, CorpusServer, available
	from browser_use_mcp.catalog import Catalog
	from browser_use_mcp.config import load_config
	from browser_use_mcp.sessions import SessionRegistry
	from browser_use_mcp.tools.base import Call
	from harness.pages import ACTION_PAGES, PageServer
	from harness.servers import html_pages

	config = dataclasses.replace(load_config(), isolation='context')
	pages = [p for p in PAGES if available(p) and (not args.pages or any(n in p.name for n in args.pages))]
	with PageServer() as site, CorpusServer() as corpus, html_pages(ACTION_PAGES) as actions:
		targets = [(p.name, f'{site.url if p.synthetic else corpus.url}{p.path}') for p in pages]
		if args.site:  # the test site's pages: shadow DOM, frames, listeners, hidden and disabled elements, widgets
			targets += [(f'test site {path}', f'{site.url}{path}') for path in SITE_PAGES]
			targets += [(f'test site {path}', f'{actions}{path}') for path in ACTION_PAGES]
		registry = SessionRegistry(config)
		await registry.start()
		try:
			catalog = Catalog(registry)
			for name, url in targets:
				await catalog.call('browser_navigate', {'session_id': session_id, 'url': url}, Call())
				await asyncio.sleep(args.settle)
				yield name, next(s for s in registry.sessions() if s.session_id == session_id), catalog
		finally:
			await registry.shutdown()


async def main(args: argparse.Namespace) -> None:
	from benchmarks.common import table

	rows, shown = [], []
	async with contextlib.aclosing(each_page(args, 'ax')) as opened:
		async for page, state, _ in opened:
			nodes: dict[str, dict[int, Any]] = {}
			texts: dict[str, str] = {}
			found = await variants(state, nodes, texts)
			reference = found['reference']
			row: list[Any] = [page, len(reference)]
			for name in ('derived accessibility', 'no paint order'):
				other = found[name]
				common = reference.keys() & other.keys()
				changed = [i for i in common if other[i] != reference[i]]
				row.append(f'{len(common)} / +{len(other.keys() - reference.keys())} / ~{len(changed)}')
				row.append(_text_diff(texts['reference'], texts[name]))
				if args.show and texts['reference'] != texts[name]:
					import difflib

					diff = difflib.unified_diff(texts['reference'].splitlines(), texts[name].splitlines(), lineterm='', n=0)
					shown.extend(f'{page}, {name}, text: {line[:200]}' for line in list(diff)[2 : 2 + 4 * args.show])
				for i in sorted(reference.keys() - other.keys())[: args.show]:
					shown.append(f'{page}, {name}: missing {reference[i][:160]}  [{_ax(nodes["reference"].get(i))}]')
				for i in sorted(other.keys() - reference.keys())[: args.show]:
					was = _ax(nodes['all'].get(i))
					shown.append(f'{page}, {name}: added   {other[i][:160]}  [{_ax(nodes[name].get(i))}; was {was}]')
				for i in changed[: args.show]:
					shown.append(
						f'{page}, {name}: was     {reference[i][:160]}\n{"":>{len(page) + len(name) + 4}}now     {other[i][:160]}'
					)
			rows.append(row)
	print(
		table(
			"What browser_get_state lists without Chromium's accessibility tree or paint order "
			'(common with the reference / added / common but shown differently)',
			[
				'page',
				'listed (reference)',
				'derived accessibility',
				'its whole text',
				'no paint order',
				'its whole text',
			],
			rows,
		)
	)
	if shown:
		print('\n'.join(shown))


def parse(argv: list[str] | None = None) -> argparse.Namespace:
	parser = argparse.ArgumentParser(prog='python -m benchmarks.ax_substitute', description=__doc__)
	parser.add_argument('--pages', nargs='*', help='corpus pages by (part of their) name; default: all')
	parser.add_argument('--settle', type=float, default=3.0, help='seconds after a navigation before reading')
	parser.add_argument('--site', action='store_true', help="also the test site's pages (harness/pages.py)")
	parser.add_argument('--show', type=int, default=0, help='print up to N differing elements per page and variant')
	return parser.parse_args(argv)


if __name__ == '__main__':
	from benchmarks.common import run_in_scratch_home

	args = parse()
	run_in_scratch_home('bench-ax-', lambda: main(args))
