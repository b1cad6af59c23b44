"""The demo, run as a newcomer runs it (a subprocess, real Chromium), and the checks it relies on.

The checks matter as much as the run: a demo that printed PASS whatever happened would prove
nothing, so ``isolation_checks`` is also fed sessions that leaked into each other.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from PIL import Image

from browser_use_mcp.demo import SessionRun, format_table, isolation_checks, short_id
from harness.servers import REPO, server_env, wait_until


@pytest.fixture
def scratch() -> Iterator[Path]:
	"""A TMPDIR for the demo, short on purpose: Chromium puts its singleton socket under TMPDIR
	and aborts when that path exceeds the 107 bytes a Unix socket name may have."""
	path = Path(tempfile.mkdtemp(prefix='bum-demo-', dir='/tmp'))
	try:
		yield path
	finally:
		shutil.rmtree(path, ignore_errors=True)


def run_demo_command(tmp_path: Path, scratch: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
	environment = server_env(tmp_path / 'home', TMPDIR=str(scratch), **env)
	return subprocess.run(
		[sys.executable, '-m', 'browser_use_mcp', 'demo', *args],
		capture_output=True,
		text=True,
		env=environment,
		cwd=tmp_path,
		timeout=400,
	)


def table_rows(stdout: str) -> list[list[str]]:
	lines = stdout.splitlines()
	start = next(i for i, line in enumerate(lines) if line.startswith('session ') and 'cookie user' in line)
	rows = []
	for line in lines[start + 2 :]:
		if not line.strip():
			break
		rows.append(re.split(r'\s{2,}', line.strip()))
	return rows


def browsers_of(server_pid: int) -> list[int]:
	marker = f'--browser-use-mcp-owner={server_pid}:'
	found = []
	for proc in psutil.process_iter():
		try:
			if any(arg.startswith(marker) for arg in proc.cmdline()) and proc.status() != psutil.STATUS_ZOMBIE:
				found.append(proc.pid)
		except psutil.Error:
			continue
	return found


@pytest.mark.parametrize(
	('mode', 'processes'),
	[
		('context', 'PASS  3 sessions as browser contexts of 1 shared Chromium process(es) (expected 1)'),
		('browser', 'PASS  3 Chromium processes, each on its own'),
	],
)
def test_demo_shows_isolation_and_cleans_up(tmp_path: Path, scratch: Path, mode: str, processes: str) -> None:
	sheet = tmp_path / 'out' / 'sheet.png'
	done = run_demo_command(tmp_path, scratch, '--isolation', mode, '--output', str(sheet))
	assert done.returncode == 0, done.stdout + done.stderr
	assert processes in done.stdout

	rows = table_rows(done.stdout)
	assert [r[2] for r in rows] == ['alice', 'bob', 'carol']  # cookie user
	assert [r[3] for r in rows] == ['1', '2', '3']  # tabs
	assert all(r[1].startswith('127.0.0.1:') and r[1].endswith('/me') for r in rows)  # URL, loopback only
	assert len({r[0] for r in rows}) == 3  # three different sessions
	for row in rows:
		assert len(row) == 9 and all(cell.isdigit() for cell in row[4:]), row  # ms for every step
	assert 'FAIL' not in done.stdout
	assert 'Isolation held' in done.stdout

	with Image.open(sheet) as image:
		assert image.format == 'PNG'
		assert image.width > 2 * image.height  # three screenshots side by side
	assert str(sheet.resolve()) in done.stdout

	server_pid = int(re.search(r'\(pid (\d+), stdio\)', done.stdout).group(1))
	assert wait_until(lambda: not psutil.pid_exists(server_pid) or not browsers_of(server_pid), timeout=10)
	assert browsers_of(server_pid) == []
	assert not [p for p in scratch.iterdir() if p.name.startswith('browser-use-mcp-demo-')], 'scratch HOME left behind'
	# the user's persistent profile is never opened (browser-use itself creates the empty profiles/ dir on import)
	assert not (tmp_path / 'home' / '.config' / 'browseruse' / 'profiles' / 'default').exists()


def test_demo_fails_when_the_browser_cannot_start(tmp_path: Path, scratch: Path) -> None:
	broken = tmp_path / 'broken-chromium'
	broken.write_text('#!/bin/sh\necho "broken-chromium: refusing to start" >&2\nexit 3\n')
	broken.chmod(0o755)
	done = run_demo_command(tmp_path, scratch, '--output', str(tmp_path / 'sheet.png'), BROWSER_USE_MCP_CHROMIUM=str(broken))
	assert done.returncode == 1, done.stdout + done.stderr
	assert 'FAIL' in done.stdout
	assert 'broken-chromium: refusing to start' in done.stdout  # the server's error, Chromium's words in it
	assert 'Isolation held' not in done.stdout
	assert not (tmp_path / 'sheet.png').exists()


def test_demo_without_any_browser_says_what_to_install(tmp_path: Path, scratch: Path) -> None:
	done = run_demo_command(tmp_path, scratch, '--chromium', str(tmp_path / 'no-such-browser'))
	assert done.returncode == 1
	assert 'No Chromium or Chrome was found' in done.stdout
	assert 'doctor' in done.stdout


def _runs(*seen: tuple[str, str, str, int]) -> list[SessionRun]:
	runs = []
	for i, (user, cookie_user, page_user, tabs) in enumerate(seen):
		run = SessionRun(user, tabs_wanted=i + 1, session_id=f'browser_{i}', cookie_user=cookie_user, page_user=page_user)
		run.tabs = tabs
		runs.append(run)
	return runs


def test_checks_pass_only_for_isolated_sessions() -> None:
	good = _runs(('alice', 'alice', 'alice', 1), ('bob', 'bob', 'bob', 2))
	ids = [r.session_id for r in good]
	assert all(c.ok for c in isolation_checks(good, ids, {'/p/1', '/p/2'}))

	shared_cookies = _runs(('alice', 'bob', 'bob', 1), ('bob', 'bob', 'bob', 2))  # last sign-in won
	shared_tabs = _runs(('alice', 'alice', 'alice', 3), ('bob', 'bob', 'bob', 3))  # tabs of both in one browser
	one_profile = {'/p/shared'}
	assert not all(c.ok for c in isolation_checks(shared_cookies, ids, {'/p/1', '/p/2'}))
	assert not all(c.ok for c in isolation_checks(shared_tabs, ids, {'/p/1', '/p/2'}))
	assert not all(c.ok for c in isolation_checks(good, ids, one_profile))
	assert not all(c.ok for c in isolation_checks(good, [*ids, 'default'], {'/p/1', '/p/2'}))
	# contexts: one shared Chromium per K sessions, no more, no fewer
	assert all(c.ok for c in isolation_checks(good, ids, one_profile, contexts_per_browser=16))
	assert not all(c.ok for c in isolation_checks(good, ids, {'/p/1', '/p/2'}, contexts_per_browser=16))
	assert all(c.ok for c in isolation_checks(good, ids, {'/p/1', '/p/2'}, contexts_per_browser=1))
	# spread over two Chromiums before any hosts two sessions
	assert all(c.ok for c in isolation_checks(good, ids, {'/p/1', '/p/2'}, contexts_per_browser=16, spread=2))
	assert not all(c.ok for c in isolation_checks(good, ids, one_profile, contexts_per_browser=16, spread=2))
	assert all(c.ok for c in isolation_checks(good, ids, {'/p/1', '/p/2'}, contexts_per_browser=16, spread=3))


@pytest.mark.parametrize(
	('session_id', 'shown'),
	[('alice', 'alice'), ('browser_06b037cf-782c-78ba-8000-db811f94c2dd4f2ed36475ff0690', 'browser_…75ff0690')],
)
def test_short_ids_keep_the_random_tail(session_id: str, shown: str) -> None:
	assert short_id(session_id) == shown


def test_table_has_every_column() -> None:
	run = _runs(('alice', 'alice', 'alice', 1))[0]
	run.url = 'http://127.0.0.1:1234/me'
	run.ms = {'start': 812.4, 'login': 95.0, 'tabs': 0.0, 'read': 7.2, 'shot': 60.9}
	header, _rule, row = format_table([run]).splitlines()
	assert re.split(r'\s{2,}', header.strip()) == [
		'session',
		'URL',
		'cookie user',
		'tabs',
		'start ms',
		'login ms',
		'tabs ms',
		'read ms',
		'shot ms',
	]
	assert re.split(r'\s{2,}', row.strip()) == ['browser_0', '127.0.0.1:1234/me', 'alice', '1', '812', '95', '0', '7', '61']


def test_repo_ignores_demo_output() -> None:
	assert 'demo-output/' in (REPO / '.gitignore').read_text().split()
