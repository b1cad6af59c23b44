"""A real Selenium Grid 4 standalone on 127.0.0.1 for tests and benchmarks.

``scripts/grid.sh`` installs what it needs (the Debian chromedriver matching the system Chromium,
Java 17, the pinned Grid jar); the Grid runs the system Chromium only, with Selenium Manager off,
so nothing is ever downloaded. Everything it writes (config, log, browser profiles, managed
downloads) stays in the ``tmp_dir`` it is given, and stopping it kills every process it started.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
import urllib.request
from pathlib import Path
from types import TracebackType

import psutil

from harness.httpserver import free_port

REPO = Path(__file__).resolve().parent.parent
# another Chromium and its matching driver (e.g. an older release unpacked beside the system one)
# for a run of the suite on that version: the same variables the server and scripts/test.sh read
CHROMEDRIVER = os.environ.get('BROWSER_USE_MCP_CHROMEDRIVER') or '/usr/bin/chromedriver'
CHROMIUM = os.environ.get('BROWSER_USE_MCP_CHROMIUM') or '/usr/bin/chromium'

# loopback only: ignore any *_proxy in the environment
_http = urllib.request.build_opener(urllib.request.ProxyHandler({}))
_jar_lock = threading.Lock()
_jar: str | RuntimeError | None = None


def grid_available() -> str | None:
	"""Why a Grid cannot run here, or None when it can (scripts/grid.sh installs what is missing)."""
	apt = shutil.which('apt-get') is not None and (os.geteuid() == 0 or shutil.which('sudo') is not None)
	if not os.access(CHROMIUM, os.X_OK):
		return f'no Chromium at {CHROMIUM}'
	if not (shutil.which('npm') and shutil.which('node')):
		return 'no npm/node to fetch the Selenium Grid jar'
	if not shutil.which('java') and not apt:
		return 'no java, and no apt-get to install openjdk-17-jre-headless'
	if not os.access(CHROMEDRIVER, os.X_OK) and not apt:
		return f'no {CHROMEDRIVER}, and no apt-get to install chromium-driver'
	return None


def grid_jar() -> str:
	"""The Grid jar's path, from scripts/grid.sh run once per process (its failure is remembered too)."""
	global _jar
	with _jar_lock:
		if _jar is None:
			run = subprocess.run([str(REPO / 'scripts' / 'grid.sh')], capture_output=True, text=True)
			lines = run.stdout.strip().splitlines()
			if run.returncode == 0 and lines and os.path.isfile(lines[-1]):
				_jar = lines[-1]
			else:
				_jar = RuntimeError(f'scripts/grid.sh failed (exit {run.returncode}):\n{run.stderr[-2000:]}')
	if isinstance(_jar, RuntimeError):
		raise _jar
	return _jar


class GridServer:
	"""``with GridServer(tmp_dir) as grid:`` runs a Grid standalone at ``grid.url`` until the block ends."""

	def __init__(
		self,
		tmp_dir: Path | str,
		max_sessions: int = 4,
		session_timeout: int = 300,
		session_request_timeout: int = 300,
		managed_downloads: bool = True,
	):
		self.tmp_dir = Path(tmp_dir).resolve()
		self.max_sessions = max_sessions
		self.session_timeout = session_timeout
		self.session_request_timeout = session_request_timeout
		self.managed_downloads = managed_downloads  # False: Selenium's default (downloads stay on the node)
		self.port = 0
		self.log_path = self.tmp_dir / 'grid.log'
		self.config_path = self.tmp_dir / 'grid.toml'
		self._proc: subprocess.Popen[bytes] | None = None

	@property
	def pid(self) -> int:
		assert self._proc is not None, 'not started'
		return self._proc.pid

	@property
	def url(self) -> str:
		return f'http://127.0.0.1:{self.port}'

	def config(self) -> str:
		n = self.max_sessions
		stereotype = json.dumps({'browserName': 'chrome', 'goog:chromeOptions': {'binary': CHROMIUM}})
		if not self.managed_downloads:  # a plain config: Selenium's defaults but the driver, never downloaded
			return f"""[server]
host = "127.0.0.1"
port = {self.port}

[node]
detect-drivers = false
selenium-manager = false
max-sessions = {n}
override-max-sessions = true

[[node.driver-configuration]]
display-name = "chromium"
webdriver-executable = "{CHROMEDRIVER}"
max-sessions = {n}
stereotype = '{stereotype}'
"""
		return f"""[server]
host = "127.0.0.1"
port = {self.port}

[node]
detect-drivers = false
selenium-manager = false
enable-managed-downloads = true
max-sessions = {n}
override-max-sessions = true
session-timeout = {self.session_timeout}

[[node.driver-configuration]]
display-name = "chromium"
webdriver-executable = "{CHROMEDRIVER}"
max-sessions = {n}
stereotype = '{stereotype}'

[sessionqueue]
session-request-timeout = {self.session_request_timeout}
"""

	def start(self) -> GridServer:
		jar = grid_jar()
		self.tmp_dir.mkdir(parents=True, exist_ok=True)
		self.port = free_port()  # (below the ephemeral range: see there)
		self.config_path.write_text(self.config())
		# TMPDIR/java.io.tmpdir keep chromedriver's profiles and the managed downloads inside tmp_dir
		env = {k: v for k, v in os.environ.items() if not k.lower().endswith('_proxy')} | {'TMPDIR': str(self.tmp_dir)}
		cmd = ['java', f'-Djava.io.tmpdir={self.tmp_dir}', '-jar', jar, 'standalone', '--config', str(self.config_path)]
		with open(self.log_path, 'wb') as log:
			self._proc = subprocess.Popen(
				cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
			)
		try:
			self._wait_ready(60)
		except BaseException:
			self.stop()
			raise
		return self

	def _wait_ready(self, timeout: float) -> None:
		deadline = time.monotonic() + timeout
		while self._proc is not None and self._proc.poll() is None:
			with contextlib.suppress(OSError, ValueError):
				with _http.open(f'{self.url}/status', timeout=2) as resp:
					if json.load(resp)['value']['ready'] is True:
						return
			if time.monotonic() > deadline:
				raise RuntimeError(f'Grid not ready after {timeout:.0f} s; last log lines:\n{self.log_tail()}')
			time.sleep(0.2)
		raise RuntimeError(f'Grid exited at start; last log lines:\n{self.log_tail()}')

	def log_tail(self, lines: int = 40) -> str:
		with contextlib.suppress(OSError):
			return '\n'.join(self.log_path.read_text(errors='replace').splitlines()[-lines:])
		return '(no log)'

	def stop(self) -> None:
		"""Kill the Grid's whole process group (and with it every chromedriver and Chromium it started)."""
		proc, self._proc = self._proc, None
		if proc is None:
			return
		with contextlib.suppress(ProcessLookupError):
			os.killpg(proc.pid, signal.SIGTERM)
		deadline = time.monotonic() + 10
		while self._survivors(proc.pid, group_only=True) and time.monotonic() < deadline:
			proc.poll()
			time.sleep(0.1)
		with contextlib.suppress(ProcessLookupError):
			os.killpg(proc.pid, signal.SIGKILL)
		proc.wait()
		# anything that left the group (or was never in it) but still runs on our dir or port
		left = self._survivors(proc.pid)
		for p in left:
			with contextlib.suppress(psutil.Error):
				p.kill()
		psutil.wait_procs(left, timeout=5)

	def _survivors(self, pgid: int, group_only: bool = False) -> list[psutil.Process]:
		# tmp_dir itself or a path under it (not /tmp/x1 for /tmp/x), our port (not 44441 for 4444)
		marks = re.compile(rf'{re.escape(str(self.tmp_dir))}(?![^/\s])|127\.0\.0\.1:{self.port}(?!\d)')
		found = []
		for p in psutil.process_iter(['cmdline', 'status']):
			with contextlib.suppress(psutil.Error, OSError):
				if p.pid == os.getpid() or p.info['status'] == psutil.STATUS_ZOMBIE:
					continue
				cmdline = ' '.join(p.info['cmdline'] or ())
				if os.getpgid(p.pid) == pgid or (not group_only and marks.search(cmdline)):
					found.append(p)
		return found

	def __enter__(self) -> GridServer:
		return self.start()

	def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
		self.stop()
