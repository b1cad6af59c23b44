"""scripts/setup.sh and scripts/grid.sh install from up-to-date package lists: an install from
stale lists gives a fresh machine an old Chromium (150 while the security release is 156).

apt-get is faked on PATH; nothing is installed."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = REPO / 'scripts'


def fake_apt(tmp_path: Path) -> tuple[dict[str, str], Path]:
	bin_dir = tmp_path / 'bin'
	bin_dir.mkdir()
	log = tmp_path / 'apt.log'
	for name in ('apt-get', 'sudo'):
		script = bin_dir / name
		body = 'exec "$@"' if name == 'sudo' else f'echo "$*" >> {log}'
		script.write_text(f'#!/bin/sh\n{body}\n')
		script.chmod(0o755)
	env = {k: v for k, v in os.environ.items() if k != 'BROWSER_USE_MCP_APT_UPDATED'}
	env['PATH'] = f'{bin_dir}:{env["PATH"]}'
	return env, log


def test_the_lists_are_updated_once_before_the_first_install(tmp_path: Path) -> None:
	env, log = fake_apt(tmp_path)
	# setup.sh installs chromium, then runs grid.sh, which installs chromium-driver and java
	script = f'. {SCRIPTS}/apt.sh; apt_install chromium; bash -c ". {SCRIPTS}/apt.sh; apt_install --no-install-recommends chromium-driver chromium"'
	subprocess.run(['bash', '-c', script], env=env, check=True, timeout=30)
	calls = [line.split()[0] for line in log.read_text().splitlines()]
	assert calls == ['update', 'install', 'install'], log.read_text()


def test_the_scripts_install_only_through_apt_install() -> None:
	for name in ('setup.sh', 'grid.sh', 'oidc.sh'):
		text = (SCRIPTS / name).read_text()
		assert not re.search(r'apt-get\s+(-\S+\s+)*install', text), f'{name} calls apt-get install directly'
		assert 'apt.sh' in text, f'{name} sources scripts/apt.sh'
