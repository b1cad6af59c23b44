"""MCP over stdio read and written by the event loop itself, when stdin and stdout are pipes or sockets.

The SDK's ``stdio_server`` reads every line and writes every answer through ``anyio.wrap_file``: a
worker thread for each read, each write and each flush, three thread hand-offs per call (a no-op
tool's round trip 1.0-1.2 ms with them, 0.7-0.9 ms without, docs/performance.md). An MCP client starts its server
with pipes, and a pipe can be watched by the loop like a socket: this transport registers both ends
with the loop (``connect_read_pipe`` / ``connect_write_pipe``), splits lines as bytes arrive, and
writes each answer with one non-blocking ``write``.

It keeps what the SDK's transport guarantees beside the protocol: while it serves, fd 0 reads the
null device and fd 1 is the server's stderr, so a stray ``print`` (ours, a library's, a child
process's) never lands in the protocol's stream; the wire is served from private, close-on-exec
duplicates, and both descriptors are put back when it ends. A terminal or a regular file is not a
pipe: for those (and with ``BROWSER_USE_MCP_STDIO_PIPES=false``) the SDK's transport serves.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import stat
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from browser_use_mcp.texts import clean_json

logger = logging.getLogger('browser_use_mcp.server')

MAX_LINE = 64 * 1024 * 1024  # bytes: a longer message is refused (an error to the client) and skipped
QUEUE_HIGH = 64  # lines read but not yet handed on: reading pauses above this, resumes below QUEUE_LOW
QUEUE_LOW = 16
TOO_LONG = b'\n'  # queued in place of a refused line (a real line never holds its newline)


def is_pipe(fd: int) -> bool:
	"""True when ``fd`` is a pipe or a socket (what an MCP client gives its server), not a terminal or a file."""
	try:
		mode = os.fstat(fd).st_mode
	except OSError:
		return False
	return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def usable() -> bool:
	return os.name == 'posix' and is_pipe(0) and is_pipe(1)


class _Lines(asyncio.Protocol):
	"""Splits what arrives on stdin into lines and queues them; pauses reading when the queue is long."""

	def __init__(self) -> None:
		self.lines: asyncio.Queue[bytes | None] = asyncio.Queue()
		self.transport: asyncio.ReadTransport | None = None
		self.paused = False
		self._buffer = bytearray()
		self._skipping = False  # inside a line longer than MAX_LINE: drop bytes up to its end
		self._ended = False

	def connection_made(self, transport: asyncio.BaseTransport) -> None:
		self.transport = transport  # type: ignore[assignment]

	def data_received(self, data: bytes) -> None:
		start = 0
		while True:
			end = data.find(b'\n', start)
			if end < 0:
				break
			if self._skipping:
				self._skipping = False
			else:
				self._buffer += data[start:end]
				self.lines.put_nowait(bytes(self._buffer))
			self._buffer.clear()
			start = end + 1
		if not self._skipping:
			self._buffer += data[start:]
			if len(self._buffer) > MAX_LINE:
				self._buffer.clear()
				self._skipping = True
				self.lines.put_nowait(TOO_LONG)  # the reader answers it with an error
		if self.transport is not None and not self.paused and self.lines.qsize() > QUEUE_HIGH:
			self.paused = True
			self.transport.pause_reading()

	def take_up(self) -> None:
		"""Called by the reader as it takes lines: resume reading once the queue is short again."""
		if self.paused and self.lines.qsize() < QUEUE_LOW and self.transport is not None:
			self.paused = False
			self.transport.resume_reading()

	def eof_received(self) -> bool:
		self._end()
		return False

	def connection_lost(self, exc: Exception | None) -> None:
		self._end()

	def _end(self) -> None:
		if self._ended:
			return
		self._ended = True
		if self._buffer and not self._skipping:  # a last message without its newline still counts
			self.lines.put_nowait(bytes(self._buffer))
		self._buffer.clear()
		self.lines.put_nowait(None)


class _Sink(asyncio.Protocol):
	"""stdout's flow control: ``wait_writable`` holds the writer while the pipe is full."""

	def __init__(self) -> None:
		self._writable = asyncio.Event()
		self._writable.set()
		self.lost: BaseException | None = None
		self.closed = asyncio.Event()

	def pause_writing(self) -> None:
		self._writable.clear()

	def resume_writing(self) -> None:
		self._writable.set()

	def connection_lost(self, exc: Exception | None) -> None:
		self.lost = exc or BrokenPipeError('stdout is closed')
		self._writable.set()
		self.closed.set()

	async def wait_writable(self) -> None:
		await self._writable.wait()


def _claim_std_fds() -> tuple[int, int]:
	"""Private duplicates of fd 0 and 1 for the wire; fd 0 then reads the null device and fd 1 writes
	to stderr, until ``_release_std_fds`` points them at the wire again."""
	import fcntl  # POSIX only, as this transport is (``usable``)

	wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
	wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
	null = os.open(os.devnull, os.O_RDONLY)
	try:
		os.dup2(null, 0)
		os.dup2(2, 1)
	finally:
		os.close(null)
	return wire_in, wire_out


def _release_std_fds(wire_in: int, wire_out: int) -> None:
	with contextlib.suppress(Exception):  # what a print left in sys.stdout's buffer goes to stderr, not the wire
		sys.stdout.flush()
	for fd, wire in ((0, wire_in), (1, wire_out)):
		with contextlib.suppress(OSError):
			os.set_blocking(wire, True)  # the open file is fd 0's / fd 1's again
		with contextlib.suppress(OSError):
			os.dup2(wire, fd)
		with contextlib.suppress(OSError):
			os.close(wire)


def _parse(line: bytes) -> SessionMessage | Exception:
	if line is TOO_LONG:
		return ValueError(f'a message longer than {MAX_LINE} bytes was refused')
	try:
		return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
	except Exception as exc:  # answered by the reader (_refusal): the SDK's server only logs it
		return exc


def _refusal(line: bytes) -> bytes | None:
	"""The JSON-RPC error answering a line the server cannot read, so that a request never waits for
	an answer that will not come: with the request's id when the line is JSON with one (-32600), else
	with a null id (-32700). None for a notification (no id), which gets no answer."""
	request_id: Any = None
	code = -32700
	if line is TOO_LONG:
		what = f'a message longer than {MAX_LINE:,} bytes'
	else:
		try:
			parsed = json.loads(line)
		except (ValueError, RecursionError):
			parsed = None
			what = 'not one JSON object (truncated, or nested too deep)'
		else:
			what = 'not a JSON-RPC 2.0 message this server can read'
			if isinstance(parsed, dict) and isinstance(parsed.get('id'), str | int) and not isinstance(parsed['id'], bool):
				request_id, code = parsed['id'], -32600
			elif isinstance(parsed, dict) and 'method' in parsed and 'id' not in parsed:
				return None  # a notification
			if b'\\ud' in line.lower():
				what += ' (a lone UTF-16 surrogate such as \\ud800 is not text)'
	message = (
		f'Parse error: the message was {what}. Send one JSON-RPC 2.0 object per line, UTF-8 encoded, '
		'with "jsonrpc", "id", "method" and an object as "params".'
	)
	error = {'jsonrpc': '2.0', 'id': request_id, 'error': {'code': code, 'message': message}}
	return json.dumps(error).encode() + b'\n'


@contextlib.asynccontextmanager
async def pipe_stdio() -> AsyncIterator[tuple[Any, Any]]:
	"""Serve MCP on stdin/stdout (both pipes or sockets, see ``usable``): yields the server's read
	and write streams, as the SDK's ``stdio_server`` does."""
	loop = asyncio.get_running_loop()
	wire_in, wire_out = _claim_std_fds()
	lines = _Lines()
	sink = _Sink()
	reading: asyncio.ReadTransport | None = None
	writing: asyncio.WriteTransport | None = None
	# Made before the first await: the first task group loads anyio's asyncio backend, an import, and
	# an import in this thread can wait for one another thread is making (browser-use's, loaded in
	# the background at start), which must never hold up the handshake.
	serving = anyio.create_task_group()
	to_server, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
	write_stream, from_server = anyio.create_memory_object_stream[SessionMessage](0)
	try:
		# closefd=False: the descriptors are closed by _release_std_fds, after fd 0 and 1 are restored
		reading, _ = await loop.connect_read_pipe(lambda: lines, os.fdopen(wire_in, 'rb', buffering=0, closefd=False))
		writing, _ = await loop.connect_write_pipe(lambda: sink, os.fdopen(wire_out, 'wb', buffering=0, closefd=False))
		logger.debug('stdio: the event loop reads stdin and writes stdout (pipes)')
		out = writing

		async def read() -> None:
			async with to_server:
				while (line := await lines.lines.get()) is not None:
					lines.take_up()
					if line is TOO_LONG or line.strip():
						parsed = _parse(line)
						if isinstance(parsed, Exception):
							logger.warning('stdio: an unreadable message was answered with an error: %s', str(parsed)[:300])
							answer = _refusal(line)
							if answer is not None:
								out.write(answer)
							continue
						await to_server.send(parsed)

		async def write() -> None:
			async with from_server:
				async for message in from_server:
					if sink.lost is not None:
						raise sink.lost
					try:
						data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
					except ValueError:  # a lone surrogate (texts.py) where no tool's reply goes through clean()
						data = clean_json(message.message, by_alias=True, exclude_unset=True)
					out.write(data.encode() + b'\n')
					await sink.wait_writable()

		async with serving as group:
			group.start_soon(read)
			group.start_soon(write)
			yield read_stream, write_stream
			group.cancel_scope.cancel()
	finally:
		if reading is not None:
			reading.close()
		if writing is not None:
			writing.close()  # what is still buffered is written first, then connection_lost
			with anyio.CancelScope(shield=True), anyio.move_on_after(1):
				await sink.closed.wait()
		_release_std_fds(wire_in, wire_out)
