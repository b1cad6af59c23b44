"""browser-use's CDP connection to our own endpoint, made in process instead of over a socket.

Every session's browser-use talks CDP to a link of ours (``cdp_proxy``: a context's rewriting
link, or a browser-per-session passthrough), which forwards to the browser's DevTools pipe. Both
ends live in this process, on this event loop, yet each message used to cross a loopback
websocket: cdp-use framed it, the kernel carried it, the websocket server parsed it, and the
answer went the same way back. That is two socket writes, two wake-ups from ``epoll`` and two
frame codecs per message, on the loop every session shares, for ~15 messages of every page state.

``LocalEnd`` is one end of a connection held in memory: ``send`` puts the text into the other
end's inbox, ``recv`` and ``async for`` take from its own. It offers what cdp-use's client and our
links use of a websocket connection (``send``, ``recv``, ``async for``, ``close``, ``state``), and
its close ends both sides the way a websocket close does (``ConnectionClosedOK``). The router's
security screening is not involved: this route has no port; the loopback endpoint stays for any
other client of the same URL.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import AsyncIterator
from typing import Any

from websockets.exceptions import ConnectionClosedOK
from websockets.protocol import State

logger = logging.getLogger('browser_use_mcp.providers.local_cdp')


class LocalEnd:
	"""One end of an in-process CDP connection (see the module docstring)."""

	def __init__(self) -> None:
		self.peer: LocalEnd | None = None
		self._inbox: collections.deque[str] = collections.deque()
		self._waiter: asyncio.Future[None] | None = None
		self._closed = False

	@property
	def state(self) -> State:
		return State.CLOSED if self._closed else State.OPEN

	def _deliver(self, text: str) -> None:
		self._inbox.append(text)
		waiter = self._waiter
		if waiter is not None and not waiter.done():
			waiter.set_result(None)

	async def send(self, message: str | bytes) -> None:
		peer = self.peer
		if self._closed or peer is None or peer._closed:
			raise ConnectionClosedOK(None, None)
		peer._deliver(message if isinstance(message, str) else message.decode())

	async def recv(self) -> str:
		while not self._inbox:
			if self._closed:
				raise ConnectionClosedOK(None, None)
			waiter = self._waiter = asyncio.get_running_loop().create_future()
			try:
				await waiter
			finally:
				self._waiter = None
		return self._inbox.popleft()

	async def __aiter__(self) -> AsyncIterator[str]:
		try:
			while True:
				yield await self.recv()
		except ConnectionClosedOK:
			return

	def _end(self) -> None:
		self._closed = True
		self._inbox.clear()
		waiter = self._waiter
		if waiter is not None and not waiter.done():
			waiter.set_result(None)

	async def close(self, code: int = 1000, reason: str = '') -> None:
		"""Ends both sides: the other end's pending ``recv`` raises, as after a websocket close."""
		self.close_now()

	def close_now(self) -> None:
		self._end()
		if self.peer is not None:
			self.peer._end()


def pair() -> tuple[LocalEnd, LocalEnd]:
	"""(the client's end, the link's end) of a new connection."""
	client, server = LocalEnd(), LocalEnd()
	client.peer, server.peer = server, client
	return client, server


_serving: dict[asyncio.Task[Any], Any] = {}  # the serve task of each open local connection -> its link


def connect(link: Any) -> LocalEnd:
	"""A new connection to ``link``: its ``serve`` runs in a task of its own, as the router would
	run it for a websocket client, and the connection ends both ways when either side closes."""
	client, server = pair()

	async def serve() -> None:
		try:
			await link.serve(server)
		except Exception as exc:  # the router logs a connection that ended badly the same way
			logger.info('CDP connection ended: %s', exc)
		finally:
			server.close_now()

	task = asyncio.create_task(serve(), name='cdp-local-link')
	_serving[task] = link
	task.add_done_callback(lambda done: _serving.pop(done, None))
	return client


def close_link(link: Any) -> None:
	"""End ``link``'s local connections (its router is closing), as closing the websocket server
	ends its connections: each side's reads end, the link closes its upstream."""
	for task, served in list(_serving.items()):
		if served is link:
			task.cancel()


def open_connections() -> int:
	return len(_serving)
