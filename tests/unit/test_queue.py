"""Per-principal limits and the fair queue for session and call slots, over the fake provider
(in process, in milliseconds); one real HTTP server shows a queued create with its progress."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from browser_use_mcp import admission
from browser_use_mcp.admission import QueueTimeout
from browser_use_mcp.config import load_config
from browser_use_mcp.errors import SessionLimitReached
from browser_use_mcp.sessions import SessionRegistry, SessionState
from harness.fakes.provider import FakeRuntime
from tests.unit.test_sessions import fake_config


@pytest.fixture(autouse=True)
def quick_notices(monkeypatch: pytest.MonkeyPatch) -> None:
	monkeypatch.setattr(admission, 'QUEUE_NOTICE', 0.05)


async def noop(state: SessionState) -> SessionState:
	return state


async def settle(holds: Any, timeout: float = 10.0) -> None:
	"""Until ``holds()`` is true: the queue moves on later turns of the loop, sooner or later on a busy machine."""
	end = asyncio.get_running_loop().time() + timeout
	while not holds():
		assert asyncio.get_running_loop().time() < end, 'the queue did not get there in time'
		await asyncio.sleep(0.01)


async def registry_with(tmp_path: Path, **overrides: Any) -> SessionRegistry:
	config = fake_config(tmp_path, **overrides)
	registry = SessionRegistry(config, runtime=FakeRuntime(config))
	await registry.start()
	return registry


class Notices:
	def __init__(self) -> None:
		self.messages: list[str] = []

	async def __call__(self, waited: float, timeout: float, message: str) -> None:
		self.messages.append(message)


async def test_a_busy_principal_never_holds_back_another(tmp_path: Path) -> None:
	registry = await registry_with(tmp_path, max_sessions=32, max_sessions_per_principal=3, queue_timeout=30)
	try:
		order: list[str] = []
		notices = {i: Notices() for i in range(10)}

		async def open_a(i: int) -> None:
			await registry.run('A', f'a{i}', noop, waiting=notices[i])
			order.append(f'a{i}')

		tasks = [asyncio.create_task(open_a(i)) for i in range(10)]
		await settle(lambda: len(order) == 3 and registry.slots.waiting('A') == 7)
		assert sorted(order) == ['a0', 'a1', 'a2'], 'A gets its 3, the other 7 wait'
		assert registry.slots.waiting('A') == 7
		# B is neither refused nor queued behind A's 7
		b = Notices()
		await asyncio.wait_for(registry.run('B', 'b0', noop, waiting=b), 1)
		assert b.messages == [] and registry.slots.waiting('A') == 7
		# A's 4th waits, is told why, and gets the slot one of A's sessions frees
		assert any('your limit (--max-sessions-per-principal 3)' in m for m in notices[3].messages), notices[3].messages
		assert 'and 0 more of your new sessions are queued ahead of this one' in notices[3].messages[-1]
		assert 'and 6 more of your new sessions are queued ahead' in notices[9].messages[-1]
		await registry.close('A', 'a0')
		await settle(lambda: len(order) == 4)
		assert order[3:] == ['a3'] and registry.slots.waiting('A') == 6
		# first come, first served within A: each slot freed goes to the next of A's waiters. One at a
		# time: a session granted its slot earlier may finish being created later than the next one
		for i, expected in ((1, 'a4'), (2, 'a5'), (3, 'a6')):
			await registry.close('A', f'a{i}')
			await settle(lambda n=4 + i: len(order) == n)
			assert order[-1] == expected and registry.slots.waiting('A') == 6 - i, order
		assert order[4:] == ['a4', 'a5', 'a6']
		for task in tasks:
			task.cancel()
		await asyncio.gather(*tasks, return_exceptions=True)
		assert registry.slots.waiting() == 0
	finally:
		await registry.shutdown()


async def test_principals_are_served_round_robin_at_the_server_limit(tmp_path: Path) -> None:
	registry = await registry_with(tmp_path, max_sessions=2, queue_timeout=30)
	try:
		await registry.run('A', 'held-1', noop)
		await registry.run('A', 'held-2', noop)
		order: list[str] = []

		async def open_(principal: str, sid: str) -> None:
			await registry.run(principal, sid, noop)
			order.append(sid)

		tasks = [asyncio.create_task(open_('A', f'a{i}')) for i in range(3)]
		await settle(lambda: registry.slots.waiting() == 3)
		tasks += [asyncio.create_task(open_('B', f'b{i}')) for i in range(2)]
		await settle(lambda: registry.slots.waiting() == 5)
		told = Notices()
		late = asyncio.create_task(registry.run('C', 'c0', noop, waiting=told))
		await settle(lambda: bool(told.messages))
		assert told.messages[0] == (
			"Waiting for a session slot for 'c0': the server holds 2 sessions, its limit (--max-sessions 2), "
			'and 5 new session(s) are queued ahead of this one.'
		)
		late.cancel()
		await asyncio.gather(late, return_exceptions=True)
		assert registry.slots.waiting() == 5
		for n, sid in enumerate(('held-1', 'held-2', 'a0', 'b0'), 1):  # each close frees one slot
			await registry.close(*(('A', sid) if sid[0] != 'b' else ('B', sid)))
			await settle(lambda n=n: len(order) == n)
		assert order == ['a0', 'b0', 'a1', 'b1'], order
		for task in tasks:
			task.cancel()
		await asyncio.gather(*tasks, return_exceptions=True)
	finally:
		await registry.shutdown()


async def test_a_queued_session_times_out_with_which_limit_and_how_many_ahead(tmp_path: Path) -> None:
	registry = await registry_with(tmp_path, max_sessions_per_principal=1, queue_timeout=0.3)
	try:
		await registry.run('A', 'mine', noop)
		first = asyncio.create_task(registry.run('A', 'second', noop))
		await settle(lambda: registry.slots.waiting('A') == 1)
		told = Notices()
		with pytest.raises(QueueTimeout) as caught:
			await registry.run('A', 'third', noop, waiting=told)
		assert told.messages[0] == (
			"Waiting for a session slot for 'third': you hold 1 sessions, your limit (--max-sessions-per-principal 1), "
			'and 1 more of your new sessions are queued ahead of this one.'
		)
		with pytest.raises(QueueTimeout):
			await first  # it timed out first: when 'third' gives up, nobody is ahead any more
		assert caught.value.message == (
			"Cannot create session 'third' yet: you hold 1 sessions, your limit (--max-sessions-per-principal 1), "
			'and 0 more of your new sessions are queued ahead of this one; no slot freed within 0.3 s (--queue-timeout). '
			'This is temporary: retry later, or close a session you no longer need with browser_close_session '
			'(browser_list_sessions shows yours).'
		)
		assert isinstance(caught.value, SessionLimitReached)
		assert registry.slots.waiting() == 0 and registry.count == 1
		await registry.close('A', 'mine')
		await registry.run('A', 'after', noop)  # nothing reserved was left behind
	finally:
		await registry.shutdown()


async def test_without_a_queue_timeout_a_limit_refuses_at_once(tmp_path: Path) -> None:
	registry = await registry_with(tmp_path, max_sessions_per_principal=1)  # stdio's default: no queue
	try:
		await registry.run('A', 'one', noop)
		with pytest.raises(SessionLimitReached, match='your limit \\(--max-sessions-per-principal 1\\)'):
			await asyncio.wait_for(registry.run('A', 'two', noop), 0.5)
		await registry.run('B', 'one', noop)
	finally:
		await registry.shutdown()


async def test_concurrent_calls_per_principal_wait_their_turn(tmp_path: Path) -> None:
	registry = await registry_with(tmp_path, max_calls_per_principal=1, queue_timeout=0.3)
	try:
		gate = asyncio.Event()

		async def slow(state: SessionState) -> SessionState:
			await gate.wait()
			return state

		running = asyncio.create_task(registry.run('A', 's1', slow))
		await settle(lambda: registry.call_slots.active('A') == 1)
		await asyncio.wait_for(registry.run('B', 's1', noop), 1)  # another principal is not held
		told = Notices()
		with pytest.raises(QueueTimeout, match='your limit \\(--max-calls-per-principal 1\\)'):
			await registry.run('A', 's2', noop, waiting=told)
		assert told.messages and told.messages[0].startswith('Waiting for a call slot: you have 1 calls running')
		waiting = asyncio.create_task(registry.run('A', 's2', noop))
		await asyncio.sleep(0.05)  # it queues behind s1 (nothing to observe: it only waits)
		gate.set()
		await running
		await asyncio.wait_for(waiting, 1)
	finally:
		await registry.shutdown()


@pytest.mark.parametrize(
	('flag', 'value'),
	[('max_sessions_per_principal', 0), ('max_calls_per_principal', -1), ('queue_timeout', -1.0)],
)
def test_zero_or_negative_quotas_are_a_start_up_error(flag: str, value: float) -> None:
	with pytest.raises(SystemExit, match='Invalid configuration'):
		load_config({}, browser_use=False, **{flag: value})


def test_queue_timeout_defaults() -> None:
	assert load_config({}, browser_use=False).queue_wait == 0
	assert load_config({}, browser_use=False, transport='http').queue_wait == 30
	env = {'BROWSER_USE_MCP_QUEUE_TIMEOUT': '5', 'BROWSER_USE_MCP_MAX_SESSIONS_PER_PRINCIPAL': '3'}
	config = load_config(env, browser_use=False)
	assert config.queue_wait == 5 and config.max_sessions_per_principal == 3
