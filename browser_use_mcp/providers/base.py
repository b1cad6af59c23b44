"""The provider seam: ``Endpoint`` (what a provider owns), ``Browser`` (what a session holds)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from browser_use_mcp import tasks as task_scopes
from browser_use_mcp.browser import SessionDirs, build_profile
from browser_use_mcp.domains import run_domains
from browser_use_mcp.egress import BYPASS_NONE, Door, EgressGate
from browser_use_mcp.errors import BrowserStartFailed, InvalidArgument
from browser_use_mcp.patches import internals
from browser_use_mcp.session_options import SessionOptions, operator_proxy, refuse_proxy_under
from browser_use_mcp.tasks import TaskScope

logger = logging.getLogger('browser_use_mcp.providers')

CONNECT_TIMEOUT = 20.0  # s for browser-use to connect to an endpoint that is up


class Endpoint(ABC):
	"""A CDP endpoint a provider made for one session, and the means to end it.

	``on_death`` callbacks run (once, on the event loop) when the browser behind it goes away
	by itself; never after ``release`` began.
	"""

	cdp_url: str
	is_local: bool = True  # browser-use may treat the browser as on this machine (downloads, paths)
	where: str = 'local'  # shown by browser_list_sessions

	def __init__(self) -> None:
		self._death_callbacks: list[Callable[[], Any]] = []
		self.releasing = False

	def on_death(self, callback: Callable[[], Any]) -> None:
		self._death_callbacks.append(callback)

	def died(self) -> None:
		"""For subclasses: the browser went away by itself."""
		if self.releasing:
			return
		for callback in list(self._death_callbacks):
			try:
				callback()
			except Exception:
				logger.exception('a browser-death callback failed')

	def take_notes(self) -> list[str]:
		"""What the session's next reply should tell its client once (e.g. where a download went)."""
		return []

	def started(self) -> None:  # noqa: B027 - only a browser of our own has anything to do
		"""A session has started on it: a browser of ours now yields the CPU to the server's loop
		(ChromiumProcess.yield_to_the_server)."""

	async def browser_connection(self) -> Any:
		"""A connection of our own to the browser of this session's pages (a ``CdpConnection``: the
		caller closes it), and the session's browser context in it (None: the default context)."""
		from browser_use_mcp.providers.cdp_client import CdpConnection

		return await CdpConnection.open(self.cdp_url), None

	@abstractmethod
	def alive(self) -> bool: ...

	@abstractmethod
	def death_detail(self) -> str:
		"""Why it is gone, for the one-time "browser died" error (e.g. Chromium's exit status)."""

	async def death_noticed(self) -> None:  # noqa: B027 - only a browser process of ours has an exit to collect
		"""Once ``alive()`` is False: until what ``death_detail`` reports is known (a process's exit status)."""

	@abstractmethod
	async def release(self, graceful: bool = False) -> None:
		"""End it (kill, dispose, delete); never raises. ``graceful`` lets a profile flush to disk."""


class Browser:
	"""One session's browser: browser-use's ``BrowserSession`` on a provider's endpoint, and every
	asyncio task started for it (cancelled when it closes)."""

	def __init__(self, endpoint: Endpoint, session: Any, tasks: TaskScope, door: Door | None = None) -> None:
		self.endpoint = endpoint
		self.session = session
		self.tasks = tasks
		self.door = door  # the session's egress proxy (None: its traffic is not ours to check)
		self._closed = False

	@property
	def where(self) -> str:
		return self.endpoint.where

	def alive(self) -> bool:
		return not self._closed and self.endpoint.alive()

	def on_death(self, callback: Callable[[], Any]) -> None:
		self.endpoint.on_death(callback)

	def death_detail(self) -> str:
		return self.endpoint.death_detail()

	async def death_noticed(self) -> None:
		await self.endpoint.death_noticed()

	def take_notes(self) -> list[str]:
		return self.endpoint.take_notes()

	async def close(self, graceful: bool = False) -> None:
		"""Tear everything down; never raises."""
		if self._closed:
			return
		self._closed = True
		self.endpoint.releasing = True
		await stop_everything(self.session, self.endpoint, self.tasks, graceful, self.door)


class BrowserProvider(ABC):
	"""Makes browsers for sessions. ``endpoint`` is the one thing a provider must say; ``open``
	connects browser-use to it the same way for every provider."""

	# session options this kind of browser cannot honour, with why (refused up front)
	unsupported_options: dict[str, str] = {}  # noqa: RUF012 - read-only, overridden per class
	network_ours = True  # False: the browser reaches the web through a network we cannot route (Grid, --cdp-url as is)
	egress: EgressGate | None = None  # the server's egress policy (set by runtime.choose_providers); None: unchecked

	def __init__(self, *, profile_base: dict[str, Any], headless: bool) -> None:
		self.profile_base = profile_base  # config.json's browser profile
		self.headless = headless

	@abstractmethod
	async def endpoint(self, dirs: SessionDirs, profile: Any, options: SessionOptions | None = None) -> Endpoint:
		"""A running browser for a session whose BrowserProfile is ``profile`` (made with ``options``)."""

	def launch_args(self) -> tuple[str, ...]:
		"""The operator's extra Chromium flags for the browsers this provider launches."""
		return tuple(getattr(self, 'user_args', ()))

	def check_options(self, options: SessionOptions) -> None:
		"""Refuse, before anything is made, options this server cannot give a session: one this
		kind of browser cannot honour, a proxy under the operator's, domains wider than the server's."""
		for name in options.given:
			why = self.unsupported_options.get(name)
			if why:
				raise InvalidArgument(f'{name}: {why}. Omit {name}.')
		if options.dialogs == 'hold':
			from browser_use_mcp.patches import dialog_hold, is_active

			if not is_active(dialog_hold.PATCH):
				raise InvalidArgument(
					'dialogs: this server cannot hold dialogs (its dialog_hold patch is off or refused: '
					'`browser-use-mcp doctor` says why); the browser answers them itself. Omit dialogs.'
				)
		if options.proxy is not None:
			operator = operator_proxy(self.launch_args(), self.profile_base)
			if operator is not None:
				raise refuse_proxy_under(operator)
		self.allowed_domains(options)

	def allowed_domains(self, options: SessionOptions | None) -> list[str] | None:
		"""The session's allow-list: the server's narrowed by ``options`` (None: the server's as is)."""
		if options is None or options.allowed_domains is None:
			return None
		base = self.profile_base
		return run_domains(base.get('allowed_domains'), options.allowed_domains, base.get('prohibited_domains'))

	def profile(self, dirs: SessionDirs, options: SessionOptions | None = None) -> Any:
		"""The browser-use BrowserProfile for a session with these directories and options."""
		overrides: dict[str, Any] = {}
		if options is not None:
			if options.viewport is not None:  # browser-use sets it on every tab it opens or focuses
				overrides['viewport'] = options.viewport.model_dump()
			if options.device_scale_factor is not None:
				overrides['device_scale_factor'] = options.device_scale_factor
			if options.user_agent is not None:  # also --user-agent where the session has a Chromium of its own
				overrides['user_agent'] = options.user_agent
			if options.proxy is not None:
				# --proxy-server for a Chromium of its own; browser-use answers the proxy's login
				# challenge on every tab (Fetch.authRequired) when credentials are set
				overrides['proxy'] = options.proxy.model_dump()
			domains = self.allowed_domains(options)
			if domains is not None:
				overrides['allowed_domains'] = domains
		profile = build_profile(self.profile_base, dirs, self.headless, overrides)
		if options is not None and options.geolocation is not None and 'geolocation' not in profile.permissions:
			# browser-use grants the profile's permissions when it connects (to the session's context)
			profile.permissions = [*profile.permissions, 'geolocation']
		return profile

	async def open(self, dirs: SessionDirs, options: SessionOptions | None = None) -> Browser:
		task_scopes.install()
		tasks = TaskScope()
		options = None if options is None or options.empty else options
		profile = self.profile(dirs, options)
		with tasks.entered():
			door = await self._door(profile, options)
			if door is not None:
				profile = profile.model_copy(update={'proxy': door_proxy(door)})
			try:
				endpoint = await self.endpoint(dirs, profile, options)
			except BaseException:
				if door is not None:
					await door.close()
				raise
			session = None
			try:
				session = new_browser_session(profile, endpoint)
				await asyncio.wait_for(session.start(), CONNECT_TIMEOUT)
				if options is not None:
					from browser_use_mcp import emulation

					await emulation.install(session, options)
				endpoint.started()
			except BaseException as exc:
				# browser-use first: ending the endpoint under a connect still running in its event
				# bus makes it log a "FATAL" for a launch that was merely called off
				endpoint.releasing = True
				await stop_everything(session, endpoint, tasks, door=door)
				if isinstance(exc, (asyncio.CancelledError, KeyboardInterrupt, InvalidArgument)):
					raise
				suffix = endpoint.death_detail() if not endpoint.alive() else ''
				if isinstance(exc, TimeoutError):
					raise BrowserStartFailed(
						f'The browser started but did not accept a CDP connection within {CONNECT_TIMEOUT:.0f} s. {suffix}'.strip()
					) from None
				raise BrowserStartFailed(f'Could not connect to the browser: {exc}. {suffix}'.strip()) from exc
		return Browser(endpoint, session, tasks, door)

	async def _door(self, profile: Any, options: SessionOptions | None) -> Door | None:
		"""The session's egress proxy, when the server's policy covers it and its network is ours."""
		if self.egress is None or not self.network_ours or not self.egress.wanted(options):
			return None
		try:
			return await self.egress.open_door(profile, options)
		except ValueError as exc:
			raise BrowserStartFailed(f'Could not set up the egress policy: {exc}') from None

	async def problem(self) -> str | None:
		"""Why this provider could not make a browser now, as far as it knows without making one
		(None: nothing known against it); for /readyz, which caches it. Never launches anything."""
		return None

	async def shutdown(self) -> None:  # noqa: B027 - most providers hold nothing beyond their sessions
		"""Release whatever the provider holds beyond its sessions' browsers (shared processes)."""


def door_proxy(door: Door) -> Any:
	"""The BrowserProfile proxy that sends a browser's (or context's) every request through ``door``."""
	from browser_use.browser.profile import ProxySettings

	return ProxySettings(server=door.server, bypass=BYPASS_NONE)


def new_browser_session(profile: Any, endpoint: Endpoint) -> Any:
	from browser_use.browser import BrowserSession

	# the WebSocket URL itself: browser-use would otherwise look it up over HTTP again
	return BrowserSession(browser_profile=profile.model_copy(update={'cdp_url': endpoint.cdp_url, 'is_local': endpoint.is_local}))


async def stop_everything(
	session: Any, endpoint: Endpoint, tasks: TaskScope, graceful: bool = False, door: Door | None = None
) -> None:
	"""End a browser in the order that keeps everyone quiet: browser-use's side first (so it does
	not see the socket drop and try to reconnect, or report a failed connect), then the endpoint,
	then whatever task browser-use left running for it."""
	if session is not None:
		with contextlib.suppress(Exception, asyncio.CancelledError):
			await asyncio.wait_for(release_browser_use(session), 3)
	await endpoint.release(graceful)
	if door is not None:
		await door.close()
	stuck = await tasks.cancel_all(timeout=2.0)
	if stuck:
		logger.warning('%d task(s) of a closed browser did not stop: %s', len(stuck), ', '.join(t.get_name() for t in stuck))


async def release_browser_use(session: Any) -> None:
	"""Free browser-use's side of a session whose browser is going away."""
	internals.mark_intentional_stop(session)
	with contextlib.suppress(Exception):
		await session.event_bus.stop(clear=True, timeout=1)
	with contextlib.suppress(Exception):
		await session.reset()
