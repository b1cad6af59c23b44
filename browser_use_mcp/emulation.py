"""A session's per-tab settings (user agent, locale, timezone, geolocation, extra headers) over CDP.

Launch flags cannot carry them for a session that is a context of a shared Chromium, and
browser-use applies none of them by itself (only the viewport and scale, which the profile
carries), so they are set as CDP overrides on every page target of the session: the tabs open
when it starts, and each tab or popup as it attaches (a hook on the root client's
``Target.attachedToTarget``; without the hook, on browser-use's ``TabCreatedEvent``). The same
code serves a Chromium of its own, a shared one and a Grid node.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from browser_use_mcp.errors import InvalidArgument
from browser_use_mcp.patches import internals
from browser_use_mcp.session_options import SessionOptions
from browser_use_mcp.tasks import held

logger = logging.getLogger('browser_use_mcp.emulation')

APPLY_TIMEOUT = 10.0


class TabSettings:
	"""The CDP commands that give one page target the session's options."""

	def __init__(self, options: SessionOptions, default_user_agent: str) -> None:
		# (the option it serves, CDP method, params)
		self.commands: list[tuple[str, str, dict[str, Any]]] = []
		if options.user_agent is not None or options.locale is not None:
			ua: dict[str, Any] = {'userAgent': options.user_agent or default_user_agent}
			if options.locale is not None:
				ua['acceptLanguage'] = options.locale  # navigator.language(s) and Accept-Language
			self.commands.append(('user_agent' if options.user_agent else 'locale', 'Emulation.setUserAgentOverride', ua))
		if options.locale is not None:
			self.commands.append(('locale', 'Emulation.setLocaleOverride', {'locale': options.locale}))
		if options.timezone is not None:
			self.commands.append(('timezone', 'Emulation.setTimezoneOverride', {'timezoneId': options.timezone}))
		if options.geolocation is not None:
			geo = options.geolocation
			position = {'latitude': geo.latitude, 'longitude': geo.longitude, 'accuracy': geo.accuracy}
			self.commands.append(('geolocation', 'Emulation.setGeolocationOverride', position))
		if options.extra_http_headers:
			headers = {'headers': dict(options.extra_http_headers)}
			self.commands.append(('extra_http_headers', 'Network.enable', {}))
			self.commands.append(('extra_http_headers', 'Network.setExtraHTTPHeaders', headers))

	async def apply(self, client: Any, session_id: str) -> None:
		"""Send them on one target's CDP session, in order; raises the first failure."""
		for _, method, params in self.commands:
			await asyncio.wait_for(client.send_raw(method, params, session_id=session_id), APPLY_TIMEOUT)

	async def apply_first(self, client: Any, session_id: str) -> None:
		"""As ``apply``, on the session's first tab: a value Chromium itself rejects (a locale or
		time zone its ICU does not know) is the caller's bad input, named as such."""
		for option, method, params in self.commands:
			try:
				await asyncio.wait_for(client.send_raw(method, params, session_id=session_id), APPLY_TIMEOUT)
			except Exception as exc:
				said = _cdp_message(exc)
				if 'invalid' in said.lower() and option in ('locale', 'timezone', 'user_agent'):
					raise InvalidArgument(
						f'{option}: the browser does not accept this value ({said}). Use another value, or omit {option}.'
					) from None
				raise


def _cdp_message(exc: Exception) -> str:
	"""Chromium's own words from a failed CDP command (cdp-use raises the error object as is)."""
	first = exc.args[0] if exc.args else None
	if isinstance(first, dict) and isinstance(first.get('message'), str):
		return first['message'][:200]
	return str(exc)[:200]


async def install(browser_session: Any, options: SessionOptions) -> None:
	"""Give every page target of a started session its per-tab options, now and as tabs appear.

	Raises when the tabs open now cannot be set up: a session that does not look as asked is not
	handed out. A tab that appears later and cannot be set up is logged (it may have closed already).
	"""
	if not options.per_tab:
		return
	root = browser_session.cdp_client
	version = await root.send_raw('Browser.getVersion', {})
	settings = TabSettings(options, version.get('userAgent', ''))
	done: set[str] = set()  # CDP sessions already set up (a tab may be announced twice)
	pending: set[asyncio.Task[None]] = set()

	async def apply_to(session_id: str, target_id: str) -> None:
		if session_id in done:
			return
		done.add(session_id)
		try:
			await settings.apply(root, session_id)
		except Exception as exc:
			logger.info('could not apply the session options to tab %s: %s', target_id[-4:], str(exc)[:200])

	def on_attached(params: Any, parent: str | None = None) -> None:
		info = params.get('targetInfo') or {}
		session_id = params.get('sessionId')
		if info.get('type') != 'page' or not session_id:
			return
		held(asyncio.get_running_loop().create_task(apply_to(session_id, info.get('targetId', ''))), pending)

	hooked = False
	try:
		internals.hook_cdp_event(root, 'Target.attachedToTarget', on_attached)
		hooked = True
	except internals.Unavailable as exc:
		logger.warning('new tabs get the session options only when browser-use opens them (%s)', exc)
	if not hooked:
		from browser_use.browser.events import TabCreatedEvent

		async def on_tab(event: TabCreatedEvent) -> None:
			cdp = await browser_session.get_or_create_cdp_session(event.target_id, focus=False)
			await apply_to(cdp.session_id, event.target_id)

		browser_session.event_bus.on(TabCreatedEvent, on_tab)
	for target in browser_session.session_manager.get_all_page_targets():
		cdp = await browser_session.get_or_create_cdp_session(target.target_id, focus=False)
		if cdp.session_id not in done:
			done.add(cdp.session_id)
			await settings.apply_first(root, cdp.session_id)
