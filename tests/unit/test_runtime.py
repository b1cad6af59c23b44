"""The browser runtime's one decision: which provider serves named sessions and which the default
one, for each way of configuring it; and the pre-flight the CLI runs on the same configuration.
Nothing is launched: providers are made, not opened."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from browser_use_mcp.browser import Owner, StateDir
from browser_use_mcp.providers.grid import GridProvider
from browser_use_mcp.providers.process import ProcessProvider
from browser_use_mcp.providers.shared import AttachedProvider, SharedProvider
from browser_use_mcp.runtime import choose_providers, preflight
from tests.unit.test_sessions import fake_config

CLOSED = 'http://127.0.0.1:9'  # a loopback port nothing listens on


@pytest.mark.parametrize(
	('settings', 'named', 'default'),
	[
		({'isolation': 'browser'}, ProcessProvider, ProcessProvider),
		({'isolation': 'context'}, SharedProvider, ProcessProvider),
		({'cdp_url': CLOSED}, SharedProvider, AttachedProvider),
		({'grid_url': CLOSED}, GridProvider, GridProvider),
		({'grid_url': CLOSED, 'grid_default_session': 'local'}, GridProvider, ProcessProvider),
	],
)
def test_one_decision_says_which_provider_serves_which_session(
	tmp_path: Path, settings: dict[str, str], named: type, default: type
) -> None:
	config = fake_config(tmp_path, **settings)
	chosen = choose_providers(config, Owner.current(), StateDir(config.state_dir, Owner.current()))
	assert (type(chosen.named), type(chosen.default)) == (named, default)
	assert all(p.egress is chosen.egress for p in chosen.all()), 'every provider wired to the one egress gate'
	assert len(chosen.all()) == len({id(p) for p in chosen.all()}) == (1 if named is default else 2)


def test_preflight_names_an_endpoint_that_does_not_answer(tmp_path: Path) -> None:
	assert preflight(fake_config(tmp_path)) is None
	assert 'No browser answers at --cdp-url' in (preflight(fake_config(tmp_path, cdp_url=CLOSED)) or '')
	assert 'No Selenium Grid answers at --grid-url' in (preflight(fake_config(tmp_path, grid_url=CLOSED)) or '')


FREEZE_PROBE = """
import gc, json
import browser_use_mcp.server
from browser_use_mcp.runtime import freeze_startup_heap
tracked = len(gc.get_objects())
frozen = freeze_startup_heap()
print(json.dumps({'tracked': tracked, 'frozen': frozen, 'after': len(gc.get_objects()), 'again': freeze_startup_heap(),
                  'dom': 'browser_use.dom.service' in __import__('sys').modules}))
"""


def test_start_up_heap_is_kept_out_of_the_collector_once(tmp_path: Path) -> None:
	"""What start-up made is frozen (full collections no longer rescan it: ~90 ms stalls of the one
	loop, measured under four agents), with the modules a first page state needs loaded first; a
	second call freezes nothing. In a fresh interpreter: freezing pytest's heap would leak its cycles."""
	import json
	import subprocess
	import sys

	# TMPDIR: importing browser-use makes an empty downloads dir in the temp dir; this keeps it in ours
	env = {**os.environ, 'TMPDIR': str(tmp_path)}
	out = subprocess.run([sys.executable, '-c', FREEZE_PROBE], capture_output=True, text=True, timeout=120, check=True, env=env)
	probe = json.loads(out.stdout.strip().splitlines()[-1])
	assert probe['frozen'] > 50_000 and probe['frozen'] > probe['tracked']  # the state path's modules came in too
	assert probe['after'] < probe['frozen'] / 10
	assert probe['again'] == 0 and probe['dom'] is True
