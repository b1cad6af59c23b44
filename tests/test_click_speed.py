"""Clicks and go-back without fixed sleeps (browser_use_mcp.patches.click_settle), as reliable as before.

The unit half drives ``PageActivity`` with fake CDP events to pin when a click counts as done.
The end-to-end half clicks real pages through the real server and checks that the very next
browser_get_state shows what the click did: a new page, a fragment, a script-delayed navigation,
a fetch that changes the page, a slow server, a download. Timings are printed, never asserted.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import statistics
import time
from typing import Any

import pytest

from browser_use_mcp import patches
from browser_use_mcp.patches import click_settle
from browser_use_mcp.patches.click_settle import PageActivity
from harness.servers import Mcp

GUARD = 20.0  # s: only reached if settle() never returns; not a performance bound
# s settle() may take once the last awaited event has arrived: far above QUIET, so a loaded machine
# does not fail it, and well below NAVIGATION_BUDGET, so a settle() that ignored the event and
# ran to its budget instead would fail
PROMPT = 1.0
assert PROMPT * 2 < click_settle.NAVIGATION_BUDGET


# -- unit: settling on page activity -------------------------------------------------------------


class FakeRegistry:
	def __init__(self) -> None:
		self._handlers: dict[str, Any] = {}

	def register(self, method: str, callback: Any) -> None:
		self._handlers[method] = callback


class FakeClient:
	def __init__(self) -> None:
		self._event_registry = FakeRegistry()

	def emit(self, method: str, params: dict[str, Any], session_id: str = 's1') -> None:
		self._event_registry._handlers[method](params, session_id)


class FakeSessionManager:
	def get_target_id_from_session_id(self, session_id: str) -> str | None:
		return {'s1': 'T1'}.get(session_id)


class FakeBrowserSession:
	session_manager = FakeSessionManager()


BROWSER = FakeBrowserSession()  # PageActivity holds its session weakly


@pytest.fixture
def page() -> tuple[FakeClient, PageActivity]:
	client = FakeClient()
	return client, PageActivity(BROWSER, client)


async def not_done_after(task: asyncio.Task[Any], seconds: float) -> bool:
	done, _ = await asyncio.wait({task}, timeout=seconds)
	return not done


async def test_settle_returns_when_nothing_happens(page: tuple[FakeClient, PageActivity]) -> None:
	_, activity = page
	await asyncio.wait_for(activity.settle(time.monotonic()), GUARD)


async def test_settle_waits_for_a_main_frame_navigation_to_finish(page: tuple[FakeClient, PageActivity]) -> None:
	client, activity = page
	settling = asyncio.create_task(activity.settle(time.monotonic()))
	client.emit('Page.frameStartedLoading', {'frameId': 'T1'})
	client.emit('Page.frameStartedLoading', {'frameId': 'child-frame'})  # iframes don't count
	assert await not_done_after(settling, click_settle.QUIET * 4)
	client.emit('Page.frameNavigated', {'frame': {'id': 'T1'}})
	assert await not_done_after(settling, click_settle.QUIET * 2)  # committed, still loading
	client.emit('Page.frameStoppedLoading', {'frameId': 'T1'})
	await asyncio.wait_for(settling, PROMPT)  # woken by the end of the load, not by the budget


async def test_settle_ignores_what_began_before_the_click(page: tuple[FakeClient, PageActivity]) -> None:
	client, activity = page
	client.emit('Page.frameStartedLoading', {'frameId': 'T1'})
	client.emit('Network.requestWillBeSent', {'requestId': 'r0', 'type': 'XHR'})
	await asyncio.sleep(0.01)
	await asyncio.wait_for(activity.settle(time.monotonic()), GUARD)


async def test_settle_waits_for_requests_the_click_started(
	page: tuple[FakeClient, PageActivity], monkeypatch: pytest.MonkeyPatch
) -> None:
	# a request budget longer than PROMPT, so that only the request's end can finish settle() in time
	monkeypatch.setattr(click_settle, 'REQUEST_BUDGET', click_settle.NAVIGATION_BUDGET)
	client, activity = page
	settling = asyncio.create_task(activity.settle(time.monotonic()))
	client.emit('Network.requestWillBeSent', {'requestId': 'img', 'type': 'Image'})  # not tracked
	client.emit('Network.requestWillBeSent', {'requestId': 'r1', 'type': 'Fetch'})
	assert await not_done_after(settling, click_settle.QUIET * 3)
	client.emit('Network.loadingFinished', {'requestId': 'r1'})
	await asyncio.wait_for(settling, PROMPT)


async def test_a_navigation_without_a_document_gets_time_to_become_a_download(page: tuple[FakeClient, PageActivity]) -> None:
	client, activity = page
	download = asyncio.Event()
	settling = asyncio.create_task(activity.settle(time.monotonic(), download))
	client.emit('Page.frameStartedLoading', {'frameId': 'T1'})
	client.emit('Page.frameStoppedLoading', {'frameId': 'T1'})  # no frameNavigated: no new document
	assert await not_done_after(settling, click_settle.QUIET * 3)
	download.set()
	activity.poke()
	await asyncio.wait_for(settling, click_settle.DOWNLOAD_GRACE / 2)  # woken, not timed out


async def test_go_back_waits_for_its_navigation_to_begin_and_end(page: tuple[FakeClient, PageActivity]) -> None:
	client, activity = page
	settling = asyncio.create_task(activity.settle(time.monotonic(), expect_navigation=True))
	assert await not_done_after(settling, click_settle.QUIET * 3)
	client.emit('Page.frameStartedNavigating', {'frameId': 'T1'})
	client.emit('Page.frameNavigated', {'frame': {'id': 'T1'}})
	assert await not_done_after(settling, click_settle.QUIET * 2)
	client.emit('Page.frameStoppedLoading', {'frameId': 'T1'})
	await asyncio.wait_for(settling, PROMPT)  # woken by the end of the load, not by the budget


def test_handlers_already_registered_still_run() -> None:
	client = FakeClient()
	seen = []
	client._event_registry.register('Page.frameStoppedLoading', lambda params, sid: seen.append(params))
	PageActivity(BROWSER, client)
	client.emit('Page.frameStoppedLoading', {'frameId': 'T1'})
	assert seen == [{'frameId': 'T1'}]


async def test_only_short_sleeps_inside_a_click_are_skipped() -> None:
	slept = []

	class Recorder:
		async def sleep(self, delay: float, result: Any = None) -> Any:
			slept.append(delay)
			return result

	scoped = click_settle._ScopedAsyncio(Recorder())
	await scoped.sleep(0.05)
	token = click_settle._fast_click.set(True)
	try:
		await scoped.sleep(0.05)
		await scoped.sleep(0.08)
		await scoped.sleep(0.5)
	finally:
		click_settle._fast_click.reset(token)
	assert slept == [0.05, 0, 0, 0.5]
	assert click_settle._ScopedAsyncio(asyncio).Event is asyncio.Event  # everything else passes through


def test_pinned_browser_use_matches_what_the_tuning_was_written_for() -> None:
	assert patches.problems(click_settle.PATCH) == []


def test_refuses_with_one_log_line_when_browser_use_differs(caplog: pytest.LogCaptureFixture) -> None:
	from browser_use.browser.watchdogs import default_action_watchdog as module

	was = patches.status_of(click_settle.PATCH)
	patches.revert(click_settle.PATCH)
	try:
		before = module.DefaultActionWatchdog
		with caplog.at_level(logging.INFO, logger=click_settle.PATCH.logger):
			assert patches.apply(dataclasses.replace(click_settle.PATCH, versions=('0.0.1',))).state == 'refused'
		records = [r for r in caplog.records if r.name == click_settle.PATCH.logger]
		assert len(records) == 1 and records[0].levelno == logging.WARNING
		assert module.DefaultActionWatchdog is before
	finally:
		patches.revert(click_settle.PATCH)
		if was is not None:
			patches.apply(click_settle.PATCH, enabled=was.state != 'off')


# -- end to end: the next state shows what the click did ----------------------------------------

EXTRAS = (
	'<a id="dl" href="/download">dl</a> <a href="/slow?s=1">slow</a> <a href="#frag">frag</a> '
	'<button onclick="setTimeout(() => location = \'/two\', 20)">late</button> '
	"<button onclick=\"fetch('/slow?s=0.3').then(() => document.title = 'Fetched')\">fetch</button>"
)


async def home_with_extras(mcp: Mcp, sid: str, site: str) -> dict[str, int]:
	await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/')
	await mcp.ok('browser_evaluate', session_id=sid, expression=f'document.body.insertAdjacentHTML("beforeend", {EXTRAS!r})')
	return {e['text'] or e.get('placeholder', ''): e['index'] for e in (await mcp.page_state(sid))['interactive_elements']}


async def timed_click(mcp: Mcp, sid: str, index: int) -> float:
	started = time.perf_counter()
	await mcp.ok('browser_click', session_id=sid, index=index)
	return time.perf_counter() - started


async def test_clicks_show_their_effect_on_the_next_state(mcp: Mcp, site: str) -> None:
	sid = 'clicks'
	elements = await home_with_extras(mcp, sid, site)
	button = []
	for _ in range(5):
		button.append(await timed_click(mcp, sid, elements['Press me']))
		assert (await mcp.page_state(sid))['title'] == 'Clicked'
	links, backs = [], []
	for _ in range(3):
		elements = await home_with_extras(mcp, sid, site)
		links.append(await timed_click(mcp, sid, elements['Go to two']))
		assert (await mcp.page_state(sid))['title'] == 'Page Two'
		started = time.perf_counter()
		await mcp.ok('browser_go_back', session_id=sid)
		backs.append(time.perf_counter() - started)
		assert (await mcp.page_state(sid))['title'] == 'Home Page'
	print(
		f'\nclick p50: button {statistics.median(button) * 1000:.0f} ms, link {statistics.median(links) * 1000:.0f} ms; '
		f'go_back p50 {statistics.median(backs) * 1000:.0f} ms'
	)
	await mcp.ok('browser_close_session', session_id=sid)


@pytest.mark.parametrize(
	('label', 'title', 'url_end'),
	[('frag', 'Home Page', '/#frag'), ('late', 'Page Two', '/two'), ('fetch', 'Fetched', '/'), ('slow', 'Slow', '/slow?s=1')],
)
async def test_navigations_a_click_starts_are_waited_for(mcp: Mcp, site: str, label: str, title: str, url_end: str) -> None:
	sid = f'nav-{label}'
	elements = await home_with_extras(mcp, sid, site)
	await mcp.ok('browser_click', session_id=sid, index=elements[label])
	seen = await mcp.page_state(sid)
	assert (seen['title'], seen['url']) == (title, site + url_end)
	await mcp.ok('browser_close_session', session_id=sid)


async def test_a_click_that_downloads_still_saves_the_file(mcp: Mcp, site: str) -> None:
	sid = 'download'
	elements = await home_with_extras(mcp, sid, site)
	text = (await mcp.ok('browser_click', session_id=sid, index=elements['dl'])).text
	assert (
		text
		== f"Clicked element {elements['dl']}. It started a download: hello.txt (15 bytes) is saved in the session's downloads."
	), text
	# whole when the reply comes: browser-use's own second copy of the attachment (which empties the
	# file while it writes it again) is waited for
	saved = [p.read_text() for p in (mcp.home / 'state').glob('srv-*/s-*/downloads/hello.txt')]
	assert saved == ['hello download\n'], saved
	assert (await mcp.page_state(sid))['title'] == 'Home Page'
	await mcp.ok('browser_close_session', session_id=sid)
