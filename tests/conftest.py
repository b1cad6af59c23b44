from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

os.environ.setdefault('ANONYMIZED_TELEMETRY', 'false')
os.environ.setdefault('BROWSER_USE_SETUP_LOGGING', 'false')
# every server and demo a test starts inherits this; see harness/servers.BLACKHOLE_PROXY
os.environ['BROWSER_USE_MCP_CHROMIUM_ARGS'] = '--proxy-server=http://127.0.0.1:9'

from harness.pages import PageServer  # noqa: E402
from harness.servers import Background, Mcp, running_server  # noqa: E402
from tests.fixtures import isolation_modes  # noqa: E402


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


@pytest.fixture
def home(tmp_path: Path) -> Path:
	return tmp_path / 'home'
