"""The registry's pure parts: ids, handles, loss memory, retention wording, path safety, sweep."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from browser_use_mcp.browser import Owner, StateDir, profile_lock_owner, session_digest, sweep_orphans
from browser_use_mcp.config import ServerConfig
from browser_use_mcp.errors import InvalidArgument
from browser_use_mcp.sessions import TOMBSTONE_LIMIT, SessionRegistry, Tombstone, check_session_id, new_session_id


@pytest.mark.parametrize('good', ['a', 'default', '../../x', 'ünï©ødé 🙂', 'x' * 256, 'browser_0190-abc'])
def test_any_printable_id_is_accepted(good: str) -> None:
	assert check_session_id(good) == good


@pytest.mark.parametrize(
	('bad', 'why'),
	[('', 'empty'), ('x' * 257, '256'), ('a\x00b', 'control'), ('a\nb', 'control'), (5, 'string'), (None, 'string')],
)
def test_unusable_ids_are_refused_with_the_reason(bad: object, why: str) -> None:
	with pytest.raises(InvalidArgument, match=why):
		check_session_id(bad)


def test_minted_handles_are_unique_and_carry_extra_randomness() -> None:
	handles = {new_session_id() for _ in range(2000)}
	assert len(handles) == 2000
	for handle in list(handles)[:50]:
		assert handle.startswith('browser_')
		suffix = handle[len('browser_') + 36 :]
		assert len(suffix) == 16 and int(suffix, 16) >= 0  # 64 random bits beyond the uuid7


def test_digests_are_path_safe_and_distinct_per_principal_and_id() -> None:
	names = {session_digest(p, i) for p in ('local', 'tok-a', 'tok-b') for i in ('a', 'b', '../../x', 'a\udcff')}
	assert len(names) == 12
	assert all(n.isalnum() and len(n) == 16 for n in names)


def test_state_dirs_never_collide(tmp_path: Path) -> None:
	state = StateDir(tmp_path, Owner.current())
	first = state.new_session_dirs('local', 'same')
	second = state.new_session_dirs('local', 'same')
	assert first.root != second.root and first.root.parent == second.root.parent == state.path
	assert json.loads((state.path / 'owner.json').read_text())['pid'] == os.getpid()


def test_lost_sessions_are_remembered_boundedly(tmp_path: Path) -> None:
	registry = SessionRegistry(ServerConfig(state_dir=tmp_path))
	for i in range(TOMBSTONE_LIMIT + 500):
		registry.remember_loss(('local', f'id-{i}'), Tombstone('expired', time.time(), '600 s'))
	assert len(registry._tombstones) == TOMBSTONE_LIMIT
	assert ('local', 'id-0') not in registry._tombstones
	assert ('local', f'id-{TOMBSTONE_LIMIT + 499}') in registry._tombstones


@pytest.mark.parametrize(
	('reason', 'detail', 'words'),
	[
		('expired', '600 s', ['idle timeout', '600 s']),
		('max_duration', '3600 s', ['maximum session duration of 3600 s']),
		('crashed', 'Chromium exited unexpectedly (killed by signal 9)', ['browser died', 'signal 9']),
	],
)
def test_loss_messages_say_what_happened_when_and_what_to_do(reason: str, detail: str, words: list[str]) -> None:
	text = Tombstone(reason, 1_800_000_000, detail).message('s1')  # type: ignore[arg-type]
	for word in [*words, "'s1'", '2027-01-15', 'UTC', 'cookies, tabs, history', 'same session_id']:
		assert word in text


def test_retention_text_follows_the_configuration(tmp_path: Path) -> None:
	assert '600 s without a call' in SessionRegistry(ServerConfig(state_dir=tmp_path)).retention_text()
	both = SessionRegistry(ServerConfig(state_dir=tmp_path, idle_timeout=60, max_session_duration=900)).retention_text()
	assert '60 s without a call' in both and '900 s after creation' in both
	assert 'no expiry' in SessionRegistry(ServerConfig(state_dir=tmp_path, idle_timeout=0)).retention_text()


def test_reaper_checks_often_enough_to_notice_within_a_few_seconds(tmp_path: Path) -> None:
	assert SessionRegistry(ServerConfig(state_dir=tmp_path, idle_timeout=600))._reap_interval() == 1.0
	assert SessionRegistry(ServerConfig(state_dir=tmp_path, idle_timeout=2))._reap_interval() == 0.5


def test_profile_lock_owner_reads_chromiums_singleton_lock(tmp_path: Path) -> None:
	assert profile_lock_owner(tmp_path) is None
	(tmp_path / 'SingletonLock').symlink_to(f'{socket.gethostname()}-{os.getpid()}')
	assert profile_lock_owner(tmp_path) == os.getpid()
	(tmp_path / 'SingletonLock').unlink()
	dead = subprocess.Popen([sys.executable, '-c', 'pass'])
	dead.wait()
	(tmp_path / 'SingletonLock').symlink_to(f'{socket.gethostname()}-{dead.pid}')
	assert profile_lock_owner(tmp_path) is None, 'a stale lock of a dead process is not a lock'


def test_owner_identity_survives_pid_reuse() -> None:
	me = Owner.current()
	assert me.alive() and Owner.parse(me.token) == me
	assert not Owner(me.pid, me.started - 1000).alive(), 'same pid, other start time: another process'
	assert Owner.parse('garbage') is None


def test_sweep_removes_dead_servers_dirs_and_keeps_live_ones(tmp_path: Path) -> None:
	dead = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(0.2)'])
	dead_owner = Owner(dead.pid, round(psutil.Process(dead.pid).create_time(), 2))
	dead.wait()
	stale = tmp_path / 'srv-dead'
	stale.mkdir()
	(stale / 'owner.json').write_text(json.dumps({'pid': dead_owner.pid, 'started': dead_owner.started}))
	live = StateDir(tmp_path, Owner.current())
	foreign = tmp_path / 'not-ours'
	foreign.mkdir()
	report = sweep_orphans(tmp_path, Owner.current())
	assert report.dirs_removed == 1
	assert not stale.exists() and live.path.exists() and foreign.exists()
