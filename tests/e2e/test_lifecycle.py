"""Lifecycle and faults: shutdown paths, orphans, the start-up sweep, expiry, crashes, limits.

Each test owns its server (a ``RawServer`` the test can signal, starve of stdin or kill)
and counts real Chromium processes by PID.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psutil
import pytest

from browser_use_mcp.browser import OWNER_ENV, OWNER_SWITCH, Owner, find_chromium, session_digest
from browser_use_mcp.processes import is_sidecar
from harness.servers import (
	BLACKHOLE_PROXY,
	RawServer,
	alive,
	chromium_pids,
	owned_processes,
	running_server,
	server_env,
	wait_until,
)
from tests.fixtures import isolation_modes

# every test here runs with a Chromium per session and with contexts of shared Chromiums
isolation = isolation_modes()
pytestmark = pytest.mark.usefixtures('isolation')


@pytest.fixture
def scratch() -> Iterator[Path]:
	"""A TMPDIR for a server, short: Chromium puts its singleton socket under TMPDIR (a Unix socket
	name has 107 bytes), in a directory it removes only on a clean exit."""
	path = Path(tempfile.mkdtemp(prefix='bum-tmp-', dir='/tmp'))
	try:
		yield path
	finally:
		shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
async def raw(tmp_path: Path) -> AsyncIterator[list[RawServer]]:
	"""Servers started by a test; whatever happens, they and their browsers are gone after."""
	servers: list[RawServer] = []
	yield servers
	for server in servers:
		await server.stop()


async def start(raw: list[RawServer], home: Path, *args: str, env: dict[str, str] | None = None) -> RawServer:
	server = await RawServer(home, *args, env=env).start()
	raw.append(server)
	return server


def srv_dirs(home: Path) -> list[Path]:
	return list((home / 'state').glob('srv-*'))


def gone(pids: set[int]) -> bool:
	return not any(alive(p) for p in pids)


async def open_sessions(server: RawServer, site: str, ids: list[str]) -> set[int]:
	async with server.client() as mcp:
		for sid in ids:
			await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/two')
		pids = owned_processes(server.pid)
	assert len(chromium_pids(pids)) >= len(ids)
	return pids


# -- the four ways a server ends --------------------------------------------------------------


@pytest.mark.parametrize('sig', [signal.SIGTERM, signal.SIGINT])
async def test_signal_closes_every_session_and_exits_promptly(raw, tmp_path: Path, site: str, sig: signal.Signals) -> None:
	server = await start(raw, tmp_path / 'home')
	pids = await open_sessions(server, site, ['a', 'b', 'c'])
	started = time.monotonic()
	os.kill(server.pid, sig)
	code = await server.wait(15)
	seconds = time.monotonic() - started
	print(f'{sig.name}: exited in {seconds:.2f} s with {len(pids)} browser processes')
	assert code is not None, 'server did not exit'
	assert await asyncio.to_thread(wait_until, lambda: gone(pids), 5)
	assert srv_dirs(server.home) == [], 'temporary profiles removed'


# The full Chromium makes a singleton socket directory in TMPDIR (the headless shell makes none): these
# tests check that it goes with its browser, so they launch the full one.
FULL_CHROMIUM = {'BROWSER_USE_MCP_HEADLESS_SHELL': 'false'}


async def test_stdin_eof_closes_every_session_and_exits(raw, tmp_path: Path, site: str, scratch: Path) -> None:
	server = await start(raw, tmp_path / 'home', env=server_env(tmp_path / 'home', TMPDIR=str(scratch), **FULL_CHROMIUM))
	pids = await open_sessions(server, site, ['a', 'b'])
	assert list(scratch.glob('org.chromium.*')), "the browsers' singleton directories are in TMPDIR while they run"
	started = time.monotonic()
	server.close_stdin()
	code = await server.wait(15)
	print(f'stdin EOF: exited in {time.monotonic() - started:.2f} s')
	assert code == 0
	assert await asyncio.to_thread(wait_until, lambda: gone(pids), 5)
	assert srv_dirs(server.home) == []
	# browser-use makes a downloads dir in TMPDIR as it is imported; the server removes it
	assert list(scratch.glob('browser-use-downloads-*')) == []
	# and each Chromium its singleton's socket directory, which a killed one leaves behind
	assert list(scratch.glob('org.chromium.*')) == []


async def test_client_disconnect_mid_call_leaves_no_state_dir(tmp_path: Path, site: str) -> None:
	"""The SDK's stdio client closes stdin, and SIGTERMs then SIGKILLs the server's process group if
	it has not exited 2 s later: shutdown must not wait for a call still loading a slow page."""
	home = tmp_path / 'home'
	async with running_server(home) as mcp:
		await mcp.ok('browser_navigate', session_id='a', url=f'{site}/two')
		pids = mcp.browsers()
		pending = asyncio.create_task(mcp.call('browser_navigate', session_id='a', url=f'{site}/slow?s=30'))
		await asyncio.sleep(0.5)
		assert not pending.done()
		started = time.monotonic()
	with contextlib.suppress(BaseException):
		await pending
	print(f'disconnect mid-call: server gone {time.monotonic() - started:.2f} s after the client left')
	assert await asyncio.to_thread(wait_until, lambda: gone(pids), 5)
	assert srv_dirs(home) == [], 'the temporary state dir is removed on this exit path too'


async def test_sigkill_of_the_server_takes_its_browsers_down(raw, tmp_path: Path, site: str, scratch: Path) -> None:
	server = await start(raw, tmp_path / 'home', env=server_env(tmp_path / 'home', TMPDIR=str(scratch), **FULL_CHROMIUM))
	await open_sessions(server, site, ['a', 'b', 'c'])
	async with server.client() as mcp:  # and the default session, whose profile lies outside the state dir
		await mcp.ok('browser_navigate', url=f'{site}/two')
	pids = owned_processes(server.pid)
	assert len(list(scratch.glob('org.chromium.*'))) >= 2
	os.kill(server.pid, signal.SIGKILL)
	await server.wait(5)
	started = time.monotonic()
	assert await asyncio.to_thread(wait_until, lambda: gone(pids), 5), [p for p in pids if psutil.pid_exists(p)]
	print(f'SIGKILL: {len(pids)} browser processes gone {time.monotonic() - started:.2f} s after the server died')
	# what an MCP client that kills its server does (fastmcp's stdio client at exit): the sidecar cleans up
	assert await asyncio.to_thread(wait_until, lambda: srv_dirs(server.home) == [], 5), 'state dir of a killed server'
	assert list(scratch.glob('org.chromium.*')) == [], "the killed browsers' singleton directories"


async def test_startup_sweep_removes_only_leftovers_of_dead_servers(raw, tmp_path: Path, site: str, scratch: Path) -> None:
	home = tmp_path / 'home'
	state = home / 'state'
	state.mkdir(parents=True)
	dead = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(0.3)'])
	dead_owner = Owner(dead.pid, round(psutil.Process(dead.pid).create_time(), 2))
	dead.wait()

	def chromium(owner: Owner | None, profile: Path) -> subprocess.Popen:
		env = dict(os.environ, TMPDIR=str(scratch))
		argv = [find_chromium(), '--headless=new', '--no-sandbox', BLACKHOLE_PROXY, f'--user-data-dir={profile}', 'about:blank']
		if owner is not None:
			env[OWNER_ENV] = owner.token
			argv.insert(1, f'{OWNER_SWITCH}={owner.token}')
		return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

	stale_dir = state / f'srv-{dead_owner.pid}-leftover'
	stale_profile = stale_dir / 's-0123456789abcdef-x' / 'profile'  # where a server keeps a session's profile
	stale_profile.mkdir(parents=True)
	(stale_dir / 'owner.json').write_text(json.dumps({'pid': dead_owner.pid, 'started': dead_owner.started}))
	live_dir = state / 'srv-live-other'
	live_dir.mkdir()
	(live_dir / 'owner.json').write_text(json.dumps({'pid': os.getpid(), 'started': Owner.current().started}))

	orphan = chromium(dead_owner, stale_profile)
	live_servers = chromium(Owner.current(), tmp_path / 'live-profile')
	strangers = chromium(None, tmp_path / 'stranger-profile')
	try:
		# three Chromiums start at once here; under the whole suite's load a first child took over 10 s once
		assert await asyncio.to_thread(wait_until, lambda: len(psutil.Process(orphan.pid).children()) > 0, 30)
		orphan_tree = {orphan.pid, *(c.pid for c in psutil.Process(orphan.pid).children(recursive=True))}
		assert await asyncio.to_thread(wait_until, lambda: (stale_profile / 'SingletonSocket').is_symlink(), 30)
		orphan_socket_dir = Path(os.readlink(stale_profile / 'SingletonSocket')).parent
		assert orphan_socket_dir.parent == scratch
		server = await start(raw, home)
		async with server.client() as mcp:
			await mcp.ok('browser_list_sessions')
		# the sweep runs in the background, before the first browser starts (not before the handshake)
		assert await asyncio.to_thread(wait_until, lambda: gone(orphan_tree), 5), 'orphaned browser swept'
		assert await asyncio.to_thread(wait_until, lambda: not stale_dir.exists(), 5), 'dead server state dir swept'
		assert not orphan_socket_dir.exists(), "the orphan's singleton directory in its TMPDIR went with it"
		assert len(list(scratch.glob('org.chromium.*'))) == 2, "the live browsers' singleton directories are left alone"
		assert live_dir.exists(), 'a live server dir is left alone'
		assert live_servers.poll() is None, "a live server's browser is left alone"
		assert strangers.poll() is None, 'an unmarked browser is left alone'
		# the sweep's report is logged after its thread returns: it may follow the removal by a moment
		assert await asyncio.to_thread(wait_until, lambda: b'start-up sweep' in server.stderr, 5), server.stderr
	finally:
		for proc in (orphan, live_servers, strangers):
			with contextlib.suppress(ProcessLookupError):
				os.killpg(proc.pid, signal.SIGKILL)
			proc.wait(5)


# -- expiry and lost state ----------------------------------------------------------------------


async def test_idle_session_expires_and_the_next_call_is_told_once(raw, tmp_path: Path, site: str, isolation: str) -> None:
	server = await start(raw, tmp_path / 'home', '--idle-timeout', '2')
	async with server.client() as mcp:
		await mcp.ok('browser_navigate', session_id='idle', url=f'{site}/login?user=ann')
		idle_pids = owned_processes(server.pid)
		idle_dirs = list((server.home / 'state').glob(f'srv-*/s-{session_digest("local", "idle")}-*'))
		assert len(idle_dirs) == 1
		await mcp.ok('browser_navigate', session_id='busy', url=f'{site}/two')
		deadline = time.monotonic() + 2
		for _ in range(8):  # keep 'busy' active while 'idle' idles out
			await asyncio.sleep(0.5)
			await mcp.ok('browser_get_state', session_id='busy')
		listed = [s['session_id'] for s in (await mcp.ok('browser_list_sessions')).json()]
		assert listed == ['busy']
		assert not any(d.exists() for d in idle_dirs), "the expired session's directories are removed"
		if isolation == 'browser':  # with contexts, 'busy' shares the expired session's Chromium
			assert gone(idle_pids), "the expired session's browser processes are released"
		print(f'idle session reaped; checked {time.monotonic() - deadline:.2f} s after its deadline')
		lost = await mcp.call('browser_get_state', session_id='idle')
		assert lost.is_error
		for words in ('idle timeout', 'cookies', 'gone', 'same session_id'):
			assert words in lost.text, lost.text
		fresh = await mcp.ok('browser_navigate', session_id='idle', url=f'{site}/whoami')
		assert fresh.text.startswith('Navigated to')
		assert (await mcp.ok('browser_get_state', session_id='idle')).json()['title'] == 'Who: nobody'
		assert len(chromium_pids(owned_processes(server.pid))) >= 2


async def test_the_default_session_restarts_after_its_idle_timeout_with_a_note(raw, tmp_path: Path, site: str) -> None:
	"""Clients written for upstream never pass a session_id: "call again with the same session_id"
	means nothing to them. Their next call succeeds on a fresh browser and says so in one line."""
	server = await start(raw, tmp_path / 'home', '--idle-timeout', '2')
	async with server.client() as mcp:
		await mcp.ok('browser_navigate', url=f'{site}/two')
		before = owned_processes(server.pid)
		assert await asyncio.to_thread(wait_until, lambda: gone(before), 8), 'the idle default session was reaped'
		assert (await mcp.ok('browser_list_sessions')).text == 'No active browser sessions'
		again = await mcp.ok('browser_get_state')
		assert again.json()['url'] == 'about:blank'
		notes = again.texts[1:]
		assert len(notes) == 1 and 'restarted' in notes[0] and 'idle timeout' in notes[0], again.texts
		assert '\n' not in notes[0]
		assert (await mcp.ok('browser_get_state')).texts[1:] == [], 'the note is given once'
		named = await mcp.ok('browser_navigate', session_id='named', url=f'{site}/two')
		assert named.texts[1:] == []


async def test_max_session_duration_closes_even_an_active_session(raw, tmp_path: Path, site: str) -> None:
	server = await start(raw, tmp_path / 'home', '--max-session-duration', '3', '--idle-timeout', '0')
	async with server.client() as mcp:
		await mcp.ok('browser_navigate', session_id='short', url=f'{site}/two')
		info = (await mcp.ok('browser_list_sessions')).json()[0]
		assert 0 < info['expires_in_seconds'] <= 3
		error = None
		for _ in range(40):
			r = await mcp.call('browser_get_state', session_id='short')
			if r.is_error:
				error = r.text
				break
			await asyncio.sleep(0.2)
		assert error is not None and 'maximum session duration of 3 s' in error


async def test_a_crashed_browser_stays_inside_its_session(raw, tmp_path: Path, site: str, isolation: str) -> None:
	if isolation == 'context':
		pytest.skip("a shared Chromium's crash takes its whole shard: tests/e2e/test_contexts.py tests that containment")
	server = await start(raw, tmp_path / 'home')
	async with server.client() as mcp:
		await mcp.ok('browser_navigate', session_id='victim', url=f'{site}/two')
		before = owned_processes(server.pid)
		await mcp.ok('browser_navigate', session_id='bystander', url=f'{site}/login?user=bea')
		bystander_pids = owned_processes(server.pid) - before
		victim_main = next(p for p in chromium_pids(before) if any(OWNER_SWITCH in a for a in psutil.Process(p).cmdline()))
		# its browser process, not every child it had then: a helper may come and go on its own
		bystander_main = psutil.Process(
			next(p for p in chromium_pids(bystander_pids) if any(OWNER_SWITCH in a for a in psutil.Process(p).cmdline()))
		)
		victim_tree = {victim_main, *(c.pid for c in psutil.Process(victim_main).children(recursive=True))}
		victim_dirs = list((server.home / 'state').glob('srv-*/s-*'))
		os.kill(victim_main, signal.SIGKILL)
		assert await asyncio.to_thread(wait_until, lambda: gone(victim_tree), 5)
		r = await mcp.call('browser_get_state', session_id='victim')
		assert r.is_error and 'browser died' in r.text and 'signal 9' in r.text, r.text
		assert await asyncio.to_thread(wait_until, lambda: len(list((server.home / 'state').glob('srv-*/s-*'))) == 1, 5)
		assert len(victim_dirs) == 2
		assert bystander_main.is_running() and bystander_main.pid in owned_processes(server.pid), (
			'the other session kept its browser'
		)
		await mcp.ok('browser_navigate', session_id='bystander', url=f'{site}/whoami')
		assert (await mcp.ok('browser_get_state', session_id='bystander')).json()['title'] == 'Who: bea'
		again = await mcp.ok('browser_navigate', session_id='victim', url=f'{site}/two')
		assert again.text == f'Navigated to: {site}/two'


async def test_session_limit_refuses_creation_and_leaves_others_untouched(raw, tmp_path: Path, site: str) -> None:
	server = await start(raw, tmp_path / 'home', '--max-sessions', '2')
	async with server.client() as mcp:
		await mcp.ok('browser_navigate', session_id='one', url=f'{site}/two')
		await mcp.ok('browser_navigate', session_id='two', url=f'{site}/two')
		r = await mcp.call('browser_navigate', session_id='three', url=f'{site}/two')
		assert r.is_error and '--max-sessions 2' in r.text and 'browser_close_session' in r.text
		assert [s['session_id'] for s in (await mcp.ok('browser_list_sessions')).json()] == ['one', 'two']
		await mcp.ok('browser_close_session', session_id='one')
		await mcp.ok('browser_navigate', session_id='three', url=f'{site}/two')


async def test_browser_that_fails_to_start_reports_why_and_is_not_cached(raw, tmp_path: Path, site: str) -> None:
	flag = tmp_path / 'works'
	script = tmp_path / 'flaky-chromium'
	script.write_text(
		f'#!/bin/sh\nif [ ! -e {flag} ]; then echo "FATAL: flaky test browser refuses to start" >&2; exit 3; fi\n'
		f'exec {find_chromium()} "$@"\n'
	)
	script.chmod(0o755)
	home = tmp_path / 'home'
	server = await start(raw, home, env=server_env(home, BROWSER_USE_MCP_CHROMIUM=str(script)))
	async with server.client() as mcp:
		r = await mcp.call('browser_navigate', session_id='s', url=f'{site}/two')
		assert r.is_error and 'flaky test browser refuses to start' in r.text and 'exit status 3' in r.text, r.text
		assert (await mcp.ok('browser_list_sessions')).text == 'No active browser sessions'
		assert list((home / 'state').glob('srv-*/s-*')) == [], 'no directory kept for a failed start'
		flag.touch()
		await mcp.ok('browser_navigate', session_id='s', url=f'{site}/two')


async def test_close_all_racing_in_flight_calls_neither_deadlocks_nor_leaks(raw, tmp_path: Path, site: str) -> None:
	server = await start(raw, tmp_path / 'home')
	async with server.client() as mcp:
		ids = [f'r{i}' for i in range(5)]
		await asyncio.gather(*(mcp.ok('browser_navigate', session_id=sid, url=f'{site}/two') for sid in ids))
		pids = owned_processes(server.pid)
		slow = [asyncio.create_task(mcp.call('browser_navigate', session_id=sid, url=f'{site}/slow?s=4')) for sid in ids[:3]] + [
			asyncio.create_task(mcp.call('browser_evaluate', session_id=sid, expression='new Promise(r => setTimeout(r, 4000))'))
			for sid in ids[3:]
		]
		await asyncio.sleep(0.4)
		started = time.monotonic()
		closed = await asyncio.wait_for(mcp.ok('browser_close_all'), 15)
		print(f'close_all with 5 calls in flight: {time.monotonic() - started:.2f} s')
		assert closed.structured == {'closed': 5}
		results = await asyncio.wait_for(asyncio.gather(*slow), 15)
		assert all(r.is_error and 'closed' in r.text for r in results), [r.text for r in results]
		assert await asyncio.to_thread(wait_until, lambda: gone(pids), 5)
		await mcp.ok('browser_navigate', session_id='r0', url=f'{site}/two')


async def test_sidecar_takes_browsers_down_where_there_is_no_parent_death_signal(raw, tmp_path: Path, site: str) -> None:
	"""The path for systems without PR_SET_PDEATHSIG (macOS, BSD), exercised here by switching it off."""
	home = tmp_path / 'home'
	env = server_env(home, BROWSER_USE_MCP_PARENT_DEATH_SIGNAL='false', BROWSER_USE_MCP_WATCHDOG='on')
	server = await start(raw, home, env=env)
	pids = await open_sessions(server, site, ['a', 'b'])
	sidecars = [p for p in psutil.Process(server.pid).children() if is_sidecar(p)]
	assert len(sidecars) == 1
	os.kill(server.pid, signal.SIGKILL)
	await server.wait(5)
	assert await asyncio.to_thread(wait_until, lambda: gone(pids), 5), 'the sidecar killed the orphaned browsers'
	assert await asyncio.to_thread(
		wait_until, lambda: not sidecars[0].is_running() or sidecars[0].status() == psutil.STATUS_ZOMBIE, 5
	)


async def test_without_either_guard_the_devtools_pipe_still_ends_the_browsers(raw, tmp_path: Path, site: str) -> None:
	"""Chromium exits when its DevTools pipe closes, and only the server holds the pipe's other end:
	a third guard, which no setting turns off. (Before the pipe this test was the control showing
	that the two guards above are what kills the browsers; they remain for a browser that stops
	reading its pipe, and the orphan sweep for what survives anyway, tested with a marked orphan
	above.) The state dir has no such guard: the next start-up sweeps it."""
	home = tmp_path / 'home'
	env = server_env(home, BROWSER_USE_MCP_PARENT_DEATH_SIGNAL='false', BROWSER_USE_MCP_WATCHDOG='off')
	server = await start(raw, home, env=env)
	pids = await open_sessions(server, site, ['a'])
	os.kill(server.pid, signal.SIGKILL)
	await server.wait(5)
	assert await asyncio.to_thread(wait_until, lambda: gone(pids), 10), 'the pipe closing ended the browsers'
	left = srv_dirs(home)
	assert left, 'the state dir outlived the server'
	follower = await start(raw, home)
	async with follower.client() as mcp:
		await mcp.ok('browser_list_sessions')
	assert await asyncio.to_thread(wait_until, lambda: not any(d.exists() for d in left), 5), 'the next start-up swept it'


async def test_a_profile_reopened_after_a_killed_browser_loses_that_browsers_singleton_dir(
	tmp_path: Path, scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
	"""A durable or persistent profile whose browser was killed with its server keeps links to that
	browser's singleton directory in /tmp: the next Chromium on it removes that directory."""
	import socket

	from browser_use_mcp.browser import ChromiumProcess

	monkeypatch.setenv('TMPDIR', str(scratch))
	profile = tmp_path / 'profile'
	profile.mkdir()
	dead = subprocess.Popen([sys.executable, '-c', 'pass'])
	dead.wait()
	stale = scratch / 'org.chromium.Chromium.KILLED'
	stale.mkdir()
	(stale / 'SingletonSocket').write_bytes(b'')
	(stale / 'SingletonCookie').symlink_to('1234')
	(profile / 'SingletonLock').symlink_to(f'{socket.gethostname()}-{dead.pid}')
	(profile / 'SingletonSocket').symlink_to(stale / 'SingletonSocket')
	(profile / 'SingletonCookie').symlink_to('1234')
	args = ['--headless=new', '--no-sandbox', f'--user-data-dir={profile}', BLACKHOLE_PROXY]
	chromium = await ChromiumProcess.launch(find_chromium() or '', args, profile, Owner.current())
	try:
		assert not stale.exists()
		assert await asyncio.to_thread(wait_until, lambda: (profile / 'SingletonSocket').is_symlink(), 10)
		now = Path(os.readlink(profile / 'SingletonSocket')).parent
		assert now.parent == scratch and now.is_dir()
	finally:
		await chromium.kill()
	assert not now.exists(), "and this one's, once it is gone"
