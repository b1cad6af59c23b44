"""A Chromium of our own for every session: the strongest isolation, and the only way to give a
session a persistent profile (the default session's)."""

from __future__ import annotations

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
from browser_use_mcp.providers.base import BrowserProvider, Endpoint
from browser_use_mcp.session_options import SessionOptions

NO_CHROMIUM = (
	'No Chromium or Chrome was found. Install it (Debian/Ubuntu: apt-get install chromium) or set '
	'BROWSER_USE_MCP_CHROMIUM to the browser binary, then retry.'
)


class ProcessEndpoint(Endpoint):
	def __init__(self, chromium: ChromiumProcess) -> None:
		super().__init__()
		self.chromium = chromium
		self.cdp_url = chromium.ws_url or ''
		chromium.on_exit(lambda _c: self.died())

	def alive(self) -> bool:
		return self.chromium.alive()

	def death_detail(self) -> str:
		return 'Chromium exited unexpectedly' + self.chromium.reason_suffix()

	async def release(self, graceful: bool = False) -> None:
		self.releasing = True
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
	) -> None:
		super().__init__(profile_base=profile_base, headless=headless)
		self.executable = executable
		self.owner = owner
		self.user_args = user_args
		self.use_extensions = use_extensions

	async def endpoint(self, dirs: SessionDirs, profile: Any, options: SessionOptions | None = None) -> ProcessEndpoint:
		return ProcessEndpoint(await self.launch(dirs, profile))

	async def launch(self, dirs: SessionDirs, profile: Any) -> ChromiumProcess:
		"""A Chromium of ours on ``dirs``: our flags, the user's, the owner marker (shared ones too)."""
		if not self.executable:
			raise BrowserStartFailed(NO_CHROMIUM)
		args = chromium_args(profile, user_args=egress.launch_args(self.user_args, profile))  # a door wins
		if self.use_extensions:
			args = [a for a in args if a != '--disable-extensions'] + cached_extension_args()
		return await ChromiumProcess.launch(self.executable, args, dirs.profile, self.owner)
