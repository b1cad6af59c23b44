"""The registry: ids, handles, loss memory, retention wording, path safety, sweep, and its
concurrency (creation races, locks, cancel on close, losses, limits, principals) over a fake
browser provider, in process and in milliseconds. Real browsers are the e2e tests' business."""

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
		assert len(suffix) == 16 and set(suffix) <= set('0123456789abcdef')  # 64 random bits beyond the uuid7
	assert len({h[len('browser_') + 36 :] for h in handles}) == 2000, 'the suffix is random, not derived from the uuid'


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


# -- the registry over a fake provider -------------------------------------------------------------------

import asyncio  # noqa: E402
import dataclasses  # noqa: E402
from collections.abc import AsyncIterator, Awaitable, Callable  # noqa: E402
from typing import Any  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from browser_use_mcp.catalog import Catalog  # noqa: E402
from browser_use_mcp.errors import SessionClosed, SessionLimitReached, SessionLost, SessionNotFound  # noqa: E402
from browser_use_mcp.sessions import DEFAULT_SESSION_ID, SessionState  # noqa: E402
from browser_use_mcp.tools.base import Call  # noqa: E402
from harness.fakes.provider import FakeProvider, FakeRuntime  # noqa: E402


def fake_config(tmp: Path, **overrides: Any) -> ServerConfig:
	return ServerConfig(
		state_dir=tmp / 'state',
		default_user_data_dir=tmp / 'default-profile',
		default_downloads_dir=tmp / 'default-downloads',
		default_files_dir=tmp / 'default-files',
		watchdog='off',
		**overrides,
	)


async def started(tmp: Path, **overrides: Any) -> tuple[SessionRegistry, FakeProvider]:
	provider = FakeProvider()
	config = fake_config(tmp, **overrides)
	registry = SessionRegistry(config, runtime=FakeRuntime(config, provider))
	await registry.start()
	return registry, provider


@pytest.fixture
async def fake(tmp_path: Path) -> AsyncIterator[Callable[..., Awaitable[tuple[SessionRegistry, FakeProvider]]]]:
	registries: list[SessionRegistry] = []

	async def make(**overrides: Any) -> tuple[SessionRegistry, FakeProvider]:
		registry, provider = await started(tmp_path / f'r{len(registries)}', **overrides)
		registries.append(registry)
		return registry, provider

	yield make
	for registry in registries:
		await registry.shutdown()


async def noop(state: SessionState) -> SessionState:
	return state


async def test_racing_first_calls_create_one_browser(fake: Any) -> None:
	registry, provider = await fake()
	provider.gate = asyncio.Event()
	calls = [asyncio.create_task(registry.run('local', 'same', noop)) for _ in range(20)]
	await asyncio.sleep(0.05)
	provider.gate.set()
	results = await asyncio.gather(*calls)
	assert provider.opened == 1 and len({id(state) for state, _ in results}) == 1


async def test_calls_in_one_session_never_overlap_and_sessions_do(fake: Any) -> None:
	registry, _ = await fake()
	inside: dict[str, int] = {'a': 0, 'b': 0}
	most = {'a': 0, 'b': 0, 'both': 0}

	async def work(state: SessionState) -> None:
		inside[state.session_id] += 1
		most[state.session_id] = max(most[state.session_id], inside[state.session_id])
		most['both'] = max(most['both'], inside['a'] + inside['b'])
		await asyncio.sleep(0.01)
		inside[state.session_id] -= 1

	await asyncio.gather(*(registry.run('local', sid, work) for sid in ['a', 'b'] * 10))
	assert most['a'] == most['b'] == 1, 'one call at a time within a session'
	assert most['both'] == 2, 'sessions run side by side'


async def test_closing_cancels_the_call_in_flight_and_frees_the_id(fake: Any) -> None:
	registry, provider = await fake()
	entered = asyncio.Event()

	async def hang(state: SessionState) -> None:
		entered.set()
		await asyncio.Event().wait()

	call = asyncio.create_task(registry.run('local', 's', hang))
	await entered.wait()
	queued = asyncio.create_task(registry.run('local', 's', noop))
	await asyncio.sleep(0.01)  # queued behind the running call's lock
	assert await registry.close('local', 's')
	with pytest.raises(SessionClosed, match='while this call was running'):
		await call
	with pytest.raises(SessionClosed, match='while this call waited'):
		await queued
	assert provider.live == set() and provider.endpoints[0].released
	state, _ = await registry.run('local', 's', noop)  # a fresh session under the same id, no error
	assert provider.opened == 2 and state.browser.alive()


async def test_a_crash_is_reported_once_then_the_id_starts_fresh(fake: Any) -> None:
	registry, provider = await fake()
	await registry.run('local', 's', noop)
	provider.endpoints[0].crash()
	await asyncio.sleep(0.01)
	assert registry.sessions() == [], 'the dead session is closed as soon as its browser dies'
	with pytest.raises(SessionLost, match='the fake browser crashed'):
		await registry.run('local', 's', noop)
	await registry.run('local', 's', noop)
	assert provider.opened == 2


async def test_the_default_session_restarts_with_a_note_instead_of_failing(fake: Any) -> None:
	registry, provider = await fake(idle_timeout=600)
	state, _ = await registry.run('local', None, noop)
	assert state.is_default and not state.dirs.temporary
	state.last_activity -= 700
	assert await registry.reap() == 1
	again, _ = await registry.run('local', None, noop)
	notes = again.take_notes()
	assert len(notes) == 1 and 'restarted' in notes[0] and 'idle timeout' in notes[0]
	assert provider.endpoints[0].graceful is True, 'a persistent profile is closed gracefully'


async def test_expiry_and_the_duration_limit_tombstone_named_sessions(fake: Any) -> None:
	registry, _ = await fake(idle_timeout=600, max_session_duration=3600)
	idle, _ = await registry.run('local', 'idle', noop)
	old, _ = await registry.run('local', 'old', noop)
	idle.last_activity -= 601
	old.created_at -= 3601
	assert await registry.reap() == 2
	with pytest.raises(SessionLost, match='idle timeout'):
		await registry.run('local', 'idle', noop)
	with pytest.raises(SessionLost, match='maximum session duration'):
		await registry.run('local', 'old', noop)


async def test_the_session_limit_refuses_creation_until_one_closes(fake: Any) -> None:
	registry, provider = await fake(max_sessions=2)
	await registry.run('local', 'a', noop)
	await registry.run('local', 'b', noop)
	with pytest.raises(SessionLimitReached, match='--max-sessions 2'):
		await registry.run('local', 'c', noop)
	assert provider.opened == 2
	await registry.close('local', 'a')
	await registry.run('local', 'c', noop)


async def test_principals_never_see_each_others_sessions(fake: Any) -> None:
	registry, provider = await fake(auth_tokens=('token-a-0123456789', 'token-b-0123456789'))
	a, _ = await registry.run('alice', 'shared-name', noop)
	b, _ = await registry.run('bob', 'shared-name', noop)
	assert a is not b and provider.opened == 2
	assert [s.session_id for s in registry.sessions('alice')] == ['shared-name']
	assert not await registry.close('alice', 'nope') and await registry.close_all('alice') == 1
	assert [s.principal for s in registry.sessions()] == ['bob']
	da, _ = await registry.run('alice', None, noop)
	assert da.dirs.temporary, 'with several principals a default session never gets the persistent profile'


async def test_a_failed_start_caches_nothing_and_leaves_no_directory(fake: Any) -> None:
	registry, provider = await fake()
	provider.fail = 'no browser today'
	with pytest.raises(Exception, match='no browser today'):
		await registry.run('local', 's', noop)
	assert registry.sessions() == [] and list(registry.runtime.state_dir.path.glob('s-*')) == []
	provider.fail = None
	await registry.run('local', 's', noop)


async def test_admin_tools_over_the_fake(fake: Any) -> None:
	registry, _ = await fake()
	catalog = Catalog(registry)
	created = await catalog.call('browser_create_session', {}, Call())
	sid = created.structured['session_id']
	listed = await catalog.call('browser_list_sessions', {}, Call())
	assert [s['session_id'] for s in listed.structured['sessions']] == [sid]
	with pytest.raises(SessionNotFound):
		await catalog.call('browser_close_session', {'session_id': 'never-made'}, Call())
	assert (await catalog.call('browser_close_all', {}, Call())).structured == {'closed': 1}


async def test_shutdown_releases_everything(tmp_path: Path) -> None:
	registry, provider = await started(tmp_path)
	for sid in ('a', 'b', None):
		await registry.run('local', sid, noop)
	state_dir = registry.runtime.state_dir.path
	await registry.shutdown()
	assert provider.live == set() and provider.shut_down and not state_dir.exists()
	with pytest.raises(SessionClosed):
		await registry.run('local', 'late', noop)


# A model of what each (principal, id) should be, checked against the registry after every step of
# a random sequence of calls, closes, crashes and expiries.

IDS = ['a', 'b', DEFAULT_SESSION_ID]
PRINCIPALS = ['p1', 'p2']
operation = st.tuples(
	st.sampled_from(['call', 'close', 'crash', 'expire', 'close_all']), st.sampled_from(IDS), st.sampled_from(PRINCIPALS)
)


async def run_model(tmp: Path, steps: list[tuple[str, str, str]]) -> None:
	registry, provider = await started(tmp, auth_tokens=('t1-0123456789abcdef', 't2-0123456789abcdef'), idle_timeout=600)
	model: dict[tuple[str, str], str] = {}  # key -> 'live' | 'lost' (absent: neither)
	try:
		for op, sid, principal in steps:
			key = (principal, sid)
			status = model.get(key)
			if op == 'call':
				if status == 'lost' and sid != DEFAULT_SESSION_ID:
					with pytest.raises(SessionLost):
						await registry.run(principal, sid, noop)
					del model[key]
				else:
					state, _ = await registry.run(principal, sid, noop)
					notes = state.take_notes()
					assert bool(notes) == (status == 'lost'), (steps, notes)
					model[key] = 'live'
			elif op == 'close':
				assert await registry.close(principal, sid) == (status == 'live')
				if status == 'live':
					del model[key]
			elif op == 'crash' and status == 'live':
				state = next(s for s in registry.sessions(principal) if s.session_id == sid)
				state.browser.endpoint.crash()
				await asyncio.sleep(0)
				await asyncio.sleep(0)
				model[key] = 'lost'
			elif op == 'expire' and status == 'live':
				state = next(s for s in registry.sessions(principal) if s.session_id == sid)
				state.last_activity -= 601
				assert await registry.reap() == 1
				model[key] = 'lost'
			elif op == 'close_all':
				live = [k for k, v in model.items() if v == 'live' and k[0] == principal]
				assert await registry.close_all(principal) == len(live)
				for k in live:
					del model[k]
			live_keys = {s.key for s in registry.sessions()}
			assert live_keys == {k for k, v in model.items() if v == 'live'}, steps
			assert len(provider.live) == len(live_keys), 'one live browser per live session, none leaked'
	finally:
		state_dir = registry.runtime.state_dir.path
		await registry.shutdown()
	assert provider.live == set() and not state_dir.exists()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(operation, max_size=25))
def test_random_sequences_keep_the_registry_consistent(tmp_path: Path, steps: list[tuple[str, str, str]]) -> None:
	import tempfile

	with tempfile.TemporaryDirectory(dir=tmp_path) as tmp:
		asyncio.run(run_model(Path(tmp), steps))


def test_fake_config_is_a_real_server_config(tmp_path: Path) -> None:
	assert dataclasses.replace(fake_config(tmp_path)).watchdog == 'off'


async def test_a_call_wedged_past_its_deadline_does_not_keep_its_session_from_expiring(fake: Any) -> None:
	registry, _ = await fake(idle_timeout=600)
	entered = asyncio.Event()

	async def wedged(state: SessionState) -> None:
		entered.set()
		await asyncio.Event().wait()  # a browser that never answers

	call = asyncio.create_task(registry.run('local', 'w', wedged, deadline=20))
	await entered.wait()
	(state,) = registry.sessions('local')
	now = time.time()
	assert await registry.reap(now + 30) == 0, 'busy within its deadline: not idle'
	assert await registry.reap(now + 599) == 0, 'past its deadline, idle from then on: not yet expired'
	assert await registry.reap(now + 20 + 15 + 601) == 1, 'expired like an idle session, the call with it'
	with pytest.raises(SessionLost, match='idle timeout'):
		await asyncio.wait_for(call, 10)
	assert state.closed_reason is not None


async def test_a_person_holding_a_session_keeps_it_from_expiring_past_the_last_calls_deadline(fake: Any) -> None:
	"""A dashboard takeover takes the same hold as a call, with no deadline: the session is busy for as long
	as the person holds it, however long ago the last call's deadline passed."""
	from browser_use_mcp.dashboard.live import release, take_over

	registry, _ = await fake(idle_timeout=600)
	state, _ = await registry.run('local', 'driven', noop, deadline=1)
	takeover = await take_over(state, 'person', timeout=3600)
	try:
		assert state.lock.locked() and state.busy == 1
		assert await registry.reap(time.time() + 10 * 600) == 0, 'held by a person: not idle'
	finally:
		await release(state, takeover)
	assert not state.lock.locked() and state.busy == 0
	assert await registry.reap(time.time() + 601) == 1, 'let go: idle, and expires as usual'


async def test_a_hold_that_cannot_wait_longer_leaves_the_session_as_it_was(fake: Any) -> None:
	registry, _ = await fake()
	state, _ = await registry.run('local', 'h', noop)
	told = asyncio.Event()

	async def waiting() -> None:
		told.set()

	async with state.held(5):
		with pytest.raises(TimeoutError):
			await state.hold(5, wait=0.05, while_waiting=waiting)
		assert told.is_set() and state.busy == 1
	assert not state.lock.locked() and state.busy == 0
	await state.hold(None)  # free again: taken at once
	state.let_go()
