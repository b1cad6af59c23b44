"""Renderers that keep a core busy yield to those that wake for a moment: light sessions first.

Why: every browser of ours runs below the server's event loop (``processes.yield_to_the_server``),
all of a shared Chromium's processes as equals. A session reading a heavy page in a loop keeps its
renderer busy (python stdtypes: ~0.7 of a core); a light session's calls wake its own renderer and
the browser process for a millisecond or two at a time, and on two cores they wait behind the busy
renderer for their share of the core. Measured (Chromium 156, light get_state beside stdtypes in a
loop, p50 against alone): 1.36-1.58× as shipped, 1.18-1.22× with the busy renderer at niceness 19.

What: every ``INTERVAL`` s, in a thread, the watch reads each process of the Chromiums it was given
from ``/proc`` (their process groups: each Chromium of ours leads its own) and the CPU time of
their renderers. A renderer that used more than ``BUSY`` of a core over ``BUSY_LOOKS`` looks in a
row gets ``nice`` on every one of its threads; once it has used less for ``CALM_LOOKS`` looks in a
row it gets back the niceness it had. In a Chromium of one session (``--isolation browser`` and the
default session), which is an autogroup of its own, the scheduler weighs the autogroup, not its
processes: there the Chromium's autogroup is lowered instead, while its renderers are busy. The
page-state worker (``offload_state``), an autogroup of its own at niceness 10, is watched the same
way once it has started: while it builds large states one after another, it yields too.

Only the share of a contended core changes: a busy renderer alone still gets every idle cycle,
and several busy ones share as equals. Linux only; a system that refuses a niceness keeps it as it
was. ``BROWSER_USE_MCP_BUSY_RENDERER_NICE=0`` turns it off.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

import psutil

from browser_use_mcp.processes import chromium_kind, gone, leads_its_session, set_autogroup

logger = logging.getLogger(__name__)

INTERVAL = 0.5  # s between looks
BUSY = 0.5  # share of a core, over a look, from which a renderer is busy
BUSY_LOOKS = 2  # busy looks in a row before it yields (a page load's burst does not)
CALM_LOOKS = 2  # calm looks in a row before it gets its niceness back
_TICKS = os.sysconf('SC_CLK_TCK') if hasattr(os, 'sysconf') else 100


@dataclass
class _Process:
	"""One process of a watched Chromium, as the last look saw it."""

	started: int  # its start time in ticks (a pid reused by another process is another one)
	renderer: bool
	cpu: int = 0  # utime + stime, ticks
	busy: int = 0  # busy looks in a row
	calm: int = 0  # calm looks in a row
	base: dict[int, int] | None = None  # each thread's niceness before it yielded; None: it has not


@dataclass
class _Browser:
	chromium: Any  # a ChromiumProcess, or a _Process_of (alive())
	shared: bool  # a shared Chromium (contexts): its renderers yield one by one; else its autogroup does
	whole: bool = False  # every process of the group counts (the page-state worker), not only renderers
	base: int | None = None  # its autogroup's niceness before it yielded (not shared); None: it has not
	busy: int = 0
	calm: int = 0


class BusyWatch:
	"""The server's one watch (``WATCH``): Chromiums are added as their first session starts."""

	def __init__(self) -> None:
		self.nice = 19  # what a busy renderer gets; 0: off
		self._browsers: dict[int, _Browser] = {}  # leader pid -> browser
		self._seen: dict[int, _Process] = {}  # pid -> process, of the watched groups
		self._lock = threading.Lock()
		self._looking = threading.Lock()  # held for a whole look (in its thread), and by stop
		self._task: asyncio.Task[None] | None = None
		self._looked = 0.0  # monotonic time of the last look
		self.yielded = 0  # times a renderer (or a Chromium's autogroup) yielded, since start

	def configure(self, nice: int) -> None:
		self.nice = nice
		self.yielded = 0

	def add(self, chromium: Any, shared: bool) -> None:
		"""Watch ``chromium`` (a ChromiumProcess whose pid leads its process group)."""
		if self.nice <= 0 or not sys.platform.startswith('linux'):
			return
		with self._lock:
			self._browsers[chromium.pid] = _Browser(chromium, shared)
		self._ensure_task()

	def _ensure_task(self) -> None:
		try:
			loop = asyncio.get_running_loop()
		except RuntimeError:  # no loop here: nothing to watch with
			return
		if self._task is None or self._task.done() or self._task.get_loop() is not loop:  # (a loop since closed)
			self._task = loop.create_task(self._run(), name='busy-renderers')

	def add_process(self, pid: int) -> None:
		"""Watch a process that leads its own session (the page-state worker): its autogroup yields
		while it keeps a core busy, as a Chromium of one session's does."""
		if self.nice <= 0 or not sys.platform.startswith('linux'):
			return
		with self._lock:
			if pid in self._browsers:
				return
		if not leads_its_session(pid):
			return
		with contextlib.suppress(psutil.Error), self._lock:
			self._browsers.setdefault(pid, _Browser(_Process_of(psutil.Process(pid)), shared=False, whole=True))
		self._ensure_task()

	def stop(self) -> None:
		"""Stop watching, and give back every niceness lowered: the page-state worker outlives the
		registry that watched it (in process, a later one finds it as it was)."""
		if self._task is not None:
			self._task.cancel()
			self._task = None
		with self._looking:  # a look in flight (its thread goes on after the cancel) ends first: a few ms
			with self._lock:
				groups = dict(self._browsers)
			self._restore_all(groups)
			with self._lock:
				self._browsers.clear()
				self._seen.clear()

	def lowered(self) -> list[int]:
		"""The pids of the renderers (and Chromium leaders, for their autogroup) lowered now."""
		with self._lock:
			renderers = [pid for pid, p in self._seen.items() if p.base is not None]
			return sorted(renderers + [pid for pid, b in self._browsers.items() if b.base is not None])

	async def _run(self) -> None:
		while True:
			await asyncio.sleep(INTERVAL)
			with self._lock:
				if not self._browsers:
					return
			try:
				await asyncio.to_thread(self.look)
			except Exception:  # never the server's problem: the next look tries again
				logger.debug('busy renderers: a look failed', exc_info=True)

	def look(self) -> None:
		"""One look (in a thread): measure every watched renderer, lower the busy, restore the calm."""
		with self._looking:
			self._look()

	def _look(self) -> None:
		with self._lock:
			for leader, browser in list(self._browsers.items()):
				if not browser.chromium.alive():
					del self._browsers[leader]
			groups = dict(self._browsers)
		if self.nice <= 0:  # switched off since (a benchmark's comparison): everything back as it was
			self._restore_all(groups)
			return
		stats = _read_groups(set(groups))
		now = time.monotonic()
		limit = BUSY * _TICKS * (now - self._looked if self._looked else INTERVAL)
		self._looked = now
		seen: dict[int, _Process] = {}
		busy_groups: set[int] = set()
		for pid, (group, started, cpu) in stats.items():
			known = self._seen.get(pid)
			if known is None or known.started != started:
				known = _Process(started, _is_renderer(pid), cpu)
				seen[pid] = known
				continue
			used, known.cpu = cpu - known.cpu, cpu
			seen[pid] = known
			if not (known.renderer or groups[group].whole):
				continue
			if used > limit:
				known.busy, known.calm = known.busy + 1, 0
				busy_groups.add(group)
			else:
				known.busy, known.calm = 0, known.calm + 1
			if groups[group].shared:
				self._settle(pid, known)
		for leader, browser in groups.items():
			if not browser.shared:
				self._settle_group(leader, browser, leader in busy_groups)
		with self._lock:
			self._seen = seen

	def _restore_all(self, groups: dict[int, _Browser]) -> None:
		for pid, process in self._seen.items():
			if process.base is not None:
				_restore_threads(pid, process.base)
				process.base = None
		for leader, browser in groups.items():
			if browser.base is not None:
				set_autogroup(leader, browser.base)
				browser.base = None

	def _settle(self, pid: int, process: _Process) -> None:
		if process.base is None and process.busy >= BUSY_LOOKS:
			base = _niceness(pid)
			if base is not None and base < self.nice and can_restore(self.nice, base):
				before = _renice_threads(pid, self.nice)
				if before:
					process.base = before
					self.yielded += 1
		elif process.base is not None and process.calm >= CALM_LOOKS:
			_restore_threads(pid, process.base)
			process.base = None

	def _settle_group(self, leader: int, browser: _Browser, busy: bool) -> None:
		browser.busy, browser.calm = (browser.busy + 1, 0) if busy else (0, browser.calm + 1)
		if browser.base is None and browser.busy >= BUSY_LOOKS:
			if not leads_its_session(leader):  # its autogroup would be the server's
				return
			base = autogroup_nice(leader)
			if base is not None and base < self.nice and set_autogroup(leader, self.nice):
				browser.base = base
				self.yielded += 1
		elif browser.base is not None and browser.calm >= CALM_LOOKS:
			set_autogroup(leader, browser.base)
			browser.base = None


WATCH = BusyWatch()


class _Process_of:  # noqa: N801
	"""A watched process that is not a Chromium of ours (what ``look`` asks of one)."""

	def __init__(self, proc: psutil.Process) -> None:
		self.pid, self._proc = proc.pid, proc

	def alive(self) -> bool:
		return not gone(self._proc)


@functools.cache
def can_restore(lowered: int, base: int) -> bool:
	"""Whether this server may give a thread its niceness ``base`` back once it is at ``lowered``: going
	down needs CAP_SYS_NICE or a high enough RLIMIT_NICE, which many servers do not have (a renderer
	lowered for good would stay behind the others). Tried once, on a thread of its own."""
	result: list[bool] = []

	def probe() -> None:
		tid = threading.get_native_id()
		try:
			os.setpriority(os.PRIO_PROCESS, tid, lowered)
			os.setpriority(os.PRIO_PROCESS, tid, base)
			result.append(True)
		except OSError:
			result.append(False)

	thread = threading.Thread(target=probe, name='busy-renderers-probe', daemon=True)
	thread.start()
	thread.join(5)
	if not (result and result[0]):
		logger.info(
			'renderers that keep a core busy are not lowered: this server could not raise their priority again '
			'(CAP_SYS_NICE or RLIMIT_NICE >= %d needed)',
			20 - base,
		)
	return bool(result and result[0])


def _read_groups(groups: set[int]) -> dict[int, tuple[int, int, int]]:
	"""pid -> (process group, start time, utime + stime) of every process in ``groups``."""
	found: dict[int, tuple[int, int, int]] = {}
	if not groups:
		return found
	with contextlib.suppress(OSError), os.scandir('/proc') as entries:
		for entry in entries:
			if not entry.name.isdigit():
				continue
			try:
				with open(f'/proc/{entry.name}/stat', 'rb') as f:
					stat = f.read()
			except OSError:
				continue
			fields = stat[stat.rfind(b')') + 2 :].split()
			try:
				group = int(fields[2])
				if group in groups:
					found[int(entry.name)] = (group, int(fields[19]), int(fields[11]) + int(fields[12]))
			except (IndexError, ValueError):
				continue
	return found


def _is_renderer(pid: int) -> bool:
	"""Whether ``pid``'s command line says ``--type=renderer`` (NUL-separated, or space-separated
	once a zygote's child has set its title)."""
	try:
		with open(f'/proc/{pid}/cmdline', 'rb') as f:
			words = f.read().replace(b'\0', b' ').decode(errors='replace').split()
	except OSError:
		return False
	return chromium_kind(words) == 'renderer'


def _niceness(pid: int) -> int | None:
	try:
		return os.getpriority(os.PRIO_PROCESS, pid)
	except OSError:
		return None


def _threads(pid: int) -> list[int]:
	try:
		return [int(tid) for tid in os.listdir(f'/proc/{pid}/task')]
	except (OSError, ValueError):
		return []


def _renice_threads(pid: int, nice: int) -> dict[int, int]:
	"""Every thread of ``pid`` at ``nice`` (a process's niceness is its threads'): each thread's
	niceness before, of those that took it (Chromium sets some of its threads' itself)."""
	before = {}
	for tid in _threads(pid):
		with contextlib.suppress(OSError):
			was = os.getpriority(os.PRIO_PROCESS, tid)
			os.setpriority(os.PRIO_PROCESS, tid, nice)
			before[tid] = was
	return before


def _restore_threads(pid: int, before: dict[int, int]) -> None:
	"""Each thread of ``pid`` back at its niceness in ``before``; one started since, at its process's."""
	default = before.get(pid, min(before.values(), default=0))
	for tid in _threads(pid):
		with contextlib.suppress(OSError):
			os.setpriority(os.PRIO_PROCESS, tid, before.get(tid, default))


def autogroup_nice(pid: int) -> int | None:
	"""The niceness of ``pid``'s autogroup (``/proc/PID/autogroup``: "/autogroup-N nice K")."""
	try:
		with open(f'/proc/{pid}/autogroup') as f:
			return int(f.read().split()[-1])
	except (OSError, ValueError, IndexError):
		return None
