"""Pre-launched browsers, so a new session starts in milliseconds instead of seconds.

Starting a session means launching Chromium and connecting browser-use to it: about a second of
Chromium and more of browser-use on this kind of machine, most of it CPU. With ``--prewarm N`` the
registry keeps N browsers launched with fresh temporary profiles; a new (temporary-profile)
session takes one and the pool launches a replacement in the background.

Pooled browsers are spare capacity, not sessions, but they cost the same memory, so they count
against the same cap: pooled plus live sessions never exceed ``--max-sessions``, and the pool
does not refill while the machine's available memory is low. They carry the same owner marker
as session browsers (a crashed server's pool is swept at the next start) and are closed at
shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import psutil

from browser_use_mcp.browser import SessionDirs
from browser_use_mcp.providers import Browser
from browser_use_mcp.tasks import held

logger = logging.getLogger('browser_use_mcp.pool')

LOW_MEMORY_BYTES = 1 << 30  # don't launch spares when less than this is available
RECHECK_INTERVAL = 1.0  # s between looks at capacity and memory when nothing pokes the pool
FAILURE_BACKOFF = 5.0  # s to wait after a launch failed before trying again


@dataclass
class Spare:
	"""A launched browser and the fresh directories it runs on."""

	dirs: SessionDirs
	browser: Browser

	async def discard(self) -> None:
		"""Close the browser and delete its directories: a spare (or a new session) nobody will use."""
		await self.browser.close()
		await asyncio.to_thread(self.dirs.remove)


def warm_up() -> None:
	"""Import and exercise what a new session builds besides its browser (browser-use's tools
	take seconds to import and their first instance ~0.3 s), so a session taken from the pool
	does not pay for it."""
	from browser_use.filesystem.file_system import FileSystem  # noqa: F401
	from browser_use.tools.service import Tools

	Tools()


def memory_available() -> int:
	return psutil.virtual_memory().available


class BrowserPool:
	"""Keeps up to ``size`` launched browsers ready for new sessions."""

	def __init__(
		self,
		size: int,
		*,
		new_dirs: Callable[[], SessionDirs],
		launch: Callable[[SessionDirs], Awaitable[Browser]],
		room: Callable[[], int],
		memory: Callable[[], int] = memory_available,
		low_memory: int = LOW_MEMORY_BYTES,
	) -> None:
		"""``room()`` says how many more browsers the session cap allows (live sessions excluded)."""
		self.size = size
		self._new_dirs = new_dirs
		self._launch = launch
		self._room = room
		self._memory = memory
		self._low_memory = low_memory
		self._ready: deque[Spare] = deque()
		self._launching: deque[asyncio.Task[Spare]] = deque()
		self._awaited: set[asyncio.Task[Spare]] = set()  # launches a claimant is waiting for
		self._poke = asyncio.Event()
		self._filler: asyncio.Task[None] | None = None
		self._closed = False
		self._low = False
		self._closing: set[asyncio.Task[None]] = set()
		self.handed_out = 0

	@property
	def ready(self) -> int:
		return len(self._ready)

	@property
	def pending(self) -> int:
		"""Browsers held or being launched: what the pool counts against the cap."""
		return len(self._ready) + len(self._launching)

	def start(self) -> None:
		if self.size > 0 and self._filler is None:
			self._filler = asyncio.create_task(self._fill_forever(), name='browser-pool')

	# -- handing out -------------------------------------------------------------------------

	async def claim(self) -> Spare | None:
		"""A launched browser (and its directories) for a new session, or None (then launch cold).
		The caller owns what it gets: it must close it if it does not use it.

		A launch already under way is awaited rather than duplicated: it is further along than
		a cold start, and starting another would exceed the cap.
		"""
		while not self._closed:
			if self._ready:
				spare = self._ready.popleft()
			elif self._launching:
				task = self._launching.popleft()
				self._awaited.add(task)
				try:
					spare = await asyncio.shield(task)
				except asyncio.CancelledError:
					if not task.done():  # we were cancelled, not the launch: keep its browser
						task.add_done_callback(self._adopt)
					raise
				except Exception:
					continue
				finally:
					self._awaited.discard(task)
			else:
				return None
			if not spare.browser.alive():
				await spare.discard()
				continue
			self.handed_out += 1
			self._poke.set()
			return spare
		return None

	def _adopt(self, task: asyncio.Task[Spare]) -> None:
		"""A launch whose claimant gave up: back into the pool (or closed, if the pool is)."""
		if task.cancelled() or task.exception() is not None:
			return
		spare = task.result()
		if self._closed:
			self._spawn_close(spare)
		else:
			self._ready.append(spare)

	# -- filling -----------------------------------------------------------------------------

	def _wanted(self) -> int:
		return max(0, min(self.size, self._room()) - self.pending)

	async def _fill_forever(self) -> None:
		with contextlib.suppress(Exception):
			await asyncio.to_thread(warm_up)
		while not self._closed:
			self._poke.clear()
			await self._prune()
			wanted = self._wanted()
			low = bool(wanted) and self._memory() < self._low_memory
			if low and not self._low:
				logger.warning('browser pool paused: only %d MB of memory available', self._memory() >> 20)
			self._low = low
			if low:
				wanted = 0
			failed = False
			if wanted:
				# one at a time: launches compete for CPU with the sessions in use
				task = asyncio.create_task(self._launch_spare(), name='browser-pool-launch')
				self._launching.append(task)
				try:
					spare = await asyncio.shield(task)
				except asyncio.CancelledError:
					raise
				except Exception as exc:
					failed = True
					logger.warning('browser pool: launching a spare browser failed: %s', exc)
				else:
					if task in self._launching:  # not claimed while launching
						self._launching.remove(task)
						self._ready.append(spare)
				finally:
					if task in self._launching and task.done():
						self._launching.remove(task)
				if not failed:
					continue
			with contextlib.suppress(TimeoutError):
				await asyncio.wait_for(self._poke.wait(), FAILURE_BACKOFF if failed else RECHECK_INTERVAL)

	async def _launch_spare(self) -> Spare:
		dirs = self._new_dirs()
		try:
			browser = await self._launch(dirs)
		except BaseException:
			await asyncio.to_thread(dirs.remove)
			raise
		return Spare(dirs, browser)

	async def _prune(self) -> None:
		"""Drop spares whose browser died while waiting, and spares beyond what the cap allows."""
		for spare in [s for s in self._ready if not s.browser.alive()]:
			self._ready.remove(spare)
			await spare.discard()
		excess = self.pending - min(self.size, max(0, self._room()))
		while excess > 0 and self._ready:
			await self._ready.pop().discard()
			excess -= 1

	def _spawn_close(self, spare: Spare) -> None:
		held(asyncio.get_running_loop().create_task(spare.discard()), self._closing)

	# -- shutdown ----------------------------------------------------------------------------

	async def close(self) -> None:
		"""Close every spare and stop refilling. Idempotent; never raises."""
		self._closed = True
		if self._filler is not None:
			self._filler.cancel()
			with contextlib.suppress(asyncio.CancelledError, Exception):
				await self._filler
		launching = [*self._launching, *self._awaited]
		self._launching.clear()
		for task in launching:
			task.cancel()
		results = await asyncio.gather(*launching, return_exceptions=True)
		spares = [r for r in results if isinstance(r, Spare)] + list(self._ready)
		self._ready.clear()
		await asyncio.gather(*(s.discard() for s in spares), *self._closing, return_exceptions=True)
