"""What a durable session costs (docs/sessions.md#durable-sessions): its background save after
page-changing calls, its record on disk, and its reopen with one tab against three tabs and
creation options. Prints figures; asserts nothing.

    .venv/bin/python -m benchmarks.durable [--runs N]

Each run: a stdio server (real Chromium, shared contexts, the loopback test site), a durable session
signed in to the site with 1 or 3 tabs (the 3-tab one also with a viewport and a locale), an orderly
stop, a new server on the same state dir, and the first call's wall time (the reopen: storage applied,
every tab opened, one ``browser_evaluate``), after another session has started the shared Chromium. Save times come from the server's log line.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import tempfile
import time
import uuid
from pathlib import Path


async def one_run(site: str, tabs: int) -> tuple[float, int, list[float]]:
	from harness.durable import records, stop
	from harness.servers import RawServer

	home = Path(tempfile.mkdtemp(prefix='bench-durable-')) / 'home'
	sid = f'bench-{uuid.uuid4().hex[:8]}'
	options = {'viewport': {'width': 500, 'height': 700}, 'locale': 'de-DE'} if tabs > 1 else {}
	first = await RawServer(home).start()
	try:
		async with first.client() as mcp:
			await mcp.ok('browser_create_session', session_id=sid, persist=True, **options)
			await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/signin?user=ann&note=n1')
			await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/me')
			for i in range(tabs - 1):
				await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/two?tab={i}', new_tab=True)
			deadline = time.monotonic() + 30
			while time.monotonic() < deadline and sum('saved in' in line for line in first.stderr_lines) < 1:
				await asyncio.sleep(0.1)
		saves = [float(m.group(1)) for line in first.stderr_lines if (m := re.search(r'saved in (\d+) ms', line))]
	finally:
		await stop(first)
	size = records(home)[0].stat().st_size
	second = await RawServer(home).start()
	try:
		async with second.client() as mcp:
			# the shared Chromium started first: the figure is the reopen, not the browser's start
			await mcp.ok('browser_navigate', session_id='warm-up', url=f'{site}/two')
			started = time.perf_counter()
			await mcp.ok('browser_evaluate', session_id=sid, expression='document.title')
			reopen = (time.perf_counter() - started) * 1000
	finally:
		await stop(second)
	return reopen, size, saves


async def main() -> None:
	parser = argparse.ArgumentParser()
	parser.add_argument('--runs', type=int, default=3)
	args = parser.parse_args()
	from harness.pages import PageServer

	with PageServer() as pages:
		for tabs in (1, 3):
			reopens, sizes, saves = [], [], []
			for _ in range(args.runs):
				reopen, size, saved = await one_run(pages.url, tabs)
				reopens.append(reopen)
				sizes.append(size)
				saves.extend(saved)
			label = '1 tab' if tabs == 1 else f'{tabs} tabs + options'
			print(
				f'{label:>16}: reopen median {statistics.median(reopens):5.0f} ms ({" ".join(f"{r:.0f}" for r in reopens)}); '
				f'record {statistics.median(sizes):.0f} bytes; background save median '
				f'{statistics.median(saves) if saves else float("nan"):.0f} ms ({len(saves)} saves)'
			)


if __name__ == '__main__':
	asyncio.run(main())
