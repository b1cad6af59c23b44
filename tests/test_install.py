"""`browser-use-mcp install-browser` and the one message every entry point gives when there is no browser."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from browser_use_mcp.install import INSTALL_COMMAND, install_commands, manual_steps, missing_browser_message
from harness.servers import running_server, server_env


def test_apt_commands_as_root_and_through_sudo() -> None:
	apt = {'apt-get': '/usr/bin/apt-get'}.get
	assert install_commands(platform='linux', which=apt, euid=0) == [
		['apt-get', 'update'],
		['apt-get', 'install', '-y', 'chromium', 'chromium-headless-shell', 'chromium-driver'],
	]
	assert install_commands(platform='linux', which=apt, euid=1000) == [
		['sudo', 'apt-get', 'update'],
		['sudo', 'apt-get', 'install', '-y', 'chromium', 'chromium-headless-shell', 'chromium-driver'],
	]


def test_no_apt_means_instructions_not_commands() -> None:
	assert install_commands(platform='linux', which=lambda _name: None, euid=0) is None
	assert install_commands(platform='darwin', which=lambda _name: '/x', euid=0) is None
	assert 'brew install --cask chromium' in manual_steps('darwin')
	assert 'BROWSER_USE_MCP_CHROMIUM' in manual_steps('linux')


def test_dry_run_prints_the_commands_and_runs_nothing() -> None:
	done = subprocess.run(
		[sys.executable, '-m', 'browser_use_mcp', 'install-browser', '--dry-run'], capture_output=True, text=True, timeout=60
	)
	assert done.returncode == 0, done.stderr
	lines = done.stdout.strip().splitlines()
	assert [line.removeprefix('would run: ').removeprefix('sudo ') for line in lines] == [
		'apt-get update',
		'apt-get install -y chromium chromium-headless-shell chromium-driver',
	]


def test_missing_browser_message_names_the_one_command() -> None:
	assert INSTALL_COMMAND in missing_browser_message()
	assert '/nope/chromium' in missing_browser_message('/nope/chromium')


def test_doctor_with_a_missing_browser_says_how_to_install(tmp_path: Path) -> None:
	env = server_env(tmp_path, BROWSER_USE_MCP_CHROMIUM=str(tmp_path / 'no-such-chromium'))
	done = subprocess.run(
		[sys.executable, '-m', 'browser_use_mcp', 'doctor'], capture_output=True, text=True, env=env, timeout=120
	)
	assert done.returncode == 1
	assert 'no-such-chromium does not exist' in done.stdout
	assert INSTALL_COMMAND in done.stdout


async def test_a_tool_call_with_a_missing_browser_says_how_to_install(tmp_path: Path) -> None:
	missing = str(tmp_path / 'no-such-chromium')
	async with running_server(tmp_path, env=server_env(tmp_path, BROWSER_USE_MCP_CHROMIUM=missing)) as mcp:
		result = await mcp.call('browser_navigate', url='http://127.0.0.1:9/')
		assert result.is_error
		assert missing_browser_message(missing) in result.text, result.text
