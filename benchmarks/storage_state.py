"""What saving, restoring and cloning a session's state costs: ``python -m benchmarks.storage_state [N]``.

For each isolation mode, one of our servers over stdio, real headless Chromium, the loopback test
site. A source session signs in (an HttpOnly cookie and a localStorage entry); then N times each:
``browser_save_state``, ``browser_create_session`` plain and with that state (object), and
``browser_clone_session`` (which also opens the source's URL). Each new session is closed before
the next. Prints a markdown table of medians (ms); figures, never pass/fail.
"""

from __future__ import annotations

import asyncio
import json
import sys

from benchmarks.common import median_ms, server, table
from harness.pages import PageServer

MODES = ('context', 'browser')


async def measure(site: str, mode: str, repeats: int) -> dict[str, list[float]]:
	times: dict[str, list[float]] = {'save': [], 'create': [], 'create+state': [], 'clone': []}
	async with server('ours', '--isolation', mode) as srv:
		await srv.ok('browser_navigate', session_id='source', url=f'{site}/signin?user=bench&note=n')
		saved, _ = await srv.ok('browser_save_state', session_id='source')
		state = json.loads(saved.split('\n', 1)[1])
		for _ in range(repeats):
			times['save'].append((await srv.ok('browser_save_state', session_id='source'))[1])
			for label, arguments in (('create', {}), ('create+state', {'storage_state': state})):
				text, elapsed = await srv.ok('browser_create_session', **arguments)
				times[label].append(elapsed)
				await srv.ok('browser_close_session', session_id=json.loads(text)['session_id'])
			text, elapsed = await srv.ok('browser_clone_session', from_session_id='source')
			times['clone'].append(elapsed)
			await srv.ok('browser_close_session', session_id=json.loads(text)['session_id'])
	return times


async def main(repeats: int) -> None:
	with PageServer() as site:
		rows = []
		for mode in MODES:
			times = await measure(site.url, mode, repeats)
			rows.append([mode, *(median_ms(times[k]) for k in ('save', 'create', 'create+state', 'clone'))])
	header = ['isolation', 'save_state', 'create', 'create + storage_state', 'clone (incl. navigate)']
	print(table(f'Storage state, median ms of {repeats}', header, rows))


if __name__ == '__main__':
	asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5))
