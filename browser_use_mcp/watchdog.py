"""A sidecar that ends our browsers when the server dies without closing them.

On Linux each Chromium gets a parent-death signal, so a SIGKILLed server takes its browsers
with it. Where that is unavailable (macOS, BSD) or switched off, the server starts this tiny
process instead. The server tells it, over a pipe, which browser process groups are live
("+PGID" / "-PGID" lines); when the pipe reaches end-of-file - which the kernel guarantees
once the server is gone, however it died - the sidecar kills every group still listed and
exits. It imports nothing heavy so it costs a few megabytes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys


def _kill_group(pgid: int) -> None:
	with contextlib.suppress(ProcessLookupError, PermissionError):
		os.killpg(pgid, signal.SIGKILL)


def main() -> int:
	"""Sidecar loop: track groups from stdin; kill what is left at EOF."""
	signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal Ctrl-C is for the server, not us
	live: set[int] = set()
	for raw in sys.stdin.buffer:
		line = raw.strip()
		if len(line) < 2 or not line[1:].isdigit():
			continue
		pgid = int(line[1:])
		if line[:1] == b'+':
			live.add(pgid)
		elif line[:1] == b'-':
			live.discard(pgid)
	for pgid in live:
		_kill_group(pgid)
	return 0


class Watchdog:
	"""The server's end of the sidecar."""

	def __init__(self) -> None:
		self.proc = subprocess.Popen(
			[sys.executable, '-S', '-c', 'from browser_use_mcp.watchdog import main; raise SystemExit(main())'],
			stdin=subprocess.PIPE,
			stdout=subprocess.DEVNULL,
			stderr=subprocess.DEVNULL,
			start_new_session=True,
			env={**os.environ, 'PYTHONPATH': os.pathsep.join(p for p in sys.path if p)},
			close_fds=True,
		)

	def _send(self, line: str) -> None:
		if self.proc.stdin is None:
			return
		with contextlib.suppress(BrokenPipeError, ValueError, OSError):
			self.proc.stdin.write(line.encode() + b'\n')
			self.proc.stdin.flush()

	def track(self, pgid: int) -> None:
		self._send(f'+{pgid}')

	def untrack(self, pgid: int) -> None:
		self._send(f'-{pgid}')

	def close(self) -> None:
		"""Clean shutdown: every browser is already closed, so the sidecar just exits."""
		with contextlib.suppress(Exception):
			if self.proc.stdin:
				self.proc.stdin.close()
		with contextlib.suppress(Exception):
			self.proc.wait(timeout=2)


if __name__ == '__main__':
	raise SystemExit(main())
