"""No animation, and no request to browser-use's CDN, in blank tabs.

browser-use's ``AboutBlankWatchdog`` draws a bouncing-logo "screensaver" into every about:blank
tab, loading the logo from ``https://cf.browser-use.com``: a request off the machine for each new
tab (the sessions this server hosts may have no network, or must not leak which hosts they run
on) and a JavaScript animation burning CPU in tabs nobody looks at. The patch replaces the
injection with nothing; the watchdog's other duty (keeping one tab open) is untouched.
"""

from __future__ import annotations

import logging
from typing import Any

from browser_use_mcp.patches import Patch, Saved

logger = logging.getLogger(__name__)

BROWSER_USE_VERSION = '0.13.14'
_WATCHDOG = 'browser_use.browser.watchdogs.aboutblank_watchdog:AboutBlankWatchdog'
_METHOD = '_show_dvd_screensaver_loading_animation_cdp'

_saved = Saved()


async def no_animation(self: Any, target_id: str, browser_session_label: str) -> None:
	"""Stands in for ``AboutBlankWatchdog._show_dvd_screensaver_loading_animation_cdp``."""
	return None


def _apply() -> None:
	from browser_use.browser.watchdogs.aboutblank_watchdog import AboutBlankWatchdog

	_saved.replace(AboutBlankWatchdog, _METHOD, no_animation)


def _revert() -> None:
	_saved.restore()


PATCH = Patch(
	name='blank_tab_animation',
	title='no animation in blank tabs',
	changes="``AboutBlankWatchdog``'s bouncing-logo animation for about:blank tabs becomes a no-op.",
	why="it loads its logo from browser-use's CDN (cf.browser-use.com) for every new tab, a request off the machine, "
	'and animates tabs nobody looks at.',
	package='browser-use',
	versions=(BROWSER_USE_VERSION,),
	sources={
		f'{_WATCHDOG}.{_METHOD}': '0709385d83f493ab',
		f'{_WATCHDOG}._show_dvd_screensaver_on_about_blank_tabs': '11aa8e4515685769',  # its only caller
	},
	replaces=(f'{_WATCHDOG}.{_METHOD}',),
	switch='quiet_blank_tabs',
	when_refused="browser-use's animation: every new blank tab requests the logo from cf.browser-use.com",
	apply=_apply,
	revert=_revert,
	logger=logger.name,
	refused_message="browser-use's about:blank animation kept (it loads a logo from its CDN in every new tab)",
)
