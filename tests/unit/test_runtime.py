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
from browser_use_mcp.providers.shared import AttachedProvider, Shard, SharedProvider
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
from browser_use_mcp.runtime import freeze_startup_heap, import_state_path
tracked = len(gc.get_objects())
import_state_path()
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


class _Conn:
	open_ = True


def _shards(provider: SharedProvider, *loads: int) -> list[Shard]:
	"""Shards as _pick sees them: a live connection and this many sessions each (no browser)."""
	made = []
	for load in loads:
		shard = Shard(None, _Conn(), None, None)  # type: ignore[arg-type]
		shard.reserved = load
		made.append(shard)
	provider.shards = made
	return made


@pytest.mark.parametrize(
	('spread', 'per_browser', 'loads', 'picked'),
	[
		(2, 16, (), None),  # no Chromium yet: start one
		(2, 16, (0,), 0),  # an empty one waits for a session
		(2, 16, (1,), None),  # one busy Chromium and room for two: a second one
		(2, 16, (1, 0), 1),
		(2, 16, (1, 1), 0),  # two busy: the least busy, the oldest of equals
		(2, 16, (3, 2), 1),
		(2, 2, (2, 2), None),  # both full
		(2, 2, (2, 1), 1),
		(1, 16, (5,), 0),  # spread 1: fill one before the next
		(1, 2, (2,), None),
		(3, 16, (1, 1), None),
		(3, 16, (1, 1, 1), 0),
	],
)
def test_new_sessions_are_spread_over_shared_browsers_then_go_to_the_least_busy(
	spread: int, per_browser: int, loads: tuple[int, ...], picked: int | None
) -> None:
	provider = SharedProvider(
		ProcessProvider(None, owner=Owner.current(), profile_base={}, headless=True),
		new_dirs=lambda: None,  # type: ignore[arg-type, return-value]
		contexts_per_browser=per_browser,
		spread=spread,
	)
	shards = _shards(provider, *loads)
	assert provider._pick() is (None if picked is None else shards[picked])


def test_a_closed_shard_takes_no_session_and_an_attached_browser_takes_them_all() -> None:
	launcher = ProcessProvider(None, owner=Owner.current(), profile_base={}, headless=True)
	provider = SharedProvider(launcher, new_dirs=lambda: None, spread=2)  # type: ignore[arg-type, return-value]
	shards = _shards(provider, 0, 1)
	shards[0].connection = type('Closed', (), {'open_': False})()  # type: ignore[assignment]
	assert provider._pick() is None, 'the one open Chromium is busy and only one of two runs: a new one'
	attached = SharedProvider(launcher, new_dirs=lambda: None, spread=4, attach_url=CLOSED)  # type: ignore[arg-type, return-value]
	assert attached._pick() is None, 'not connected yet'
	(only,) = _shards(attached, 40)
	assert attached._pick() is only, 'never a second connection to an attached browser'
