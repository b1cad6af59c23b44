"""What the interaction tools cost beside a click: ``.venv/bin/python -m benchmarks.actions [--repeats N]``.

For each isolation mode, one server started with ``--tools all`` (real MCP client over stdio,
headless Chromium, the test pages of tests/test_actions.py on 127.0.0.1), one named session; each
tool is called ``repeats`` times on a page loaded once, after one warm-up call. Prints a markdown
table of p50 latencies; measurements, never pass/fail.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import time
from collections.abc import Callable
from typing import Any

from benchmarks.common import Server, median_ms, server, table

SID = 'bench-actions'
PAYLOAD = base64.b64encode(b'x' * 10_000).decode()  # a 10 kB file


def index_of(state: dict[str, Any], text: str = '', tag: str | None = None, nth: int = 0) -> int:
	found = [e['index'] for e in state['interactive_elements'] if text in e['text'] and (tag is None or e['tag'] == tag)]
	return found[nth]


async def open_page(srv: Server, url: str) -> dict[str, Any]:
	await srv.ok('browser_navigate', session_id=SID, url=url)
	return json.loads((await srv.ok('browser_get_state', session_id=SID))[0])


async def call(srv: Server, tool: str, arguments: dict[str, Any]) -> float:
	"""One call's latency (s); the client directly, as browser_upload_file has an argument called name."""
	started = time.perf_counter()
	result = await srv.client.call_tool(tool, {'session_id': SID, **arguments}, read_timeout_seconds=60)
	elapsed = time.perf_counter() - started
	if result.is_error:
		raise RuntimeError(f'{tool}({arguments}) failed: {result.content[0].text[:300]}')
	return elapsed


async def timed(srv: Server, repeats: int, tool: str, arguments: Callable[[int], dict[str, Any]]) -> float:
	await call(srv, tool, arguments(-1))  # warm-up
	return median_ms([await call(srv, tool, arguments(i)) for i in range(repeats)])


async def bench(repeats: int) -> dict[str, dict[str, float]]:
	from harness.pages import ACTION_PAGES
	from harness.servers import html_pages

	out: dict[str, dict[str, float]] = {}
	with html_pages(ACTION_PAGES) as site:
		for mode in ('browser', 'context'):
			async with server('ours', '--isolation', mode, '--tools', 'all') as srv:
				p50: dict[str, float] = {}
				runs: list[tuple[str, str, str, Callable[[dict[str, Any]], Callable[[int], dict[str, Any]]]]] = [
					('browser_click', '/select', 'browser_click', lambda s: lambda i: {'index': index_of(s, 'Plain button')}),
					(
						'browser_get_options',
						'/select',
						'browser_get_options',
						lambda s: lambda i: {'index': index_of(s, tag='select')},
					),
					(
						'browser_select_option',
						'/select',
						'browser_select_option',
						lambda s: lambda i: {'index': index_of(s, tag='select'), 'values': ['r' if i % 2 else 'g']},
					),
					(
						'browser_hover',
						'/hover',
						'browser_hover',
						lambda s: lambda i: {'index': index_of(s, 'Menu' if i % 2 else 'Hover target')},
					),
					(
						'browser_drag (mouse)',
						'/drag',
						'browser_drag',
						lambda s: (
							lambda i: {
								'from_index': index_of(s, 'Alpha', 'li'),
								'to_index': index_of(s, 'Beta' if i % 2 else 'Gamma', 'li'),
							}
						),
					),
					(
						'browser_drag (HTML5)',
						'/drag',
						'browser_drag',
						lambda s: lambda i: {'from_index': index_of(s, 'Drag source'), 'to_index': index_of(s, 'Drop zone')},
					),
					(
						'browser_wait_for (already true)',
						'/select',
						'browser_wait_for',
						lambda s: lambda i: {'text': 'Plain button'},
					),
					(
						'browser_scroll (index)',
						'/scroll',
						'browser_scroll',
						lambda s: lambda i: {'index': index_of(s, 'Row 1'), 'amount': 30, 'direction': 'up' if i % 2 else 'down'},
					),
					(
						'browser_type (date)',
						'/dates',
						'browser_type',
						lambda s: lambda i: {'index': index_of(s, tag='input'), 'text': f'2011-01-{1 + (i + 1) % 28:02d}'},
					),
					(
						'browser_upload_file (inline)',
						'/upload',
						'browser_upload_file',
						lambda s: lambda i: {'index': index_of(s, tag='input'), 'content_base64': PAYLOAD, 'name': 'bench.txt'},
					),
					(
						'browser_save_pdf',
						'/select',
						'browser_save_pdf',
						lambda s: lambda i: {'path': 'bench.pdf'},
					),
				]
				await open_page(srv, f'{site}/select')  # the session's browser starts here
				for label, path, name, make in runs:
					state = await open_page(srv, f'{site}{path}')
					p50[label] = await timed(srv, repeats, name, make(state))
				out[mode] = p50
	return out


def show(results: dict[str, dict[str, float]]) -> str:
	labels = list(next(iter(results.values())))
	rows = [[label, *(results[mode][label] for mode in results)] for label in labels]
	return table('Interaction tools: p50 latency per call (ms)', ['tool', *(f'{m} p50 ms' for m in results)], rows)


def main() -> None:
	parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
	parser.add_argument('--repeats', type=int, default=15, help='calls per tool and mode (default 15)')
	args = parser.parse_args()
	print(show(asyncio.run(bench(args.repeats))))


if __name__ == '__main__':
	main()
