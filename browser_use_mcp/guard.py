"""What keeps a tokenless stranger, or one greedy token, from taking the HTTP server down.

uvicorn (0.54, h11) never closes a connection that sends nothing or half a header, reads a
request body as fast as the client sends it, and the MCP SDK keeps every handshake-era transport
session until it idles out. So, around them:

- ``ConnectionGuard`` and ``guarded_protocol``: a cap on open connections, in all and per client
  address (over it, a connection gets a 503 or 429 and is closed at once), and a deadline for a
  request's header (a slowloris is closed when it passes); uvicorn's ``timeout_keep_alive`` closes
  idle keep-alive connections;
- ``BodyLimit``: a request body larger than its path allows gets 413, from ``Content-Length``
  before a byte of it is read, or as soon as a chunked body goes past the limit;
- ``TransportSessions``: at most N transport sessions (``Mcp-Session-Id``) per principal; one more
  is refused with 429 until one ends (DELETE) or idles out;
- ``raise_fd_limit`` and ``quiet_accept_errors``: the soft RLIMIT_NOFILE raised to the hard one,
  and asyncio's "socket.accept() out of system resource" logged once per interval with a count.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Message, Receive, Scope, Send

logger = logging.getLogger('browser_use_mcp.http')

# How often a repeated warning (refused connections, accept errors) may be logged.
LOG_INTERVAL = 10.0
# File descriptors kept for everything that is not an HTTP connection (browsers' pipes and
# websockets, profiles, logs) when --max-connections is checked against RLIMIT_NOFILE.
FD_RESERVE = 256


class Throttled:
	"""A warning logged at most once per ``interval`` seconds per key, with how many it stands for."""

	def __init__(self, log: logging.Logger, interval: float = LOG_INTERVAL) -> None:
		self.log = log
		self.interval = interval
		self._last: dict[str, float] = {}
		self._count: dict[str, int] = defaultdict(int)

	def note(self, key: str, message: str) -> None:
		self._count[key] += 1
		now = time.monotonic()
		if now - self._last.get(key, -1e9) < self.interval:
			return
		count, self._count[key] = self._count[key], 0
		self._last[key] = now
		self.log.warning('%s (%d since this was last logged; at most one line per %g s)', message, count, self.interval)


class QuietRepeats(logging.Filter):
	"""A logger filter for uvicorn's per-request warnings a client can trigger at will ("Invalid
	HTTP request received." for every malformed request): each at most once per interval, the
	next one saying how many were left out."""

	REPEATED = ('Invalid HTTP request received.', 'Unsupported upgrade request.')

	def __init__(self, interval: float = LOG_INTERVAL) -> None:
		super().__init__()
		self.interval = interval
		self._last: dict[str, float] = {}
		self._dropped: dict[str, int] = defaultdict(int)

	def filter(self, record: logging.LogRecord) -> bool:
		message = record.msg if isinstance(record.msg, str) else ''
		if message not in self.REPEATED:
			return True
		now = time.monotonic()
		if now - self._last.get(message, -1e9) < self.interval:
			self._dropped[message] += 1
			return False
		self._last[message] = now
		dropped, self._dropped[message] = self._dropped[message], 0
		if dropped:
			record.msg, record.args = f'{message} (and {dropped} more not logged)', None
		return True


def quiet_uvicorn() -> None:
	"""Install ``QuietRepeats`` on uvicorn's error logger, once."""
	uv = logging.getLogger('uvicorn.error')
	if not any(isinstance(f, QuietRepeats) for f in uv.filters):
		uv.addFilter(QuietRepeats())


def raise_fd_limit() -> int:
	"""Raise the soft RLIMIT_NOFILE to the hard limit; returns the soft limit now in force."""
	try:
		import resource
	except ImportError:  # not POSIX
		return 0
	soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
	if hard != resource.RLIM_INFINITY and soft < hard or soft == resource.RLIM_INFINITY:
		target = hard
	else:
		target = soft
	if target != soft:
		try:
			resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
			soft = target
		except (ValueError, OSError) as exc:
			logger.warning('could not raise the open-file limit from %d to %d: %s', soft, target, exc)
	return soft


def quiet_accept_errors(loop: asyncio.AbstractEventLoop, throttle: Throttled) -> None:
	"""asyncio logs a traceback for every failed accept when file descriptors run out, which
	filled the log by megabytes a second; log it once per interval instead, with a count."""
	previous = loop.get_exception_handler()

	def handler(lp: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
		message = str(context.get('message', ''))
		if message.startswith('socket.accept() out of system resource'):
			exc = context.get('exception')
			throttle.note('accept', f'cannot accept connections: {exc or message} (out of file descriptors?)')
			return
		if previous is not None:
			previous(lp, context)
		else:
			lp.default_exception_handler(context)

	loop.set_exception_handler(handler)


def _plain_response(status: int, reason: str, text: str, extra: str = '') -> bytes:
	body = text.encode()
	head = (
		f'HTTP/1.1 {status} {reason}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {len(body)}\r\n'
		f'{extra}connection: close\r\n\r\n'
	)
	return head.encode() + body


FULL = _plain_response(503, 'Service Unavailable', 'Too many open connections; try again shortly.\n', 'retry-after: 5\r\n')
TOO_MANY = _plain_response(429, 'Too Many Requests', 'Too many open connections from your address.\n', 'retry-after: 5\r\n')


class ConnectionGuard:
	"""Counts open connections, in all and per client address, and says which to refuse."""

	def __init__(self, max_connections: int, per_client: int, header_timeout: float) -> None:
		self.max_connections = max_connections
		self.per_client = per_client  # 0: no per-address cap
		self.header_timeout = header_timeout
		self.open = 0
		self.by_host: dict[str, int] = defaultdict(int)
		self.throttle = Throttled(logger)

	def admit(self, host: str) -> bytes | None:
		"""None: take the connection (counted until ``release``); else the answer to refuse it with."""
		if self.open >= self.max_connections:
			self.throttle.note('full', f'refused connections: {self.max_connections} open already (--max-connections)')
			return FULL
		if self.per_client and self.by_host[host] >= self.per_client:
			self.throttle.note(
				'per-client', f'refused connections from {host}: {self.per_client} open already (--max-connections-per-client)'
			)
			return TOO_MANY
		self.open += 1
		self.by_host[host] += 1
		return None

	def release(self, host: str) -> None:
		self.open -= 1
		left = self.by_host[host] - 1
		if left > 0:
			self.by_host[host] = left
		else:
			self.by_host.pop(host, None)


def guarded_protocol(guard: ConnectionGuard) -> type[asyncio.Protocol]:
	"""uvicorn's h11 protocol with the guard's caps and a deadline for each request's header.

	The deadline runs from a connection's first byte (or its opening) until uvicorn has parsed
	a whole request header; a connection still without one then is closed. Between requests
	uvicorn's own keep-alive timeout applies; a request being answered has no deadline here
	(streams stay open as long as they need).
	"""
	from uvicorn.protocols.http.h11_impl import H11Protocol

	class Guarded(H11Protocol):
		_host: str | None = None
		_deadline: asyncio.TimerHandle | None = None
		_waiting_on: object = None

		def connection_made(self, transport: asyncio.BaseTransport) -> None:  # type: ignore[override]
			peer = transport.get_extra_info('peername')
			host = str(peer[0]) if isinstance(peer, tuple) and peer else 'unknown'
			refusal = guard.admit(host)
			if refusal is not None:
				self.transport = transport  # type: ignore[assignment]
				try:
					transport.write(refusal)  # type: ignore[attr-defined]
				finally:
					transport.close()
				return
			self._host = host
			super().connection_made(transport)  # type: ignore[arg-type]
			self._arm()

		def _arm(self) -> None:
			if self._deadline is None and guard.header_timeout > 0:
				self._waiting_on = self.cycle
				self._deadline = self.loop.call_later(guard.header_timeout, self._header_late)

		def _disarm(self) -> None:
			if self._deadline is not None:
				self._deadline.cancel()
				self._deadline = None

		def _header_late(self) -> None:
			self._deadline = None
			if self.cycle is self._waiting_on and not self.transport.is_closing():
				guard.throttle.note(
					'header-timeout', f'closed connections that sent no complete request header within {guard.header_timeout:g} s'
				)
				self.transport.close()

		def data_received(self, data: bytes) -> None:
			if self._host is None:  # refused: nothing of it is read
				return
			between = self.cycle is None or self.cycle.response_complete
			if between:
				self._arm()
			super().data_received(data)
			if self.cycle is not self._waiting_on:  # a whole header arrived
				self._disarm()

		def connection_lost(self, exc: Exception | None) -> None:
			if self._host is None:
				return
			self._disarm()
			guard.release(self._host)
			self._host = None
			super().connection_lost(exc)

	return Guarded


class BodyTooLarge(Exception):
	pass


def _declared_length(scope: Scope) -> int | None:
	for name, value in scope.get('headers', ()):
		if name == b'content-length':
			try:
				return int(value)
			except ValueError:
				return None
	return None


async def _answer(send: Send, status: int, text: str) -> None:
	body = json.dumps({'error': text}).encode()
	await send(
		{
			'type': 'http.response.start',
			'status': status,
			'headers': [
				(b'content-type', b'application/json'),
				(b'content-length', str(len(body)).encode()),
				(b'connection', b'close'),
			],
		}
	)
	await send({'type': 'http.response.body', 'body': body})


class BodyLimit:
	"""ASGI wrapper: a request body beyond ``limit_for(path)`` bytes gets 413 without being read
	whole: at once from its ``Content-Length``, or when a chunked body passes the limit (the app's
	read then fails; if it has already answered, the connection is simply not read further)."""

	def __init__(self, app: ASGIApp, limit_for: Callable[[str], int]) -> None:
		self.app = app
		self.limit_for = limit_for

	async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
		if scope['type'] != 'http':
			await self.app(scope, receive, send)
			return
		limit = self.limit_for(scope.get('path', ''))
		declared = _declared_length(scope)
		if declared is not None and declared > limit:
			await _answer(send, 413, f'The request body is larger than the {limit} bytes this path accepts.')
			return
		received = 0
		started = False

		async def bounded_receive() -> Message:
			nonlocal received
			message = await receive()
			if message['type'] == 'http.request':
				received += len(message.get('body', b''))
				if received > limit:
					raise BodyTooLarge
			return message

		async def tracking_send(message: Message) -> None:
			nonlocal started
			if message['type'] == 'http.response.start':
				started = True
			await send(message)

		try:
			await self.app(scope, bounded_receive, tracking_send)
		except BodyTooLarge:
			if not started:
				await _answer(send, 413, f'The request body is larger than the {limit} bytes this path accepts.')


def _header(scope: Scope, name: bytes) -> str | None:
	for key, value in scope.get('headers', ()):
		if key == name:
			return value.decode('latin-1')
	return None


class TransportSessions:
	"""ASGI wrapper of the Streamable HTTP endpoint: at most ``cap`` handshake-era transport
	sessions per principal, each forgotten after ``idle`` seconds without a request (the SDK
	drops it then too), on DELETE, or when the SDK answers 404 for it.

	A request that would make a session (no ``Mcp-Session-Id``, and a handshake-era protocol
	version or none) is refused with 429 while the principal has ``cap``; it counts even when
	the SDK's answer carries no session id, since the SDK keeps a transport for it anyway.
	Requests of the stateless 2026-07-28 protocol make no session and are never refused here.
	"""

	def __init__(self, app: ASGIApp, principal_of: Callable[[Scope], str], cap: int, idle: float) -> None:
		self.app = app
		self.principal_of = principal_of
		self.cap = cap
		self.idle = idle
		# principal -> {session id (or an anonymous key) -> last request, monotonic}
		self._sessions: dict[str, dict[str, float]] = defaultdict(dict)
		self._anonymous = 0

	def count(self, principal: str) -> int:
		self._prune(principal)
		return len(self._sessions.get(principal, {}))

	def _prune(self, principal: str) -> None:
		held = self._sessions.get(principal)
		if not held:
			self._sessions.pop(principal, None)
			return
		now = time.monotonic()
		for sid in [s for s, last in held.items() if now - last > self.idle]:
			del held[sid]

	async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
		if scope['type'] != 'http':
			await self.app(scope, receive, send)
			return
		principal = self.principal_of(scope)
		sid = _header(scope, b'mcp-session-id')
		version = _header(scope, b'mcp-protocol-version')
		if sid is not None:
			held = self._sessions.get(principal, {})
			if sid in held:
				held[sid] = time.monotonic()
			await self.app(scope, receive, self._watch(principal, sid, scope['method'], send))
			return
		if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
			await self.app(scope, receive, send)  # stateless: no transport session
			return
		if self.count(principal) >= self.cap:
			logger.info('refused a new transport session: principal %s has %d (--max-transport-sessions)', principal, self.cap)
			await _answer(
				send,
				429,
				f'Too many MCP transport sessions for this token ({self.cap}): end one with DELETE (or let one idle out for '
				f'{self.idle:g} s) before initializing another.',
			)
			return
		self._anonymous += 1
		key = f'pending-{self._anonymous}'
		self._sessions[principal][key] = time.monotonic()

		async def record(message: Message) -> None:
			if message['type'] == 'http.response.start':
				new = next((v.decode('latin-1') for k, v in message.get('headers', ()) if k.lower() == b'mcp-session-id'), None)
				held = self._sessions[principal]
				if new is not None and key in held:
					held[new] = held.pop(key)
			await send(message)

		await self.app(scope, receive, record)

	def _watch(self, principal: str, sid: str, method: str, send: Send) -> Send:
		async def watched(message: Message) -> None:
			if message['type'] == 'http.response.start':
				status = message.get('status')
				if status == 404 or (method == 'DELETE' and status == 200):
					self._sessions.get(principal, {}).pop(sid, None)
			await send(message)

		return watched


def is_loopback(host: str) -> bool:
	"""Whether binding ``host`` keeps the server reachable from this machine only.

	Names other than ``localhost`` count as exposed: what they resolve to can change.
	"""
	if host.strip().lower() == 'localhost':
		return True
	try:
		return ipaddress.ip_address(host.strip('[]')).is_loopback
	except ValueError:
		return False
