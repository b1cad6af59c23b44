"""What spreading sessions over shared Chromiums costs: ``python -m benchmarks.spread [--agents N] [--rounds R]``.

Context isolation with ``--spread-browsers 1`` (one shared Chromium fills first) against ``2`` (the
default), alternating server by server so both see the same machine load (a fresh server each
time, real MCP client over stdio, pages on 127.0.0.1):

1. ``--agents`` agents (16) at once run the 5-step workflow of ``benchmarks.run`` (navigate,
   get_state, click a link, get_state, go back): wall time, and PSS per agent of the server's
   whole process tree afterwards;
2. with one session open, ``browser_create_session`` for the second session and then the third:
   the second is where ``2`` launches another Chromium.

Prints each round's figures and the medians side by side. Figures only: nothing passes or fails.
What it is measured against (a light session's worst case beside a heavy one) is
``benchmarks.state_corpus --skip-pages --only-on``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from benchmarks.common import mb, memory_of, run_in_scratch_home, server, table
from benchmarks.run import workflow

SPREADS = ('1', '2')


async def one_workflow(site: str, agents: int, spread: str) -> tuple[float, float]:
	"""Wall time (s) of ``agents`` workflows at once, and PSS per agent (MB) after them."""
	args = ('--isolation', 'context', '--max-sessions', str(agents + 4), '--spread-browsers', spread)
	async with server('ours', *args) as srv:
		started = time.perf_counter()
		await asyncio.gather(*(workflow(srv, site, f'agent-{i}') for i in range(agents)))
		wall = time.perf_counter() - started
		return wall, mb(memory_of(srv.tree()).pss) / agents


async def creates(site: str, spread: str) -> tuple[float, float]:
	"""browser_create_session latency (s) of the second and the third session, one already open."""
	async with server('ours', '--isolation', 'context', '--spread-browsers', spread) as srv:
		await srv.ok('browser_navigate', session_id='first', url=f'{site}/')
		_, second = await srv.ok('browser_create_session')
		_, third = await srv.ok('browser_create_session')
		return second, third


async def bench(agents: int, rounds: int) -> str:
	from harness.pages import PageServer

	walls: dict[str, list[float]] = {s: [] for s in SPREADS}
	pss: dict[str, list[float]] = {s: [] for s in SPREADS}
	second: dict[str, list[float]] = {s: [] for s in SPREADS}
	third: dict[str, list[float]] = {s: [] for s in SPREADS}
	with PageServer() as site:
		for r in range(rounds):
			for spread in SPREADS:
				wall, per_agent = await one_workflow(site.url, agents, spread)
				walls[spread].append(wall)
				pss[spread].append(per_agent)
				two, three = await creates(site.url, spread)
				second[spread].append(two)
				third[spread].append(three)
				print(
					f'round {r + 1}, --spread-browsers {spread}: {agents} agents {wall:.2f} s, {per_agent:.1f} MB/agent; '
					f'create 2nd {two * 1000:.0f} ms, 3rd {three * 1000:.0f} ms',
					flush=True,
				)

	def cell(values: list[float], scale: float = 1.0, digits: int = 1) -> str:
		each = ' / '.join(f'{v * scale:.{digits}f}' for v in values)
		return f'{statistics.median(values) * scale:.{digits}f} ({each})'

	rows = [
		[
			f'--spread-browsers {s}',
			cell(walls[s], digits=2),
			cell(pss[s]),
			cell(second[s], 1000, 0),
			cell(third[s], 1000, 0),
		]
		for s in SPREADS
	]
	header = [
		'context mode',
		f'{agents} agents wall s, median (each)',
		'PSS / agent MB',
		'2nd create_session ms',
		'3rd create_session ms',
	]
	return table(f'Sessions spread over shared Chromiums, {rounds} alternating rounds', header, rows)


def main() -> None:
	parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
	parser.add_argument('--agents', type=int, default=16)
	parser.add_argument('--rounds', type=int, default=3)
	args = parser.parse_args()

	async def run() -> None:
		print(await bench(args.agents, args.rounds))

	run_in_scratch_home('bench-spread-', run)


if __name__ == '__main__':
	main()
