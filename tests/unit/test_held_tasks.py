"""``tasks.held``: a background task kept until it ends, its failure logged as it ends."""

from __future__ import annotations

import asyncio
import logging

import pytest


async def test_a_held_task_stays_in_its_set_until_done_and_its_failure_is_logged_as_it_ends(
	caplog: pytest.LogCaptureFixture,
) -> None:
	from browser_use_mcp.tasks import held

	into: set[asyncio.Task[object]] = set()
	gate = asyncio.Event()

	async def wait() -> str:
		await gate.wait()
		return 'done'

	async def fail() -> None:
		raise RuntimeError('broken on purpose')

	waiting = held(asyncio.create_task(wait(), name='waiting'), into)
	failing = held(asyncio.create_task(fail(), name='failing'), into)
	cancelled = held(asyncio.create_task(wait(), name='cancelled'), into)
	assert into == {waiting, failing, cancelled}
	cancelled.cancel()
	with caplog.at_level(logging.ERROR, logger='browser_use_mcp.tasks'):
		await asyncio.sleep(0)
		await asyncio.sleep(0)
	assert into == {waiting}
	failures = [r for r in caplog.records if r.name == 'browser_use_mcp.tasks']
	assert len(failures) == 1 and 'failing' in failures[0].getMessage()
	assert failures[0].exc_info is not None and 'broken on purpose' in str(failures[0].exc_info[1])
	gate.set()
	assert await waiting == 'done' and not into
