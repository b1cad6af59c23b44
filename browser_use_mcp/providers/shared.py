"""Sessions as browser contexts of shared Chromiums ("shards"), or of a browser someone else runs.

A context costs a fraction of a Chromium (its renderers; the browser process, GPU and network
service are shared) and is created in tens of milliseconds instead of a launch. Each session's
browser-use talks to its context through ``cdp_proxy`` and sees a browser holding only its own
tabs, cookies, storage, permissions and downloads.

``SharedProvider`` launches Chromiums of our own (same flags, owner marker, parent-death signal
and sweep as a per-session Chromium), each hosting at most ``contexts_per_browser`` sessions; it
spreads sessions over ``spread`` of them before one hosts two (then the least busy with room gets
the next), opens another when all are full and closes an empty one after a grace period. When a shard's
Chromium dies, every session in it gets the usual one-time "browser died" error; sessions in
other shards are untouched. ``attach`` makes it host contexts in a browser at a CDP URL instead
(``--cdp-url``): that browser is never closed or killed, only the contexts we made in it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import urllib.parse
import urllib.request
from collections.abc import Awaitable, Callable
from typing import Any

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidURI

from browser_use_mcp.browser import ChromiumProcess, SessionDirs
from browser_use_mcp.errors import BrowserStartFailed
from browser_use_mcp.providers.base import BrowserProvider, Endpoint
from browser_use_mcp.providers.cdp_client import COMMAND_TIMEOUT, CdpConnection, CdpError, browser_ws_url
from browser_use_mcp.providers.cdp_proxy import ContextLink, ContextRouter, Upstream
from browser_use_mcp.providers.process import ProcessProvider
from browser_use_mcp.session_options import SessionOptions
from browser_use_mcp.tasks import held, outside_scopes

logger = logging.getLogger('browser_use_mcp.providers.shared')

EMPTY_SHARD_GRACE = 30.0  # s an empty shard stays up for the next session before it is closed
ATTACH_PROBE_TIMEOUT = 2.0  # s a readiness probe waits for the attached browser's /json/version


class Shard:
	"""One browser hosting contexts: a Chromium of ours, or an attached browser."""

	def __init__(
		self,
		open_upstream: Callable[[], Awaitable[Upstream]],
		connection: CdpConnection,
		chromium: ChromiumProcess | None,
		dirs: SessionDirs | None,
	) -> None:
		self.open_upstream = open_upstream  # a new connection to the browser: a pipe channel, or a websocket
		self.connection = connection
		self.chromium = chromium
		self.dirs = dirs
		self.endpoints: set[ContextEndpoint] = set()
		self.reserved = 0  # contexts being created
		self.empty_since: float | None = time.monotonic()
		self.dead = False

	@property
	def load(self) -> int:
		return len(self.endpoints) + self.reserved

	def alive(self) -> bool:
		if self.dead:
			return False
		if self.chromium is not None:
			return self.chromium.alive()
		return self.connection.open_

	def death_detail(self, attached_url: str | None) -> str:
		if self.chromium is not None:
			return 'its shared Chromium exited unexpectedly' + self.chromium.reason_suffix()
		return f'the browser at {attached_url} went away'


class ContextEndpoint(Endpoint):
	def __init__(self, provider: SharedProvider, shard: Shard, context_id: str, link: ContextLink, url: str) -> None:
		super().__init__()
		self.provider = provider
		self.shard = shard
		self.context_id = context_id
		self.link = link
		self.cdp_url = url
		self.where = 'attached' if shard.chromium is None else 'local (shared)'
		self.is_local = shard.chromium is not None or is_loopback_url(provider.attach_url or '')

	async def browser_connection(self) -> tuple[CdpConnection, str | None]:
		return CdpConnection(await self.shard.open_upstream()), self.context_id  # the shard itself, not our proxy

	def alive(self) -> bool:
		return self.shard.alive()

	def started(self) -> None:
		if self.shard.chromium is not None:  # its first session has started: the shard's browser yields (once)
			self.shard.chromium.yield_to_the_server(shared=True)

	def death_detail(self) -> str:
		return self.shard.death_detail(self.provider.attach_url)

	async def release(self, graceful: bool = False) -> None:
		self.releasing = True
		await self.provider.release(self)


class SharedProvider(BrowserProvider):
	def __init__(
		self,
		launcher: ProcessProvider,
		*,
		new_dirs: Callable[[], SessionDirs],
		contexts_per_browser: int = 16,
		spread: int = 1,
		attach_url: str | None = None,
		empty_grace: float = EMPTY_SHARD_GRACE,
	) -> None:
		"""Shared Chromiums are launched as ``launcher`` launches a session's own (flags, owner marker)."""
		super().__init__(profile_base=launcher.profile_base, headless=launcher.headless)
		self.launcher = launcher
		self.new_dirs = new_dirs
		self.contexts_per_browser = max(1, contexts_per_browser)
		self.spread = max(1, spread)  # shared Chromiums new sessions are spread over (see _pick)
		self.attach_url = attach_url
		self.empty_grace = empty_grace
		self.shards: list[Shard] = []
		self.router = ContextRouter()
		self._lock = asyncio.Lock()
		self._retiring: set[asyncio.Task[None]] = set()
		self._disposing: set[asyncio.Task[None]] = set()  # shards being disposed of (see _dispose_soon)

	def launch_args(self) -> tuple[str, ...]:
		return self.launcher.user_args  # the shared Chromiums are launched as a session's own

	@property
	def network_ours(self) -> bool:  # type: ignore[override]
		"""An attached browser on another machine cannot reach the egress doors on our loopback."""
		return self.attach_url is None or is_loopback_url(self.attach_url)

	async def endpoint(self, dirs: SessionDirs, profile: Any, options: SessionOptions | None = None) -> ContextEndpoint:
		with outside_scopes():  # shared by many sessions: closing this one must not stop them
			await self.router.start()
			shard = await self._reserve()
		params: dict[str, Any] = {'disposeOnDetach': False}
		proxy = getattr(profile, 'proxy', None)  # the session's egress door, or its own proxy
		if proxy is not None and proxy.server:
			# a context's own proxy; a login without a door is answered by the session's browser-use, per tab
			params['proxyServer'] = proxy.server
			if proxy.bypass:
				params['proxyBypassList'] = proxy.bypass
		try:
			result = await shard.connection.send('Target.createBrowserContext', params)
			# one blank tab, as a fresh Chromium has: browser-use sets up its per-browser listeners
			# (downloads among them) for the tabs it finds when it connects
			await shard.connection.send(
				'Target.createTarget', {'url': 'about:blank', 'browserContextId': result['browserContextId']}
			)
		except CdpError as exc:
			raise BrowserStartFailed(
				f'Could not create a browser context: {exc}. {shard.death_detail(self.attach_url)}'
			) from None
		finally:
			shard.reserved -= 1
		link = ContextLink(shard.open_upstream, result['browserContextId'])
		endpoint = ContextEndpoint(self, shard, link.context_id, link, self.router.add(link))
		shard.endpoints.add(endpoint)
		shard.empty_since = None
		return endpoint

	async def _reserve(self) -> Shard:
		"""A live shard with room for one more context (launched if none has), its slot reserved."""
		async with self._lock:
			for shard in list(self.shards):
				if not shard.alive():
					self._shard_died(shard)
			shard = self._pick()
			if shard is None:
				shard = await self._new_shard()
				self.shards.append(shard)
			shard.reserved += 1
			return shard

	def _pick(self) -> Shard | None:
		"""The shard a new context goes to, or None for a new one. The least busy shard with room,
		but while fewer than ``spread`` Chromiums run and each already hosts a session, a new one:
		every answer a tab sends passes through its browser process's one main thread, which a heavy
		page's state holds for ~0.35 s (docs/performance.md), so two sessions share it only once
		``spread`` Chromiums are busy. An attached browser takes every context."""
		open_ = [s for s in self.shards if s.connection.open_]
		if self.attach_url is not None:
			return open_[0] if open_ else None
		room = [s for s in open_ if s.load < self.contexts_per_browser]
		if not room:
			return None
		least = min(room, key=lambda s: s.load)  # the first of equals: the oldest
		if least.load > 0 and len(open_) < self.spread:
			return None
		return least

	async def _new_shard(self) -> Shard:
		if self.attach_url is not None:
			ws_url = await asyncio.to_thread(browser_ws_url, self.attach_url)
			connection = await CdpConnection.open(ws_url)
			shard = Shard(lambda: websocket_to(ws_url), connection, None, None)
			connection.on_close(lambda: self._shard_died(shard))
			return shard
		dirs = self.new_dirs()
		try:
			chromium = await self.launcher.launch(dirs, self.profile(dirs), shared=True)
		except BaseException:
			await asyncio.to_thread(dirs.remove)
			raise
		try:
			connection = CdpConnection(await asyncio.wait_for(chromium.cdp.open_channel(), COMMAND_TIMEOUT))
		except BaseException as exc:
			await chromium.kill()
			await asyncio.to_thread(dirs.remove)
			if isinstance(exc, Exception):
				raise BrowserStartFailed(f'Could not connect to the shared browser: {exc}{chromium.reason_suffix()}') from exc
			raise
		shard = Shard(chromium.cdp.open_channel, connection, chromium, dirs)
		chromium.on_exit(lambda _c: self._shard_died(shard))
		await self._close_startup_tab(connection)
		logger.info('shared browser started (pid %d), up to %d sessions', chromium.pid, self.contexts_per_browser)
		return shard

	@staticmethod
	async def _close_startup_tab(connection: CdpConnection) -> None:
		"""The blank tab Chromium opens at start lives in the default context, which no session uses:
		closing it saves a renderer (~35 MB) per shared Chromium."""
		with contextlib.suppress(CdpError):
			targets = (await connection.send('Target.getTargets')).get('targetInfos', [])
			for target in targets:
				if target.get('type') == 'page' and target.get('browserContextId') not in (None, ''):
					await connection.send('Target.closeTarget', {'targetId': target['targetId']})

	def _shard_died(self, shard: Shard) -> None:
		"""Every session in a dead shard hears it once; nothing is left half-open."""
		if shard.dead:
			return
		if shard.chromium is not None and shard.chromium.stopping:
			return
		shard.dead = True
		if shard in self.shards:
			self.shards.remove(shard)
		for endpoint in list(shard.endpoints):
			endpoint.died()
		self._dispose_soon(shard)

	async def release(self, endpoint: ContextEndpoint) -> None:
		"""A session is done with its context: dispose it, and retire its shard once empty."""
		shard = endpoint.shard
		self.router.remove(endpoint.cdp_url)
		await endpoint.link.close()
		shard.endpoints.discard(endpoint)
		if shard.alive():
			with contextlib.suppress(CdpError):
				await shard.connection.send('Target.disposeBrowserContext', {'browserContextId': endpoint.context_id})
		if not shard.endpoints and not shard.reserved and shard.chromium is not None:
			shard.empty_since = time.monotonic()
			self._spawn(self._retire_later(shard))

	async def _retire_later(self, shard: Shard) -> None:
		await asyncio.sleep(self.empty_grace)
		async with self._lock:
			if shard.load or shard.empty_since is None or time.monotonic() - shard.empty_since < self.empty_grace:
				return
			if shard not in self.shards:  # retired by another release's task, or found dead
				return
			self.shards.remove(shard)
		self._dispose_soon(shard)

	async def _dispose_shard(self, shard: Shard) -> None:
		await shard.connection.close()
		if shard.chromium is not None:
			await shard.chromium.kill()
		if shard.dirs is not None:
			await asyncio.to_thread(shard.dirs.remove)

	def _spawn(self, coro: Any) -> None:
		held(asyncio.get_running_loop().create_task(coro), self._retiring)

	def _dispose_soon(self, shard: Shard) -> None:
		"""Dispose of a shard in a task of its own that shutdown waits for and never cancels: cut
		short, its Chromium would be killed but never waited for (nor its singleton's directory in
		/tmp removed)."""
		held(asyncio.get_running_loop().create_task(self._dispose_shard(shard)), self._disposing)

	async def problem(self) -> str | None:
		if self.attach_url is not None:  # the browser someone else runs: does it still answer?
			try:
				await asyncio.to_thread(browser_ws_url, self.attach_url, ATTACH_PROBE_TIMEOUT)
			except BrowserStartFailed as exc:
				return exc.message
			return None
		return await self.launcher.problem()

	async def shutdown(self) -> None:
		for task in list(self._retiring):
			task.cancel()
		await asyncio.gather(*self._retiring, return_exceptions=True)
		await asyncio.gather(*self._disposing, return_exceptions=True)
		shards, self.shards = list(self.shards), []
		for shard in shards:
			shard.dead = True
		await asyncio.gather(*(self._dispose_shard(s) for s in shards), return_exceptions=True)
		await self.router.close()
		await self.launcher.shutdown()


class AttachedEndpoint(Endpoint):
	"""The attached browser itself, driven as it is (the default session with --cdp-url)."""

	where = 'attached'

	def __init__(self, url: str, ws_url: str, connection: CdpConnection) -> None:
		super().__init__()
		self.url = url
		self.cdp_url = ws_url
		self.is_local = is_loopback_url(url)
		self.connection = connection
		connection.on_close(self.died)

	def alive(self) -> bool:
		return self.connection.open_

	def death_detail(self) -> str:
		return f'the browser at {self.url} went away'

	async def release(self, graceful: bool = False) -> None:
		self.releasing = True
		await self.connection.close()  # never the browser: it is not ours


class AttachedProvider(BrowserProvider):
	"""The browser at a CDP URL, as it is: someone's own Chrome, logged in."""

	network_ours = False  # driven with its own network settings: no egress door

	unsupported_options = {  # noqa: RUF012
		'proxy': 'the default session drives the browser at --cdp-url as it is, with its own network settings; use a '
		'named session for a proxy',
	}

	def __init__(self, url: str, *, profile_base: dict[str, Any], headless: bool) -> None:
		super().__init__(profile_base=profile_base, headless=headless)
		self.url = url

	async def endpoint(self, dirs: SessionDirs, profile: Any, options: SessionOptions | None = None) -> AttachedEndpoint:
		ws_url = await asyncio.to_thread(browser_ws_url, self.url)
		try:
			connection = await CdpConnection.open(ws_url)
		except (OSError, TimeoutError, ConnectionClosed, InvalidURI) as exc:
			raise BrowserStartFailed(f'Could not connect to the browser at {self.url}: {exc}') from None
		return AttachedEndpoint(self.url, ws_url, connection)


async def websocket_to(ws_url: str) -> Upstream:
	"""A new connection to an attached browser (not ours: it has its own DevTools port)."""
	return await connect(ws_url, max_size=None, ping_interval=None, compression=None)


def is_loopback_url(url: str) -> bool:
	host = (urllib.parse.urlsplit(url).hostname or '').lower()
	return host in ('localhost', '127.0.0.1', '::1') or host.startswith('127.')
