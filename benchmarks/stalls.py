"""Where the event loop is when it stalls: a sampler for in-process benchmarks.

A loop-lag probe says how late the loop is, not why. ``StallSampler`` keeps a heartbeat on the
loop (a callback every ``beat`` s) and a watcher thread that, whenever the heartbeat is more
than ``over_ms`` late, samples the stack of every thread of the process (``sys._current_frames``):
the loop thread's says what the loop was doing (or just finished: a C call holding the GIL is seen
as it returns), the others' say which thread held the interpreter meanwhile (threads waiting in
a lock, a queue or a selector are left out as idle). ``report()`` gives the most sampled places,
each as its innermost frame and the innermost frame of this package or browser-use below it, with
the milliseconds sampled there. The watcher needs the GIL to sample, so a stall caused by one C
call is seen at most once, at its end: counts are where stalls were seen, not a profile.
"""

from __future__ import annotations

import asyncio
import collections
import sys
import threading
import time
from types import FrameType

IDLE = ('threading.py:wait', 'queue.py:get', 'selectors.py:select', 'thread.py:_worker', 'connection.py:_recv')
OURS = ('browser_use_mcp', 'browser_use', 'cdp_use', 'benchmarks')


def _place(frame: FrameType) -> str:
	path = frame.f_code.co_filename
	return f'{"/".join(path.split("/")[-2:])}:{frame.f_code.co_name}:{frame.f_lineno}'


def where(frame: FrameType) -> str:
	"""The innermost frame and, when it is not ours, the innermost one of ours below it."""
	inner = _place(frame)
	walk: FrameType | None = frame
	while walk is not None:
		if any(f'/{name}/' in walk.f_code.co_filename for name in OURS):
			ours = _place(walk)
			return inner if ours == inner else f'{inner} < {ours}'
		walk = walk.f_back
	return inner


class StallSampler:
	def __init__(self, over_ms: float = 15.0, every_ms: float = 2.0, beat: float = 0.002) -> None:
		self.over = over_ms / 1000
		self.every = every_ms / 1000
		self.beat_period = beat
		self.loop_samples: collections.Counter[str] = collections.Counter()
		self.other_samples: collections.Counter[str] = collections.Counter()
		self.sampled = 0
		self._beat = 0.0
		self._stop = threading.Event()
		self._thread: threading.Thread | None = None
		self._handle: asyncio.TimerHandle | None = None
		self._loop_thread = 0

	def __enter__(self) -> StallSampler:
		loop = asyncio.get_running_loop()
		self._loop_thread = threading.get_ident()

		def tick() -> None:
			self._beat = time.perf_counter()
			self._handle = loop.call_later(self.beat_period, tick)

		tick()
		self._stop.clear()
		self._thread = threading.Thread(target=self._watch, name='stall-sampler', daemon=True)
		self._thread.start()
		return self

	def __exit__(self, *exc: object) -> None:
		self._stop.set()
		if self._thread is not None:
			self._thread.join()
		if self._handle is not None:
			self._handle.cancel()

	def _watch(self) -> None:
		me = threading.get_ident()
		while not self._stop.wait(self.every):
			if time.perf_counter() - self._beat <= self.over:
				continue
			self.sampled += 1
			for tid, frame in sys._current_frames().items():
				if tid == me:
					continue
				place = where(frame)
				if tid == self._loop_thread:
					self.loop_samples[place] += 1
				elif not any(idle in place.split(' < ')[0] for idle in IDLE):
					self.other_samples[place] += 1

	def report(self, top: int = 12) -> str:
		ms = self.every * 1000
		lines = [f'stalls over {self.over * 1000:.0f} ms: {self.sampled} samples, one every {ms:.0f} ms while stalled']
		for title, counter in (('loop thread', self.loop_samples), ('other threads, not idle', self.other_samples)):
			lines.append(f'  {title}:')
			for place, count in counter.most_common(top):
				lines.append(f'    {count * ms:7.0f} ms  {place}')
		return '\n'.join(lines)
