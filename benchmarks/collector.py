"""What Python's cyclic collector costs the one event loop: ``python -m benchmarks.collector
[--agents N] [--seconds S]``.

One server over a real MCP stdio client, ``--agents`` sessions (contexts of a shared Chromium) each
calling ``browser_get_state`` on the test site's home page in a loop for ``--seconds``. The server
process records every collection's pause by generation (a ``gc.callbacks`` probe loaded through a
``sitecustomize`` module in a temporary directory on its ``PYTHONPATH``; nothing of the server is
changed). Prints the calls' p50/p99/max and the collector's pauses while the agents ran (start-up's
own are left out). A full (generation 2) collection stops every session's calls for as long as it
takes, so its count and its longest pause matter more than the total.
Figures only: nothing here passes or fails.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path

from benchmarks.common import REPO, Server, percentile, server, table

PROBE = """
import gc, json, os, threading, time

_started = [0.0]
_pauses = {0: [], 1: [], 2: []}


def _timed(phase, info):
    if phase == 'start':
        _started[0] = time.perf_counter()
    else:
        _pauses[info['generation']].append((time.time(), (time.perf_counter() - _started[0]) * 1000))


def _dump():
    while True:
        time.sleep(0.5)
        tmp = os.environ['BENCH_GC_OUT'] + '.tmp'
        with open(tmp, 'w') as f:
            json.dump({str(g): list(p) for g, p in _pauses.items()}, f)
        os.replace(tmp, os.environ['BENCH_GC_OUT'])


gc.callbacks.append(_timed)
threading.Thread(target=_dump, daemon=True).start()
"""


async def agent(srv: Server, sid: str, seconds: float, out: list[float]) -> None:
	until = time.monotonic() + seconds
	while time.monotonic() < until:
		_, elapsed = await srv.ok('browser_get_state', session_id=sid)
		out.append(elapsed * 1000)


async def bench(agents: int, seconds: float) -> tuple[list[float], dict[str, list[float]]]:
	from harness.pages import PageServer

	with tempfile.TemporaryDirectory(prefix='bench-gc-') as scratch:
		(Path(scratch) / 'sitecustomize.py').write_text(PROBE)
		out_file = Path(scratch) / 'pauses.json'
		env = {'PYTHONPATH': f'{REPO}:{scratch}', 'BENCH_GC_OUT': str(out_file)}
		calls: list[float] = []
		with PageServer() as pages:
			async with server('ours', '--isolation', 'context', env_extra=env) as srv:
				ids = [f'gc-{i}' for i in range(agents)]
				await asyncio.gather(*(srv.ok('browser_navigate', session_id=sid, url=f'{pages.url}/') for sid in ids))
				started = time.time()  # start-up's own collections came before: left out
				await asyncio.gather(*(agent(srv, sid, seconds, calls) for sid in ids))
				await asyncio.sleep(1.2)  # the probe writes twice a second
				pauses = {g: [ms for at, ms in p if at >= started] for g, p in json.loads(out_file.read_text()).items()}
	return calls, pauses


def show(agents: int, seconds: float, calls: list[float], pauses: dict[str, list[float]]) -> str:
	rows = [
		['get_state calls', len(calls)],
		['get_state p50 ms', round(percentile(calls, 0.5), 1)],
		['get_state p99 ms', round(percentile(calls, 0.99), 1)],
		['get_state max ms', round(max(calls), 1)],
	]
	for gen in ('0', '1', '2'):
		p = pauses.get(gen, [])
		rows.append([f'generation {gen} collections', len(p)])
		rows.append([f'generation {gen} pause total / max ms', f'{sum(p):.1f} / {max(p, default=0):.1f}'])
	return table(f'{agents} agents looping get_state for {seconds:g} s: the calls and the collector', ['measure', 'value'], rows)


def main() -> None:
	parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
	parser.add_argument('--agents', type=int, default=4)
	parser.add_argument('--seconds', type=float, default=20.0)
	args = parser.parse_args()

	async def run() -> None:
		calls, pauses = await bench(args.agents, args.seconds)
		print(show(args.agents, args.seconds, calls, pauses))

	from benchmarks.common import run_in_scratch_home

	run_in_scratch_home('bench-gc-', run)


if __name__ == '__main__':
	main()
