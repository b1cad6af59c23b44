"""A renderer that keeps a core busy yields to the others, and gets its priority back when calm.

Real Chromiums, sessions through the catalogue: a page that burns CPU in one session, a quiet page
in another. ``busy.WATCH`` must lower exactly the busy one (its threads' niceness in a shared
Chromium; its Chromium's autogroup with a Chromium of its own), give it back once the page is calm,
and do nothing when switched off."""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures import scraped_metrics

pytestmark = pytest.mark.skipif(not sys.platform.startswith('linux'), reason='niceness and autogroups are Linux')

# a page that keeps its renderer busy (200 ms of work, then a tick for the page's other tasks)
BURN = """<title>burn</title><script>
window.burning = true;
function burn() { const end = performance.now() + 200; while (performance.now() < end) {} if (window.burning) setTimeout(burn, 0); }
burn();
</script>"""
QUIET = '<title>quiet</title><p>nothing runs here</p>'
START_BURNING = 'window.burning = true; (function burn() { const end = performance.now() + 200; while (performance.now() < end) {} if (window.burning) setTimeout(burn, 0); })(); 1'
STOP_BURNING = 'window.burning = false; 1'


@pytest.fixture(scope='module')
def pages() -> Iterator[str]:
	from harness.servers import html_pages

	with html_pages({'/burn': BURN, '/quiet': QUIET}) as url:
		yield url


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
	"""Looks every 0.2 s, and a renderer busy from 0.3 of a core (the test machine runs other tests)."""
	from browser_use_mcp import busy

	monkeypatch.setattr(busy, 'INTERVAL', 0.2)
	monkeypatch.setattr(busy, 'BUSY', 0.3)


@contextlib.asynccontextmanager
async def catalog_for(tmp_path: Path, isolation: str, **options: Any) -> AsyncIterator[Any]:
	from browser_use_mcp.catalog import Catalog
	from tests.fixtures import in_process_registry

	async with in_process_registry(tmp_path / 'state', isolation, idle_timeout=600, **options) as registry:
		yield Catalog(registry)


async def call(catalog: Any, tool: str, **arguments: Any) -> str:
	from browser_use_mcp.tools.base import Call

	return (await catalog.call(tool, arguments, Call())).text


async def until(check: Any, timeout: float = 15.0) -> Any:
	"""``check()`` once it is truthy; fails after ``timeout`` s."""
	deadline = asyncio.get_running_loop().time() + timeout
	while True:
		found = check()
		if found:
			return found
		assert asyncio.get_running_loop().time() < deadline, 'timed out'
		await asyncio.sleep(0.1)


def renderers() -> dict[int, int]:
	"""pid -> niceness of every renderer of the watched Chromiums."""
	from browser_use_mcp import busy

	found = {}
	for pid in busy._read_groups(set(busy.WATCH._browsers)):
		if busy._is_renderer(pid):
			found[pid] = os.getpriority(os.PRIO_PROCESS, pid)
	return found


def scraped(catalog: Any) -> tuple[float, float]:
	"""(lowered now, yields so far) as a Prometheus scrape of the server's metrics reads them."""
	found = {sample.name: sample.value for sample in scraped_metrics(catalog.sessions)}
	return found['browser_use_mcp_busy_processes_lowered'], found['browser_use_mcp_busy_yields_total']


async def test_in_a_shared_chromium_only_the_busy_renderer_yields_and_comes_back(tmp_path: Path, pages: str, quick: None) -> None:
	from browser_use_mcp import busy

	async with catalog_for(tmp_path, 'context') as catalog:
		await call(catalog, 'browser_navigate', session_id='quiet', url=f'{pages}/quiet')
		await call(catalog, 'browser_navigate', session_id='busy', url=f'{pages}/burn')
		assert busy.WATCH.nice == 19
		(lowered,) = await until(busy.WATCH.lowered)
		nices = renderers()
		assert nices[lowered] == 19 and len(nices) >= 2, nices
		assert all(nice == 10 for pid, nice in nices.items() if pid != lowered), nices  # the quiet one keeps its 10
		with open(f'/proc/{lowered}/task/{lowered}/stat') as f:  # every thread, the main one included
			assert int(f.read().rsplit(')', 1)[1].split()[16]) == 19
		assert scraped(catalog) == (1.0, 1.0)  # /metrics: one lowered now, one yield so far

		await call(catalog, 'browser_evaluate', session_id='busy', expression=STOP_BURNING)
		await until(lambda: not busy.WATCH.lowered())
		assert renderers()[lowered] == 10
		assert scraped(catalog) == (0.0, 1.0)

		# now the other session burns: its renderer yields, not the one lowered before
		await call(catalog, 'browser_evaluate', session_id='quiet', expression=START_BURNING)
		(other,) = await until(busy.WATCH.lowered)
		assert other != lowered and renderers()[other] == 19 and renderers()[lowered] == 10
		await call(catalog, 'browser_evaluate', session_id='quiet', expression=STOP_BURNING)
		await until(lambda: not busy.WATCH.lowered())
		assert busy.WATCH.yielded == 2


async def test_a_chromium_of_its_own_yields_as_an_autogroup(tmp_path: Path, pages: str, quick: None) -> None:
	from browser_use_mcp import busy

	async with catalog_for(tmp_path, 'browser') as catalog:
		await call(catalog, 'browser_navigate', session_id='busy', url=f'{pages}/burn')
		(leader,) = await until(busy.WATCH.lowered)
		assert leader in busy.WATCH._browsers and busy.autogroup_nice(leader) == 19
		assert all(nice == 10 for nice in renderers().values())  # its processes keep their own niceness
		await call(catalog, 'browser_evaluate', session_id='busy', expression=STOP_BURNING)
		await until(lambda: not busy.WATCH.lowered())
		assert busy.autogroup_nice(leader) == 10


async def test_switched_off_nothing_yields(tmp_path: Path, pages: str, quick: None) -> None:
	from browser_use_mcp import busy

	async with catalog_for(tmp_path, 'context', busy_renderer_nice=0) as catalog:
		await call(catalog, 'browser_navigate', session_id='busy', url=f'{pages}/burn')
		await asyncio.sleep(2.0)  # ten looks' worth, had it been on
		assert busy.WATCH.lowered() == [] and busy.WATCH.yielded == 0 and busy.WATCH._task is None
		await call(catalog, 'browser_evaluate', session_id='busy', expression=STOP_BURNING)


def test_its_setting_is_checked() -> None:
	from browser_use_mcp.config import ServerConfig, validate

	validate(ServerConfig(busy_renderer_nice=0))
	validate(ServerConfig(busy_renderer_nice=15))
	for wrong in (5, 10, 20, -1):
		with pytest.raises(SystemExit, match='busy renderer nice must be 0'):
			validate(ServerConfig(busy_renderer_nice=wrong))


@contextlib.asynccontextmanager
async def busy_worker() -> AsyncIterator[tuple[int, asyncio.Future[Any]]]:
	"""The page-state worker, watched, at its own niceness, then kept busy (two sums of 10**8 run in
	it, ~2 s of CPU) until the watch lowered it: (its pid, the sums); the watch stopped and the worker
	shut down after."""
	from browser_use_mcp import busy
	from browser_use_mcp.patches import offload_state

	busy.WATCH.configure(19)
	try:
		assert await offload_state.pool.wait_ready(60), 'the page-state worker did not start'
		(worker,) = [pid for pid, b in busy.WATCH._browsers.items() if b.whole]
		assert busy.autogroup_nice(worker) == offload_state.WORKER_NICE
		burning = asyncio.ensure_future(asyncio.gather(*(offload_state.pool.run(range(10**8), sum) for _ in range(2))))
		await until(lambda: worker in busy.WATCH.lowered())
		yield worker, burning
	finally:
		busy.WATCH.stop()
		offload_state.pool.shutdown(wait=True)


async def test_a_busy_page_state_worker_yields_as_an_autogroup(quick: None) -> None:
	"""The page-state worker, once started, is watched too: kept busy, its autogroup is lowered; calm
	again, it gets its niceness back."""
	from browser_use_mcp import busy
	from browser_use_mcp.patches import offload_state

	async with busy_worker() as (worker, burning):
		assert busy.autogroup_nice(worker) == 19
		assert await burning == [sum(range(10**8))] * 2
		await until(lambda: not busy.WATCH.lowered())
		assert busy.autogroup_nice(worker) == offload_state.WORKER_NICE


async def test_stopping_the_watch_gives_back_what_it_lowered(quick: None) -> None:
	"""The page-state worker outlives the registry whose watch lowered it: a watch stopped while the
	worker is lowered (a registry shut down mid-build) gives it its niceness back."""
	from browser_use_mcp import busy
	from browser_use_mcp.patches import offload_state

	async with busy_worker() as (worker, burning):
		busy.WATCH.stop()
		assert busy.autogroup_nice(worker) == offload_state.WORKER_NICE and busy.WATCH.lowered() == []
		await burning


CHECK = (
	'from browser_use_mcp.config import ServerConfig; from browser_use_mcp.doctor import check_cpu_priority; '
	'c = check_cpu_priority(ServerConfig()); print(c.status); print(c.summary); print(c.fix)'
)


@pytest.mark.skipif(
	os.geteuid() != 0 or not shutil.which('setpriv') or resource.getrlimit(resource.RLIMIT_NICE)[0] >= 10,
	reason='needs root, setpriv (util-linux) and RLIMIT_NICE under 10 to run a process that may not raise a priority',
)
def test_doctor_says_whether_busy_renderers_can_yield() -> None:
	"""The probe is real: a process without CAP_SYS_NICE (and RLIMIT_NICE under 10) cannot give a thread
	its priority back, and doctor warns with the fix; with the capability it can."""
	from browser_use_mcp.config import ServerConfig
	from browser_use_mcp.doctor import check_cpu_priority

	def doctor(*prefix: str) -> list[str]:
		done = subprocess.run([*prefix, sys.executable, '-c', CHECK], capture_output=True, text=True, timeout=60, check=True)
		return done.stdout.splitlines()

	status, summary, fix = doctor('setpriv', '--inh-caps=-sys_nice', '--bounding-set=-sys_nice')
	assert status == 'warn' and 'not lowered' in summary and 'CAP_SYS_NICE' in summary, summary
	assert 'SYS_NICE' in fix and 'LimitNICE=10' in fix
	status, summary, _ = doctor()
	assert status == 'ok' and 'yields (niceness 19)' in summary, summary
	off = check_cpu_priority(ServerConfig(busy_renderer_nice=0))
	assert off.status == 'ok' and 'do not yield' in off.summary
