"""browser_get_state on real pages, and what a heavy page costs the other sessions.

``python -m benchmarks.state_corpus [--repeats N] [--isolation browser|context]`` drives a
SessionRegistry through the catalogue in process (no MCP transport), with the corpus of
``benchmarks/corpus.py`` served on 127.0.0.1 (install it with ``python -m benchmarks.corpus
--setup``), and prints two tables:

1. per corpus page: its element count, then the warm p50 of ``browser_get_state`` with the
   ``offload_state`` and ``paint_order_index`` patches on and off (off: browser-use's pipeline on
   the event loop, as before them), the two interleaved call by call in the same session
   (the machine may be shared: only same-run ratios mean much), and the answer's length;
2. loop stalls: a light session (navigate to the test site's home page, then get_state) alone and
   beside a heavy one (get_state in a loop on the corpus's biggest page), with a loop-lag probe (a
   task that sleeps 5 ms in a loop and records how late it wakes): light p50/max alone and beside
   heavy, lag p50/p99/max, for the patches on and off. The light session's windows alone, beside
   one and beside two CPU spinners at the lowest priority (the machine's own floor: what load on
   the other cores costs whatever runs there; one spinner is the fair floor for one heavy session,
   whose walk keeps one core busy) and beside the heavy session alternate (2.5 s each).

Figures only: nothing here passes or fails.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import percentile, run_in_scratch_home, spinners
from benchmarks.stalls import StallSampler


def stalled_share(lags: list[float], seconds: float, over: float = 20.0) -> float:
	"""Percent of ``seconds`` the loop spent late by more than ``over`` ms (the time of each such stall)."""
	return sum(lag for lag in lags if lag > over) / (seconds * 1000) * 100


class LagProbe:
	"""A task that sleeps ``period`` in a loop and records how late each wake-up is (ms)."""

	def __init__(self, period: float = 0.005) -> None:
		self.period = period
		self.lags: list[float] = []
		self._task: asyncio.Task[None] | None = None

	async def _run(self) -> None:
		while True:
			started = time.perf_counter()
			await asyncio.sleep(self.period)
			self.lags.append((time.perf_counter() - started - self.period) * 1000)

	def __enter__(self) -> LagProbe:
		self.lags = []
		self._task = asyncio.get_running_loop().create_task(self._run())
		return self

	def __exit__(self, *exc: object) -> None:
		if self._task:
			self._task.cancel()


def set_offload(on: bool) -> None:
	"""This work on (``offload_state``, ``paint_order_index`` and ``serializer_checks``) or off
	(browser-use's pipeline on the loop, as before)."""
	from browser_use_mcp import patches
	from browser_use_mcp.patches import offload_state, paint_order_index, serializer_checks

	for patch in (paint_order_index.PATCH, serializer_checks.PATCH, offload_state.PATCH):
		patches.revert(patch)
		patches.apply(patch, enabled=on)


def set_fast(on: bool) -> None:
	"""The patches on, with (``on``) or without the pipe route and the build without the collector."""
	from browser_use_mcp.patches import offload_state

	set_offload(True)
	offload_state.FAST = on


def set_reuse(on: bool) -> None:
	"""The patches on, with (``on``) or without a walk's build reused when the page reads as at its last
	walk (``in_page_state.REUSE``): off, every state is built, as after a change to the page."""
	from browser_use_mcp.patches import in_page_state

	set_offload(True)
	in_page_state.REUSE = on


def set_checks(on: bool) -> None:
	"""The patches on and every state built (no reuse), with (``on``) or without ``serializer_checks``,
	here and in the page-state worker (which applied the server's patches as it started)."""
	from browser_use_mcp.patches import in_page_state, offload_state, serializer_checks

	set_offload(True)
	in_page_state.REUSE = False
	serializer_checks.switch(on)
	if offload_state.pool.executor is not None:
		offload_state.pool.executor.submit(serializer_checks.switch, on).result(timeout=60)


def set_busy(on: bool) -> None:
	"""The patches on, with (``on``) or without busy renderers yielding (``busy.WATCH``; off, the
	renderers it lowered get their priority back at its next look)."""
	from browser_use_mcp import busy

	set_offload(True)
	busy.WATCH.nice = 19 if on else 0


def set_ahead(on: bool) -> None:
	from browser_use_mcp import ahead

	ahead.ENABLED = on


def set_memo(on: bool) -> None:
	"""The patches on, with (``on``) or without the page's memo (``in_page_state.REMEMBER``): every
	listed element's id asked for, as before."""
	from browser_use_mcp.patches import in_page_state

	set_offload(True)
	in_page_state.REMEMBER = on


async def timed(catalog: Any, name: str, args: dict[str, Any]) -> tuple[float, str]:
	"""(ms, text) of one call; a failed call is reported and timed, its text empty."""
	from browser_use_mcp.tools.base import Call

	started = time.perf_counter()
	try:
		text = (await catalog.call(name, args, Call())).text
	except Exception as exc:
		print(f'  {name} failed after {time.perf_counter() - started:.1f} s: {exc}', file=sys.stderr)
		text = ''
	return (time.perf_counter() - started) * 1000, text


async def page_times(catalog: Any, url: str, repeats: int, modes: list[bool]) -> dict[str, Any]:
	sid = 'corpus'
	await timed(catalog, 'browser_navigate', {'session_id': sid, 'url': url})
	count = {'session_id': sid, 'expression': "document.querySelectorAll('*').length"}
	counted, deadline = '', time.monotonic() + 15
	while time.monotonic() < deadline:  # a JS app (the search page) renders after its load: until it stops growing
		_, now = await timed(catalog, 'browser_evaluate', count)
		if now == counted:
			break
		counted = now
		await asyncio.sleep(1.0)
	out: dict[str, Any] = {'elements': counted.strip()}
	samples: dict[bool, list[float]] = {m: [] for m in modes}
	lengths: dict[bool, int] = {}
	counts: dict[bool, int] = {}
	switch = _switch()
	for mode in modes:  # warm-up: the worker's import, the page's first layout
		switch(mode)
		for _ in range(2):
			await timed(catalog, 'browser_get_state', {'session_id': sid})
	for _ in range(repeats):
		for mode in modes:
			switch(mode)
			if _compare_ahead:  # an agent's step: it changes the page, thinks, then reads the state
				await timed(catalog, 'browser_evaluate', {'session_id': sid, 'expression': CHANGE_PAGE})
				await asyncio.sleep(_think)
			ms, text = await timed(catalog, 'browser_get_state', {'session_id': sid})
			samples[mode].append(ms)
			if text:
				lengths[mode] = len(text)
				counts[mode] = len(json.loads(text)['interactive_elements'])
	for mode in modes:
		out[mode] = {'p50': statistics.median(samples[mode]), 'chars': lengths.get(mode), 'listed': counts.get(mode)}
	return out


async def peer_times(kind: str, urls: dict[str, str], repeats: int) -> dict[str, Any]:
	"""A peer's snapshot on each corpus page (over MCP, its own Chromium): warm p50 (ms) and length."""
	import re

	from benchmarks import peers

	out: dict[str, Any] = {}
	async with peers.peer(kind) as srv, srv.agents(1, 'corpus') as (agent,):
		for name, url in urls.items():
			await agent.navigate(url)
			if 'search' in name:  # Sphinx's search renders its results after load, as for ours
				await asyncio.sleep(3)
			for _ in range(2):
				await agent.snapshot()
			samples, text = [], ''
			for _ in range(repeats):
				text, seconds = await agent.snapshot()
				samples.append(seconds * 1000)
			refs = len(re.findall(r'\[ref=|uid=', text))
			out[name] = {'p50': statistics.median(samples), 'chars': len(text), 'refs': refs}
			print(kind, name, round(out[name]['p50'], 1), len(text), file=sys.stderr, flush=True)
	return out


_where = False  # --where: sample the stacks of the loop's stalls beside the heavy session (benchmarks/stalls.py)
_compare_fast = False  # --compare-fast: on/off is offload_state.FAST, the patches on in both


_compare_memo = False  # --compare-memo: on/off is in_page_state.REMEMBER, the patches on in both
_compare_reuse = False  # --compare-reuse: on/off is in_page_state.REUSE, the patches on in both
_compare_checks = False  # --compare-checks: on/off is the serializer_checks patch, every state built
_compare_busy = False  # --compare-busy: on/off is busy renderers yielding (busy.WATCH)
_compare_ahead = False  # --compare-ahead: on/off is the state built ahead (ahead.ENABLED), the page changed before each read
_think = 1.0  # --think: s between that change and the read (an agent's model step)
_heavy_changes = False  # --heavy-changes: the heavy session changes its page before each state (no build reused)


def _switch() -> Any:
	if _compare_ahead:
		return set_ahead
	if _compare_reuse:
		return set_reuse
	if _compare_checks:
		return set_checks
	if _compare_busy:
		return set_busy
	return set_fast if _compare_fast else set_memo if _compare_memo else set_offload


def _labels() -> list[str]:
	if _compare_fast:
		return ['fast on', 'fast off (as before)']
	if _compare_ahead:
		return [f'changed, read {_think:g} s later: built ahead', 'the same, not built ahead']
	if _compare_reuse:
		return ['page unchanged (build reused)', 'page changed (built)']
	if _compare_checks:
		return ['serializer checks (built)', "browser-use's checks (built)"]
	if _compare_busy:
		return ['busy renderers yield', 'all renderers equal']
	return ['memo on', 'memo off (as before)'] if _compare_memo else ['patches on', 'patches off']


# a change to the page every walk sees (an attribute of the root element), so no build is reused
CHANGE_PAGE = 'document.documentElement.dataset.benchmarkTick = String(Date.now() + Math.random())'


WINDOW = 2.5  # s: the light session's alternating windows alone and beside the heavy one


async def stalls(catalog: Any, light_url: str, heavy_url: str, seconds: float, on: bool) -> dict[str, float]:
	_switch()(on)
	if on:  # the worker is up before anything is measured
		from browser_use_mcp.patches import offload_state

		offload_state.pool.ready()
		assert await offload_state.pool.wait_ready(60), 'the page-state worker did not start'
	await timed(catalog, 'browser_navigate', {'session_id': 'heavy', 'url': heavy_url})
	await timed(catalog, 'browser_get_state', {'session_id': 'heavy'})
	await timed(catalog, 'browser_get_state', {'session_id': 'heavy'})

	async def light_loop(until: float) -> tuple[list[float], list[float]]:
		navs, states = [], []
		while time.perf_counter() < until:
			ms, _ = await timed(catalog, 'browser_navigate', {'session_id': 'light', 'url': light_url})
			navs.append(ms)
			ms, _ = await timed(catalog, 'browser_get_state', {'session_id': 'light'})
			states.append(ms)
		return navs, states

	heavy_states: list[float] = []
	stop, go, idle = asyncio.Event(), asyncio.Event(), asyncio.Event()
	idle.set()

	async def heavy_loop() -> None:
		while not stop.is_set():
			await go.wait()
			if stop.is_set():
				break
			idle.clear()
			try:
				if _heavy_changes:  # its page differs from the last walk's: the state is built, never reused
					await timed(catalog, 'browser_evaluate', {'session_id': 'heavy', 'expression': CHANGE_PAGE})
				ms, _ = await timed(catalog, 'browser_get_state', {'session_id': 'heavy'})
				heavy_states.append(ms)
			finally:
				idle.set()

	# Alone, beside the heavy session, and beside one and two CPU spinners at the lowest priority the
	# system gives (their own autogroup at niceness 19: what no scheduling of ours can do better than)
	# in alternating windows, so that a drift of the machine's speed over the run (other tenants of
	# the host) falls on all four alike rather than on one phase.
	await light_loop(time.perf_counter() + 1.0)  # warm
	heavy = asyncio.ensure_future(heavy_loop())
	phases: dict[str, tuple[list[float], list[float], list[float]]] = {
		k: ([], [], []) for k in ('alone', 'heavy', 'spin', 'spin1')
	}

	async def window(phase: str) -> None:
		with LagProbe() as probe:
			navs, states = await light_loop(time.perf_counter() + seconds / windows)
		phases[phase][0].extend(navs)
		phases[phase][1].extend(states)
		phases[phase][2].extend(probe.lags)

	windows = max(1, round(seconds / WINDOW))
	with (
		spinners(2, lowest=True, stopped=True) as spin,
		spinners(1, lowest=True, stopped=True) as spin1,
		contextlib.ExitStack() as stack,
	):
		sampler = stack.enter_context(StallSampler()) if _where else None
		for _ in range(windows):
			go.clear()
			await idle.wait()  # the heavy session's call in flight has ended
			await window('alone')
			for spinning, phase in ((spin1, 'spin1'), (spin, 'spin')):
				spinning.resume()
				await asyncio.sleep(0.2)
				await window(phase)
				spinning.pause()
			go.set()
			await asyncio.sleep(1.2)  # at work for as long as the busy watch takes to see it (two looks)
			await window('heavy')
	stop.set()
	go.set()
	if sampler is not None:
		print(f'where the loop stalled while the heavy session ran (patches {"on" if on else "off"}):', file=sys.stderr)
		print(sampler.report(), file=sys.stderr, flush=True)
	await heavy
	nav_alone, state_alone, alone_lags = phases['alone']
	nav_beside, state_beside, beside_lags = phases['heavy']
	nav_spin, state_spin, _ = phases['spin']
	nav_spin1, state_spin1, _ = phases['spin1']
	return {
		'navigate p50 alone': statistics.median(nav_alone),
		'navigate p50 beside heavy': statistics.median(nav_beside),
		'navigate max alone': max(nav_alone),
		'navigate max beside heavy': max(nav_beside),
		'get_state p50 alone': statistics.median(state_alone),
		'get_state p50 beside heavy': statistics.median(state_beside),
		'get_state max alone': max(state_alone),
		'get_state max beside heavy': max(state_beside),
		'navigate p50 beside 1 idle-priority spinner': statistics.median(nav_spin1),
		'get_state p50 beside 1 idle-priority spinner': statistics.median(state_spin1),
		'navigate p50 beside 2 idle-priority spinners': statistics.median(nav_spin),
		'get_state p50 beside 2 idle-priority spinners': statistics.median(state_spin),
		'loop lag p50 alone': percentile(alone_lags, 0.5),
		'loop lag p99 alone': percentile(alone_lags, 0.99),
		'loop lag p50 beside heavy': percentile(beside_lags, 0.5),
		'loop lag p99 beside heavy': percentile(beside_lags, 0.99),
		'loop lag max beside heavy': max(beside_lags or [0.0]),
		# p99 counts one sample per stall, however long: a 1 s stall is one sample among ~1,000. The
		# share of the phase spent in stalls over 20 ms weighs each by its length.
		'% of time in stalls > 20 ms alone': stalled_share(alone_lags, seconds),
		'% of time in stalls > 20 ms beside heavy': stalled_share(beside_lags, seconds),
		'heavy get_state p50': statistics.median(heavy_states) if heavy_states else float('nan'),
		'heavy states during the run': len(heavy_states),
	}


async def main(args: argparse.Namespace) -> None:
	from benchmarks.common import machine, table
	from benchmarks.corpus import EXTRA, PAGES, CorpusServer, available
	from browser_use_mcp.catalog import Catalog
	from browser_use_mcp.config import load_config
	from browser_use_mcp.sessions import SessionRegistry
	from harness.pages import PageServer

	global _compare_fast, _compare_memo, _compare_reuse, _compare_checks, _compare_busy, _heavy_changes, _where
	global _compare_ahead, _think
	_compare_ahead, _think = args.compare_ahead, args.think
	_compare_fast, _compare_memo, _where = args.compare_fast, args.compare_memo, args.where
	_compare_reuse, _heavy_changes = args.compare_reuse, args.heavy_changes
	_compare_checks, _compare_busy = args.compare_checks, args.compare_busy
	config = dataclasses.replace(load_config(), isolation=args.isolation)
	modes = [True] if args.only_on_pages else [True, False]
	pages = [
		p for p in (*PAGES, *EXTRA) if available(p) and (p in PAGES if not args.pages else any(s in p.name for s in args.pages))
	]
	missing = [p.name for p in PAGES if not available(p)]
	with PageServer() as site, CorpusServer() as corpus:
		site.httpd.handle_error = lambda *_: None
		registry = SessionRegistry(config)
		await registry.start()
		try:
			catalog = Catalog(registry)
			rows, raw = [], {}
			if not args.skip_pages:
				for page in pages:
					url = f'{site.url if page.synthetic else corpus.url}{page.path}'
					result = await page_times(catalog, url, args.repeats, modes)
					raw[page.name] = result
					on, off = result[True], result.get(False, {'p50': float('nan'), 'listed': None, 'chars': None})
					rows.append(
						[
							page.name,
							result['elements'],
							on['listed'],
							round(on['p50'], 1),
							round(off['p50'], 1),
							round(on['p50'] / off['p50'], 2),
							on['chars'],
							'not compared'  # --only-on: there is no other answer to hold it against
							if False not in result
							else 'same'
							if (on['listed'], on['chars']) == (off['listed'], off['chars'])
							else 'DIFFERENT',
						]
					)
					print(*rows[-1], sep=' | ', file=sys.stderr, flush=True)
				print(
					table(
						f'browser_get_state, warm p50 of {args.repeats} (ms), isolation {args.isolation}',
						['page', 'elements', 'listed', *_labels(), 'on/off', 'chars', 'answers'],
						rows,
					)
				)
			if args.peers:
				urls = {p.name: f'{site.url if p.synthetic else corpus.url}{p.path}' for p in pages}
				peer_rows = {p.name: [p.name, raw.get(p.name, {}).get(True, {}).get('p50')] for p in pages}
				for kind in args.peers:
					result = await peer_times(kind, urls, args.repeats)
					raw[f'peer {kind}'] = result
					for name, row in peer_rows.items():
						row += [round(result[name]['p50'], 1), result[name]['chars']]
				for row in peer_rows.values():
					row[1] = round(row[1], 1) if row[1] is not None else '-'
				header = ['page', 'ours get_state p50 (in process)']
				for kind in args.peers:
					header += [f'{kind} snapshot p50 (MCP)', f'{kind} chars']
				print(table(f'peers on the corpus, warm p50 of {args.repeats} (ms)', header, list(peer_rows.values())))
			if args.skip_stalls:
				return
			heavy = next(p for p in (*PAGES, *EXTRA) if available(p) and (args.heavy or 'stdtypes') in p.name)
			heavy_url = f'{site.url if heavy.synthetic else corpus.url}{heavy.path}'
			stall_rows: dict[str, list[Any]] = {}
			for on in modes if not args.only_on else [True]:
				result = await stalls(catalog, f'{site.url}/', heavy_url, args.seconds, on)
				raw[f'stalls patches {"on" if on else "off"}'] = result
				for key, value in result.items():
					stall_rows.setdefault(key, [key]).append(round(value, 1))
			print(
				table(
					f'light session beside a heavy one ({heavy.name}), {args.seconds:.0f} s each (ms)',
					['measure', *(_labels() if not args.only_on else _labels()[:1])],
					list(stall_rows.values()),
				)
			)
			if missing:
				print('pages left out (package missing):', ', '.join(missing))
			if args.json:
				Path(args.json).write_text(json.dumps({'machine': machine(), 'results': raw}, indent=1, default=str))
		finally:
			await registry.shutdown()


def parse(argv: list[str] | None = None) -> argparse.Namespace:
	parser = argparse.ArgumentParser(prog='python -m benchmarks.state_corpus', description=__doc__)
	parser.add_argument('--repeats', type=int, default=9)
	parser.add_argument('--seconds', type=float, default=8.0, help='per phase of the stall measurement')
	parser.add_argument('--isolation', default='context', choices=['browser', 'context'])
	parser.add_argument('--pages', nargs='*', help='only pages whose name contains one of these')
	parser.add_argument(
		'--heavy', help='the heavy page of the stall measurement, by name (default: python stdtypes, ~17,000 elements)'
	)
	parser.add_argument('--skip-pages', action='store_true')
	parser.add_argument('--skip-stalls', action='store_true')
	parser.add_argument(
		'--compare-fast',
		action='store_true',
		help='on/off is offload_state.FAST (the pipe route and builds without the collector), the patches on in both',
	)
	parser.add_argument(
		'--compare-memo',
		action='store_true',
		help="on/off is in_page_state.REMEMBER (the ids of elements listed before known from the page's memo), the patches on in both",
	)
	parser.add_argument(
		'--compare-reuse',
		action='store_true',
		help='on/off is in_page_state.REUSE (an unchanged page reuses its last build; off: every state built, as after a change)',
	)
	parser.add_argument(
		'--compare-checks',
		action='store_true',
		help='on/off is the serializer_checks patch (here and in the worker), every state built, the other patches on in both',
	)
	parser.add_argument(
		'--compare-busy',
		action='store_true',
		help='on/off is busy renderers yielding to the others (busy.WATCH), the patches on in both',
	)
	parser.add_argument(
		'--compare-ahead',
		action='store_true',
		help='on/off is the state built ahead while the agent thinks (ahead.py): before each read the page is changed '
		'(browser_evaluate), then --think s pass',
	)
	parser.add_argument('--think', type=float, default=1.0, help='with --compare-ahead: s between the change and the read')
	parser.add_argument(
		'--heavy-changes',
		action='store_true',
		help='the heavy session of the stall measurement changes its page before each state (every state built)',
	)
	parser.add_argument(
		'--peers', nargs='*', default=[], help="also time these peers' snapshots on the pages (playwright, chrome-devtools)"
	)
	parser.add_argument('--only-on-pages', action='store_true', help="time only the patches on (not browser-use's pipeline)")
	parser.add_argument('--only-on', action='store_true')
	parser.add_argument(
		'--where', action='store_true', help='print where the loop was when it stalled beside the heavy session (stderr)'
	)
	parser.add_argument('--json', help='write the raw figures here')
	return parser.parse_args(argv)


if __name__ == '__main__':
	run_in_scratch_home('bench-corpus-', lambda: main(parse()))
