"""What scraping /metrics costs the agents (docs/operations.md#health-and-metrics). Prints figures;
asserts nothing.

    .venv/bin/python -m benchmarks.metrics [--agents N] [--rounds R] [--loops L]

The real HTTP server (shared Chromiums, the default), N agents each with its own MCP connection
and session running navigate / get_state / evaluate / navigate / get_state on the loopback test
site L times. Each round runs that workflow once without a scraper and once with one fetching
/metrics every second (a thread of its own, so its timing is not the agents' event loop's), the
order alternating per round so drift hits both sides alike. Prints each round's wall times, their
medians, and the scrape latency p50/p95/max (each scrape includes a Chromium memory sample when
the 5 s cache has expired).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import tempfile
import threading
import time
import uuid
from pathlib import Path

import httpx


def scraper(url: str, stop: threading.Event, latencies: list[float], interval: float = 1.0) -> None:
	with httpx.Client(timeout=10) as client:
		while not stop.is_set():
			started = time.perf_counter()
			reply = client.get(url)
			latencies.append((time.perf_counter() - started) * 1000)
			assert reply.status_code == 200, reply.status_code
			stop.wait(max(0.0, interval - (time.perf_counter() - started)))


async def run(agents: int, rounds: int, loops: int, site: str) -> None:
	from harness.httpserver import connect, http_server

	token = f'bench-{uuid.uuid4().hex}'
	sids = [f'metrics-{i}' for i in range(agents)]
	walls: dict[str, list[float]] = {'without scraper': [], 'with scraper': []}
	latencies: list[float] = []
	home = Path(tempfile.mkdtemp(prefix='bench-metrics-'))
	with http_server(home, '--auth-token', token, '--max-sessions', str(agents + 2), '--idle-timeout', '0') as server:
		metrics_url = f'http://127.0.0.1:{server.port}/metrics'
		async with contextlib.AsyncExitStack() as stack:
			clients = [await stack.enter_async_context(connect(server, token)) for _ in sids]
			await asyncio.gather(
				*(mcp.ok('browser_navigate', session_id=sid, url=f'{site}/') for mcp, sid in zip(clients, sids, strict=True))
			)

			async def agent(mcp, sid: str) -> None:  # noqa: ANN001 - harness.servers.Mcp
				for _ in range(loops):
					await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/')
					await mcp.ok('browser_get_state', session_id=sid)
					await mcp.ok('browser_evaluate', session_id=sid, expression='document.title')
					await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/epoch')
					await mcp.ok('browser_get_state', session_id=sid)

			async def workflow() -> float:
				started = time.perf_counter()
				await asyncio.gather(*(agent(mcp, sid) for mcp, sid in zip(clients, sids, strict=True)))
				return time.perf_counter() - started

			for i in range(rounds):
				order = ['without scraper', 'with scraper'] if i % 2 == 0 else ['with scraper', 'without scraper']
				for mode in order:
					stop = threading.Event()
					thread = None
					if mode == 'with scraper':
						thread = threading.Thread(target=scraper, args=(metrics_url, stop, latencies), daemon=True)
						thread.start()
					try:
						walls[mode].append(await workflow())
					finally:
						stop.set()
						if thread is not None:
							await asyncio.to_thread(thread.join, 15)
					print(f'round {i + 1} {mode:16s} {walls[mode][-1]:6.2f} s', flush=True)
			calls = (await asyncio.to_thread(httpx.get, metrics_url, timeout=10)).text
	print(f'\n## {agents} agents x {loops} loops of 5 calls, {rounds} rounds each way')
	for mode, values in walls.items():
		print(f'{mode:16s} median {statistics.median(values):6.2f} s  (each: {", ".join(f"{v:.2f}" for v in values)})')
	base, scraped = statistics.median(walls['without scraper']), statistics.median(walls['with scraper'])
	print(f'difference of medians: {100 * (scraped - base) / base:+.1f} %')
	if latencies:
		ordered = sorted(latencies)
		p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
		print(
			f'scrape latency over {len(latencies)} scrapes: p50 {statistics.median(latencies):.1f} ms, '
			f'p95 {p95:.1f} ms, max {ordered[-1]:.1f} ms; /metrics is {len(calls)} bytes at the end'
		)


async def main() -> None:
	from harness.pages import PageServer

	parser = argparse.ArgumentParser()
	parser.add_argument('--agents', type=int, default=8)
	parser.add_argument('--rounds', type=int, default=3)
	parser.add_argument('--loops', type=int, default=3)
	ns = parser.parse_args()
	with PageServer() as site:
		await run(ns.agents, ns.rounds, ns.loops, site.url)


if __name__ == '__main__':
	asyncio.run(main())
