"""A build ahead (browser_use_mcp/ahead.py) and ``SessionState.hold``: a holder cancels it first,
and a holder cancelled while it waits for the build ahead to let go is cancelled, not let in."""

from __future__ import annotations

import asyncio

import pytest

from browser_use_mcp.config import ServerConfig
from browser_use_mcp.sessions import SessionState


def a_state() -> SessionState:
	return SessionState('s', 'local', browser=None, dirs=None, config=ServerConfig())  # type: ignore[arg-type]


async def holding(state: SessionState, let_go_after: float) -> None:
	"""A build ahead holding the lock that takes ``let_go_after`` s to let go once cancelled."""
	await state.lock.acquire()
	try:
		await asyncio.sleep(3600)
	finally:
		await asyncio.shield(asyncio.sleep(let_go_after))
		state.lock.release()


async def test_a_hold_cancels_the_build_ahead_and_takes_the_session() -> None:
	state = a_state()
	state.ahead = task = asyncio.create_task(holding(state, 0.0))
	await asyncio.sleep(0.01)
	assert state.lock.locked()
	await asyncio.wait_for(state.hold(10), 2)
	assert task.cancelled() and state.ahead is None and state.busy == 1
	state.let_go()


async def test_a_holder_cancelled_while_the_build_ahead_lets_go_is_not_let_in() -> None:
	state = a_state()
	state.ahead = asyncio.create_task(holding(state, 0.5))
	await asyncio.sleep(0.01)
	holder = asyncio.create_task(state.hold(10))
	await asyncio.sleep(0.1)  # it waits for the build ahead to let go
	holder.cancel()
	with pytest.raises(asyncio.CancelledError):
		await holder
	assert state.busy == 0
	await asyncio.sleep(0.6)
	assert not state.lock.locked(), 'nobody holds the session'


async def test_a_build_ahead_scheduled_by_the_last_call_is_cancelled_by_the_next_one_waiting() -> None:
	"""The next call already waits for the lock when the last one ends and schedules a build ahead:
	once it holds the session, that build ahead is cancelled (its state would be this call's)."""
	from browser_use_mcp import ahead

	state = a_state()
	await state.hold(10)
	waiting = asyncio.create_task(state.hold(10))
	await asyncio.sleep(0.01)
	ahead.schedule(state)  # as the call ends, its lock still held
	scheduled = state.ahead
	assert scheduled is not None
	state.let_go()
	await asyncio.wait_for(waiting, 2)
	await asyncio.sleep(0)
	assert scheduled.cancelled() and state.ahead is None
	state.let_go()
