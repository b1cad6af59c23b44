"""browser-use's page info read while the page's trees are read, not after them; its check for
pending network requests read while our tool reads the titles, not after them.

Why: ``DOMWatchdog.on_BrowserStateRequestEvent`` (0.13.14) builds the DOM state and only then asks
for the page info (viewport, page size and scroll position: one ``Page.getLayoutMetrics``), one
more round trip waited for after the whole build: 1.2-1.3 ms of a ~10 ms ``browser_get_state`` on
a small page. Within a state request of our tools (``requested()``, entered by ``capture_state``)
the patch starts that read when the build starts (``_build_dom_tree_without_highlights``) and
hands its answer to the handler's own ``_get_page_info`` call of the same request. The same
request with the same parameters, so the same answer on a page that is not changing; on one that
is changing it is read at the start of the build instead of at its end (a moment apart from the
trees' either way). A read that failed is made again the handler's way. Every other state (an
agent's, a request with no build) is untouched.

The same hand-over for ``_get_pending_network_requests`` (one ``Runtime.evaluate`` the handler
awaits before anything else, to decide whether to give a loading page 0.3 s): ``requested(session)``
starts it as the block is entered, beside our tool's own reads of the tab titles, and the handler's
call gets its answer. That is one round trip fewer in a row on every state: ~0.5 ms (median of
eight alternating rounds) of a ~7 ms state of a small page, in process (docs/performance.md). It is read about a millisecond earlier
than the handler would have read it.

Both early reads send their tab's ``Runtime.runIfWaitingForDebugger`` (browser-use's
``get_or_create_cdp_session(focus=True)``) just before their command instead of awaiting it
(``_Unfocused``): a tab answers in order, so the page info's ``Page.getLayoutMetrics`` waits in
the tab's queue right behind the trees' requests, not for the resume's answer behind the trees'
answers and then for a round trip of its own (two in a row after the trees, 2-4 ms of a small
page's state). ``browser_get_state`` enters ``requested`` before the focus check every tool makes
(``tools.common.read_ahead``, beside the read of the page's document), and the state's own
``requested`` block within it, for the same session and focused tab, uses that block's reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
from collections.abc import Iterator
from typing import Any

from browser_use_mcp.patches import Patch, Saved, is_active

logger = logging.getLogger(__name__)

BROWSER_USE_VERSION = '0.13.14'
_WATCHDOG = 'browser_use.browser.watchdogs.dom_watchdog:DOMWatchdog'

_saved = Saved()
_pending_original: dict[str, Any] = {}  # 'read': browser-use's _get_pending_network_requests while the patch is applied
# within requested(): the watchdog whose build started the read, and the read
_early: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar('browser_use_mcp_early_page_info', default=None)


@contextlib.contextmanager
def requested(browser_session: Any = None) -> Iterator[None]:
	"""Within this block, a state's page info is read while its trees are, and (given the browser
	session) its pending network requests from the start of the block (see the module docstring).
	Within a block of the same browser session and focused tab, this one is that block's: its reads
	are the ones used."""
	watchdog = getattr(browser_session, '_dom_watchdog', None) if browser_session is not None else None
	focused = getattr(browser_session, 'agent_focus_target_id', None)
	outer = _early.get()
	if outer is not None and watchdog is not None and outer.get('of') is watchdog and outer.get('for') == focused:
		yield
		return
	holder: dict[str, Any] = {'of': watchdog, 'for': focused}
	original = _pending_original.get('read')
	if watchdog is not None and original is not None and is_active(PATCH):
		pending = asyncio.ensure_future(original(_Unfocused(watchdog)))
		pending.add_done_callback(_consume)
		holder['pending'], holder['pending_of'] = pending, watchdog
	token = _early.set(holder)
	try:
		yield
	finally:
		_early.reset(token)
		for key in ('task', 'pending'):
			task = holder.pop(key, None)
			if task is not None and not task.done():  # the handler never asked (the build failed): not left running
				task.cancel()


def _consume(task: asyncio.Future[Any]) -> None:
	if not task.cancelled():
		task.exception()  # retrieved: a failed early read is not "never retrieved"


def _early_build(build: Any, page_info: Any) -> Any:
	@functools.wraps(build)
	async def start_both(self: Any, *args: Any, **kwargs: Any) -> Any:
		holder = _early.get()
		if holder is not None and 'task' not in holder:
			# the tab's resume sent just before the read, not awaited: the read is queued in the tab
			# right behind the trees' requests, not behind their answers
			task = asyncio.ensure_future(page_info(_Unfocused(self)))
			task.add_done_callback(_consume)
			holder['task'], holder['watchdog'] = task, self
		return await build(self, *args, **kwargs)

	return start_both


def _handed_over_from(original: Any, task_key: str, owner_key: str) -> Any:
	"""``original`` (a watchdog method), answered by the early read in ``holder[task_key]`` when that
	read was started for this watchdog; made again the handler's way when it failed or none was."""

	@functools.wraps(original)
	async def handed_over(self: Any) -> Any:
		holder = _early.get()
		if holder is not None and holder.get(owner_key) is self:
			task = holder.pop(task_key, None)
			holder.pop(owner_key, None)
			if task is not None:
				with contextlib.suppress(Exception):
					return await task
		return await original(self)

	return handed_over


def _handed_over(page_info: Any) -> Any:
	return _handed_over_from(page_info, 'task', 'watchdog')


def _pending_handed_over(pending: Any) -> Any:
	return _handed_over_from(pending, 'pending', 'pending_of')


class _Unfocused:
	"""The watchdog as ``_get_pending_network_requests`` sees it: its CDP session is the focused tab's
	(the focus is still checked), but browser-use's ``Runtime.runIfWaitingForDebugger`` is sent just
	before the read's evaluate instead of awaited before it, one round trip fewer in a row."""

	def __init__(self, watchdog: Any) -> None:
		self._watchdog = watchdog
		self.browser_session = _UnfocusedSession(watchdog.browser_session)

	def __getattr__(self, name: str) -> Any:
		return getattr(self._watchdog, name)


class _UnfocusedSession:
	def __init__(self, browser_session: Any) -> None:
		self._browser_session = browser_session

	async def get_or_create_cdp_session(self, target_id: Any = None, focus: bool = True) -> Any:
		session = await self._browser_session.get_or_create_cdp_session(target_id=target_id, focus=False)
		# browser-use's resume of a tab held for the debugger, sent first but not waited for (browser-use
		# ignores its answer too): the read's evaluate follows it in the tab's queue, not its answer
		resume = asyncio.ensure_future(session.cdp_client.send.Runtime.runIfWaitingForDebugger(session_id=session.session_id))
		resume.add_done_callback(_consume)
		await asyncio.sleep(0)  # its message leaves before the caller's
		return session

	def __getattr__(self, name: str) -> Any:
		return getattr(self._browser_session, name)


def _apply() -> None:
	from browser_use.browser.watchdogs.dom_watchdog import DOMWatchdog

	pending = DOMWatchdog.__dict__['_get_pending_network_requests']
	_saved.replace(DOMWatchdog, '_get_pending_network_requests', _pending_handed_over(pending))
	_pending_original['read'] = pending
	page_info = DOMWatchdog.__dict__['_get_page_info']
	_saved.replace(
		DOMWatchdog,
		'_build_dom_tree_without_highlights',
		_early_build(DOMWatchdog.__dict__['_build_dom_tree_without_highlights'], page_info),
	)
	_saved.replace(DOMWatchdog, '_get_page_info', _handed_over(page_info))


def _revert() -> None:
	_pending_original.clear()
	_saved.restore()


PATCH = Patch(
	name='early_page_info',
	title='page info read beside the page trees, pending requests beside the titles',
	changes="within our tools' page states, ``DOMWatchdog._build_dom_tree_without_highlights`` also starts "
	"``DOMWatchdog._get_page_info`` (one ``Page.getLayoutMetrics``), and the handler's own ``_get_page_info`` call "
	'of that request gets its answer; ``DOMWatchdog._get_pending_network_requests`` is started as the request '
	"begins and the handler's own call gets its answer; each early read sends its tab's resume just before its "
	'command, not awaited.',
	why='the page info was a round trip waited for after the whole DOM build: 1.2-1.3 ms of a ~10 ms browser_get_state '
	'on a small page; the pending-requests check was two more round trips in a row before the build (~0.5 ms).',
	package='browser-use',
	versions=(BROWSER_USE_VERSION,),
	sources={
		_WATCHDOG: 'c8d7ae529f3c0b42',  # the whole class: the handler's order, the build, the page info read
	},
	replaces=(
		f'{_WATCHDOG}._build_dom_tree_without_highlights',
		f'{_WATCHDOG}._get_page_info',
		f'{_WATCHDOG}._get_pending_network_requests',
	),
	switch='early_page_info',
	when_refused='the page info is read after the DOM build and the pending requests before it: ~2 ms more per browser_get_state',
	apply=_apply,
	revert=_revert,
	logger=logger.name,
	refused_message='page info read after the DOM build, pending requests before it (browser_get_state ~2 ms slower)',
)
