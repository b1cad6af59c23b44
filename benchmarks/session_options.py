"""What session options cost: ``.venv/bin/python -m benchmarks.session_options [--repeats N]``.

For each isolation mode, one server (real MCP client over stdio, headless Chromium, pages on
127.0.0.1): sessions created without options and with every per-tab option (viewport, scale,
user agent, locale, timezone, geolocation, extra headers), alternately; the create latency, the
first navigation, and warm navigate / get_state latencies in each. Prints a markdown table;
measurements, never pass/fail.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

from benchmarks.common import Server, median_ms, server, table

OPTIONS: dict[str, Any] = {
	'viewport': {'width': 390, 'height': 844},
	'device_scale_factor': 3,
	'user_agent': 'Bench/1.0',
	'locale': 'de-DE',
	'timezone': 'Europe/Berlin',
	'geolocation': {'latitude': 52.52, 'longitude': 13.405},
	'extra_http_headers': {'X-Bench': '1'},
}


async def one_session(srv: Server, site: str, options: dict[str, Any], warm: int) -> dict[str, list[float]]:
	started = time.perf_counter()
	text, _ = await srv.ok('browser_create_session', **options)
	created = time.perf_counter() - started
	sid = json.loads(text)['session_id']
	_, first = await srv.ok('browser_navigate', session_id=sid, url=f'{site}/')
	navigate, state = [], []
	for i in range(warm):
		_, elapsed = await srv.ok('browser_navigate', session_id=sid, url=f'{site}/{"two" if i % 2 else ""}')
		navigate.append(elapsed)
		_, elapsed = await srv.ok('browser_get_state', session_id=sid)
		state.append(elapsed)
	await srv.ok('browser_close_session', session_id=sid)
	return {'create': [created], 'first': [first], 'navigate': navigate, 'state': state}


async def bench(repeats: int, warm: int) -> dict[str, Any]:
	from harness.pages import PageServer

	out: dict[str, Any] = {}
	with PageServer() as pages:
		for mode in ('browser', 'context'):
			async with server('ours', '--isolation', mode) as srv:
				await one_session(srv, pages.url, {}, 1)  # the first session pays for loading browser-use
				runs: dict[str, dict[str, list[float]]] = {'none': {}, 'all': {}}
				for _ in range(repeats):
					for label, options in (('none', {}), ('all', OPTIONS)):
						await asyncio.sleep(0.5)  # let the previous session's teardown finish
						for key, values in (await one_session(srv, pages.url, options, warm)).items():
							runs[label].setdefault(key, []).extend(values)
				out[mode] = {label: {k: median_ms(v) for k, v in r.items()} for label, r in runs.items()}
	return out


def show(r: dict[str, Any]) -> str:
	rows = []
	for mode, runs in r.items():
		for label, p50 in runs.items():
			rows.append([mode, label, p50['create'], p50['first'], p50['navigate'], p50['state']])
	header = ['isolation', 'options', 'create p50 ms', 'first navigate p50 ms', 'navigate p50 ms', 'get_state p50 ms']
	return table('Session options: cost per session and per call', header, rows)


def main() -> None:
	parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
	parser.add_argument('--repeats', type=int, default=5, help='sessions per mode and kind (default 5)')
	parser.add_argument('--warm', type=int, default=6, help='warm navigate + get_state pairs per session (default 6)')
	args = parser.parse_args()
	print(show(asyncio.run(bench(args.repeats, args.warm))))


if __name__ == '__main__':
	main()
