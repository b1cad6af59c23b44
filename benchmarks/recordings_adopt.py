"""What adopting an earlier server's recordings costs at start:
``.venv/bin/python -m benchmarks.recordings_adopt [--counts 100,1000,5000]``.

For each count, a state dir holding that many closed recordings (each a meta.json, a 4-line
trace and one 20 KB screenshot; a tenth of them past the ttl, a tenth cut short by a "killed"
server), then ``Recordings.open`` + ``adopt`` as the registry runs them at start, timed, while a
ticker on the same event loop measures the longest the loop went without running it (the scan and
the deletions run in a thread; the insertion and the sweep run on the loop). Also the cost of one
meta.json write (made at each recording's start and close). Prints a markdown table; measurements,
never pass/fail.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from browser_use_mcp.recorder import META_FILE, Recordings

TTL = 3600.0


def fill(state_dir: Path, count: int) -> None:
	"""``count`` recordings as a stopped server leaves them (made with the real code, then aged)."""
	recordings = Recordings.open(state_dir, state_dir / 'scratch', ttl=TTL)
	now = time.time()
	shot = bytes(20_000)
	for i in range(count):
		rec = recordings.start(f'principal-{i % 20}', f'session-{i}')
		assert rec is not None
		for seq in range(1, 5):
			rec.line({'seq': seq, 'tool': 'browser_navigate', 'args': {'url': 'http://127.0.0.1/'}, 'ok': True})
		(rec.path / 'shot-00001.jpg').write_bytes(shot)
		rec.size += len(shot)
		if i % 10 != 1:  # a tenth left open: their server was killed
			rec.closed_at = now - (2 * TTL if i % 10 == 0 else 60)  # a tenth past the ttl
			rec.write_meta()
	recordings.release()


async def adopt(state_dir: Path) -> tuple[float, float, int]:
	"""(seconds to open and adopt, the loop's longest stall in seconds, recordings adopted)."""
	stall, last, done = 0.0, time.perf_counter(), False

	async def ticker() -> None:
		nonlocal stall, last
		while not done:
			await asyncio.sleep(0.001)
			now = time.perf_counter()
			stall, last = max(stall, now - last), now

	tick = asyncio.create_task(ticker())
	await asyncio.sleep(0.01)
	started = time.perf_counter()
	recordings = await asyncio.to_thread(Recordings.open, state_dir, state_dir / 'scratch', TTL, 10**12)
	kept = await recordings.adopt()
	elapsed = time.perf_counter() - started
	done = True
	await tick
	recordings.release()
	return elapsed, stall, kept


def meta_write_us(state_dir: Path, rounds: int = 500) -> float:
	recordings = Recordings.open(state_dir, state_dir / 'scratch')
	rec = recordings.start('p', 's')
	assert rec is not None
	started = time.perf_counter()
	for _ in range(rounds):
		rec.write_meta()
	elapsed = (time.perf_counter() - started) / rounds
	recordings.release()
	assert (rec.path / META_FILE).is_file()
	return elapsed * 1e6


def main() -> None:
	parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
	parser.add_argument('--counts', default='100,1000,5000')
	ns = parser.parse_args()
	rows = []
	for count in (int(c) for c in ns.counts.split(',')):
		with tempfile.TemporaryDirectory(prefix='bench-adopt-') as tmp:
			state_dir = Path(tmp) / 'state'
			fill(state_dir, count)
			elapsed, stall, kept = asyncio.run(adopt(state_dir))
			rows.append((count, kept, elapsed * 1000, stall * 1000))
	print('| recordings on disk | adopted (past ttl deleted) | open + adopt, ms | longest loop stall, ms |')
	print('|---:|---:|---:|---:|')
	for count, kept, ms, stall_ms in rows:
		print(f'| {count} | {kept} | {ms:.0f} | {stall_ms:.1f} |')
	with tempfile.TemporaryDirectory(prefix='bench-meta-') as tmp:
		print(f'\none meta.json write (start and close of each recording): {meta_write_us(Path(tmp) / "state"):.0f} µs')


if __name__ == '__main__':
	main()
