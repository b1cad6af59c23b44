"""How one session's Chromium is made and torn down.

We launch Chromium ourselves instead of letting browser-use do it, because the server must
own the process: it is tied to the server's life (parent-death signal, its own process
group), its stderr is drained (a full pipe would freeze it) and kept for error messages,
and every process and directory carries a marker so a later server can sweep what a
killed one left behind. browser-use then connects to it over CDP like to any browser.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import hashlib
import json
import logging
import os
import shutil
import signal
import socket
import sys
import tempfile
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from browser_use_mcp import busy
from browser_use_mcp.cdp_pipe import CHILD_READ_FD, CHILD_WRITE_FD, PipeMux, install_child_fds, reserve_child_fds
from browser_use_mcp.errors import BrowserStartFailed
from browser_use_mcp.patches import internals
from browser_use_mcp.processes import OWNER_ENV, OWNER_SWITCH, Owner, owner_of, process_tree, wait_gone, yield_to_the_server
from browser_use_mcp.sidecar import release_singleton, release_singletons

logger = logging.getLogger('browser_use_mcp.browser')

OWNER_FILE = 'owner.json'
LAUNCH_TIMEOUT = 30.0

# Process-wide launch policy, set once by the registry at start-up (see configure_launch).
PARENT_DEATH_SIGNAL = True
CHROMIUM_NICE = 10  # see ChromiumProcess.yield_to_the_server
SIDECAR: Any = None  # browser_use_mcp.sidecar.Sidecar when the sidecar is in use

CHROMIUM_CANDIDATES = (
	'/usr/bin/chromium',
	'/usr/bin/chromium-browser',
	'/usr/lib/chromium/chromium',
	'/usr/bin/google-chrome-stable',
	'/usr/bin/google-chrome',
	'/usr/local/bin/chromium',
	'/snap/bin/chromium',
	'/Applications/Google Chrome.app/Contents/MacOS/Google Chrome',
	'/Applications/Chromium.app/Contents/MacOS/Chromium',
)

# Chromium's headless shell: the same engine without the browser's windows and UI. Debian ships it
# as its own package (chromium-headless-shell, the same version as chromium). Each session's
# context or browser in the full Chromium gets a browser window (toolbar, tab strip, omnibox) that
# headless mode draws and nobody sees: on the browser process's main thread, through which every
# DevTools message passes, that costs ~3x what the shell spends per session (docs/performance.md,
# "The headless shell"). Preferred when headless and nothing else is configured.
HEADLESS_SHELL_CANDIDATES = (
	'/usr/lib/chromium/chromium-headless-shell',
	'/usr/bin/chrome-headless-shell',
)
# Debian's /usr/bin/chromium-headless-shell is a shell script that runs the binary without exec: the
# process we would start (and signal, and tie to our death) would be sh, not the browser, which
# would outlive a killed server. The binary itself is launched instead.
WRAPPED_BINARIES = {'/usr/bin/chromium-headless-shell': '/usr/lib/chromium/chromium-headless-shell'}
HEADLESS_SHELL_NAMES = ('chromium-headless-shell', 'chrome-headless-shell')

# Launch flags we add on top of browser-use's: nothing here phones home at start-up (this
# machine, like many CI boxes, has no network), and nothing costs memory an automation
# browser never uses. The GPU (software-rendered when headless) and the network service run
# inside the browser process instead of two more processes: 5 processes per session become 3
# and the tree's USS drops by about a quarter. WebUIOmniboxPopup and WebUIOmniboxAimPopup: from
# Chromium 156 every browser window (so every session: a context's first tab opens one) builds its
# omnibox popups as WebUI pages in a renderer of their own (--top-chrome-webui, ~35 MB PSS) that a
# headless window never shows; both must be off, either one alone keeps that renderer. Versions
# that do not know a feature ignore it. Measured in docs/performance.md.
# --component-updater=url-source=about:blank: Chromium 156 installs an "on demand" component at start
# (an update check to update.googleapis.com), which --disable-component-update does not stop; with a
# source that is no network URL that check goes nowhere. tests/e2e/test_network.py watches for it.
EXTRA_ARGS = (
	'--disable-background-networking',
	'--disable-component-update',
	'--component-updater=url-source=about:blank',
	'--disable-default-apps',
	'--disable-crash-reporter',
	'--disable-breakpad',
	'--no-first-run',
	'--no-pings',
	'--password-store=basic',
	'--use-mock-keychain',
	'--disable-features=OptimizationHints,MediaRouter,Translate,AutofillServerCommunication,InterestFeedContentSuggestions,CalculateNativeWinOcclusion,NetworkTimeServiceQuerying,WebUIOmniboxPopup,WebUIOmniboxAimPopup',
	'--renderer-process-limit=4',
	'--in-process-gpu',
	'--enable-features=NetworkServiceInProcess2',
)


# Switches that would open DevTools elsewhere than our pipe (browser-use's profile, the operator's flags).
DEVTOOLS_SWITCHES = ('--remote-debugging-port', '--remote-debugging-address', '--remote-debugging-pipe', '--remote-allow-origins')


def find_chromium(configured: str | None = None, *, headless_shell: bool = False) -> str | None:
	"""The browser binary: the configured one, else (with ``headless_shell``) Chromium's headless
	shell if installed, else the usual system and Playwright paths."""
	if configured:
		path = unwrapped(shutil.which(configured) or configured)
		return path if Path(path).is_file() else None
	if headless_shell:
		shell = find_headless_shell()
		if shell is not None:
			return shell
	for candidate in CHROMIUM_CANDIDATES:
		if Path(candidate).is_file():
			return candidate
	for name in ('chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable', 'chrome'):
		found = shutil.which(name)
		if found:
			return found
	return internals.installed_browser_path()


def unwrapped(path: str) -> str:
	"""The browser binary behind a distribution's wrapper script that does not exec it."""
	binary = WRAPPED_BINARIES.get(os.path.realpath(path))
	return binary if binary is not None and Path(binary).is_file() else path


def find_headless_shell() -> str | None:
	for candidate in HEADLESS_SHELL_CANDIDATES:
		if Path(candidate).is_file():
			return candidate
	for name in HEADLESS_SHELL_NAMES:
		found = shutil.which(name)
		if found:
			return unwrapped(found)
	return None


def is_headless_shell(executable: str | None) -> bool:
	return bool(executable) and 'headless-shell' in Path(os.path.realpath(executable)).name.replace('_', '-')


def wants_headless_shell(config: Any) -> bool:
	"""Headless, and without browser-use's extensions (the shell runs none), unless
	``--no-headless-shell``: the headless shell is preferred when installed."""
	return bool(
		config.headless and config.headless_shell and not dict(config.browser_profile).get('enable_default_extensions', False)
	)


def server_browser(config: Any) -> str | None:
	"""The binary a server with this config launches: ``--chromium`` if given, else the headless
	shell when wanted and installed, else the full Chromium."""
	return find_chromium(config.executable_path, headless_shell=wants_headless_shell(config))


def profile_lock_owner(user_data_dir: Path) -> int | None:
	"""PID of a live process holding Chromium's SingletonLock on this profile, if any."""
	lock = user_data_dir / 'SingletonLock'
	try:
		target = os.readlink(lock)
	except OSError:
		return None
	host, _, pid_text = target.rpartition('-')
	if not pid_text.isdigit():
		return None
	pid = int(pid_text)
	if host and host != socket.gethostname():
		return pid  # held by another machine sharing this directory: treat as locked
	return pid if psutil.pid_exists(pid) else None


def session_digest(principal: str, session_id: str) -> str:
	"""A path-safe, fixed-length name for a client-chosen id (never the id itself)."""
	return hashlib.sha256(f'{principal}\0{session_id}'.encode('utf-8', 'surrogatepass')).hexdigest()[:16]


@dataclass
class SessionDirs:
	"""Where one session keeps its profile, downloads and FileSystem files."""

	profile: Path
	downloads: Path
	files: Path
	root: Path | None = None  # a temporary tree we created and must delete; None = persistent

	@property
	def temporary(self) -> bool:
		return self.root is not None

	def remove(self) -> None:
		if self.root is not None:
			shutil.rmtree(self.root, ignore_errors=True)


class StateDir:
	"""This server's private directory under the shared state dir, swept when its owner dies."""

	def __init__(self, base: Path, owner: Owner) -> None:
		self.base = base
		self.owner = owner
		self.base.mkdir(parents=True, exist_ok=True, mode=0o700)
		self.path = Path(tempfile.mkdtemp(prefix=f'srv-{owner.pid}-', dir=self.base))
		(self.path / OWNER_FILE).write_text(json.dumps({'pid': owner.pid, 'started': owner.started}))

	def new_session_dirs(self, principal: str, session_id: str) -> SessionDirs:
		root = Path(tempfile.mkdtemp(prefix=f's-{session_digest(principal, session_id)}-', dir=self.path))
		dirs = SessionDirs(profile=root / 'profile', downloads=root / 'downloads', files=root / 'files', root=root)
		for path in (dirs.profile, dirs.downloads, dirs.files):
			path.mkdir(mode=0o700)
		return dirs

	def saved_states(self, principal: str) -> Path:
		"""Where browser_save_state keeps one principal's named states (made on first save): inside this
		server's directory, so they outlive their sessions and go when the server does."""
		return self.path / 'saved-states' / session_digest(principal, '')

	def remove(self) -> None:
		shutil.rmtree(self.path, ignore_errors=True)


@dataclass
class SweepReport:
	processes_killed: int = 0
	dirs_removed: int = 0


def sweep_orphans(base: Path, me: Owner | None = None) -> SweepReport:
	"""Kill Chromium processes and delete state dirs left by servers of ours that died.

	Only processes carrying our owner marker (command-line switch or environment) are
	touched, and only when the server named in the marker is gone: another user's or
	another live server's browser is never killed.
	"""
	report = SweepReport()
	uid = os.getuid()
	killed: list[psutil.Process] = []
	for proc in psutil.process_iter(['uids']):
		try:
			if proc.info['uids'] is None or proc.info['uids'].real != uid or proc.pid == os.getpid():
				continue
		except (psutil.NoSuchProcess, psutil.AccessDenied):
			continue
		owner = owner_of(proc)
		if owner is None or owner.alive() or (me is not None and owner == me):
			continue
		with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
			proc.kill()
			killed.append(proc)
			report.processes_killed += 1
	# a dying browser may still write into its profile: let it go before deleting the dirs
	psutil.wait_procs(killed, timeout=3)
	if base.is_dir():
		for child in base.iterdir():
			owner_file = child / OWNER_FILE
			if not child.name.startswith('srv-') or not owner_file.is_file():
				continue
			try:
				data = json.loads(owner_file.read_text())
				owner = Owner(int(data['pid']), float(data['started']))
			except (OSError, ValueError, KeyError, TypeError):
				continue
			if owner.alive():
				continue
			release_singletons(child)  # its browsers' singleton directories in /tmp
			for _ in range(3):
				shutil.rmtree(child, ignore_errors=True)
				if not child.exists():
					report.dirs_removed += 1
					break
	return report


def parent_death_signal_supported() -> bool:
	return sys.platform.startswith('linux')


def configure_launch(parent_death_signal: bool, sidecar: Any, nice: int) -> None:
	"""How browsers are tied to the server's life (parent-death signal and/or the sidecar) and
	how far below the server's their CPU priority is."""
	global PARENT_DEATH_SIGNAL, SIDECAR, CHROMIUM_NICE
	PARENT_DEATH_SIGNAL = parent_death_signal
	SIDECAR = sidecar
	CHROMIUM_NICE = nice


def _set_parent_death_signal() -> None:
	"""Runs in the forked child: die with SIGKILL when the server's launching thread dies.

	The signal is bound to the thread that forked, which is always the event-loop thread:
	it lives as long as the server does.
	"""
	if PARENT_DEATH_SIGNAL and parent_death_signal_supported():
		try:
			libc = ctypes.CDLL(None, use_errno=True)
			libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
		except Exception:  # in the forked child, where logging could deadlock; the sidecar and the sweep remain
			pass
		if os.getppid() == 1:  # the server died between fork and prctl
			os._exit(1)


UNKNOWN_STATUS: Any = object()  # ChromiumProcess._ended_status: ended, its status not at hand


class ChromiumProcess:
	"""One running Chromium: its process group, its DevTools pipe and the tail of its stderr.

	DevTools is spoken over ``--remote-debugging-pipe`` only: no TCP port a page could reach
	(see cdp_pipe). Connections of ours are channels of ``self.cdp``; browser-use reaches it
	through a per-session websocket endpoint of ours (providers/cdp_proxy.py).
	"""

	def __init__(self, proc: asyncio.subprocess.Process, profile_dir: Path, cdp: PipeMux) -> None:
		self.proc = proc
		self.pid = proc.pid
		self.profile_dir = profile_dir
		self.cdp = cdp
		self.product = ''  # e.g. Chrome/156.0.8078.79, once ready
		self.stderr_tail: deque[str] = deque(maxlen=40)
		self._reader = asyncio.create_task(self._drain_stderr(), name=f'chromium-{self.pid}-stderr')
		self._exit_callbacks: list[Callable[[ChromiumProcess], Any]] = []
		self._waiter = asyncio.create_task(self._wait_exit(), name=f'chromium-{self.pid}-wait')
		self.stopping = False
		self.yielded = False  # its priority lowered (yield_to_the_server)
		cdp.on_close(self._pipe_closed)

	def yield_to_the_server(self, shared: bool = False) -> None:
		"""Once a session has started on this browser: lower its CPU priority below the server's
		(processes.yield_to_the_server), once, and have ``busy.WATCH`` lower its busy renderers further
		(``shared``: a Chromium of several sessions, whose renderers yield one by one). Not at launch:
		a browser starting beside fifteen others on two cores, then behind the server's own work, took
		long enough that browser-use lost its first tab ("initial target not found") in our 16-agent
		benchmark; a start is on an agent's path anyway."""
		if not self.yielded and self.proc.returncode is None:
			self.yielded = True
			yield_to_the_server(CHROMIUM_NICE, leader=self.pid)
			busy.WATCH.add(self, shared)

	@classmethod
	async def launch(
		cls, executable: str, args: list[str], profile_dir: Path, owner: Owner, timeout: float = LAUNCH_TIMEOUT
	) -> ChromiumProcess:
		with contextlib.suppress(Exception):  # a profile reopened after a killed server: its old singleton's /tmp dir
			release_singleton(profile_dir)
		env = dict(os.environ)
		env[OWNER_ENV] = owner.token
		# Chromium writes crash-report settings under XDG_CONFIG_HOME whatever --user-data-dir
		# says; keep every byte it writes inside the session's own directory.
		env['XDG_CONFIG_HOME'] = str(profile_dir / '.xdg-config')
		env['XDG_CACHE_HOME'] = str(profile_dir / '.xdg-cache')
		# Chromium puts a socket under TMPDIR and aborts when the path passes 107 bytes.
		if len(env.get('TMPDIR', '')) > 60:
			env['TMPDIR'] = '/tmp'
		argv = [*args, f'{OWNER_SWITCH}={owner.token}', '--remote-debugging-pipe', 'about:blank']
		reserve_child_fds()
		to_child_r, to_child_w = os.pipe()
		from_child_r, from_child_w = os.pipe()

		def in_child() -> None:
			install_child_fds(to_child_r, from_child_w)
			_set_parent_death_signal()

		try:
			proc = await asyncio.create_subprocess_exec(
				executable,
				*argv,
				stdin=asyncio.subprocess.DEVNULL,
				stdout=asyncio.subprocess.DEVNULL,
				stderr=asyncio.subprocess.PIPE,
				env=env,
				start_new_session=True,
				pass_fds=(CHILD_READ_FD, CHILD_WRITE_FD),
				preexec_fn=in_child,
			)
		except OSError as exc:
			for fd in (to_child_r, to_child_w, from_child_r, from_child_w):
				os.close(fd)
			raise BrowserStartFailed(
				f'Could not start the browser at {executable}: {exc}. Install Chromium '
				'(Debian/Ubuntu: apt-get install chromium) or set BROWSER_USE_MCP_CHROMIUM to its path.'
			) from exc
		finally:
			with contextlib.suppress(OSError):  # the child's ends: only it may hold them, or EOF never comes
				os.close(to_child_r)
			with contextlib.suppress(OSError):
				os.close(from_child_w)
		if SIDECAR is not None:
			SIDECAR.track(proc.pid)  # its own session: process group id == pid
			SIDECAR.track_profile(profile_dir)  # the default session's lies outside the state dir
		cdp = PipeMux()
		await cdp.start(from_child_r, to_child_w)
		chromium = cls(proc, profile_dir, cdp)
		try:
			await asyncio.wait_for(chromium._until_ready(), timeout)
		except TimeoutError:
			await chromium.kill()
			raise BrowserStartFailed(
				f'The browser did not answer on its DevTools pipe within {timeout:.0f} s.{chromium.reason_suffix()} '
				'Run `browser-use-mcp doctor` for a diagnosis.'
			) from None
		except BaseException:
			await chromium.kill()
			raise
		return chromium

	async def _until_ready(self) -> None:
		"""Chromium answers its first command once DevTools is up; or it exits first."""
		version = asyncio.ensure_future(self.cdp.call('Browser.getVersion'))
		try:
			await asyncio.wait({version, self._waiter}, return_when=asyncio.FIRST_COMPLETED)
		finally:
			if not version.done():
				version.cancel()
		if version.done() and not version.cancelled() and version.exception() is None:
			self.product = version.result().get('product', '')
			return
		with contextlib.suppress(TimeoutError, asyncio.CancelledError):  # its exit status and stderr say why
			await asyncio.wait_for(asyncio.gather(asyncio.shield(self._waiter), asyncio.shield(self._reader)), 2)
		raise BrowserStartFailed(
			f'The browser exited before it was ready.{self.reason_suffix()} Run `browser-use-mcp doctor` for a diagnosis.'
		)

	def _pipe_closed(self) -> None:
		"""The pipe's end is the browser's end: nothing can drive it any more, so make sure it is gone
		(its exit callbacks then report it)."""
		if self.alive() and not self.stopping:
			logger.warning('Chromium %d closed its DevTools pipe; ending it', self.pid)
			with contextlib.suppress(ProcessLookupError, PermissionError):
				os.killpg(self.pid, signal.SIGKILL)

	async def _drain_stderr(self) -> None:
		assert self.proc.stderr is not None
		try:
			while True:
				raw = await self.proc.stderr.readline()
				if not raw:
					break
				line = raw.decode('utf-8', 'replace').rstrip()
				if line:
					self.stderr_tail.append(line)
		except (asyncio.CancelledError, Exception):
			pass

	async def _wait_exit(self) -> None:
		with contextlib.suppress(asyncio.CancelledError):
			await self.proc.wait()
			try:
				release_singleton(self.profile_dir)
			except Exception:  # never in the way of the exit callbacks
				logger.exception("could not remove Chromium %d's singleton directory", self.pid)
			for callback in list(self._exit_callbacks):
				try:
					callback(self)
				except Exception:  # one failing callback must not keep the others from hearing of the exit
					logger.exception('a callback on the exit of Chromium %d failed', self.pid)

	def on_exit(self, callback: Callable[[ChromiumProcess], Any]) -> None:
		self._exit_callbacks.append(callback)

	def alive(self) -> bool:
		"""False as soon as the process has ended, before asyncio has reaped it: a call that comes in
		between would otherwise go to a browser that is gone (and browser-use answers a state read on a
		dead connection with an empty page rather than an error)."""
		return self.proc.returncode is None and self._ended_status() is None

	def _ended_status(self) -> Any:
		"""The exit status (as ``returncode``: negative for a signal) of our child once it has ended,
		read without reaping it (``WNOWAIT``: asyncio's watcher still collects it); ``UNKNOWN_STATUS``
		once it is reaped but the loop has not been told; None while it runs."""
		try:
			ended = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
		except ChildProcessError:  # reaped (asyncio's watcher thread waits on it) before the loop was told
			return UNKNOWN_STATUS
		except OSError:
			return None
		if ended is None:
			return None
		return -ended.si_status if ended.si_code in (os.CLD_KILLED, os.CLD_DUMPED) else ended.si_status

	def exit_status(self) -> int | None:
		"""``returncode``, or the status of a child that ended before the loop heard of it (None if unknown)."""
		if self.proc.returncode is not None:
			return self.proc.returncode
		status = self._ended_status()
		return None if status is UNKNOWN_STATUS else status

	async def exit_collected(self, timeout: float = 1.0) -> None:
		"""Until asyncio has collected the exit of a process that has ended (its status for the error)."""
		if self.proc.returncode is None and self._ended_status() is not None:
			with contextlib.suppress(TimeoutError):
				await asyncio.wait_for(asyncio.shield(self.proc.wait()), timeout)

	def reason(self) -> str:
		"""Chromium's own words about why it failed, filtered to the informative lines."""
		lines = [
			line
			for line in self.stderr_tail
			if not line.startswith('[') or 'ERROR' in line or 'FATAL' in line or 'Singleton' in line
		]
		lines = [line for line in lines if 'unexpected operator' not in line]  # Debian wrapper noise
		text = ' | '.join(lines[-6:])
		return text[-1200:]

	def reason_suffix(self) -> str:
		reason = self.reason()
		code = self.exit_status()
		parts = []
		if code is not None:
			parts.append(f'exit status {code}' if code >= 0 else f'killed by signal {-code}')
		if reason:
			parts.append(f'Chromium said: {reason}')
		return (' (' + '; '.join(parts) + ')') if parts else ''

	def tree(self) -> list[psutil.Process]:
		return process_tree(self.pid)

	async def kill(self, graceful_timeout: float = 0.0) -> None:
		"""End the whole process tree; with a timeout, first let Chromium exit by itself."""
		self.stopping = True
		members = self.tree()
		if graceful_timeout > 0 and self.alive():
			with contextlib.suppress(ProcessLookupError):
				self.proc.send_signal(signal.SIGTERM)
			with contextlib.suppress(TimeoutError):
				await asyncio.wait_for(asyncio.shield(self._waiter), graceful_timeout)
		with contextlib.suppress(ProcessLookupError, PermissionError):
			os.killpg(self.pid, signal.SIGKILL)
		for member in members:
			with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
				member.kill()
		with contextlib.suppress(TimeoutError, asyncio.CancelledError):
			await asyncio.wait_for(asyncio.shield(self._waiter), 5)
		self._reader.cancel()
		with contextlib.suppress(asyncio.CancelledError):  # the reader catches everything else itself
			await self._reader
		self.cdp.close()
		await wait_gone(members, timeout=3.0)
		if SIDECAR is not None:
			SIDECAR.untrack(self.pid)
			SIDECAR.untrack_profile(self.profile_dir)


def chromium_args(
	profile: Any, extra: tuple[str, ...] = EXTRA_ARGS, user_args: tuple[str, ...] = (), shared: bool = False
) -> list[str]:
	"""Launch flags: browser-use's own for this profile, plus ours, plus the user's, deduplicated
	(a later flag wins; --disable-features lists are merged). A ``shared`` Chromium (many sessions'
	contexts) keeps its zygote: browser-use's ``--no-zygote`` (unless the user asks for it) made
	every renderer start from scratch instead of forking from it, ~15 MB more PSS per renderer
	(docs/performance.md, "Renderers forked from the zygote"). It keeps the one zygote its renderers
	come from, not the second, unsandboxed one, which forks only utility processes, and these flags
	start none of those (network and GPU run in the browser process): an idle process of ~7-9 MB PSS
	a Chromium. A utility process still needed is then started from the binary instead."""
	extra = (*extra, *user_args)
	base = profile.get_args()
	merged: dict[str, str] = {}
	features: dict[str, list[str]] = {'--disable-features': [], '--enable-features': []}
	for arg in [*base, *extra]:
		key, sep, value = arg.partition('=')
		if key in features:  # Chromium keeps only the last of a repeated switch: merge lists
			features[key].extend(v for v in value.split(',') if v and v not in features[key])
			continue
		merged[key] = arg
	for key, values in features.items():
		if values:
			merged[key] = f'{key}=' + ','.join(values)
	if shared and '--no-zygote' not in user_args:
		merged.pop('--no-zygote', None)
		merged.setdefault('--no-unsandboxed-zygote', '--no-unsandboxed-zygote')
	# DevTools is ours, over a pipe only: no port a page could reach, whoever asked for one
	return [arg for key, arg in merged.items() if key not in DEVTOOLS_SWITCHES]


_DEFAULT_DOWNLOADS_DROPPED = False


def drop_default_downloads_dir() -> None:
	"""Remove the empty downloads directory browser-use makes in the system temp dir when it is
	imported (``DEFAULT_BROWSER_PROFILE``'s, ``/tmp/browser-use-downloads-<id>``): the server never
	uses that profile (every session has its own downloads directory), and each server start would
	otherwise leave one behind, as would every ``doctor`` run. A directory that holds anything is
	kept. Once per process (build_profile calls it too)."""
	global _DEFAULT_DOWNLOADS_DROPPED
	if _DEFAULT_DOWNLOADS_DROPPED:
		return
	_DEFAULT_DOWNLOADS_DROPPED = True
	from browser_use.browser.session import DEFAULT_BROWSER_PROFILE

	path = DEFAULT_BROWSER_PROFILE.downloads_path
	if path is None:
		return
	path = Path(path)
	if path.name.startswith('browser-use-downloads-') and path.parent == Path(tempfile.gettempdir()):
		with contextlib.suppress(OSError):
			path.rmdir()


def build_profile(base: dict[str, Any], dirs: SessionDirs, headless: bool, overrides: dict[str, Any] | None = None) -> Any:
	"""A BrowserProfile for one session: config.json values, our directories, our defaults."""
	from browser_use.browser import BrowserProfile

	from browser_use_mcp.config import UPSTREAM_PROFILE_DEFAULTS

	drop_default_downloads_dir()

	data: dict[str, Any] = {**UPSTREAM_PROFILE_DEFAULTS, **base}
	for key in ('executable_path', 'cdp_url', 'is_local', 'file_system_path', 'use_cloud', 'cloud_browser_params'):
		data.pop(key, None)
	data.update(overrides or {})
	data['user_data_dir'] = str(dirs.profile)
	data['downloads_path'] = str(dirs.downloads)
	data['headless'] = headless
	data['enable_default_extensions'] = False  # never download at start; see cached_extension_args
	if os.geteuid() == 0:
		data['chromium_sandbox'] = False  # Chromium refuses to run sandboxed as root
	return BrowserProfile(**data)


def cached_extension_args() -> list[str]:
	"""browser-use's default extensions, but only those already on disk: a session must never
	wait on, or fail for, a download at start-up."""
	try:
		from browser_use.config import CONFIG

		ext_root = CONFIG.BROWSER_USE_EXTENSIONS_DIR
	except Exception as exc:  # config.json asked for extensions: say why there are none
		logger.warning(
			"browser-use's extensions directory is unknown (%s: %s); starting without extensions", type(exc).__name__, exc
		)
		return []
	if not ext_root.is_dir():
		return []
	paths = [str(p) for p in sorted(ext_root.iterdir()) if (p / 'manifest.json').is_file()]
	if not paths:
		return []
	return [f'--load-extension={",".join(paths)}', '--enable-extensions']
