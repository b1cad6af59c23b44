from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault('ANONYMIZED_TELEMETRY', 'false')
os.environ.setdefault('BROWSER_USE_SETUP_LOGGING', 'false')
# every server and demo a test starts inherits this; see harness/servers.BLACKHOLE_PROXY
os.environ['BROWSER_USE_MCP_CHROMIUM_ARGS'] = '--proxy-server=http://127.0.0.1:9'

from harness.pages import PageServer  # noqa: E402
from harness.servers import Background, Mcp, running_server  # noqa: E402
from tests.fixtures import isolation_modes  # noqa: E402

# What a test run may leave in the temp dir when a browser is killed without its cleanup, or a
# process that imported browser-use exits without building a profile. Reported, with the tests that
# were running when each was made, at the end of the run (a warning: the run's outcome is the tests').
LEFTOVER_PATTERNS = ('org.chromium.*', 'browser-use-downloads-*')
TIMELINE_ENV = 'BROWSER_USE_MCP_TEST_TIMELINE'


def _temp_entries() -> set[Path]:
	root = Path(tempfile.gettempdir())
	return {p for pattern in LEFTOVER_PATTERNS for p in root.glob(pattern)}


def pytest_configure(config: pytest.Config) -> None:
	if hasattr(config, 'workerinput') or os.environ.get(TIMELINE_ENV):
		return  # an xdist worker: the controller made the timeline dir, inherited through the environment
	config._leftovers_before = _temp_entries()  # type: ignore[attr-defined]
	os.environ[TIMELINE_ENV] = tempfile.mkdtemp(prefix='browser-use-mcp-test-timeline-')


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
	"""Each test's wall interval, one line per test in this process's file of the timeline dir."""
	start = time.time()
	try:
		return (yield)
	finally:
		folder = os.environ.get(TIMELINE_ENV)
		if folder and os.path.isdir(folder):
			with open(os.path.join(folder, f'{os.getpid()}.jsonl'), 'a') as out:
				out.write(json.dumps({'test': item.nodeid, 'start': start, 'end': time.time()}) + '\n')


def _leftovers_report(config: pytest.Config) -> list[str]:
	"""Lines naming each new leftover and the tests that ran when it was made; removes the timeline."""
	folder = os.environ.get(TIMELINE_ENV, '')
	before = getattr(config, '_leftovers_before', None)
	if before is None or not os.path.isdir(folder):
		return []
	runs = []
	for name in os.listdir(folder):
		with open(os.path.join(folder, name)) as lines:
			runs.extend(json.loads(line) for line in lines if line.strip())
	shutil.rmtree(folder, ignore_errors=True)
	report = []
	for path in sorted(_temp_entries() - before):
		try:
			made = path.stat().st_mtime
		except OSError:
			continue
		when = [r['test'] for r in runs if r['start'] - 1 <= made <= r['end'] + 1]
		report.append(f'{path} (made {time.strftime("%H:%M:%S", time.localtime(made))}) while: {", ".join(when) or "no test"}')
	return report


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
	lines = _leftovers_report(config)
	if lines:
		terminalreporter.write_sep('!', 'left in the temp dir by this run')
		for line in lines:
			terminalreporter.write_line(line)


def pytest_sessionfinish(session: pytest.Session) -> None:
	"""Importing browser-use makes an empty /tmp/browser-use-downloads-<id> (its default profile's);
	a test process that imported it without building a session's profile (which drops it) would
	leave one behind per run."""
	if 'browser_use.browser.session' in sys.modules:
		from browser_use_mcp.browser import drop_default_downloads_dir

		drop_default_downloads_dir()


@pytest.fixture(scope='session')
def site() -> Iterator[str]:
	"""Base URL of the test web site on 127.0.0.1."""
	with PageServer() as server:
		yield server.url


isolation = isolation_modes('context')  # modules that must hold in both modes override it


@pytest.fixture(scope='module')
async def mcp(tmp_path_factory: pytest.TempPathFactory, isolation: str) -> AsyncIterator[Mcp]:
	"""One real server (stdio) shared by a test module; tests use their own session ids."""
	home = tmp_path_factory.mktemp('server-home')
	async with Background(running_server(home)) as server:
		yield server


@pytest.fixture(scope='module')
def action_pages() -> Iterator[str]:
	"""Base URL of the action pages (harness.pages.ACTION_PAGES) on 127.0.0.1."""
	from harness.pages import ACTION_PAGES
	from harness.servers import html_pages

	with html_pages(ACTION_PAGES) as url:
		yield url


@pytest.fixture
def worker_jobs(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
	"""Every job sent to the page-state worker (``offload_state.pool.run``), in order."""
	from browser_use_mcp.patches import offload_state

	jobs: list[Any] = []
	run = offload_state.pool.run

	async def counted(job: Any, fn: Any = None) -> Any:
		jobs.append(job)
		return await run(job, fn)

	monkeypatch.setattr(offload_state.pool, 'run', counted)
	return jobs


@pytest.fixture
async def catalog(tmp_path: Path) -> AsyncIterator[Any]:
	"""A started registry in this process (contexts), through the tools' catalogue."""
	from browser_use_mcp.catalog import Catalog
	from tests.fixtures import in_process_registry

	async with in_process_registry(tmp_path / 'state', 'context', idle_timeout=600) as registry:
		yield Catalog(registry)


@pytest.fixture
def home(tmp_path: Path) -> Path:
	return tmp_path / 'home'
