"""Per-event-bus locks, so one session's slow page never stalls another session.

Why: bubus 1.5.6 (the event bus browser-use pins) runs every ``EventBus.step`` of every bus in
the process under one process-wide re-entrant lock (``_get_global_lock``). Each
``BrowserSession`` has its own bus, yet while session A's navigation handler waits for a slow
server, session B's events queue up behind it: a 0.08 s navigation in B took as long as A's
page. The lock exists so that a handler which awaits a child event can process queued events
itself (``BaseEvent.__await__``'s nested loop) without a second consumer running them too.
That guarantee is needed per bus, not per process.

What it changes, and nothing else:

- ``EventBus.step`` takes a lock of *its own bus* instead of the global one. The lock keeps
  bubus's semantics: re-entrant for every context that already holds it (handler tasks inherit
  the holder's context), exclusive otherwise.
- ``BaseEvent.__await__``'s nested loop (a handler awaiting an event that is not finished yet)
  processes queued events only of the buses whose lock the awaiting context holds. Processing
  any other bus's queue would run that bus's events beside the context that holds its lock.
- A bus's run loop starts with no locks held, even when it was started from inside another
  bus's handler (it would otherwise inherit that handler's locks through its context).

It must be applied before any session starts: a bus mid-step under the global lock would
otherwise release a lock it never took. See docs/architecture.md, "Parallel sessions", for the
measurements behind this choice.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import weakref
from collections.abc import Callable, Generator
from typing import Any

from browser_use_mcp.patches import Patch, Saved

logger = logging.getLogger(__name__)

BUBUS_VERSION = '1.5.6'

# Locks of the buses the current context holds (inherited by tasks created in it, like bubus's
# own ``holds_global_lock``).
_held: contextvars.ContextVar[frozenset[BusLock]] = contextvars.ContextVar('browser_use_mcp_held_bus_locks', default=frozenset())
# The bus whose ``step`` is running in this context: tells the patched ``_get_global_lock``
# (called by ``step`` without arguments) whose lock to return.
_stepping: contextvars.ContextVar[Any] = contextvars.ContextVar('browser_use_mcp_stepping_bus', default=None)

_locks: weakref.WeakKeyDictionary[Any, BusLock] = weakref.WeakKeyDictionary()
_saved = Saved()


class BusLock:
	"""bubus's ``ReentrantLock``, but one per bus, with membership kept in a context variable."""

	def __init__(self, bus: Any) -> None:
		self.bus = weakref.ref(bus)
		self._semaphore: asyncio.Semaphore | None = None
		self._loop: asyncio.AbstractEventLoop | None = None
		self._depth = 0

	def _get_semaphore(self) -> asyncio.Semaphore:
		loop = asyncio.get_running_loop()
		if self._semaphore is None or self._loop is not loop:
			self._semaphore = asyncio.Semaphore(1)
			self._loop = loop
		return self._semaphore

	def held(self) -> bool:
		return self in _held.get()

	async def __aenter__(self) -> BusLock:
		held = _held.get()
		if self in held:
			self._depth += 1
			return self
		await self._get_semaphore().acquire()
		_held.set(held | {self})
		self._depth = 1
		return self

	async def __aexit__(self, *exc: object) -> None:
		held = _held.get()
		if self not in held:
			return
		self._depth -= 1
		if self._depth == 0:
			_held.set(held - {self})
			self._get_semaphore().release()

	def locked(self) -> bool:
		try:
			loop = asyncio.get_running_loop()
		except RuntimeError:
			return False
		return self._semaphore is not None and self._loop is loop and self._semaphore.locked()


def lock_for(bus: Any) -> BusLock:
	lock = _locks.get(bus)
	if lock is None:
		lock = _locks[bus] = BusLock(bus)
	return lock


def held_buses() -> list[Any]:
	"""The buses whose lock the current context holds."""
	return [bus for bus in (lock.bus() for lock in _held.get()) if bus is not None]


# -- the replacements ----------------------------------------------------------------------------


def _get_bus_lock() -> Any:
	"""Stands in for ``bubus.service._get_global_lock``; ``step`` is its only caller."""
	bus = _stepping.get()
	if bus is None:  # an unexpected caller: give it what it asked for
		import bubus.service as service

		return _saved.original(service, '_get_global_lock')()
	return lock_for(bus)


def _make_step(original: Callable[..., Any]) -> Callable[..., Any]:
	async def step(self: Any, event: Any = None, timeout: float | None = None, wait_for_timeout: float = 0.1) -> Any:
		token = _stepping.set(self)
		try:
			return await original(self, event, timeout, wait_for_timeout)
		finally:
			_stepping.reset(token)

	step.__doc__ = original.__doc__
	step.__wrapped__ = original  # type: ignore[attr-defined]
	return step


def _make_run_loop(original: Callable[..., Any]) -> Callable[..., Any]:
	async def _run_loop(self: Any) -> None:
		# This task's context was copied from whoever first dispatched to the bus, possibly a
		# handler of another bus; a run loop must not act as if it held that bus's lock.
		_held.set(frozenset())
		await original(self)

	_run_loop.__doc__ = original.__doc__
	_run_loop.__wrapped__ = original  # type: ignore[attr-defined]
	return _run_loop


IDLE_POLL = 0.005  # s between looks at our own queues while another consumer finishes the event
MAX_INLINE_EVENTS = 1000  # as bubus: bound the events one await may process before just waiting


def _event_await(self: Any) -> Generator[Any, Any, Any]:
	"""``await event``: inside a handler, run our own buses' queued events until it completes."""

	async def wait_for_handlers_to_complete_then_return_event() -> Any:
		from bubus.service import inside_handler_context

		done = self.event_completed_signal
		assert done is not None
		buses = held_buses() if not done.is_set() and inside_handler_context.get() else []
		if not buses:
			await done.wait()
			return self
		processed = 0
		waiter: asyncio.Future[Any] | None = None
		try:
			while not done.is_set():
				progressed = False
				for bus in buses:
					queue = bus.event_queue
					if queue is None or queue.qsize() == 0:
						continue
					try:
						event = queue.get_nowait()
					except asyncio.QueueEmpty:
						continue
					await bus.process_event(event)
					queue.task_done()
					processed += 1
					progressed = True
					if done.is_set():
						break
				if done.is_set():
					break
				if processed >= MAX_INLINE_EVENTS:
					await done.wait()
					break
				if not progressed:
					# The event is not in a queue we may run (another bus's consumer has it, or
					# it is in flight): wait for it, looking at our queues now and then in case
					# it waits on something queued there.
					if waiter is None:
						waiter = asyncio.ensure_future(done.wait())
					await asyncio.wait({waiter}, timeout=IDLE_POLL)
		finally:
			if waiter is not None and not waiter.done():
				waiter.cancel()
		return self

	return wait_for_handlers_to_complete_then_return_event().__await__()


# -- the patch -----------------------------------------------------------------------------------


def _apply() -> None:
	import bubus.models as models
	import bubus.service as service

	_saved.replace(service, '_get_global_lock', _get_bus_lock)
	_saved.replace(service.EventBus, 'step', _make_step(service.EventBus.__dict__['step']))
	_saved.replace(service.EventBus, '_run_loop', _make_run_loop(service.EventBus.__dict__['_run_loop']))
	_saved.replace(models.BaseEvent, '__await__', _event_await)


def _revert() -> None:
	_saved.restore()


def _checks() -> list[str]:
	from bubus.service import EventBus, inside_handler_context

	if not isinstance(inside_handler_context, contextvars.ContextVar) or not hasattr(EventBus, 'process_event'):
		return ['bubus.service.inside_handler_context or EventBus.process_event is not what it was']
	return []


PATCH = Patch(
	name='bus_locks',
	title='a lock per event bus',
	changes="bubus's process-wide event lock becomes one lock per event bus (``EventBus.step``, "
	"``_get_global_lock``, ``_run_loop``); an awaited event's nested loop runs only its own buses' queues.",
	why="each session has its own bus, yet under one process-wide lock a session's slow page held up every other "
	"session's events: B's 70 ms navigation took 3.8 s while A loaded a 4 s page; 77 ms with the patch.",
	package='bubus',
	versions=(BUBUS_VERSION,),
	sources={
		'bubus.service:EventBus.step': '4390a8f432470a87',
		'bubus.service:EventBus._run_loop': '9a01f8733b211e49',
		'bubus.service:ReentrantLock': 'e8f756da69b3a0d5',
		'bubus.service:_get_global_lock': '809dddf51e1e742d',
		'bubus.models:BaseEvent.__await__': '932ee39cfaa33725',
	},
	replaces=(
		'bubus.service:_get_global_lock',
		'bubus.service:EventBus.step',
		'bubus.service:EventBus._run_loop',
		'bubus.models:BaseEvent.__await__',
	),
	switch='parallel_event_buses',
	when_refused="bubus's own process-wide lock: sessions process their browser events one at a time, so a slow "
	'page in one session stalls the others',
	apply=_apply,
	revert=_revert,
	checks=_checks,
	logger=logger.name,
	active_message=f'per-session event buses enabled (bubus {BUBUS_VERSION}): sessions process browser events in parallel',
	off_message='per-session event buses disabled by configuration: sessions process browser events one at a time',
	refused_message='parallel sessions disabled, keeping bubus global event lock (sessions will wait on each other)',
)
