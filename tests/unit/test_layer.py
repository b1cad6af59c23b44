"""The fast layer keeps its promise: no Chromium and no server can start from a test in tests/unit."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from browser_use_mcp.browser import find_chromium


def quiet(argv: list[str]) -> subprocess.Popen[bytes]:
	return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_a_chromium_launch_is_refused() -> None:
	with pytest.raises(RuntimeError, match='tests/unit launches no browser'):
		quiet([find_chromium(None) or 'chromium', '--version'])


async def test_a_server_launch_is_refused_through_asyncio_too() -> None:
	with pytest.raises(RuntimeError, match='tests/unit launches no browser'):
		await asyncio.create_subprocess_exec(sys.executable, '-m', 'browser_use_mcp', '--version')


def test_other_helper_processes_still_run() -> None:
	assert quiet([sys.executable, '-c', 'pass']).wait(timeout=60) == 0
