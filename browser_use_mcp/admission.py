"""Who gets the next session slot, and the next call slot, when a limit is reached.

Sessions: the server's ``--max-sessions`` and each principal's ``--max-sessions-per-principal``.
A new session that finds no room waits in its principal's queue (first come, first served within
a principal); when a slot frees, principals are served round-robin, so one principal with many
waiting sessions cannot hold back another's. A principal under its own limit on a server with room
never waits behind anyone. A wait ends after ``--queue-timeout`` with a retryable error that says
which limit and how many are ahead.

Calls: ``--max-calls-per-principal`` tool calls of one principal run at once; more wait, in order,
for the same timeout.

While it waits, a call is told why every QUEUE_NOTICE seconds (an MCP progress notification).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

from browser_use_mcp.errors import SessionLimitReached

QUEUE_NOTICE = 2.0  # s between progress notices to a call waiting for a slot

# (seconds waited, the timeout, what it waits for)
Notify = Callable[[float, float, str], Awaitable[None]]


class QueueTimeout(SessionLimitReached):
	"""A call waited --queue-timeout for a session or call slot and got none. Retryable."""


_order = itertools.count()


@dataclass(eq=False)
class Waiter:
	principal: str
	future: asyncio.Future[None]
	seq: int = field(default_factory=lambda: next(_order))


async def wait_for_grant(
	waiter: Waiter, timeout: float, notify: Notify | None, why: Callable[[], str], on_timeout: Callable[[], Exception]
) -> None:
	"""Wait until ``waiter`` is granted, telling ``notify`` why every QUEUE_NOTICE s; raise
	``on_timeout()`` after ``timeout`` s. The caller withdraws the waiter whatever happens."""
	loop = asyncio.get_running_loop()
	start = loop.time()
	while True:
		waited = loop.time() - start
		if notify is not None:
			try:
				await notify(waited, timeout, why())
			except Exception:  # a notice is a courtesy: the call waits on regardless
				pass
		if waiter.future.done():
			return
		left = timeout - (loop.time() - start)
		if left <= 0:
			raise on_timeout()
		done, _ = await asyncio.wait({waiter.future}, timeout=min(QUEUE_NOTICE, left))
		if done:
			return


class SessionSlots:
	"""Session slots under the server's and each principal's limit, with a fair queue.

	``used(principal)`` is how many sessions a principal holds or is creating (None: everyone's);
	slots granted to a waiter but not yet taken up count as ``reserved``.
	"""

	def __init__(self, server_limit: int, principal_limit: int | None, used: Callable[[str | None], int]) -> None:
		self.server_limit = server_limit
		self.principal_limit = principal_limit
		self._used = used
		self._reserved: dict[str, int] = {}
		self._queues: OrderedDict[str, deque[Waiter]] = OrderedDict()  # round-robin order of principals
		self._closed: Exception | None = None

	# -- counting ---------------------------------------------------------------------------

	def held(self, principal: str | None = None) -> int:
		reserved = sum(self._reserved.values()) if principal is None else self._reserved.get(principal, 0)
		return self._used(principal) + reserved

	def principal_full(self, principal: str) -> bool:
		return self.principal_limit is not None and self.held(principal) >= self.principal_limit

	def server_full(self) -> bool:
		return self.held() >= self.server_limit

	def _room(self, principal: str) -> bool:
		return not self.server_full() and not self.principal_full(principal)

	def waiting(self, principal: str | None = None) -> int:
		if principal is None:
			return sum(len(q) for q in self._queues.values())
		return len(self._queues.get(principal, ()))

	# -- taking a slot ----------------------------------------------------------------------

	def try_now(self, principal: str) -> bool:
		"""Reserve a slot at once if there is room and none of this principal's waiters is ahead."""
		if self._closed is None and not self._queues.get(principal) and self._room(principal):
			self._reserve(principal)
			return True
		return False

	def _reserve(self, principal: str) -> None:
		self._reserved[principal] = self._reserved.get(principal, 0) + 1

	def taken(self, principal: str) -> None:
		"""The reserved slot is now a session being created (``used`` counts it): unreserve."""
		count = self._reserved.get(principal, 0) - 1
		if count > 0:
			self._reserved[principal] = count
		else:
			self._reserved.pop(principal, None)

	def give_back(self, principal: str) -> None:
		"""A reserved slot that will not be used after all."""
		self.taken(principal)
		self.admit()

	def enqueue(self, principal: str) -> Waiter:
		waiter = Waiter(principal, asyncio.get_running_loop().create_future())
		self._queues.setdefault(principal, deque()).append(waiter)
		return waiter

	def withdraw(self, waiter: Waiter) -> None:
		"""Take a waiter out of its queue (timed out, cancelled); a slot it was granted goes back."""
		queue = self._queues.get(waiter.principal)
		if queue is not None and waiter in queue:
			queue.remove(waiter)
			if not queue:
				del self._queues[waiter.principal]
		if waiter.future.done() and not waiter.future.cancelled() and waiter.future.exception() is None:
			self.give_back(waiter.principal)
		elif not waiter.future.done():
			waiter.future.cancel()

	def admit(self) -> None:
		"""Grant freed slots: principals in round-robin order, each one's waiters first come first served."""
		while self._queues and not self.server_full():
			for principal in list(self._queues):
				if not self.principal_full(principal):
					queue = self._queues[principal]
					waiter = queue.popleft()
					if queue:
						self._queues.move_to_end(principal)  # served: the others go first next time
					else:
						del self._queues[principal]
					self._reserve(principal)
					waiter.future.set_result(None)
					break
			else:
				return  # every waiting principal is at its own limit

	def close(self, error: Exception) -> None:
		"""Fail every waiter (the server shuts down) and take no more."""
		self._closed = error
		for queue in self._queues.values():
			for waiter in queue:
				if not waiter.future.done():
					waiter.future.set_exception(error)
		self._queues.clear()

	# -- what to tell a waiter --------------------------------------------------------------

	def ahead(self, waiter: Waiter) -> tuple[str, int]:
		"""(which limit holds this waiter back, how many new sessions wait ahead of it)."""
		if self.principal_full(waiter.principal):
			own = self._queues.get(waiter.principal, deque())
			return 'principal', sum(1 for w in own if w.seq < waiter.seq)
		return 'server', sum(1 for q in self._queues.values() for w in q if w.seq < waiter.seq)

	def describe(self, waiter: Waiter) -> str:
		"""Which limit, and how many ahead: what the waiting call is told, and its error in the end."""
		limit, ahead = self.ahead(waiter)
		if limit == 'principal':
			return (
				f'you hold {self.held(waiter.principal)} sessions, your limit (--max-sessions-per-principal '
				f'{self.principal_limit}), and {ahead} more of your new sessions are queued ahead of this one'
			)
		return (
			f'the server holds {self.held()} sessions, its limit (--max-sessions {self.server_limit}), and {ahead} '
			'new session(s) are queued ahead of this one'
		)


class CallSlots:
	"""At most ``limit`` calls of one principal at once; more wait, first come first served."""

	def __init__(self, limit: int | None) -> None:
		self.limit = limit
		self._active: dict[str, int] = {}
		self._queues: dict[str, deque[Waiter]] = {}

	def active(self, principal: str) -> int:
		return self._active.get(principal, 0)

	@contextlib.asynccontextmanager
	async def slot(self, principal: str, timeout: float, notify: Notify | None) -> AsyncIterator[None]:
		if self.limit is None:
			yield
			return
		await self._acquire(principal, timeout, notify)
		try:
			yield
		finally:
			self._release(principal)

	async def _acquire(self, principal: str, timeout: float, notify: Notify | None) -> None:
		queue = self._queues.setdefault(principal, deque())
		assert self.limit is not None
		if not queue and self.active(principal) < self.limit:
			self._active[principal] = self.active(principal) + 1
			return
		if timeout <= 0:
			raise QueueTimeout(self._full(principal, len(queue), 0))
		waiter = Waiter(principal, asyncio.get_running_loop().create_future())
		queue.append(waiter)

		def ahead() -> int:
			return sum(1 for w in queue if w.seq < waiter.seq)

		def why() -> str:
			return f'Waiting for a call slot: {self._full(principal, ahead(), None)}'

		try:
			await wait_for_grant(waiter, timeout, notify, why, lambda: QueueTimeout(self._full(principal, ahead(), timeout)))
		except BaseException:
			if waiter in queue:
				queue.remove(waiter)
			if waiter.future.done() and not waiter.future.cancelled():
				self._release(principal)  # granted as it timed out or was cancelled: pass it on
			else:
				waiter.future.cancel()
			raise

	def _release(self, principal: str) -> None:
		queue = self._queues.get(principal)
		while queue:
			waiter = queue.popleft()
			if not waiter.future.done():
				waiter.future.set_result(None)  # the slot passes to it: the count stays
				return
		self._active[principal] = self.active(principal) - 1
		if self._active[principal] <= 0:
			del self._active[principal]
			self._queues.pop(principal, None)

	def _full(self, principal: str, ahead: int, waited: float | None) -> str:
		text = (
			f'you have {self.active(principal)} calls running, your limit (--max-calls-per-principal {self.limit}); '
			f'{ahead} of your calls ahead of this one'
		)
		if waited is None:
			return text
		return (
			f'No call slot within {waited:g} s (--queue-timeout): {text}. This is temporary: retry when one of your '
			'running calls has finished.'
		)
