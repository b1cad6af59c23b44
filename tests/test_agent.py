"""retry_with_browser_use_agent and browser_extract_content through the real server over stdio.

The server, Chromium and the pages (127.0.0.1) are real; only the LLM is scripted
(harness/fakes/scripted_llm.py, loaded by BROWSER_USE_MCP_LLM_FACTORY), so no request leaves the
machine. The server is configured with the allow-list ["127.0.0.1"], the shape an operator
would use, so the allowed_domains tests check that a client can narrow it but never lift it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import threading
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from typing import Any

import psutil
import pytest

from harness.pages import PageServer
from harness.servers import Background, Mcp, running_server, server_env
from tests.fixtures import isolation_modes

# run with a Chromium per session and with contexts of shared Chromiums
isolation = isolation_modes()
pytestmark = pytest.mark.usefixtures('isolation')

FACTORY = 'harness.fakes.scripted_llm:make_llm'


def task(goal: str, *steps: list[dict[str, Any]], delay: float = 0, delays: list[float] | None = None) -> str:
	"""A task the scripted model plays back: one list of actions per agent step."""
	script = {'steps': list(steps), 'delay': delay, 'delays': delays or []}
	return f'{goal} @@script{json.dumps(script)}@@end'


def done(text: str, **extra: Any) -> list[dict[str, Any]]:
	return [{'done': {'text': text, 'success': True, **extra}}]


def navigate(url: str) -> list[dict[str, Any]]:
	return [{'navigate': {'url': url, 'new_tab': False}}]


class Tripwire:
	"""A "proxy" on 127.0.0.1 that forwards nothing and writes down who tried to go out through it.

	The server runs with every *_PROXY variable pointing here (loopback excepted), so anything in
	it that would phone home over HTTP(S) - a version check, telemetry, pricing - shows up here
	instead of leaving the machine, with the PID of the process that tried.
	"""

	def __init__(self) -> None:
		self.requests: list[tuple[int | None, str]] = []
		self.sock = socket.create_server(('127.0.0.1', 0))
		self.port = self.sock.getsockname()[1]
		self.url = f'http://127.0.0.1:{self.port}'
		threading.Thread(target=self._serve, daemon=True).start()

	def _serve(self) -> None:
		with contextlib.suppress(OSError):
			while True:
				conn, peer = self.sock.accept()
				with conn:
					conn.settimeout(2)
					with contextlib.suppress(OSError):
						line = conn.recv(200).split(b'\r\n', 1)[0].decode(errors='replace')
						self.requests.append((self._pid_of(peer[1]), line))

	def _pid_of(self, port: int) -> int | None:
		for c in psutil.net_connections(kind='tcp4'):
			if c.laddr and c.raddr and c.laddr.port == port and c.raddr.port == self.port:
				return c.pid
		return None

	def by(self, pid: int, since: int = 0) -> list[str]:
		"""What ``pid`` tried to send, from request number ``since`` on."""
		return [line for who, line in self.requests[since:] if who == pid]

	def close(self) -> None:
		self.sock.close()


@pytest.fixture(scope='module')
def tripwire() -> Iterator[Tripwire]:
	wire = Tripwire()
	# it catches what is sent through it, and knows who sent it
	opener = urllib.request.build_opener(urllib.request.ProxyHandler({'http': wire.url}))
	with contextlib.suppress(OSError):
		opener.open('http://phone-home.invalid/', timeout=5)
	assert wire.requests == [(os.getpid(), 'GET http://phone-home.invalid/ HTTP/1.1')]
	wire.requests.clear()
	yield wire
	wire.close()


@pytest.fixture(scope='module')
async def agent_server(tmp_path_factory: pytest.TempPathFactory, tripwire: Tripwire, isolation: str) -> AsyncIterator[Mcp]:
	home = tmp_path_factory.mktemp('agent-home')
	proxies = {
		name: tripwire.url for name in ('HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'http_proxy', 'https_proxy', 'all_proxy')
	}
	env = server_env(
		home,
		BROWSER_USE_MCP_LLM_FACTORY=FACTORY,
		BROWSER_USE_ALLOWED_DOMAINS='127.0.0.1',
		NO_PROXY='127.0.0.1,localhost',
		no_proxy='127.0.0.1,localhost',
		**proxies,
	)
	async with Background(running_server(home, env=env)) as server:
		yield server


@pytest.fixture
async def agent_mcp(agent_server: Mcp, tripwire: Tripwire) -> AsyncIterator[Mcp]:
	"""The module's server, for one test that leaves it as it found it, whatever the order the tests
	run in: every session the test opened is closed (even when it fails), and nothing the test made
	the server do (agent, extraction, telemetry, version check) tried to leave loopback."""
	before = len(tripwire.requests)
	yield agent_server
	await agent_server.call('browser_close_all')
	assert (await agent_server.ok('browser_list_sessions')).structured == {'sessions': []}
	assert tripwire.by(agent_server.pid, since=before) == [], 'the server tried to phone home'


@pytest.fixture(scope='module')
def other_site() -> Iterator[str]:
	"""A second site on another loopback port: same host, so only a port-pinned list tells them apart."""
	with PageServer() as server:
		yield server.url


async def url_of(mcp: Mcp, session_id: str) -> str:
	return (await mcp.ok('browser_get_state', session_id=session_id)).json()['url']


async def test_agent_runs_in_the_callers_session_and_leaves_it_usable(agent_mcp: Mcp, site: str) -> None:
	sid = 'agent-home'
	await agent_mcp.ok('browser_navigate', url=f'{site}/login?user=alice', session_id=sid)
	await agent_mcp.ok('browser_navigate', url=f'{site}/whoami', session_id=sid)

	# It starts on the caller's page, logged in with the caller's cookie.
	seen = await agent_mcp.ok(
		'retry_with_browser_use_agent', task=task('Say where you are.', done('saw {url}: {page}')), max_steps=3, session_id=sid
	)
	assert seen.text.startswith('Task completed in 1 steps\nSuccess: True')
	assert f'Final result:\nsaw {site}/whoami: alice' in seen.text

	# It acts in the session, writes to the session's FileSystem, and the session stays where it went.
	moved = await agent_mcp.ok(
		'retry_with_browser_use_agent',
		task=task(
			'Note and move.',
			[{'write_file': {'file_name': 'notes.md', 'content': 'remember alice'}}],
			navigate(f'{site}/two'),
			done('now at {url}'),
		),
		max_steps=5,
		session_id=sid,
	)
	assert f'now at {site}/two' in moved.text
	assert f'URLs visited: {site}/whoami' in moved.text
	assert moved.text.endswith(f'The session is now on: {site}/two')
	state = (await agent_mcp.ok('browser_get_state', session_id=sid)).json()
	assert state['url'] == f'{site}/two' and state['title'] == 'Page Two'

	# The session keeps working for direct tools afterwards.
	await agent_mcp.ok('browser_navigate', url=f'{site}/', session_id=sid)
	state = (await agent_mcp.ok('browser_get_state', session_id=sid)).json()
	assert state['title'] == 'Home Page' and state['interactive_elements']
	await agent_mcp.ok('browser_click', index=state['interactive_elements'][-1]['index'], session_id=sid)

	# A later agent in the same session finds the file the first one wrote.
	files = await agent_mcp.ok(
		'retry_with_browser_use_agent',
		task=task('Show the notes.', done('notes:', files_to_display=['notes.md'])),
		max_steps=2,
		session_id=sid,
	)
	assert 'remember alice' in files.text
	await agent_mcp.ok('browser_close_session', session_id=sid)


async def test_two_agents_in_two_sessions_run_at_once_without_crossing(agent_mcp: Mcp, site: str) -> None:
	for sid, user in (('agent-a', 'alice'), ('agent-b', 'bob')):
		await agent_mcp.ok('browser_navigate', url=f'{site}/login?user={user}', session_id=sid)
	stamps: dict[str, list[float]] = {'agent-a': [], 'agent-b': []}

	async def run(sid: str) -> str:
		async def progress(done_steps: float, total: float | None, message: str | None) -> None:
			stamps[sid].append(time.monotonic())

		script = task('Who am I?', navigate(f'{site}/whoami'), navigate(f'{site}/whoami'), done('{page}'), delay=0.3)
		raw = await agent_mcp.client.call_tool(
			'retry_with_browser_use_agent',
			{'task': script, 'max_steps': 5, 'session_id': sid},
			read_timeout_seconds=120,
			progress_callback=progress,
		)
		assert not raw.is_error, raw.content[0].text
		return raw.content[0].text

	a, b = await asyncio.gather(run('agent-a'), run('agent-b'))
	assert 'Final result:\nalice' in a and 'bob' not in a
	assert 'Final result:\nbob' in b and 'alice' not in b
	# They overlapped: each one's steps began before the other's ended.
	assert min(stamps['agent-a']) < max(stamps['agent-b']) and min(stamps['agent-b']) < max(stamps['agent-a'])
	for sid in stamps:
		await agent_mcp.ok('browser_close_session', session_id=sid)


async def test_progress_notifications_arrive_in_order(agent_mcp: Mcp, site: str) -> None:
	sid = 'agent-progress'
	await agent_mcp.ok('browser_navigate', url=f'{site}/', session_id=sid)
	seen: list[tuple[float, float | None, str | None]] = []

	async def progress(done_steps: float, total: float | None, message: str | None) -> None:
		seen.append((done_steps, total, message))

	script = task('Walk.', navigate(f'{site}/two?n=1'), navigate(f'{site}/two?n=2'), done('walked'))
	raw = await agent_mcp.client.call_tool(
		'retry_with_browser_use_agent',
		{'task': script, 'max_steps': 6, 'session_id': sid},
		read_timeout_seconds=120,
		progress_callback=progress,
	)
	assert not raw.is_error, raw.content[0].text
	assert [(p, t) for p, t, _ in seen] == [(1, 6), (2, 6), (3, 6)]
	assert seen[0][2].startswith(f'Step 1/6: {site}/ - ')
	assert seen[1][2].startswith(f'Step 2/6: {site}/two?n=1 - ')
	assert seen[2][2].startswith(f'Step 3/6: {site}/two?n=2 - ')
	await agent_mcp.ok('browser_close_session', session_id=sid)


async def test_cancel_stops_the_agent_and_keeps_the_session(agent_mcp: Mcp, site: str) -> None:
	sid = 'agent-cancel'
	await agent_mcp.ok('browser_navigate', url=f'{site}/', session_id=sid)
	steps: list[float] = []
	started = asyncio.Event()

	async def progress(done_steps: float, total: float | None, message: str | None) -> None:
		steps.append(done_steps)
		if done_steps >= 2:
			started.set()

	walk = [navigate(f'{site}/two?n={n}') for n in range(1, 30)]
	call = asyncio.create_task(
		agent_mcp.client.call_tool(
			'retry_with_browser_use_agent',
			{'task': task('Walk forever.', *walk, delay=0.4), 'max_steps': 40, 'session_id': sid},
			read_timeout_seconds=120,
			progress_callback=progress,
		)
	)
	await asyncio.wait_for(started.wait(), 60)
	call.cancel()  # the client sends notifications/cancelled for the request
	with contextlib.suppress(asyncio.CancelledError):
		await call
	cancelled_at = time.monotonic()

	# The next call in the session waits for the session's lock: it gets it once the agent is gone.
	url = await url_of(agent_mcp, sid)
	assert time.monotonic() - cancelled_at < 8
	assert url.startswith(f'{site}/two?n=')
	count = len(steps)
	await asyncio.sleep(1.5)  # several scripted steps' worth: a running agent would have moved on
	assert await url_of(agent_mcp, sid) == url
	assert len(steps) == count and count < 10

	await agent_mcp.ok('browser_navigate', url=f'{site}/whoami', session_id=sid)
	assert (await agent_mcp.ok('browser_get_state', session_id=sid)).json()['title'] == 'Who: nobody'
	await agent_mcp.ok('browser_close_session', session_id=sid)


async def test_cancel_interrupts_an_agent_stuck_in_its_model(agent_mcp: Mcp, site: str) -> None:
	"""A provider that takes minutes to answer: the stop request cannot take effect until the model
	returns, so after the grace period the agent is interrupted and the session freed."""
	sid = 'agent-stuck'
	await agent_mcp.ok('browser_navigate', url=f'{site}/', session_id=sid)
	first = asyncio.Event()

	async def progress(done_steps: float, total: float | None, message: str | None) -> None:
		first.set()

	script = task('Hang.', navigate(f'{site}/two'), done('never'), delays=[0, 120])
	call = asyncio.create_task(
		agent_mcp.client.call_tool(
			'retry_with_browser_use_agent',
			{'task': script, 'max_steps': 5, 'session_id': sid},
			read_timeout_seconds=180,
			progress_callback=progress,
		)
	)
	await asyncio.wait_for(first.wait(), 60)
	await asyncio.sleep(1.5)  # step 1 is done; step 2 waits on the model
	call.cancel()
	with contextlib.suppress(asyncio.CancelledError):
		await call
	cancelled_at = time.monotonic()
	assert await url_of(agent_mcp, sid) == f'{site}/two'
	assert 2 < time.monotonic() - cancelled_at < 10  # the grace period (3 s), then the interrupt
	await agent_mcp.ok('browser_navigate', url=f'{site}/', session_id=sid)
	await agent_mcp.ok('browser_close_session', session_id=sid)


async def test_allowed_domains_narrow_but_never_widen(agent_mcp: Mcp, site: str, other_site: str) -> None:
	"""What the agent may visit. (browser-use checks a navigation only after starting it and then
	sends the tab to about:blank, so "blocked" here means the agent cannot stay or work there.)"""
	sid = 'agent-domains'
	port = site.rsplit(':', 1)[1]
	elsewhere = f'http://localhost:{port}/two'  # loopback, but not in the configured ["127.0.0.1"]
	blocked = 'blocked by security policy'

	async def attempt(target: str, **extra: Any) -> str:
		await agent_mcp.ok('browser_navigate', url=f'{site}/', session_id=sid)
		r = await agent_mcp.ok(
			'retry_with_browser_use_agent',
			task=task('Go.', navigate(target), done('at {url}')),
			max_steps=3,
			session_id=sid,
			**extra,
		)
		assert not (await url_of(agent_mcp, sid)).startswith(target.rsplit('/', 1)[0])
		return r.text

	# Omitted or empty: the configured list stays in force.
	assert blocked in await attempt(elsewhere)
	assert blocked in await attempt(elsewhere, allowed_domains=[])

	# Asking for a domain outside the configured list is refused, not granted...
	r = await agent_mcp.call(
		'retry_with_browser_use_agent', task=task('Go.', navigate(elsewhere)), allowed_domains=['localhost'], session_id=sid
	)
	assert r.is_error and 'allow-list' in r.text and '127.0.0.1' in r.text
	# ...and mixed with allowed ones it is dropped.
	assert blocked in await attempt(elsewhere, allowed_domains=['127.0.0.1', 'localhost'])

	# Narrowing takes effect mid-session: the other port of 127.0.0.1 is out for this run only...
	assert blocked in await attempt(f'{other_site}/two', allowed_domains=[site])
	# ...and the configured list is back afterwards.
	await agent_mcp.ok('browser_navigate', url=f'{other_site}/two', session_id=sid)
	assert await url_of(agent_mcp, sid) == f'{other_site}/two'
	r = await agent_mcp.call('browser_navigate', url=elsewhere, session_id=sid)
	assert r.is_error and 'is not allowed by this server' in r.text  # refused before any request
	await agent_mcp.ok('browser_close_session', session_id=sid)


async def test_extract_content_reads_the_real_page(agent_mcp: Mcp, site: str) -> None:
	sid = 'extract'
	await agent_mcp.ok('browser_navigate', url=f'{site}/login?user=carol', session_id=sid)
	r = await agent_mcp.ok('browser_extract_content', query='who is logged in', session_id=sid)
	assert "scripted extraction for 'who is logged in'" in r.text
	assert 'logged in as carol' in r.text
	await agent_mcp.ok('browser_close_session', session_id=sid)


async def test_nothing_phoned_home(agent_mcp: Mcp, site: str, tripwire: Tripwire) -> None:
	"""The server process itself (agent, extraction, telemetry, version check) never tries to leave
	loopback; ``agent_mcp`` checks it after every test, this one takes every path that might, on its
	own. Chromium's own background requests are the browser launcher's business and are not judged here."""
	before = len(tripwire.requests)
	await agent_mcp.ok('browser_navigate', url=f'{site}/', session_id='quiet')
	await agent_mcp.ok('retry_with_browser_use_agent', task=task('Done.', done('ok')), max_steps=2, session_id='quiet')
	await agent_mcp.ok('browser_extract_content', query='anything', session_id='quiet')
	await agent_mcp.ok('browser_close_session', session_id='quiet')
	assert tripwire.by(agent_mcp.pid, since=before) == []


async def test_without_a_key_the_llm_tools_say_what_to_set(tmp_path: Any, site: str) -> None:
	home = tmp_path / 'nokey'
	env = server_env(home)
	for name in list(env):
		if name.startswith(('AZURE_OPENAI', 'GEMINI', 'MODEL_PROVIDER', 'OLLAMA')):
			env.pop(name)
	async with running_server(home, env=env) as mcp:
		await mcp.ok('browser_navigate', url=f'{site}/', session_id='k')
		for name, args in (
			('retry_with_browser_use_agent', {'task': 'anything'}),
			('browser_extract_content', {'query': 'anything'}),
		):
			r = await mcp.call(name, session_id='k', **args)
			assert r.is_error and 'OPENAI_API_KEY' in r.text and 'other browser tools work' in r.text, r.text
		assert (await mcp.ok('browser_get_state', session_id='k')).json()['title'] == 'Home Page'
