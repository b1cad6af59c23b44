"""A browser provider with no browser: the registry's races, locks, cancels, losses, limits and
principals tested in process, in milliseconds.

Each "browser" is an endpoint object a test can kill (as if Chromium crashed), hold at a gate
while it "launches", or make fail to start. It has no browser-use session: only the registry
and the admin tools are driven over it, never a browser tool.
"""

from __future__ import annotations

import asyncio
from typing import Any

from browser_use_mcp.browser import SessionDirs, StateDir
from browser_use_mcp.config import ServerConfig
from browser_use_mcp.errors import BrowserStartFailed
from browser_use_mcp.providers import Browser, BrowserProvider, Endpoint
from browser_use_mcp.runtime import BrowserRuntime, Providers
from browser_use_mcp.session_options import SessionOptions
from browser_use_mcp.tasks import TaskScope


class FakeEndpoint(Endpoint):
	def __init__(self, provider: FakeProvider, dirs: SessionDirs) -> None:
		super().__init__()
		self.provider = provider
		self.dirs = dirs
		self.cdp_url = f'ws://fake/{id(self)}'
		self.dead = False
		self.released = False
		self.graceful: bool | None = None

	def alive(self) -> bool:
		return not self.dead and not self.released

	def death_detail(self) -> str:
		return 'the fake browser crashed'

	def crash(self) -> None:
		"""As if its process died: the provider notices on the next loop iteration."""
		self.dead = True
		self.provider.live.discard(self)
		asyncio.get_running_loop().call_soon(self.died)

	async def release(self, graceful: bool = False) -> None:
		self.releasing = True
		self.released = True
		self.graceful = graceful
		self.provider.live.discard(self)


class FakeProvider(BrowserProvider):
	def __init__(self) -> None:
		self.opened = 0
		self.options: list[SessionOptions | None] = []  # what each open() was given
		self.live: set[FakeEndpoint] = set()
		self.endpoints: list[FakeEndpoint] = []
		self.gate: asyncio.Event | None = None  # launches wait here while it is set and closed
		self.fail: str | None = None  # launches fail with this message while it is set
		self.shut_down = False
		self.profile_base: dict[str, Any] = {}
		self.headless = True

	def profile(self, dirs: SessionDirs, options: SessionOptions | None = None) -> Any:
		return None

	async def endpoint(self, dirs: SessionDirs, profile: Any, options: SessionOptions | None = None) -> FakeEndpoint:
		self.opened += 1
		if self.gate is not None:
			await self.gate.wait()
		if self.fail is not None:
			raise BrowserStartFailed(self.fail)
		endpoint = FakeEndpoint(self, dirs)
		self.live.add(endpoint)
		self.endpoints.append(endpoint)
		return endpoint

	async def open(self, dirs: SessionDirs, options: SessionOptions | None = None) -> Browser:
		"""The same contract as a real provider's, minus browser-use."""
		self.options.append(options)
		return Browser(await self.endpoint(dirs, None, options), None, TaskScope())

	async def shutdown(self) -> None:
		self.shut_down = True


class FakeRuntime(BrowserRuntime):
	"""The runtime of in-process tests: browser-use is not loaded, nothing is patched or swept, and every
	session (the default one too) gets its browser from ``provider``. The state directory, the
	parent-death signal and the sidecar (off in tests' configurations) are the real ones."""

	def __init__(self, config: ServerConfig, provider: BrowserProvider | None = None) -> None:
		super().__init__(config)
		self.fake = provider if provider is not None else FakeProvider()

	async def load(self) -> ServerConfig:
		return self.config

	def settle_heap(self) -> None:
		"""Leaves the test process's collector alone."""

	async def patch(self) -> None:
		pass

	def choose(self, state_dir: StateDir) -> Providers:
		return Providers(self.fake, self.fake)
