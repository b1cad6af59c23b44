"""Where browser_get_state's time goes: ``python -m benchmarks.state_profile [--repeats N] [--heavy] [--timeline]``.

Drives a SessionRegistry in process (no MCP transport) in both isolation modes, wraps each step
of a capture with ``time.perf_counter`` (our own steps and browser-use's), and prints the median
of each step over ``--repeats`` warm captures of the benchmark's home page (or the heavy page).
Each wrapped step is timed on its own; nested steps overlap their parents, so the column does not
add up. ``--compare-read-ahead`` instead times whole captures with and without the state's
read-ahead (its first reads beside the focus check), alternating in one session. ``--timeline``
also prints every CDP command of three warm captures (sent, answered, how many in flight): the
round trips a capture waits for one after another. Figures only: nothing here passes or fails.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import dataclasses
import functools
import pstats
import statistics
import sys
import time
from collections import defaultdict
from typing import Any

from benchmarks.common import run_in_scratch_home

_samples: dict[str, list[float]] = defaultdict(list)
_current: dict[str, float] = defaultdict(float)


def _wrap(owner: Any, name: str, label: str) -> None:
	original = owner.__dict__[name]
	inner = original.__func__ if isinstance(original, staticmethod) else original

	if asyncio.iscoroutinefunction(inner):

		@functools.wraps(inner)
		async def timed(*args: Any, **kwargs: Any) -> Any:
			started = time.perf_counter()
			try:
				return await inner(*args, **kwargs)
			finally:
				_current[label] += time.perf_counter() - started
	else:

		@functools.wraps(inner)
		def timed(*args: Any, **kwargs: Any) -> Any:
			started = time.perf_counter()
			try:
				return inner(*args, **kwargs)
			finally:
				_current[label] += time.perf_counter() - started

	setattr(owner, name, staticmethod(timed) if isinstance(original, staticmethod) else timed)


def instrument() -> None:
	"""Wrap the steps of a capture (this process only: a benchmark, not the server)."""
	from browser_use.browser.session import BrowserSession
	from browser_use.browser.views import BrowserStateSummary
	from browser_use.browser.watchdogs.dom_watchdog import DOMWatchdog
	from browser_use.dom.serializer.serializer import DOMTreeSerializer
	from browser_use.dom.service import DomService
	from bubus.models import EventResult
	from bubus.service import EventBus

	from browser_use_mcp.tools import common

	for owner, name, label in (
		(common, 'document_id', 'ours: document_id (Page.getFrameTree)'),
		(common, 'tab_titles', 'ours: tab_titles (Target.getTargets)'),
		(common, 'current_title', 'ours: current_title (Runtime.evaluate)'),
		(common, 'as_json', 'ours: JSON of the result'),
		(BrowserSession, 'get_browser_state_summary', 'bu: get_browser_state_summary (whole)'),
		(DOMWatchdog, 'on_BrowserStateRequestEvent', "bu:   the DOM watchdog's handler (whole)"),
		(BrowserSession, 'get_current_page_url', 'bu:   get_current_page_url'),
		(DOMWatchdog, '_get_pending_network_requests', 'bu:   pending network requests (Runtime.evaluate)'),
		(BrowserSession, 'get_tabs', 'bu:   get_tabs'),
		(DOMWatchdog, '_build_dom_tree_without_highlights', 'bu:   DOM build (whole)'),
		(DomService, '_get_all_trees', 'bu:     CDP: snapshot + DOM + AX tree (+ viewport)'),
		(DomService, 'get_dom_tree', 'bu:     get_dom_tree (CDP + enhanced tree)'),
		(DOMTreeSerializer, 'serialize_accessible_elements', 'bu:     serializer'),
		(BrowserSession, 'get_current_page_title', 'bu:   get_current_page_title'),
		(DOMWatchdog, '_get_page_info', 'bu:   page info (Page.getLayoutMetrics)'),
		(DomService, 'detect_pagination_buttons', 'bu:   pagination buttons'),
		(EventResult, 'update', 'bubus: EventResult.update (validates the result)'),
		(EventBus, 'process_event', 'bubus: process_event'),
		(BrowserStateSummary, '__repr__', 'bu: repr(BrowserStateSummary) (bubus logs it)'),
		(EventBus, 'execute_handler', 'bubus:   execute_handler'),
		(EventBus, '_default_log_handler', 'bubus:   log handler'),
		(EventBus, 'cleanup_event_history', 'bubus:   cleanup_event_history'),
		(EventBus, '_get_applicable_handlers', 'bubus:   applicable handlers'),
	):
		if name in owner.__dict__:
			_wrap(owner, name, label)

	serialized = DomService.get_serialized_dom_tree

	async def with_breakdown(self: Any, *args: Any, **kwargs: Any) -> Any:
		result = await serialized(self, *args, **kwargs)
		for key in ('iframe_scroll_detection_ms', 'js_listener_detection_ms', 'cdp_parallel_calls_ms'):
			_current[f'bu:       {key[:-3]} (its own timing)'] += result[2].get(key, 0.0) / 1000
		return result

	DomService.get_serialized_dom_tree = with_breakdown


async def profile(
	site: str, isolation: str, path: str, repeats: int, cprofile: bool = False, timeline: bool = False
) -> dict[str, float]:
	from browser_use_mcp.catalog import Catalog
	from browser_use_mcp.config import load_config
	from browser_use_mcp.sessions import SessionRegistry
	from browser_use_mcp.tools.base import Call

	config = dataclasses.replace(load_config(), isolation=isolation)
	registry = SessionRegistry(config)
	await registry.start()
	_samples.clear()
	try:
		catalog = Catalog(registry)
		await catalog.call('browser_navigate', {'session_id': 'prof', 'url': f'{site}{path}'}, Call())
		for _ in range(3):  # warm up
			await catalog.call('browser_get_state', {'session_id': 'prof'}, Call())
		profiler = cProfile.Profile() if cprofile else None
		if profiler:
			profiler.enable()
		for _ in range(repeats):
			_current.clear()
			started = time.perf_counter()
			await catalog.call('browser_get_state', {'session_id': 'prof'}, Call())
			_current['total: browser_get_state through the catalogue'] = time.perf_counter() - started
			for label, value in _current.items():
				_samples[label].append(value)
		if profiler:
			profiler.disable()
			pstats.Stats(profiler, stream=sys.stderr).sort_stats('tottime').print_stats(40)
		if timeline:
			await print_timeline(registry, catalog, isolation)
	finally:
		await registry.shutdown()
	return {label: round(statistics.median(values) * 1000, 2) for label, values in sorted(_samples.items())}


async def print_timeline(registry: Any, catalog: Any, isolation: str, captures: int = 3) -> None:
	"""Every CDP command of a few warm captures, in the order sent: when it was sent and answered
	(ms from the capture's start) and how many were in flight, to stderr. Commands that could be
	sent together but are sent one after another show here as a staircase."""
	from browser_use_mcp.tools.base import Call

	(state,) = [s for s in registry.sessions() if s.session_id == 'prof']
	root = state.browser_session._cdp_client_root
	original = root.send_raw
	log: list[tuple[str, float, float]] = []
	t0 = 0.0

	async def send_raw(method: str, params: Any = None, session_id: str | None = None) -> Any:
		started = time.perf_counter()
		try:
			return await original(method, params, session_id)
		finally:
			log.append((method, started - t0, time.perf_counter() - t0))

	root.send_raw = send_raw
	# the page state's large requests go straight onto our browser's pipe (offload_state), not through cdp-use
	from browser_use_mcp.cdp_pipe import PipeMux

	undecoded = PipeMux.send_undecoded

	async def send_undecoded(self: Any, message_id: int, method: str, params: Any, session_id: str) -> bytes:
		started = time.perf_counter()
		try:
			return await undecoded(self, message_id, method, params, session_id)
		finally:
			log.append((f'{method} (pipe)', started - t0, time.perf_counter() - t0))

	PipeMux.send_undecoded = send_undecoded  # type: ignore[method-assign]
	try:
		for n in range(captures):
			log.clear()
			t0 = time.perf_counter()
			await catalog.call('browser_get_state', {'session_id': 'prof'}, Call())
			total = time.perf_counter() - t0
			print(f'\n{isolation}: capture {n + 1}, {total * 1000:.2f} ms, {len(log)} CDP commands', file=sys.stderr)
			for method, sent, answered in sorted(log, key=lambda e: e[1]):
				in_flight = sum(1 for _, s2, a2 in log if s2 <= sent < a2)
				print(f'  {sent * 1000:7.2f} -> {answered * 1000:7.2f}  ({in_flight} in flight)  {method}', file=sys.stderr)
	finally:
		del root.send_raw
		PipeMux.send_undecoded = undecoded  # type: ignore[method-assign]


async def compare_read_ahead(site: str, isolation: str, path: str, repeats: int) -> list[list[Any]]:
	"""``repeats`` warm captures with browser_get_state's read-ahead and as many without it,
	alternating in one session: rows of p25 / p50 / p75 ms."""
	from browser_use_mcp.catalog import Catalog
	from browser_use_mcp.config import load_config
	from browser_use_mcp.sessions import SessionRegistry
	from browser_use_mcp.tools.base import Call

	registry = SessionRegistry(dataclasses.replace(load_config(), isolation=isolation))
	await registry.start()
	try:
		with_it, without = Catalog(registry), Catalog(registry)
		without._tools['browser_get_state'] = dataclasses.replace(without._tools['browser_get_state'], read_ahead=None)
		await with_it.call('browser_navigate', {'session_id': 'prof', 'url': f'{site}{path}'}, Call())
		for _ in range(5):
			await with_it.call('browser_get_state', {'session_id': 'prof'}, Call())
		samples: dict[str, list[float]] = {'read ahead (shipped)': [], 'without it': []}
		for n in range(2 * repeats):
			catalog, label = (with_it, 'read ahead (shipped)') if n % 2 else (without, 'without it')
			started = time.perf_counter()
			await catalog.call('browser_get_state', {'session_id': 'prof'}, Call())
			samples[label].append((time.perf_counter() - started) * 1000)
	finally:
		await registry.shutdown()
	rows = []
	for label, values in samples.items():
		q = statistics.quantiles(values, n=4)
		rows.append([f'{isolation}: {label}', round(q[0], 2), round(statistics.median(values), 2), round(q[2], 2)])
	return rows


async def main(args: argparse.Namespace) -> None:
	from benchmarks.common import table
	from harness.pages import PageServer

	instrument()
	path = '/heavy' if args.heavy else '/'
	results: dict[str, dict[str, float]] = {}
	if args.compare_read_ahead:
		with PageServer() as site:
			site.httpd.handle_error = lambda *_: None
			rows = [row for i in args.isolation for row in await compare_read_ahead(site.url, i, path, args.repeats)]
		title = f'browser_get_state in process with and without its read-ahead, alternating, {args.repeats} each, {path}'
		print(table(title, ['', 'p25 (ms)', 'p50 (ms)', 'p75 (ms)'], rows))
		return
	with PageServer() as site:
		site.httpd.handle_error = lambda *_: None
		for isolation in args.isolation:
			results[isolation] = await profile(site.url, isolation, path, args.repeats, args.cprofile, args.timeline)
	labels = sorted({label for r in results.values() for label in r}, key=lambda s: (not s.startswith('total'), s))
	rows = [[label, *(results[i].get(label, '') for i in args.isolation)] for label in labels]
	print(table(f'get_state steps, median ms over {args.repeats} warm captures of {path}', ['step', *args.isolation], rows))


def parse(argv: list[str] | None = None) -> argparse.Namespace:
	parser = argparse.ArgumentParser(prog='python -m benchmarks.state_profile', description=__doc__)
	parser.add_argument('--repeats', type=int, default=30)
	parser.add_argument('--heavy', action='store_true', help='profile the heavy page instead of the home page')
	parser.add_argument('--cprofile', action='store_true', help='also print cProfile (by own time) to stderr')
	parser.add_argument('--isolation', type=lambda v: v.split(','), default=['browser', 'context'])
	parser.add_argument('--timeline', action='store_true', help='also print each CDP command of three warm captures to stderr')
	parser.add_argument(
		'--compare-read-ahead',
		action='store_true',
		help="instead: whole captures with and without browser_get_state's read-ahead (tools.common.read_ahead), alternating",
	)
	return parser.parse_args(argv)


if __name__ == '__main__':
	run_in_scratch_home('bench-state-', lambda: main(parse()))
