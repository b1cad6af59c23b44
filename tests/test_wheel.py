"""The one-command install: the wheel alone, in a fresh virtualenv, serves and checks itself.

Marked ``wheel``: it builds the wheel from the tracked files (a copy, so nothing untracked or
built in the checkout can stand in), installs it with its dependencies from the package index,
and runs the installed command from an empty directory with no PYTHONPATH, so nothing can be
read from this repository at run time.

With pip's cache, building and installing took 32 s on an idle 2-core machine and 70-90 s at
load average 12: under the two minutes that would justify installing only our package
(--no-deps, dependencies from the project's .venv through a .pth), so the dependencies are
resolved from the wheel's own metadata, as a user's pip does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from harness.servers import REPO, server_env

pytestmark = pytest.mark.wheel


def tracked_copy(dest: Path) -> Path:
	files = subprocess.run(['git', 'ls-files', '-z'], cwd=REPO, capture_output=True, check=True).stdout.decode().split('\0')
	for name in filter(None, files):
		if (REPO / name).is_file():
			(dest / name).parent.mkdir(parents=True, exist_ok=True)
			shutil.copy2(REPO / name, dest / name)
	return dest


@pytest.fixture(scope='module')
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
	"""A fresh virtualenv with only the built wheel (and its dependencies) installed; its bin/."""
	root = tmp_path_factory.mktemp('wheel')
	source = tracked_copy(root / 'src')
	started = time.monotonic()
	subprocess.run(
		[sys.executable, '-m', 'pip', 'wheel', '.', '--no-deps', '-q', '-w', str(root / 'dist')],
		cwd=source,
		check=True,
		capture_output=True,
		timeout=300,
	)
	(wheel,) = (root / 'dist').glob('browser_use_mcp-*.whl')
	names = zipfile.ZipFile(wheel).namelist()
	# every file of the package is in the wheel: package data (the dashboard's static files) too
	tracked = subprocess.run(['git', 'ls-files', 'browser_use_mcp'], cwd=REPO, capture_output=True, text=True, check=True)
	assert set(tracked.stdout.split()) <= set(names), set(tracked.stdout.split()) - set(names)
	# and nothing else: not the tests, not the harness they share with the benchmarks
	assert not [n for n in names if not n.startswith(('browser_use_mcp/', 'browser_use_mcp-'))]
	venv = root / 'venv'
	subprocess.run([sys.executable, '-m', 'venv', str(venv)], check=True, timeout=120)
	subprocess.run(
		[str(venv / 'bin' / 'python'), '-m', 'pip', 'install', '-q', '--disable-pip-version-check', str(wheel)],
		check=True,
		capture_output=True,
		timeout=600,
	)
	print(f'wheel built and installed in {time.monotonic() - started:.1f} s')
	return venv / 'bin'


def isolated_env(home: Path) -> dict[str, str]:
	env = server_env(home)
	env.pop('PYTHONPATH')  # the installed package, not this checkout
	env['BROWSER_USE_MCP_CHROMIUM'] = shutil.which('chromium') or '/usr/bin/chromium'
	return env


def test_the_installed_package_is_the_wheel(installed: Path, tmp_path: Path) -> None:
	done = subprocess.run(
		[str(installed / 'python'), '-c', 'import browser_use_mcp, sys; print(browser_use_mcp.__file__)'],
		cwd=tmp_path,
		env=isolated_env(tmp_path),
		capture_output=True,
		text=True,
		check=True,
	)
	assert Path(done.stdout.strip()).is_relative_to(installed.parent), done.stdout


def test_doctor_from_the_wheel(installed: Path, tmp_path: Path) -> None:
	done = subprocess.run(
		[str(installed / 'browser-use-mcp'), 'doctor'],
		cwd=tmp_path,
		env=isolated_env(tmp_path),
		capture_output=True,
		text=True,
		timeout=180,
	)
	assert done.returncode == 0, done.stdout + done.stderr
	assert 'The server can run' in done.stdout


def test_install_browser_dry_run_from_the_wheel(installed: Path, tmp_path: Path) -> None:
	done = subprocess.run(
		[str(installed / 'browser-use-mcp'), 'install-browser', '--dry-run'],
		cwd=tmp_path,
		capture_output=True,
		text=True,
		timeout=60,
	)
	assert done.returncode in (0, 1), done.stderr  # 1 only where there is no apt-get: then it says what to do
	assert 'apt-get install -y chromium chromium-headless-shell chromium-driver' in done.stdout or 'does not have' in done.stdout


async def test_navigate_over_stdio_from_the_wheel(installed: Path, tmp_path: Path, site: str) -> None:
	home = tmp_path / 'home'
	home.mkdir()
	params = StdioServerParameters(command=str(installed / 'browser-use-mcp'), args=[], env=isolated_env(home), cwd=str(tmp_path))
	async with Client(params, mode='legacy', read_timeout_seconds=120) as client:
		result = await client.call_tool('browser_navigate', {'url': f'{site}/'}, read_timeout_seconds=120)
		text = ' '.join(c.text for c in result.content if getattr(c, 'type', None) == 'text')
		assert not result.is_error, text
		assert site.removeprefix('http://') in text
		await client.call_tool('browser_close_all', {})
	assert os.path.isdir(tmp_path)
