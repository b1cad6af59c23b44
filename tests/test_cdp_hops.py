"""Fewer hops per CDP message (issue 24): browser-use reaches our endpoint in process
(``patches.local_cdp``, ``providers.local_cdp``), a CDP request is capped without a task of its
own (``patches.cdp_calls``), and a command pending on a tab that closes is answered at once
(``cdp_pipe.Channel``).

The unit half drives the in-memory ends and a real cdp-use client against links of ours; the
Chromium half runs sessions in both isolation modes and counts what is actually sent.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosedOK, InvalidStatus
from websockets.protocol import State

from browser_use_mcp.catalog import Catalog
from browser_use_mcp.errors import BrowserActionFailed
from browser_use_mcp.patches import cdp_calls, local_cdp
from browser_use_mcp.providers import cdp_proxy
from browser_use_mcp.providers import local_cdp as ends
from browser_use_mcp.sessions import SessionRegistry
from browser_use_mcp.tools.base import Call
from tests.fixtures import in_process_registry, patches_active


@pytest.fixture
def hops_patched() -> Any:
	"""local_cdp and cdp_calls active for the test; afterwards each as it was."""
	with patches_active(local_cdp.PATCH, cdp_calls.PATCH):
		yield


class Answering:
	"""A link that answers every command with its method, and counts its connections."""

	def __init__(self) -> None:
		self.connections: list[Any] = []

	async def serve(self, client: Any) -> None:
		self.connections.append(client)
		async for text in client:
			message = json.loads(text)
			await client.send(json.dumps({'id': message['id'], 'result': {'method': message['method']}}))


# -- unit: the in-memory ends --------------------------------------------------------------------


async def test_local_ends_carry_text_both_ways_and_a_close_ends_both() -> None:
	client, link = ends.pair()
	await client.send('one')
	await client.send(b'two')
	assert [await link.recv(), await link.recv()] == ['one', 'two']
	reader = asyncio.ensure_future(client.recv())
	await asyncio.sleep(0)
	await link.send('three')
	assert await reader == 'three'
	assert client.state is State.OPEN
	waiting = asyncio.ensure_future(link.recv())
	await asyncio.sleep(0)
	await client.close()
	with pytest.raises(ConnectionClosedOK):
		await waiting  # the other side's pending read ends, as after a websocket close
	assert client.state is link.state is State.CLOSED
	with pytest.raises(ConnectionClosedOK):
		await link.send('too late')
	assert [t async for t in link] == []


async def test_a_link_is_served_in_process_until_either_side_closes() -> None:
	router = cdp_proxy.ContextRouter()
	await router.start()
	try:
		link = Answering()
		url = router.add(link)
		assert cdp_proxy.local_link(url) is link
		assert cdp_proxy.local_link(url.replace('127.0.0.1', 'localhost')) is None
		assert cdp_proxy.local_link(url[:-1]) is None and cdp_proxy.local_link(None) is None
		before = ends.open_connections()
		client = ends.connect(link)
		await client.send(json.dumps({'id': 1, 'method': 'Target.getTargets'}))
		assert json.loads(await client.recv()) == {'id': 1, 'result': {'method': 'Target.getTargets'}}
		assert ends.open_connections() == before + 1
		await client.close()
		for _ in range(50):
			if ends.open_connections() == before:
				break
			await asyncio.sleep(0.01)
		assert ends.open_connections() == before, 'the link still serves a closed connection'
		# the router closing ends the connections still open, as closing its server would
		client = ends.connect(link)
		await asyncio.sleep(0)
		assert ends.open_connections() == before + 1
	finally:
		await router.close()
	for _ in range(50):
		if ends.open_connections() == before:
			break
		await asyncio.sleep(0.01)
	assert ends.open_connections() == before
	with pytest.raises(ConnectionClosedOK):
		await client.recv()


async def test_cdp_use_reaches_our_endpoint_in_process_and_any_other_url_over_the_network(hops_patched: None) -> None:
	from cdp_use.client import CDPClient

	router = cdp_proxy.ContextRouter()
	await router.start()
	try:
		link = Answering()
		url = router.add(link)
		client = CDPClient(url)
		await client.start()
		try:
			assert isinstance(client.ws, ends.LocalEnd)
			assert await client.send_raw('Browser.getVersion') == {'method': 'Browser.getVersion'}
			assert len(link.connections) == 1 and isinstance(link.connections[0], ends.LocalEnd)
		finally:
			await client.stop()
		# a URL that is not one of our links goes to the network as before: our router refuses it there
		stranger = CDPClient(url[:-2] + 'xx')
		with pytest.raises(InvalidStatus):
			await stranger.start()
		assert len(link.connections) == 1
	finally:
		await router.close()


# -- with Chromium ---------------------------------------------------------------------------------


@pytest.fixture(scope='module', params=['context', 'browser'])
async def registry(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> AsyncIterator[SessionRegistry]:
	async with in_process_registry(Path(tmp_path_factory.mktemp('hops')) / 'state', request.param, idle_timeout=600) as registry:
		yield registry


def _session(registry: SessionRegistry, session_id: str) -> Any:
	return next(s for s in registry.sessions() if s.session_id == session_id)


def _counting(client: Any, counts: collections.Counter[str]) -> Any:
	"""Count every method ``client`` sends from now on; returns the undo."""
	original = client.send_raw

	async def send_raw(method: str, params: Any = None, session_id: str | None = None) -> Any:
		counts[method] += 1
		return await original(method, params, session_id)

	client.send_raw = send_raw
	return lambda: vars(client).pop('send_raw', None)


async def test_a_sessions_browser_use_talks_to_its_browser_in_process(
	registry: SessionRegistry, site: str, hops_patched: None
) -> None:
	catalog = Catalog(registry)
	before = ends.open_connections()
	await catalog.call('browser_navigate', {'session_id': 'inproc', 'url': f'{site}/two'}, Call())
	state = _session(registry, 'inproc')
	client = state.browser_session.cdp_client
	assert isinstance(client.ws, ends.LocalEnd) and state.browser_session.is_cdp_connected
	assert ends.open_connections() == before + 1
	result = await catalog.call('browser_get_state', {'session_id': 'inproc'}, Call())
	assert '/two' in json.loads(result.text)['url']
	await catalog.call('browser_close_session', {'session_id': 'inproc'}, Call())
	for _ in range(100):
		if ends.open_connections() == before:
			break
		await asyncio.sleep(0.02)
	assert ends.open_connections() == before, 'a closed session left its CDP connection served'


async def test_a_cdp_request_is_capped_without_a_task_of_its_own(
	registry: SessionRegistry, site: str, hops_patched: None
) -> None:
	catalog = Catalog(registry)
	await catalog.call('browser_navigate', {'session_id': 'capped', 'url': f'{site}/'}, Call())
	bs = _session(registry, 'capped').browser_session
	client = bs.cdp_client
	cdp = await bs.get_or_create_cdp_session(focus=False)
	loop = asyncio.get_running_loop()
	factory = loop.get_task_factory()
	made: list[str] = []

	def counting(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
		made.append(getattr(coro, '__qualname__', repr(coro)))
		return factory(loop, coro, **kwargs) if factory is not None else asyncio.Task(coro, loop=loop, **kwargs)

	loop.set_task_factory(counting)
	try:
		for i in range(10):
			answer = await client.send.Runtime.evaluate(
				params={'expression': f'{i} + 1', 'returnByValue': True}, session_id=cdp.session_id
			)
			assert answer['result']['value'] == i + 1
	finally:
		loop.set_task_factory(factory)
	# browser-use's wrapper ran each request's send_raw in a task of its own (asyncio.wait_for); other
	# tasks made meanwhile are the session's background work (bubus's queues, events from the page)
	per_request = [name for name in made if 'send_raw' in name]
	assert per_request == [], f'tasks were made per request: {per_request[:3]}'
	# the cap still holds: a request with no answer ends in TimeoutError, and the client goes on
	saved = client._cdp_request_timeout_s
	client._cdp_request_timeout_s = 0.3
	try:
		with pytest.raises(TimeoutError, match='Runtime.evaluate'):
			await client.send.Runtime.evaluate(
				params={'expression': 'new Promise(() => {})', 'awaitPromise': True}, session_id=cdp.session_id
			)
	finally:
		client._cdp_request_timeout_s = saved
	answer = await client.send.Runtime.evaluate(params={'expression': '2 + 2', 'returnByValue': True}, session_id=cdp.session_id)
	assert answer['result']['value'] == 4
	await catalog.call('browser_close_session', {'session_id': 'capped'}, Call())


async def _known_at(bs: Any, target_id: str, path: str) -> None:
	"""Until browser-use knows the new tab and its URL (the headless shell answers createTarget before
	the tab's URL reaches browser-use; the full Chromium ~40 ms later, by when it has)."""
	for _ in range(250):
		target = bs.session_manager.get_target(target_id)
		if await bs.session_manager.is_target_valid(target_id) and target is not None and path in (target.url or ''):
			return
		await asyncio.sleep(0.02)
	raise AssertionError(f'browser-use never saw tab {target_id} at {path}')


async def test_the_focused_tab_closed_behind_browser_uses_back_is_left_at_once(registry: SessionRegistry, site: str) -> None:
	"""The session's focused tab closed by someone else (the page itself, another client) while
	another tab is open: the next call works on that tab. Until the channel answered the commands
	Chromium drops on a detached session, the state's first read of the closed tab waited out the
	60 s CDP timeout."""
	catalog = Catalog(registry)
	await catalog.call('browser_navigate', {'session_id': 'focus', 'url': f'{site}/'}, Call())
	bs = _session(registry, 'focus').browser_session
	for round_ in range(3):
		kept = (await bs.cdp_client.send.Target.createTarget(params={'url': f'{site}/two'}))['targetId']
		await _known_at(bs, kept, '/two')
		await bs.cdp_client.send.Target.closeTarget(params={'targetId': bs.agent_focus_target_id})
		# read while the tab is closing: its state, or an error saying so; either way at once
		with contextlib.suppress(BrowserActionFailed):
			await asyncio.wait_for(catalog.call('browser_get_state', {'session_id': 'focus'}, Call()), 20)
		reply = await asyncio.wait_for(catalog.call('browser_get_state', {'session_id': 'focus'}, Call()), 20)
		result = json.loads(reply.text)
		assert '/two' in result['url'], (round_, result['url'])
		assert bs.agent_focus_target_id == kept
	await catalog.call('browser_close_session', {'session_id': 'focus'}, Call())


def test_deep_serialized_elements_give_their_backend_ids_or_none() -> None:
	from browser_use_mcp.patches.dom_capture import backend_ids

	def node(backend_id: Any) -> dict[str, Any]:
		return {'type': 'node', 'value': {'nodeType': 1, 'localName': 'div', 'backendNodeId': backend_id}}

	assert backend_ids({'type': 'array', 'value': [node(4), node(9)]}) == {4, 9}
	assert backend_ids({'type': 'array', 'value': []}) == set()
	# anything short of an id for every element: asked for the old way
	assert backend_ids({'type': 'array', 'value': [node(4), node(None)]}) is None
	assert backend_ids({'type': 'array', 'value': [node(4), {'type': 'object', 'value': []}]}) is None
	assert backend_ids({'type': 'string', 'value': 'overflow'}) is None
	assert backend_ids(None) is None


async def test_the_listener_scan_answers_in_one_evaluation_what_the_round_trips_answered(
	registry: SessionRegistry, site: str, monkeypatch: pytest.MonkeyPatch
) -> None:
	"""The elements with click-like listeners, found by one evaluation whose answer carries their
	backendNodeIds, are the ones found by asking for each element (the previous way, still the
	fallback): the same ids, and no DOM.describeNode or Runtime.getProperties sent."""
	from browser_use.dom import service as module

	from browser_use_mcp.patches import dom_capture

	catalog = Catalog(registry)
	await catalog.call('browser_navigate', {'session_id': 'listeners', 'url': f'{site}/rich'}, Call())
	bs = _session(registry, 'listeners').browser_session
	cdp = await bs.get_or_create_cdp_session(focus=False)
	script = dom_capture.listener_script(module._MAX_JS_CLICK_LISTENER_ELEMENTS, module._JS_CLICK_LISTENER_OVERFLOW)
	counts: collections.Counter[str] = collections.Counter()
	undo = _counting(bs.cdp_client, counts)
	try:
		direct = await dom_capture.click_listener_ids(bs.cdp_client, cdp.session_id, script, module._DESCRIBE_NODE_BATCH_SIZE)
		assert counts['Runtime.evaluate'] == 1 and counts['DOM.describeNode'] == counts['Runtime.getProperties'] == 0
		monkeypatch.setattr(dom_capture, 'backend_ids', lambda _value: None)
		asked = await dom_capture.click_listener_ids(bs.cdp_client, cdp.session_id, script, module._DESCRIBE_NODE_BATCH_SIZE)
		assert counts['DOM.describeNode'] >= 2
	finally:
		undo()
	assert len(direct) >= 2 and direct == asked
	await catalog.call('browser_close_session', {'session_id': 'listeners'}, Call())


async def test_a_state_reads_its_frames_once(registry: SessionRegistry, site: str) -> None:
	"""The frame tree read to tell which document a state is of also names the frames whose
	accessibility trees the state reads: one Page.getFrameTree per state, and the iframe's
	elements are still there with their accessible names."""
	catalog = Catalog(registry)
	await catalog.call('browser_navigate', {'session_id': 'frames', 'url': f'{site}/rich'}, Call())
	bs = _session(registry, 'frames').browser_session
	await catalog.call('browser_get_state', {'session_id': 'frames'}, Call())  # warm
	counts: collections.Counter[str] = collections.Counter()
	undo = _counting(bs.cdp_client, counts)
	try:
		result = json.loads((await catalog.call('browser_get_state', {'session_id': 'frames'}, Call())).text)
	finally:
		undo()
	assert counts['Page.getFrameTree'] == 1, counts
	assert counts['Accessibility.getFullAXTree'] + counts['DOM.getDocument'] == 0, 'the large answers come from the pipe'
	assert 'Inner count' in json.dumps(result['interactive_elements']), 'the iframe was read'
	await catalog.call('browser_close_session', {'session_id': 'frames'}, Call())


async def test_a_states_first_reads_go_beside_the_focus_check_and_follow_the_focus(registry: SessionRegistry, site: str) -> None:
	"""browser_get_state's document read and browser-use's pending-requests check are sent before the
	focus check's tab list is answered (``common.read_ahead``), once each. When the focus moves to
	another tab after they were read (browser-use or the focus check re-focusing after the tab was
	closed), the state is the new tab's, and so are its indices: typing by one of them acts there
	instead of being refused as of another tab."""
	from browser_use_mcp import catalog as catalog_module
	from browser_use_mcp.tools import common

	catalog = Catalog(registry)
	await catalog.call('browser_navigate', {'session_id': 'ahead', 'url': f'{site}/'}, Call())
	await catalog.call('browser_get_state', {'session_id': 'ahead'}, Call())
	bs = _session(registry, 'ahead').browser_session
	root = bs._cdp_client_root
	original = root.send_raw
	log: list[tuple[str, str, int]] = []  # (event, method, sequence)

	async def send_raw(method: str, params: Any = None, session_id: str | None = None) -> Any:
		name = 'pending check' if 'getEntriesByType' in str((params or {}).get('expression', '')) else method
		log.append(('sent', name, len(log)))
		try:
			return await original(method, params, session_id)
		finally:
			log.append(('answered', name, len(log)))

	root.send_raw = send_raw
	try:
		await catalog.call('browser_get_state', {'session_id': 'ahead'}, Call())
	finally:
		del root.send_raw

	def at(event: str, method: str) -> list[int]:
		return [n for e, m, n in log if e == event and m == method]

	assert len(at('sent', 'Page.getFrameTree')) == 1 and len(at('sent', 'pending check')) == 1, log
	focus_check = at('answered', 'Target.getTargets')[0]  # the first: ensure_focus's
	assert at('sent', 'Page.getFrameTree')[0] < focus_check and at('sent', 'pending check')[0] < focus_check, log

	# the focused tab is gone by the time the focus check looks: it moves the focus to the other tab
	kept = (await bs.cdp_client.send.Target.createTarget(params={'url': f'{site}/form'}))['targetId']
	await _known_at(bs, kept, '/form')
	ensure_focus = catalog_module.ensure_focus

	async def focus_moved(state: Any) -> None:
		ahead = common._read_ahead.get()
		assert ahead is not None
		await ahead[1]  # the read-ahead has read the tab focused until now
		await state.browser_session.get_or_create_cdp_session(target_id=kept, focus=True)
		await ensure_focus(state)

	catalog_module.ensure_focus = focus_moved
	try:
		reply = await catalog.call('browser_get_state', {'session_id': 'ahead'}, Call())
	finally:
		catalog_module.ensure_focus = ensure_focus
	result = json.loads(reply.text)
	assert '/form' in result['url']
	field = next(e for e in result['interactive_elements'] if e.get('tag') == 'input')
	await catalog.call('browser_type', {'session_id': 'ahead', 'index': field['index'], 'text': 'ahead'}, Call())
	await catalog.call('browser_close_session', {'session_id': 'ahead'}, Call())


def test_only_the_second_attach_made_by_turning_auto_attach_on_is_let_go() -> None:
	book = cdp_proxy.Attaches()
	book.sent({'id': 1, 'method': 'Target.attachToTarget', 'params': {'targetId': 'T1', 'flatten': True}})
	assert book.waiting and book.attached('s1', 'T1')  # the client's own attach
	book.answered(1)
	assert not book.waiting
	book.sent({'id': 2, 'method': 'Target.setAutoAttach', 'params': {'autoAttach': True, 'flatten': True}})
	assert not book.attached('s2', 'T1'), 'the same tab again, by the auto-attach'
	assert book.attached('s3', 'T2'), 'a tab it had not attached'
	book.sent({'id': 3, 'method': 'Target.attachToTarget', 'params': {'targetId': 'T1', 'flatten': True}})
	assert book.attached('s4', 'T1'), 'a second session the client asks for itself is its own'
	book.answered(3)
	book.answered(2)
	assert not book.waiting
	assert book.attached('s5', 'T1'), 'outside the auto-attach turning on, nothing is second-guessed'
	book.detached('s1')
	assert 's1' not in book.targets
	book.sent({'id': 4, 'method': 'Target.setAutoAttach', 'params': {'autoAttach': False}})
	assert not book.waiting, 'turning auto-attach off attaches nothing'


class _Recorded:
	"""One end of a link under test: what was sent to it, in order."""

	def __init__(self) -> None:
		self.sent: list[dict[str, Any]] = []

	async def send(self, text: str) -> None:
		self.sent.append(json.loads(text))


async def _link_after(*commands: dict[str, Any]) -> tuple[cdp_proxy.ContextLink, _Recorded]:
	link = cdp_proxy.ContextLink(None, 'CTX')  # type: ignore[arg-type]
	upstream, client = _Recorded(), _Recorded()
	link._upstream, link._client = upstream, client  # type: ignore[assignment]
	for command in commands:
		await link._from_client(json.dumps(command))
	return link, upstream


DISCOVER_PAGES = {'id': 1, 'method': 'Target.setDiscoverTargets', 'params': {'discover': True, 'filter': [{'type': 'page'}]}}
BROWSER_USES_AUTO_ATTACH = {'autoAttach': True, 'waitForDebuggerOnStart': False, 'flatten': True}


async def test_browser_uses_auto_attach_leaves_pages_to_the_endpoint() -> None:
	link, upstream = await _link_after(
		DISCOVER_PAGES, {'id': 2, 'method': 'Target.setAutoAttach', 'params': BROWSER_USES_AUTO_ATTACH}
	)
	assert link.pages_here
	assert upstream.sent[-1]['params']['filter'] == cdp_proxy.NO_PAGES


@pytest.mark.parametrize(
	'discover, params',
	[
		(DISCOVER_PAGES, {**BROWSER_USES_AUTO_ATTACH, 'waitForDebuggerOnStart': True}),  # a pause only Chromium can make
		(DISCOVER_PAGES, {**BROWSER_USES_AUTO_ATTACH, 'filter': [{'type': 'worker'}]}),  # a filter of its own
		(DISCOVER_PAGES, {**BROWSER_USES_AUTO_ATTACH, 'flatten': False}),
		(
			{**DISCOVER_PAGES, 'params': {'discover': True, 'filter': [{'type': 'page', 'exclude': True}, {}]}},
			BROWSER_USES_AUTO_ATTACH,
		),
		({**DISCOVER_PAGES, 'params': {'discover': False}}, BROWSER_USES_AUTO_ATTACH),  # no news of new tabs
	],
)
async def test_any_other_auto_attach_is_passed_on_unchanged(discover: dict[str, Any], params: dict[str, Any]) -> None:
	link, upstream = await _link_after(discover, {'id': 2, 'method': 'Target.setAutoAttach', 'params': params})
	assert not link.pages_here
	assert upstream.sent[-1]['params'] == params


async def test_tabs_of_other_contexts_are_never_attached_to_a_session(registry: SessionRegistry, site: str) -> None:
	"""With several sessions in one shared Chromium, a tab one of them opens is attached to that
	session's connection only: no attach (and detach) on every other session's connection."""
	if registry.config.isolation != 'context':
		pytest.skip('a Chromium of its own has no other context')
	catalog = Catalog(registry)
	for sid in ('quiet', 'busy'):
		await catalog.call('browser_navigate', {'session_id': sid, 'url': f'{site}/'}, Call())
	quiet = cdp_proxy.local_link(_session(registry, 'quiet').browser_session.cdp_url)
	assert isinstance(quiet, cdp_proxy.ContextLink) and quiet.pages_here
	seen: list[dict[str, Any]] = []
	original = quiet._from_browser

	def recording(message: dict[str, Any]) -> Any:
		if message.get('method') == 'Target.attachedToTarget':
			seen.append(message)
		return original(message)

	quiet._from_browser = recording  # type: ignore[method-assign]
	try:
		for _ in range(2):
			await catalog.call('browser_navigate', {'session_id': 'busy', 'url': f'{site}/two', 'new_tab': True}, Call())
		await asyncio.sleep(0.3)
	finally:
		del quiet._from_browser
	assert seen == [], f"another session's tabs were attached here: {seen}"
	tabs = json.loads((await catalog.call('browser_list_tabs', {'session_id': 'busy'}, Call())).text)
	assert len(tabs) == 3, tabs
	for sid in ('quiet', 'busy'):
		await catalog.call('browser_close_session', {'session_id': sid}, Call())


async def test_a_tab_has_one_cdp_session_and_its_events_come_once(registry: SessionRegistry, site: str) -> None:
	"""browser-use attaches the tab a session starts with, then turns auto-attach on, and Chromium
	attaches that tab a second time (cdp_proxy.Attaches): two sessions on one page, with every
	page, network and lifecycle event of it sent twice. The endpoint lets go of the second one, in
	both isolation modes; a tab opened later is attached once, by the auto-attach."""
	from browser_use_mcp.patches import internals

	catalog = Catalog(registry)
	await catalog.call('browser_navigate', {'session_id': 'once', 'url': f'{site}/'}, Call())
	bs = _session(registry, 'once').browser_session
	loads: collections.Counter[str | None] = collections.Counter()

	def on_lifecycle(params: Any, session_id: str | None) -> None:
		if params.get('name') == 'load':
			loads[session_id] += 1

	internals.hook_cdp_event(internals.root_cdp_client(bs), 'Page.lifecycleEvent', on_lifecycle)
	await catalog.call('browser_navigate', {'session_id': 'once', 'url': f'{site}/two'}, Call())
	await asyncio.sleep(0.3)  # any second session's event would be in by now
	assert sum(loads.values()) == 1, f'the load of one navigation was heard by {dict(loads)}'
	loads.clear()
	await catalog.call('browser_navigate', {'session_id': 'once', 'url': f'{site}/', 'new_tab': True}, Call())
	await asyncio.sleep(0.3)
	assert len(loads) == 1, f"a new tab's loads were heard by {dict(loads)}"  # (about:blank's, then the page's)
	listed = json.loads((await catalog.call('browser_list_tabs', {'session_id': 'once'}, Call())).text)
	assert len(listed) == 2, listed
	await catalog.call('browser_close_session', {'session_id': 'once'}, Call())
