"""``browser-use-mcp doctor``: is this machine ready to serve browsers, and if not, what to do.

Each check is a plain function returning a ``Check`` (so tests can feed it a broken setup);
``run_checks`` strings them together the way the server would meet them at start-up. Nothing
here changes the machine: directories are probed, not created, and the one browser launched
runs headless on a throw-away profile and is killed before the report is printed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import platform
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Literal, TextIO

from browser_use_mcp import __version__
from browser_use_mcp.browser import find_chromium, is_headless_shell, profile_lock_owner, server_browser, wants_headless_shell
from browser_use_mcp.config import ServerConfig
from browser_use_mcp.install import INSTALL_COMMAND

Status = Literal['ok', 'warn', 'fail', 'skip']
LAUNCH_TIMEOUT = 30.0
CONFIGURED_BROWSER = "--chromium, BROWSER_USE_MCP_CHROMIUM or config.json's executable_path"


@dataclass(frozen=True)
class Check:
	"""One finding: ``fail`` means the server cannot work, ``warn`` that a feature will not."""

	name: str
	status: Status
	summary: str
	fix: str | None = None


# -- the browser ---------------------------------------------------------------------------


def chromium_version(executable: str, timeout: float = 15.0) -> str | None:
	"""What ``--version`` prints (Debian's wrapper script answers it too), or None."""
	try:
		done = subprocess.run(
			[executable, '--version'], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
		)
	except (OSError, subprocess.SubprocessError):
		return None
	lines = [line.strip() for line in done.stdout.splitlines() if line.strip()]
	return lines[-1] if done.returncode == 0 and lines else None


def check_chromium(configured: str | None, shell: bool = False) -> Check:
	"""The browser binary the server would use (``shell``: preferring the headless shell), and its version."""
	found = find_chromium(configured, headless_shell=shell)
	if found is None:
		if configured:
			return Check(
				'Chromium',
				'fail',
				f'the configured browser {configured} does not exist or is not a file',
				f'Fix the path given by {CONFIGURED_BROWSER}, or remove it to use the Chromium found on PATH; '
				f'{INSTALL_COMMAND} installs one.',
			)
		return Check(
			'Chromium',
			'fail',
			'no Chromium or Chrome found',
			f'Install it with one command: {INSTALL_COMMAND} (apt-get; on other systems it says what to do), '
			'or set BROWSER_USE_MCP_CHROMIUM to the browser binary.',
		)
	version = chromium_version(found)
	if version is None:
		return Check(
			'Chromium',
			'warn',
			f'{found} (it did not answer --version)',
			f'Check that {found} runs: `{found} --version`. The launch check below shows whether it can start.',
		)
	if shell and not is_headless_shell(found) and not configured:
		return Check(
			'Chromium',
			'ok',
			f"{found} ({version}); Chromium's headless shell is not installed",
			'Optional: install chromium-headless-shell (the same version) for cheaper headless sessions: '
			'the server then uses it (docs/performance.md, "The headless shell").',
		)
	return Check('Chromium', 'ok', f'{found} ({version})')


UPGRADE_CHROMIUM = 'apt-get update && apt-get install chromium chromium-headless-shell chromium-driver'


def parse_apt_policy(text: str) -> tuple[str | None, str | None]:
	"""(Installed, Candidate) from ``apt-cache policy <package>``; None where apt says ``(none)``."""
	found: dict[str, str | None] = {'Installed': None, 'Candidate': None}
	for line in text.splitlines():
		key, sep, value = line.strip().partition(':')
		if sep and key in found and found[key] is None:
			value = value.strip()
			found[key] = None if not value or value == '(none)' else value
	return found['Installed'], found['Candidate']


def _version_key(version: str) -> tuple[int, ...]:
	"""156.0.8078.79 of a Debian version (epoch and revision dropped), as numbers to compare."""
	upstream = version.split(':', 1)[-1].split('-', 1)[0]
	return tuple(int(part) for part in re.findall(r'\d+', upstream))


def apt_policy(package: str = 'chromium', timeout: float = 20.0) -> str | None:
	"""What ``apt-cache policy`` says of ``package`` (from the package lists as they are), or None."""
	try:
		done = subprocess.run(
			['apt-cache', 'policy', package], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
		)
	except (OSError, subprocess.SubprocessError):
		return None
	return done.stdout if done.returncode == 0 else None


DEBIAN_PACKAGES = {
	'/usr/bin/chromium': 'chromium',
	'/usr/lib/chromium/chromium-headless-shell': 'chromium-headless-shell',
}


def check_chromium_current(policy: str | None, installed: str | None = None) -> Check | None:
	"""A warning when the package manager offers a newer Chromium than the one installed (often
	a security release), with the command that upgrades it; None when it cannot tell."""
	if not policy:
		return None
	listed, candidate = parse_apt_policy(policy)
	installed = listed or installed
	if not installed or not candidate:
		return None
	try:
		older = _version_key(installed) < _version_key(candidate)
	except ValueError:
		return None
	if not older:
		return Check('Chromium current', 'ok', f'{installed} is the newest the package manager offers')
	return Check(
		'Chromium current',
		'warn',
		f'Chromium {installed} is older than {candidate}, which the package manager offers (often a security release)',
		f'Upgrade it (and its driver): {UPGRADE_CHROMIUM}',
	)


def launch_fix(message: str, executable: str) -> str:
	"""Turn Chromium's own complaint into the step most likely to fix it."""
	text = message.lower()
	if 'no usable sandbox' in text or 'setuid sandbox' in text:
		return (
			'Chromium could not set up its sandbox. Run the server as a normal user, or enable unprivileged user '
			'namespaces (sysctl kernel.unprivileged_userns_clone=1); as a last resort set "chromium_sandbox": false '
			"in config.json's browser profile."
		)
	if 'error while loading shared libraries' in text:
		return 'Chromium is missing system libraries: install the distribution package (apt-get install chromium).'
	if 'missing x server' in text or 'cannot open display' in text:
		return 'Chromium wants a display: run headless (the default without one) or under xvfb-run.'
	if 'socket path too long' in text:
		return (
			'Chromium puts a socket under TMPDIR and the path is too long for a Unix socket (107 bytes): start the '
			'server with a short TMPDIR, e.g. TMPDIR=/tmp.'
		)
	if 'singleton' in text or 'profile' in text and 'in use' in text:
		return 'Another Chromium holds the profile: close it, or use a named session (each has its own profile).'
	if 'did not open its devtools endpoint' in text:
		return 'The machine may be overloaded or Chromium hangs at start-up; retry, and check `top` for stuck browsers.'
	return (
		f'Run it by hand to see its full output: `{executable} --headless=new --dump-dom about:blank`; or point '
		'BROWSER_USE_MCP_CHROMIUM at another Chrome/Chromium.'
	)


def scratch_dirs() -> Any:
	"""A throw-away session's directories (the caller removes them), for a browser doctor launches."""
	from browser_use_mcp.browser import SessionDirs

	root = Path(tempfile.mkdtemp(prefix='browser-use-mcp-doctor-'))
	dirs = SessionDirs(profile=root / 'profile', downloads=root / 'downloads', files=root / 'files', root=root)
	for path in (dirs.profile, dirs.downloads, dirs.files):
		path.mkdir(mode=0o700)
	return dirs


async def check_launch(
	executable: str | None,
	profile_base: Mapping[str, Any] | None = None,
	timeout: float = LAUNCH_TIMEOUT,
	user_args: tuple[str, ...] = (),
) -> Check:
	"""Start the browser exactly as a session would (same launcher, flags and profile settings),
	headless and on a throw-away profile, then end it."""
	from browser_use_mcp.browser import ChromiumProcess, Owner, build_profile, chromium_args
	from browser_use_mcp.errors import BrowserStartFailed

	name = 'Chromium launch'
	if not executable:
		return Check(name, 'skip', 'no browser to launch')
	dirs = scratch_dirs()
	try:
		try:
			profile = build_profile(dict(profile_base or {}), dirs, headless=True)
		except Exception as exc:
			return Check(
				name,
				'fail',
				f"config.json's browser profile is not valid: {str(exc).splitlines()[0]}",
				'Fix or remove the offending key in the browser_profile entry of config.json '
				'(BROWSER_USE_CONFIG_DIR, default ~/.config/browseruse).',
			)
		started = time.monotonic()
		try:
			chromium = await ChromiumProcess.launch(
				executable, chromium_args(profile, user_args=user_args), dirs.profile, Owner.current(), timeout
			)
		except BrowserStartFailed as exc:
			return Check(name, 'fail', exc.message, launch_fix(exc.message, executable))
		try:
			ready = time.monotonic() - started
			product = chromium.product or 'browser'  # its own name for itself, read over the DevTools pipe
		finally:
			await chromium.kill()
		return Check(name, 'ok', f'{product}, headless, DevTools ready over its pipe in {ready:.1f} s')
	finally:
		dirs.remove()


def ui_switches(cmdline: list[str]) -> list[str]:
	"""The switches that make a Chromium renderer one of browser UI (``--top-chrome-webui``, ...)."""
	found = []
	for arg in cmdline:
		name = arg.split('=', 1)[0].lower()
		if name.startswith('--') and ('webui' in name or 'top-chrome' in name):
			found.append(arg)
	return found


def renderer_cmdlines(procs: list[Any]) -> list[list[str]]:
	"""The command lines of the renderers among ``procs`` (psutil processes; gone ones are skipped)."""
	import psutil

	found = []
	for proc in procs:
		try:
			cmdline = proc.cmdline()
		except psutil.Error:
			continue
		if '--type=renderer' in cmdline:
			found.append(cmdline)
	return found


UI_RENDERERS_FIX = (
	'This Chromium builds browser UI (WebUI) for every window, and every session has a window: find the '
	'feature behind the pages named above and turn it off with --disable-features=<Feature> in '
	'BROWSER_USE_MCP_CHROMIUM_ARGS, or use another Chromium; please report its version to the project.'
)


async def check_context_renderers(
	executable: str | None,
	profile_base: Mapping[str, Any] | None = None,
	timeout: float = LAUNCH_TIMEOUT,
	user_args: tuple[str, ...] = (),
	contexts: int = 2,
) -> Check:
	"""Open ``contexts`` browser contexts with one blank tab each, as sessions get them, in a browser
	launched as a session's is, and count its renderers: one per tab is the cost of a session; a
	renderer of browser UI (Chromium 156's omnibox popup WebUI, before the launch flags turned it
	off) is paid by every session for nothing."""
	from browser_use_mcp.browser import ChromiumProcess, Owner, build_profile, chromium_args
	from browser_use_mcp.errors import BrowserStartFailed
	from browser_use_mcp.providers.cdp_client import CdpConnection, CdpError

	name = 'Renderers per session'
	if not executable:
		return Check(name, 'skip', 'no browser to launch')
	dirs = scratch_dirs()
	try:
		try:
			profile = build_profile(dict(profile_base or {}), dirs, headless=True)
			chromium = await ChromiumProcess.launch(
				executable, chromium_args(profile, user_args=user_args, shared=True), dirs.profile, Owner.current(), timeout
			)
		except (BrowserStartFailed, ValueError) as exc:
			return Check(name, 'skip', f'the browser did not start ({str(exc).splitlines()[0][:200]})')
		try:
			connection = CdpConnection(await asyncio.wait_for(chromium.cdp.open_channel(), timeout))
			try:
				product = (await connection.send('Browser.getVersion')).get('product', 'the browser')
				for target in (await connection.send('Target.getTargets')).get('targetInfos', []):
					if target.get('type') == 'page':  # the start-up tab, as a shared Chromium closes it
						await connection.send('Target.closeTarget', {'targetId': target['targetId']})
				for _ in range(contexts):
					context = (await connection.send('Target.createBrowserContext', {'disposeOnDetach': False}))[
						'browserContextId'
					]
					await connection.send('Target.createTarget', {'url': 'about:blank', 'browserContextId': context})
				await asyncio.sleep(2.0)  # browser UI is built just after its window opens (well under 1 s here)
				renderers = renderer_cmdlines(chromium.tree())
				targets = (await connection.send('Target.getTargets')).get('targetInfos', [])
			finally:
				await connection.close()
		except (CdpError, OSError, TimeoutError) as exc:
			return Check(name, 'skip', f'could not drive the browser over CDP ({exc})')
		finally:
			await chromium.kill()
	finally:
		dirs.remove()
	ui = [r for r in renderers if ui_switches(r)]
	ui_pages = sorted({t.get('url', '') for t in targets if t.get('type') == 'browser_ui' or 'top-chrome' in t.get('url', '')})
	counted = f'{product}: {contexts} contexts with one tab each started {len(renderers)} renderer(s)'
	if ui or len(renderers) > contexts + 1:
		what = f', {len(ui)} of them browser UI ({", ".join(sorted({s for r in ui for s in ui_switches(r)}))})' if ui else ''
		pages = f'; browser-UI pages: {", ".join(ui_pages[:4])}' if ui_pages else ''
		return Check(name, 'warn', f'{counted}{what}{pages}: each session pays for more than its tabs', UI_RENDERERS_FIX)
	return Check(name, 'ok', f'{counted}, none of browser UI')


# -- the machine ---------------------------------------------------------------------------


def has_display(env: Mapping[str, str]) -> bool:
	return sys.platform in ('darwin', 'win32') or bool(env.get('DISPLAY') or env.get('WAYLAND_DISPLAY'))


def check_display(headless: bool, env: Mapping[str, str] | None = None) -> Check:
	"""Headed mode needs a screen; headless needs nothing."""
	env = os.environ if env is None else env
	display = env.get('WAYLAND_DISPLAY') or env.get('DISPLAY') or ''
	if headless:
		extra = f'; a display ({display}) is present, --headed would show the windows' if display else ''
		return Check('display', 'ok', f'headless mode, no display needed{extra}')
	if has_display(env):
		return Check('display', 'ok', f'headed mode on display {display or "(system)"}')
	return Check(
		'display',
		'fail',
		'headed mode was chosen (--headed, BROWSER_USE_HEADLESS=false or config.json "headless": false) but there is '
		'no display (DISPLAY and WAYLAND_DISPLAY are unset): every session would fail to start',
		'Drop --headed / set BROWSER_USE_HEADLESS=true, or give it a virtual display: xvfb-run browser-use-mcp',
	)


def check_cpu_priority(config: ServerConfig) -> Check:
	"""Whether the browsers can run below the server and busy renderers yield (``busy.py``): needs
	Linux, and the right to give a thread its priority back (CAP_SYS_NICE or RLIMIT_NICE)."""
	from browser_use_mcp import busy

	name = 'cpu priority'
	if not sys.platform.startswith('linux'):
		return Check(name, 'skip', "browsers run at the server's priority (niceness and autogroups are Linux-only)")
	base, busy_nice = config.chromium_nice, config.busy_renderer_nice
	below = f'browsers at niceness {base} below the server' if base else "browsers at the server's priority"
	if busy_nice <= 0:
		return Check(name, 'ok', f'{below}; busy renderers do not yield (BROWSER_USE_MCP_BUSY_RENDERER_NICE=0)')
	if busy.can_restore(busy_nice, base):
		return Check(name, 'ok', f'{below}; a renderer that keeps a core busy yields (niceness {busy_nice}) until calm')
	return Check(
		name,
		'warn',
		f'{below}; renderers that keep a core busy are not lowered in shared Chromiums: this server may not give a '
		f'thread its priority back (niceness {busy_nice} -> {base} needs CAP_SYS_NICE or RLIMIT_NICE >= {20 - base}), '
		"so light sessions wait behind heavy pages' renderers",
		f'Allow it: docker run --cap-add SYS_NICE, systemd LimitNICE={20 - base}, or prlimit --nice={20 - base}; '
		'or set BROWSER_USE_MCP_BUSY_RENDERER_NICE=0 to silence this',
	)


def check_profile_lock(profile: Path) -> Check:
	"""Whether another browser holds the persistent profile the default session would use."""
	import psutil

	name = 'profile lock'
	if not profile.exists():
		return Check(name, 'ok', f'{profile} does not exist yet (created on first use)')
	pid = profile_lock_owner(profile)
	if pid is None:
		return Check(name, 'ok', f'{profile} is not locked')
	who = f'PID {pid}'
	try:
		proc = psutil.Process(pid)
		who += f' ({proc.name()}, started {time.strftime("%Y-%m-%d %H:%M", time.localtime(proc.create_time()))})'
	except psutil.Error:
		host = _lock_host(profile)
		if host and host != socket.gethostname():
			who += f' on host {host}'
	return Check(
		name,
		'warn',
		f'{profile} is locked by {who}: the default session will use a temporary profile (no saved logins)',
		f'Close that browser (e.g. `kill {pid}`) to give the default session this profile back. Named sessions are '
		'not affected: each has its own fresh profile anyway.',
	)


def _lock_host(profile: Path) -> str | None:
	try:
		return os.readlink(profile / 'SingletonLock').rpartition('-')[0] or None
	except OSError:
		return None


def writable_problem(path: Path) -> str | None:
	"""Why ``path`` cannot be used as a directory we write to, or None. Probes, creates nothing
	that stays: the nearest existing ancestor must be a directory that takes a file."""
	target = path
	while not target.exists() and target.parent != target:
		target = target.parent
	if not target.is_dir():
		return f'{target} is not a directory'
	try:
		with tempfile.TemporaryFile(dir=target):
			pass
	except OSError as exc:
		return f'{target} is not writable ({exc.strerror or exc})'
	return None


def check_writable(name: str, path: Path, *, required: bool, fix: str) -> Check:
	problem = writable_problem(path)
	if problem is None:
		state = 'writable' if path.exists() else 'will be created'
		return Check(name, 'ok', f'{path} ({state})')
	return Check(name, 'fail' if required else 'warn', f'{path}: {problem}', fix)


def check_state_dirs(config: ServerConfig) -> list[Check]:
	"""Every directory the server writes to; only the state dir is essential."""
	return [
		check_writable(
			'state directory',
			config.state_dir,
			required=True,
			fix='Temporary profiles live here. Point --state-dir (or BROWSER_USE_MCP_STATE_DIR) at a writable directory.',
		),
		check_writable(
			'default profile dir',
			config.default_user_data_dir,
			required=False,
			fix="Fix its permissions or set user_data_dir in config.json's browser profile; meanwhile the default "
			'session uses a temporary profile.',
		),
		check_writable(
			'downloads dir',
			config.default_downloads_dir,
			required=False,
			fix="The default session's downloads go here: fix its permissions or set downloads_path in config.json.",
		),
		check_writable(
			'files dir',
			config.default_files_dir,
			required=False,
			fix="The default session's FileSystem lives here: fix its permissions or set file_system_path in config.json.",
		),
	]


# -- the software --------------------------------------------------------------------------


def check_llm(settings: Mapping[str, Any], env: Mapping[str, str] | None = None) -> Check:
	"""Which model the extraction and agent tools would use; never prints a key."""
	from browser_use_mcp.llm import PROVIDERS, describe

	env = os.environ if env is None else env
	name = 'LLM (agent tools)'
	provider, problem = describe(settings, env)
	if problem:
		return Check(
			name,
			'warn',
			'browser_extract_content and retry_with_browser_use_agent will return an error; every other tool works',
			problem,
		)
	if provider == 'factory':
		return Check(name, 'ok', f'from BROWSER_USE_MCP_LLM_FACTORY={env.get("BROWSER_USE_MCP_LLM_FACTORY")}')
	default = PROVIDERS[provider].default_model if provider in PROVIDERS else '?'
	model = settings.get('model') or env.get('BROWSER_USE_LLM_MODEL') or default
	return Check(name, 'ok', f'{provider}, model {model}')


_PIN = re.compile(r'^\s*([A-Za-z0-9_.-]+)\s*==\s*([^\s;,]+)')


def pinned_versions() -> dict[str, str]:
	"""What this package was tested with (its exact pins), if it is installed as a package."""
	try:
		requirements = metadata.requires('browser-use-mcp') or []
	except metadata.PackageNotFoundError:
		return {}
	pins = {}
	for requirement in requirements:
		match = _PIN.match(requirement)
		if match and 'extra ==' not in requirement:
			pins[match.group(1).lower()] = match.group(2)
	return pins


def check_versions(pins: Mapping[str, str] | None = None) -> list[Check]:
	pins = pinned_versions() if pins is None else pins
	checks = []
	for dist in ('browser-use', 'mcp'):
		try:
			installed = metadata.version(dist)
		except metadata.PackageNotFoundError:
			checks.append(
				Check(
					dist,
					'fail',
					'not installed',
					'Install the dependencies: pip install browser-use-mcp (from a clone: ./scripts/setup.sh)',
				)
			)
			continue
		wanted = pins.get(dist)
		if wanted and wanted != installed:
			checks.append(
				Check(
					dist,
					'warn',
					f'{installed} installed, but this release is tested with {wanted}',
					'Reinstall the tested versions: ./scripts/setup.sh (or pip install -e . in the project).',
				)
			)
		else:
			checks.append(Check(dist, 'ok', installed))
	return checks


PATCH_FIX = (
	'Install the versions this release was written for: ./scripts/setup.sh (or pip install -e . in the project). '
	'After a deliberate upgrade, port the patch and update its pins (docs/architecture.md, "Patches").'
)


def check_patches(config: ServerConfig, patch_list: list[Any] | None = None) -> list[Check]:
	"""What the server will make of each of its patches to browser-use and its dependencies, under
	``config``: active, off (by configuration) or refused (the installed package differs). Nothing
	is applied here."""
	from browser_use_mcp import patches

	checks = []
	for patch in patches.all_patches() if patch_list is None else patch_list:
		status = patches.preview(patch, config)
		name = f'patch {patch.name}'
		if status.state == 'active':
			checks.append(Check(name, 'ok', f'active: {patch.title}'))
		elif status.state == 'off':
			checks.append(Check(name, 'ok', f'off by configuration ({status.reason}): {patch.when_refused}'))
		else:
			checks.append(Check(name, 'warn', f'refused ({status.reason}): {patch.when_refused}', PATCH_FIX))
	return checks


def check_private_reads() -> Check:
	"""Whether the few private attributes of browser-use and cdp-use the server reads are still
	what it was written for."""
	from browser_use_mcp.patches import internals

	refused = {read.name: read.problems() for read in internals.READS}
	refused = {name: found for name, found in refused.items() if found}
	if not refused:
		return Check('private reads', 'ok', f'{len(internals.READS)} reads of dependency internals match their pins')
	by_name = {read.name: read for read in internals.READS}
	summary = '; '.join(f'{name} refused ({"; ".join(found)}): {by_name[name].fallback}' for name, found in refused.items())
	return Check('private reads', 'warn', summary, PATCH_FIX)


# -- the report ----------------------------------------------------------------------------


# -- a Selenium Grid -----------------------------------------------------------------------

GRID_START = 'Start it (java -jar selenium-server-<version>.jar standalone) or fix --grid-url; see docs/grid.md'


def _grid_request(url: str, method: str = 'GET', body: Any = None, timeout: float = 10.0) -> Any:
	data = json.dumps(body).encode() if body is not None else None
	from browser_use_mcp.providers.grid import JSON_HEADERS

	request = urllib.request.Request(url, data=data, method=method, headers=JSON_HEADERS)
	opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
	try:
		with opener.open(request, timeout=timeout) as reply:
			return json.loads(reply.read()).get('value')
	except urllib.error.HTTPError as exc:  # a WebDriver error: its message says why
		try:
			value = json.loads(exc.read()).get('value') or {}
			detail = (value.get('message') or '').strip().splitlines()[0][:300]
		except Exception:
			detail = ''
		raise OSError(f'HTTP {exc.code}: {detail or exc.reason}') from None


def check_grid(url: str, capabilities: Mapping[str, Any], headless: bool = True) -> list[Check]:
	"""The configured Grid: answers, is ready, has a Chrome slot, and gives a working CDP endpoint."""
	from browser_use_mcp.providers.grid import grid_capabilities, grid_summary, plan_request

	base = url.rstrip('/')
	try:
		status = _grid_request(base + '/status', timeout=5.0) or {}
	except (OSError, ValueError) as exc:
		return [Check('grid', 'fail', f'nothing answers at {url}: {exc}', GRID_START)]
	ready, slots, busy, message = grid_summary(status)
	checks = [Check('grid', 'ok', f'{url} answers')]
	if not ready:
		checks.append(
			Check(
				'grid ready',
				'fail',
				f'the Grid is not ready: {message or "no reason given"}',
				'Wait for its nodes to register, or check their logs',
			)
		)
		return checks
	checks.append(Check('grid ready', 'ok', message or 'ready'))
	if not slots:
		checks.append(
			Check(
				'grid chrome',
				'fail',
				'no node offers Chrome or Chromium',
				'Add a node with Chrome/Chromium and its chromedriver (docs/grid.md shows a node configuration)',
			)
		)
		return checks
	checks.append(Check('grid chrome', 'ok', f'{slots} Chrome slot(s), {busy} busy'))
	plan = plan_request(url, status, grid_capabilities(session_args(headless), dict(capabilities)), dict(capabilities))
	if plan.problem:
		checks.append(Check('grid CDP', 'fail', plan.problem, 'Match --grid-capabilities to a node (docs/grid.md)'))
		return checks
	started = time.monotonic()
	try:
		value = _grid_request(base + '/session', 'POST', {'capabilities': {'alwaysMatch': plan.caps}}, timeout=60.0)
	except (OSError, ValueError) as exc:
		checks.append(
			Check('grid CDP', 'fail', f'could not start a browser: {exc}', 'Check --grid-capabilities and the node logs')
		)
		return checks
	session = value['sessionId']
	try:
		returned = value.get('capabilities') or {}
		cdp = returned.get('se:cdp')
		if not cdp:
			checks.append(
				Check('grid CDP', 'fail', 'the Grid gives no CDP endpoint (no se:cdp)', 'Use Grid 4 with Chrome/Chromium nodes')
			)
			return checks
		from browser_use_mcp.providers.grid import reachable_cdp_url

		product = _cdp_product(reachable_cdp_url(base, cdp))
		checks.append(
			Check('grid CDP', 'ok', f'{product} over CDP through the Grid, ready in {time.monotonic() - started:.1f} s')
		)
		if returned.get('se:downloadsEnabled'):
			checks.append(Check('grid downloads', 'ok', 'managed downloads on: files come back to the session'))
		else:
			checks.append(
				Check(
					'grid downloads',
					'warn',
					"managed downloads are off: downloaded files stay on the node and never reach the session's "
					'downloads directory (sessions work; their first download says so)',
					'Start the nodes with --enable-managed-downloads true',
				)
			)
	except (OSError, ValueError, TimeoutError) as exc:
		checks.append(
			Check('grid CDP', 'fail', f'could not speak CDP through the Grid: {exc}', 'Check that the Grid forwards websockets')
		)
	finally:
		try:  # a node's chromedriver can take a while to quit its browser on a loaded machine
			_grid_request(f'{base}/session/{session}', 'DELETE', timeout=30.0)
		except (OSError, ValueError) as exc:
			checks.append(
				Check(
					'grid cleanup',
					'warn',
					f'the test browser (Grid session {session}) could not be ended: {exc}',
					f"End it with DELETE {base}/session/{session}, or let the Grid's --session-timeout reclaim it",
				)
			)
	return checks


def session_args(headless: bool) -> list[str]:
	"""The Chromium flags a session would get (its paths are left out for a Grid anyway)."""
	from browser_use_mcp.browser import SessionDirs, build_profile, chromium_args

	scratch = Path(tempfile.gettempdir()) / 'browser-use-mcp-doctor'
	return chromium_args(build_profile({}, SessionDirs(scratch, scratch, scratch), headless))


def _cdp_product(ws_url: str) -> str:
	from websockets.sync.client import connect

	with connect(ws_url, open_timeout=10, max_size=None) as socket:
		socket.send(json.dumps({'id': 1, 'method': 'Browser.getVersion'}))
		while True:
			reply = json.loads(socket.recv(timeout=10))
			if reply.get('id') == 1:
				return reply.get('result', {}).get('product', 'a browser')


def run_checks(config: ServerConfig, env: Mapping[str, str] | None = None, launch: bool = True) -> list[Check]:
	"""All checks in the order the server meets them."""
	env = os.environ if env is None else env
	shell = wants_headless_shell(config)
	browser = check_chromium(config.executable_path, shell)
	checks = [browser]
	found = server_browser(config) if browser.status != 'fail' else None
	# Debian's packages only: apt says nothing of another browser's version
	package = DEBIAN_PACKAGES.get(os.path.realpath(found)) if found else None
	current = check_chromium_current(apt_policy(package)) if package else None
	if current is not None:
		checks.append(current)
	on_grid = bool(config.grid_url) and config.grid_default_session == 'grid'
	if on_grid and browser.status == 'fail':  # every browser runs on the Grid: a local one is optional
		checks = [Check(browser.name, 'skip', f'{browser.summary} (not needed: every session runs on the Grid)')]
		launch = False
	if launch:
		executable = found
		checks.append(asyncio.run(check_launch(executable, config.browser_profile, user_args=config.chromium_args)))
		if checks[-1].status == 'ok':
			checks.append(
				asyncio.run(check_context_renderers(executable, config.browser_profile, user_args=config.chromium_args))
			)
	if config.grid_url:
		checks.extend(check_grid(config.grid_url, config.grid_capabilities, config.headless))
	if config.auth == 'oauth':
		checks.append(asyncio.run(check_oauth_issuer(config)))
	checks.append(check_display(config.headless, env))
	checks.append(check_cpu_priority(config))
	checks.append(check_profile_lock(config.default_user_data_dir))
	checks.extend(check_state_dirs(config))
	checks.append(check_llm(config.llm, env))
	checks.extend(check_versions())
	checks.extend(check_patches(config))
	checks.append(check_private_reads())
	from browser_use_mcp.browser import drop_default_downloads_dir

	with contextlib.suppress(Exception):  # browser-use is imported by now: its empty /tmp dir goes
		drop_default_downloads_dir()
	return checks


async def check_oauth_issuer(config: ServerConfig) -> Check:
	"""--auth oauth: the issuer's metadata and keys load, as the server loads them at start."""
	from browser_use_mcp.oauth import IssuerUnavailable, JwtVerifier
	from browser_use_mcp.transports.http import oauth_settings

	name = 'OAuth issuer'
	verifier = JwtVerifier(oauth_settings(config))
	try:
		await verifier.discover()
	except IssuerUnavailable as exc:
		return Check(
			name,
			'fail',
			f'cannot load the keys of {config.oauth_issuer}: {exc}',
			'check --issuer (exactly as the provider names itself) and that this machine reaches it',
		)
	finally:
		await verifier.close()
	return Check(
		name,
		'ok',
		f'{verifier.issuer}: {verifier.key_count} signing key(s) ({", ".join(verifier.algorithms)}) from {verifier.jwks_uri}',
	)


def exit_code(checks: list[Check]) -> int:
	"""Non-zero exactly when the server cannot work; warnings cost features, not the server."""
	return 1 if any(c.status == 'fail' for c in checks) else 0


def format_report(checks: list[Check]) -> str:
	width = max(len(c.name) for c in checks)
	lines = [
		f'browser-use-mcp doctor (browser-use-mcp {__version__}, Python {platform.python_version()}, {sys.platform})',
		'',
	]
	for check in checks:
		lines.append(f'  {check.status:<4}  {check.name:<{width}}  {check.summary}')
		if check.fix and check.status in ('warn', 'fail'):
			lines.append(f'  {"":<4}  {"":<{width}}  fix: {check.fix}')
	failures = sum(c.status == 'fail' for c in checks)
	warnings = sum(c.status == 'warn' for c in checks)
	lines.append('')
	if failures:
		lines.append(f'The server cannot work here yet: {failures} problem(s), {warnings} warning(s). Apply the fixes above.')
	else:
		lines.append(f'The server can run: no problems, {warnings} warning(s).')
	return '\n'.join(lines)


def run_doctor(config: ServerConfig, out: TextIO | None = None, env: Mapping[str, str] | None = None) -> int:
	checks = run_checks(config, env)
	print(format_report(checks), file=out or sys.stdout)
	return exit_code(checks)
