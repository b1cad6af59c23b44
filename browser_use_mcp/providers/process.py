"""A Chromium of our own for every session: the strongest isolation, and the only way to give a
session a persistent profile (the default session's)."""

from __future__ import annotations

import time
from typing import Any

from browser_use_mcp import egress
from browser_use_mcp.browser import (
	ChromiumProcess,
	Owner,
	SessionDirs,
	cached_extension_args,
	chromium_args,
)
from browser_use_mcp.errors import BrowserStartFailed
from browser_use_mcp.install import missing_browser_message
from browser_use_mcp.providers.base import BrowserProvider, Endpoint
from browser_use_mcp.providers.cdp_client import CdpConnection
from browser_use_mcp.providers.cdp_proxy import ContextRouter, PassthroughLink
from browser_use_mcp.session_options import SessionOptions
from browser_use_mcp.tasks import outside_scopes

# s a failed launch keeps /readyz at 503 unless a launch succeeds first: long enough for a probe
# to see it, short enough that a server nobody sends traffic to (because it is not ready) recovers
LAUNCH_FAILURE_MEMORY = 60.0


class ProcessEndpoint(Endpoint):
	def __init__(self, chromium: ChromiumProcess, router: ContextRouter) -> None:
		super().__init__()
		self.chromium = chromium
		self.router = router
		# browser-use's way in: a secret path of our loopback endpoint, each connection a channel of the pipe
		self.cdp_url = router.add(PassthroughLink(chromium.cdp.open_channel))
		chromium.on_exit(lambda _c: self.died())

	async def browser_connection(self) -> tuple[CdpConnection, str | None]:
		return CdpConnection(await self.chromium.cdp.open_channel()), None

	def alive(self) -> bool:
		return self.chromium.alive()

	def started(self) -> None:
		self.chromium.yield_to_the_server()

	def death_detail(self) -> str:
		return 'Chromium exited unexpectedly' + self.chromium.reason_suffix()

	async def death_noticed(self) -> None:
		await self.chromium.exit_collected()

	async def release(self, graceful: bool = False) -> None:
		self.releasing = True
		self.router.remove(self.cdp_url)
		await self.chromium.kill(graceful_timeout=3.0 if graceful else 0.0)


class ProcessProvider(BrowserProvider):
	"""Launches one Chromium per session, with our launch flags and owner marker."""

	def __init__(
		self,
		executable: str | None,
		*,
		owner: Owner,
		profile_base: dict[str, Any],
		headless: bool,
		user_args: tuple[str, ...] = (),
		use_extensions: bool = False,
		configured: str | None = None,
	) -> None:
		super().__init__(profile_base=profile_base, headless=headless)
		self.executable = executable
		self.configured = configured  # the path the user gave, for the error when it is missing
		self.owner = owner
		self.user_args = user_args
		self.use_extensions = use_extensions
		self.router = ContextRouter()
		self.last_failure: tuple[float, str] | None = None  # (monotonic time, why) of the latest launch, if it failed

	async def endpoint(self, dirs: SessionDirs, profile: Any, options: SessionOptions | None = None) -> ProcessEndpoint:
		with outside_scopes():  # the endpoint server outlives this session
			await self.router.start()
		return ProcessEndpoint(await self.launch(dirs, profile), self.router)

	async def shutdown(self) -> None:
		await self.router.close()

	async def launch(self, dirs: SessionDirs, profile: Any, shared: bool = False) -> ChromiumProcess:
		"""A Chromium of ours on ``dirs``: our flags, the user's, the owner marker (shared ones too,
		which keep their zygote: see ``chromium_args``)."""
		if not self.executable:
			raise BrowserStartFailed(missing_browser_message(self.configured))
		args = chromium_args(profile, user_args=egress.launch_args(self.user_args, profile), shared=shared)  # a door wins
		if self.use_extensions:
			args = [a for a in args if a != '--disable-extensions'] + cached_extension_args()
		try:
			chromium = await ChromiumProcess.launch(self.executable, args, dirs.profile, self.owner)
		except BrowserStartFailed as exc:
			self.last_failure = (time.monotonic(), exc.message)
			raise
		self.last_failure = None
		return chromium

	async def problem(self) -> str | None:
		if not self.executable:
			return missing_browser_message(self.configured)
		failure = self.last_failure
		if failure is not None and time.monotonic() - failure[0] < LAUNCH_FAILURE_MEMORY:
			return f'the last Chromium launch failed: {failure[1]}'
		return None
