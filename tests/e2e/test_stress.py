"""Concurrency under load: 8 sessions x 25 mixed calls at once, with the reaper expiring an idle one.

Every session logs in as its own user; any page, cookie or tab of another session showing up
is a leak. Every error must be explained (the idle session being told it expired).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from pathlib import Path

import pytest

from harness.servers import RawServer, chromium_pids, owned_processes, wait_until
from tests.fixtures import isolation_modes

isolation = isolation_modes()  # with a Chromium per session and with contexts of shared Chromiums
pytestmark = pytest.mark.usefixtures('isolation')

SESSIONS = 8
CALLS = 25


@pytest.fixture
async def server(tmp_path: Path):
	srv = await RawServer(tmp_path / 'home', '--idle-timeout', '3', '--max-sessions', '12').start()
	yield srv
	await srv.stop()


async def test_eight_sessions_twenty_five_mixed_calls_each(server: RawServer, site: str) -> None:
	leaks: list[str] = []
	unexplained: list[str] = []
	counts: Counter[str] = Counter()
	started = time.monotonic()

	async with server.client() as mcp:

		async def checked(sid: str, name: str, **args):
			result = await mcp.call(name, session_id=sid, **args)
			counts[name] += 1
			if result.is_error:
				unexplained.append(f'{sid} {name}: {result.text[:200]}')
			return result

		async def agent(n: int) -> None:
			rng = random.Random(n)
			sid = f'stress-{n}'
			user = f'u{n}'
			await checked(sid, 'browser_navigate', url=f'{site}/login?user={user}')
			for step in range(CALLS - 1):
				action = rng.choice(
					['whoami', 'state', 'click', 'scroll', 'tabs', 'recreate'] if step > 2 else ['whoami', 'state']
				)
				if action == 'whoami':
					await checked(sid, 'browser_navigate', url=f'{site}/whoami')
					state = (await checked(sid, 'browser_get_state')).json()
					if state['title'] != f'Who: {user}':
						leaks.append(f'{sid} saw {state["title"]!r}')
				elif action == 'state':
					state = (await checked(sid, 'browser_get_state')).json()
					if not state['url'].startswith(site):
						leaks.append(f'{sid} on unexpected page {state["url"]}')
				elif action == 'click':
					await checked(sid, 'browser_navigate', url=f'{site}/')
					state = (await checked(sid, 'browser_get_state')).json()
					link = next((e for e in state['interactive_elements'] if e.get('href') == '/two'), None)
					if link is None:
						unexplained.append(f'{sid} home page state without its link: {state}')
						continue
					await checked(sid, 'browser_click', index=link['index'])
					if (await checked(sid, 'browser_get_state')).json()['title'] != 'Page Two':
						leaks.append(f'{sid} click did not land on page two')
				elif action == 'scroll':
					await checked(sid, 'browser_scroll', direction=rng.choice(['up', 'down']))
				elif action == 'tabs':
					await checked(sid, 'browser_navigate', url=f'{site}/two', new_tab=True)
					tabs = (await checked(sid, 'browser_list_tabs')).json()
					other = next(t for t in tabs if t['url'] == f'{site}/two')
					await checked(sid, 'browser_close_tab', tab_id=other['tab_id'])
				elif action == 'recreate':
					closed = await mcp.call('browser_close_session', session_id=sid)
					counts['browser_close_session'] += 1
					if closed.is_error:
						unexplained.append(f'{sid} close: {closed.text[:200]}')
					await checked(sid, 'browser_navigate', url=f'{site}/login?user={user}')

		async def sleeper() -> None:
			"""Idles past the 3 s timeout while the others work; must be told, then recover."""
			sid = 'stress-sleeper'
			await checked(sid, 'browser_navigate', url=f'{site}/login?user=zz')
			await asyncio.sleep(5)
			lost = await mcp.call('browser_get_state', session_id=sid)
			counts['expected-loss'] += 1
			if not (lost.is_error and 'idle timeout' in lost.text):
				unexplained.append(f'sleeper not told about expiry: {lost.text[:200]}')
			fresh = await checked(sid, 'browser_navigate', url=f'{site}/whoami')
			if not fresh.is_error and (await checked(sid, 'browser_get_state')).json()['title'] != 'Who: nobody':
				leaks.append('sleeper came back with old cookies')

		await asyncio.gather(*(agent(n) for n in range(SESSIONS)), sleeper())
		elapsed = time.monotonic() - started
		peak = len(chromium_pids(owned_processes(server.pid)))
		closed = await mcp.ok('browser_close_all')
		print(
			f'stress: {sum(counts.values())} calls in {elapsed:.1f} s, {closed.structured["closed"]} sessions closed at the end, '
			f'{peak} browser processes at the end, leaks={len(leaks)}, unexplained errors={len(unexplained)}; {dict(counts)}'
		)
		assert leaks == [], leaks
		assert unexplained == [], unexplained
		assert await asyncio.to_thread(wait_until, lambda: not owned_processes(server.pid), 5)
