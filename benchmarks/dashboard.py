"""What the dashboard costs (docs/dashboard.md#costs). Prints figures; asserts nothing.

    .venv/bin/python -m benchmarks.dashboard [--rounds N]

1. Frames: Page.captureScreenshot (JPEG, clipped and scaled like the dashboard's thumbnails and
   large view; and unscaled, and PNG, for comparison) against Page.startScreencast, on a 1920x1080
   page of a Chromium of our own: milliseconds per frame, bytes, and the browser's CPU seconds
   for 10 s of a moving page at the dashboard's rates.
2. Agents: the real HTTP server, three sessions each running navigate / get_state / evaluate /
   click in a loop, with no dashboard open and with one open (a headless Chromium showing
   /dashboard: thumbnails of all three, then also the large view of one). Per-tool p50 and mean,
   rounds alternated so drift hits both sides alike.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import itertools
import json
import statistics
import tempfile
import time
import urllib.request
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import psutil
from websockets.asyncio.client import connect

ANIMATED = (
	'data:text/html,<title>moving</title><style>div{width:300px;height:300px;background:teal;'
	'animation:m 1s linear infinite alternate}@keyframes m{to{transform:translateX(1200px)}}</style>'
	'<h1>frames</h1><div></div>'
)


class Cdp:
	"""A CDP page connection that also collects events (the screencast sends its frames as events)."""

	def __init__(self, socket: Any) -> None:
		self.socket = socket
		self.ids = itertools.count(1)
		self.pending: dict[int, asyncio.Future[Any]] = {}
		self.events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
		self.reader = asyncio.create_task(self._read())

	async def _read(self) -> None:
		async for raw in self.socket:
			data = json.loads(raw)
			if 'id' in data and data['id'] in self.pending:
				self.pending.pop(data['id']).set_result(data)
			elif 'method' in data:
				await self.events.put(data)

	async def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
		message_id = next(self.ids)
		future = asyncio.get_running_loop().create_future()
		self.pending[message_id] = future
		await self.socket.send(json.dumps({'id': message_id, 'method': method, 'params': params or {}}))
		reply = await asyncio.wait_for(future, 30)
		if 'error' in reply:
			raise RuntimeError(reply['error'])
		return reply['result']

	async def close(self) -> None:
		self.reader.cancel()
		await self.socket.close()


@contextlib.asynccontextmanager
async def page(browser_url: str) -> AsyncIterator[Cdp]:
	opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
	with opener.open(urllib.request.Request(f'{browser_url}/json/new?about:blank', method='PUT'), timeout=10) as reply:
		ws = json.loads(reply.read())['webSocketDebuggerUrl']
	cdp = Cdp(await connect(ws, max_size=None))
	try:
		yield cdp
	finally:
		await cdp.close()


def tree_cpu(pid: int) -> float:
	total = 0.0
	proc = psutil.Process(pid)
	for p in [proc, *proc.children(recursive=True)]:
		with contextlib.suppress(psutil.NoSuchProcess):
			times = p.cpu_times()
			total += times.user + times.system
	return total


def stats(values: list[float]) -> str:
	return f'p50 {statistics.median(values):6.1f}  mean {statistics.fmean(values):6.1f}  n {len(values)}'


async def frames(browser_url: str, pid: int) -> None:
	print('\n## 1. Frames of a 1920x1080 page')
	async with page(browser_url) as cdp:
		await cdp.send(
			'Emulation.setDeviceMetricsOverride', {'width': 1920, 'height': 1080, 'deviceScaleFactor': 1, 'mobile': False}
		)
		await cdp.send('Page.enable')
		await cdp.send('Page.navigate', {'url': ANIMATED})
		await asyncio.sleep(1)
		view = {'x': 0, 'y': 0, 'width': 1920, 'height': 1080}
		variants = {
			'JPEG q50, clip scaled to 400 px (thumbnail)': {
				'format': 'jpeg',
				'quality': 50,
				'optimizeForSpeed': True,
				'clip': {**view, 'scale': 400 / 1920},
			},
			'JPEG q60, clip scaled to 1280 px (large view)': {
				'format': 'jpeg',
				'quality': 60,
				'optimizeForSpeed': True,
				'clip': {**view, 'scale': 1280 / 1920},
			},
			'JPEG q50, full size': {'format': 'jpeg', 'quality': 50, 'optimizeForSpeed': True},
			'PNG, full size': {'format': 'png'},
		}
		for name, params in variants.items():
			times, sizes = [], []
			for _ in range(20):
				started = time.perf_counter()
				shot = await cdp.send('Page.captureScreenshot', params)
				times.append((time.perf_counter() - started) * 1000)
				sizes.append(len(base64.b64decode(shot['data'])))
			print(f'captureScreenshot {name:48s} ms/frame {stats(times)}   {statistics.median(sizes) / 1024:6.1f} KiB')

		# CPU for 10 s of a moving page: polling captures at the dashboard's rates vs a screencast
		async def polled(every: float, params: dict[str, Any]) -> tuple[float, int]:
			cpu, count = tree_cpu(pid), 0
			deadline = time.monotonic() + 10
			while time.monotonic() < deadline:
				await cdp.send('Page.captureScreenshot', params)
				count += 1
				await asyncio.sleep(every)
			return tree_cpu(pid) - cpu, count

		async def screencast(width: int, every_nth: int) -> tuple[float, int, float]:
			cpu, count = tree_cpu(pid), 0
			started = time.perf_counter()
			await cdp.send(
				'Page.startScreencast',
				{'format': 'jpeg', 'quality': 50, 'maxWidth': width, 'maxHeight': width, 'everyNthFrame': every_nth},
			)
			first = None
			deadline = time.monotonic() + 10
			while time.monotonic() < deadline:
				with contextlib.suppress(TimeoutError):
					event = await asyncio.wait_for(cdp.events.get(), 0.5)
					if event['method'] == 'Page.screencastFrame':
						count += 1
						if first is None:
							first = (time.perf_counter() - started) * 1000
						await cdp.send('Page.screencastFrameAck', {'sessionId': event['params']['sessionId']})
			await cdp.send('Page.stopScreencast')
			return tree_cpu(pid) - cpu, count, first or float('nan')

		idle_cpu = tree_cpu(pid)
		await asyncio.sleep(10)
		print(f'\nbrowser CPU s per 10 s, moving page, nothing captured:           {tree_cpu(pid) - idle_cpu:5.2f}')
		cpu, count = await polled(0.5, variants['JPEG q50, clip scaled to 400 px (thumbnail)'])
		print(f'captureScreenshot thumbnail every 0.5 s (as the dashboard):      {cpu:5.2f}  ({count} frames)')
		cpu, count = await polled(0.15, variants['JPEG q60, clip scaled to 1280 px (large view)'])
		print(f'captureScreenshot large view every 0.15 s (as the dashboard):    {cpu:5.2f}  ({count} frames)')
		cpu, count, first = await screencast(400, 1)
		print(
			f'startScreencast 400 px, every frame:                             {cpu:5.2f}  ({count} frames, first after {first:.0f} ms)'
		)
		cpu, count, first = await screencast(1280, 1)
		print(
			f'startScreencast 1280 px, every frame:                            {cpu:5.2f}  ({count} frames, first after {first:.0f} ms)'
		)
		cpu, count, first = await screencast(400, 30)
		print(
			f'startScreencast 400 px, every 30th frame (~2/s):                 {cpu:5.2f}  ({count} frames, first after {first:.0f} ms)'
		)


async def agents(rounds: int, site: str, browser_url: str) -> None:
	from harness.httpserver import connect as mcp_connect
	from harness.httpserver import http_server

	print("\n## 2. Agents' per-tool latency, dashboard closed vs open (3 sessions, HTTP)")
	token = f'bench-{uuid.uuid4().hex}'
	sids = ['bench-a', 'bench-b', 'bench-c']
	timings: dict[str, dict[str, list[float]]] = {m: {} for m in ('closed', 'thumbnails', 'thumbnails + large view')}
	with http_server(Path(tempfile.mkdtemp(prefix='bench-dashboard-')), '--auth-token', token) as server:
		async with mcp_connect(server, token) as mcp:
			for sid in sids:
				await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/')

			async def agent(sid: str, into: dict[str, list[float]], loops: int) -> None:
				steps = [
					('browser_navigate', {'url': f'{site}/'}),
					('browser_get_state', {}),
					('browser_evaluate', {'expression': 'document.title'}),
					('browser_navigate', {'url': f'{site}/epoch'}),
					('browser_get_state', {}),
				]
				for _ in range(loops):
					for name, args in steps:
						started = time.perf_counter()
						await mcp.ok(name, session_id=sid, **args)
						into.setdefault(name, []).append((time.perf_counter() - started) * 1000)

			async def run(mode: str) -> None:
				await asyncio.gather(*(agent(sid, timings[mode], 4) for sid in sids))

			async with page(browser_url) as person:
				# sign in with the form (a ?token= in the URL signs nobody in)
				await person.send('Page.navigate', {'url': f'http://127.0.0.1:{server.port}/dashboard'})
				await asyncio.sleep(1)
				fill = f"document.getElementById('token').value = {json.dumps(token)}; document.querySelector('form').submit()"
				await person.send('Runtime.evaluate', {'expression': fill})
				await asyncio.sleep(1)
				dashboard = f'http://127.0.0.1:{server.port}/dashboard'

				async def show(mode: str) -> None:
					await person.send('Page.navigate', {'url': 'about:blank' if mode == 'closed' else dashboard})
					await asyncio.sleep(2)  # the page loaded and its first frames taken: steady state is measured
					if mode == 'thumbnails + large view':
						await person.send(
							'Runtime.evaluate', {'expression': "document.querySelector('#cards > li button.open').click()"}
						)
						await asyncio.sleep(1)

				modes = list(timings)
				for i in range(rounds):
					for mode in modes[i % 3 :] + modes[: i % 3]:  # each mode goes first, second and third alike
						await show(mode)
						await run(mode)
	names = list(timings['closed'])
	print(f'{"tool":20s} ' + ' | '.join(f'{m:>30s}' for m in timings))
	for name in [*names, 'all']:
		cells = []
		for mode in timings:
			values = [v for vs in timings[mode].values() for v in vs] if name == 'all' else timings[mode][name]
			cells.append(f'p50 {statistics.median(values):6.1f} mean {statistics.fmean(values):6.1f} ms')
		print(f'{name:20s} ' + ' | '.join(f'{c:>30s}' for c in cells))
	base = statistics.fmean([v for vs in timings['closed'].values() for v in vs])
	for mode in list(timings)[1:]:
		mean = statistics.fmean([v for vs in timings[mode].values() for v in vs])
		print(f'mean per-tool latency, {mode}: {100 * (mean - base) / base:+.1f} % vs closed')


async def main() -> None:
	from harness.pages import PageServer
	from harness.servers import user_chromium

	parser = argparse.ArgumentParser()
	parser.add_argument('--rounds', type=int, default=3)
	parser.add_argument('--skip-frames', action='store_true')
	ns = parser.parse_args()
	with PageServer() as site, user_chromium(Path(tempfile.mkdtemp(prefix='bench-person-')) / 'p') as (url, proc):
		if not ns.skip_frames:
			await frames(url, proc.pid)
		await agents(ns.rounds, site.url, url)


if __name__ == '__main__':
	asyncio.run(main())
