"""The browser runtime, one floor below the registry: what must be ready before any session gets a
browser, and where each session's browser comes from.

- Start-up (``BrowserRuntime.start``, run in the background so the MCP handshake is answered at
  once): browser-use imported and its config.json read into the configuration, what dead servers
  left swept, this server's browsers tied to it (parent-death signal, cleanup sidecar), the patches
  applied, the providers made.
- The one decision of which provider serves which session (``choose_providers``), and the default
  session's persistent profile (``launch``, ``default_dirs``).
- ``preflight``: what the CLI checks before it serves, so a --cdp-url or --grid-url that does not
  answer is a start-up error rather than the first call's.

The registry receives a runtime and stays provider-blind. In-process tests hand it one that loads,
patches and sweeps nothing and whose provider is a fake (``harness/fakes/provider.FakeRuntime``).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from browser_use_mcp import busy, egress, patches, urls
from browser_use_mcp.browser import (
	Owner,
	SessionDirs,
	StateDir,
	SweepReport,
	configure_launch,
	drop_default_downloads_dir,
	parent_death_signal_supported,
	profile_lock_owner,
	server_browser,
	sweep_orphans,
)
from browser_use_mcp.config import ServerConfig, complete
from browser_use_mcp.errors import BrowserStartFailed
from browser_use_mcp.providers import Browser, BrowserProvider
from browser_use_mcp.session_options import SessionOptions

logger = logging.getLogger('browser_use_mcp.runtime')

LOCAL_PRINCIPAL = 'local'  # the one client of stdio (and of HTTP without tokens); also owns the server's own dirs


def preflight(config: ServerConfig) -> str | None:
	"""Why the configured browser endpoint cannot serve sessions (None: it answers, or there is none):
	a browser at --cdp-url that does not answer, or a Grid at --grid-url that does not."""
	if config.cdp_url:
		from browser_use_mcp.providers.cdp_client import browser_ws_url

		try:
			browser_ws_url(config.cdp_url)
		except BrowserStartFailed as exc:
			return exc.message
	if config.grid_url:
		from browser_use_mcp.providers.grid import grid_problem

		return grid_problem(config.grid_url)
	return None


def _prepare(config: ServerConfig, owner: Owner) -> tuple[ServerConfig, SweepReport]:
	"""The slow part of starting, run in a thread: browser-use's config.json and modules, and the
	sweep of what dead servers left."""
	config = complete(config)
	import browser_use.browser.session  # noqa: F401

	# at once: a server killed before this leaves browser-use's empty directory in the temp dir
	drop_default_downloads_dir()
	import browser_use.browser.watchdogs.default_action_watchdog  # noqa: F401
	import bubus.service  # noqa: F401

	import_state_path()
	return config, sweep_orphans(config.state_dir, owner)


def import_state_path() -> None:
	"""The modules a session's first page state imports, loaded now: otherwise on first use, after
	start-up's heap is frozen (``freeze_startup_heap``), and on the event loop."""
	for module in _STATE_PATH_MODULES:
		with contextlib.suppress(ImportError):
			importlib.import_module(module)


@dataclass
class Providers:
	"""Who serves which sessions: ``named`` every session given an id, ``default`` the default session
	(the same provider, or one of its own: its persistent profile needs a process, with --cdp-url it
	drives that browser)."""

	named: BrowserProvider
	default: BrowserProvider
	egress: egress.EgressGate | None = None  # the egress policy's doors, wired into every provider

	def all(self) -> list[BrowserProvider]:
		"""Each provider once."""
		return list(dict.fromkeys((self.named, self.default)))


def choose_providers(config: ServerConfig, owner: Owner, state_dir: StateDir) -> Providers:
	"""A Chromium per session (``--isolation browser``), or contexts of shared Chromiums
	(``context``), or contexts of the browser at ``--cdp-url``; the default session keeps a
	browser of its own for its persistent profile (with --cdp-url: drives that browser).
	With ``--grid-url`` every session is a Selenium Grid session (the default session too,
	unless ``--grid-default-session local``)."""
	from browser_use_mcp.providers.process import ProcessProvider
	from browser_use_mcp.providers.shared import AttachedProvider, SharedProvider

	urls.configure(config.allow_browser_urls)  # what our CDP endpoints let browser-use open
	process = ProcessProvider(
		server_browser(config),
		owner=owner,
		profile_base=dict(config.browser_profile),
		headless=config.headless,
		user_args=config.chromium_args,
		use_extensions=bool(config.browser_profile.get('enable_default_extensions', False)),
		configured=config.executable_path,
	)
	gate = egress.gate_for(config)
	process.egress = gate
	named: BrowserProvider = process
	default: BrowserProvider = process
	if config.grid_url:
		from browser_use_mcp.providers.grid import GridProvider

		named = GridProvider(
			config.grid_url,
			capabilities=dict(config.grid_capabilities),
			profile_base=process.profile_base,
			headless=config.headless,
			user_args=config.chromium_args,
			create_timeout=config.grid_timeout,
		)
		if config.grid_default_session == 'grid':
			default = named
	else:
		if config.cdp_url:
			default = AttachedProvider(config.cdp_url, profile_base=process.profile_base, headless=config.headless)
		if config.cdp_url or config.isolation == 'context':
			named = SharedProvider(
				process,
				new_dirs=lambda: state_dir.new_session_dirs(LOCAL_PRINCIPAL, 'shared-browser'),
				contexts_per_browser=config.contexts_per_browser,
				spread=config.spread_browsers,
				attach_url=config.cdp_url,
				empty_grace=config.shared_browser_idle,
			)
	chosen = Providers(named, default, gate)
	for provider in chosen.all():  # every provider sends its sessions' traffic through the gate (where it is ours)
		provider.egress = gate
	egress.warn_uncovered(gate, chosen.all())
	return chosen


def freeze_startup_heap() -> int:
	"""Move what start-up made (browser-use's and the SDK's modules, classes, schemas: ~150,000
	objects) out of the cyclic collector's sight, for good: they live as long as the process. Each
	full collection scanned them all again: ~85-100 ms with the event loop every session shares
	stopped, about every two seconds under four agents' page states. Now it scans only what sessions
	made since. Called before any session exists (``_prepare`` has imported what a first page state
	needs); once a process: a later call (another registry in the same process, as in tests) does
	nothing and returns 0. The number of objects frozen.

	What is frozen is never freed, so start-up's garbage is collected first, with a young
	collection: ~2 ms, where a full one took ~85 ms on the way to the first session. The full one
	would find ~40 more objects (~10 KB, measured: ctypes leftovers of an import), kept for good."""
	global _heap_frozen
	if _heap_frozen:
		return 0
	_heap_frozen = True
	gc.collect(1)
	gc.freeze()
	return gc.get_freeze_count()


_heap_frozen = False
# modules a session's first page state imports: loaded before the heap is frozen
_STATE_PATH_MODULES = (
	'browser_use.dom.service',
	'browser_use.dom.serializer.serializer',
	'browser_use.dom.serializer.clickable_elements',
	'browser_use.dom.serializer.paint_order',
	'browser_use.dom.enhanced_snapshot',
	'browser_use.browser.watchdogs.dom_watchdog',
	'browser_use.browser.watchdogs.default_action_watchdog',
)


class BrowserRuntime:
	"""What every session's browser needs, started once; see the module docstring."""

	def __init__(self, config: ServerConfig, owner: Owner | None = None) -> None:
		self.config = config  # completed from browser-use's config.json by ``start``
		self.owner = owner or Owner.current()
		self.state_dir: StateDir | None = None  # this server's temporary profiles and downloads
		self.providers: Providers | None = None
		self._sidecar: Any = None

	async def start(self) -> None:
		self.config = await self.load()
		self.state_dir = StateDir(self.config.state_dir, self.owner)
		self.tie_browsers_to_server()
		# browser-use adjustments, all before the first session's event bus exists
		await self.patch()
		self.providers = self.choose(self.state_dir)
		self.settle_heap()

	async def load(self) -> ServerConfig:
		"""browser-use loaded and the configuration completed, leftovers swept; in a thread: importing
		browser-use and reading every process's command line take long."""
		config, report = await asyncio.to_thread(_prepare, self.config, self.owner)
		if report.processes_killed or report.dirs_removed:
			logger.warning(
				'start-up sweep: killed %d leftover browser processes, removed %d stale state dirs of dead servers',
				report.processes_killed,
				report.dirs_removed,
			)
		return config

	async def patch(self) -> None:
		"""Every patch switched on, checked against the installed packages (in a thread: checking
		them reads and hashes source files)."""
		await asyncio.to_thread(patches.apply_all, self.config)

	def choose(self, state_dir: StateDir) -> Providers:
		return choose_providers(self.config, self.owner, state_dir)

	def settle_heap(self) -> None:
		frozen = freeze_startup_heap()
		if frozen:
			logger.debug('%d objects of start-up kept out of the cyclic collector', frozen)

	def tie_browsers_to_server(self) -> None:
		"""Parent-death signal where the OS has one, and the cleanup sidecar unless switched off:
		a killed server's browsers die with it and its state directory goes too."""
		if self.config.watchdog != 'off' and self._sidecar is None:
			from browser_use_mcp.sidecar import Sidecar

			assert self.state_dir is not None
			try:
				self._sidecar = Sidecar(self.state_dir.path)
			except OSError as exc:
				logger.warning('could not start the cleanup sidecar (%s); relying on the start-up sweep', exc)
		configure_launch(
			self.config.parent_death_signal and parent_death_signal_supported(), self._sidecar, self.config.chromium_nice
		)
		busy.WATCH.configure(self.config.busy_renderer_nice)

	# -- which browser a session gets ------------------------------------------------------------

	def all_providers(self) -> list[BrowserProvider]:
		"""Where sessions' browsers come from (named and default sessions), once each; none before start."""
		return [] if self.providers is None else self.providers.all()

	def provider_for(self, is_default: bool) -> BrowserProvider:
		assert self.providers is not None, 'runtime not started'
		return self.providers.default if is_default else self.providers.named

	async def launch(
		self,
		principal: str,
		session_id: str,
		dirs: SessionDirs | None,
		notes: list[str],
		is_default: bool,
		options: SessionOptions | None = None,
	) -> tuple[SessionDirs, Browser]:
		"""A browser on ``dirs`` (fresh temporary ones if None); nothing is left behind on failure."""
		provider = self.provider_for(is_default)
		assert self.state_dir is not None
		if dirs is None:
			dirs = self.state_dir.new_session_dirs(principal, session_id)
		try:
			return dirs, await provider.open(dirs, options)
		except BrowserStartFailed as exc:
			if not dirs.temporary and 'Singleton' in str(exc):
				# lost a race for the persistent profile: fall back like a locked profile
				notes.append(self._fallback_note(dirs.profile, None))
				return await self.launch(principal, session_id, None, notes, is_default, options)
			dirs.remove()  # temporary ones only
			raise
		except BaseException:
			dirs.remove()
			raise

	def default_dirs(self, notes: list[str]) -> SessionDirs | None:
		"""The persistent profile for the default session, or None (with a note) if it is locked."""
		profile = self.config.default_user_data_dir
		try:
			profile.mkdir(parents=True, exist_ok=True)
		except OSError as exc:
			notes.append(f'Note: the default profile directory {profile} cannot be created ({exc}); using a temporary profile.')
			return None
		holder = profile_lock_owner(profile)
		if holder is not None:
			notes.append(self._fallback_note(profile, holder))
			return None
		for path in (self.config.default_downloads_dir, self.config.default_files_dir):
			with contextlib.suppress(OSError):
				path.mkdir(parents=True, exist_ok=True)
		return SessionDirs(profile=profile, downloads=self.config.default_downloads_dir, files=self.config.default_files_dir)

	@staticmethod
	def _fallback_note(profile: Path, holder: int | None) -> str:
		by = f' by another running browser (PID {holder})' if holder else ' by another running browser'
		return (
			f'Note: the persistent default profile {profile} is locked{by}, so this session uses a fresh temporary '
			'profile: saved logins are not available and nothing will be kept after the session ends.'
		)

	# -- the end -----------------------------------------------------------------------------------

	async def shutdown(self) -> None:
		"""Every provider shut down, the egress doors closed, our state dir removed, the sidecar let go.
		Idempotent; never raises."""
		for provider in self.all_providers():
			with contextlib.suppress(Exception):
				await provider.shutdown()
		if self.providers is not None and self.providers.egress is not None:
			await self.providers.egress.close()
		if self.state_dir:
			self.state_dir.remove()
		busy.WATCH.stop()
		if self._sidecar is not None:
			self._sidecar.close()
			self._sidecar = None
