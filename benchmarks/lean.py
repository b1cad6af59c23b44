"""Memory of one session's Chromium tree by launch-flag set (section f of benchmarks.run).

Run in its own process (``python -m benchmarks.lean``, with the isolated environment run.py
gives it) because it drives the registry in process. For each flag set it opens three sessions,
loads the test site's home page in each, and reads USS/PSS of each session's process tree.
Prints one JSON object.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
from typing import Any

import psutil

SESSIONS = 3
FLAG_SETS: dict[str, tuple[str, ...]] = {
	'without in-process GPU/network (before)': ('--in-process-gpu', '--enable-features=NetworkServiceInProcess2'),
	'current EXTRA_ARGS': (),
}


async def measure(site: str, drop: tuple[str, ...]) -> dict[str, Any]:
	from browser_use_mcp import browser
	from browser_use_mcp.catalog import Catalog
	from browser_use_mcp.config import load_config
	from browser_use_mcp.sessions import SessionRegistry
	from browser_use_mcp.tools.base import Call

	original = browser.chromium_args

	def chromium_args(profile: Any, extra: tuple[str, ...] = browser.EXTRA_ARGS, **kw: Any) -> list[str]:
		return original(profile, tuple(a for a in extra if a not in drop), **kw)

	browser.chromium_args = chromium_args
	registry = SessionRegistry(load_config())
	await registry.start()
	try:
		catalog = Catalog(registry)
		for i in range(SESSIONS):
			await catalog.call('browser_navigate', {'session_id': f'lean-{i}', 'url': f'{site}/'}, Call())
			await catalog.call('browser_get_state', {'session_id': f'lean-{i}'}, Call())
		await asyncio.sleep(2)  # let start-up allocations settle
		per_session = []
		for state in registry.sessions():
			uss = pss = 0
			kinds = []
			for proc in state.browser.endpoint.chromium.tree():
				try:
					info = proc.memory_full_info()
					cmdline = proc.cmdline()
				except psutil.Error:
					continue
				uss, pss = uss + info.uss, pss + info.pss
				kind = next((a.split('=', 1)[1] for a in cmdline if a.startswith('--utility-sub-type=')), None)
				kind = kind or next((a.split('=', 1)[1] for a in cmdline if a.startswith('--type=')), 'browser')
				kinds.append(kind)
			per_session.append({'uss': uss, 'pss': pss, 'processes': kinds})
	finally:
		await registry.shutdown()
		browser.chromium_args = original
	return {
		'uss_mb': round(statistics.mean(s['uss'] for s in per_session) / 2**20, 1),
		'pss_mb': round(statistics.mean(s['pss'] for s in per_session) / 2**20, 1),
		'processes': per_session[0]['processes'],
	}


async def main() -> None:
	from harness.pages import PageServer

	out = {}
	with PageServer() as site:
		for label, drop in FLAG_SETS.items():
			out[label] = await measure(site.url, drop)
	print(json.dumps(out))


if __name__ == '__main__':
	sys.exit(asyncio.run(main()))
