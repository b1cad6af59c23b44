"""The dashboard's frames of a session whose page stops answering (a script that never yields).

A capture that never ends must not hold the session's capture slot: every later request would join
it and the live view would stay blank for good, even after the page recovered. Real Chromium, the
registry in this process, the renderer wedged by a real endless loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from browser_use_mcp.catalog import Catalog
from browser_use_mcp.dashboard import live
from browser_use_mcp.sessions import SessionRegistry
from browser_use_mcp.tools.base import Call
from browser_use_mcp.tools.common import cdp_page
from tests.fixtures import in_process_registry


@pytest.fixture(scope='module')
async def registry(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[SessionRegistry]:
	async with in_process_registry(Path(tmp_path_factory.mktemp('frames')) / 'state', 'context', idle_timeout=600) as registry:
		yield registry


async def test_a_wedged_capture_is_abandoned_and_frames_resume_when_the_page_does(
	registry: SessionRegistry, site: str, monkeypatch: pytest.MonkeyPatch
) -> None:
	monkeypatch.setattr(live, 'CAPTURE_TIMEOUT', 1.0)
	await Catalog(registry).call('browser_navigate', {'session_id': 'wedged', 'url': f'{site}/two'}, Call())
	state = next(s for s in registry.sessions() if s.session_id == 'wedged')
	frames = live.Frames()
	first = await frames.get(state, 'large')
	assert first is not None and first.jpeg[:2] == b'\xff\xd8', 'a JPEG of the page before it is wedged'

	cdp = await cdp_page(state)
	await cdp.cdp_client.send.Runtime.evaluate(
		params={'expression': 'setTimeout(() => { for (;;) {} }, 0); 1'}, session_id=cdp.session_id
	)
	await asyncio.sleep(live.FRAME_INTERVAL['large'] + 0.1)  # the last frame is too old to serve again
	loop = asyncio.get_running_loop()
	started = loop.time()
	stale = await frames.get(state, 'large')
	assert loop.time() - started < live.CAPTURE_TIMEOUT + 1, 'the request waited past the capture timeout'
	assert stale is first, 'a page that does not answer gets the last frame again'
	for _ in range(40):
		if not frames._inflight:
			break
		await asyncio.sleep(0.05)
	assert not frames._inflight, 'the wedged capture still holds the session slot: later requests would join it'

	await cdp.cdp_client.send.Runtime.terminateExecution(session_id=cdp.session_id)  # the page recovers
	fresh = None
	for _ in range(20):
		fresh = await frames.get(state, 'large')
		if fresh is not first:
			break
		await asyncio.sleep(0.2)
	assert fresh is not None and fresh is not first, 'frames resume once the page answers again'
