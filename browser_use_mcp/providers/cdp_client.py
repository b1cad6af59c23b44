"""A minimal CDP client for the server's own browser-level commands (contexts, liveness, storage
seeding), over a websocket or a channel of a Chromium's pipe (anything with send, async for, close),
and ``browser_ws_url``, which finds the browser-level websocket of an http(s) CDP endpoint."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import urllib.request
from collections.abc import Callable
from typing import Any

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidURI

from browser_use_mcp.errors import BrowserStartFailed

logger = logging.getLogger('browser_use_mcp.providers.cdp_client')

COMMAND_TIMEOUT = 10.0


class CdpError(Exception):
	pass


class CdpConnection:
	"""A minimal CDP client for the provider's own browser-level commands (contexts, liveness)."""

	def __init__(self, socket: Any) -> None:
		self._socket = socket
		self._ids = itertools.count(1)
		self._pending: dict[int, asyncio.Future[Any]] = {}
		self._closed: list[Callable[[], Any]] = []
		self._listeners: list[Callable[[dict[str, Any]], Any]] = []
		self._reader = asyncio.create_task(self._read(), name='cdp-management')

	@classmethod
	async def open(cls, url: str, timeout: float = COMMAND_TIMEOUT) -> CdpConnection:
		socket = await asyncio.wait_for(connect(url, max_size=None, ping_interval=None, compression=None), timeout)
		return cls(socket)

	def on_close(self, callback: Callable[[], Any]) -> None:
		self._closed.append(callback)

	def on_event(self, callback: Callable[[dict[str, Any]], Any]) -> None:
		"""Call ``callback(message)`` for every event (a message without an id), page-level ones too."""
		self._listeners.append(callback)

	@property
	def open_(self) -> bool:
		return not self._reader.done()

	async def send(self, method: str, params: dict[str, Any] | None = None, session_id: str | None = None) -> dict[str, Any]:
		"""``session_id``: a flattened target session of this connection (page-level commands)."""
		message_id = next(self._ids)
		future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
		self._pending[message_id] = future
		message: dict[str, Any] = {'id': message_id, 'method': method, 'params': params or {}}
		if session_id is not None:
			message['sessionId'] = session_id
		try:
			await self._socket.send(json.dumps(message))
			reply = await asyncio.wait_for(future, COMMAND_TIMEOUT)
		except (ConnectionClosed, OSError) as exc:
			raise CdpError(f'the browser connection closed ({exc})') from None
		finally:
			self._pending.pop(message_id, None)
		if 'error' in reply:
			raise CdpError(reply['error'].get('message', 'CDP error'))
		return reply.get('result', {})

	async def _read(self) -> None:
		try:
			async for message in self._socket:
				data = json.loads(message)
				if 'id' not in data:
					for listener in self._listeners:
						try:
							listener(data)
						except Exception:  # one listener's bug must not stop the reader
							logger.exception('a CDP event listener failed')
					continue
				future = self._pending.get(data.get('id', -1))
				if future is not None and not future.done():
					future.set_result(data)
		except (ConnectionClosed, OSError):
			pass
		finally:
			for future in self._pending.values():
				if not future.done():
					future.set_exception(CdpError('the browser connection closed'))
			for callback in self._closed:
				with contextlib.suppress(Exception):
					callback()

	async def close(self) -> None:
		with contextlib.suppress(Exception):
			await self._socket.close()
		self._reader.cancel()
		with contextlib.suppress(asyncio.CancelledError, Exception):
			await self._reader


def browser_ws_url(cdp_url: str, timeout: float = 5.0) -> str:
	"""The browser-level websocket URL of a CDP endpoint given as http(s)://host:port or ws://...

	Raises BrowserStartFailed naming the URL and what to check when nothing answers there.
	"""
	if cdp_url.startswith(('ws://', 'wss://')):
		return cdp_url
	base = cdp_url.rstrip('/')
	if base.endswith('/json/version'):
		base = base[: -len('/json/version')]
	try:
		opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # the URL is reached directly
		with opener.open(base + '/json/version', timeout=timeout) as reply:
			return json.loads(reply.read())['webSocketDebuggerUrl']
	except (OSError, ValueError, KeyError, InvalidURI) as exc:
		raise BrowserStartFailed(
			f'No browser answers at --cdp-url {cdp_url} ({exc}). Check that the browser is running with '
			'--remote-debugging-port (e.g. chromium --remote-debugging-port=9222) and that the URL is its '
			'http://host:port.'
		) from None
