"""Our CDP endpoints (issue #22): only our own clients get in, and a browser of ours has no port.

The websocket endpoint browser-use connects to refuses whatever a web page could send (every
page's request carries an Origin or Sec-Fetch-* header), any path but a session's secret one,
and serves no HTTP discovery. A Chromium of ours speaks DevTools over its pipe only.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import psutil
import pytest
from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import InvalidStatus

from browser_use_mcp.browser import ChromiumProcess, find_chromium
from browser_use_mcp.processes import Owner
from browser_use_mcp.providers.cdp_proxy import ContextRouter


class Echo:
	async def serve(self, client: ServerConnection) -> None:
		async for message in client:
			await client.send(message)


def _get(url: str, headers: dict[str, str] | None = None) -> int:
	opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
	try:
		with opener.open(urllib.request.Request(url, headers=headers or {}), timeout=5) as reply:
			return reply.status
	except urllib.error.HTTPError as exc:
		return exc.code


async def test_endpoint_refuses_origins_wrong_paths_and_discovery() -> None:
	router = ContextRouter()
	await router.start()
	try:
		url = router.add(Echo())
		token = url.rsplit('/', 1)[1]
		assert len(token) >= 32, 'a secret path (secrets.token_urlsafe)'
		async with connect(url) as ws:  # our client: no Origin header
			await ws.send('{"id":1}')
			assert await ws.recv() == '{"id":1}'
		for origin in (f'http://127.0.0.1:{router.port}', 'http://127.0.0.1:8000', 'null'):
			with pytest.raises(InvalidStatus) as refused:
				async with connect(url, origin=origin):  # type: ignore[arg-type]
					pass
			assert refused.value.response.status_code == 403
		with pytest.raises(InvalidStatus) as refused:
			async with connect(url, additional_headers={'Sec-Fetch-Site': 'same-origin'}):
				pass
		assert refused.value.response.status_code == 403
		base = f'ws://127.0.0.1:{router.port}'
		for path in ('/devtools/browser/' + token[:-1], '/devtools/browser', '/', '/json/version', '/devtools/page/' + token):
			with pytest.raises(InvalidStatus) as refused:
				async with connect(base + path):
					pass
			assert refused.value.response.status_code == 404, path
		http = f'http://127.0.0.1:{router.port}'
		for path in ('/json/list', '/json/version', '/json', '/json/close/x', '/'):
			assert await asyncio.to_thread(_get, http + path) == 404
		# a page's navigation to the secret path itself (it would have to guess it): no handshake, no content
		assert (
			await asyncio.to_thread(
				_get, http + '/devtools/browser/' + token, {'Sec-Fetch-Mode': 'navigate', 'Sec-Fetch-Site': 'none'}
			)
			== 403
		)
		router.remove(url)
		with pytest.raises(InvalidStatus):
			async with connect(url):
				pass
	finally:
		await router.close()


@pytest.mark.skipif(find_chromium() is None, reason='no Chromium')
async def test_chromium_of_ours_has_no_devtools_port_and_channels_are_separate() -> None:
	with tempfile.TemporaryDirectory() as tmp:
		profile = Path(tmp)
		args = ['--headless=new', '--no-sandbox', f'--user-data-dir={profile}', '--proxy-server=http://127.0.0.1:9']
		chromium = await ChromiumProcess.launch(find_chromium() or '', args, profile, Owner.current())
		try:
			assert chromium.product.startswith(('Chrome/', 'HeadlessChrome/')), chromium.product
			tree = [psutil.Process(chromium.pid), *psutil.Process(chromium.pid).children(recursive=True)]
			listening = [c for p in tree for c in p.net_connections(kind='inet') if c.status == psutil.CONN_LISTEN]
			assert listening == [], listening
			assert '--remote-debugging-pipe' in psutil.Process(chromium.pid).cmdline()
			a, b = await chromium.cdp.open_channel(), await chromium.cdp.open_channel()

			async def ask(channel: object, message: dict[str, object]) -> dict[str, object]:
				await channel.send(json.dumps(message))  # type: ignore[attr-defined]
				while True:
					reply = json.loads(await channel.recv())  # type: ignore[attr-defined]
					if reply.get('id') == message['id']:
						return reply

			target = (await ask(b, {'id': 1, 'method': 'Target.createTarget', 'params': {'url': 'about:blank'}}))['result']
			attached = await ask(
				b, {'id': 2, 'method': 'Target.attachToTarget', 'params': {'targetId': target['targetId'], 'flatten': True}}
			)  # type: ignore[index]
			session = attached['result']['sessionId']  # type: ignore[index]
			two = await ask(b, {'id': 3, 'method': 'Runtime.evaluate', 'params': {'expression': '1+1'}, 'sessionId': session})
			assert two['result']['result']['value'] == 2  # type: ignore[index]
			foreign = await ask(a, {'id': 3, 'method': 'Runtime.evaluate', 'params': {'expression': '1+1'}, 'sessionId': session})
			assert 'error' in foreign, 'a channel cannot use a session another channel attached'
			await a.close()
			await b.close()
			# the pipe's end is a liveness signal: the browser gone, the mux says so
			gone = asyncio.get_running_loop().create_future()
			chromium.on_exit(lambda _c: gone.done() or gone.set_result(True))
			with contextlib.suppress(ProcessLookupError):
				psutil.Process(chromium.pid).kill()
			await asyncio.wait_for(gone, 10)
			assert chromium.cdp.closed
		finally:
			await chromium.kill()


async def test_a_large_answer_can_skip_the_channel_and_stay_undecoded() -> None:
	"""``PipeMux.send_undecoded``: the page state's large answers come back to their caller as the
	pipe's bytes, never routed to the channel whose session they ran on; the answer of a caller
	that stopped waiting is dropped unread (not decoded on the loop and routed to that channel); a
	browser that exits fails the waiting caller instead of leaving it waiting."""
	from browser_use_mcp.cdp_pipe import PipeClosed
	from browser_use_mcp.providers.cdp_proxy import PassthroughLink, pipe_behind

	with tempfile.TemporaryDirectory() as tmp:
		profile = Path(tmp)
		args = ['--headless=new', '--no-sandbox', f'--user-data-dir={profile}', '--proxy-server=http://127.0.0.1:9']
		chromium = await ChromiumProcess.launch(find_chromium() or '', args, profile, Owner.current())
		router = ContextRouter()
		await router.start()
		try:
			url = router.add(PassthroughLink(chromium.cdp.open_channel))
			assert pipe_behind(url) is chromium.cdp
			assert pipe_behind(url[:-3] + 'xyz') is None and pipe_behind('ws://127.0.0.1:9222/devtools/browser/x') is None
			channel = await chromium.cdp.open_channel()

			async def ask(message: dict[str, object]) -> dict[str, object]:
				await channel.send(json.dumps(message))
				while True:
					reply = json.loads(await channel.recv())
					if reply.get('id') == message['id']:
						return reply

			target = (await ask({'id': 1, 'method': 'Target.createTarget', 'params': {'url': 'about:blank'}}))['result']
			attached = await ask(
				{'id': 2, 'method': 'Target.attachToTarget', 'params': {'targetId': target['targetId'], 'flatten': True}}
			)  # type: ignore[index]
			session = attached['result']['sessionId']  # type: ignore[index]
			params = {'expression': "'é'.repeat(600000)", 'returnByValue': True}
			raw = await asyncio.wait_for(chromium.cdp.send_undecoded(1 << 29, 'Runtime.evaluate', params, session), 10)
			assert isinstance(raw, bytes) and raw.startswith(b'{"id":536870912,"result":')
			assert json.loads(raw)['result']['result']['value'] == 'é' * 600000
			# the channel that owns the session did not get it: its next answer is its own next command's
			assert (await ask({'id': 3, 'method': 'Runtime.evaluate', 'params': {'expression': '2'}, 'sessionId': session}))[
				'id'
			] == 3
			assert not chromium.cdp.undecoded
			# a caller that stops waiting: the answer, when it comes, is dropped, never decoded and routed
			dispatched: list[str] = []
			dispatch = chromium.cdp.dispatch
			chromium.cdp.dispatch = lambda text: (dispatched.append(text[:40]), dispatch(text))[1]  # type: ignore[method-assign]
			later = {
				'expression': "new Promise(r => setTimeout(() => r('y'.repeat(300000)), 300))",
				'awaitPromise': True,
				'returnByValue': True,
			}
			abandoned = asyncio.ensure_future(chromium.cdp.send_undecoded((1 << 29) + 2, 'Runtime.evaluate', later, session))
			await asyncio.sleep(0.05)
			abandoned.cancel()
			with contextlib.suppress(asyncio.CancelledError):
				await abandoned
			assert list(chromium.cdp.abandoned) == [(1 << 29) + 2]
			for _ in range(100):
				if not chromium.cdp.abandoned:
					break
				await asyncio.sleep(0.05)
			assert not chromium.cdp.abandoned, 'the answer came and was taken as abandoned'
			assert not [t for t in dispatched if t.startswith(f'{{"id":{(1 << 29) + 2}')]
			del chromium.cdp.dispatch
			never = {'expression': 'new Promise(() => {})', 'awaitPromise': True}
			waiting = asyncio.ensure_future(chromium.cdp.send_undecoded((1 << 29) + 1, 'Runtime.evaluate', never, session))
			await asyncio.sleep(0.2)
			assert not waiting.done()
			with contextlib.suppress(ProcessLookupError):
				psutil.Process(chromium.pid).kill()
			with pytest.raises(PipeClosed):
				await asyncio.wait_for(waiting, 10)
			assert pipe_behind(url) is None  # a closed pipe is not offered
			await channel.close()
		finally:
			await router.close()
			await chromium.kill()


class Recorder:
	"""An upstream that records what reaches the browser and answers nothing."""

	def __init__(self) -> None:
		self.sent: list[str] = []
		self._closed = asyncio.Event()

	async def send(self, message: str) -> None:
		self.sent.append(message)

	async def __aiter__(self):  # type: ignore[no-untyped-def]
		await self._closed.wait()
		return
		yield

	async def close(self) -> None:
		self._closed.set()


async def test_endpoint_keeps_browser_use_and_its_agent_off_browser_pages(monkeypatch: pytest.MonkeyPatch) -> None:
	"""Whatever browser-use navigates to (the agent's own steps included) passes our endpoint."""
	from browser_use_mcp import urls
	from browser_use_mcp.providers.cdp_proxy import ContextLink, PassthroughLink

	monkeypatch.setattr(urls, 'ALLOWED', ('chrome://version',))
	router = ContextRouter()
	await router.start()
	try:
		for make in (PassthroughLink, lambda up: ContextLink(up, 'CTX')):
			upstream = Recorder()

			async def opener(upstream: Recorder = upstream) -> Recorder:
				return upstream

			url = router.add(make(opener))
			async with connect(url) as ws:
				for n, (method, target) in enumerate(
					[
						('Page.navigate', 'chrome://gpucrash'),
						('Target.createTarget', ' CHROME://inducebrowsercrashforrealz'),
						('Page.navigate', 'about:version'),
					]
				):
					await ws.send(json.dumps({'id': n, 'method': method, 'params': {'url': target}, 'sessionId': 'S1'}))
					reply = json.loads(await asyncio.wait_for(ws.recv(), 5))
					assert reply['id'] == n and 'page of the browser itself' in reply['error']['message'], reply
					assert reply['sessionId'] == 'S1'
				for n, target in enumerate(('https://example.com/', 'about:blank', 'chrome://version/'), start=10):
					await ws.send(json.dumps({'id': n, 'method': 'Page.navigate', 'params': {'url': target}, 'sessionId': 'S1'}))
				await asyncio.sleep(0.2)
			assert [json.loads(m)['params']['url'] for m in upstream.sent] == [
				'https://example.com/',
				'about:blank',
				'chrome://version/',
			]
	finally:
		await router.close()


def test_the_pipe_reader_splits_messages_wherever_the_reads_end() -> None:
	"""Messages whole, in order, however the pipe's reads cut them (a NUL first or last in a read,
	several messages in one read, one message over many); an undecoded answer's waiter gets its
	bytes and the message is not routed."""
	from browser_use_mcp.cdp_pipe import _Reader

	class Mux:
		def __init__(self) -> None:
			self.undecoded: dict[int, Any] = {}
			self.routed: list[str] = []
			self.taken: list[bytes] = []

		def take_undecoded(self, raw: bytes) -> bool:
			if raw.startswith(b'{"id":7,'):
				self.taken.append(raw)
				return True
			return False

		def dispatch(self, text: str) -> None:
			self.routed.append(text)

	messages = [
		b'{"id":1}',
		b'{"method":"x","params":{"v":"' + 'é'.encode() * 5000 + b'"}}',
		b'',
		b'{"id":7,"result":{}}',
		b'{"id":2}',
	]
	stream = b''.join(m + b'\0' for m in messages)
	for size in (1, 2, 3, 7, 8, 9, 10, 64, 4096, len(stream)):
		mux = Mux()
		mux.undecoded = {7: None}
		reader = _Reader(mux)  # type: ignore[arg-type]
		for at in range(0, len(stream), size):
			reader.data_received(stream[at : at + size])
		assert mux.routed == [m.decode() for m in messages if not m.startswith(b'{"id":7,')], size
		assert mux.taken == [b'{"id":7,"result":{}}'] and reader.parts == [], size


async def test_a_command_in_flight_when_its_tab_closes_is_answered_not_left_waiting() -> None:
	"""Chromium never answers the commands still pending on a session when it detaches (the tab
	closed itself, or was closed): the channel answers each with the error Chromium gives a command
	to a session that is gone, so a caller gets an error at once instead of waiting out the CDP
	timeout (60 s: a browser_get_state that hung after the focused tab closed)."""
	with tempfile.TemporaryDirectory() as tmp:
		profile = Path(tmp)
		args = ['--headless=new', '--no-sandbox', f'--user-data-dir={profile}', '--proxy-server=http://127.0.0.1:9']
		chromium = await ChromiumProcess.launch(find_chromium() or '', args, profile, Owner.current())
		try:
			channel = await chromium.cdp.open_channel()
			replies: dict[int, dict[str, Any]] = {}
			events: list[dict[str, Any]] = []

			async def read() -> None:
				async for text in channel:
					message = json.loads(text)
					if 'id' in message:
						replies[message['id']] = message
					else:
						events.append(message)

			reader = asyncio.ensure_future(read())

			async def reply(message_id: int) -> dict[str, Any]:
				for _ in range(200):
					if message_id in replies:
						return replies.pop(message_id)
					await asyncio.sleep(0.025)
				raise AssertionError(f'no answer to {message_id} within 5 s')

			await channel.send(json.dumps({'id': 1, 'method': 'Target.createTarget', 'params': {'url': 'about:blank'}}))
			target = (await reply(1))['result']['targetId']
			await channel.send(
				json.dumps({'id': 2, 'method': 'Target.attachToTarget', 'params': {'targetId': target, 'flatten': True}})
			)
			session = (await reply(2))['result']['sessionId']
			# as cdp-use writes them: the session id last (the channel's fast path), and one the slow way
			never = {'expression': 'new Promise(() => {})', 'awaitPromise': True}
			await channel.send(json.dumps({'id': 3, 'method': 'Runtime.evaluate', 'params': never, 'sessionId': session}))
			await channel.send(json.dumps({'sessionId': session, 'id': 4, 'method': 'Runtime.evaluate', 'params': never}))
			await channel.send(
				json.dumps({'id': 5, 'method': 'Runtime.evaluate', 'params': {'expression': '6*7'}, 'sessionId': session})
			)
			assert (await reply(5))['result']['result']['value'] == 42
			await asyncio.sleep(0.1)
			assert 3 not in replies and 4 not in replies  # still waiting on the live tab
			await channel.send(json.dumps({'id': 6, 'method': 'Target.closeTarget', 'params': {'targetId': target}}))
			for pending in (3, 4):
				answer = await reply(pending)
				assert answer['error']['code'] == -32001 and answer['sessionId'] == session, answer
			assert any(e.get('method') == 'Target.detachedFromTarget' for e in events)
			assert channel._in_flight == {}, 'answered commands are forgotten'
			reader.cancel()
			await channel.close()
		finally:
			await chromium.kill()
