"""A navigation returns once its page is ready, not at the next tick of browser-use's 50 ms poll
(``patches.navigation_wake``): the poll's sleep ends at the session's next lifecycle event.

The unit half drives the scoped sleep alone; the Chromium half navigates real sessions through the
catalogue and counts why each of the poll's sleeps ended.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from browser_use_mcp.catalog import Catalog
from browser_use_mcp.patches import navigation_wake
from browser_use_mcp.sessions import SessionRegistry
from browser_use_mcp.tools.base import Call
from tests.fixtures import in_process_registry, patches_active, patches_reverted

# -- unit: the scoped sleep --------------------------------------------------------------------------


async def _turns(n: int = 5) -> None:
	for _ in range(n):
		await asyncio.sleep(0)


async def test_the_polls_sleep_ends_when_a_lifecycle_event_wakes_it() -> None:
	scoped = navigation_wake._ScopedAsyncio(asyncio)
	wake = asyncio.Event()
	token = navigation_wake._wake.set(wake)
	try:
		sleeping = asyncio.create_task(scoped.sleep(navigation_wake.POLL))
		await _turns()
		assert not sleeping.done()
		wake.set()
		await _turns()
		assert sleeping.done() and not wake.is_set(), 'woken and re-armed for the next look'
		wake.set()  # an event between two looks: the next sleep does not wait at all
		assert await asyncio.wait_for(scoped.sleep(navigation_wake.POLL), 0.01) is None
	finally:
		navigation_wake._wake.reset(token)


async def test_other_sleeps_and_sleeps_outside_a_navigation_keep_their_length() -> None:
	scoped = navigation_wake._ScopedAsyncio(asyncio)
	outside = asyncio.create_task(scoped.sleep(navigation_wake.POLL))  # no navigation in this task
	wake = asyncio.Event()
	token = navigation_wake._wake.set(wake)
	try:
		longer = asyncio.create_task(scoped.sleep(0.1))  # not the poll's interval
		await _turns()
		wake.set()
		await _turns()
		assert not outside.done() and not longer.done()
		assert scoped.get_event_loop is asyncio.get_event_loop  # everything else is asyncio's own
	finally:
		navigation_wake._wake.reset(token)
		outside.cancel()
		longer.cancel()


# -- with Chromium -------------------------------------------------------------------------------------


@pytest.fixture(scope='module', params=['context', 'browser'])
async def registry(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> AsyncIterator[SessionRegistry]:
	async with in_process_registry(Path(tmp_path_factory.mktemp('wake')) / 'state', request.param, idle_timeout=600) as registry:
		yield registry


async def test_a_navigation_is_woken_by_its_pages_lifecycle_events(registry: SessionRegistry, site: str) -> None:
	catalog = Catalog(registry)
	with patches_active(navigation_wake.PATCH):
		navigation_wake.stats.clear()
		result = await catalog.call('browser_navigate', {'session_id': 'wake', 'url': f'{site}/late-load?s=0.3'}, Call())
		assert result.text == f'Navigated to: {site}/late-load?s=0.3'
		# Page.navigate answers at the commit, the load comes 0.3 s later (an image): the poll sleeps meanwhile
		assert navigation_wake.stats['woken'] >= 1, navigation_wake.stats  # the page's load ended the poll's sleep
		state = next(s for s in registry.sessions() if s.session_id == 'wake')
		assert (await state.browser_session.get_current_page_url()).endswith('/late-load?s=0.3')
		assert all(not w.events for w in navigation_wake._connections.values()), 'no navigation left waiting'
	with patches_reverted(navigation_wake.PATCH):
		navigation_wake.stats.clear()
		await catalog.call('browser_navigate', {'session_id': 'wake', 'url': f'{site}/late-load?s=0.2'}, Call())
		assert navigation_wake.stats == {}, 'reverted: browser-use sleeps its own ticks'
	await catalog.call('browser_close_session', {'session_id': 'wake'}, Call())
