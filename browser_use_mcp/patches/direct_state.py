"""The page state asked of browser-use's DOM watchdog directly, not through an event on its bus.

Why: ``BrowserSession.get_browser_state_summary`` dispatches a ``BrowserStateRequestEvent`` and
waits for its result. On an idle bus the event still goes through bubus's queue, run loop, a
task per handler (plus a deadlock-monitor task) and the completion signals: five or six hops of
the event loop that cost 3-7 ms of a ~20 ms ``browser_get_state`` on a small page, more on a busy
machine, and nothing else handles that event (the DOM watchdog is its only listener).

``request_state`` (used by ``browser_get_state`` and ``include_state``; nothing of browser-use is
replaced) calls ``DOMWatchdog.on_BrowserStateRequestEvent`` itself, holding the bus's lock (from
the ``bus_locks`` patch) so that no other event of the session is processed meanwhile, exactly
as when bubus runs the handler. It does so only when that is equivalent:

- no screenshot is asked for (the handler would then dispatch a ``ScreenshotEvent`` and wait for
  it, which needs the bus);
- the bus is idle: nothing queued, no event being processed (else the state waits its turn
  behind them through the bus, as before);
- ``bus_locks`` is active (its per-bus lock is what excludes the other events).

Anything else goes through ``get_browser_state_summary`` unchanged. A capture that outlasts the
event's own timeout (``TIMEOUT_BrowserStateRequestEvent``, 30 s) is abandoned the way
browser-use abandons it: the session's element indices are cleared and the state carries an
error and no elements.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from browser_use_mcp.patches import Patch, is_active

logger = logging.getLogger(__name__)

BROWSER_USE_VERSION = '0.13.14'
_WATCHDOG = 'browser_use.browser.watchdogs.dom_watchdog:DOMWatchdog'

_enabled = False


def _bus_idle(bus: Any, lock: Any) -> bool:
	queue = getattr(bus, 'event_queue', None)
	return queue is not None and queue.qsize() == 0 and not lock.locked()


def _timed_out(browser_session: Any, watchdog: Any, seconds: float) -> Any:
	"""A state with no elements and an error, after clearing the indices browser-use would use."""
	from browser_use.browser.views import BrowserStateSummary
	from browser_use.dom.views import SerializedDOMState

	browser_session.update_cached_selector_map({})
	watchdog.clear_cache()
	error = (
		f'the page did not answer within {seconds:.0f} s, so none of its elements can be shown or used; '
		'wait or navigate, then ask for the state again'
	)
	return BrowserStateSummary(
		dom_state=SerializedDOMState(_root=None, selector_map={}),
		url='',
		title='',
		tabs=[],
		screenshot=None,
		browser_errors=[error],
		state_error=error,
	)


async def request_state(browser_session: Any, include_screenshot: bool = False) -> Any:
	"""browser-use's ``BrowserStateSummary`` of the focused page (see the module docstring)."""
	if _enabled and not include_screenshot:
		from browser_use_mcp.patches import bus_locks

		watchdog = getattr(browser_session, '_dom_watchdog', None)
		bus = browser_session.event_bus
		if watchdog is not None and is_active(bus_locks.PATCH):
			lock = bus_locks.lock_for(bus)
			if _bus_idle(bus, lock):
				from browser_use.browser.events import BrowserStateRequestEvent

				event = BrowserStateRequestEvent(include_dom=True, include_screenshot=False, include_recent_events=False)
				timeout = event.event_timeout or 30.0
				async with lock:
					try:
						return await asyncio.wait_for(watchdog.on_BrowserStateRequestEvent(event), timeout)
					except TimeoutError:
						logger.warning('the page state took longer than %.0f s; abandoned', timeout)
						return _timed_out(browser_session, watchdog, timeout)
	return await browser_session.get_browser_state_summary(include_screenshot=include_screenshot)


def _apply() -> None:
	global _enabled
	_enabled = True


def _revert() -> None:
	global _enabled
	_enabled = False


def _checks() -> list[str]:
	from browser_use.browser.session import BrowserSession
	from browser_use.browser.watchdogs.dom_watchdog import DOMWatchdog

	found = []
	if '_dom_watchdog' not in getattr(BrowserSession, '__private_attributes__', {}):
		found.append('BrowserSession._dom_watchdog is no longer declared')
	if 'BrowserStateRequestEvent' not in {e.__name__ for e in DOMWatchdog.LISTENS_TO}:
		found.append('DOMWatchdog no longer handles BrowserStateRequestEvent')
	return found


PATCH = Patch(
	name='direct_state',
	title='page state without the event-bus round trip',
	changes='browser_get_state (without a screenshot) calls ``DOMWatchdog.on_BrowserStateRequestEvent`` itself '
	"under the bus's lock when the session's bus is idle, instead of dispatching the event (nothing of browser-use "
	'is replaced).',
	why="bubus's queue, run loop and per-handler tasks cost 3-7 ms of each state on a small page, for an event "
	'only that watchdog handles.',
	package='browser-use',
	versions=(BROWSER_USE_VERSION,),
	sources={
		_WATCHDOG: 'c8d7ae529f3c0b42',  # the whole class: its handler, clear_cache, what it listens to
		'browser_use.browser.session:BrowserSession.get_browser_state_summary': '373dc227a26da5be',
		'browser_use.browser.events:BrowserStateRequestEvent': 'b4a8d7f9285bb3df',
	},
	switch='direct_state',
	when_refused="every state goes through browser-use's event bus: 3-7 ms more per browser_get_state",
	apply=_apply,
	revert=_revert,
	checks=_checks,
	logger=logger.name,
	refused_message='page states requested through the event bus (browser_get_state 3-7 ms slower)',
)
