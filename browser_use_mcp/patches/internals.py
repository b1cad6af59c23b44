"""Every read (or write) of a dependency's private attribute, each behind a version and source check.

Outside ``browser_use_mcp.patches`` no module touches a private attribute of a browser-use,
bubus, cdp-use or uvicorn object (tests/unit/test_patches.py checks it); it calls one of these
functions instead. Each is declared in ``READS`` with the package and version it was written
against, the source hashes of what it relies on, the private attributes it reads, and what
happens when it may not run. The check runs once per process, at the first call (or in
``patches.apply_all``); a refused read logs one warning and fails safe:

- ``url_allowed``: refuses the navigation while domains are restricted (closed, never open);
- the others: the caller falls back to browser-use's own behaviour or a plainer message.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from browser_use_mcp.patches import pin_problems

logger = logging.getLogger(__name__)

BROWSER_USE_VERSION = '0.13.14'
CDP_USE_VERSION = '1.4.5'
_SESSION = 'browser_use.browser.session:BrowserSession'


class Unavailable(Exception):
	"""A private read that may not run here (version or source differs, attribute missing)."""


@dataclass(frozen=True)
class PrivateRead:
	name: str
	reads: str  # what it touches, for the docs and the warning
	package: str
	versions: tuple[str, ...]
	fallback: str  # what happens when it may not run
	sources: Mapping[str, str] = field(default_factory=dict)
	session_attributes: tuple[str, ...] = ()  # private attributes of BrowserSession it reads or writes

	def problems(self) -> list[str]:
		return pin_problems(self.package, self.versions, self.sources, self._attributes_declared)

	def _attributes_declared(self) -> list[str]:
		if not self.session_attributes:
			return []
		from browser_use.browser.session import BrowserSession

		declared = getattr(BrowserSession, '__private_attributes__', {})
		return [f'BrowserSession.{a} is no longer declared' for a in self.session_attributes if a not in declared]


READS: tuple[PrivateRead, ...] = (
	PrivateRead(
		'url_allowed',
		'BrowserSession._security_watchdog._is_url_allowed(url)',
		'browser-use',
		(BROWSER_USE_VERSION,),
		'while allowed_domains, prohibited_domains or block_ip_addresses are configured, every navigation a tool '
		'starts is refused; without them, navigations go ahead (browser-use checks nothing then either)',
		{'browser_use.browser.watchdogs.security_watchdog:SecurityWatchdog._is_url_allowed': 'a5815644c77988b6'},
		('_security_watchdog',),
	),
	PrivateRead(
		'downloads_watchdog',
		'BrowserSession._downloads_watchdog',
		'browser-use',
		(BROWSER_USE_VERSION,),
		"clicks keep browser-use's fixed download wait (click_settle does not settle them)",
		{
			'browser_use.browser.watchdogs.downloads_watchdog:DownloadsWatchdog.register_download_callbacks': '501eeb96a936c56b',
			'browser_use.browser.watchdogs.downloads_watchdog:DownloadsWatchdog.unregister_download_callbacks': 'fa4b330242b4ee2a',
		},
		('_downloads_watchdog',),
	),
	PrivateRead(
		'auto_downloads',
		'DownloadsWatchdog._detected_downloads (URLs browser-use is fetching again itself, an attachment or a PDF)',
		'browser-use',
		(BROWSER_USE_VERSION,),
		"a navigation that became a download, or a click that started one, may reply while browser-use's own second "
		'copy of the file is being written (the file empty for a moment)',
		{'browser_use.browser.watchdogs.downloads_watchdog:DownloadsWatchdog._setup_network_monitoring': '6bb6555b3353f6c1'},
	),
	PrivateRead(
		'root_cdp_client',
		'BrowserSession._cdp_client_root',
		'browser-use',
		(BROWSER_USE_VERSION,),
		"clicks and go-back keep browser-use's fixed waits (no page-activity monitor)",
		{},
		('_cdp_client_root',),
	),
	PrivateRead(
		'dom_service',
		'BrowserSession._dom_watchdog._dom_service (the DomService the DOM watchdog reads states with)',
		'browser-use',
		(BROWSER_USE_VERSION,),
		"no page state is built ahead after a page-changing call: the read that follows builds it, as browser-use's does",
		{'browser_use.browser.watchdogs.dom_watchdog:DOMWatchdog': 'c8d7ae529f3c0b42'},
		('_dom_watchdog',),
	),
	PrivateRead(
		'cdp_event_hook',
		'CDPClient._event_registry._handlers (chained, then register())',
		'cdp-use',
		(CDP_USE_VERSION,),
		"clicks and go-back keep browser-use's fixed waits (no page-activity monitor)",
		{'cdp_use.cdp.registry:EventRegistry': 'dbdc6b767a9768c7', 'cdp_use.client:CDPClient.__init__': '192e3ae897256b5d'},
	),
	PrivateRead(
		'installed_browser_path',
		'LocalBrowserWatchdog._find_installed_browser_path()',
		'browser-use',
		(BROWSER_USE_VERSION,),
		"a browser only browser-use's own search finds (e.g. Playwright's) is not found: set BROWSER_USE_MCP_CHROMIUM",
		{
			'browser_use.browser.watchdogs.local_browser_watchdog:LocalBrowserWatchdog._find_installed_browser_path': (
				'52aafe7bd533f259'
			)
		},
	),
	PrivateRead(
		'mark_intentional_stop',
		'BrowserSession._intentional_stop = True',
		'browser-use',
		(BROWSER_USE_VERSION,),
		'closing a session may make browser-use log a dropped connection and try to reconnect',
		{f'{_SESSION}._attach_ws_drop_callback': '0463cf4d635e3332'},
		('_intentional_stop',),
	),
)
_BY_NAME = {read.name: read for read in READS}

_lock = threading.Lock()
_verdicts: dict[str, list[str]] = {}


def problems(name: str) -> list[str]:
	"""Why the read ``name`` may not run here (checked once per process; one warning if so)."""
	found = _verdicts.get(name)
	if found is not None:
		return found
	with _lock:
		found = _verdicts.get(name)
		if found is None:
			read = _BY_NAME[name]
			found = _verdicts[name] = read.problems()
			if found:
				logger.warning(
					'cannot use %s internals for %s (%s): %s; instead, %s',
					read.package,
					name,
					read.reads,
					'; '.join(found),
					read.fallback,
				)
	return found


def check_all() -> dict[str, list[str]]:
	"""Every read's problems (empty lists when all may run); logs one warning per refused read."""
	return {read.name: problems(read.name) for read in READS}


def forget() -> None:
	"""Check again at the next call (for tests)."""
	with _lock:
		_verdicts.clear()


def _guarded(name: str) -> None:
	found = problems(name)
	if found:
		raise Unavailable('; '.join(found))


def restricted(browser_session: Any) -> bool:
	"""Whether the profile limits where this session may go (public BrowserProfile fields)."""
	profile = browser_session.browser_profile
	return bool(
		getattr(profile, 'allowed_domains', None)
		or getattr(profile, 'prohibited_domains', None)
		or getattr(profile, 'block_ip_addresses', False)
	)


def url_allowed(browser_session: Any, url: str) -> bool:
	"""browser-use's own verdict on ``url`` for this session, before anything is sent.

	Fails closed: when the profile restricts domains (or IP addresses) and the verdict cannot be
	had (the check is refused, the session has no security watchdog, or the check raises), it
	raises ``Unavailable`` with the reason; the caller refuses the navigation. With no restriction
	configured there is nothing to enforce, and it says True.
	"""
	try:
		_guarded('url_allowed')
		watchdog = getattr(browser_session, '_security_watchdog', None)
		check: Callable[[str], Any] | None = getattr(watchdog, '_is_url_allowed', None)
		if check is None:
			raise Unavailable('the session has no security watchdog' if watchdog is None else 'its security check is missing')
		try:
			return bool(check(url))
		except Exception as exc:
			raise Unavailable(f'its security check failed: {type(exc).__name__}: {exc}') from exc
	except Unavailable:
		if restricted(browser_session):
			raise
		return True


def downloads_watchdog(browser_session: Any) -> Any:
	"""The session's downloads watchdog (None when it has none); ``Unavailable`` when unreadable."""
	_guarded('downloads_watchdog')
	try:
		return browser_session._downloads_watchdog
	except AttributeError as exc:
		raise Unavailable(str(exc)) from exc


def auto_downloads(watchdog: Any) -> set[str]:
	"""The URLs the downloads watchdog is fetching again itself right now (it saves attachments and
	PDFs it sees in a response once more, over the file the browser saved); Unavailable when
	unreadable."""
	_guarded('auto_downloads')
	found = getattr(watchdog, '_detected_downloads', None)
	if not isinstance(found, set):
		raise Unavailable('DownloadsWatchdog._detected_downloads is not a set')
	return found


def root_cdp_client(browser_session: Any) -> Any:
	"""The session's root CDP client (every target's events pass through it), or None."""
	try:
		_guarded('root_cdp_client')
		return getattr(browser_session, '_cdp_client_root', None)
	except Unavailable:
		return None


def dom_service(browser_session: Any) -> Any:
	"""The ``DomService`` of the session's DOM watchdog (made at its first state), or None."""
	try:
		_guarded('dom_service')
	except Unavailable:
		return None
	watchdog = getattr(browser_session, '_dom_watchdog', None)
	return getattr(watchdog, '_dom_service', None) if watchdog is not None else None


def hook_cdp_event(client: Any, method: str, handler: Callable[[Any, str | None], Any]) -> None:
	"""Call ``handler(params, session_id)`` on every ``method`` event of ``client``, then whatever
	handler was registered before (cdp-use keeps one per method). ``Unavailable`` when not possible."""
	_guarded('cdp_event_hook')
	registry = getattr(client, '_event_registry', None)
	handlers = getattr(registry, '_handlers', None)
	if not isinstance(handlers, dict) or not callable(getattr(registry, 'register', None)):
		raise Unavailable('the CDP client has no event registry')
	previous = handlers.get(method)

	def on_event(params: Any, session_id: str | None = None) -> Any:
		handler(params, session_id)
		if previous is not None:
			return previous(params, session_id)
		return None

	registry.register(method, on_event)


def installed_browser_path() -> str | None:
	"""browser-use's own search for an installed Chromium/Chrome (Playwright's cache among others)."""
	try:
		_guarded('installed_browser_path')
		from browser_use.browser.watchdogs.local_browser_watchdog import LocalBrowserWatchdog

		return LocalBrowserWatchdog._find_installed_browser_path()
	except Exception:
		return None


def mark_intentional_stop(browser_session: Any) -> bool:
	"""Tell browser-use the connection is about to drop on purpose (no reconnect). False if not told."""
	try:
		_guarded('mark_intentional_stop')
		browser_session._intentional_stop = True
		return True
	except Exception:
		return False
