"""What a large DevTools answer costs the browser process's main thread: ``python -m benchmarks.devtools_relay``.

A renderer's answer reaches a DevTools client through the browser process, whose main (UI)
thread turns it from the CBOR Chromium speaks inside into the JSON a client reads. Every browser
context of a shared Chromium has that one thread, and navigations, ``Target.*`` commands and
attaches of every context wait on it. This measures it: one headless Chromium (loopback only,
the dead proxy of the test suite), a corpus page (default: python stdtypes, ~17,000 elements,
install with ``python -m benchmarks.corpus --setup``), and for each of browser-use's three tree
requests, and two synthetic answers of the same size, the answer's JSON size, the CPU time the
browser's main thread spent while it was made and sent (from /proc, per thread), and the wall
time. ``--pipes`` asks for the three trees over a DevTools pipe instead, once in JSON mode
(``--remote-debugging-pipe``, what the server uses) and once in CBOR mode
(``--remote-debugging-pipe=cbor``, where Chromium sends its own CBOR as it is), alternating, with
a minimal CBOR codec for the few small messages around them, and how long each answer takes to
decode in Python: msgspec (the page-state worker's JSON decoder) against cbor2's C decoder (when
installed). ``--in-server`` reads the page with
``browser_get_state`` through the session registry in process (contexts) and prints the CPU each
state costs by process: the renderer, the page-state worker, the server, the browser process and
its main thread. Figures only: nothing passes or
fails.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import shutil
import struct
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

ARGS = ['--headless=new', '--no-sandbox', '--proxy-server=http://127.0.0.1:9']  # the pipe's browser (loopback only)
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


async def measure(url: str, rounds: int) -> list[dict[str, Any]]:
	"""Over a DevTools websocket: the browser a user starts (the test suite's ``user_chromium``)."""
	from cdp_use import CDPClient

	from browser_use_mcp.providers.cdp_client import browser_ws_url
	from harness.servers import user_chromium

	with tempfile.TemporaryDirectory(prefix='bench-relay-', dir='/tmp') as tmp, user_chromium(Path(tmp)) as (cdp_url, proc):
		client = CDPClient(await asyncio.to_thread(browser_ws_url, cdp_url))
		await client.start()
		try:
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
					row = rows.setdefault(
						label, {'request': label, 'mb': len(json.dumps(answer)) / 1e6, 'ui_ms': [], 'wall_ms': []}
					)
					row['ui_ms'].append(round(cpu * 1000))
					row['wall_ms'].append(round(wall * 1000))
			return list(rows.values())
		finally:
			await client.stop()


# -- the same trees over a DevTools pipe, JSON or CBOR ------------------------------------------


def cbor_encode(value: Any) -> bytes:
	"""A command as Chromium's CBOR wants it: maps indefinite-length inside an envelope."""
	if isinstance(value, bool):
		return b'\xf5' if value else b'\xf4'
	if isinstance(value, int):
		return _head(0, value) if value >= 0 else _head(1, -1 - value)
	if isinstance(value, str):
		data = value.encode()
		return _head(3, len(data)) + data
	if isinstance(value, list):
		return b'\x9f' + b''.join(cbor_encode(v) for v in value) + b'\xff'
	if isinstance(value, dict):
		inner = b'\xbf' + b''.join(cbor_encode(k) + cbor_encode(v) for k, v in value.items()) + b'\xff'
		return b'\xd8\x18\x5a' + struct.pack('>I', len(inner)) + inner
	raise TypeError(f'cannot encode {type(value).__name__}')


def _head(major: int, n: int) -> bytes:
	if n < 24:
		return bytes([major << 5 | n])
	if n < 256:
		return bytes([major << 5 | 24, n])
	if n < 65536:
		return bytes([major << 5 | 25]) + struct.pack('>H', n)
	return bytes([major << 5 | 26]) + struct.pack('>I', n)


def cbor_decode(data: bytes, i: int = 0) -> tuple[Any, int]:
	"""The value at ``i`` and where it ends: enough of CBOR for small DevTools answers and events."""
	first = data[i]
	major, info = first >> 5, first & 31
	i += 1
	if first == 0xD8 and data[i] == 0x18:  # an envelope: tag 24, then a byte string with 4-byte length
		return cbor_decode(data, i + 6)
	if info < 24:
		n = info
	elif info in (24, 25, 26, 27):
		size = 1 << (info - 24)
		n = int.from_bytes(data[i : i + size], 'big')
		i += size
	else:
		n = -1  # indefinite length, or a simple value
	if major == 0:
		return n, i
	if major == 1:
		return -1 - n, i
	if major in (2, 3):  # Chromium sends non-ASCII strings as UTF-16LE byte strings
		return data[i : i + n].decode('utf-8' if major == 3 else 'utf-16-le', 'replace'), i + n
	if major in (4, 5):
		items: list[Any] = []
		count = n * (2 if major == 5 else 1)
		while (count < 0 and data[i] != 0xFF) or len(items) < count:
			item, i = cbor_decode(data, i)
			items.append(item)
		i += 1 if count < 0 else 0
		return (dict(zip(items[::2], items[1::2], strict=True)) if major == 5 else items), i
	if major == 6:
		return cbor_decode(data, i)
	if first == 0xFB:
		return struct.unpack('>d', data[i : i + 8])[0], i + 8
	return {0xF4: False, 0xF5: True, 0xF6: None}.get(first), i


class DevToolsPipe:
	"""A headless Chromium driven over ``--remote-debugging-pipe`` (``cbor``: in CBOR mode)."""

	def __init__(self, chromium: str, cbor: bool) -> None:
		self.cbor = cbor
		child_read, self.write_fd = os.pipe()
		self.read_fd, child_write = os.pipe()
		self.profile = Path(tempfile.mkdtemp(prefix='bench-relay-', dir='/tmp'))

		def as_fds_3_and_4() -> None:
			read, write = os.dup(child_read), os.dup(child_write)  # dup2 onto itself would keep close-on-exec
			os.dup2(read, 3)
			os.dup2(write, 4)

		flag = '--remote-debugging-pipe=cbor' if cbor else '--remote-debugging-pipe'
		self.proc = subprocess.Popen(
			[chromium, *ARGS, f'--user-data-dir={self.profile}', flag, 'about:blank'],
			preexec_fn=as_fds_3_and_4,
			close_fds=False,
			stdout=subprocess.DEVNULL,
			stderr=subprocess.DEVNULL,
		)
		os.close(child_read)
		os.close(child_write)
		self.buffer = b''
		self.ids = 0
		self.last = b''

	def _message(self) -> bytes:
		while True:
			if self.cbor and len(self.buffer) >= 7:
				end = 7 + struct.unpack('>I', self.buffer[3:7])[0]
				if len(self.buffer) >= end:
					message, self.buffer = self.buffer[:end], self.buffer[end:]
					return message
			elif not self.cbor and (end := self.buffer.find(b'\0')) >= 0:
				message, self.buffer = self.buffer[:end], self.buffer[end + 1 :]
				return message
			chunk = os.read(self.read_fd, 1 << 20)
			if not chunk:
				raise EOFError('Chromium closed its DevTools pipe')
			self.buffer += chunk

	def call(self, method: str, params: dict[str, Any], session: str | None = None) -> tuple[dict[str, Any] | None, int]:
		"""The answer (decoded when small) and its size in bytes; a large one's bytes are kept in ``last``."""
		self.ids += 1
		message: dict[str, Any] = {'id': self.ids, 'method': method, 'params': params}
		if session:
			message['sessionId'] = session
		os.write(self.write_fd, cbor_encode(message) if self.cbor else json.dumps(message).encode() + b'\0')
		while True:
			raw = self._message()
			if len(raw) > 100_000:  # the large answer (the events around it are small)
				self.last = raw
				return None, len(raw)
			decoded = cbor_decode(raw)[0] if self.cbor else json.loads(raw)
			if decoded.get('id') == self.ids:
				return decoded, len(raw)

	def open_page(self) -> str:
		"""A new tab, attached (flat): its session id."""
		created, _ = self.call('Target.createTarget', {'url': 'about:blank'})
		assert created is not None
		attached, _ = self.call('Target.attachToTarget', {'targetId': created['result']['targetId'], 'flatten': True})
		assert attached is not None
		return attached['result']['sessionId']

	def close(self) -> None:
		from browser_use_mcp.sidecar import release_singleton

		self.proc.kill()
		self.proc.wait()
		release_singleton(self.profile)  # killed, it leaves its singleton's directory in /tmp
		os.close(self.read_fd)
		os.close(self.write_fd)
		shutil.rmtree(self.profile, ignore_errors=True)


def decode_ms(raw: bytes, cbor: bool) -> float | str:
	"""What the page-state worker would spend turning the answer into Python objects: msgspec (its JSON
	decoder) for JSON; for CBOR, cbor2's C decoder (``pip install cbor2``), each of Chromium's
	envelopes (tag 24) decoded as it comes. A lower bound for CBOR: non-ASCII strings would still be
	UTF-16 byte strings to turn into ``str``."""
	started = time.perf_counter()
	if not cbor:
		import msgspec

		msgspec.json.decode(raw)
	else:
		try:
			import cbor2
		except ImportError:
			return 'no cbor2'
		decoders: dict[int, Any] = {}
		decoders[24] = lambda value, immutable: cbor2.loads(value, semantic_decoders=decoders, max_depth=100_000)
		cbor2.loads(raw, semantic_decoders=decoders, max_depth=100_000)
	return round((time.perf_counter() - started) * 1000)


def over_pipe(chromium: str, url: str, cbor: bool, rounds: int) -> list[dict[str, Any]]:
	pipe = DevToolsPipe(chromium, cbor)
	try:
		session = pipe.open_page()
		pipe.call('Page.navigate', {'url': url}, session)
		time.sleep(3)
		rows = []
		for label, method, params in REQUESTS[:3]:
			row: dict[str, Any] = {
				'request': label,
				'mode': 'CBOR' if cbor else 'JSON',
				'ui_ms': [],
				'wall_ms': [],
				'decode_ms': [],
			}
			for _ in range(rounds):
				cpu, started = main_thread_cpu(pipe.proc.pid), time.perf_counter()
				_, size = pipe.call(method, params, session)
				row['wall_ms'].append(round((time.perf_counter() - started) * 1000))
				row['ui_ms'].append(round((main_thread_cpu(pipe.proc.pid) - cpu) * 1000))
				row['mb'] = size / 1e6
				row['decode_ms'].append(decode_ms(pipe.last, cbor))
			rows.append(row)
		return rows
	finally:
		pipe.close()


# -- the same page read by the server: CPU by process ------------------------------------------


def _cpu_by_kind() -> tuple[dict[int, tuple[str, float]], dict[tuple[int, int], float]]:
	"""CPU seconds of each process below this one by kind (Chromium's --type, the page-state worker,
	this process as ``server``), and of each thread of the browser processes."""
	from browser_use_mcp.processes import chromium_kind

	procs: dict[int, tuple[str, float]] = {}
	threads: dict[tuple[int, int], float] = {}
	me = psutil.Process()
	for proc in [me, *me.children(recursive=True)]:
		try:
			chromium = 'chrom' in proc.name().lower()
			kind = 'server' if proc.pid == me.pid else chromium_kind(proc.cmdline()) if chromium else 'python worker'
			times = proc.cpu_times()
			procs[proc.pid] = (kind, times.user + times.system)
			if kind == 'browser':
				for thread in proc.threads():
					threads[(proc.pid, thread.id)] = thread.user_time + thread.system_time
		except psutil.Error:
			continue
	return procs, threads


async def in_server(url: str, states: int) -> dict[str, float]:
	"""``states`` warm browser_get_state of ``url`` in a registry in process (contexts): CPU seconds
	per state by process kind, the browser processes' main threads apart."""
	from browser_use_mcp.catalog import Catalog
	from browser_use_mcp.config import load_config
	from browser_use_mcp.sessions import SessionRegistry
	from browser_use_mcp.tools.base import Call

	registry = SessionRegistry(dataclasses.replace(load_config(), isolation='context'))
	await registry.start()
	try:
		catalog = Catalog(registry)
		await catalog.call('browser_navigate', {'session_id': 'heavy', 'url': url}, Call())
		await catalog.call('browser_get_state', {'session_id': 'heavy'}, Call())
		before, threads_before = _cpu_by_kind()
		for _ in range(states):
			await catalog.call('browser_get_state', {'session_id': 'heavy'}, Call())
		after, threads_after = _cpu_by_kind()
	finally:
		await registry.shutdown()
	out: dict[str, float] = {}
	for pid, (kind, cpu) in after.items():
		out[kind] = out.get(kind, 0.0) + (cpu - before.get(pid, (kind, 0.0))[1]) / states
	main = sum(cpu - threads_before.get(key, 0.0) for key, cpu in threads_after.items() if key[0] == key[1])
	out['browser: its main thread'] = main / states
	return out


def run(args: argparse.Namespace) -> None:
	from benchmarks.common import table
	from benchmarks.corpus import PAGES, CorpusServer
	from browser_use_mcp.browser import find_chromium
	from browser_use_mcp.doctor import chromium_version

	page = next(p for p in PAGES if args.page in p.name)
	chromium = find_chromium() or 'chromium'
	version = chromium_version(chromium).split(' built')[0]
	if args.in_server:
		from benchmarks.common import run_in_scratch_home

		async def read() -> None:
			with CorpusServer() as corpus:
				result = await in_server(corpus.url + page.path, args.rounds)
			rows = [[kind, round(seconds * 1000)] for kind, seconds in sorted(result.items(), key=lambda kv: -kv[1])]
			title = f'CPU per browser_get_state by process, {page.name}, contexts, {version}, {args.rounds} states'
			print(table(title, ['process', 'CPU (ms)'], rows))

		run_in_scratch_home('bench-relay-', read)  # exits
	if args.pipes:
		with CorpusServer() as corpus:
			rows = []
			for _ in range(2):  # alternating: a busy machine hurts both modes alike
				for cbor in (False, True):
					rows += over_pipe(chromium, corpus.url + page.path, cbor, args.rounds)
		print(
			table(
				f"The browser process's main thread per tree over the DevTools pipe, JSON vs CBOR mode, {page.name}, {version}",
				[
					'answer',
					'pipe mode',
					'size (MB)',
					'main thread CPU (ms), each round',
					'wall (ms), each round',
					'decoded in Python (ms)',
				],
				[[r['request'], r['mode'], round(r['mb'], 1), r['ui_ms'], r['wall_ms'], r['decode_ms']] for r in rows],
			)
		)
		return
	with CorpusServer() as corpus:
		rows = asyncio.run(measure(corpus.url + page.path, args.rounds))
	print(
		table(
			f"The browser process's main thread per DevTools answer, {page.name}, {version}",
			['answer', 'JSON (MB)', 'main thread CPU (ms), each round', 'wall (ms), each round'],
			[[r['request'], round(r['mb'], 1), r['ui_ms'], r['wall_ms']] for r in rows],
		)
	)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
	parser = argparse.ArgumentParser(prog='python -m benchmarks.devtools_relay', description=__doc__)
	parser.add_argument('--page', default='python stdtypes', help='a corpus page, by (part of its) name')
	parser.add_argument('--rounds', type=int, default=3)
	parser.add_argument('--pipes', action='store_true', help='the trees over a DevTools pipe in JSON mode vs in CBOR mode')
	parser.add_argument(
		'--in-server', action='store_true', help='CPU per browser_get_state of the page by process, the server in process'
	)
	return parser.parse_args(argv)


if __name__ == '__main__':
	run(parse())
