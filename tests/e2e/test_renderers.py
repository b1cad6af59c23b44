"""A session costs one renderer for its tab, not a renderer of browser UI besides.

Chromium 156 builds the omnibox popup as WebUI pages (chrome://omnibox-popup.top-chrome/) for every
browser window, in a renderer started with ``--top-chrome-webui``; a headless window has no
omnibox to show them in. Every session has a window of its own (a browser context's first tab opens
one; a Chromium per session opens one at start), so each session paid a second renderer (~35 MB
PSS) for nothing. The launch flags turn that WebUI off (``EXTRA_ARGS`` in browser.py). These tests
count the renderers in the server's own process tree, in both isolation modes, with whatever
Chromium the server would use (``BROWSER_USE_MCP_CHROMIUM`` is passed through: run them once with
each version you care about).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator

import psutil
import pytest

from browser_use_mcp.doctor import renderer_cmdlines, ui_switches
from browser_use_mcp.processes import chromium_kind
from harness.servers import Background, Mcp, running_server, server_env
from tests.fixtures import isolation_modes

isolation = isolation_modes('browser', 'context')

SESSIONS = 4
SPARE = 2  # renderers a browser may keep beyond one per tab (a spare renderer, a process being replaced)


def renderers(server_pid: int) -> list[list[str]]:
	"""The command lines of the renderer processes in the server's process tree."""
	try:
		return renderer_cmdlines(psutil.Process(server_pid).children(recursive=True))
	except psutil.NoSuchProcess:
		return []


@pytest.fixture(scope='module')
async def server(tmp_path_factory: pytest.TempPathFactory, isolation: str) -> AsyncIterator[Mcp]:
	home = tmp_path_factory.mktemp('renderers-home')
	chromium = os.environ.get('BROWSER_USE_MCP_CHROMIUM')
	env = server_env(home, **({'BROWSER_USE_MCP_CHROMIUM': chromium} if chromium else {}))
	async with Background(running_server(home, env=env)) as running:
		yield running


async def test_a_session_costs_one_renderer_and_no_browser_ui(server: Mcp, site: str, isolation: str) -> None:
	sessions = [f'renderers-{isolation}-{i}' for i in range(SESSIONS)]
	for sid in sessions:
		await server.ok('browser_navigate', session_id=sid, url=f'{site}/')
		await server.page_state(sid)
	await asyncio.sleep(1.5)  # browser UI is built after the window appears: give it time to show up
	found = renderers(server.pid)
	ui = [ui_switches(cmdline) for cmdline in found if ui_switches(cmdline)]
	assert not ui, f'{len(ui)} of {len(found)} renderers are browser UI, {SESSIONS} sessions ({isolation}): {ui[:2]}'
	assert len(found) <= SESSIONS + SPARE, f'{len(found)} renderers for {SESSIONS} sessions with one tab each ({isolation})'
	# A shared Chromium keeps its zygote, so its renderers are forked from it (sharing its memory,
	# ~15 MB PSS less each); a Chromium of one session starts its one renderer itself.
	parents = [_kind(proc.parent()) for proc in _renderer_processes(server.pid)]
	assert parents, 'no renderer found'
	expected = 'zygote' if isolation == 'context' else 'browser'
	assert set(parents) == {expected}, f'renderers started by {parents} ({isolation}), expected {expected}'
	# One zygote per shared Chromium, the one its renderers fork from: the unsandboxed zygote (which
	# forks only utility processes, none of which these flags start) would sit there idle, ~7-9 MB PSS.
	zygotes = [proc for proc in psutil.Process(server.pid).children(recursive=True) if _kind(proc) == 'zygote']
	browsers = {proc.ppid() for proc in zygotes}
	assert len(zygotes) == (len(browsers) if isolation == 'context' else 0), (
		f'{len(zygotes)} zygotes for {len(browsers)} Chromiums ({isolation}): {[_cmd(p) for p in zygotes]}'
	)
	for sid in sessions:
		await server.ok('browser_close_session', session_id=sid)


def _renderer_processes(server_pid: int) -> list[psutil.Process]:
	found = []
	for proc in psutil.Process(server_pid).children(recursive=True):
		try:
			if '--type=renderer' in proc.cmdline():
				found.append(proc)
		except psutil.Error:
			continue
	return found


def _cmd(proc: psutil.Process) -> str:
	try:
		return ' '.join(a for a in proc.cmdline() if a.startswith('--') and 'zygote' in a)
	except psutil.Error:
		return 'gone'


def _kind(proc: psutil.Process | None) -> str:
	try:
		return chromium_kind(proc.cmdline() if proc is not None else [])
	except psutil.Error:
		return 'gone'
