"""Benchmarks: ``.venv/bin/python -m benchmarks.run [--quick] [--only a,b,...] [--max-sessions-probe N]``.

Sections (all through real MCP clients over stdio, real headless Chromium, pages on 127.0.0.1):

  a  cross-session blocking: B's navigation alone, and while A loads a slow page (with and
     without per-bus locks)
  b  N = 1, 2, 4, 8 agents running navigate, get_state, click link, get_state, go_back: one of
     our servers vs N upstream servers side by side; wall time and PSS
  c  session acquire latency: cold, with --prewarm, and upstream's spawn-to-first-navigate
  d  warm per-tool latency vs upstream (navigate, get_state, click, screenshot), our
     routing overhead per call (in process), and a no-browser call's round trip over our
     stdio pipe transport vs the SDK's
  e  the most concurrent sessions one server holds without error (slow; capped)
  f  memory of one session's Chromium tree with and without our process-saving launch flags
     (in a separate process driving the registry directly, not over MCP)
  g  server spawn to initialize and to tools/list, ours vs upstream, on an idle machine and with
     both cores kept busy
  h  isolation modes: N agents' workflow with a Chromium per session vs contexts of shared
     Chromiums (and the peers' context modes when benchmarks/peers is installed), session
     create latency and warm per-tool latency in each mode
  i  Selenium Grid: sessions on a local Grid 4 standalone vs local sessions (both isolation
     modes): create latency, warm per-tool latency, N = 4 agents' workflow, memory here and
     on the Grid (skipped with the reason when scripts/grid.sh cannot set a Grid up)
  j  browser_get_state on the static page and on a heavy one (~5,000 elements): ours, ours with
     the get_state patches off (result_adapters, dom_capture, direct_state), upstream, and the peers' snapshots
     when benchmarks/peers is installed; p50 and the size of the text returned

Prints markdown tables and writes every raw number to benchmarks/results/<time>.json.
Timings here are measurements, never pass/fail: run on a quiet machine for figures to quote.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

from benchmarks.common import (
	Memory,
	Server,
	machine,
	mb,
	median_ms,
	memory_of,
	ratio,
	server,
	servers,
	spawn_timing,
	spinners,
	table,
)

RESULTS = Path(__file__).resolve().parent / 'results'
SECTIONS = 'abcdefghij'


def find_index(state_text: str, text: str) -> int:
	state = json.loads(state_text)
	return next(e['index'] for e in state['interactive_elements'] if e.get('text') == text)


# -- (a) cross-session blocking ------------------------------------------------------------------


async def bench_blocking(site: str, quick: bool) -> dict[str, Any]:
	slow_s = 3 if quick else 4
	repeats = 3 if quick else 5
	out: dict[str, Any] = {'slow_page_seconds': slow_s, 'modes': {}}
	for mode, env in (
		('per-bus locks (default)', {}),
		('global lock (patch off)', {'BROWSER_USE_MCP_PARALLEL_EVENT_BUSES': 'false'}),
	):
		async with server('ours', env_extra=env) as srv:
			await srv.ok('browser_navigate', session_id='A', url=f'{site}/')
			await srv.ok('browser_navigate', session_id='B', url=f'{site}/')
			alone = []
			for i in range(repeats):
				alone.append((await srv.ok('browser_navigate', session_id='B', url=f'{site}/{"two" if i % 2 else ""}'))[1])
			during = []
			for i in range(repeats):
				slow = asyncio.create_task(srv.ok('browser_navigate', session_id='A', url=f'{site}/slow?s={slow_s}'))
				await asyncio.sleep(0.3)
				during.append((await srv.ok('browser_navigate', session_id='B', url=f'{site}/{"two" if i % 2 else ""}'))[1])
				state_b = json.loads((await srv.ok('browser_get_state', session_id='B'))[0])
				await slow
				state_a = json.loads((await srv.ok('browser_get_state', session_id='A'))[0])
				assert state_a['title'] == 'Slow' and state_b['title'] in ('Home Page', 'Page Two'), (state_a, state_b)
			out['modes'][mode] = {
				'alone_ms': [round(t * 1000, 1) for t in alone],
				'during_ms': [round(t * 1000, 1) for t in during],
				'alone_p50_ms': median_ms(alone),
				'during_p50_ms': median_ms(during),
				'ratio': ratio(statistics.median(during), statistics.median(alone)),
			}
	return out


def show_blocking(r: dict[str, Any]) -> str:
	rows = [[m, v['alone_p50_ms'], v['during_p50_ms'], v['ratio']] for m, v in r['modes'].items()]
	return table(
		f"(a) Cross-session blocking: B's navigation while A loads a {r['slow_page_seconds']} s page",
		['mode', 'B alone p50 (ms)', 'B during A p50 (ms)', 'ratio'],
		rows,
	)


# -- (b) N agents, 5-step workflow ---------------------------------------------------------------


async def workflow(srv: Server, site: str, sid: str | None) -> list[float]:
	"""navigate, get_state, click the link, get_state, go_back; each step's latency."""
	kw = {'session_id': sid} if sid else {}
	steps = []
	_, t = await srv.ok('browser_navigate', url=f'{site}/', **kw)
	steps.append(t)
	text, t = await srv.ok('browser_get_state', **kw)
	steps.append(t)
	_, t = await srv.ok('browser_click', index=find_index(text, 'Go to two'), **kw)
	steps.append(t)
	text, t = await srv.ok('browser_get_state', **kw)
	steps.append(t)
	assert json.loads(text)['url'] == f'{site}/two', text[:200]  # upstream's title lags; its URL does not
	_, t = await srv.ok('browser_go_back', **kw)
	steps.append(t)
	return steps


async def bench_agents(site: str, quick: bool, counts: list[int]) -> dict[str, Any]:
	out: dict[str, Any] = {'runs': []}
	for n in counts:
		async with server('ours') as srv:
			started = time.perf_counter()
			steps = await asyncio.gather(*(workflow(srv, site, f'agent-{i}') for i in range(n)))
			wall = time.perf_counter() - started
			ours_mem = memory_of(srv.tree())
			ours_server = memory_of(srv.tree()[:1])
		async with servers(n, 'upstream') as upstream:
			started = time.perf_counter()
			up_steps = await asyncio.gather(*(workflow(s, site, None) for s in upstream))
			up_wall = time.perf_counter() - started
			up_mem = Memory()
			for s in upstream:
				up_mem += memory_of(s.tree())
		out['runs'].append(
			{
				'n': n,
				'ours': {
					'wall_s': round(wall, 2),
					**ours_mem.mb(),
					'server_python_pss_mb': mb(ours_server.pss),
					'steps_ms': _ms(steps),
				},
				'upstream': {'wall_s': round(up_wall, 2), **up_mem.mb(), 'steps_ms': _ms(up_steps)},
				'wall_ratio': ratio(wall, up_wall),
				'pss_ratio': ratio(ours_mem.pss, up_mem.pss),
			}
		)
	return out


def _ms(steps: list[list[float]]) -> list[list[float]]:
	return [[round(t * 1000, 1) for t in agent] for agent in steps]


def show_agents(r: dict[str, Any]) -> str:
	rows = []
	for run in r['runs']:
		n, o, u = run['n'], run['ours'], run['upstream']
		rows.append(
			[
				n,
				o['wall_s'],
				u['wall_s'],
				run['wall_ratio'],
				o['pss_mb'],
				u['pss_mb'],
				run['pss_ratio'],
				round(o['pss_mb'] / n, 1),
				round(u['pss_mb'] / n, 1),
			]
		)
	return table(
		'(b) N agents x 5-step workflow (navigate, get_state, click link, get_state, go_back): one server vs N upstream servers',
		[
			'N',
			'ours wall (s)',
			'upstream wall (s)',
			'wall ratio',
			'ours PSS (MB)',
			'upstream PSS (MB)',
			'PSS ratio',
			'ours PSS/agent',
			'upstream PSS/agent',
		],
		rows,
	)


# -- (c) acquire latency -------------------------------------------------------------------------


async def bench_acquire(site: str, quick: bool) -> dict[str, Any]:
	repeats = 3 if quick else 7
	out: dict[str, Any] = {}
	for label, args in (('cold', ()), ('prewarm 2', ('--prewarm', '2'))):
		create, first_nav = [], []
		async with server('ours', *args) as srv:
			for _ in range(repeats):
				if args:
					await wait_for_roots(srv, 2)
				else:
					await asyncio.sleep(1.0)  # let the previous session's teardown finish
				started = time.perf_counter()
				text, _ = await srv.ok('browser_create_session')
				create.append(time.perf_counter() - started)
				sid = json.loads(text)['session_id']
				await srv.ok('browser_navigate', session_id=sid, url=f'{site}/')
				first_nav.append(time.perf_counter() - started)
				await srv.ok('browser_close_session', session_id=sid)
		out[label] = {
			'create_ms': [round(t * 1000, 1) for t in create],
			'create_p50_ms': median_ms(create),
			'create_to_first_navigate_p50_ms': median_ms(first_nav),
		}
	for kind in ('upstream', 'ours'):
		spawn = []
		for _ in range(2 if quick else 3):
			started = time.perf_counter()
			async with server(kind) as srv:
				await srv.ok('browser_navigate', url=f'{site}/')
				spawn.append(time.perf_counter() - started)
		out[f'{kind} spawn to first navigate'] = {'p50_ms': median_ms(spawn), 'ms': [round(t * 1000) for t in spawn]}
	return out


async def wait_for_roots(srv: Server, count: int, timeout: float = 120) -> None:
	deadline = time.monotonic() + timeout
	while srv.browser_roots() < count:
		if time.monotonic() > deadline:
			raise RuntimeError(f'the pool never held {count} browsers')
		await asyncio.sleep(0.2)
	await asyncio.sleep(0.5)  # let the last launch's start-up work finish


def show_acquire(r: dict[str, Any]) -> str:
	rows = [
		['ours, cold', r['cold']['create_p50_ms'], r['cold']['create_to_first_navigate_p50_ms']],
		['ours, --prewarm 2', r['prewarm 2']['create_p50_ms'], r['prewarm 2']['create_to_first_navigate_p50_ms']],
		['ours, server spawn to first navigate', '', r['ours spawn to first navigate']['p50_ms']],
		['upstream, server spawn to first navigate', '', r['upstream spawn to first navigate']['p50_ms']],
	]
	return table(
		'(c) Session acquire latency', ['case', 'browser_create_session p50 (ms)', 'to first navigate done p50 (ms)'], rows
	)


# -- (d) warm per-tool latency -------------------------------------------------------------------


async def tool_latencies(srv: Server, site: str, repeats: int) -> dict[str, list[float]]:
	kw = {'session_id': 'warm'} if srv.kind == 'ours' else {}
	await srv.ok('browser_navigate', url=f'{site}/', **kw)
	text, _ = await srv.ok('browser_get_state', **kw)
	button = find_index(text, 'Press me')
	await srv.ok('browser_click', index=button, **kw)
	await srv.ok('browser_screenshot', **kw)
	times: dict[str, list[float]] = {'navigate': [], 'get_state': [], 'click': [], 'screenshot': []}
	for i in range(repeats):
		times['navigate'].append((await srv.ok('browser_navigate', url=f'{site}/{"two" if i % 2 else ""}', **kw))[1])
	await srv.ok('browser_navigate', url=f'{site}/', **kw)
	text, _ = await srv.ok('browser_get_state', **kw)
	button = find_index(text, 'Press me')
	for _ in range(repeats):
		times['get_state'].append((await srv.ok('browser_get_state', **kw))[1])
	for _ in range(repeats):
		times['click'].append((await srv.ok('browser_click', index=button, **kw))[1])
	for _ in range(repeats):
		times['screenshot'].append((await srv.ok('browser_screenshot', **kw))[1])
	return times


async def routing_overhead(repeats: int = 2000) -> dict[str, float]:
	"""What the registry adds to a call (argument check, id check, lookup, session lock, task),
	measured in process around a no-op handler, over a provider with no browser."""
	import shutil
	import tempfile

	from browser_use_mcp.config import ServerConfig
	from browser_use_mcp.sessions import SessionRegistry, SessionState
	from browser_use_mcp.tools.base import Call, NoArgs, tool
	from harness.fakes.provider import FakeRuntime

	@tool('No-op', read_only=True, open_world=False)
	async def noop(state: SessionState, args: NoArgs, call: Call) -> str:
		"""Does nothing."""
		return 'ok'

	tmp = Path(tempfile.mkdtemp(prefix='bench-routing-'))
	config = ServerConfig(state_dir=tmp / 'state', watchdog='off')
	registry = SessionRegistry(config, runtime=FakeRuntime(config))
	await registry.start()
	state, _ = await registry.run('local', 's', lambda st: noop.handler(st, NoArgs(), Call()))
	call = Call()
	direct, routed = [], []
	for _ in range(repeats):
		started = time.perf_counter()
		await noop.handler(state, NoArgs(), call)
		direct.append(time.perf_counter() - started)
		started = time.perf_counter()
		parsed = noop.parse({})
		await registry.run('local', 's', lambda st, parsed=parsed: noop.handler(st, parsed, call))
		routed.append(time.perf_counter() - started)
	await registry.shutdown()
	shutil.rmtree(tmp, ignore_errors=True)
	return {
		'direct_p50_us': round(statistics.median(direct) * 1e6, 1),
		'routed_p50_us': round(statistics.median(routed) * 1e6, 1),
	}


async def bench_tools(site: str, quick: bool) -> dict[str, Any]:
	repeats = 5 if quick else 15
	async with server('ours') as srv:
		ours = await tool_latencies(srv, site, repeats)
	async with server('upstream') as srv:
		upstream = await tool_latencies(srv, site, repeats)
	out: dict[str, Any] = {'tools': {}}
	for tool in ours:
		out['tools'][tool] = {
			'ours_p50_ms': median_ms(ours[tool]),
			'upstream_p50_ms': median_ms(upstream[tool]),
			'ratio': ratio(statistics.median(ours[tool]), statistics.median(upstream[tool])),
			'ours_ms': [round(t * 1000, 1) for t in ours[tool]],
			'upstream_ms': [round(t * 1000, 1) for t in upstream[tool]],
		}
	out['routing'] = await routing_overhead()
	out['stdio'] = await stdio_round_trips(100 if quick else 400)
	return out


async def stdio_round_trips(calls: int, rounds: int = 3) -> dict[str, list[float]]:
	"""p50 of a call that needs no browser (browser_list_sessions) over stdio, our server with its
	pipe transport (BROWSER_USE_MCP_STDIO_PIPES=true, the default) and with the SDK's, alternating."""
	out: dict[str, list[float]] = {'pipes': [], 'sdk': []}
	for _ in range(rounds):
		for label, flag in (('pipes', 'true'), ('sdk', 'false')):
			async with server('ours', env_extra={'BROWSER_USE_MCP_STDIO_PIPES': flag}) as srv:
				for _ in range(20):  # warm up
					await srv.ok('browser_list_sessions')
				trips = [(await srv.ok('browser_list_sessions'))[1] for _ in range(calls)]
			out[label].append(round(statistics.median(trips) * 1000, 2))
	return out


def show_tools(r: dict[str, Any]) -> str:
	rows = [[tool, v['ours_p50_ms'], v['upstream_p50_ms'], v['ratio']] for tool, v in r['tools'].items()]
	text = table(
		'(d) Warm per-tool latency (one session, static page)', ['tool', 'ours p50 (ms)', 'upstream p50 (ms)', 'ratio'], rows
	)
	routing = r['routing']
	return (
		text
		+ f'\nRouting overhead per call (in process, no-op tool): {routing["routed_p50_us"] - routing["direct_p50_us"]:.1f} µs '
		f'({routing["routed_p50_us"]} µs routed vs {routing["direct_p50_us"]} µs direct)\n'
		+ f'MCP round trip of a call needing no browser, p50 per round (ms): stdio on pipes {r["stdio"]["pipes"]}, '
		f"the SDK's stdio transport {r['stdio']['sdk']}\n"
	)


# -- (e) most concurrent sessions ----------------------------------------------------------------

MIN_AVAILABLE = 1 << 30


async def bench_capacity(site: str, cap: int, isolation: str = 'browser') -> dict[str, Any]:
	opened, error = 0, None
	started = time.perf_counter()
	async with server('ours', '--max-sessions', str(cap), '--idle-timeout', '0', '--isolation', isolation) as srv:
		for i in range(cap):
			if psutil.virtual_memory().available < MIN_AVAILABLE:
				error = f'stopped: less than {MIN_AVAILABLE >> 20} MB of memory available'
				break
			text, failed, _ = await srv.call('browser_navigate', session_id=f'cap-{i}', url=f'{site}/')
			if not failed:
				text, failed, _ = await srv.call('browser_get_state', session_id=f'cap-{i}')
			if failed:
				error = text[:300]
				break
			opened += 1
		# every session still answers, all at once
		checks = await asyncio.gather(*(srv.call('browser_get_state', session_id=f'cap-{i}') for i in range(opened)))
		still_ok = sum(1 for _, failed, _ in checks if not failed)
		mem = memory_of(srv.tree())
		available = psutil.virtual_memory().available
	return {
		'cap': cap,
		'isolation': isolation,
		'opened': opened,
		'all_answering': still_ok,
		'stopped_by': error or f'the probe cap ({cap})',
		'seconds': round(time.perf_counter() - started, 1),
		**mem.mb(),
		'pss_per_session_mb': round(mb(mem.pss) / max(opened, 1), 1),
		'available_gb_at_end': round(available / 2**30, 1),
	}


def show_capacity(r: dict[str, Any]) -> str:
	rows = [[r['opened'], r['all_answering'], r['stopped_by'], r['pss_mb'], r['pss_per_session_mb'], r['available_gb_at_end']]]
	return table(
		f'(e) Concurrent sessions held by one server (--isolation {r.get("isolation", "browser")})',
		[
			'sessions opened',
			'all answering at once',
			'stopped by',
			'total PSS (MB)',
			'PSS per session (MB)',
			'available GB at end',
		],
		rows,
	)


# -- (f) lean launch flags -----------------------------------------------------------------------


async def bench_lean() -> dict[str, Any]:
	import shutil
	import tempfile

	from benchmarks.common import REPO, base_env

	home = Path(tempfile.mkdtemp(prefix='bench-lean-'))
	try:
		env = base_env(home, BROWSER_USE_MCP_STATE_DIR=str(home / 'state'), BROWSER_USE_MCP_LOG_LEVEL='error')
		proc = await asyncio.create_subprocess_exec(
			sys.executable, '-m', 'benchmarks.lean', cwd=str(REPO), env=env, stdout=asyncio.subprocess.PIPE
		)
		stdout, _ = await asyncio.wait_for(proc.communicate(), 300)
		if proc.returncode != 0:
			raise RuntimeError(f'benchmarks.lean exited with {proc.returncode}')
		return {'flag_sets': json.loads(stdout.decode().strip().splitlines()[-1])}
	finally:
		shutil.rmtree(home, ignore_errors=True)


def show_lean(r: dict[str, Any]) -> str:
	rows = [
		[label, v['uss_mb'], v['pss_mb'], len(v['processes']), ', '.join(v['processes'])] for label, v in r['flag_sets'].items()
	]
	return table(
		"(f) One session's Chromium tree (3 sessions open, home page loaded)",
		['launch flags', 'USS (MB)', 'PSS (MB)', 'processes', 'process types'],
		rows,
	)


# -- (j) get_state, light and heavy page ---------------------------------------------------------

STATE_PAGES = {'static': '/', 'heavy': '/heavy'}
PATCHES_OFF = {
	'BROWSER_USE_MCP_CACHED_RESULT_TYPES': 'false',
	'BROWSER_USE_MCP_FAST_DOM_CAPTURE': 'false',
	'BROWSER_USE_MCP_DIRECT_STATE': 'false',
}


async def state_latencies(call: Any, navigate: Any, site: str, repeats: int) -> dict[str, Any]:
	"""Warm p50 of ``call()`` (a page-state tool) on each page of STATE_PAGES, and its text's size."""
	out: dict[str, Any] = {}
	for name, path in STATE_PAGES.items():
		await navigate(f'{site}{path}')
		for _ in range(2):  # warm-up
			text, _ = await call()
		times = [(await call())[1] for _ in range(repeats)]
		out[name] = {'p50_ms': median_ms(times), 'chars': len(text), 'ms': [round(t * 1000, 1) for t in times]}
	return out


async def bench_state(site: str, quick: bool) -> dict[str, Any]:
	from benchmarks import peers

	repeats = 7 if quick else 21
	servers_: dict[str, dict[str, Any]] = {}
	trips: list[float] = []
	for label, kind, env in (
		('ours', 'ours', None),
		('ours, get_state patches off', 'ours', PATCHES_OFF),
		('upstream', 'upstream', None),
	):
		async with server(kind, env_extra=env) as srv:
			kw = {'session_id': 'state'} if kind == 'ours' else {}

			async def call(srv: Server = srv, kw: dict[str, Any] = kw) -> tuple[str, float]:
				return await srv.ok('browser_get_state', **kw)

			async def navigate(url: str, srv: Server = srv, kw: dict[str, Any] = kw) -> None:
				await srv.ok('browser_navigate', url=url, **kw)

			servers_[label] = await state_latencies(call, navigate, site, repeats)
			if label == 'ours':  # what the transport alone costs now: a tool that touches no browser
				trips = [(await srv.ok('browser_list_sessions'))[1] for _ in range(repeats)]
	skipped: dict[str, str] = {}
	for kind in peers.KINDS:
		why = await peers.peer_available(kind)
		if why:
			skipped[kind] = why
			continue
		async with peers.peer(kind) as srv, srv.agents(1, 'state') as (agent,):

			async def navigate(url: str, agent: Any = agent) -> None:
				await agent.navigate(url)

			servers_[f'{kind} (snapshot)'] = await state_latencies(agent.snapshot, navigate, site, repeats)
	return {'repeats': repeats, 'servers': servers_, 'peers_skipped': skipped, 'mcp_round_trip_p50_ms': median_ms(trips)}


def show_state(r: dict[str, Any]) -> str:
	ours = r['servers']['ours']
	rows = []
	for label, v in r['servers'].items():
		row: list[Any] = [label]
		for page in STATE_PAGES:
			row += [v[page]['p50_ms'], ratio(v[page]['p50_ms'], ours[page]['p50_ms']), v[page]['chars']]
		rows.append(row)
	header = ['server']
	for page in STATE_PAGES:
		header += [f'{page} p50 (ms)', f'{page} ratio to ours', f'{page} text (chars)']
	text = table('(j) browser_get_state (peers: their snapshot), warm, one session', header, rows)
	text += f'\nOur MCP round trip alone (browser_list_sessions, no browser): p50 {r["mcp_round_trip_p50_ms"]} ms\n'
	for kind, why in r['peers_skipped'].items():
		text += f'\n{kind}: skipped ({why})\n'
	return text


# -- main ----------------------------------------------------------------------------------------


# -- (g) start-up ---------------------------------------------------------------------------------------


async def bench_startup(quick: bool) -> dict[str, Any]:
	repeats = 3 if quick else 5
	out: dict[str, Any] = {}
	for load, hogs in (('idle', 0), ('2 cores busy', os.cpu_count() or 2)):
		with spinners(hogs):  # as a loaded machine would be
			for kind in ('upstream', 'ours'):
				inits, lists = [], []
				for _ in range(repeats):
					initialized, listed = await spawn_timing(kind)
					inits.append(initialized)
					lists.append(listed)
				out[f'{kind}, {load}'] = {'initialize_p50_ms': median_ms(inits), 'tools_list_p50_ms': median_ms(lists)}
	return out


def show_startup(r: dict[str, Any]) -> str:
	rows = []
	for load in ('idle', '2 cores busy'):
		ours, up = r[f'ours, {load}'], r[f'upstream, {load}']
		rows.append(
			[
				load,
				ours['initialize_p50_ms'],
				ours['tools_list_p50_ms'],
				up['tools_list_p50_ms'],
				ratio(ours['tools_list_p50_ms'], up['tools_list_p50_ms']),
			]
		)
	return table(
		'(g) Server spawn to initialize / tools/list (p50 ms)',
		['machine', 'ours: initialize', 'ours: tools/list', 'upstream: tools/list', 'ours / upstream'],
		rows,
	)


# -- (h) isolation modes ----------------------------------------------------------------------------

MODES = ('browser', 'context')


async def bench_isolation(site: str, quick: bool, counts: list[int], extra: tuple[str, ...] = ()) -> dict[str, Any]:
	repeats = 1 if quick else 3
	out: dict[str, Any] = {'repeats': repeats, 'runs': [], 'create': {}, 'tools': {}, 'peers': {}}
	for n in counts:
		for mode in MODES:
			walls, pss = [], []
			for _ in range(repeats):
				async with server('ours', '--isolation', mode, '--max-sessions', str(n + 4), *extra) as srv:
					started = time.perf_counter()
					await asyncio.gather(*(workflow(srv, site, f'agent-{i}') for i in range(n)))
					walls.append(time.perf_counter() - started)
					pss.append(memory_of(srv.tree()).pss)
			out['runs'].append(
				{
					'who': f'ours, {mode}',
					'n': n,
					'wall_s': round(statistics.median(walls), 2),
					'pss_mb': mb(statistics.median(pss)),
				}
			)
		for peer, run in (await peer_runs(site, n, repeats)).items():
			out['runs'].append({'who': peer, 'n': n, **run})
	for mode in MODES:
		for label, args in (('nothing ready', ()), ('--prewarm 2', ('--prewarm', '2'))):
			create = []
			async with server('ours', '--isolation', mode, *args) as srv:
				await srv.ok('browser_navigate', session_id='first', url=f'{site}/')  # the shared Chromium is up
				for _ in range(3 if quick else 9):
					if args:
						await asyncio.sleep(1.5)  # the pool refills
					started = time.perf_counter()
					text, _ = await srv.ok('browser_create_session')
					create.append(time.perf_counter() - started)
					await srv.ok('browser_close_session', session_id=json.loads(text)['session_id'])
			out['create'][f'{mode}, {label}'] = {'p50_ms': median_ms(create), 'ms': [round(t * 1000) for t in create]}
		async with server('ours', '--isolation', mode) as srv:
			times = await tool_latencies(srv, site, 5 if quick else 15)
		out['tools'][mode] = {tool: median_ms(values) for tool, values in times.items()}
	return out


GRID_AGENTS = 4


async def bench_grid(site: str, quick: bool) -> dict[str, Any]:
	import tempfile

	from harness.gridserver import GridServer, grid_available

	reason = grid_available()
	if reason:
		return {'skipped': reason}
	n = GRID_AGENTS
	out: dict[str, Any] = {'agents': n, 'where': {}}
	with tempfile.TemporaryDirectory(prefix='bench-grid-') as tmp, GridServer(tmp, max_sessions=n + 2) as grid:
		places = {
			'local, browser': ('--isolation', 'browser'),
			'local, context': ('--isolation', 'context'),
			'grid': ('--grid-url', grid.url),
		}
		for label, args in places.items():
			create, walls = [], []
			async with server('ours', *args, '--max-sessions', str(n + 2)) as srv:
				await srv.ok('browser_navigate', session_id='first', url=f'{site}/')  # a shared Chromium is up
				for _ in range(3 if quick else 7):
					started = time.perf_counter()
					text, _ = await srv.ok('browser_create_session')
					create.append(time.perf_counter() - started)
					await srv.ok('browser_close_session', session_id=json.loads(text)['session_id'])
				await srv.ok('browser_close_session', session_id='first')
				times = await tool_latencies(srv, site, 5 if quick else 15)
				await srv.ok('browser_close_all')
				for _ in range(1 if quick else 3):
					started = time.perf_counter()
					await asyncio.gather(*(workflow(srv, site, f'agent-{i}') for i in range(n)))
					walls.append(time.perf_counter() - started)
					here = memory_of(srv.tree()).pss
					grid_side = memory_of([psutil.Process(grid.pid), *psutil.Process(grid.pid).children(recursive=True)]).pss
					await srv.ok('browser_close_all')
			out['where'][label] = {
				'create_p50_ms': median_ms(create),
				'tools_p50_ms': {tool: median_ms(values) for tool, values in times.items()},
				'wall_s': round(statistics.median(walls), 2),
				'pss_here_mb': mb(here),
				'pss_grid_mb': mb(grid_side) if label == 'grid' else None,
			}
	return out


def show_grid(r: dict[str, Any]) -> str:
	if 'skipped' in r:
		return f'### (i) Selenium Grid: skipped ({r["skipped"]})\n'
	where = r['where']
	local = where['local, browser']
	rows = []
	for label, w in where.items():
		tools = w['tools_p50_ms']
		rows.append(
			[
				label,
				w['create_p50_ms'],
				*(tools[t] for t in ('navigate', 'get_state', 'click', 'screenshot')),
				w['wall_s'],
				ratio(w['wall_s'], local['wall_s']),
				w['pss_here_mb'],
				w['pss_grid_mb'] if w['pss_grid_mb'] is not None else '-',
			]
		)
	return table(
		f"(i) Selenium Grid vs local: create and warm tool p50 (ms), {r['agents']} agents' workflow, PSS (MB) on this "
		'machine and in the Grid (Java, chromedriver, browsers)',
		['where', 'create', 'navigate', 'get_state', 'click', 'screenshot', 'wall s', 'vs local browser', 'PSS here', 'PSS grid'],
		rows,
	)


async def peer_runs(site: str, n: int, repeats: int) -> dict[str, dict[str, Any]]:
	"""The peers' context modes, side by side, when benchmarks/peers is installed (scripts/peers.sh)."""
	try:
		from benchmarks.peers import PEERS, peer_available, peer_workflow
	except ImportError:
		return {}
	runs: dict[str, dict[str, Any]] = {}
	for peer in PEERS:
		missing = await peer_available(peer)
		if missing:
			runs[peer] = {'skipped': missing}
			continue
		results = [await peer_workflow(peer, n, site) for _ in range(repeats)]
		runs[peer] = {
			'wall_s': round(statistics.median(r['wall_s'] for r in results), 2),
			'pss_mb': round(statistics.median(r['pss_mb'] for r in results), 1),
		}
	return runs


def show_isolation(r: dict[str, Any]) -> str:
	rows = []
	for run in r['runs']:
		if 'skipped' in run:
			rows.append([run['n'], run['who'], 'skipped', run['skipped'][:60], '', ''])
			continue
		base = next(x for x in r['runs'] if x['n'] == run['n'] and x['who'] == 'ours, browser')
		rows.append(
			[
				run['n'],
				run['who'],
				run['wall_s'],
				run['pss_mb'],
				round(run['pss_mb'] / run['n'], 1),
				ratio(run['wall_s'], base['wall_s']),
			]
		)
	text = table(
		f'(h) N agents x 5-step workflow by isolation mode (median of {r["repeats"]})',
		['N', 'server', 'wall (s)', 'PSS (MB)', 'PSS / agent (MB)', 'wall vs ours, browser'],
		rows,
	)
	text += '\n' + table(
		'(h) browser_create_session latency', ['mode', 'p50 (ms)'], [[k, v['p50_ms']] for k, v in r['create'].items()]
	)
	tools = list(next(iter(r['tools'].values())))
	text += '\n' + table(
		'(h) Warm per-tool p50 (ms) by mode', ['mode', *tools], [[mode, *(v[t] for t in tools)] for mode, v in r['tools'].items()]
	)
	return text


async def main(args: argparse.Namespace) -> int:
	from harness.pages import PageServer

	only = set(args.only or SECTIONS)
	if args.quick and not args.only:
		only.discard('e')
	results: dict[str, Any] = {
		'command': ' '.join(['python -m benchmarks.run', *sys.argv[1:]]),
		'started': datetime.now(UTC).isoformat(timespec='seconds'),
		'machine': machine(),
	}
	printed: list[str] = []
	with PageServer() as site:
		site.httpd.handle_error = lambda *_: None  # browsers closing mid-request are expected here
		steps = [
			('a', 'blocking', lambda: bench_blocking(site.url, args.quick), show_blocking),
			('b', 'agents', lambda: bench_agents(site.url, args.quick, args.agents), show_agents),
			('c', 'acquire', lambda: bench_acquire(site.url, args.quick), show_acquire),
			('d', 'tools', lambda: bench_tools(site.url, args.quick), show_tools),
			('e', 'capacity', lambda: bench_capacity(site.url, args.max_sessions_probe, args.isolation), show_capacity),
			('f', 'lean', bench_lean, show_lean),
			('g', 'startup', lambda: bench_startup(args.quick), show_startup),
			('h', 'isolation', lambda: bench_isolation(site.url, args.quick, args.many, tuple(args.ours_args)), show_isolation),
			('i', 'grid', lambda: bench_grid(site.url, args.quick), show_grid),
			('j', 'state', lambda: bench_state(site.url, args.quick), show_state),
		]
		for key, name, run, show in steps:
			if key not in only:
				continue
			print(f'running ({key}) {name}...', file=sys.stderr, flush=True)
			started = time.perf_counter()
			try:
				results[name] = await run()
			except Exception as exc:  # report and go on: one broken section must not hide the others
				results[name] = {'error': f'{type(exc).__name__}: {exc}'}
				print(f'({key}) {name} failed: {exc!r}', file=sys.stderr)
				continue
			results[name]['section_seconds'] = round(time.perf_counter() - started, 1)
			text = show(results[name])
			printed.append(text)
			print(text, flush=True)
	RESULTS.mkdir(parents=True, exist_ok=True)
	path = RESULTS / f'{datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")}{"-quick" if args.quick else ""}.json'
	results['tables'] = printed
	path.write_text(json.dumps(results, indent=2))
	print(f'raw results: {path}', file=sys.stderr)
	return 0 if all('error' not in v for k, v in results.items() if isinstance(v, dict) and k not in ('machine',)) else 1


def parse(argv: list[str] | None = None) -> argparse.Namespace:
	parser = argparse.ArgumentParser(
		prog='python -m benchmarks.run', description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
	)
	parser.add_argument('--quick', action='store_true', help='fewer repeats; skips (e) unless --only names it')
	parser.add_argument(
		'--only', type=lambda v: [s for s in v.replace(',', '') if s in SECTIONS], help='sections to run, e.g. a,c'
	)
	parser.add_argument('--agents', type=lambda v: [int(x) for x in v.split(',')], default=[1, 2, 4, 8], help='N values for (b)')
	parser.add_argument('--max-sessions-probe', type=int, default=48, help='cap for (e) (default 48)')
	parser.add_argument('--many', type=lambda v: [int(x) for x in v.split(',')], default=[8, 16], help='N values for (h)')
	parser.add_argument(
		'--ours-args',
		type=shlex.split,
		default=[],
		help="(h): more flags for our server's N-agent runs, e.g. '--contexts-per-browser 32'",
	)
	parser.add_argument('--isolation', choices=MODES, default='browser', help='isolation mode for (e) (default browser)')
	return parser.parse_args(argv)


if __name__ == '__main__':
	os.environ.setdefault('ANONYMIZED_TELEMETRY', 'false')
	os.environ.setdefault('BROWSER_USE_SETUP_LOGGING', 'false')
	os.environ.setdefault('BROWSER_USE_MCP_CHROMIUM_ARGS', '--proxy-server=http://127.0.0.1:9')  # in-process sections too
	sys.exit(asyncio.run(main(parse())))
