"""doctor's checks, each in the case it passes and the case it must catch; and Chromium's own
words reaching the user, both in doctor's report and in a real tool error from the server."""

from __future__ import annotations

import dataclasses
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from browser_use_mcp.config import ServerConfig
from browser_use_mcp.doctor import (
	Check,
	check_chromium,
	check_context_renderers,
	check_display,
	check_launch,
	check_llm,
	check_patches,
	check_private_reads,
	check_profile_lock,
	check_versions,
	check_writable,
	exit_code,
	format_report,
	run_checks,
	run_doctor,
	ui_switches,
)
from harness.servers import REPO, TEST_CHROMIUM_ARGS, owned_processes, running_server, server_env, wait_until

REASON = 'fake-chromium: cannot open /dev/dri/card0: permission denied'


@pytest.fixture
def broken_chromium(tmp_path: Path) -> str:
	"""A 'browser' that explains itself on stderr and exits 1, as a broken Chromium does."""
	script = tmp_path / 'broken-chromium'
	script.write_text(f'#!/bin/sh\necho "{REASON}" >&2\nexit 1\n')
	script.chmod(0o755)
	return str(script)


def config_in(tmp_path: Path, **overrides: object) -> ServerConfig:
	"""A configuration whose every directory is inside tmp_path (nothing of the user's is probed)."""
	values: dict[object, object] = dict(
		state_dir=tmp_path / 'state',
		default_user_data_dir=tmp_path / 'profiles' / 'default',
		default_downloads_dir=tmp_path / 'downloads',
		default_files_dir=tmp_path / 'files',
		headless=True,
		chromium_args=TEST_CHROMIUM_ARGS,
	)
	values.update(overrides)
	return ServerConfig(**values)  # type: ignore[arg-type]


# -- the whole report ----------------------------------------------------------------------


def test_all_checks_pass_on_a_working_machine(tmp_path: Path) -> None:
	checks = run_checks(config_in(tmp_path), env={})
	by_name = {c.name: c for c in checks}
	assert [c for c in checks if c.status == 'fail'] == []
	assert by_name['Chromium'].status == 'ok'
	assert by_name['Chromium launch'].status == 'ok'
	assert 'DevTools ready' in by_name['Chromium launch'].summary
	assert by_name['Renderers per session'].status == 'ok', by_name['Renderers per session']
	assert by_name['LLM (agent tools)'].status == 'warn'  # env={} has no key: a warning, not a failure
	assert by_name['patch bus_locks'].summary.startswith('active') and by_name['private reads'].status == 'ok'
	assert exit_code(checks) == 0
	assert not (tmp_path / 'state').exists(), 'doctor probes directories, it does not create them'
	assert not (tmp_path / 'profiles').exists()


def test_missing_browser_fails_the_report(tmp_path: Path) -> None:
	config = config_in(tmp_path, executable_path=str(tmp_path / 'no-such-chrome'))
	out = _Out()
	assert run_doctor(config, out=out, env={}) == 1
	report = out.text
	assert 'fail  Chromium ' in report
	assert 'BROWSER_USE_MCP_CHROMIUM' in report
	assert 'skip  Chromium launch' in report
	assert 'cannot work here yet' in report


def test_doctor_command_exit_codes(tmp_path: Path) -> None:
	scratch = tmp_path / 'tmp'  # the system temp dir of the command (Chromium's own is kept short)
	scratch.mkdir()
	env = server_env(tmp_path / 'home', TMPDIR=str(scratch))
	bad = subprocess.run(
		[sys.executable, '-m', 'browser_use_mcp', 'doctor', '--chromium', str(tmp_path / 'nope')],
		capture_output=True,
		text=True,
		env=env,
		cwd=REPO,
		timeout=120,
	)
	assert bad.returncode == 1, bad.stdout + bad.stderr
	assert 'fix:' in bad.stdout
	good = subprocess.run(
		[sys.executable, '-m', 'browser_use_mcp', 'doctor'], capture_output=True, text=True, env=env, cwd=REPO, timeout=120
	)
	assert good.returncode == 0, good.stdout + good.stderr
	assert 'The server can run' in good.stdout
	# browser-use makes a downloads dir in the temp dir as it is imported: doctor removes it too
	assert list(scratch.glob('browser-use-downloads-*')) == []


class _Out:
	def __init__(self) -> None:
		self.text = ''

	def write(self, text: str) -> int:
		self.text += text
		return len(text)

	def flush(self) -> None:
		pass


# -- one check at a time -------------------------------------------------------------------


def test_chromium_found_and_versioned() -> None:
	check = check_chromium(None)
	assert check.status == 'ok', check
	assert any(ch.isdigit() for ch in check.summary)


def test_chromium_configured_but_missing(tmp_path: Path) -> None:
	check = check_chromium(str(tmp_path / 'chrome'))
	assert check.status == 'fail'
	assert check.fix and 'BROWSER_USE_MCP_CHROMIUM' in check.fix


async def test_launch_failure_reports_chromiums_own_reason(broken_chromium: str) -> None:
	check = await check_launch(broken_chromium)
	assert check.status == 'fail'
	assert REASON in check.summary
	assert 'exit status 1' in check.summary
	assert check.fix


async def test_launch_without_browser_is_skipped() -> None:
	assert (await check_launch(None)).status == 'skip'


# The omnibox popup WebUI that Chromium 156 builds for every window (the launch flags turn it off)
OMNIBOX_WEBUI = ('WebUIOmniboxPopup', 'WebUIOmniboxAimPopup')


def chromium_major() -> int:
	from browser_use_mcp.browser import find_chromium
	from browser_use_mcp.doctor import chromium_version

	version = chromium_version(find_chromium(os.environ.get('BROWSER_USE_MCP_CHROMIUM')) or '') or ''
	digits = re.search(r'(\d+)\.\d+\.\d+', version)
	return int(digits.group(1)) if digits else 0


async def test_context_renderers_one_per_session() -> None:
	from browser_use_mcp.browser import find_chromium

	check = await check_context_renderers(find_chromium(os.environ.get('BROWSER_USE_MCP_CHROMIUM')), user_args=TEST_CHROMIUM_ARGS)
	assert check.status == 'ok', check
	assert '2 renderer(s)' in check.summary and 'Chrome/' in check.summary, check.summary


async def test_context_renderers_warns_about_browser_ui(monkeypatch: pytest.MonkeyPatch) -> None:
	"""Without the flags that turn it off, Chromium 156 starts a browser-UI renderer per context:
	doctor must say so (older versions have no such UI, and stay ok)."""
	import browser_use_mcp.browser as browser
	from browser_use_mcp.browser import find_chromium

	shipped = browser.chromium_args

	def without_the_fix(*args: object, **kwargs: object) -> list[str]:
		out = []
		for arg in shipped(*args, **kwargs):  # type: ignore[arg-type]
			if arg.startswith('--disable-features='):
				kept = [f for f in arg.split('=', 1)[1].split(',') if f not in OMNIBOX_WEBUI]
				arg = '--disable-features=' + ','.join(kept)
			out.append(arg)
		return out

	monkeypatch.setattr(browser, 'chromium_args', without_the_fix)
	check = await check_context_renderers(find_chromium(os.environ.get('BROWSER_USE_MCP_CHROMIUM')), user_args=TEST_CHROMIUM_ARGS)
	if chromium_major() < 156:
		assert check.status == 'ok', check
		return
	assert check.status == 'warn', check
	assert '--top-chrome-webui' in check.summary and 'omnibox-popup' in check.summary, check.summary
	assert check.fix and '--disable-features' in check.fix


def test_ui_switches() -> None:
	assert ui_switches(['chromium', '--type=renderer', '--top-chrome-webui', '--lang=en']) == ['--top-chrome-webui']
	assert ui_switches(['--webui-x=1']) == ['--webui-x=1']
	assert ui_switches(['--type=renderer', '--disable-features=WebUIOmniboxPopup']) == []


def test_display() -> None:
	assert check_display(True, {}).status == 'ok'
	if sys.platform.startswith('linux'):
		headed = check_display(False, {})
		assert headed.status == 'fail'
		assert headed.fix and '--headed' in headed.fix
	assert check_display(False, {'DISPLAY': ':0'}).status == 'ok'


def test_profile_lock(tmp_path: Path) -> None:
	profile = tmp_path / 'default'
	assert check_profile_lock(profile).status == 'ok'  # does not exist yet
	profile.mkdir()
	assert check_profile_lock(profile).status == 'ok'
	os.symlink(f'{socket.gethostname()}-{os.getpid()}', profile / 'SingletonLock')  # as Chromium writes it
	locked = check_profile_lock(profile)
	assert locked.status == 'warn'
	assert f'PID {os.getpid()}' in locked.summary
	assert locked.fix and f'kill {os.getpid()}' in locked.fix


def test_writable(tmp_path: Path) -> None:
	assert check_writable('x', tmp_path / 'new' / 'dir', required=True, fix='f').status == 'ok'
	assert not (tmp_path / 'new').exists(), 'probing must not create directories'
	blocker = tmp_path / 'a-file'
	blocker.write_text('')
	required = check_writable('state', blocker / 'state', required=True, fix='point it elsewhere')
	assert required.status == 'fail' and required.fix == 'point it elsewhere'
	assert 'not a directory' in required.summary
	assert check_writable('downloads', blocker / 'dl', required=False, fix='f').status == 'warn'


def test_llm_key() -> None:
	missing = check_llm({}, {})
	assert missing.status == 'warn'
	assert missing.fix and 'OPENAI_API_KEY' in missing.fix
	present = check_llm({}, {'OPENAI_API_KEY': 'sk-test-secret-123'})
	assert present.status == 'ok' and 'openai' in present.summary
	assert 'sk-test-secret-123' not in present.summary


def test_versions() -> None:
	assert all(c.status == 'ok' for c in check_versions()), check_versions()
	drift = check_versions({'mcp': '0.0.1'})
	assert {c.name: c.status for c in drift}['mcp'] == 'warn'


def test_patches_are_listed_active_off_or_refused(tmp_path: Path) -> None:
	from browser_use_mcp import patches
	from browser_use_mcp.patches import bus_locks

	names = [f'patch {p.name}' for p in patches.all_patches()]
	shipped = check_patches(config_in(tmp_path))
	assert [c.name for c in shipped] == names
	assert all(c.status == 'ok' and c.summary.startswith('active: ') for c in shipped), shipped
	switched = {c.name: c for c in check_patches(config_in(tmp_path, fast_actions=False, quiet_blank_tabs=False))}
	off = switched['patch click_settle']
	assert off.status == 'ok' and off.summary.startswith('off by configuration (BROWSER_USE_MCP_FAST_ACTIONS=false)')
	assert 'fixed waits' in off.summary  # what the server does instead
	assert switched['patch blank_tab_animation'].summary.startswith('off by configuration')
	assert switched['patch bus_locks'].summary.startswith('active')
	[refused] = check_patches(config_in(tmp_path), [dataclasses.replace(bus_locks.PATCH, versions=('0.0.1',))])
	assert refused.status == 'warn' and refused.summary.startswith('refused (bubus is 1.5.6, this was written for 0.0.1)')
	assert 'process-wide lock' in refused.summary and refused.fix and './scripts/setup.sh' in refused.fix
	report = format_report(run_checks(config_in(tmp_path, parallel_event_buses=False), env={}, launch=False))
	assert 'ok    patch bus_locks' in report and 'off by configuration (BROWSER_USE_MCP_PARALLEL_EVENT_BUSES=false)' in report


def test_private_reads(monkeypatch: pytest.MonkeyPatch) -> None:
	from browser_use_mcp.patches import internals

	assert check_private_reads().status == 'ok'
	first, *rest = internals.READS
	monkeypatch.setattr(internals, 'READS', (dataclasses.replace(first, versions=('0.0.1',)), *rest))
	check = check_private_reads()
	assert check.status == 'warn' and check.summary.startswith(f'{first.name} refused (browser-use is ')
	assert first.fallback in check.summary and check.fix


def test_exit_code_and_report_only_fail_on_failures() -> None:
	warn = [Check('a', 'ok', 'fine'), Check('b', 'warn', 'meh', 'do x')]
	assert exit_code(warn) == 0
	assert 'fix: do x' in format_report(warn)
	assert exit_code([*warn, Check('c', 'fail', 'broken', 'do y')]) == 1


# -- Chromium's reason in a real tool error ------------------------------------------------


async def test_tool_error_carries_chromiums_reason(tmp_path: Path, broken_chromium: str) -> None:
	home = tmp_path / 'home'
	env = server_env(home, BROWSER_USE_MCP_CHROMIUM=broken_chromium)
	async with running_server(home, env=env) as server:
		result = await server.call('browser_navigate', url='http://127.0.0.1:9/', session_id='doomed')
		assert result.is_error
		assert REASON in result.text, result.text
		pid = server.pid
	assert wait_until(lambda: not owned_processes(pid), timeout=10)


POLICY_OLD = """chromium:
  Installed: 150.0.7871.100-1~deb12u1
  Candidate: 156.0.8078.79-1~deb12u1
  Version table:
     156.0.8078.79-1~deb12u1 500
        500 http://deb.debian.org/debian-security bookworm-security/main amd64 Packages
 *** 150.0.7871.100-1~deb12u1 500
        100 /var/lib/dpkg/status
"""


def test_doctor_warns_when_the_package_manager_offers_a_newer_chromium() -> None:
	from browser_use_mcp.doctor import UPGRADE_CHROMIUM, check_chromium_current, parse_apt_policy

	assert parse_apt_policy(POLICY_OLD) == ('150.0.7871.100-1~deb12u1', '156.0.8078.79-1~deb12u1')
	check = check_chromium_current(POLICY_OLD)
	assert check is not None and check.status == 'warn'
	assert '150.0.7871.100' in check.summary and '156.0.8078.79' in check.summary
	assert check.fix and UPGRADE_CHROMIUM in check.fix
	assert UPGRADE_CHROMIUM == 'apt-get update && apt-get install chromium chromium-headless-shell chromium-driver'
	current = POLICY_OLD.replace('Installed: 150.0.7871.100', 'Installed: 156.0.8078.79')
	assert check_chromium_current(current).status == 'ok'
	# 150.0.7871.100 against 150.0.7871.99: compared as numbers, not as text
	assert check_chromium_current(POLICY_OLD.replace('156.0.8078.79', '150.0.7871.99')).status == 'ok'
	assert check_chromium_current('chromium:\n  Installed: (none)\n  Candidate: 156.0\n') is None
	assert check_chromium_current(None) is None


def test_doctor_reads_the_real_apt_cache() -> None:
	import shutil

	from browser_use_mcp.doctor import apt_policy, check_chromium_current, parse_apt_policy

	if not shutil.which('apt-cache'):
		pytest.skip('no apt-cache on this machine')
	policy = apt_policy('chromium')
	assert policy is not None
	installed, candidate = parse_apt_policy(policy)
	assert candidate, policy
	check = check_chromium_current(policy)
	assert check is None or check.status in ('ok', 'warn')
	if installed:
		assert check is not None and installed.split('-')[0] in check.summary
