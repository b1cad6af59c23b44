"""No animation, and no request to browser-use's CDN, in blank tabs.

browser-use's ``AboutBlankWatchdog`` draws a bouncing-logo "screensaver" into every about:blank
tab, loading the logo from ``https://cf.browser-use.com``: a request off the machine for each new
tab (the sessions this server hosts may have no network, or must not leak which hosts they run
on) and a JavaScript animation burning CPU in tabs nobody looks at. This replaces the injection
with nothing; the watchdog's other duty (keeping one tab open) is untouched.
"""

from __future__ import annotations

import inspect
import logging

logger = logging.getLogger('browser_use_mcp.quiet_tabs')

_PATCHED = False


def install() -> bool:
	global _PATCHED
	if _PATCHED:
		return True
	try:
		from browser_use.browser.watchdogs.aboutblank_watchdog import AboutBlankWatchdog
	except ImportError:
		return False
	method = getattr(AboutBlankWatchdog, '_show_dvd_screensaver_loading_animation_cdp', None)
	if method is None or list(inspect.signature(method).parameters) != ['self', 'target_id', 'browser_session_label']:
		logger.warning('browser-use changed its about:blank animation; leaving it as is (it loads a logo from its CDN)')
		return False

	async def no_animation(self: AboutBlankWatchdog, target_id: str, browser_session_label: str) -> None:
		return None

	AboutBlankWatchdog._show_dvd_screensaver_loading_animation_cdp = no_animation  # type: ignore[method-assign]
	_PATCHED = True
	return True
