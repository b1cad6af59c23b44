"""browser-use's page info read while the page's trees are read, not after them.

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
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
from collections.abc import Iterator
from typing import Any

from browser_use_mcp.patches import Patch, Saved

logger = logging.getLogger(__name__)

BROWSER_USE_VERSION = '0.13.14'
_WATCHDOG = 'browser_use.browser.watchdogs.dom_watchdog:DOMWatchdog'

_saved = Saved()
# within requested(): the watchdog whose build started the read, and the read
_early: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar('browser_use_mcp_early_page_info', default=None)


@contextlib.contextmanager
def requested() -> Iterator[None]:
	"""Within this block, a state's page info is read while its trees are (see the module docstring)."""
	holder: dict[str, Any] = {}
	token = _early.set(holder)
	try:
		yield
	finally:
		_early.reset(token)
		task = holder.pop('task', None)
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
			task = asyncio.ensure_future(page_info(self))
			task.add_done_callback(_consume)
			holder['task'], holder['watchdog'] = task, self
		return await build(self, *args, **kwargs)

	return start_both


def _handed_over(page_info: Any) -> Any:
	@functools.wraps(page_info)
	async def get_page_info(self: Any) -> Any:
		holder = _early.get()
		if holder is not None and holder.get('watchdog') is self:
			task = holder.pop('task', None)
			holder.pop('watchdog', None)
			if task is not None:
				with contextlib.suppress(Exception):
					return await task
		return await page_info(self)

	return get_page_info


def _apply() -> None:
	from browser_use.browser.watchdogs.dom_watchdog import DOMWatchdog

	page_info = DOMWatchdog.__dict__['_get_page_info']
	_saved.replace(
		DOMWatchdog,
		'_build_dom_tree_without_highlights',
		_early_build(DOMWatchdog.__dict__['_build_dom_tree_without_highlights'], page_info),
	)
	_saved.replace(DOMWatchdog, '_get_page_info', _handed_over(page_info))


def _revert() -> None:
	_saved.restore()


PATCH = Patch(
	name='early_page_info',
	title='page info read beside the page trees',
	changes="within our tools' page states, ``DOMWatchdog._build_dom_tree_without_highlights`` also starts "
	"``DOMWatchdog._get_page_info`` (one ``Page.getLayoutMetrics``), and the handler's own ``_get_page_info`` call "
	'of that request gets its answer.',
	why='the page info was a round trip waited for after the whole DOM build: 1.2-1.3 ms of a ~10 ms browser_get_state '
	'on a small page.',
	package='browser-use',
	versions=(BROWSER_USE_VERSION,),
	sources={
		_WATCHDOG: 'c8d7ae529f3c0b42',  # the whole class: the handler's order, the build, the page info read
	},
	replaces=(f'{_WATCHDOG}._build_dom_tree_without_highlights', f'{_WATCHDOG}._get_page_info'),
	switch='early_page_info',
	when_refused='the page info is read after the DOM build: ~1.2 ms more per browser_get_state',
	apply=_apply,
	revert=_revert,
	logger=logger.name,
	refused_message='page info read after the DOM build (browser_get_state ~1.2 ms slower)',
)
