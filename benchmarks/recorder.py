"""What the flight recorder costs: ``.venv/bin/python -m benchmarks.recorder [--rounds N]``.

One server (real MCP client over stdio, headless Chromium, pages on 127.0.0.1), two sessions in
it: one recorded (``record: ["trace"]``), one not. Round after round, each session in turn runs
the same steps (navigate home, get_state, click its button, navigate to another page), so both see
the same machine load; p50 of navigate, click and get_state side by side, and the recorded one's
overhead. The recorder's extra work per call: a URL/title read before and after, and after
navigate and click a screenshot of the page (640 px wide JPEG, quality 60) written to disk.
Prints a markdown table; measurements, never pass/fail.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from benchmarks.common import Server, median_ms, server, table

SESSIONS = {'off': {}, 'trace': {'record': ['trace']}}


async def one_round(srv: Server, sid: str, site: str, out: dict[str, list[float]], think: float = 0.0) -> None:
	"""navigate, get_state, click, navigate; ``think`` s between calls (an agent's model step)."""
	_, elapsed = await srv.ok('browser_navigate', session_id=sid, url=f'{site}/')
	out['navigate'].append(elapsed)
	await asyncio.sleep(think)
	text, elapsed = await srv.ok('browser_get_state', session_id=sid)
	out['get_state'].append(elapsed)
	await asyncio.sleep(think)
	button = next(e['index'] for e in json.loads(text)['interactive_elements'] if e['tag'] == 'button')
	_, elapsed = await srv.ok('browser_click', session_id=sid, index=button)
	out['click'].append(elapsed)
	await asyncio.sleep(think)
	_, elapsed = await srv.ok('browser_navigate', session_id=sid, url=f'{site}/two')
	out['navigate'].append(elapsed)
	await asyncio.sleep(think)


async def bench(rounds: int, think: float) -> dict[str, dict[str, float]]:
	from tests.pages import PageServer

	times: dict[str, dict[str, list[float]]] = {k: {'navigate': [], 'click': [], 'get_state': []} for k in SESSIONS}
	with PageServer() as pages:
		async with server('ours') as srv:
			for label, options in SESSIONS.items():
				await srv.ok('browser_create_session', session_id=f'bench-{label}', **options)
				await one_round(srv, f'bench-{label}', pages.url, {k: [] for k in times[label]})  # warm-up
			for i in range(rounds):
				order = list(SESSIONS) if i % 2 == 0 else list(reversed(SESSIONS))  # neither always goes first
				for label in order:
					await one_round(srv, f'bench-{label}', pages.url, times[label], think)
	return {label: {k: median_ms(v) for k, v in t.items()} for label, t in times.items()}


def show(r: dict[str, dict[str, float]], think: float) -> str:
	rows: list[list[Any]] = []
	for step in ('navigate', 'click', 'get_state'):
		off, on = r['off'][step], r['trace'][step]
		rows.append([step, off, on, f'{(on - off) / off * 100:+.1f} %' if off else '-'])
	pause = f'{think * 1000:.0f} ms between calls' if think else 'calls back to back'
	return table(
		f'Flight recorder: p50 per call, recording off vs trace ({pause})', ['call', 'off ms', 'trace ms', 'overhead'], rows
	)


def main() -> None:
	parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
	parser.add_argument('--rounds', type=int, default=30, help='rounds per session (default 30)')
	parser.add_argument(
		'--think',
		type=float,
		nargs='*',
		default=[0.0, 0.3],
		help='seconds between calls, one table each (default: 0 and 0.3; an agent waits seconds for its model)',
	)
	args = parser.parse_args()
	for think in args.think:
		print(show(asyncio.run(bench(args.rounds, think)), think))


if __name__ == '__main__':
	main()
