"""Sessions on a Selenium Grid 4 standalone with Selenium's defaults (no managed downloads), the
Grid most people start: it must work, and "at capacity" must mean that every slot is busy.

A Grid of its own (3 slots), apart from tests/e2e/test_grid.py's managed-downloads one.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from browser_use_mcp.doctor import check_grid
from browser_use_mcp.providers.grid import plan_request
from harness.gridserver import GridServer
from harness.servers import RawServer, wait_until
from tests.e2e.test_grid import busy_slots, grid_get

SLOTS = 3
NO_DOWNLOADS = 'This download stays on the Selenium Grid node'


@pytest.fixture(scope='module')
def grid(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GridServer]:
	with GridServer(tmp_path_factory.mktemp('grid'), max_sessions=SLOTS, managed_downloads=False) as server:
		yield server


@pytest.fixture
async def raw(grid: GridServer) -> AsyncIterator[list[RawServer]]:
	servers: list[RawServer] = []
	yield servers
	for server in servers:
		server.close_stdin()
		await server.wait(20)
		await server.stop()
	assert await asyncio.to_thread(wait_until, lambda: busy_slots(grid) == 0, 15), 'every Grid session was deleted'


def test_the_stock_grid_offers_no_managed_downloads(grid: GridServer) -> None:
	stereotypes = [slot['stereotype'] for node in grid_get(grid, '/status')['nodes'] for slot in node['slots']]
	assert len(stereotypes) == SLOTS and not any(s.get('se:downloadsEnabled') for s in stereotypes), stereotypes


async def test_sessions_start_on_a_stock_grid_and_the_first_download_says_where_it_went(
	raw: list[RawServer], grid: GridServer, tmp_path: Path, site: str
) -> None:
	server = await RawServer(tmp_path / 'home', '--grid-url', grid.url, '--grid-timeout', '20').start()
	raw.append(server)
	download = (
		f'(() => {{ const a = document.createElement("a"); a.href = "{site}/download"; a.download = "f.txt"; '
		'document.body.appendChild(a); a.click(); return 1; })()'
	)
	async with server.client() as mcp:
		started = time.monotonic()
		await mcp.ok('browser_navigate', session_id='s-1', url=f'{site}/two')
		assert time.monotonic() - started < 15, 'no wait for a slot that never comes'
		await mcp.ok('browser_navigate', session_id='s-2', url=f'{site}/two')
		assert busy_slots(grid) == 2
		texts = []
		for tool, args in [('browser_evaluate', {'expression': download}), ('browser_get_state', {})] * 2:
			texts.extend((await mcp.ok(tool, session_id='s-1', **args)).texts[1:])  # notes follow the reply
			await asyncio.sleep(1.0)
		said = [t for t in texts if NO_DOWNLOADS in t]
		assert len(said) == 1, f'said once, plainly: {[t[-300:] for t in texts]}'
		assert '--enable-managed-downloads true' in said[0]
		assert not any(NO_DOWNLOADS in t for t in (await mcp.ok('browser_get_state', session_id='s-2')).texts)
		await mcp.ok('browser_close_all')


async def test_capabilities_no_node_offers_fail_at_once_and_say_which(
	raw: list[RawServer], grid: GridServer, tmp_path: Path
) -> None:
	server = await RawServer(
		tmp_path / 'home', '--grid-url', grid.url, '--grid-capabilities', '{"platformName": "windows"}'
	).start()
	raw.append(server)
	async with server.client() as mcp:
		started = time.monotonic()
		result = await mcp.call('browser_create_session', session_id='s-win')
		took = time.monotonic() - started
		assert result.is_error and 'at capacity' not in result.text, result.text
		assert 'platformName="windows"' in result.text and 'no node that offers' in result.text, result.text
		assert took < 10, f'failed at once, not after --grid-timeout ({took:.1f} s)'
		assert busy_slots(grid) == 0


def test_doctor_passes_a_stock_grid_and_warns_that_downloads_stay_on_the_node(grid: GridServer) -> None:
	checks = {c.name: c for c in check_grid(grid.url, {})}
	assert checks['grid CDP'].status == 'ok', checks
	assert checks['grid downloads'].status == 'warn' and 'stay on the node' in checks['grid downloads'].summary
	assert 'grid cleanup' not in checks, checks
	# the Grid's /status learns of a freed slot from the node a moment after DELETE answers
	assert wait_until(lambda: busy_slots(grid) == 0, 15), 'the test browser was ended'


def test_managed_downloads_are_asked_for_only_where_a_node_offers_them() -> None:
	caps = {'browserName': 'chrome', 'se:downloadsEnabled': True, 'goog:chromeOptions': {'args': []}}
	chrome = {'browserName': 'chrome', 'platformName': 'linux'}
	stock = {'ready': True, 'nodes': [{'availability': 'UP', 'slots': [{'stereotype': chrome, 'session': None}] * 3}]}
	plan = plan_request('http://g', stock, caps, {})
	assert plan.problem is None and 'se:downloadsEnabled' not in plan.caps and plan.managed is False
	managed = {'nodes': [{'slots': [{'stereotype': {**chrome, 'se:downloadsEnabled': True}}]}]}
	plan = plan_request('http://g', managed, caps, {})
	assert plan.problem is None and plan.caps['se:downloadsEnabled'] is True and plan.managed is True
	# the user asked for them: kept, and said at once that no node has them
	plan = plan_request('http://g', stock, caps, {'se:downloadsEnabled': True})
	assert plan.problem and 'se:downloadsEnabled=true' in plan.problem
	plan = plan_request('http://g', stock, {**caps, 'platformName': 'windows'}, {'platformName': 'windows'})
	assert plan.problem and 'platformName="windows"' in plan.problem and 'at capacity' not in plan.problem
	assert plan_request('http://g', None, caps, {}).caps is caps, 'no /status: ask as before'
