"""What a large DevTools answer costs the browser process's main thread: ``python -m benchmarks.devtools_relay``.

A renderer's answer reaches a DevTools client through the browser process, whose main (UI)
thread turns it from the CBOR Chromium speaks inside into the JSON a client reads. Every browser
context of a shared Chromium has that one thread, and navigations, ``Target.*`` commands and
attaches of every context wait on it. This measures it: one headless Chromium (loopback only,
the dead proxy of the test suite), a corpus page (default: python stdtypes, ~17,000 elements,
install with ``python -m benchmarks.corpus --setup``), and for each of browser-use's three tree
requests, and two synthetic answers of the same size, the answer's JSON size, the CPU time the
browser's main thread spent while it was made and sent (from /proc, per thread), and the wall
time. Figures only: nothing passes or fails.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

ARGS = ['--headless=new', '--no-sandbox', '--proxy-server=http://127.0.0.1:9', '--remote-debugging-port=0']
# what browser-use's DomService asks for (0.13.14), and answers of a like size made in the page
REQUESTS: list[tuple[str, str, dict[str, Any]]] = [
	(
		'DOMSnapshot.captureSnapshot',
		'DOMSnapshot.captureSnapshot',
		{
			'computedStyles': ['display', 'visibility', 'opacity', 'overflow', 'cursor', 'pointer-events', 'position'],
			'includePaintOrder': True,
			'includeDOMRects': True,
		},
	),
	('DOM.getDocument (depth -1, pierce)', 'DOM.getDocument', {'depth': -1, 'pierce': True}),
	('Accessibility.getFullAXTree', 'Accessibility.getFullAXTree', {}),
	('evaluate: a 10 MB string', 'Runtime.evaluate', {'expression': "'x'.repeat(1e7)", 'returnByValue': True}),
	(
		'evaluate: 500,000 small objects',
		'Runtime.evaluate',
		{'expression': "Array.from({length: 500000}, (_, i) => ({a: i, b: 'yy'}))", 'returnByValue': True},
	),
]


def main_thread_cpu(pid: int) -> float:
	"""CPU seconds of a process's main thread (its thread id is its pid)."""
	for thread in psutil.Process(pid).threads():
		if thread.id == pid:
			return thread.user_time + thread.system_time
	return 0.0


async def measure(chromium: str, url: str, rounds: int) -> list[dict[str, Any]]:
	from cdp_use import CDPClient

	profile = Path(tempfile.mkdtemp(prefix='bench-relay-', dir='/tmp'))
	proc = await asyncio.create_subprocess_exec(
		chromium, *ARGS, f'--user-data-dir={profile}', 'about:blank', stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
	)
	client = None
	try:
		port_file = profile / 'DevToolsActivePort'
		for _ in range(200):
			if port_file.is_file() and len(port_file.read_text().split()) == 2:
				break
			await asyncio.sleep(0.05)
		port, path = port_file.read_text().split()
		client = CDPClient(f'ws://127.0.0.1:{port}{path}')
		await client.start()
		target = await client.send_raw('Target.createTarget', {'url': 'about:blank'})
		attached = await client.send_raw('Target.attachToTarget', {'targetId': target['targetId'], 'flatten': True})
		session = attached['sessionId']
		await client.send_raw('Page.enable', {}, session)
		await client.send_raw('Page.navigate', {'url': url}, session)
		await asyncio.sleep(3)
		rows: dict[str, dict[str, Any]] = {}
		for _ in range(rounds):
			for label, method, params in REQUESTS:
				await client.send_raw(method, params, session)  # warm
				cpu, started = main_thread_cpu(proc.pid), time.perf_counter()
				answer = await client.send_raw(method, params, session)
				wall, cpu = time.perf_counter() - started, main_thread_cpu(proc.pid) - cpu
				row = rows.setdefault(label, {'request': label, 'mb': len(json.dumps(answer)) / 1e6, 'ui_ms': [], 'wall_ms': []})
				row['ui_ms'].append(round(cpu * 1000))
				row['wall_ms'].append(round(wall * 1000))
		return list(rows.values())
	finally:
		if client is not None:
			await client.stop()
		proc.kill()
		await proc.wait()
		shutil.rmtree(profile, ignore_errors=True)


def run(args: argparse.Namespace) -> None:
	from benchmarks.common import table
	from benchmarks.corpus import PAGES, CorpusServer
	from browser_use_mcp.browser import find_chromium
	from browser_use_mcp.doctor import chromium_version

	page = next(p for p in PAGES if args.page in p.name)
	chromium = find_chromium() or 'chromium'
	with CorpusServer() as corpus:
		rows = asyncio.run(measure(chromium, corpus.url + page.path, args.rounds))
	print(
		table(
			f"The browser process's main thread per DevTools answer, {page.name}, {chromium_version(chromium).split(' built')[0]}",
			['answer', 'JSON (MB)', 'main thread CPU (ms), each round', 'wall (ms), each round'],
			[[r['request'], round(r['mb'], 1), r['ui_ms'], r['wall_ms']] for r in rows],
		)
	)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
	parser = argparse.ArgumentParser(prog='python -m benchmarks.devtools_relay', description=__doc__)
	parser.add_argument('--page', default='python stdtypes', help='a corpus page, by (part of its) name')
	parser.add_argument('--rounds', type=int, default=3)
	return parser.parse_args(argv)


if __name__ == '__main__':
	run(parse())
