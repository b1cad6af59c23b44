"""Sessions never wait on each other: per-event-bus locks (browser_use_mcp.patches.bus_locks).

The first half drives bubus directly (no browser) to pin the lock's semantics: buses run in
parallel, nested awaits still work within a bus and never touch another bus's queue. The second
half runs the real server with real Chromium: while one session waits on a page that does not
answer, other sessions navigate, click, open and close tabs, go back, capture state and run the
browser-use agent (with the scripted model of harness/fakes, so nothing leaves the machine).
Blocking is shown by ordering (the slow page is held open until the others are done), never by
timing.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import threading
import time
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

import pytest
from bubus import BaseEvent, EventBus

from browser_use_mcp import patches
from browser_use_mcp.config import ServerConfig
from browser_use_mcp.patches import bus_locks
from harness.servers import Background, Mcp, running_server, server_env

DEADLOCK_GUARD = 30.0  # s: only reached if the lock serializes again; never a performance bound


# -- bubus, in process ---------------------------------------------------------------------------


class Outer(BaseEvent[str]):
	label: str = ''


class Inner(BaseEvent[str]):
	label: str = ''


class Leaf(BaseEvent[str]):
	label: str = ''


@pytest.fixture
def pristine() -> Iterator[None]:
	"""bubus as shipped for the test, whatever an earlier in-process server left installed."""
	was = patches.status_of(bus_locks.PATCH)
	patches.revert(bus_locks.PATCH)
	yield
	patches.revert(bus_locks.PATCH)
	if was is not None:
		patches.apply(bus_locks.PATCH, enabled=was.state != 'off')


@pytest.fixture
async def patched(pristine: None) -> AsyncIterator[None]:
	assert patches.apply(bus_locks.PATCH, enabled=True).state == 'active'
	buses: list[EventBus] = []
	try:
		yield
	finally:
		for bus in list(EventBus.all_instances):
			if bus.name.startswith('T_'):
				buses.append(bus)
		await asyncio.gather(*(b.stop(clear=True, timeout=2) for b in buses), return_exceptions=True)


def make_bus(name: str) -> EventBus:
	return EventBus(name=f'T_{name}_{time.monotonic_ns()}')


def test_pinned_bubus_matches_what_the_patch_was_written_for(pristine: None) -> None:
	assert patches.problems(bus_locks.PATCH) == []


async def test_buses_run_in_parallel_and_nested_awaits_still_work(patched: None) -> None:
	a, b = make_bus('a'), make_bus('b')
	gate, a_waiting = asyncio.Event(), asyncio.Event()

	async def a_outer(event: Outer) -> str:
		inner = await a.dispatch(Inner(label='a'))  # nested await on its own bus
		a_waiting.set()
		await gate.wait()  # a slow page: holds a's lock
		return 'a:' + (await inner.event_result())

	async def inner(event: Inner) -> str:
		leaf = await event.event_bus.dispatch(Leaf(label=event.label))  # two levels deep
		return f'inner({await leaf.event_result()})'

	async def leaf(event: Leaf) -> str:
		assert [bus.name for bus in bus_locks.held_buses()] == [event.event_bus.name]
		return f'leaf-{event.label}'

	async def b_outer(event: Outer) -> str:
		return 'b:' + (await (await b.dispatch(Inner(label='b'))).event_result())

	a.on(Outer, a_outer)
	b.on(Outer, b_outer)
	for bus in (a, b):
		bus.on(Inner, inner)
		bus.on(Leaf, leaf)

	slow = a.dispatch(Outer())
	await asyncio.wait_for(a_waiting.wait(), DEADLOCK_GUARD)
	fast = await asyncio.wait_for(b.dispatch(Outer()), DEADLOCK_GUARD)
	assert await fast.event_result() == 'b:inner(leaf-b)'
	assert not slow.event_completed_signal.is_set()
	gate.set()
	done = await asyncio.wait_for(slow, DEADLOCK_GUARD)
	assert await done.event_result() == 'a:inner(leaf-a)'
	# parentage is intact: the child events were recorded under their parents
	assert all(e.event_parent_id is not None for e in a.event_history.values() if not isinstance(e, Outer))


async def test_a_held_bus_runs_nothing_beside_its_holder_and_others_stay_free(patched: None) -> None:
	"""While a handler holds its bus, that bus's later events wait; other buses' events run in
	their own loop (never in the holder's nested loop, which would run them beside their holder)."""
	a, b = make_bus('a'), make_bus('b')
	waiting, release = asyncio.Event(), asyncio.Event()
	runners: dict[str, list[str]] = {}

	async def outer(event: Outer) -> str:
		bus = event.event_bus
		runners[event.label] = [x.name for x in bus_locks.held_buses()]
		await bus.dispatch(Inner(label=event.label))
		if event.label == 'hold':
			waiting.set()
			await release.wait()
		return event.label

	async def inner(event: Inner) -> str:
		runners['inner-' + event.label] = [x.name for x in bus_locks.held_buses()]
		return event.label

	for bus in (a, b):
		bus.on(Outer, outer)
		bus.on(Inner, inner)
	held = a.dispatch(Outer(label='hold'))
	await asyncio.wait_for(waiting.wait(), DEADLOCK_GUARD)
	queued_a = [a.dispatch(Outer(label=f'a{i}')) for i in range(3)]
	queued_b = [b.dispatch(Outer(label=f'b{i}')) for i in range(3)]
	await asyncio.wait_for(asyncio.gather(*queued_b), DEADLOCK_GUARD)
	assert not any(e.event_completed_signal.is_set() for e in queued_a)
	release.set()
	await asyncio.wait_for(asyncio.gather(held, *queued_a), DEADLOCK_GUARD)
	for label, names in runners.items():
		own = a.name if label.removeprefix('inner-') in ('hold', 'a0', 'a1', 'a2') else b.name
		assert names == [own], (label, names)


async def test_awaiting_another_bus_from_a_handler_completes(patched: None) -> None:
	a, b = make_bus('a'), make_bus('b')

	async def a_outer(event: Outer) -> str:
		other = await b.dispatch(Inner(label='from-a'))  # not our lock: b's own loop runs it
		return await other.event_result()

	async def b_inner(event: Inner) -> str:
		assert [bus.name for bus in bus_locks.held_buses()] == [b.name]
		return f'b saw {event.label}'

	a.on(Outer, a_outer)
	b.on(Inner, b_inner)
	done = await asyncio.wait_for(a.dispatch(Outer()), DEADLOCK_GUARD)
	assert await done.event_result() == 'b saw from-a'


async def test_a_run_loop_started_inside_a_handler_holds_no_foreign_lock(patched: None) -> None:
	a = make_bus('a')
	fresh = make_bus('fresh')  # its run loop starts on first dispatch, inside a's handler
	seen: list[list[str]] = []

	async def a_outer(event: Outer) -> str:
		fresh.dispatch(Inner())
		return 'ok'

	async def fresh_inner(event: Inner) -> str:
		seen.append([bus.name for bus in bus_locks.held_buses()])
		return 'ok'

	a.on(Outer, a_outer)
	fresh.on(Inner, fresh_inner)
	await asyncio.wait_for(a.dispatch(Outer()), DEADLOCK_GUARD)
	await asyncio.wait_for(fresh.wait_until_idle(), DEADLOCK_GUARD)
	assert seen == [[fresh.name]]


def _records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
	return [r for r in caplog.records if r.name == bus_locks.PATCH.logger]


@pytest.mark.parametrize('break_it', ['version', 'source'])
def test_refuses_with_one_log_line_when_bubus_differs(break_it: str, pristine: None, caplog: pytest.LogCaptureFixture) -> None:
	import bubus.models
	import bubus.service

	if break_it == 'version':
		broken = dataclasses.replace(bus_locks.PATCH, versions=('0.0.1',))
	else:
		broken = dataclasses.replace(
			bus_locks.PATCH, sources={**bus_locks.PATCH.sources, 'bubus.service:EventBus.step': '0000000000000000'}
		)
	original_lock, original_step = bubus.service._get_global_lock, bubus.service.EventBus.step
	with caplog.at_level(logging.INFO, logger=bus_locks.PATCH.logger):
		assert patches.apply(broken, enabled=True).state == 'refused'
	records = _records(caplog)
	assert len(records) == 1 and records[0].levelno == logging.WARNING
	assert 'keeping bubus global event lock' in records[0].getMessage()
	assert bubus.service._get_global_lock is original_lock and bubus.service.EventBus.step is original_step


def test_disabled_by_configuration_changes_nothing(pristine: None, caplog: pytest.LogCaptureFixture) -> None:
	import bubus.service

	original = bubus.service._get_global_lock
	with caplog.at_level(logging.INFO, logger=bus_locks.PATCH.logger):
		assert patches.apply(bus_locks.PATCH, ServerConfig(parallel_event_buses=False)).state == 'off'
	assert bubus.service._get_global_lock is original
	assert len(_records(caplog)) == 1


def test_uninstall_restores_bubus(pristine: None) -> None:
	import bubus.models
	import bubus.service

	before = (bubus.service._get_global_lock, bubus.service.EventBus.step, bubus.models.BaseEvent.__await__)
	assert patches.apply(bus_locks.PATCH, enabled=True).state == 'active'
	assert bubus.service.EventBus.step is not before[1]
	patches.revert(bus_locks.PATCH)
	after = (bubus.service._get_global_lock, bubus.service.EventBus.step, bubus.models.BaseEvent.__await__)
	assert after == before


# -- the real server -----------------------------------------------------------------------------


class Gates:
	"""A loopback page server whose /gate/<name> pages answer only once the test opens them."""

	def __init__(self) -> None:
		self.arrived: dict[str, threading.Event] = {}
		self.open: dict[str, threading.Event] = {}
		self._lock = threading.Lock()
		gates = self

		class Handler(BaseHTTPRequestHandler):
			protocol_version = 'HTTP/1.1'

			def log_message(self, *args: object) -> None:
				pass

			def do_GET(self) -> None:  # noqa: N802
				path = urlparse(self.path).path
				name = path.rsplit('/', 1)[-1]
				status = 404
				body = b'<!doctype html><title>Not found</title>'
				if path.startswith('/gate/'):
					gates.event(gates.arrived, name).set()
					gates.event(gates.open, name).wait(DEADLOCK_GUARD * 2)
					status, body = 200, f'<!doctype html><title>Gate {name}</title><p>gate {name} opened</p>'.encode()
				with contextlib.suppress(OSError):  # the browser may have given up on the page
					self.send_response(status)
					self.send_header('Content-Type', 'text/html; charset=utf-8')
					self.send_header('Content-Length', str(len(body)))
					self.end_headers()
					self.wfile.write(body)

		self.httpd = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
		self.httpd.daemon_threads = True
		self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

	def event(self, table: dict[str, threading.Event], name: str) -> threading.Event:
		with self._lock:
			return table.setdefault(name, threading.Event())

	def url(self, name: str) -> str:
		return f'http://127.0.0.1:{self.httpd.server_address[1]}/gate/{name}'

	async def wait_arrived(self, name: str) -> None:
		assert await asyncio.to_thread(self.event(self.arrived, name).wait, DEADLOCK_GUARD), f'gate {name} never requested'

	def release(self, name: str) -> None:
		self.event(self.open, name).set()

	def close(self) -> None:
		for event in list(self.open.values()):
			event.set()
		self.httpd.shutdown()
		self.httpd.server_close()


@pytest.fixture(scope='module')
async def parallel(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Mcp]:
	"""The server as shipped (per-bus locks on), with the scripted model for the agent tool."""
	home = tmp_path_factory.mktemp('parallel-home')
	env = server_env(home, BROWSER_USE_MCP_LLM_FACTORY='harness.fakes.scripted_llm:make_llm')
	async with Background(running_server(home, env=env)) as server:
		yield server


@pytest.fixture(scope='module')
def gates() -> Iterator[Gates]:
	server = Gates()
	server.thread.start()
	try:
		yield server
	finally:
		server.close()


async def browse(mcp: Mcp, sid: str, site: str) -> list[str]:
	"""A session's full tour of nested-await paths: navigate, state, click, tabs, back, screenshot."""
	seen = []
	r = await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/')
	assert r.text == f'Navigated to: {site}/'
	state = (await mcp.ok('browser_get_state', session_id=sid)).json()
	seen.append(state['title'])
	link = next(e['index'] for e in state['interactive_elements'] if e.get('href') == '/two')
	await mcp.ok('browser_click', session_id=sid, index=link)
	seen.append((await mcp.ok('browser_get_state', session_id=sid)).json()['title'])
	await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/form', new_tab=True)
	tabs = (await mcp.ok('browser_list_tabs', session_id=sid)).json()
	assert [t['url'] for t in tabs] == [f'{site}/two', f'{site}/form']
	await mcp.ok('browser_switch_tab', session_id=sid, tab_id=tabs[0]['tab_id'])
	await mcp.ok('browser_close_tab', session_id=sid, tab_id=tabs[1]['tab_id'])
	await mcp.ok('browser_go_back', session_id=sid)
	state = (await mcp.ok('browser_get_state', session_id=sid, include_screenshot=True)).json()
	seen.append(state['title'])
	shot = await mcp.ok('browser_screenshot', session_id=sid)
	assert shot.images
	return seen


async def test_sessions_keep_working_while_another_waits_on_a_page(parallel: Mcp, site: str, gates: Gates) -> None:
	mcp = parallel
	held = asyncio.create_task(mcp.call('browser_navigate', session_id='held', url=gates.url('held')))
	try:
		await gates.wait_arrived('held')  # session 'held' is now inside its navigation handler
		tours = await asyncio.wait_for(
			asyncio.gather(browse(mcp, 'tour-1', site), browse(mcp, 'tour-2', site)), DEADLOCK_GUARD * 2
		)
		assert tours == [['Home Page', 'Page Two', 'Home Page']] * 2
		assert not held.done(), 'the held page was answered before the other sessions finished'
	finally:
		gates.release('held')
	result = await asyncio.wait_for(held, DEADLOCK_GUARD)
	assert not result.is_error, result.text
	assert result.text == f'Navigated to: {gates.url("held")}'
	state = (await mcp.ok('browser_get_state', session_id='held')).json()
	assert state['title'] == 'Gate held'
	for sid in ('held', 'tour-1', 'tour-2'):
		await mcp.ok('browser_close_session', session_id=sid)


async def test_measured_fast_session_beside_a_slow_page_load(parallel: Mcp, site: str) -> None:
	"""Measurement, not a bound: B's navigation alone and during A's 4 s page; both must be right."""
	mcp = parallel
	await mcp.ok('browser_navigate', session_id='slow-a', url=f'{site}/')
	await mcp.ok('browser_navigate', session_id='fast-b', url=f'{site}/')
	alone = []
	for _ in range(3):
		started = time.perf_counter()
		await mcp.ok('browser_navigate', session_id='fast-b', url=f'{site}/two')
		alone.append(time.perf_counter() - started)
	slow = asyncio.create_task(mcp.call('browser_navigate', session_id='slow-a', url=f'{site}/slow?s=4'))
	await asyncio.sleep(0.5)
	started = time.perf_counter()
	r = await mcp.ok('browser_navigate', session_id='fast-b', url=f'{site}/')
	during = time.perf_counter() - started
	state_b = (await mcp.ok('browser_get_state', session_id='fast-b')).json()
	result_a = await asyncio.wait_for(slow, DEADLOCK_GUARD)
	state_a = (await mcp.ok('browser_get_state', session_id='slow-a')).json()
	assert r.text == f'Navigated to: {site}/' and state_b['title'] == 'Home Page'
	assert not result_a.is_error and state_a['title'] == 'Slow'
	baseline = sorted(alone)[1]
	print(f'\nB navigate alone {baseline * 1000:.0f} ms, during A slow load {during * 1000:.0f} ms ({during / baseline:.1f}x)')
	for sid in ('slow-a', 'fast-b'):
		await mcp.ok('browser_close_session', session_id=sid)


def scripted(goal: str, *steps: list[dict]) -> str:
	"""An agent task the scripted model plays back (harness/fakes/scripted_llm.py)."""
	return f'{goal} @@script{json.dumps({"steps": list(steps)})}@@end'


async def test_an_agent_waiting_on_a_page_does_not_hold_up_other_sessions(parallel: Mcp, site: str, gates: Gates) -> None:
	mcp = parallel
	await mcp.ok('browser_navigate', session_id='agent', url=f'{site}/')
	steps = [[{'navigate': {'url': gates.url('agent'), 'new_tab': False}}], [{'done': {'text': 'at {url}', 'success': True}}]]
	agent = asyncio.create_task(
		mcp.call('retry_with_browser_use_agent', timeout=120, session_id='agent', task=scripted('Go.', *steps), max_steps=3)
	)
	try:
		await gates.wait_arrived('agent')  # the agent's navigation is in its session's handler now
		r = await asyncio.wait_for(mcp.ok('browser_navigate', session_id='beside', url=f'{site}/two'), DEADLOCK_GUARD)
		assert r.text == f'Navigated to: {site}/two'
		state = (await mcp.ok('browser_get_state', session_id='beside')).json()
		assert state['title'] == 'Page Two'
		assert not agent.done()
	finally:
		gates.release('agent')
	result = await asyncio.wait_for(agent, DEADLOCK_GUARD * 2)
	assert not result.is_error, result.text
	assert f'at {gates.url("agent")}' in result.text
	for sid in ('agent', 'beside'):
		await mcp.ok('browser_close_session', session_id=sid)


@pytest.fixture(scope='module')
async def serialized(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Mcp]:
	"""A server with the patch switched off: bubus's global lock, as upstream runs."""
	home = tmp_path_factory.mktemp('serialized-home')
	env = server_env(home, BROWSER_USE_MCP_PARALLEL_EVENT_BUSES='false')
	async with Background(running_server(home, env=env)) as server:
		yield server


async def test_control_without_the_patch_sessions_wait_on_each_other(serialized: Mcp, site: str, gates: Gates) -> None:
	"""Shows what the patch fixes (and that the test above would notice a regression)."""
	await serialized.ok('browser_navigate', session_id='other', url=f'{site}/')
	held = asyncio.create_task(serialized.call('browser_navigate', session_id='held', url=gates.url('control')))
	other = None
	try:
		await gates.wait_arrived('control')
		other = asyncio.create_task(serialized.call('browser_navigate', session_id='other', url=f'{site}/two'))
		done, _ = await asyncio.wait({other}, timeout=3)
		assert not done, 'without the patch a navigation should queue behind the held page'
	finally:
		gates.release('control')
	assert not (await asyncio.wait_for(held, DEADLOCK_GUARD)).is_error
	assert other is not None
	assert not (await asyncio.wait_for(other, DEADLOCK_GUARD)).is_error
