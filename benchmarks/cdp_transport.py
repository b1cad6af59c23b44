"""CDP round trips through the way browser-use reaches a Chromium of ours, against a DevTools port.

``python -m benchmarks.cdp_transport``: cdp-use (browser-use's own client) sends a small command
(``Runtime.evaluate('1')``) and a large answer (``DOMSnapshot.captureSnapshot`` of a
3,000-element page), once to Chromium's own websocket (``--remote-debugging-port``, what the
server used before issue #22) and once to our loopback endpoint relaying over the DevTools pipe.
Prints p50s; rounds alternate so a busy machine hurts both alike.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cdp_use import CDPClient

from browser_use_mcp.browser import ChromiumProcess, find_chromium
from browser_use_mcp.processes import Owner
from browser_use_mcp.providers.cdp_proxy import ContextRouter, PassthroughLink

ARGS = ['--headless=new', '--no-sandbox', '--proxy-server=http://127.0.0.1:9', '--in-process-gpu']
PAGE = (
	'data:text/html,<div>' + ''.join(f'<p><a href="#{i}">link {i}</a> <span>text {i}</span></p>' for i in range(3000)) + '</div>'
)
SMALL, LARGE, ROUNDS = 300, 20, 3


async def measure(url: str) -> tuple[float, float]:
	"""p50 seconds of a small and of a large round trip over a browser-level connection to ``url``."""
	client = CDPClient(url)
	await client.start()
	try:
		target = await client.send.Target.createTarget(params={'url': PAGE})
		session = (await client.send.Target.attachToTarget(params={'targetId': target['targetId'], 'flatten': True}))['sessionId']
		await asyncio.sleep(1.0)
		small, large = [], []
		for _ in range(20):
			await client.send.Runtime.evaluate(params={'expression': '1'}, session_id=session)
		for _ in range(SMALL):
			start = time.perf_counter()
			await client.send.Runtime.evaluate(params={'expression': '1'}, session_id=session)
			small.append(time.perf_counter() - start)
		for _ in range(LARGE):
			start = time.perf_counter()
			await client.send.DOMSnapshot.captureSnapshot(params={'computedStyles': []}, session_id=session)
			large.append(time.perf_counter() - start)
		return statistics.median(small), statistics.median(large)
	finally:
		await client.stop()


async def over_port(executable: str) -> tuple[float, float]:
	with tempfile.TemporaryDirectory() as profile:
		proc = await asyncio.create_subprocess_exec(
			executable,
			*ARGS,
			f'--user-data-dir={profile}',
			'--remote-debugging-port=0',
			'about:blank',
			stdout=subprocess.DEVNULL,
			stderr=subprocess.DEVNULL,
		)
		try:
			active = Path(profile) / 'DevToolsActivePort'
			while not active.exists() or len(active.read_text().split()) < 2:
				await asyncio.sleep(0.05)
			port, path = active.read_text().split()[:2]
			return await measure(f'ws://127.0.0.1:{port}{path}')
		finally:
			proc.kill()
			await proc.wait()


async def over_pipe(executable: str) -> tuple[float, float]:
	with tempfile.TemporaryDirectory() as profile:
		chromium = await ChromiumProcess.launch(executable, [*ARGS, f'--user-data-dir={profile}'], Path(profile), Owner.current())
		router = ContextRouter()
		try:
			await router.start()
			return await measure(router.add(PassthroughLink(chromium.cdp.open_channel)))
		finally:
			await router.close()
			await chromium.kill()


async def main() -> None:
	executable = find_chromium()
	if executable is None:
		sys.exit('no Chromium found: set BROWSER_USE_MCP_CHROMIUM')
	results: dict[str, list[tuple[float, float]]] = {'DevTools port (before)': [], 'our endpoint + pipe': []}
	for _ in range(ROUNDS):
		results['DevTools port (before)'].append(await over_port(executable))
		results['our endpoint + pipe'].append(await over_pipe(executable))
	print('| transport | Runtime.evaluate p50 | captureSnapshot (3,000 elements) p50 |')
	print('|---|---|---|')
	for name, runs in results.items():
		small = statistics.median(r[0] for r in runs) * 1000
		large = statistics.median(r[1] for r in runs) * 1000
		print(f'| {name} | {small:.3f} ms | {large:.1f} ms |')


if __name__ == '__main__':
	asyncio.run(main())
