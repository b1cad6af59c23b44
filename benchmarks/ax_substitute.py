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

from browser_use_mcp.patches.in_page_state import derived_ax

SITE_PAGES = ('/', '/form', '/rich', '/epoch', '/epoch-frame', '/long', '/popup')


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
