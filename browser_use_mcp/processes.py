"""Finding and ending processes: whose browser a process is (the owner marker every browser of
ours carries), a process tree, the server an MCP client just spawned, what is left of a server.

The server uses it to launch and sweep browsers; the demo and the tests use it to make sure
nothing outlives them. Only ``psutil``: nothing here imports browser-use.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from dataclasses import dataclass

import psutil

OWNER_ENV = 'BROWSER_USE_MCP_OWNER'
OWNER_SWITCH = '--browser-use-mcp-owner'
SIDECAR_MODULE = 'browser_use_mcp.sidecar'  # its command line names it (browser_use_mcp/sidecar.py)
SERVER_MODULE = 'browser_use_mcp'


def _process_start(pid: int) -> float | None:
	try:
		return psutil.Process(pid).create_time()
	except (psutil.NoSuchProcess, psutil.AccessDenied):
		return None


@dataclass(frozen=True)
class Owner:
	"""Identifies one server process across PID reuse."""

	pid: int
	started: float

	@classmethod
	def current(cls) -> Owner:
		return cls(os.getpid(), round(psutil.Process().create_time(), 2))

	@property
	def token(self) -> str:
		return f'{self.pid}:{self.started:.2f}'

	@classmethod
	def parse(cls, token: str) -> Owner | None:
		pid, _, started = token.partition(':')
		try:
			return cls(int(pid), float(started))
		except ValueError:
			return None

	def alive(self) -> bool:
		start = _process_start(self.pid)
		return start is not None and abs(round(start, 2) - self.started) < 0.05


def owner_of(proc: psutil.Process) -> Owner | None:
	"""The server named by a process's owner marker (command-line switch, else environment)."""
	try:
		cmdline = proc.cmdline()
	except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
		return None
	for arg in cmdline:
		if arg.startswith(OWNER_SWITCH + '='):
			return Owner.parse(arg.split('=', 1)[1])
	try:
		token = proc.environ().get(OWNER_ENV)
	except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
		return None
	return Owner.parse(token) if token else None


def gone(proc: psutil.Process) -> bool:
	"""Exited (a zombie counts as gone: it holds no resources)."""
	try:
		return proc.status() == psutil.STATUS_ZOMBIE
	except (psutil.NoSuchProcess, psutil.AccessDenied):
		return True


def is_sidecar(proc: psutil.Process) -> bool:
	"""The server's cleanup sidecar: a child of the server, but not a browser."""
	with contextlib.suppress(psutil.Error):
		return SIDECAR_MODULE in ' '.join(proc.cmdline())
	return False


def chromium_kind(cmdline: list[str]) -> str:
	"""A Chromium process's ``--type`` (renderer, zygote, utility, gpu-process...; ``browser`` for the
	browser process itself, which has none)."""
	return next((arg.split('=', 1)[1] for arg in cmdline if arg.startswith('--type=')), 'browser')


def process_tree(pid: int) -> list[psutil.Process]:
	"""A process and all its descendants (empty when it is gone)."""
	try:
		root = psutil.Process(pid)
		return [root, *root.children(recursive=True)]
	except psutil.NoSuchProcess:
		return []


async def wait_gone(procs: list[psutil.Process], timeout: float) -> bool:
	"""Wait until every process has exited."""
	deadline = asyncio.get_running_loop().time() + timeout
	pending = list(procs)
	while pending:
		pending = [p for p in pending if not gone(p)]
		if not pending:
			return True
		if asyncio.get_running_loop().time() > deadline:
			return False
		await asyncio.sleep(0.02)
	return True


def _owned(server_pid: int) -> dict[int, psutil.Process]:
	found: dict[int, psutil.Process] = {}
	with contextlib.suppress(psutil.NoSuchProcess):
		for child in psutil.Process(server_pid).children(recursive=True):
			if not gone(child) and not is_sidecar(child):
				found[child.pid] = child
	for proc in psutil.process_iter():
		if proc.pid in found or gone(proc):
			continue
		owner = owner_of(proc)
		if owner is not None and owner.pid == server_pid:
			found[proc.pid] = proc
	return found


def owned_processes(server_pid: int) -> set[int]:
	"""PIDs of the live browser processes the server with this PID started (its descendants, the
	sidecar aside, and every process whose marker names it), whether or not the server still runs."""
	return set(_owned(server_pid))


def find_spawned_server(before: set[int], timeout: float = 5.0) -> int | None:
	"""The PID of the server an MCP client in this process just spawned (clients do not say): a
	child not in ``before`` whose command line runs ``browser_use_mcp``."""
	me = psutil.Process()
	deadline = time.monotonic() + timeout
	while True:
		for child in me.children(recursive=False):
			if child.pid in before:
				continue
			with contextlib.suppress(psutil.Error):
				if SERVER_MODULE in ' '.join(child.cmdline()):
					return child.pid
		if time.monotonic() > deadline:
			return None
		time.sleep(0.01)


def stop_server(server_pid: int, wait: float = 10.0) -> int:
	"""Leave nothing of a server its client has let go: give it ``wait`` seconds to exit, kill it
	if it does not, then kill every browser of it still alive. Returns how many were killed."""
	owned = _owned(server_pid)  # before it exits, while its browsers are still its descendants
	killed = 0
	with contextlib.suppress(psutil.NoSuchProcess):
		server = psutil.Process(server_pid)
		with contextlib.suppress(psutil.TimeoutExpired):
			server.wait(wait)
		if not gone(server):
			server.kill()
			killed += 1
	for proc in {**owned, **_owned(server_pid)}.values():
		with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
			if not gone(proc):
				proc.kill()
				killed += 1
	return killed


# -- orphans of our browsers ------------------------------------------------------------------
#
# A browser killed from outside (SIGKILL, an out-of-memory kill) leaves its helper processes
# (renderers, GPU, utilities) without a parent. They are re-parented to init, unless this server
# is PID 1 (a container without an init) or a child subreaper: then they become ours, and once
# they exit, zombies under the server that nobody waits for.

PR_GET_CHILD_SUBREAPER = 37
_zombies_seen: set[int] = set()


def adopts_orphans() -> bool:
	"""Whether orphaned processes are re-parented to this process (PID 1 or a child subreaper)."""
	if os.getpid() == 1:
		return True
	try:
		import ctypes

		libc = ctypes.CDLL(None, use_errno=True)
		flag = ctypes.c_int(0)
		return libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) == 0 and flag.value != 0
	except (OSError, AttributeError):
		return False


def reap_orphans() -> int:
	"""Reap zombie children nobody waits for; call it every second or so. A zombie is reaped only
	when the previous call saw it too: a child of ours that asyncio or subprocess waits for is reaped
	by them at once, never left a zombie that long. Does nothing unless we adopt orphans."""
	if not adopts_orphans():
		return 0
	found: set[int] = set()
	with contextlib.suppress(psutil.Error):
		for child in psutil.Process().children():
			with contextlib.suppress(psutil.Error):
				if child.status() == psutil.STATUS_ZOMBIE:
					found.add(child.pid)
	reaped = set()
	for pid in found & _zombies_seen:
		with contextlib.suppress(ChildProcessError, OSError):
			if os.waitpid(pid, os.WNOHANG)[0] == pid:
				reaped.add(pid)
	_zombies_seen.clear()
	_zombies_seen.update(found - reaped)
	return len(reaped)


def yield_to_the_server(nice: int, leader: int | None = None) -> None:
	"""Lower a process group's CPU priority below the server's: a busy core goes to the server's
	event loop first. ``leader``: a browser's first process, which leads its own session and process
	group (called once the browser has started; every process it forks later inherits the
	priority); None: this process (the page-state worker, once in a session of its own).

	Why: every session's calls run on the server's one event loop, and each of its steps is short;
	a browser building a large page's snapshot, or the worker building its state, keeps a core busy
	for seconds. On Linux a process that starts its own session gets its own scheduling
	*autogroup*, and the scheduler shares the CPU between autogroups, not processes: a browser's
	renderer, GPU and browser processes together weighed as much as the whole server, so beside a
	heavy page the loop waited for a core for tens of milliseconds at a time (on 2 cores, loop lag
	p99 26-36 ms, the stalls seen in the loop's writes to the browser's pipe: the write wakes the
	browser, which takes the core). Both levers are set: the niceness of the group's processes (what
	counts when autogroups are off) and, only for a session leader, its autogroup's
	(``/proc/PID/autogroup``; what counts when they are on; written for a process in the server's own
	session it would lower the server's). A process alone still gets every idle core; only a
	contended core goes to the loop first. Never raises: a system that refuses either leaves the
	priority as it was."""
	if nice <= 0:
		return
	pid = os.getpid() if leader is None else leader
	with contextlib.suppress(OSError):
		if leader is None:
			os.setpriority(os.PRIO_PROCESS, 0, nice)
		else:
			os.setpriority(os.PRIO_PGRP, leader, nice)
	if leads_its_session(pid):
		set_autogroup(pid, nice)


def leads_its_session(pid: int) -> bool:
	"""Whether ``pid`` leads its own session, so that its autogroup is its own (not its parent's)."""
	try:
		return os.getsid(pid) == pid
	except OSError:
		return False


def set_autogroup(pid: int, nice: int) -> bool:
	"""Set the niceness of ``pid``'s autogroup; False when the process is gone, the system is not
	Linux, or the kernel has no autogroups. Only for a session leader (``leads_its_session``): another
	process's autogroup is its session's, which may be the server's."""
	try:
		fd = os.open(f'/proc/{pid}/autogroup', os.O_WRONLY)
	except OSError:
		return False
	try:
		os.write(fd, str(nice).encode())
		return True
	except OSError:
		return False
	finally:
		os.close(fd)
