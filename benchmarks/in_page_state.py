"""The page state read in the page beside the three trees: ``python -m benchmarks.in_page_state``.

``browser_get_state`` reads the page in one walk (``browser_use_mcp.patches.in_page_state``) unless
that is switched off, when it reads Chromium's snapshot, DOM and accessibility trees
(``offload_state``'s path). On each page (the corpus of ``python -m benchmarks.corpus --setup``, and
with ``--site`` the test site's pages), one session of a registry in process calls
``browser_get_state`` through the catalogue both ways in turn, ``--repeats`` times each, and prints:
the warm p50 of each route; the walked route's steps (walk in the page, decode, tree, serializer,
the listed nodes' backend ids); whether the two answers' element lists are the same, element for
element (index, tag, text, attributes, form state); and whether the walk fell back to the trees.
``--show N`` prints up to N differing elements per page. ``--far`` instead walks each page with far
content left out (as shipped) and kept, at the top and scrolled 3,000 px: the rows and text each
sends, each text's build in process, and whether browser-use's whole text (``llm_representation``)
is the same. Figures only: nothing here passes or fails (``tests/test_in_page_state.py`` does).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import time
from typing import Any

from benchmarks.ax_substitute import each_page

WALKED, TREES = 'walk', 'three trees'
STEPS = ('walk_ms', 'decode_ms', 'tree_ms', 'serialize_ms', 'ids_ms')


async def states(catalog: Any, session_id: str, walked: bool) -> tuple[float, list[Any], dict[str, float]]:
	"""One ``browser_get_state`` by one route: ms, its elements, the walk's steps."""
	from browser_use_mcp.patches import in_page_state, offload_state
	from browser_use_mcp.tools.base import Call

	route = offload_state.walked_route
	offload_state.walked_route = route if walked else None
	in_page_state.last_timing.clear()
	try:
		started = time.perf_counter()
		reply = await catalog.call('browser_get_state', {'session_id': session_id}, Call())
		took = (time.perf_counter() - started) * 1000
	finally:
		offload_state.walked_route = route
	return took, json.loads(reply.text)['interactive_elements'], dict(in_page_state.last_timing)


async def main(args: argparse.Namespace) -> None:
	from benchmarks.common import table
	from browser_use_mcp.patches import in_page_state, offload_state

	in_page_state.REUSE = False  # every walk built, as after a change to the page: the build is what is compared
	rows, shown = [], []
	async with contextlib.aclosing(each_page(args, 'walk')) as opened:
		async for name, _state, catalog in opened:
			if offload_state.walked_route is None:
				raise SystemExit('the in-page route is off (BROWSER_USE_MCP_IN_PAGE_STATE) or refused: nothing to compare')
			took: dict[str, list[float]] = {WALKED: [], TREES: []}
			steps: dict[str, list[float]] = {}
			answers: dict[str, list[Any]] = {}
			in_page_state.fallbacks.clear()
			for _ in range(args.repeats):
				for route in (TREES, WALKED):
					ms, elements, timing = await states(catalog, 'walk', route == WALKED)
					took[route].append(ms)
					answers[route] = elements
					for step in STEPS:
						if step in timing:
							steps.setdefault(step, []).append(timing[step])
			ours, theirs = answers[WALKED], answers[TREES]
			keyed = {json.dumps(e, sort_keys=True) for e in ours}, {json.dumps(e, sort_keys=True) for e in theirs}
			same = 'same' if ours == theirs else f'{len(keyed[0] ^ keyed[1])} differ'
			if ours != theirs and args.show:
				shown += [f'{name}: trees only {e[:200]}' for e in sorted(keyed[1] - keyed[0])[: args.show]]
				shown += [f'{name}: walk only  {e[:200]}' for e in sorted(keyed[0] - keyed[1])[: args.show]]
			p50 = {route: statistics.median(values) for route, values in took.items()}
			rows.append(
				[
					name,
					len(theirs),
					same,
					f'{p50[TREES]:.0f}',
					f'{p50[WALKED]:.0f}',
					f'{p50[WALKED] / p50[TREES]:.2f}',
					' / '.join(f'{statistics.median(steps[s]):.0f}' if s in steps else '-' for s in STEPS),
					', '.join(f'{why} ×{n}' for why, n in in_page_state.fallbacks.items()) or '-',
				]
			)
	print(
		table(
			f'browser_get_state by the walk and by the three trees, warm p50 of {args.repeats}, ms (in process)',
			['page', 'elements', 'walk vs trees', TREES, WALKED, '÷', 'walk / decode / tree / serializer / ids', 'fell back'],
			rows,
		)
	)
	if shown:
		print('\n'.join(shown))


async def walked_llm_text(state: Any, leave_far: bool = True) -> tuple[str, Any]:
	"""browser-use's whole text of the session's page (``llm_representation``, indices the real backend
	ids) from one walk, and that walk (``in_page_state.Walk``). Also the tests' reference."""
	import re

	from browser_use.dom.serializer.serializer import DOMTreeSerializer

	from browser_use_mcp.patches import in_page_state, offload_state

	target = state.browser_session.agent_focus_target_id
	cdp = await state.browser_session.get_or_create_cdp_session(target, focus=False)
	call = offload_state.page_caller(state.browser_session, cdp)
	group = f'bench-walk-{leave_far}'
	try:
		walked = await in_page_state.walk(call, 1000, 100, group, leave_far)
		root = in_page_state.tree(json.loads(in_page_state.walk_text(walked)), target, cdp.session_id, 1000)
		serialized, _ = DOMTreeSerializer(root, None, paint_order_filtering=False).serialize_accessible_elements()
		real, _ = await in_page_state._backend_ids(call, walked.holder, list(serialized.selector_map))
	finally:
		await call('Runtime.releaseObjectGroup', {'objectGroup': group})
	shown = re.sub(r'\[(\d{10})\]', lambda m: f'[{real.get(int(m.group(1)), m.group(1))}]', serialized.llm_representation())
	return shown, walked


async def llm_text(state: Any, leave_far: bool) -> tuple[str, int, int, float]:
	"""browser-use's whole text of the page from one walk (``walked_llm_text``), that walk's rows and
	text size (bytes), and its build in process (ms, median of 3)."""
	from browser_use_mcp.patches import in_page_state

	shown, walked = await walked_llm_text(state, leave_far)
	text = in_page_state.walk_text(walked)
	target = state.browser_session.agent_focus_target_id
	cdp = await state.browser_session.get_or_create_cdp_session(target, focus=False)
	job = in_page_state.WalkJob(text, target, cdp.session_id, state.browser_session.id, 1000)
	builds = []
	for _ in range(3):
		started = time.perf_counter()
		in_page_state.build_walked(job)
		builds.append((time.perf_counter() - started) * 1000)
	return shown, len(json.loads(text)['r']), len(text.encode()), statistics.median(builds)


async def far(args: argparse.Namespace) -> None:
	"""``--far``: the walk with far content left out (as shipped) and with it kept, at the top of each
	page and scrolled: rows, text, build in process, and whether browser-use's whole text is the same."""
	from benchmarks.common import table
	from browser_use_mcp.tools.base import Call

	rows = []
	async with contextlib.aclosing(each_page(args, 'walk')) as opened:
		async for name, state, catalog in opened:
			for scrolled in (0, 3000):
				expression = f'window.scrollTo(0, {scrolled}); window.scrollY'
				await catalog.call('browser_evaluate', {'session_id': 'walk', 'expression': expression}, Call())
				kept, kept_rows, kept_bytes, kept_ms = await llm_text(state, False)
				left, left_rows, left_bytes, left_ms = await llm_text(state, True)
				rows.append(
					[
						name,
						scrolled,
						kept_rows,
						left_rows,
						f'{kept_bytes / 1024:.0f} / {left_bytes / 1024:.0f}',
						f'{kept_ms:.1f} / {left_ms:.1f}',
						'same' if kept == left else 'DIFFERENT',
					]
				)
	print(
		table(
			"far content kept / left out of the walk (browser-use's whole text compared)",
			['page', 'scrolled (px)', 'rows kept', 'rows left out', 'text KB', 'build in process, ms', 'llm text'],
			rows,
		)
	)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
	parser = argparse.ArgumentParser(prog='python -m benchmarks.in_page_state', description=__doc__)
	parser.add_argument('--pages', nargs='*', help='corpus pages by (part of their) name; default: all')
	parser.add_argument('--site', action='store_true', help="also the test site's pages (harness/pages.py)")
	parser.add_argument('--repeats', type=int, default=5)
	parser.add_argument('--settle', type=float, default=3.0)
	parser.add_argument('--show', type=int, default=0, help='print up to N differing elements per page')
	parser.add_argument(
		'--far',
		action='store_true',
		help="instead: the walk with far content left out and kept, rows, text, build and browser-use's whole text",
	)
	return parser.parse_args(argv)


if __name__ == '__main__':
	from benchmarks.common import run_in_scratch_home

	arguments = parse()
	run_in_scratch_home('bench-in-page-', lambda: (far if arguments.far else main)(arguments))
