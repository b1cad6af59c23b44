"""``browser-use-mcp install-browser``: the one command that gets a Chromium onto this machine.

A wheel installed with pip brings the server and its Python dependencies, not a browser. Where
the system has apt-get (Debian, Ubuntu), this runs ``apt-get update`` then ``apt-get install -y
chromium chromium-headless-shell chromium-driver`` (through sudo when not root); elsewhere it prints what to do.
``--dry-run`` prints the commands instead of running them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from typing import TextIO

INSTALL_COMMAND = 'browser-use-mcp install-browser'
PACKAGES = ('chromium', 'chromium-headless-shell', 'chromium-driver')


def missing_browser_message(configured: str | None = None) -> str:
	"""What every entry point says when there is no browser to launch: one command to fix it."""
	where = f' at {configured} (set by --chromium or BROWSER_USE_MCP_CHROMIUM)' if configured else ''
	return (
		f'No Chromium or Chrome was found{where}. Install one with: {INSTALL_COMMAND} '
		'(or point BROWSER_USE_MCP_CHROMIUM at a Chromium/Chrome binary), then retry.'
	)


def install_commands(
	*, platform: str | None = None, which: Callable[[str], str | None] = shutil.which, euid: int | None = None
) -> list[list[str]] | None:
	"""The commands that install Chromium here, or None when this system has no package manager we drive."""
	platform = sys.platform if platform is None else platform
	if not platform.startswith('linux') or which('apt-get') is None:
		return None
	euid = os.geteuid() if euid is None else euid
	prefix = [] if euid == 0 else ['sudo']
	return [
		[*prefix, 'apt-get', 'update'],
		[*prefix, 'apt-get', 'install', '-y', *PACKAGES],
	]


def manual_steps(platform: str | None = None) -> str:
	platform = sys.platform if platform is None else platform
	if platform == 'darwin':
		how = 'install Google Chrome (https://www.google.com/chrome/) or `brew install --cask chromium`'
	elif platform == 'win32':
		how = 'install Google Chrome (https://www.google.com/chrome/)'
	else:
		how = "install your distribution's chromium package (e.g. dnf install chromium, pacman -S chromium)"
	return (
		f'{INSTALL_COMMAND} only drives apt-get, which this system does not have: {how}, then set '
		'BROWSER_USE_MCP_CHROMIUM to the browser binary if it is not on PATH. `browser-use-mcp doctor` checks the result.'
	)


def run_install_browser(*, dry_run: bool = False, out: TextIO | None = None) -> int:
	out = out or sys.stdout
	commands = install_commands()
	if commands is None:
		print(manual_steps(), file=out)
		return 1
	if commands[0][0] == 'sudo' and shutil.which('sudo') is None and not dry_run:
		print('Installing Chromium needs root, and sudo is not installed: run these as root:', file=out)
		for command in commands:
			print('  ' + ' '.join(command[1:]), file=out)
		return 1
	for command in commands:
		line = ' '.join(command)
		if dry_run:
			print(f'would run: {line}', file=out, flush=True)
			continue
		print(f'running: {line}', file=out, flush=True)
		done = subprocess.run(command, env={**os.environ, 'DEBIAN_FRONTEND': 'noninteractive'})
		if done.returncode != 0:
			print(f'install-browser: `{line}` failed with exit status {done.returncode}', file=out)
			return done.returncode or 1
	if dry_run:
		return 0
	from browser_use_mcp.browser import find_chromium

	found = find_chromium()
	if found is None:
		print('The packages are installed, yet no Chromium was found; set BROWSER_USE_MCP_CHROMIUM to its binary.', file=out)
		return 1
	print(f'Chromium is installed: {found}. `browser-use-mcp doctor` checks the rest.', file=out)
	return 0
