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
from browser_use_mcp.errors import BrowserStartFailed
from browser_use_mcp.patches import internals
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

	@abstractmethod
	def alive(self) -> bool: ...

	@abstractmethod
	def death_detail(self) -> str:
		"""Why it is gone, for the one-time "browser died" error (e.g. Chromium's exit status)."""

	@abstractmethod
	async def release(self, graceful: bool = False) -> None:
		"""End it (kill, dispose, delete); never raises. ``graceful`` lets a profile flush to disk."""


class Browser:
	"""One session's browser: browser-use's ``BrowserSession`` on a provider's endpoint, and every
	asyncio task started for it (cancelled when it closes)."""

	def __init__(self, endpoint: Endpoint, session: Any, tasks: TaskScope) -> None:
		self.endpoint = endpoint
		self.session = session
		self.tasks = tasks
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

	async def close(self, graceful: bool = False) -> None:
		"""Tear everything down; never raises."""
		if self._closed:
			return
		self._closed = True
		self.endpoint.releasing = True
		await stop_everything(self.session, self.endpoint, self.tasks, graceful)


class BrowserProvider(ABC):
	"""Makes browsers for sessions. ``endpoint`` is the one thing a provider must say; ``open``
	connects browser-use to it the same way for every provider."""

	def __init__(self, *, profile_base: dict[str, Any], headless: bool) -> None:
		self.profile_base = profile_base  # config.json's browser profile
		self.headless = headless

	@abstractmethod
	async def endpoint(self, dirs: SessionDirs, profile: Any) -> Endpoint:
		"""A running browser for a session whose BrowserProfile is ``profile``."""

	def profile(self, dirs: SessionDirs) -> Any:
		"""The browser-use BrowserProfile for a session with these directories."""
		return build_profile(self.profile_base, dirs, self.headless)

	async def open(self, dirs: SessionDirs) -> Browser:
		task_scopes.install()
		tasks = TaskScope()
		profile = self.profile(dirs)
		with tasks.entered():
			endpoint = await self.endpoint(dirs, profile)
			session = None
			try:
				session = new_browser_session(profile, endpoint)
				await asyncio.wait_for(session.start(), CONNECT_TIMEOUT)
			except BaseException as exc:
				# browser-use first: ending the endpoint under a connect still running in its event
				# bus makes it log a "FATAL" for a launch that was merely called off
				endpoint.releasing = True
				await stop_everything(session, endpoint, tasks)
				if isinstance(exc, (asyncio.CancelledError, KeyboardInterrupt)):
					raise
				suffix = endpoint.death_detail() if not endpoint.alive() else ''
				if isinstance(exc, TimeoutError):
					raise BrowserStartFailed(
						f'The browser started but did not accept a CDP connection within {CONNECT_TIMEOUT:.0f} s. {suffix}'.strip()
					) from None
				raise BrowserStartFailed(f'Could not connect to the browser: {exc}. {suffix}'.strip()) from exc
		return Browser(endpoint, session, tasks)

	async def shutdown(self) -> None:  # noqa: B027 - most providers hold nothing beyond their sessions
		"""Release whatever the provider holds beyond its sessions' browsers (shared processes)."""


def new_browser_session(profile: Any, endpoint: Endpoint) -> Any:
	from browser_use.browser import BrowserSession

	# the WebSocket URL itself: browser-use would otherwise look it up over HTTP again
	return BrowserSession(browser_profile=profile.model_copy(update={'cdp_url': endpoint.cdp_url, 'is_local': endpoint.is_local}))


async def stop_everything(session: Any, endpoint: Endpoint, tasks: TaskScope, graceful: bool = False) -> None:
	"""End a browser in the order that keeps everyone quiet: browser-use's side first (so it does
	not see the socket drop and try to reconnect, or report a failed connect), then the endpoint,
	then whatever task browser-use left running for it."""
	if session is not None:
		with contextlib.suppress(Exception, asyncio.CancelledError):
			await asyncio.wait_for(release_browser_use(session), 3)
	await endpoint.release(graceful)
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
