"""A CDP call waits for its answer on the caller's own task, not on a task of its own.

Why: browser-use wraps each CDP request in ``asyncio.wait_for`` to cap it (60 s by default,
``TimeoutWrappedCDPClient.send_raw``). On Python 3.11 ``wait_for`` runs the request in a task of
its own: a task created, scheduled and finished per request, one more turn of the event loop
each way, ~15 times per small page state and on every action. ``asyncio.timeout`` (3.11+) gives
the same cap on the caller's task: same limit, ``TimeoutError`` on expiry, the request cancelled
the same way.

Not changed, though it was tried: ``get_or_create_cdp_session(focus=True)`` sends
``Runtime.runIfWaitingForDebugger`` and waits for it on every focused lookup, a round trip of
~1 ms. Sending it once per CDP session is not enough: a tab navigating to another site (a new
renderer) can be held waiting for the debugger again, and it then waited out the caller's
deadline (tests/e2e/test_egress.py caught it).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from browser_use_mcp.patches import Patch, Saved

logger = logging.getLogger(__name__)

BROWSER_USE_VERSION = '0.13.14'
_TIMEOUT_CLIENT = 'browser_use.browser._cdp_timeout:TimeoutWrappedCDPClient'

_saved = Saved()


async def capped_send_raw(self: Any, method: str, params: Any | None = None, session_id: str | None = None) -> Any:
	"""Stands in for ``TimeoutWrappedCDPClient.send_raw`` (see the module docstring)."""
	from cdp_use.client import CDPClient

	limit = self._cdp_request_timeout_s
	try:
		async with asyncio.timeout(limit):
			return await CDPClient.send_raw(self, method=method, params=params, session_id=session_id)
	except TimeoutError as exc:
		raise TimeoutError(
			f'CDP method {method!r} got no answer within {limit:.0f} s: the browser may have stopped responding.'
		) from exc


def _apply() -> None:
	from browser_use.browser._cdp_timeout import TimeoutWrappedCDPClient

	_saved.replace(TimeoutWrappedCDPClient, 'send_raw', capped_send_raw)


def _revert() -> None:
	_saved.restore()


PATCH = Patch(
	name='cdp_calls',
	title='CDP calls without a task each',
	changes='``TimeoutWrappedCDPClient.send_raw`` caps a request with ``asyncio.timeout`` instead of ``asyncio.wait_for``.',
	why='on Python 3.11 ``wait_for`` made a task per CDP request: two more event-loop turns per request, on every '
	'call of every session.',
	package='browser-use',
	versions=(BROWSER_USE_VERSION,),
	sources={f'{_TIMEOUT_CLIENT}.send_raw': 'c5d7949a18d06dba'},
	replaces=(f'{_TIMEOUT_CLIENT}.send_raw',),
	switch='lean_cdp_calls',
	when_refused="browser-use's own wrapper: a task per CDP request",
	apply=_apply,
	revert=_revert,
	logger=logger.name,
	refused_message="browser-use's CDP call wrapper kept (a task per request)",
)
