"""Clicks and go-back that wait for what the page actually does, not for fixed sleeps.

Why: browser-use's ``DefaultActionWatchdog`` ends every click with a fixed 0.5 s wait "in case a
download starts", sleeps 0.18 s more inside the click (after scrolling, after moving the mouse,
between press and release), and ends every go-back with a fixed 0.5 s sleep. On a static page a
click cost ~0.7 s, nearly all of it asleep, yet a link to a slow server could still return before
the new page arrived.

The patch makes browser-use build every session's action watchdog from ``TunedActionWatchdog``
(a subclass; the class browser-use looks up at session start is swapped in its module), which:

- runs the click itself with its fixed sleeps of 0.1 s or less skipped (only while that click
  runs; a proxy for the module's ``asyncio`` name does it, everything else passes through);
- then *settles*: it watches the session's CDP events and returns once the page is quiet, i.e.
  a main-frame navigation the click started has finished loading (or 5 s passed), a
  navigation that ended without a new document had 0.5 s to turn into a download, XHR/fetch
  requests the click started have finished (for at most 0.5 s, upstream's whole budget), a tab
  the click opened (a popup, a ``target=_blank`` link) is in browser-use's tab list (for at most
  2 s), and nothing new happened for ``QUIET`` seconds. A download that starts is then awaited exactly as
  browser-use does;
- goes back through history and settles the same way, expecting a navigation.

What is lost: a navigation a script starts more than ``QUIET`` after the click, with no network
request in between (a bare ``setTimeout(() => location = ..., 300)``), is no longer waited for.
When the session's CDP events or downloads cannot be watched (``internals`` refuses those reads),
a click falls back to browser-use's own fixed waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import time
import weakref
from collections.abc import Callable
from typing import Any

from browser_use_mcp.patches import AsyncioProxy, Patch, Saved, internals, per_connection

logger = logging.getLogger(__name__)

BROWSER_USE_VERSION = '0.13.14'
_WATCHDOG = 'browser_use.browser.watchdogs.default_action_watchdog:DefaultActionWatchdog'
_DOWNLOADS = 'browser_use.browser.watchdogs.downloads_watchdog:DownloadsWatchdog'

QUIET = 0.05  # s without new page activity after which a click counts as done
REQUEST_BUDGET = 0.5  # s we wait at most for XHR/fetch a click started (upstream waited 0.5 s for anything)
NAVIGATION_BUDGET = 5.0  # s we wait at most for a navigation a click or go-back started to finish loading
DOWNLOAD_GRACE = 0.5  # s a navigation that ended without a new document has to become a download
NEW_TAB_BUDGET = 2.0  # s we wait at most for browser-use to track a tab the click opened
NEW_TAB_POLL = 0.01  # s between looks at browser-use's tab list while it attaches such a tab
SKIPPED_SLEEP = 0.1  # fixed sleeps up to this long are skipped inside a click

_fast_click: contextvars.ContextVar[bool] = contextvars.ContextVar('browser_use_mcp_fast_click', default=False)
_saved = Saved()


class _ScopedAsyncio(AsyncioProxy):
	"""The ``asyncio`` module, except that short fixed sleeps are skipped inside a tuned click."""

	async def sleep(self, delay: float, result: Any = None) -> Any:
		if _fast_click.get() and delay <= SKIPPED_SLEEP:
			delay = 0
		return await self._real.sleep(delay, result)


# -- page activity -------------------------------------------------------------------------------

TRACKED_REQUEST_TYPES = frozenset({'XHR', 'Fetch'})
MAX_TRACKED_REQUESTS = 512


class PageActivity:
	"""Main-frame navigations and XHR/fetch requests of one browser, from its CDP events.

	cdp-use keeps one handler per CDP method per client, so each handler we add wraps the one
	already registered (none, for these methods, in browser-use 0.13.14) and calls it too
	(``internals.hook_cdp_event``).
	"""

	PAGE_EVENTS = (
		'frameStartedNavigating',
		'frameStartedLoading',
		'frameNavigated',
		'navigatedWithinDocument',
		'frameStoppedLoading',
	)
	NETWORK_EVENTS = ('requestWillBeSent', 'loadingFinished', 'loadingFailed')

	def __init__(self, browser_session: Any, client: Any) -> None:
		self._session = weakref.ref(browser_session)
		self.navigations: dict[str, float] = {}  # main frame id -> when its navigation started
		self.committed: dict[str, float] = {}  # main frame id -> when its latest document committed
		self.ended_without_document = 0.0  # when a navigation last stopped before committing
		self.requests: dict[str, float] = {}  # request id -> when it started
		self.opened: dict[str, float] = {}  # page target id -> when Chromium announced it (a popup, a new tab)
		self.last_activity = 0.0
		self._changed = asyncio.Event()
		for name in self.PAGE_EVENTS:
			self._hook(client, f'Page.{name}', getattr(self, f'_on_{name}'))
		for name in self.NETWORK_EVENTS:
			self._hook(client, f'Network.{name}', getattr(self, f'_on_{name}'))
		self._hook(client, 'Target.targetCreated', self._on_targetCreated)
		self._hook(client, 'Target.targetDestroyed', self._on_targetDestroyed)

	@staticmethod
	def _hook(client: Any, method: str, handler: Callable[[dict[str, Any], str | None], None]) -> None:
		def on_event(params: Any, session_id: str | None = None) -> None:
			try:
				handler(params if isinstance(params, dict) else {}, session_id)
			except Exception:  # never break cdp-use's dispatch; but ours are plain bookkeeping: this is a bug
				logger.exception('page activity: handling %s failed', method)

		internals.hook_cdp_event(client, method, on_event)

	def poke(self) -> None:
		"""Wake ``settle`` (a download began: browser-use tells its callbacks, not CDP handlers)."""
		changed, self._changed = self._changed, asyncio.Event()
		changed.set()

	def _changed_now(self) -> None:
		self.last_activity = time.monotonic()
		changed, self._changed = self._changed, asyncio.Event()
		changed.set()

	def _is_main_frame(self, frame_id: str | None, session_id: str | None) -> bool:
		"""A page target's main frame has the target's id."""
		session = self._session()
		if not frame_id or session is None or not session_id:
			return False
		try:
			return session.session_manager.get_target_id_from_session_id(session_id) == frame_id
		except Exception:
			return False

	def _start(self, frame_id: str | None, session_id: str | None) -> None:
		if self._is_main_frame(frame_id, session_id):
			assert frame_id
			self.navigations[frame_id] = time.monotonic()
			self._changed_now()

	def _on_frameStartedNavigating(self, params: dict[str, Any], session_id: str | None) -> None:  # noqa: N802
		self._start(params.get('frameId'), session_id)

	def _on_frameStartedLoading(self, params: dict[str, Any], session_id: str | None) -> None:  # noqa: N802
		self._start(params.get('frameId'), session_id)

	def _on_frameNavigated(self, params: dict[str, Any], session_id: str | None) -> None:  # noqa: N802
		frame = params.get('frame') or {}
		if not frame.get('parentId') and self._is_main_frame(frame.get('id'), session_id):
			self.committed[frame['id']] = time.monotonic()
			if params.get('type') == 'BackForwardCacheRestore':  # restored whole: no loading follows
				self.navigations.pop(frame['id'], None)
			self._changed_now()

	def _on_navigatedWithinDocument(self, params: dict[str, Any], session_id: str | None) -> None:  # noqa: N802
		frame_id = params.get('frameId')
		if self._is_main_frame(frame_id, session_id):
			assert frame_id
			self.committed[frame_id] = time.monotonic()
			self.navigations.pop(frame_id, None)
			self._changed_now()

	def _on_frameStoppedLoading(self, params: dict[str, Any], session_id: str | None) -> None:  # noqa: N802
		frame_id = params.get('frameId')
		if not self._is_main_frame(frame_id, session_id):
			return
		assert frame_id
		started = self.navigations.pop(frame_id, None)
		if started is not None and self.committed.get(frame_id, 0.0) < started:
			self.ended_without_document = time.monotonic()  # a download, a 204 or a cancelled navigation
		self._changed_now()

	def _on_requestWillBeSent(self, params: dict[str, Any], session_id: str | None) -> None:  # noqa: N802
		if params.get('type') in TRACKED_REQUEST_TYPES and params.get('requestId'):
			if len(self.requests) >= MAX_TRACKED_REQUESTS:  # requests that never end (long polls): forget the oldest
				for request_id in list(self.requests)[: MAX_TRACKED_REQUESTS // 2]:
					del self.requests[request_id]
			self.requests[params['requestId']] = time.monotonic()
			self._changed_now()

	def _on_loadingFinished(self, params: dict[str, Any], session_id: str | None) -> None:  # noqa: N802
		if self.requests.pop(params.get('requestId', ''), None) is not None:
			self._changed_now()

	def _on_loadingFailed(self, params: dict[str, Any], session_id: str | None) -> None:  # noqa: N802
		self._on_loadingFinished(params, session_id)

	def _on_targetCreated(self, params: dict[str, Any], session_id: str | None) -> None:  # noqa: N802
		info = params.get('targetInfo') or {}
		if info.get('type') == 'page' and info.get('targetId'):
			if len(self.opened) >= MAX_TRACKED_REQUESTS:
				self.opened.clear()
			self.opened[info['targetId']] = time.monotonic()
			self._changed_now()

	def _on_targetDestroyed(self, params: dict[str, Any], session_id: str | None) -> None:  # noqa: N802
		if self.opened.pop(params.get('targetId', ''), None) is not None:
			self._changed_now()

	def _untracked_tabs(self, since: float) -> bool:
		"""A tab opened at or after ``since`` that browser-use does not track yet: a click that opens a
		popup returns once the popup is in the session's tab list (browser-use attaches it in a task of
		its own, a round trip or more after Chromium announced it)."""
		session = self._session()
		if session is None:
			return False
		for target_id, when in list(self.opened.items()):
			if when < since:
				continue
			try:
				if session.session_manager.get_target(target_id) is None:
					return True
			except Exception:
				return False
			del self.opened[target_id]
		return False

	async def _wait_for_change(self, timeout: float) -> None:
		if timeout <= 0:
			return
		with contextlib.suppress(TimeoutError):
			await asyncio.wait_for(self._changed.wait(), timeout)

	async def settle(self, since: float, download_started: asyncio.Event | None = None, expect_navigation: bool = False) -> None:
		"""Return once what began at or after ``since`` has finished (see the module docstring)."""
		started = time.monotonic()
		while download_started is None or not download_started.is_set():
			now = time.monotonic()
			navigating = any(t >= since for t in self.navigations.values())
			if navigating:
				if now < started + NAVIGATION_BUDGET:
					await self._wait_for_change(started + NAVIGATION_BUDGET - now)
					continue
			elif expect_navigation and max(self.committed.values(), default=0.0) < since:
				# go-back: its navigation has not even begun; give it upstream's budget to do so
				if now < started + DOWNLOAD_GRACE and self.ended_without_document < since:
					await self._wait_for_change(started + DOWNLOAD_GRACE - now)
					continue
			if download_started is not None and self.ended_without_document >= since:
				until = self.ended_without_document + DOWNLOAD_GRACE
				if now < until:
					await self._wait_for_change(until - now)
					continue
			if any(t >= since for t in self.requests.values()) and now < started + REQUEST_BUDGET:
				await self._wait_for_change(started + REQUEST_BUDGET - now)
				continue
			if now < started + NEW_TAB_BUDGET and self._untracked_tabs(since):
				await self._wait_for_change(NEW_TAB_POLL)  # browser-use's attach sends us no event
				continue
			quiet_until = max(started, self.last_activity if self.last_activity >= since else 0.0) + QUIET
			if now >= quiet_until:
				return
			await self._wait_for_change(quiet_until - now)


_activity: weakref.WeakKeyDictionary[Any, PageActivity] = weakref.WeakKeyDictionary()


def page_activity(browser_session: Any) -> PageActivity | None:
	"""The activity monitor of this session's current CDP connection, attached on first use."""
	return per_connection(
		_activity, browser_session, lambda client: PageActivity(browser_session, client), 'page activity monitor'
	)


# -- the watchdog --------------------------------------------------------------------------------


def _make_tuned_class(base: type) -> type:
	class TunedActionWatchdog(base):  # type: ignore[misc, valid-type]
		"""browser-use's action watchdog, with clicks and go-back that settle instead of sleeping."""

		async def _execute_click_with_download_detection(
			self, click_coro: Any, download_start_timeout: float = 0.5, download_complete_timeout: float = 30.0
		) -> dict | None:
			activity = page_activity(self.browser_session)
			try:
				downloads = internals.downloads_watchdog(self.browser_session)
			except internals.Unavailable:
				activity = None  # downloads could start unseen: browser-use's own wait is the safe one
			if activity is None:  # no monitor: browser-use's own fixed wait
				return await super()._execute_click_with_download_detection(
					click_coro, download_start_timeout, download_complete_timeout
				)
			since = time.monotonic()
			download_started = asyncio.Event()

			def on_download_start(info: dict) -> None:
				if not info.get('auto_download'):
					download_started.set()
					activity.poke()

			if downloads is not None:
				downloads.register_download_callbacks(on_start=on_download_start)

			async def click_then_settle() -> Any:
				token = _fast_click.set(True)
				try:
					metadata = await click_coro
				finally:
					_fast_click.reset(token)
				if not (isinstance(metadata, dict) and 'validation_error' in metadata):
					await activity.settle(since, download_started)
				return metadata

			try:
				# settle() already waited for a download to begin; browser-use only has to notice it
				return await super()._execute_click_with_download_detection(click_then_settle(), 0.01, download_complete_timeout)
			finally:
				if downloads is not None:
					downloads.unregister_download_callbacks(on_start=on_download_start)

		async def on_GoBackEvent(self, event: Any) -> None:
			"""Go one history entry back and return once that page has loaded (or 5 s passed)."""
			cdp_session = await self.browser_session.get_or_create_cdp_session()
			client, session_id = cdp_session.cdp_client, cdp_session.session_id
			history = await client.send.Page.getNavigationHistory(session_id=session_id)
			index, entries = history['currentIndex'], history['entries']
			if index <= 0:
				self.logger.warning('⚠️ Cannot go back - no previous entry in history')
				return
			activity = page_activity(self.browser_session)
			since = time.monotonic()
			await client.send.Page.navigateToHistoryEntry(params={'entryId': entries[index - 1]['id']}, session_id=session_id)
			if activity is None:
				await asyncio.sleep(0.5)  # browser-use's own wait
			else:
				await activity.settle(since, expect_navigation=True)
			self.logger.info(f'🔙 Navigated back to {entries[index - 1]["url"]}')

	TunedActionWatchdog.__qualname__ = TunedActionWatchdog.__name__
	return TunedActionWatchdog


def _apply() -> None:
	from browser_use.browser.watchdogs import default_action_watchdog as module

	_saved.replace(module, 'DefaultActionWatchdog', _make_tuned_class(module.DefaultActionWatchdog))
	_saved.replace(module, 'asyncio', _ScopedAsyncio(asyncio))


def _revert() -> None:
	_saved.restore()


PATCH = Patch(
	name='click_settle',
	title='clicks that settle instead of sleeping',
	changes="sessions get a subclass of browser-use's ``DefaultActionWatchdog`` whose clicks skip their fixed sleeps "
	'of <= 0.1 s and then wait for the page to settle (CDP events), and whose go-back waits for the navigation; '
	"the module's ``asyncio`` name becomes a proxy that skips those sleeps inside a click.",
	why='a click cost ~0.7 s on a static page, nearly all of it fixed sleeps, and a link to a slow server could '
	'return before the new page arrived: click p50 712 ms -> 74 ms, and the next state shows the new page.',
	package='browser-use',
	versions=(BROWSER_USE_VERSION,),
	sources={
		f'{_WATCHDOG}._execute_click_with_download_detection': '1d07d50d97b17e23',
		f'{_WATCHDOG}._click_element_node_impl': 'b4ffc4aa06593ecf',
		f'{_WATCHDOG}._click_on_coordinate': 'f8214f7acf7fa261',
		f'{_WATCHDOG}.on_GoBackEvent': 'e01e9a297281b76d',
		f'{_WATCHDOG}.on_ClickElementEvent': '97cd28fd7ecbe3c2',
		f'{_WATCHDOG}.on_ClickCoordinateEvent': 'f5dc5d891a8c7b3b',
		f'{_DOWNLOADS}.register_download_callbacks': '501eeb96a936c56b',
		f'{_DOWNLOADS}.unregister_download_callbacks': 'fa4b330242b4ee2a',
	},
	replaces=(
		'browser_use.browser.watchdogs.default_action_watchdog:DefaultActionWatchdog',
		'browser_use.browser.watchdogs.default_action_watchdog:asyncio',
	),
	switch='fast_actions',
	when_refused="browser-use's fixed waits: ~0.7 s per click, 0.5 s per go-back",
	apply=_apply,
	revert=_revert,
	logger=logger.name,
	active_message=f'fast clicks enabled (browser-use {BROWSER_USE_VERSION}): clicks and go-back wait for page activity, '
	'not fixed sleeps',
	refused_message='fast clicks disabled, keeping browser-use fixed waits (clicks take ~0.7 s)',
)
