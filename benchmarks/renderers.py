"""Renderers and memory per session, with and without the launch flags that turn off Chromium's
per-window browser UI (the omnibox popup WebUI Chromium 156 builds for every window), by Chromium
version and isolation mode.

    .venv/bin/python -m benchmarks.renderers                      # the Chromium the server would use
    .venv/bin/python -m benchmarks.renderers --chromium /usr/lib/chromium/chromium \\
        --chromium /opt/chromium-150/usr/lib/chromium/chromium    # several, side by side
    .venv/bin/python -m benchmarks.renderers --isolation context --sessions 32 \\
        --variant no-zygote --variant after --by-process          # the zygote's saving, by process

For every Chromium, isolation mode and flag set, a separate process (``--child``, with the
isolated environment of the other benchmarks) drives the session registry in process, as
benchmarks.lean does, so the flags can be swapped: it opens N sessions (navigate to the loopback
test site's home page, get_state), waits for start-up allocations to settle, then sums PSS over
every Chromium process of its own process tree and counts the renderers, and those started with a
browser-UI switch (``--top-chrome-webui``). "before" drops WebUIOmniboxPopup and
WebUIOmniboxAimPopup from the shipped flags; "after" is the shipped flags. Prints a markdown
table and one JSON line with every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import psutil

OMNIBOX_WEBUI = ('WebUIOmniboxPopup', 'WebUIOmniboxAimPopup')
VARIANTS = ('before', 'after', 'no-zygote')  # "before"/"after": the omnibox WebUI flags; "no-zygote": after, with --no-zygote
MODES = ('browser', 'context')
SETTLE = 3.0


def without_omnibox_webui(args: list[str]) -> list[str]:
	out = []
	for arg in args:
		if arg.startswith('--disable-features='):
			kept = [f for f in arg.split('=', 1)[1].split(',') if f not in OMNIBOX_WEBUI]
			arg = '--disable-features=' + ','.join(kept)
		out.append(arg)
	return out


async def child(sessions: int, variant: str) -> dict[str, Any]:
	from browser_use_mcp.providers import process as process_provider

	shipped = process_provider.chromium_args  # the name the launcher calls (shared Chromiums are launched by it too)
	if variant == 'before':
		process_provider.chromium_args = lambda *a, **kw: without_omnibox_webui(shipped(*a, **kw))
	elif variant == 'no-zygote':  # every renderer started from scratch, as browser-use's flags had it before 2026-11-27
		process_provider.chromium_args = lambda *a, **kw: [*shipped(*a, **kw), '--no-zygote']

	from browser_use_mcp.catalog import Catalog
	from browser_use_mcp.config import load_config
	from browser_use_mcp.doctor import renderer_cmdlines, ui_switches
	from browser_use_mcp.processes import is_sidecar
	from browser_use_mcp.sessions import SessionRegistry
	from browser_use_mcp.tools.base import Call
	from harness.pages import PageServer

	with PageServer() as site:
		registry = SessionRegistry(load_config())
		await registry.start()
		try:
			catalog = Catalog(registry)
			for i in range(sessions):
				await catalog.call('browser_navigate', {'session_id': f'r-{i}', 'url': f'{site.url}/'}, Call())
				await catalog.call('browser_get_state', {'session_id': f'r-{i}'}, Call())
			await asyncio.sleep(SETTLE)
			tree = [p for p in psutil.Process().children(recursive=True) if not is_sidecar(p)]
			pss = processes = 0
			kinds: dict[str, list[float]] = {}  # process type -> PSS of each, MB
			for proc in tree:
				try:
					if 'chrom' not in proc.name().lower():
						continue
					one = proc.memory_full_info().pss
					kind = process_kind(proc.cmdline())
				except psutil.Error:
					continue
				pss += one
				processes += 1
				kinds.setdefault(kind, []).append(one / 2**20)
			kinds['python server'] = [psutil.Process().memory_full_info().pss / 2**20]
			renderers = renderer_cmdlines(tree)
			version = await asyncio.to_thread(browser_version, registry)
		finally:
			await registry.shutdown()
	return {
		'sessions': sessions,
		'chromium': version,
		'processes': processes,
		'renderers': len(renderers),
		'ui_renderers': sum(1 for r in renderers if ui_switches(r)),
		'pss_mb': round(pss / 2**20, 1),
		'pss_per_session_mb': round(pss / 2**20 / sessions, 1),
		'by_process': {kind: {'count': len(v), 'pss_mb': round(sum(v), 1)} for kind, v in sorted(kinds.items())},
	}


def process_kind(cmdline: list[str]) -> str:
	"""Chromium's process type (processes.chromium_kind), a browser-UI renderer told apart."""
	from browser_use_mcp.processes import chromium_kind

	kind = chromium_kind(cmdline)
	return f'{kind} (UI)' if kind == 'renderer' and any('top-chrome-webui' in a for a in cmdline) else kind


def browser_version(registry: Any) -> str:
	from browser_use_mcp.browser import find_chromium
	from browser_use_mcp.doctor import chromium_version

	version = chromium_version(find_chromium(os.environ.get('BROWSER_USE_MCP_CHROMIUM')) or '') or '?'
	found = re.search(r'\d+\.\d+\.\d+\.\d+', version)
	return found.group(0) if found else version


async def run_one(chromium: str, mode: str, variant: str, sessions: int) -> dict[str, Any]:
	from benchmarks.common import REPO, base_env

	home = Path(tempfile.mkdtemp(prefix='bench-renderers-'))
	try:
		env = base_env(
			home,
			BROWSER_USE_MCP_STATE_DIR=str(home / 'state'),
			BROWSER_USE_MCP_LOG_LEVEL='error',
			BROWSER_USE_MCP_CHROMIUM=chromium,
			BROWSER_USE_MCP_ISOLATION=mode,
			BROWSER_USE_MCP_MAX_SESSIONS=str(sessions + 4),
		)
		proc = await asyncio.create_subprocess_exec(
			sys.executable,
			'-m',
			'benchmarks.renderers',
			'--child',
			variant,
			'--sessions',
			str(sessions),
			cwd=str(REPO),
			env=env,
			stdout=asyncio.subprocess.PIPE,
		)
		stdout, _ = await asyncio.wait_for(proc.communicate(), 600)
		if proc.returncode != 0:
			raise RuntimeError(f'benchmarks.renderers --child exited with {proc.returncode}')
		return json.loads(stdout.decode().strip().splitlines()[-1])
	finally:
		shutil.rmtree(home, ignore_errors=True)


def show_by_process(results: list[dict[str, Any]]) -> str:
	"""Where each run's PSS is, by process type (the Python process driving the sessions included)."""
	from benchmarks.common import table

	rows = []
	for r in results:
		for kind, figures in r['by_process'].items():
			each = figures['pss_mb'] / figures['count'] if figures['count'] else 0.0
			rows.append([r['chromium'], r['mode'], r['variant'], kind, figures['count'], figures['pss_mb'], round(each, 1)])
	n = results[0]['sessions'] if results else 0
	return table(
		f'PSS by process type, {n} sessions (home page loaded)',
		['Chromium', 'isolation', 'variant', 'process', 'count', 'PSS (MB)', 'each (MB)'],
		rows,
	)


def show(results: list[dict[str, Any]]) -> str:
	from benchmarks.common import table

	rows = []
	keyed = {(r['chromium'], r['mode'], r['variant']): r for r in results}
	for chromium, mode in dict.fromkeys((r['chromium'], r['mode']) for r in results):
		before, after = keyed.get((chromium, mode, 'before')), keyed.get((chromium, mode, 'after'))
		if before is None or after is None:
			continue
		rows.append(
			[
				chromium,
				mode,
				f'{before["renderers"]} ({before["ui_renderers"]} UI)',
				f'{after["renderers"]} ({after["ui_renderers"]} UI)',
				before['pss_per_session_mb'],
				after['pss_per_session_mb'],
				round(before['pss_per_session_mb'] - after['pss_per_session_mb'], 1),
			]
		)
	n = results[0]['sessions'] if results else 0
	return table(
		f'Renderers and Chromium PSS per session, {n} sessions (home page loaded), before/after turning off the omnibox WebUI',
		['Chromium', 'isolation', 'renderers before', 'renderers after', 'PSS/session before (MB)', 'after (MB)', 'saved (MB)'],
		rows,
	)


async def main(args: argparse.Namespace) -> int:
	from browser_use_mcp.browser import find_chromium

	if args.child:
		print(json.dumps(await child(args.sessions, args.child)))
		return 0
	chromiums = args.chromium or [find_chromium(os.environ.get('BROWSER_USE_MCP_CHROMIUM'))]
	results = []
	for chromium in chromiums:
		if not chromium:
			print('no Chromium found: pass --chromium', file=sys.stderr)
			return 1
		for mode in args.isolation or MODES:
			for variant in args.variant or VARIANTS[:2]:
				result = await run_one(chromium, mode, variant, args.sessions)
				result.update(mode=mode, variant=variant, executable=chromium)
				results.append(result)
				print(f'{result["chromium"]} {mode} {variant}: {result}', file=sys.stderr)
	if {'before', 'after'} <= {r['variant'] for r in results}:
		print(show(results))
	if args.by_process:
		print(show_by_process(results))
	print(json.dumps(results))
	return 0


def parse(argv: list[str] | None = None) -> argparse.Namespace:
	parser = argparse.ArgumentParser(
		prog='python -m benchmarks.renderers', description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
	)
	parser.add_argument('--chromium', action='append', help='a Chromium binary (repeat to compare versions)')
	parser.add_argument('--isolation', action='append', choices=MODES, help='one mode (default: both)')
	parser.add_argument('--sessions', type=int, default=8)
	parser.add_argument(
		'--variant',
		action='append',
		choices=VARIANTS,
		help='flag sets to run (default: before and after); no-zygote: the shipped flags plus --no-zygote',
	)
	parser.add_argument('--by-process', action='store_true', help='also print PSS by process type for every run')
	parser.add_argument('--child', choices=VARIANTS, help=argparse.SUPPRESS)
	return parser.parse_args(argv)


if __name__ == '__main__':
	sys.exit(asyncio.run(main(parse())))
