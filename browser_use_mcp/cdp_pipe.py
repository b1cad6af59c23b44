"""Chromium's DevTools over ``--remote-debugging-pipe``, shared by every CDP connection of ours.

A DevTools TCP port on loopback is reachable from every page the browser shows: a page can scan
loopback, navigate its own tab to ``http://127.0.0.1:PORT/json/list`` (same origin as the
DevTools server, so Chromium's origin check does not apply) and from there list, close and
drive every tab of every tenant. A pipe (fds 3 and 4 of the Chromium process, NUL-delimited
JSON) is reachable only by the process that holds its other ends: this one.

One pipe is one DevTools connection, so ``PipeMux`` multiplexes it: each ``Channel`` (a
browser-use connection, the provider's own, storage seeding) gets a browser session of its own
(``Target.attachToBrowserTarget``, flattened) and behaves as a separate connection to the
browser: its own target discovery and auto-attach, its own child sessions. Chromium puts the
``sessionId`` last in every message of a flattened session, so routing a message reads only its
tail; large page-level messages (DOM snapshots, screenshots) are never parsed here.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import json
import logging
import os
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

logger = logging.getLogger('browser_use_mcp.cdp_pipe')

# Chromium reads commands from fd 3 and writes replies and events to fd 4 of its process.
CHILD_READ_FD = 3
CHILD_WRITE_FD = 4
ABANDONED_KEPT = 64  # ids of abandoned undecoded commands remembered (their answers are dropped)
_SESSION_TAIL = re.compile(r',"sessionId":"([0-9A-Za-z]+)"\}$')
_CLIENT_SESSION_TAIL = re.compile(r',\s*"sessionId":\s*"([0-9A-Za-z]+)"\}$')
_ATTACHED = '{"method":"Target.attachedToTarget"'
_DETACHED = '{"method":"Target.detachedFromTarget"'
# Client commands whose answer names a new session of the client's (flattened).
_ATTACH_METHODS = frozenset({'Target.attachToTarget', 'Target.attachToBrowserTarget'})


class PipeClosed(ConnectionResetError):
	"""The browser's end of the pipe is gone (it exited), or the channel was closed."""


def reserve_child_fds() -> None:
	"""Keep fds 3 and 4 of this process taken, so no pipe of ours (nor the subprocess module's own
	error pipe) ever has those numbers: the launch moves the browser's pipe ends onto them in
	the child, which must not overwrite anything else."""
	for fd in (CHILD_READ_FD, CHILD_WRITE_FD):
		try:
			os.fstat(fd)
		except OSError:
			null = os.open(os.devnull, os.O_RDONLY)
			if null != fd:
				os.dup2(null, fd, inheritable=False)
				os.close(null)


def install_child_fds(child_read: int, child_write: int) -> None:
	"""Runs in the forked child, before exec: the pipe ends become fds 3 and 4."""
	os.dup2(child_read, CHILD_READ_FD)
	os.dup2(child_write, CHILD_WRITE_FD)


class _Reader(asyncio.Protocol):
	"""Splits the pipe's bytes into messages (NUL-terminated). A message longer than one read is
	kept as the reads' chunks and joined once at its end: one copy of it, where a growing buffer
	copied a multi-MB answer two or three times more on the event loop (~30 ms of a 12 MB one)."""

	def __init__(self, mux: PipeMux) -> None:
		self.mux = mux
		self.parts: list[bytes] = []  # the chunks of an unfinished message

	def data_received(self, data: bytes) -> None:
		start = 0
		while True:
			end = data.find(b'\0', start)
			if end < 0:
				if start < len(data):
					self.parts.append(data[start:] if start else data)
				return
			if self.parts:
				self.parts.append(data[start:end])
				raw = b''.join(self.parts)
				self.parts = []
			else:
				raw = data[start:end]
			start = end + 1
			if (self.mux.undecoded or self.mux.abandoned) and self.mux.take_undecoded(raw):
				continue
			try:
				self.mux.dispatch(raw.decode('utf-8', 'replace'))
			except Exception:  # one bad message must not stop the reader
				logger.exception('a message from the browser pipe could not be routed')

	def connection_lost(self, exc: Exception | None) -> None:
		self.mux.lost()


class Channel:
	"""One CDP connection over the pipe, used like a websocket: ``send``, ``async for``, ``close``."""

	def __init__(self, mux: PipeMux, session_id: str) -> None:
		self.mux = mux
		self.session_id = session_id  # its browser session: messages without a sessionId are its own
		self._queue: asyncio.Queue[str | None] = asyncio.Queue()
		self._attaching: set[tuple[str | None, Any]] = set()  # (session, id) of its attach commands
		# ids of the commands sent on each of its page sessions and not answered yet: Chromium never
		# answers them once that session detaches (its tab closed), so they are answered then, below
		self._in_flight: dict[str, set[int]] = {}
		self.closed = False

	async def send(self, text: str) -> None:
		if self.closed or self.mux.closed:
			raise PipeClosed('the browser connection is closed')
		tail = _CLIENT_SESSION_TAIL.search(text, max(0, len(text) - 80))
		if tail is not None and self.mux.owners.get(tail.group(1)) is self and '"Target.attachTo' not in text:
			self._sent_on(tail.group(1), _leading_id(text) if text.startswith('{"id":') else None)
			self.mux.write(text)  # a command on one of its own page sessions (cdp-use puts sessionId last)
			return
		message = json.loads(text)
		session = message.get('sessionId')
		if session is None:
			message['sessionId'] = self.session_id
		elif self.mux.owners.get(session) is not self:
			# a session of another channel (or none): answered as Chromium answers an unknown one
			self.deliver(
				json.dumps(
					{
						'id': message.get('id'),
						'error': {'code': -32001, 'message': 'Session with given id not found.'},
						'sessionId': session,
					}
				)
			)
			return
		if message.get('method') in _ATTACH_METHODS:
			self._attaching.add((session, message.get('id')))
		if session is not None and isinstance(message.get('id'), int):
			self._sent_on(session, message['id'])
		self.mux.write(json.dumps(message))

	def _sent_on(self, session: str, message_id: int | None) -> None:
		if message_id is not None:
			self._in_flight.setdefault(session, set()).add(message_id)

	def session_gone(self, session: str) -> None:
		"""``session`` detached: its commands still unanswered get the error Chromium gives a command
		sent to a session that no longer exists, instead of leaving their callers waiting for the
		CDP timeout (a tab that closed itself, or was closed, mid-call)."""
		for message_id in sorted(self._in_flight.pop(session, ())):
			error = {'code': -32001, 'message': 'Session with given id not found.'}
			self.deliver(json.dumps({'id': message_id, 'error': error, 'sessionId': session}))

	def deliver(self, text: str) -> None:
		if not self.closed:
			self._queue.put_nowait(text)

	def answered(self, session: str, message_id: int | None) -> None:
		"""An answer to one of its commands on ``session`` came: no longer in flight."""
		waiting = self._in_flight.get(session)
		if waiting is not None:
			waiting.discard(message_id)  # type: ignore[arg-type]
			if not waiting:
				del self._in_flight[session]

	def received(self, session: str, text: str) -> str:
		"""A message of one of its sessions, as the client sees it (its browser session's id removed)."""
		if text.startswith('{"id":'):
			message_id = _leading_id(text)
			self.answered(session, message_id)
			key = (None if session == self.session_id else session, message_id)
			if key in self._attaching:
				self._attaching.discard(key)
				child = (json.loads(text).get('result') or {}).get('sessionId')
				if child:
					self.mux.owners[child] = self
		if session == self.session_id:
			return text[: text.rindex(',"sessionId":')] + '}'
		return text

	async def __aiter__(self) -> AsyncIterator[str]:
		while True:
			text = await self._queue.get()
			if text is None:
				return
			yield text

	async def recv(self) -> str:
		text = await self._queue.get()
		if text is None:
			self._queue.put_nowait(None)
			raise PipeClosed('the browser connection is closed')
		return text

	def ended(self) -> None:
		if not self.closed:
			self.closed = True
			self._queue.put_nowait(None)

	async def close(self) -> None:
		if self.closed:
			return
		self.ended()
		self.mux.forget(self)


def _leading_id(text: str) -> int | None:
	end = text.find(',', 6)
	try:
		return int(text[6:end])
	except ValueError:
		return None


class PipeMux:
	"""One browser's pipe: the mux's own root-level commands, and every channel's traffic."""

	def __init__(self) -> None:
		self.owners: dict[str, Channel] = {}  # session id -> the channel it belongs to
		self.closed = False
		self._writer: asyncio.WriteTransport | None = None
		self._reader: asyncio.ReadTransport | None = None
		self._ids = itertools.count(1)
		self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
		self._close_callbacks: list[Callable[[], Any]] = []
		# id -> the waiter of a command sent with ``send_undecoded``: its answer, as the pipe's bytes
		self.undecoded: dict[int, asyncio.Future[bytes]] = {}
		# ids of such commands whose caller stopped waiting: their answers (maybe MBs) are dropped unread
		self.abandoned: collections.deque[int] = collections.deque(maxlen=ABANDONED_KEPT)

	async def start(self, read_fd: int, write_fd: int) -> None:
		"""Take over our ends of the two pipes (closed with the mux)."""
		loop = asyncio.get_running_loop()
		self._reader, _ = await loop.connect_read_pipe(lambda: _Reader(self), os.fdopen(read_fd, 'rb', buffering=0))
		self._writer, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(write_fd, 'wb', buffering=0))

	def on_close(self, callback: Callable[[], Any]) -> None:
		self._close_callbacks.append(callback)

	def write(self, text: str) -> None:
		if self.closed or self._writer is None or self._writer.is_closing():
			raise PipeClosed('the browser connection is closed')
		self._writer.write(text.encode() + b'\0')

	async def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
		"""A root-level command of the mux itself; its result, or RuntimeError with Chromium's message."""
		message_id = next(self._ids)
		future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
		self._pending[message_id] = future
		try:
			self.write(json.dumps({'id': message_id, 'method': method, 'params': params or {}}))
			reply = await future
		finally:
			self._pending.pop(message_id, None)
		if 'error' in reply:
			raise RuntimeError(reply['error'].get('message', 'CDP error'))
		return reply.get('result', {})

	async def send_undecoded(self, message_id: int, method: str, params: dict[str, Any], session_id: str) -> bytes:
		"""A command on a page session (one of a channel's), whose answer comes back to this caller
		as the pipe's bytes: not decoded, not routed to the channel, no copy made on the way. For
		the page state's large answers (several MB of JSON each on a large page), which a worker
		process decodes: on the event loop they would be decoded, then sent on through the CDP
		endpoint and received again by the client, every step holding the loop every session
		shares. ``message_id`` must be unique among this process's commands (no channel's client
		uses it)."""
		if message_id in self.undecoded:
			raise ValueError(f'message id {message_id} is already waiting')
		future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
		self.undecoded[message_id] = future
		try:
			self.write(json.dumps({'id': message_id, 'method': method, 'params': params, 'sessionId': session_id}))
			return await future
		finally:
			self.undecoded.pop(message_id, None)
			if future.cancelled() or not future.done():  # its answer, when it comes, is nobody's
				self.abandoned.append(message_id)

	def take_undecoded(self, raw: bytes) -> bool:
		"""Whether ``raw`` answers a ``send_undecoded`` command (then its waiter has it)."""
		if not raw.startswith(b'{"id":'):
			return False
		end = raw.find(b',', 6, 24)
		if end < 0 or not raw[6:end].isdigit():
			return False
		message_id = int(raw[6:end])
		future = self.undecoded.get(message_id)
		if future is None:
			if message_id in self.abandoned:  # not decoded and routed to a channel that never asked
				self.abandoned.remove(message_id)
				return True
			return False
		if not future.done():
			future.set_result(raw)
		return True

	async def open_channel(self) -> Channel:
		"""A new connection to the browser, as a websocket to its browser endpoint would be."""
		session = (await self.call('Target.attachToBrowserTarget'))['sessionId']
		channel = Channel(self, session)
		self.owners[session] = channel
		return channel

	def forget(self, channel: Channel) -> None:
		for session in [s for s, c in self.owners.items() if c is channel]:
			del self.owners[session]
		if not self.closed:
			task = asyncio.get_running_loop().create_task(self.call('Target.detachFromTarget', {'sessionId': channel.session_id}))
			task.add_done_callback(lambda t: t.cancelled() or t.exception())

	def dispatch(self, text: str) -> None:
		match = _SESSION_TAIL.search(text, max(0, len(text) - 80))
		if match is None:
			self._root(json.loads(text))
			return
		session = match.group(1)
		channel = self.owners.get(session)
		if channel is None:
			return  # a session whose channel is gone: its last words
		gone = None
		if text.startswith(_ATTACHED):
			child = (json.loads(text).get('params') or {}).get('sessionId')
			if child:
				self.owners[child] = channel  # what a session of the channel attaches belongs to it too
		elif text.startswith(_DETACHED):
			child = (json.loads(text).get('params') or {}).get('sessionId')
			if child and child != channel.session_id:
				self.owners.pop(child, None)
				gone = child
		channel.deliver(channel.received(session, text))
		if gone is not None:
			channel.session_gone(gone)  # after the detach event itself, as Chromium would have ordered them

	def _root(self, message: dict[str, Any]) -> None:
		if 'sessionId' in message:  # not at the tail after all: route it the slow way
			session = message['sessionId']
			channel = self.owners.get(session)
			if channel is not None:
				if session == channel.session_id:
					del message['sessionId']
				elif isinstance(message.get('id'), int):
					channel.answered(session, message['id'])
				channel.deliver(json.dumps(message))
			return
		future = self._pending.get(message.get('id', -1))
		if future is not None and not future.done():
			future.set_result(message)

	def lost(self) -> None:
		if self.closed:
			return
		self.closed = True
		for future in (*self._pending.values(), *self.undecoded.values()):
			if not future.done():
				future.set_exception(PipeClosed('the browser closed its DevTools pipe'))
		for channel in set(self.owners.values()):
			channel.ended()
		self.owners.clear()
		for callback in list(self._close_callbacks):
			try:
				callback()
			except Exception:
				logger.exception('a callback on the end of a browser pipe failed')

	def close(self) -> None:
		for transport in (self._writer, self._reader):
			if transport is not None:
				with contextlib.suppress(Exception):
					transport.close()
		self.lost()
