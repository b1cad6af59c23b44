"""A tab a page opens is let run once browser-use attached it (``patches.popup_resume``).

Found by fuzzing: with the headless shell, ``window.open`` held the page that called it until a
client resumed the new tab, and browser-use resumes a tab only when its attach says it waits (it
says it does not): ``browser_evaluate("window.open(url)")`` ran out its 15 s, and 50 popups were
reported as a timeout. Real sessions in both isolation modes, through the catalogue.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from browser_use_mcp.catalog import Catalog
from browser_use_mcp.patches import popup_resume
from browser_use_mcp.sessions import SessionRegistry
from browser_use_mcp.tools.base import Call
from tests.fixtures import in_process_registry

# opens a popup by itself, then goes on: a held window.open never returns, and the title never changes
OPENER = "<title>opener</title><script>setTimeout(() => { window.open('/popped'); document.title = 'went on'; }, 200)</script>"


@pytest.fixture(scope='module', params=['context', 'browser'])
async def registry(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> AsyncIterator[SessionRegistry]:
	async with in_process_registry(
		Path(tmp_path_factory.mktemp('popups')) / 'state', request.param, idle_timeout=600
	) as registry:
		yield registry


async def call(catalog: Catalog, tool: str, **arguments: object) -> str:
	return (await asyncio.wait_for(catalog.call(tool, arguments, Call()), 30)).text


async def tab_urls(catalog: Catalog, session_id: str) -> list[str]:
	return [tab['url'] for tab in json.loads(await call(catalog, 'browser_list_tabs', session_id=session_id))]


async def test_window_open_returns_and_the_popup_is_a_tab(registry: SessionRegistry, site: str) -> None:
	catalog = Catalog(registry)
	await call(catalog, 'browser_navigate', session_id='pop', url=f'{site}/')
	popup_resume.stats.clear()
	reply = await call(catalog, 'browser_evaluate', session_id='pop', expression=f"window.open('{site}/two') ? 'opened' : 'not'")
	assert json.loads(reply) == 'opened', reply
	assert popup_resume.stats.get('resumed', 0) >= 1, popup_resume.stats
	for _ in range(20):  # its URL arrives with its first navigation
		urls = await tab_urls(catalog, 'pop')
		if f'{site}/two' in urls:
			break
		await asyncio.sleep(0.1)
	assert len(urls) == 2 and f'{site}/two' in urls, urls

	# fifty in one go (a fuzzed call that was reported as a timeout)
	reply = await call(
		catalog,
		'browser_evaluate',
		session_id='pop',
		expression=f"for (let i = 0; i < 50; i++) window.open('{site}/two'); 'done'",
	)
	assert json.loads(reply) == 'done', reply
	assert len(await tab_urls(catalog, 'pop')) == 52
	assert json.loads(await call(catalog, 'browser_get_state', session_id='pop'))['url']
	await call(catalog, 'browser_close_session', session_id='pop')


async def test_a_page_that_opens_a_popup_by_itself_goes_on(registry: SessionRegistry) -> None:
	from harness.servers import html_pages

	catalog = Catalog(registry)
	with html_pages({'/opener': OPENER, '/popped': '<title>popped</title><p>popped</p>'}) as url:
		await call(catalog, 'browser_navigate', session_id='opener', url=f'{url}/opener')
		for _ in range(30):
			if len(await tab_urls(catalog, 'opener')) == 2:
				break
			await asyncio.sleep(0.1)
		await asyncio.sleep(0.3)
		# the opener's script went on past window.open, and answers (a held page answers nothing)
		reply = await call(catalog, 'browser_evaluate', session_id='opener', expression='document.title')
		assert json.loads(reply) == 'went on', reply
	await call(catalog, 'browser_close_session', session_id='opener')
