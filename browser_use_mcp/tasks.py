"""Which asyncio tasks belong to which browser, so closing a session ends every one of them.

browser-use starts background tasks that outlive the call that started them (event-bus run
loops, the storage-state monitor, CDP readers, watchdog timers) and does not stop all of them
when its session is reset: a closed session's storage monitor kept logging "CDP client not
initialized" once a minute until the server stopped. Rather than chase each one, every task
is recorded with the browser it was started for: a ``TaskScope`` is entered while a browser
is launched and while a tool call runs in its session, and a task factory on the event loop
adds each new task to the scope of the context it was created in. Tasks inherit their
creator's context, so everything those tasks start is recorded too. Closing the browser
cancels what is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
import weakref
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

logger = logging.getLogger(__name__)
T = TypeVar('T')

_scope: contextvars.ContextVar[TaskScope | None] = contextvars.ContextVar('browser_use_mcp_task_scope', default=None)


class TaskScope:
	"""The tasks started on behalf of one browser (held weakly: finished tasks just vanish)."""

	def __init__(self) -> None:
		self._tasks: weakref.WeakSet[asyncio.Task[Any]] = weakref.WeakSet()

	@contextlib.contextmanager
	def entered(self) -> Iterator[TaskScope]:
		"""Tasks created in this context from now on (and the tasks they create) belong here."""
		token = _scope.set(self)
		try:
			yield self
		finally:
			_scope.reset(token)

	def add(self, task: asyncio.Task[Any]) -> None:
		self._tasks.add(task)

	def alive(self) -> list[asyncio.Task[Any]]:
		return [t for t in list(self._tasks) if not t.done()]

	async def cancel_all(self, timeout: float = 2.0) -> list[asyncio.Task[Any]]:
		"""Cancel every live task of this scope but the caller's; return those still running after ``timeout``."""
		me = asyncio.current_task()
		doomed = [t for t in self.alive() if t is not me]
		for task in doomed:
			task.cancel()
		if doomed:
			await asyncio.wait(doomed, timeout=timeout)
		return [t for t in doomed if not t.done()]


def held(task: asyncio.Task[T], into: set[asyncio.Task[Any]]) -> asyncio.Task[T]:
	"""``task``, kept in ``into`` until it is done (the loop holds its tasks only weakly, and the set
	is what a shutdown waits for or cancels); a failure is logged as it ends, with the task's name,
	not whenever the task happens to be collected."""
	into.add(task)
	task.add_done_callback(functools.partial(_let_go, into))
	return task


def _let_go(into: set[asyncio.Task[Any]], task: asyncio.Task[Any]) -> None:
	into.discard(task)
	if not task.cancelled() and (exc := task.exception()) is not None:
		logger.error('background task %s failed', task.get_name(), exc_info=exc)


def current_scope() -> TaskScope | None:
	return _scope.get()


@contextlib.contextmanager
def outside_scopes() -> Iterator[None]:
	"""Tasks created here belong to no browser: for what outlives any one session (a shared
	browser, the websocket server its sessions connect through)."""
	token = _scope.set(None)
	try:
		yield
	finally:
		_scope.reset(token)


def leave_scope() -> None:
	"""From here on, tasks this context creates belong to no browser (for a context that closes one)."""
	_scope.set(None)


def install(loop: asyncio.AbstractEventLoop | None = None) -> None:
	"""Record new tasks of this loop in their creator's scope. Idempotent; chains any factory already set."""
	loop = loop or asyncio.get_running_loop()
	previous = loop.get_task_factory()
	if getattr(previous, '_browser_use_mcp_scoped', False):
		return

	def factory(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any], **kwargs: Any) -> asyncio.Future[Any]:
		task = previous(loop, coro, **kwargs) if previous is not None else asyncio.Task(coro, loop=loop, **kwargs)
		context = kwargs.get('context')
		scope = context.get(_scope) if context is not None else _scope.get()
		if scope is not None and isinstance(task, asyncio.Task):
			scope.add(task)
		return task

	factory._browser_use_mcp_scoped = True  # type: ignore[attr-defined]
	loop.set_task_factory(factory)
