"""A closed session leaves no task behind: not its event bus, watchdogs, CDP readers or monitors.

browser-use's storage-state monitor outlived every closed session and logged "CDP client not
initialized" once a minute until the server stopped. These tests run the registry in process
with real Chromium and count the event loop's tasks before and after, whatever the way the
session ended (close, close all, idle expiry, a call cancelled by the close).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from browser_use_mcp import tasks as task_scopes
from browser_use_mcp.browser import Owner, StateDir, find_chromium
from browser_use_mcp.catalog import Catalog
from browser_use_mcp.providers.process import ProcessProvider
from browser_use_mcp.sessions import SessionRegistry
from browser_use_mcp.tools.base import Call
from harness.servers import TEST_CHROMIUM_ARGS
from tests.fixtures import in_process_registry


def others(baseline: set[asyncio.Task[Any]]) -> list[str]:
	"""Live tasks that were not there at the baseline (the test's own excluded)."""
	me = asyncio.current_task()
	return sorted(t.get_name() for t in asyncio.all_tasks() if t not in baseline and t is not me and not t.done())


async def settled(baseline: set[asyncio.Task[Any]], timeout: float = 3.0) -> list[str]:
	"""The new tasks still alive once teardown had ``timeout`` to finish (cancellations are asynchronous)."""
	deadline = asyncio.get_running_loop().time() + timeout
	while others(baseline) and asyncio.get_running_loop().time() < deadline:
		await asyncio.sleep(0.05)
	return others(baseline)


async def test_a_closed_browser_leaves_no_task(tmp_path: Path, site: str) -> None:
	from browser_use.browser.events import NavigateToUrlEvent

	state = StateDir(tmp_path / 'state', Owner.current())
	provider = ProcessProvider(
		find_chromium(), owner=Owner.current(), profile_base={}, headless=True, user_args=TEST_CHROMIUM_ARGS
	)
	baseline = set(asyncio.all_tasks())
	browser = await provider.open(state.new_session_dirs('local', 'leak'))
	try:
		await browser.session.event_bus.dispatch(NavigateToUrlEvent(url=f'{site}/two'))
		running = others(baseline)
		assert 'monitor_storage_changes' in running, running  # the task that used to outlive the session
		assert set(running) <= {t.get_name() for t in browser.tasks.alive()}, 'every task of the browser is in its scope'
	finally:
		await browser.close()
	assert await settled(baseline) == []
	state.remove()


@pytest.fixture(params=['browser', 'context'])
async def registry(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[SessionRegistry]:
	# an empty shared Chromium goes at once, with its tasks
	async with in_process_registry(tmp_path / 'state', request.param, idle_timeout=600) as registry:
		yield registry


async def test_every_way_a_session_ends_leaves_no_task(registry: SessionRegistry, site: str) -> None:
	catalog = Catalog(registry)
	call = Call()
	if registry.config.isolation == 'context':  # the provider's own endpoint server lives as long as the registry
		await catalog.call('browser_navigate', {'session_id': 'warm', 'url': f'{site}/two'}, call)
		assert await registry.close('local', 'warm')
		await asyncio.sleep(0.5)
	baseline = set(asyncio.all_tasks())
	for sid in ('closed', 'all-1', 'all-2', 'expired', 'cancelled'):
		await catalog.call('browser_navigate', {'session_id': sid, 'url': f'{site}/two'}, call)
		await catalog.call('browser_get_state', {'session_id': sid}, call)
	assert len(others(baseline)) > 20  # five browsers' worth of buses, readers and monitors

	slow = asyncio.create_task(catalog.call('browser_navigate', {'session_id': 'cancelled', 'url': f'{site}/slow?s=20'}, call))
	await asyncio.sleep(0.5)
	assert await registry.close('local', 'cancelled')
	with pytest.raises(Exception, match='closed'):
		await slow

	assert await registry.close('local', 'closed')
	expired = next(s for s in registry.sessions() if s.session_id == 'expired')
	expired.last_activity -= registry.config.idle_timeout + 1  # idle past the timeout; the reaper may get there first
	await registry.reap()
	assert [s.session_id for s in registry.sessions()] == ['all-1', 'all-2']
	assert await registry.close_all('local') == 2
	assert await settled(baseline) == []


async def test_tasks_started_by_a_call_belong_to_its_session(registry: SessionRegistry, site: str) -> None:
	catalog = Catalog(registry)
	await catalog.call('browser_navigate', {'session_id': 'a', 'url': f'{site}/two'}, Call())
	state = registry.sessions()[0]
	seen: list[task_scopes.TaskScope | None] = []

	async def probe(state: Any) -> None:
		seen.append(task_scopes.current_scope())

	await registry.run('local', 'a', probe)
	assert seen == [state.browser.tasks]
	assert task_scopes.current_scope() is None, 'the scope does not leak into the caller'
