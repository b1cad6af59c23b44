"""Instant sessions (--prewarm) and lean launches.

Unit tests drive ``BrowserPool`` with fake browsers: filling, handing out (also a launch still
under way), the session cap, low memory, dead spares, failures and shutdown. The end-to-end test
runs the real server with ``--prewarm 2`` and counts its Chromium processes as sessions come and
go. Acquire latency is printed, never asserted (benchmarks/ measures it).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

from browser_use_mcp.browser import OWNER_SWITCH, SessionDirs, StateDir, build_profile, cached_extension_args, chromium_args
from browser_use_mcp.pool import BrowserPool
from harness.servers import Background, Mcp, owned_processes, running_server, server_env, wait_until

GUARD = 20.0


class FakeBrowser:
	def __init__(self, dirs: SessionDirs) -> None:
		self.dirs = dirs
		self.dead = False
		self.closed = False

	def alive(self) -> bool:
		return not self.dead and not self.closed

	async def close(self) -> None:
		self.closed = True


class Launcher:
	"""Launches fake browsers; a test can hold launches at a gate or make them fail."""

	def __init__(self, tmp: Path) -> None:
		self.tmp = tmp
		self.count = 0
		self.gate: asyncio.Event | None = None
		self.fail = False
		self.browsers: list[FakeBrowser] = []

	def new_dirs(self) -> SessionDirs:
		self.count += 1
		root = self.tmp / f'spare-{self.count}'
		dirs = SessionDirs(profile=root / 'profile', downloads=root / 'downloads', files=root / 'files', root=root)
		dirs.profile.mkdir(parents=True)
		return dirs

	async def launch(self, dirs: SessionDirs) -> Any:
		if self.gate is not None:
			await self.gate.wait()
		if self.fail:
			raise RuntimeError('no browser today')
		browser = FakeBrowser(dirs)
		self.browsers.append(browser)
		return browser


@pytest.fixture
async def make_pool(tmp_path: Path) -> AsyncIterator[Callable[..., tuple[BrowserPool, Launcher]]]:
	pools: list[BrowserPool] = []

	def make(size: int = 2, room: Callable[[], int] = lambda: 10, memory: Callable[[], int] = lambda: 8 << 30):
		launcher = Launcher(tmp_path)
		pool = BrowserPool(size, new_dirs=launcher.new_dirs, launch=launcher.launch, room=room, memory=memory)
		pools.append(pool)
		return pool, launcher

	yield make
	for pool in pools:
		await pool.close()


async def until(predicate: Callable[[], bool]) -> None:
	deadline = time.monotonic() + GUARD
	while not predicate():
		assert time.monotonic() < deadline, 'condition never became true'
		await asyncio.sleep(0.01)


@pytest.fixture(autouse=True)
def no_warm_up(monkeypatch: pytest.MonkeyPatch) -> None:
	monkeypatch.setattr('browser_use_mcp.pool.warm_up', lambda: None)


async def test_fills_hands_out_and_refills(make_pool: Any) -> None:
	pool, launcher = make_pool(2)
	pool.start()
	await until(lambda: pool.ready == 2)
	spare = await pool.claim()
	assert spare is not None and spare.browser.dirs is spare.dirs and spare.browser.alive()
	other = await pool.claim()
	assert other is not None and other.browser is not spare.browser  # each handed out once
	await until(lambda: pool.ready == 2)
	assert launcher.count >= 4 and pool.handed_out == 2


async def test_a_launch_under_way_is_awaited_not_duplicated(make_pool: Any) -> None:
	pool, launcher = make_pool(1)
	launcher.gate = asyncio.Event()
	pool.start()
	await until(lambda: pool.pending == 1)
	claiming = asyncio.create_task(pool.claim())
	await asyncio.sleep(0.05)
	assert not claiming.done()
	launcher.gate.set()
	spare = await asyncio.wait_for(claiming, GUARD)
	assert spare is not None and spare.browser is launcher.browsers[0]


async def test_pooled_plus_live_never_exceed_the_cap(make_pool: Any) -> None:
	live = {'n': 3}
	pool, launcher = make_pool(4, room=lambda: 5 - live['n'])
	pool.start()
	await until(lambda: pool.ready == 2)
	await asyncio.sleep(0.1)
	assert pool.pending == 2
	live['n'] = 5  # sessions took the room: spares beyond the cap are closed
	pool._poke.set()
	await until(lambda: pool.pending == 0)
	assert all(b.closed for b in launcher.browsers)


async def test_no_refill_when_memory_is_low(make_pool: Any) -> None:
	free = {'bytes': 100 << 20}
	pool, launcher = make_pool(2, memory=lambda: free['bytes'])
	pool.start()
	await asyncio.sleep(0.2)
	assert launcher.count == 0 and await pool.claim() is None
	free['bytes'] = 8 << 30
	pool._poke.set()
	await until(lambda: pool.ready == 2)


async def test_dead_spares_are_skipped_and_replaced(make_pool: Any) -> None:
	pool, launcher = make_pool(2)
	pool.start()
	await until(lambda: pool.ready == 2)
	launcher.browsers[0].dead = True
	spare = await pool.claim()
	assert spare is not None and spare.browser is launcher.browsers[1]
	assert launcher.browsers[0].closed and not launcher.browsers[0].dirs.root.exists()


async def test_failed_launches_leave_nothing_behind(make_pool: Any, tmp_path: Path) -> None:
	pool, launcher = make_pool(1)
	launcher.fail = True
	pool.start()
	await until(lambda: launcher.count >= 1)
	await asyncio.sleep(0.05)
	assert pool.pending == 0 and await pool.claim() is None
	assert list(tmp_path.glob('spare-*')) == []


async def test_close_ends_spares_and_launches_but_not_what_was_claimed(make_pool: Any, tmp_path: Path) -> None:
	pool, launcher = make_pool(2)
	pool.start()
	await until(lambda: pool.ready == 2)
	claimed = await pool.claim()  # now its claimant's to use or close
	launcher.gate = asyncio.Event()  # the refill hangs mid-launch
	await until(lambda: pool.pending == 2)
	await asyncio.wait_for(pool.close(), GUARD)
	assert claimed is not None and not claimed.browser.closed
	assert all(b.closed for b in launcher.browsers if b is not claimed.browser)
	assert list(tmp_path.glob('spare-*')) == [claimed.dirs.root]
	assert await pool.claim() is None


# -- lean launches -------------------------------------------------------------------------------


def test_launch_flags_keep_gpu_and_network_in_the_browser_process(tmp_path: Path) -> None:
	dirs = SessionDirs(profile=tmp_path / 'p', downloads=tmp_path / 'd', files=tmp_path / 'f')
	args = chromium_args(build_profile({}, dirs, headless=True))
	assert '--in-process-gpu' in args
	enabled = [a for a in args if a.startswith('--enable-features=')]
	assert len(enabled) == 1 and 'NetworkServiceInProcess2' in enabled[0].split('=', 1)[1].split(',')
	assert len([a for a in args if a.startswith('--disable-features=')]) == 1


def test_launch_flags_turn_off_the_omnibox_webui(tmp_path: Path) -> None:
	"""Chromium 156 builds it for every window, in a renderer per session (tests/e2e/test_renderers.py);
	user flags that disable other features are merged with ours, not put in their place."""
	dirs = SessionDirs(profile=tmp_path / 'p', downloads=tmp_path / 'd', files=tmp_path / 'f')
	args = chromium_args(build_profile({}, dirs, headless=True), user_args=('--disable-features=Foo',))
	(disabled,) = [a.split('=', 1)[1].split(',') for a in args if a.startswith('--disable-features=')]
	assert {'WebUIOmniboxPopup', 'WebUIOmniboxAimPopup', 'Foo'} <= set(disabled)


def test_shared_chromiums_keep_their_zygote_a_session_s_own_does_not(tmp_path: Path) -> None:
	"""browser-use's --no-zygote costs every renderer of a shared Chromium ~15 MB PSS; a Chromium of
	one session has one renderer, to which the zygote's processes would only add. A user's own
	--no-zygote is kept either way."""
	dirs = SessionDirs(profile=tmp_path / 'p', downloads=tmp_path / 'd', files=tmp_path / 'f')
	profile = build_profile({}, dirs, headless=True)
	assert '--no-zygote' in chromium_args(profile)
	assert '--no-zygote' not in chromium_args(profile, shared=True)
	assert '--no-zygote' in chromium_args(profile, user_args=('--no-zygote',), shared=True)
	# the zygote its renderers fork from, not the unsandboxed one that would sit idle beside it
	assert '--no-unsandboxed-zygote' in chromium_args(profile, shared=True)
	assert '--no-unsandboxed-zygote' not in chromium_args(profile)


def test_extensions_are_never_downloaded_at_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
	from browser_use.config import CONFIG

	dirs = SessionDirs(profile=tmp_path / 'p', downloads=tmp_path / 'd', files=tmp_path / 'f')
	assert build_profile({'enable_default_extensions': True}, dirs, headless=True).enable_default_extensions is False
	monkeypatch.setenv('BROWSER_USE_CONFIG_DIR', str(tmp_path / 'fresh-config'))
	assert not any(CONFIG.BROWSER_USE_EXTENSIONS_DIR.iterdir())  # nothing cached yet
	assert cached_extension_args() == []


# -- end to end ----------------------------------------------------------------------------------


def browser_roots(server_pid: int) -> set[int]:
	"""Main Chromium processes (one per session or spare) of this server."""
	roots = set()
	for pid in owned_processes(server_pid):
		with contextlib.suppress(psutil.Error):
			cmdline = psutil.Process(pid).cmdline()
			if any(a.startswith(OWNER_SWITCH) for a in cmdline) and not any(a.startswith('--type=') for a in cmdline):
				roots.add(pid)
	return roots


@pytest.fixture(scope='module')
async def prewarmed(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Mcp]:
	"""A Chromium per spare, counted as processes (ready contexts: tests/e2e/test_contexts.py)."""
	home = tmp_path_factory.mktemp('prewarm-home')
	env = server_env(home, BROWSER_USE_MCP_PREWARM='2', BROWSER_USE_MCP_MAX_SESSIONS='3', BROWSER_USE_MCP_ISOLATION='browser')
	async with Background(running_server(home, env=env)) as server:
		yield server
	assert wait_until(lambda: not owned_processes(server.pid), timeout=15), 'browsers outlived the server'


async def test_prewarmed_sessions_start_ready_and_respect_the_cap(prewarmed: Mcp, site: str) -> None:
	mcp = prewarmed
	assert wait_until(lambda: len(browser_roots(mcp.pid)) == 2, timeout=60), 'the pool never filled'
	acquire = []
	sids = []
	for _ in range(3):
		assert wait_until(lambda: len(browser_roots(mcp.pid)) == 3 or len(sids) == 0, timeout=60)
		started = time.perf_counter()
		created = (await mcp.ok('browser_create_session')).json()
		acquire.append(time.perf_counter() - started)
		sids.append(created['session_id'])
		await mcp.ok('browser_navigate', session_id=sids[-1], url=f'{site}/two')
		assert (await mcp.ok('browser_get_state', session_id=sids[-1])).json()['title'] == 'Page Two'
		assert len(browser_roots(mcp.pid)) <= 3  # live + pooled never exceed --max-sessions
	refused = await mcp.call('browser_create_session')
	assert refused.is_error and 'max-sessions' in refused.text
	print(f'\nacquire with --prewarm 2: {", ".join(f"{t * 1000:.0f} ms" for t in acquire)}')
	state_dirs = {p.parent for p in (mcp.home / 'state').glob('srv-*/s-*/profile')}
	assert len(state_dirs) == 3  # three sessions, each its own fresh profile
	await mcp.ok('browser_close_all')
	assert wait_until(lambda: len(browser_roots(mcp.pid)) == 2, timeout=60), 'the pool did not refill after close'


def test_state_dir_names_of_spares_do_not_depend_on_a_session_id(tmp_path: Path) -> None:
	from browser_use_mcp.browser import Owner

	state = StateDir(tmp_path, Owner.current())
	first, second = state.new_session_dirs('local', 'prewarmed'), state.new_session_dirs('local', 'prewarmed')
	assert first.root != second.root and first.temporary and second.temporary


@pytest.mark.parametrize('delay', [0.15, 0.4, 0.7])
async def test_shutdown_during_a_refill_is_quiet_and_leaves_nothing(tmp_path: Path, delay: float) -> None:
	"""SIGTERM while a spare is still being launched or connected: the launch is called off
	without browser-use reporting a failed connection, and nothing is left behind. The delays
	spread the signal over the launch (process start, DevTools, CDP connect)."""
	import os
	import signal

	from harness.servers import RawServer

	home = tmp_path / 'home'
	server = await RawServer(home, env=server_env(home, BROWSER_USE_MCP_PREWARM='2')).start()
	try:
		assert await asyncio.to_thread(wait_until, lambda: len(browser_roots(server.pid)) >= 1, 60), 'no spare launched'
		await asyncio.sleep(delay)
		pids = owned_processes(server.pid)
		os.kill(server.pid, signal.SIGTERM)
		assert await server.wait(15) is not None, 'server did not exit'
		assert await asyncio.to_thread(wait_until, lambda: not any(psutil.pid_exists(p) for p in pids), 5)
		log = server.stderr.decode('utf-8', 'replace')
		assert 'FATAL' not in log and 'Traceback' not in log, log[-3000:]
		assert list((home / 'state').glob('srv-*')) == []
	finally:
		await server.stop()
