"""The shared Chromium killed (SIGKILL, an out-of-memory kill) while a call runs in one of its
sessions: that call gets the session's one-time "lost its browser state" error, not a raw
"ConnectionError: WebSocket connection closed … the session is still open"; the next call starts
afresh; and no zombie of the killed browser stays under the server."""

from __future__ import annotations

import asyncio
from pathlib import Path

import psutil

from harness.servers import RawServer, server_env, wait_until


def shared_chromiums(server: RawServer) -> list[psutil.Process]:
	out = []
	for proc in psutil.Process(server.proc.pid).children(recursive=True):
		try:
			cmdline = proc.cmdline()
		except psutil.Error:
			continue
		if any(a.startswith('--browser-use-mcp-owner=') for a in cmdline) and not any(a.startswith('--type=') for a in cmdline):
			out.append(proc)
	return out


def zombies(server: RawServer) -> list[psutil.Process]:
	found = []
	for proc in psutil.Process(server.proc.pid).children(recursive=True):
		try:
			if proc.status() == psutil.STATUS_ZOMBIE:
				found.append(proc)
		except psutil.Error:
			continue
	return found


async def test_a_call_in_flight_when_the_shared_chromium_is_killed_gets_the_lost_state_error(tmp_path: Path, site: str) -> None:
	server = await RawServer(tmp_path / 'home', '--isolation', 'context').start()
	try:
		async with server.client() as mcp:
			await mcp.ok('browser_navigate', session_id='k', url=f'{site}/two')
			(chromium,) = shared_chromiums(server)
			# a call waiting on the page over CDP (not on browser-use's event bus)
			call = asyncio.ensure_future(
				mcp.call('browser_evaluate', session_id='k', expression='new Promise(r => setTimeout(() => r(1), 8000))')
			)
			await asyncio.sleep(1.5)
			chromium.kill()
			result = await asyncio.wait_for(call, 60)
			assert result.is_error, result.text
			assert 'lost its browser state' in result.text and 'browser died' in result.text, result.text
			assert 'still open' not in result.text
			# one time only: the next call gets a fresh session
			await mcp.ok('browser_navigate', session_id='k', url=f'{site}/two')
			assert await asyncio.to_thread(wait_until, lambda: not zombies(server), 10), (
				f'zombies under the server: {[(p.pid, p.name()) for p in zombies(server)]}'
			)
	finally:
		server.close_stdin()
		await server.wait(20)
		await server.stop()


SUBREAPER = """import ctypes, os
if os.environ.get('TEST_SUBREAPER') == '1':  # as PID 1 of a container: orphans come to us
	ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
"""


async def test_helpers_of_a_killed_browser_leave_no_zombie_under_a_server_that_adopts_orphans(tmp_path: Path, site: str) -> None:
	home = tmp_path / 'home'
	hook = tmp_path / 'hook'
	hook.mkdir()
	(hook / 'sitecustomize.py').write_text(SUBREAPER)
	env = server_env(home, TEST_SUBREAPER='1')
	env['PYTHONPATH'] = f'{hook}:{env["PYTHONPATH"]}'
	server = await RawServer(home, '--isolation', 'browser', env=env).start()
	try:
		async with server.client() as mcp:
			await mcp.ok('browser_navigate', session_id='z', url=f'{site}/two')
			(chromium,) = shared_chromiums(server)
			helpers = chromium.children()
			assert helpers
			chromium.kill()
			# its helpers exit, re-parented to the server; then nobody else is there to reap them
			assert await asyncio.to_thread(
				wait_until, lambda: not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in helpers), 15
			)
			assert await asyncio.to_thread(wait_until, lambda: not zombies(server), 10), (
				f'zombies under the server: {[p.pid for p in zombies(server)]}'
			)
			result = await mcp.call('browser_get_state', session_id='z')
			assert 'lost its browser state' in result.text, result.text
	finally:
		server.close_stdin()
		await server.wait(20)
		await server.stop()
