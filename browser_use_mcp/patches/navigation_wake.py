"""A navigation returns once its page is ready, not at the next 50 ms tick of a poll.

browser-use's ``BrowserSession._navigate_and_wait`` sends ``Page.navigate``, then looks through the
tab's lifecycle-event buffer (fed by ``SessionManager``'s one ``Page.lifecycleEvent`` handler) for
the new document's ``load`` or ``networkIdle``, sleeping 50 ms between looks. A page ready 10 ms
after ``Page.navigate`` answered still waits for the tick: on a small page most of the time between
``load`` and the reply was that sleep, on every ``browser_navigate`` (docs/performance.md).

The patch wakes that poll when a lifecycle event arrives: inside ``_navigate_and_wait`` (a context
variable marks it) the poll's 50 ms sleep ends at the next ``Page.lifecycleEvent`` of the session's
CDP connection, or after 50 ms, whichever comes first. The looks are browser-use's own, on its own
buffer, with its own deadline; only the waiting between them changes. When the event cannot be
hooked, the poll sleeps its 50 ms as before.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import functools
import logging
import weakref
from typing import Any

from browser_use_mcp.patches import AsyncioProxy, Patch, Saved, internals, per_connection

BROWSER_USE_VERSION = '0.13.14'
_SESSION = 'browser_use.browser.session:BrowserSession'
POLL = 0.05  # s: browser-use's poll interval in _navigate_and_wait (poll_interval)

# the wake-up of the navigation running in this task (set only inside _navigate_and_wait)
_wake: contextvars.ContextVar[asyncio.Event | None] = contextvars.ContextVar('browser_use_mcp_navigation_wake', default=None)
_saved = Saved()
logger = logging.getLogger(__name__)
stats: collections.Counter[str] = collections.Counter()  # poll sleeps 'woken' by an event, or that 'ticked' to their end


class _Waiters:
	"""The navigations waiting on one CDP connection; woken by each of its lifecycle events."""

	def __init__(self) -> None:
		self.events: set[asyncio.Event] = set()

	def on_lifecycle(self, params: Any, session_id: str | None = None) -> None:
		# runs inside cdp-use's dispatch, before browser-use's own handler appends the event to its
		# buffer: a woken poll resumes only once this dispatch has returned, so it finds it there
		for event in self.events:
			event.set()


_connections: weakref.WeakKeyDictionary[Any, _Waiters] = weakref.WeakKeyDictionary()


def _hooked(client: Any) -> _Waiters:
	waiters = _Waiters()
	internals.hook_cdp_event(client, 'Page.lifecycleEvent', waiters.on_lifecycle)
	return waiters


def _waiters(browser_session: Any) -> _Waiters | None:
	"""The waiters of this session's current CDP connection, its lifecycle events hooked on first use
	(None when they cannot be: the poll keeps its ticks)."""
	return per_connection(_connections, browser_session, _hooked, 'lifecycle events hook')


class _ScopedAsyncio(AsyncioProxy):
	"""The ``asyncio`` module, except that the navigation poll's sleep ends at a lifecycle event."""

	async def sleep(self, delay: float, result: Any = None) -> Any:
		wake = _wake.get()
		if wake is None or delay != POLL:
			return await self._real.sleep(delay, result)
		if not wake.is_set():  # set: an event came since the last look, look again now
			try:
				await self._real.wait_for(wake.wait(), delay)
			except TimeoutError:
				stats['ticked'] += 1
				return result
		stats['woken'] += 1
		wake.clear()
		return result


def _apply() -> None:
	from browser_use.browser import session as module

	original = module.BrowserSession._navigate_and_wait

	@functools.wraps(original)
	async def navigate_and_wait(self: Any, *args: Any, **kwargs: Any) -> Any:
		waiters = _waiters(self)
		if waiters is None:
			return await original(self, *args, **kwargs)
		wake = asyncio.Event()
		waiters.events.add(wake)
		token = _wake.set(wake)
		try:
			return await original(self, *args, **kwargs)
		finally:
			_wake.reset(token)
			waiters.events.discard(wake)

	_saved.replace(module.BrowserSession, '_navigate_and_wait', navigate_and_wait)
	_saved.replace(module, 'asyncio', _ScopedAsyncio(asyncio))


def _revert() -> None:
	_saved.restore()


PATCH = Patch(
	name='navigation_wake',
	title='navigations return when the page is ready',
	changes="``BrowserSession._navigate_and_wait``'s 50 ms poll of the lifecycle-event buffer wakes at the next "
	"``Page.lifecycleEvent`` of the session's connection (the session module's ``asyncio`` name becomes a proxy "
	'that changes only that sleep, only inside that method).',
	why='a page ready 10 ms after Page.navigate answered waited for the next 50 ms tick: on a small page most of '
	'the time between its load and the reply.',
	package='browser-use',
	versions=(BROWSER_USE_VERSION,),
	sources={f'{_SESSION}._navigate_and_wait': 'f8479a626304b131'},
	replaces=(f'{_SESSION}._navigate_and_wait', 'browser_use.browser.session:asyncio'),
	switch='navigation_wake',
	when_refused="browser-use's own poll: a navigation returns at the first 50 ms tick after its page is ready",
	apply=_apply,
	revert=_revert,
	logger=logger.name,
	refused_message="browser-use's own navigation poll kept (a navigation returns up to 50 ms after its page is ready)",
)
