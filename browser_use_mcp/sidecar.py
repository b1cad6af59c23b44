"""A sidecar that cleans up after the server when it dies without doing so itself.

The server can be killed with no chance to clean up: ``kill -9``, an OOM kill, or an MCP client
that simply kills it (fastmcp's stdio client does, when the client process exits). On Linux
each Chromium gets a parent-death signal and dies with the server; where that is unavailable
(macOS, BSD) or switched off, the browsers would live on. And nothing would remove the server's
temporary state directory (profiles, downloads) until the next start swept it.

Browsers on a Selenium Grid are worse off: nothing on this machine ends them, and the Grid keeps
each one until its own idle timeout (minutes), holding a slot other agents wait for.

So the server starts this tiny process. It tells it, over a pipe, which browser process groups
are live ("+PGID" / "-PGID" lines) and which remote sessions ("+D URL" / "-D URL": the URL whose
HTTP DELETE ends one). When the pipe reaches end-of-file - which the kernel guarantees once the
server is gone, however it died - the sidecar kills every group still listed, sends each DELETE
still listed, waits for the groups to go, deletes the server's state directory (given on its
command line) and the directories its browsers' singletons left in /tmp, and exits.

While the server lives, the sidecar only waits and listens, and an idle Python for that is ~8 MB
PSS. So it waits in a POSIX shell (``/bin/sh``, ~0.3 MB): the shell's builtins append each line to
a journal, and once the pipe ends the shell execs Python on the journal, which does the above. The
journal stays small: after ``COMPACT_AFTER`` lines the server sends ``=`` (the shell empties the
journal) and then what is live now. Without ``/bin/sh`` the Python sidecar listens itself.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SINGLETON_LINKS = ('SingletonLock', 'SingletonSocket', 'SingletonCookie')
SHELL = '/bin/sh'
COMPACT_AFTER = 1000  # lines sent before the journal is emptied and what is live sent again
# $1: the journal; the rest: the Python sidecar's command. Signals ignored here stay ignored in it.
# "=" empties the journal (appends then go to its start); a last line without its newline counts.
_WAIT = (
	'trap "" INT TERM; j=$1; shift; '
	'while IFS= read -r l || [ -n "$l" ]; do '
	'case $l in "=") : >"$j" ;; *) printf "%s\\n" "$l" ;; esac; '
	'done >>"$j"; exec "$@" <"$j"'
)


def release_singleton(profile: Path) -> bool:
	"""Remove what a Chromium that is gone left of its profile's singleton: the
	``org.chromium.Chromium.XXXXXX`` directory it made in its TMPDIR for its ``SingletonSocket``, and
	the three ``Singleton*`` links in the profile. Chromium removes them itself only on a clean exit;
	killed (as every browser of ours ends), it leaves a directory in /tmp per browser started. Only
	when the lock names this host and a process that is no longer running, and the directory is ours
	and holds nothing but the singleton's socket and cookie. True when something was removed."""
	try:
		lock = os.readlink(profile / 'SingletonLock')
		socket_path = Path(os.readlink(profile / 'SingletonSocket'))
	except OSError:
		return False
	host, _, pid_text = lock.rpartition('-')
	if host != socket.gethostname() or not pid_text.isdigit() or _pid_running(int(pid_text)):
		return False
	removed = False
	folder = socket_path.parent
	if socket_path.name == 'SingletonSocket' and socket_path.is_absolute() and folder != profile:
		try:
			info = folder.lstat()
			names = os.listdir(folder) if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() else None
		except OSError:
			names = None
		if names is not None and set(names) <= {'SingletonSocket', 'SingletonCookie'}:
			with contextlib.suppress(OSError):
				for name in names:
					(folder / name).unlink()
				folder.rmdir()
				removed = True
	for name in SINGLETON_LINKS:
		with contextlib.suppress(OSError):
			(profile / name).unlink()
	return removed


def release_singletons(state_dir: str | os.PathLike[str]) -> None:
	"""``release_singleton`` for every session profile of a server's state directory
	(``<state dir>/s-*/profile``, as ``browser.StateDir`` lays them out), before it is deleted."""
	with contextlib.suppress(OSError):
		for profile in Path(state_dir).glob('s-*/profile'):
			release_singleton(profile)


def _pid_running(pid: int) -> bool:
	"""A process with this pid exists and is not a zombie (one killed, its parent not reaping it yet)."""
	try:
		os.kill(pid, 0)
	except ProcessLookupError:
		return False
	except PermissionError:
		return True
	try:
		with open(f'/proc/{pid}/stat', 'rb') as stat_file:
			return stat_file.read().rpartition(b')')[2].split()[:1] != [b'Z']
	except OSError:  # no /proc (macOS, BSD): it exists
		return True


def _kill_group(pgid: int) -> None:
	with contextlib.suppress(ProcessLookupError, PermissionError):
		os.killpg(pgid, signal.SIGKILL)


def _group_alive(pgid: int) -> bool:
	try:
		os.killpg(pgid, 0)
	except (ProcessLookupError, PermissionError):
		return False
	return True


def _delete(url: str) -> None:
	import urllib.request

	request = urllib.request.Request(url, method='DELETE')
	with contextlib.suppress(Exception):  # gone already, or the Grid is down: its own timeout remains
		urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=5).close()


def _wait_dead(live: set[int]) -> None:
	deadline = time.monotonic() + 3
	while any(_group_alive(g) for g in live) and time.monotonic() < deadline:
		time.sleep(0.05)


def _remove(state_dir: str) -> None:
	"""Delete the dead server's directory (its browsers are gone: they no longer write into it)."""
	release_singletons(state_dir)  # its browsers' singleton directories in /tmp
	for _ in range(3):
		shutil.rmtree(state_dir, ignore_errors=True)
		if not os.path.exists(state_dir):
			return
		time.sleep(0.2)


class Listed:
	"""What the sidecar is to clean up if the server dies, as the lines it is told build it up: live
	process groups, remote sessions (the URLs whose DELETE ends them), and live browsers' profiles,
	counted (the default session's lies outside the state dir, and may be listed by one browser after
	another). The sidecar replays the lines into one; the server keeps one beside, to tell it again
	what is live after the journal is emptied (``lines``)."""

	def __init__(self) -> None:
		self.groups: set[int] = set()
		self.remote: set[str] = set()
		self.profiles: dict[str, int] = {}

	def __len__(self) -> int:
		return len(self.groups) + len(self.remote) + len(self.profiles)

	def apply(self, line: bytes) -> None:
		if line == b'=':  # what follows is everything live
			self.groups.clear()
			self.remote.clear()
			self.profiles.clear()
			return
		sign = line[:1]
		if line[1:3] == b'D ':
			url = line[3:].decode('utf-8', 'replace')
			if sign == b'+':
				self.remote.add(url)
			elif sign == b'-':
				self.remote.discard(url)
			return
		if line[1:3] == b'P ':
			path = os.fsdecode(line[3:])
			if sign == b'+':
				self.profiles[path] = self.profiles.get(path, 0) + 1
			elif sign == b'-' and self.profiles.get(path, 0) > 1:
				self.profiles[path] -= 1
			elif sign == b'-':
				self.profiles.pop(path, None)
			return
		if len(line) < 2 or not line[1:].isdigit():
			return
		if sign == b'+':
			self.groups.add(int(line[1:]))
		elif sign == b'-':
			self.groups.discard(int(line[1:]))

	def lines(self) -> list[str]:
		"""The lines that list all of it again."""
		return [
			*(f'+{pgid}' for pgid in self.groups),
			*(f'+D {url}' for url in self.remote),
			*(f'+P {path}' for path, count in self.profiles.items() for _ in range(count)),
		]


def main(argv: list[str] | None = None) -> int:
	"""Sidecar loop: track groups from stdin; at EOF kill what is left and remove the state dir.
	``--journal PATH`` first: stdin is that journal (the shell's), removed once read."""
	args = sys.argv[1:] if argv is None else argv
	journal = None
	if args[:1] == ['--journal'] and len(args) > 1:
		journal, args = args[1], args[2:]
	state_dir = args[0] if args else None
	signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal Ctrl-C is for the server, not us
	signal.signal(signal.SIGTERM, signal.SIG_IGN)  # so is a SIGTERM sent to the whole process group
	listed = Listed()
	for raw in sys.stdin.buffer:
		listed.apply(raw.strip())
	live, remote, profiles = listed.groups, listed.remote, listed.profiles
	if journal is not None:
		with contextlib.suppress(OSError):
			os.unlink(journal)
	for pgid in live:
		_kill_group(pgid)
	for url in remote:
		_delete(url)
	if profiles or state_dir:
		_wait_dead(live)
	for path in profiles:  # their singleton directories in /tmp, the browsers gone
		with contextlib.suppress(OSError):
			release_singleton(Path(path))
	if state_dir:
		_remove(state_dir)
	return 0


class Sidecar:
	"""The server's end of the sidecar."""

	def __init__(self, state_dir: str | os.PathLike[str] | None = None, *, shell: str | None = SHELL) -> None:
		# the module's name on the command line is how tests and tools tell the sidecar from a browser
		python = [sys.executable, '-S', '-c', f'from {__name__} import main; raise SystemExit(main())']
		self.journal: str | None = None
		if shell is not None and os.access(shell, os.X_OK):
			if state_dir is not None:
				self.journal = os.path.join(os.fspath(state_dir), '.sidecar-journal')
				open(self.journal, 'wb').close()  # noqa: SIM115
			else:
				fd, self.journal = tempfile.mkstemp(prefix='browser-use-mcp-sidecar-')
				os.close(fd)
			# $0 is the module's name: the shell's command line names it as the Python one's does
			argv = [shell, '-c', _WAIT, __name__, self.journal, *python, '--journal', self.journal]
		else:
			argv = python
		if state_dir is not None:
			argv.append(os.fspath(state_dir))
		self._listed = Listed()  # what the sidecar has been told is live (told again after each emptying)
		self._sent = 0  # lines since the journal was last emptied
		self.proc = subprocess.Popen(
			argv,
			stdin=subprocess.PIPE,
			stdout=subprocess.DEVNULL,
			stderr=subprocess.DEVNULL,
			start_new_session=True,
			env={**os.environ, 'PYTHONPATH': os.pathsep.join(p for p in sys.path if p)},
			close_fds=True,
		)

	def _send(self, line: str) -> None:
		try:
			encoded = line.encode()
		except UnicodeEncodeError:  # a path no UTF-8 can carry: never listed, as before
			return
		self._listed.apply(encoded)
		self._write([encoded])
		self._sent += 1
		if self.journal is not None and self._sent > COMPACT_AFTER + 2 * len(self._listed):
			state = [line.encode() for line in self._listed.lines()]
			self._write([b'=', *state])
			self._sent = len(state) + 1

	def _write(self, lines: list[bytes]) -> None:
		if self.proc.stdin is None:
			return
		with contextlib.suppress(BrokenPipeError, ValueError, OSError):
			self.proc.stdin.write(b''.join(line + b'\n' for line in lines))
			self.proc.stdin.flush()

	def track(self, pgid: int) -> None:
		self._send(f'+{pgid}')

	def untrack(self, pgid: int) -> None:
		self._send(f'-{pgid}')

	def track_profile(self, profile: str | os.PathLike[str]) -> None:
		"""A live browser's profile: released (``release_singleton``) if the server dies."""
		self._send(f'+P {os.fspath(profile)}')

	def untrack_profile(self, profile: str | os.PathLike[str]) -> None:
		self._send(f'-P {os.fspath(profile)}')

	def track_remote(self, delete_url: str) -> None:
		self._send(f'+D {delete_url}')

	def untrack_remote(self, delete_url: str) -> None:
		self._send(f'-D {delete_url}')

	def close(self) -> None:
		"""Clean shutdown: every browser is already closed, so the sidecar just exits."""
		with contextlib.suppress(OSError):  # a sidecar already gone: nothing to tell it
			if self.proc.stdin:
				self.proc.stdin.close()
		with contextlib.suppress(subprocess.TimeoutExpired):  # it exits at end-of-file anyway; don't hold shutdown
			self.proc.wait(timeout=2)


if __name__ == '__main__':
	raise SystemExit(main())
