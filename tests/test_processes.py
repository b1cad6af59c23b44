"""The process helpers the server, the demo and the tests share (browser_use_mcp/processes.py),
on plain processes: no browser, no server."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from browser_use_mcp import processes, sidecar
from browser_use_mcp.processes import OWNER_ENV, find_spawned_server, is_sidecar, owned_processes, stop_server
from harness.servers import autogroup, wait_until


def _unused_pid() -> int:
	pid = 4_000_000
	while psutil.pid_exists(pid):
		pid -= 1
	return pid


@pytest.fixture
def spawned() -> Iterator[list[subprocess.Popen[bytes]]]:
	procs: list[subprocess.Popen[bytes]] = []
	yield procs
	for proc in procs:
		proc.kill()
		proc.wait()


@pytest.mark.parametrize('shell', [sidecar.SHELL, None], ids=['waits in a shell', 'python only'])
def test_the_sidecar_is_told_apart_from_a_browser(shell: str | None) -> None:
	assert processes.SIDECAR_MODULE == sidecar.__name__
	helper = sidecar.Sidecar(shell=shell)
	try:
		# told apart by its command line, which /proc can show empty for a moment right after exec
		assert wait_until(lambda: is_sidecar(psutil.Process(helper.proc.pid)), timeout=5)
		assert not is_sidecar(psutil.Process())
	finally:
		helper.close()
	assert helper.proc.returncode == 0, 'it exits at end-of-file'
	assert helper.journal is None or not os.path.exists(helper.journal), 'its journal is removed'


@pytest.mark.skipif(not os.access(sidecar.SHELL, os.X_OK), reason='no /bin/sh here: the Python sidecar listens itself')
def test_the_sidecar_waits_in_a_shell_and_its_journal_stays_small(tmp_path: Path, spawned: list[subprocess.Popen[bytes]]) -> None:
	"""While the server lives, the sidecar is a shell (~0.3 MB PSS, not an idle Python's ~8 MB)
	appending what it is told to a journal that is emptied and written anew now and then; at the end
	Python reads it and cleans up what is still live, nothing that was untracked."""
	state = tmp_path / 'state'
	state.mkdir()
	(state / 'left-behind').write_text('x')
	live = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], start_new_session=True)
	ended = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], start_new_session=True)
	spawned += [live, ended]
	helper = sidecar.Sidecar(state)
	try:
		helper.track(live.pid)
		helper.track(ended.pid)
		helper.track_profile(state / 'profile')
		for n in range(3 * sidecar.COMPACT_AFTER):  # browsers that came and went
			helper.track(10_000_000 + n)
			helper.untrack(10_000_000 + n)
		helper.untrack(ended.pid)
		assert helper.journal is not None
		journal = Path(helper.journal)
		assert wait_until(lambda: journal.read_bytes().endswith(f'-{ended.pid}\n'.encode()), timeout=10)
		assert journal.stat().st_size < 32 * 1024, f'a journal of {journal.stat().st_size} bytes for 3 live entries'
		assert f'+{live.pid}\n'.encode() in journal.read_bytes(), 'what is live is written again after each emptying'
		proc = psutil.Process(helper.proc.pid)
		assert proc.name() in ('sh', 'dash', 'bash', 'busybox'), proc.name()
		pss = proc.memory_full_info().pss
		assert pss < 2 * 2**20, f'the waiting sidecar takes {pss / 2**20:.1f} MB PSS'
	finally:
		helper.close()
	assert live.wait(5) is not None, 'what was live at the end is killed'
	assert ended.poll() is None, 'what was untracked is left alone'
	assert wait_until(lambda: not state.exists(), timeout=5), 'the state directory goes with it'


def test_a_dead_servers_marked_processes_are_found_and_stopped(spawned: list[subprocess.Popen[bytes]]) -> None:
	server_pid = _unused_pid()
	env = {**os.environ, OWNER_ENV: f'{server_pid}:1.00'}
	marked = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], env=env)
	other = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])
	spawned += [marked, other]
	assert wait_until(lambda: owned_processes(server_pid) == {marked.pid}, timeout=5)
	assert stop_server(server_pid, wait=0) == 1
	assert marked.wait(5) is not None
	assert other.poll() is None, 'a process without the marker is left alone'


def test_the_server_a_client_spawned_is_found(spawned: list[subprocess.Popen[bytes]]) -> None:
	before = {c.pid for c in psutil.Process().children()}
	server = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', processes.SERVER_MODULE])
	spawned.append(server)
	assert find_spawned_server(before) == server.pid
	assert find_spawned_server(before | {server.pid}, timeout=0.2) is None


@pytest.mark.skipif(not os.path.exists('/proc/self/autogroup'), reason='this kernel has no scheduling autogroups')
@pytest.mark.parametrize(('own_session', 'nice'), [(True, 7), (False, 7), (True, 0)])
def test_yielding_to_the_server_lowers_only_a_session_leaders_autogroup(own_session: bool, nice: int) -> None:
	"""A browser's first process, which leads its own session, gets its process group's niceness and
	its autogroup's lowered; a process in the caller's session only its group's (its autogroup is the
	caller's: lowering it would lower the server); 0 changes nothing."""
	from browser_use_mcp.processes import yield_to_the_server

	mine = autogroup(os.getpid())[1]
	sleeper = [sys.executable, '-c', 'import time; time.sleep(30)']
	# a group leader either way (what setpriority's PRIO_PGRP is given), in a session of its own or ours
	child = subprocess.Popen(sleeper, start_new_session=True) if own_session else subprocess.Popen(sleeper, process_group=0)
	try:
		yield_to_the_server(nice, leader=child.pid)
		assert psutil.Process(child.pid).nice() == os.getpriority(os.PRIO_PROCESS, 0) + nice
		assert autogroup(child.pid)[1] == (nice if own_session else mine)
		assert autogroup(os.getpid())[1] == mine
	finally:
		child.kill()
		child.wait()


def _singleton(tmp_path, pid: int, extra: str | None = None):
	"""A profile whose singleton names ``pid`` on this host, and the socket directory it points to."""
	import socket as socket_module

	profile, folder = tmp_path / 'profile', tmp_path / 'org.chromium.Chromium.abc123'
	profile.mkdir()
	folder.mkdir()
	(folder / 'SingletonSocket').write_bytes(b'')  # a socket in real life; unlinked the same way
	(folder / 'SingletonCookie').symlink_to('12345')
	if extra:
		(folder / extra).write_text('not the singleton')
	(profile / 'SingletonLock').symlink_to(f'{socket_module.gethostname()}-{pid}')
	(profile / 'SingletonSocket').symlink_to(folder / 'SingletonSocket')
	(profile / 'SingletonCookie').symlink_to('12345')
	return profile, folder


def test_a_dead_browsers_singleton_directory_and_links_are_removed(tmp_path) -> None:
	profile, folder = _singleton(tmp_path, _unused_pid())
	assert sidecar.release_singleton(profile)
	assert not folder.exists()
	assert [p.name for p in profile.iterdir()] == []


def test_a_running_browsers_singleton_is_left_alone(tmp_path) -> None:
	profile, folder = _singleton(tmp_path, os.getpid())
	assert not sidecar.release_singleton(profile)
	assert sorted(p.name for p in folder.iterdir()) == ['SingletonCookie', 'SingletonSocket']
	assert len(list(profile.iterdir())) == 3


def test_a_socket_directory_holding_anything_else_is_kept(tmp_path) -> None:
	profile, folder = _singleton(tmp_path, _unused_pid(), extra='notes.txt')
	assert not sidecar.release_singleton(profile)
	assert (folder / 'notes.txt').exists() and (folder / 'SingletonSocket').exists()
	assert list(profile.iterdir()) == [], "the dead browser's links go either way"


def test_a_zombie_is_not_running(spawned: list[subprocess.Popen[bytes]]) -> None:
	child = subprocess.Popen([sys.executable, '-c', 'pass'])
	spawned.append(child)
	assert wait_until(lambda: psutil.Process(child.pid).status() == psutil.STATUS_ZOMBIE, 10)
	assert not sidecar._pid_running(child.pid)
	assert sidecar._pid_running(os.getpid())


async def test_a_browser_process_is_dead_as_soon_as_it_ends_not_once_it_is_reaped(tmp_path) -> None:
	"""A call that comes between a browser's death and asyncio reaping it must see it dead, with its
	signal: browser-use answers a state read on a dead connection with an empty page, not an error."""
	import asyncio
	import signal
	import time

	from browser_use_mcp.browser import ChromiumProcess

	class Pipe:
		def on_close(self, _callback) -> None:
			pass

	proc = await asyncio.create_subprocess_exec('sleep', '30', stderr=asyncio.subprocess.PIPE)
	chromium = ChromiumProcess(proc, tmp_path, Pipe())  # type: ignore[arg-type]
	assert chromium.alive() and chromium.exit_status() is None
	os.kill(proc.pid, signal.SIGKILL)
	time.sleep(0.2)  # the loop cannot run: asyncio has not told the process object yet
	assert proc.returncode is None, 'not collected yet'
	assert not chromium.alive()
	await chromium.exit_collected()  # what a session does before it says why its browser died
	assert 'killed by signal 9' in chromium.reason_suffix()
	assert not chromium.alive() and chromium.exit_status() == -9
