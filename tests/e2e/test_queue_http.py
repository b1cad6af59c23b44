"""The fair queue on a real HTTP server: a principal at its limit waits, told why through MCP
progress notifications, and gets its slot when one of its sessions closes; another principal is
served at once meanwhile."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path

from harness.httpserver import HttpServer, connect, http_server

A = f'alpha-{uuid.uuid4().hex}'
B = f'beta-{uuid.uuid4().hex}'


@contextlib.contextmanager
def limited_server(home: Path) -> Iterator[HttpServer]:
	with http_server(
		home, '--max-sessions-per-principal', '1', '--queue-timeout', '60', '--auth-token', A, '--auth-token', B
	) as server:
		yield server


async def test_a_queued_session_is_told_why_and_gets_the_freed_slot(tmp_path: Path, site: str) -> None:
	with limited_server(tmp_path / 'home') as server:
		async with connect(server, A) as alpha, connect(server, B) as beta:
			await alpha.ok('browser_navigate', url=f'{site}/two', session_id='first')
			progress: list[tuple[float, float | None, str | None]] = []

			async def on_progress(done: float, total: float | None, message: str | None) -> None:
				progress.append((done, total, message))

			queued = asyncio.create_task(
				alpha.client.call_tool(
					'browser_navigate', {'url': f'{site}/form', 'session_id': 'second'}, progress_callback=on_progress
				)
			)
			await asyncio.sleep(1)
			assert not queued.done()
			# B is served at once while A's second session waits
			await asyncio.wait_for(beta.ok('browser_navigate', url=f'{site}/', session_id='first'), 30)
			assert progress and progress[0][1] == 60
			assert progress[0][2] == (
				"Waiting for a session slot for 'second': you hold 1 sessions, your limit (--max-sessions-per-principal 1), "
				'and 0 more of your new sessions are queued ahead of this one.'
			)
			await alpha.ok('browser_close_session', session_id='first')
			result = await asyncio.wait_for(queued, 60)
			assert not result.is_error, result
			assert (await alpha.page_state('second'))['url'] == f'{site}/form'
