"""What the flight recorder costs: ``.venv/bin/python -m benchmarks.recorder [--rounds N]``.

One server (real MCP client over stdio, headless Chromium, pages on 127.0.0.1), four sessions in
it, each its own Chromium: one not recorded, one per kind (``trace``, ``har``, ``video``). Round
after round, each session in turn runs the same steps (navigate home, get_state, click its
button, navigate to another page), the order rotating, so all see the same machine load; p50 of
navigate, click and get_state side by side, each kind's overhead, and the PSS of each session's
Chromium (its whole process tree; for ``video`` plus its ffmpeg) after the rounds. The recorder's
extra work per call: trace, a URL/title read before and after and the screencast's frame after
navigate and click written to disk; har, the Network events kept and bodies fetched in the
background; video, the screencast's frames piped to ffmpeg. Prints markdown tables; measurements,
never pass/fail.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
from typing import Any

import psutil

from benchmarks.common import Memory, Server, mb, median_ms, memory_of, server, table

SESSIONS = {'off': {}, 'trace': {'record': ['trace']}, 'har': {'record': ['har']}, 'video': {'record': ['video']}}


async def one_round(
	srv: Server, sid: str, site: str, out: dict[str, list[float]], think: float = 0.0, look: bool = False
) -> None:
	"""navigate, get_state, click, navigate; ``think`` s between calls (an agent's model step), or with
	``look`` none between the navigate and the get_state that reads its result (an agent acts, looks
	at once, then thinks)."""
	_, elapsed = await srv.ok('browser_navigate', session_id=sid, url=f'{site}/')
	out['navigate'].append(elapsed)
	await asyncio.sleep(0.0 if look else think)
	text, elapsed = await srv.ok('browser_get_state', session_id=sid)
	out['get_state'].append(elapsed)
	await asyncio.sleep(think)
	button = next(e['index'] for e in json.loads(text)['interactive_elements'] if e['tag'] == 'button')
	_, elapsed = await srv.ok('browser_click', session_id=sid, index=button)
	out['click'].append(elapsed)
	await asyncio.sleep(think)
	_, elapsed = await srv.ok('browser_navigate', session_id=sid, url=f'{site}/two')
	out['navigate'].append(elapsed)
	await asyncio.sleep(think)


def _roots(srv: Server) -> set[int]:
	"""PIDs of the main Chromium processes of this server (one per session here)."""
	roots = set()
	for proc in srv.tree()[1:]:
		with contextlib.suppress(psutil.Error):
			if 'chrom' in proc.name().lower() and not any(a.startswith('--type=') for a in proc.cmdline()):
				roots.add(proc.pid)
	return roots


def _session_memory(root: int, with_ffmpeg: bool, srv: Server) -> Memory:
	procs: list[psutil.Process] = []
	with contextlib.suppress(psutil.Error):
		top = psutil.Process(root)
		procs = [top, *top.children(recursive=True)]
	if with_ffmpeg:
		procs += [p for p in srv.tree()[1:] if 'ffmpeg' in p.name().lower()]
	return memory_of(procs)


async def bench(rounds: int, think: float, look: bool = False) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
	from harness.pages import PageServer

	times: dict[str, dict[str, list[float]]] = {k: {'navigate': [], 'click': [], 'get_state': []} for k in SESSIONS}
	chromium: dict[str, int] = {}
	pss: dict[str, float] = {}
	with PageServer() as pages:
		async with server('ours', '--isolation', 'browser') as srv:  # a Chromium per session: its PSS is its own
			for label, options in SESSIONS.items():
				before = _roots(srv)
				await srv.ok('browser_create_session', session_id=f'bench-{label}', **options)
				await one_round(srv, f'bench-{label}', pages.url, {k: [] for k in times[label]})  # warm-up
				new = _roots(srv) - before
				if len(new) == 1:
					chromium[label] = new.pop()
			labels = list(SESSIONS)
			for i in range(rounds):
				order = labels[i % len(labels) :] + labels[: i % len(labels)]  # none always goes first
				for label in order:
					await one_round(srv, f'bench-{label}', pages.url, times[label], think, look)
			for label, root in chromium.items():
				pss[label] = mb(_session_memory(root, label == 'video', srv).pss)
	return {label: {k: median_ms(v) for k, v in t.items()} for label, t in times.items()}, pss


def show(result: tuple[dict[str, dict[str, float]], dict[str, float]], think: float, look: bool = False) -> str:
	r, pss = result
	kinds = [k for k in SESSIONS if k != 'off']
	rows: list[list[Any]] = []
	for step in ('navigate', 'click', 'get_state'):
		off = r['off'][step]
		row: list[Any] = [step, off]
		for kind in kinds:
			on = r[kind][step]
			row += [on, f'{(on - off) / off * 100:+.1f} %' if off else '-']
		rows.append(row)
	row = ['PSS per session, MB', pss.get('off', '-')]
	for kind in kinds:
		on, off = pss.get(kind), pss.get('off')
		row += [on if on is not None else '-', f'{(on - off) / off * 100:+.1f} %' if on and off else '-']
	rows.append(row)
	pause = f'{think * 1000:.0f} ms between calls' if think else 'calls back to back'
	if look:
		pause = f'get_state right after the navigate, {think * 1000:.0f} ms before the other calls'
	header = ['call', 'off ms'] + [h for k in kinds for h in (f'{k} ms', f'{k} overhead')]
	return table(f'Flight recorder: p50 per call, recording off vs each kind ({pause})', header, rows)


def main() -> None:
	parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
	parser.add_argument('--rounds', type=int, default=30, help='rounds per session (default 30)')
	parser.add_argument(
		'--think',
		type=float,
		nargs='*',
		default=[0.0, 0.3],
		help='seconds between calls, one table each (default: 0 and 0.3; an agent waits seconds for its model)',
	)
	parser.add_argument(
		'--look',
		type=float,
		nargs='*',
		default=[1.0],
		help="an agent's pacing, one table each: get_state right after the navigate, these seconds before the other calls (default 1)",
	)
	args = parser.parse_args()
	for think in args.think:
		print(show(asyncio.run(bench(args.rounds, think)), think))
	for think in args.look:
		print(show(asyncio.run(bench(args.rounds, think, look=True)), think, look=True))


if __name__ == '__main__':
	main()
