"""The transports that carry MCP to the server: stdio (``stdio.py``) and HTTP, Streamable and legacy
SSE (``http.py``). Each builds the registry, the catalogue and the MCP server (``server.py``), serves
until the transport ends or a signal arrives (``run_until_stopped``: sessions are closed first), and
the process then ends in one place (``end_process``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import Any, NoReturn

from browser_use_mcp.sessions import SessionRegistry

logger = logging.getLogger('browser_use_mcp.server')


async def run_until_stopped(
	serve: Awaitable[Any], registry: SessionRegistry, grace: float, on_hangup: Callable[[], None] | None = None
) -> None:
	"""Serve until the transport ends or SIGTERM/SIGINT arrives, then close every session.
	SIGHUP stops the server too, unless ``on_hangup`` is given (HTTP with a token file: reload)."""
	loop = asyncio.get_running_loop()
	stop = asyncio.Event()
	for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
		with contextlib.suppress(NotImplementedError, RuntimeError):
			loop.add_signal_handler(sig, on_hangup if sig == signal.SIGHUP and on_hangup is not None else stop.set)
	serving = asyncio.ensure_future(serve)
	stopping = asyncio.ensure_future(stop.wait())
	try:
		await asyncio.wait({serving, stopping}, return_when=asyncio.FIRST_COMPLETED)
		if serving.done() and not serving.cancelled() and serving.exception() is not None:
			logger.error('transport ended with an error: %r', serving.exception())
	finally:
		stopping.cancel()
		# Sessions first: in-flight calls get their "session closed" error while the transport
		# can still deliver it; then the transport.
		try:
			await asyncio.wait_for(registry.shutdown(), timeout=grace + 5)
		except Exception:  # shutdown itself never raises: this is its time running out
			logger.warning('closing the sessions took longer than %.0f s; stopping anyway', grace + 5, exc_info=True)
		serving.cancel()
		try:
			await asyncio.wait_for(serving, timeout=1)
		except asyncio.CancelledError:
			pass  # what we asked for
		except Exception as exc:  # its error, if it had one, was logged above; the process is ending
			logger.debug('transport ended with %r after being stopped', exc)
		for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
			with contextlib.suppress(NotImplementedError, RuntimeError):
				loop.remove_signal_handler(sig)


def end_process(code: int = 0) -> NoReturn:
	"""The one way the server process ends, once every session is closed: at once, without waiting for
	threads (stdio's reader may block on a read forever after a signal) or interpreter teardown."""
	for stream in (sys.stdout, sys.stderr):
		with contextlib.suppress(Exception):
			stream.flush()
	os._exit(code)
