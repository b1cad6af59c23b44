"""What recording console messages and network requests costs: ``.venv/bin/python -m benchmarks.page_recording
[--before REV] [--repeats N]``.

Two servers in turn, the same way: one from this tree (every session records its pages' console and
network), one from ``REV`` (default: the commit before recording was added), unpacked with
``git archive`` into a temporary directory and run from there. One named session each, on the test
site on 127.0.0.1: ``browser_navigate`` to a page that logs, throws and fetches (harness/pages.py
``/console``), then ``browser_get_state``, ``repeats`` times after one warm-up. Prints the p50s of
both; measurements, never pass/fail.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from mcp import Client

from benchmarks.common import REPO, _tagged_pid, median_ms, server_params, table

SID = 'bench-recording'
BEFORE = '87deaa3'  # main before browser_console_messages / browser_network_requests


async def measure(source: Path | None, site: str, repeats: int) -> tuple[float, float]:
	"""p50 ms of navigate and of get_state, for a server run from ``source`` (None: this tree)."""
	home = Path(tempfile.mkdtemp(prefix='bench-recording-'))
	tag = uuid.uuid4().hex
	extra = {} if source is None else {'PYTHONPATH': str(source)}
	params = server_params('ours', home, tag, env_extra=extra)
	if source is not None:
		params.cwd = source  # python -m puts the working directory first on sys.path
	navigate, state = [], []
	try:
		async with Client(params, mode='legacy', read_timeout_seconds=180) as client:
			assert _tagged_pid(tag), 'server process not found'
			names = {t.name for t in (await client.list_tools()).tools}
			assert ('browser_console_messages' in names) == (source is None), 'the server was not run from the tree asked'
			for i in range(repeats + 1):
				started = time.perf_counter()
				result = await client.call_tool('browser_navigate', {'session_id': SID, 'url': f'{site}/console?tag={i}'})
				navigated = time.perf_counter()
				result2 = await client.call_tool('browser_get_state', {'session_id': SID})
				done = time.perf_counter()
				if result.is_error or result2.is_error:
					raise RuntimeError(f'call failed: {(result.content or result2.content)[0].text[:300]}')
				if i:  # the first round is the warm-up (it also starts the browser)
					navigate.append(navigated - started)
					state.append(done - navigated)
	finally:
		shutil.rmtree(home, ignore_errors=True)
	return median_ms(navigate), median_ms(state)


async def compare(before: Path, label: str, repeats: int) -> None:
	from harness.pages import PageServer

	with PageServer() as pages:
		rows = []
		for name, source in ((f'before ({label})', before), ('after (recording)', None)):
			nav, state = await measure(source, pages.url, repeats)
			rows.append([name, nav, state])
	print(table(f'navigate + get_state p50 (ms), {repeats} rounds', ['server', 'navigate', 'get_state'], rows))


def main() -> None:
	parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
	parser.add_argument('--before', default=BEFORE, help='the revision to compare with (default %(default)s)')
	parser.add_argument('--repeats', type=int, default=20)
	opts = parser.parse_args()
	before = Path(tempfile.mkdtemp(prefix='bench-before-'))
	try:
		archive = subprocess.run(
			['git', '-C', str(REPO), 'archive', opts.before, 'browser_use_mcp'], capture_output=True, check=True
		)
		subprocess.run(['tar', '-x', '-C', str(before)], input=archive.stdout, check=True)
		asyncio.run(compare(before, opts.before, opts.repeats))
	finally:
		shutil.rmtree(before, ignore_errors=True)


if __name__ == '__main__':
	main()
