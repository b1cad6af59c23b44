"""One browser context of a shared Chromium, presented to browser-use as a whole browser.

browser-use assumes it owns the browser it connects to: it discovers and auto-attaches to every
target, creates tabs without a ``browserContextId``, and reads, sets and clears cookies and the
download behaviour browser-wide. Two BrowserSessions on one Chromium would see each other's tabs
and cookies. Rather than patch browser-use, each session connects to a CDP endpoint of ours
(``ContextRouter``: one loopback websocket server, a path per session) that forwards to the real
browser and rewrites what must be scoped to the session's context:

- commands that act on "the browser" get the session's ``browserContextId`` (target creation,
  cookies, download behaviour, permissions); ``Storage.*Cookies`` sent on a page session act on
  the *default* context's jar in a non-default context, so they are re-sent at browser level
  with the context id;
- commands naming another context's target are refused as Chromium refuses an unknown target;
  commands that would reach beyond the context (new contexts, browser-wide interception or
  tracing, crashing the browser) are refused; ``Browser.close`` closes the context's tabs only;
- target events of other contexts are dropped; browser-use's browser-level auto-attach is passed
  on without pages, and the context's own tabs are attached by the endpoint (so no connection is
  attached to every other context's new tabs); whatever another context's target a browser-level
  auto-attach still attaches is detached at once and never shown.

The rewriting is a compatibility boundary, not a security one: its client is the server's own
browser-use. What keeps pages out is ``ContextRouter``: no request a page could make (it carries an
``Origin`` or ``Sec-Fetch-*`` header) gets a handshake, nor any path but a session's secret one, and
no HTTP discovery is served; behind it, a Chromium of ours has no DevTools port at all (cdp_pipe). Large page-level messages (DOM snapshots, screenshots) are forwarded without being
parsed: only browser-level traffic needs rewriting.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import re
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from browser_use_mcp import urls
from browser_use_mcp.cdp_pipe import PipeMux
from browser_use_mcp.providers import local_cdp
from browser_use_mcp.tasks import current_scope

logger = logging.getLogger('browser_use_mcp.providers.cdp_proxy')

# Ids of the commands the proxy sends itself: above anything cdp-use's counter reaches, and a
# 32-bit signed integer (Chromium answers a larger id, 2**31 included, with an error that has no
# id at all: the command is lost and its caller waits forever).
OWN_IDS_START = 2**30
# Methods scoped to the session's context by adding ``browserContextId``.
WITH_CONTEXT = frozenset(
	{
		'Target.createTarget',
		'Storage.getCookies',
		'Storage.setCookies',
		'Storage.clearCookies',
		'Browser.setDownloadBehavior',
		'Browser.grantPermissions',
		'Browser.resetPermissions',
		'Browser.setPermission',
		'Browser.cancelDownload',
	}
)
# Cookie methods that, sent on a page session of a non-default context, act on the default jar.
PAGE_COOKIES = frozenset({'Storage.getCookies', 'Storage.setCookies', 'Storage.clearCookies'})
# Methods naming a target by ``targetId``: only the context's own targets.
TARGETED = frozenset({'Target.attachToTarget', 'Target.activateTarget', 'Target.closeTarget', 'Target.getTargetInfo'})
# Browser-level methods that would reach beyond the context.
REFUSED = frozenset(
	{
		'Target.createBrowserContext',
		'Target.disposeBrowserContext',
		'Target.attachToBrowserTarget',
		'Target.exposeDevToolsProtocol',
		'Browser.crash',
		'Browser.crashGpuProcess',
		'Fetch.enable',
		'Tracing.start',
	}
)
# The browser-level auto-attach a context's connection asks Chromium for: everything it would attach
# but pages, which the connection attaches itself, its context's only (ContextLink, "tabs attached here").
NO_PAGES = [{'type': 'page', 'exclude': True}, {'type': 'browser', 'exclude': True}, {'type': 'tab', 'exclude': True}, {}]
ATTACH_BOUND = 5.0  # s an answer held for the attach of its tab may wait for it
# A page-level message from Chromium: its last key is the session id (checked on the tail only).
_PAGE_LEVEL_TAIL = re.compile(r',"sessionId":"[0-9A-Fa-f]+"\}$')


class Upstream(Protocol):
	"""A connection to the browser: a channel of our Chromium's pipe, or a websocket to an attached one."""

	async def send(self, message: str) -> None: ...

	def __aiter__(self) -> AsyncIterator[str | bytes]: ...

	async def close(self) -> None: ...


class Link(Protocol):
	async def serve(self, client: ServerConnection) -> None: ...


def _error(message_id: int, text: str, code: int = -32000, session: str | None = None) -> str:
	reply: dict[str, Any] = {'id': message_id, 'error': {'code': code, 'message': text}}
	if session is not None:
		reply['sessionId'] = session
	return json.dumps(reply)


# Commands that may open a URL: only these are parsed on their way through a passthrough endpoint.
_NAVIGATING = ('"Page.navigate"', '"Target.createTarget"')
_AUTO_ATTACH = '"Target.setAutoAttach"'
_ATTACH_TO = '"Target.attachToTarget"'
_ATTACHED_EVENT = '{"method":"Target.attachedToTarget"'
_DETACHED_EVENT = '{"method":"Target.detachedFromTarget"'


def _shows_pages(filters: Any) -> bool:
	"""Whether a ``TargetFilter`` list lets pages through (no list: the default, which does)."""
	if filters is None:
		return True
	for entry in filters if isinstance(filters, list) else ():
		if isinstance(entry, dict) and entry.get('type') in (None, 'page'):
			return not entry.get('exclude', False)
	return False


class Attaches:
	"""The browser-level attaches of one client connection, to let go of the second session
	browser-use's own start makes on each page it finds: it attaches every existing target
	(``Target.attachToTarget``), then turns auto-attach on (``Target.setAutoAttach``), and Chromium
	auto-attaches each of those targets again before it answers. Two sessions on one page, each with
	its page, network and lifecycle events on: every event of that tab came twice, for the session's
	whole life (~20 % of a small workflow's CDP messages)."""

	def __init__(self) -> None:
		self.targets: dict[str, str] = {}  # CDP session -> its target
		self.turning_on: set[Any] = set()  # ids of the client's browser-level auto-attach requests not answered yet
		self.asked: dict[Any, str] = {}  # ids of the client's own attach requests not answered yet -> their target

	@property
	def waiting(self) -> bool:
		"""Answers to the client's attach requests are awaited."""
		return bool(self.turning_on or self.asked)

	def clear(self) -> None:
		self.targets.clear()
		self.turning_on.clear()
		self.asked.clear()

	def sent(self, message: dict[str, Any]) -> None:
		"""A browser-level command of the client."""
		method, params = message.get('method'), message.get('params') or {}
		if method == 'Target.setAutoAttach' and params.get('autoAttach'):
			self.turning_on.add(message.get('id'))
		elif method == 'Target.attachToTarget':
			self.asked[message.get('id')] = params.get('targetId', '')

	def answered(self, message_id: Any) -> None:
		self.turning_on.discard(message_id)
		self.asked.pop(message_id, None)

	def attached(self, session: str, target: str) -> bool:
		"""A browser-level attach: False when it is a second session on a target the client has
		attached on this connection already, made by turning auto-attach on (to let go of at once).
		A session the client asked for itself (a second one on purpose) is always its own."""
		if self.turning_on and target in self.targets.values() and target not in self.asked.values():
			return False
		self.targets[session] = target
		return True

	def detached(self, session: str) -> None:
		self.targets.pop(session, None)


class ContextLink:
	"""One client connection (browser-use) to one context, over its own upstream connection."""

	def __init__(self, open_upstream: Callable[[], Awaitable[Upstream]], context_id: str) -> None:
		self.open_upstream = open_upstream  # a new connection to the browser (a pipe channel, or a websocket)
		self.context_id = context_id
		self.targets: set[str] = set()  # the context's targets this connection has heard of
		self.sessions: set[str] = set()  # CDP sessions attached on this connection to our targets
		self.downloads: set[str] = set()  # guids of downloads that began in our targets
		self.attaches = Attaches()  # this connection's browser-level attaches
		self.pages_here = False  # this connection attaches its context's new tabs itself (no page auto-attach)
		self._discovering_pages = False  # the client has turned on discovery of pages
		self._attaching: dict[str, asyncio.Task[Any]] = {}  # tab -> our attach of it, under way
		self._held: dict[int, str] = {}  # client id -> why its answer waits for tabs to be attached
		self._tasks: set[asyncio.Task[Any]] = set()
		self._rewrites: dict[int, Callable[[dict[str, Any]], None]] = {}  # client id -> result rewrite
		self._own: dict[int, asyncio.Future[dict[str, Any]]] = {}
		self._next_own = OWN_IDS_START
		self._client: ServerConnection | None = None
		self._upstream: Upstream | None = None

	async def serve(self, client: ServerConnection) -> None:
		self._client = client
		self.sessions.clear()  # CDP sessions belong to a connection; a reconnect starts without any
		self.attaches.clear()
		self.pages_here = self._discovering_pages = False
		self._attaching.clear()
		self._held.clear()
		self._rewrites.clear()
		upstream = await self.open_upstream()
		self._upstream = upstream
		down = asyncio.create_task(self._pump_down(), name='cdp-proxy-down')
		try:
			async for message in client:
				await self._from_client(message if isinstance(message, str) else message.decode())
		except ConnectionClosed:
			pass
		finally:
			down.cancel()
			with contextlib.suppress(asyncio.CancelledError, Exception):
				await down
			for future in self._own.values():
				future.cancel()
			for task in list(self._tasks):
				task.cancel()
			with contextlib.suppress(Exception):
				await upstream.close()

	async def _pump_down(self) -> None:
		assert self._upstream is not None and self._client is not None
		try:
			async for message in self._upstream:
				text = message if isinstance(message, str) else message.decode()
				if _PAGE_LEVEL_TAIL.search(text[-80:]):
					await self._client.send(text)  # a target's own traffic: nothing to scope
					continue
				out = self._from_browser(json.loads(text))
				if out is not None:
					await self._client.send(out if isinstance(out, str) else json.dumps(out))
		except (ConnectionClosed, OSError):
			pass
		finally:
			with contextlib.suppress(Exception):
				await self._client.close()

	# -- client (browser-use) -> Chromium ----------------------------------------------------------

	async def _from_client(self, text: str) -> None:
		assert self._upstream is not None and self._client is not None
		message = json.loads(text)
		method = message.get('method', '')
		params = message.setdefault('params', {}) if isinstance(message.get('params', {}), dict) else {}
		message_id = message.get('id', 0)
		why = urls.refused_command(message)
		if why is not None:
			await self._client.send(_error(message_id, why, session=message.get('sessionId')))
			return
		if 'sessionId' in message:
			if method in PAGE_COOKIES:
				del message['sessionId']  # to the context's jar, not the default one
				params['browserContextId'] = self.context_id
				await self._upstream.send(json.dumps(message))
			else:
				await self._upstream.send(text)
			return
		if method in REFUSED:
			await self._client.send(_error(message_id, f'{method} is not available to a browser-use-mcp session'))
			return
		if method in TARGETED and 'targetId' in params and params['targetId'] not in self.targets:
			await self._client.send(_error(message_id, 'No target with given id found'))
			return
		if method == 'Target.getBrowserContexts':
			await self._client.send(json.dumps({'id': message_id, 'result': {'browserContextIds': [self.context_id]}}))
			return
		if method == 'Browser.close':
			await self._close_targets()
			await self._client.send(json.dumps({'id': message_id, 'result': {}}))
			return
		self.attaches.sent(message)
		if method == 'Target.setDiscoverTargets':
			self._discovering_pages = bool(params.get('discover')) and _shows_pages(params.get('filter'))
		elif method == 'Target.setAutoAttach':
			self.pages_here = (
				bool(params.get('autoAttach') and params.get('flatten'))
				and not params.get('waitForDebuggerOnStart')
				and 'filter' not in params
				and self._discovering_pages
			)
			if self.pages_here:
				params['filter'] = NO_PAGES
				self._held[message_id] = 'existing tabs'
				await self._upstream.send(json.dumps(message))
				return
		elif method == 'Target.createTarget' and self.pages_here:
			self._held[message_id] = 'new tab'
		if method in WITH_CONTEXT:
			params['browserContextId'] = self.context_id
		elif method == 'Target.getTargets':
			self._rewrites[message_id] = self._only_our_targets
		else:
			await self._upstream.send(text)
			return
		await self._upstream.send(json.dumps(message))

	# -- Chromium -> client ------------------------------------------------------------------------

	def _from_browser(self, message: dict[str, Any]) -> dict[str, Any] | None:
		if 'id' in message:
			own = self._own.pop(message['id'], None)
			if own is not None:
				if not own.done():
					own.set_result(message)
				return None
			rewrite = self._rewrites.pop(message['id'], None)
			if rewrite is not None and 'result' in message:
				rewrite(message['result'])
			self.attaches.answered(message['id'])
			held = self._held.pop(message['id'], None)
			if held is not None and 'result' in message:
				self._spawn(self._attach_then_answer(message, held))
				return None
			return message
		if 'sessionId' in message:
			return message  # an event of one of our targets' sessions
		method = message.get('method', '')
		params = message.get('params') or {}
		if method in ('Target.targetCreated', 'Target.targetInfoChanged'):
			info = params.get('targetInfo') or {}
			if info.get('browserContextId') != self.context_id:
				return None
			self.targets.add(info.get('targetId', ''))
			if method == 'Target.targetCreated' and self.pages_here and info.get('type') == 'page':
				self._spawn(self._attach_tab(info.get('targetId', '')))
			return message
		if method in ('Target.targetDestroyed', 'Target.targetCrashed'):
			target = params.get('targetId')
			if target not in self.targets:
				return None
			if method == 'Target.targetDestroyed':
				self.targets.discard(target)
			return message
		if method == 'Target.attachedToTarget':
			info = params.get('targetInfo') or {}
			session = params.get('sessionId', '')
			if info.get('browserContextId') != self.context_id:
				self._detach_foreign(session)
				return None
			target = info.get('targetId', '')
			if not self.attaches.attached(session, target):
				self._detach_foreign(session)  # a second session on a page the client has (Attaches)
				return None
			self.targets.add(target)
			self.sessions.add(session)
			return message
		if method == 'Target.detachedFromTarget':
			session = params.get('sessionId', '')
			if session not in self.sessions:
				return None
			self.sessions.discard(session)
			self.attaches.detached(session)
			return message
		if method == 'Browser.downloadWillBegin':
			if params.get('frameId') not in self.targets:
				return None
			self.downloads.add(params.get('guid', ''))
			return message
		if method == 'Browser.downloadProgress':
			return message if params.get('guid') in self.downloads else None
		return message

	# -- tabs attached here ------------------------------------------------------------------------
	#
	# With a browser-level auto-attach, Chromium attaches every new page of every context to every
	# connection that asked, and each connection of a shared Chromium lets go of the other contexts'
	# pages at once: with n sessions in a Chromium, each new tab cost n attaches and detaches (each
	# ~1 ms of Chromium's CPU, in its browser process and in the renderer of the tab). So a client's
	# auto-attach is passed on without pages (``NO_PAGES``; workers and the rest as asked) and its
	# context's tabs are attached here, as Chromium would have: the tabs already there before the
	# auto-attach's answer, a tab ``Target.createTarget`` made before that command's answer, and a
	# tab that appears (a popup, ``window.open``) as soon as it is announced. Only when the client
	# asked for what browser-use asks (flattened sessions, no pause on start, no filter of its own)
	# and discovers pages; anything else is passed on unchanged.

	def _spawn(self, coro: Any) -> None:
		task = asyncio.get_running_loop().create_task(coro)
		self._tasks.add(task)
		task.add_done_callback(self._tasks.discard)

	async def _attach_tab(self, target: str) -> None:
		"""Attach the tab on this connection (Chromium's ``attachedToTarget`` reaches the client as an
		auto-attach's would), unless it is attached already or being attached."""
		if not target or target in self.attaches.targets.values():
			return
		task = self._attaching.get(target)
		if task is None:
			task = asyncio.get_running_loop().create_task(
				self._send_own('Target.attachToTarget', {'targetId': target, 'flatten': True})
			)
			self._attaching[target] = task
			task.add_done_callback(lambda _t, k=target: self._attaching.pop(k, None))
		with contextlib.suppress(Exception):
			await asyncio.shield(task)

	async def _attach_then_answer(self, message: dict[str, Any], held: str) -> None:
		"""Attach the tabs the client's command is answered with, then answer it."""
		try:
			if held == 'new tab':
				tabs = [message['result'].get('targetId', '')]
			else:  # the context's tabs that were there when auto-attach was turned on
				listed = await asyncio.wait_for(self._send_own('Target.getTargets', {}), ATTACH_BOUND)
				tabs = [
					t['targetId']
					for t in listed.get('result', {}).get('targetInfos', [])
					if t.get('browserContextId') == self.context_id and t.get('type') == 'page'
				]
			await asyncio.wait_for(asyncio.gather(*(self._attach_tab(t) for t in tabs)), ATTACH_BOUND)
		except (Exception, TimeoutError) as exc:
			logger.debug('could not attach the tabs of an answer (%s): %s', held, exc)
		finally:
			if self._client is not None:
				with contextlib.suppress(Exception):
					await self._client.send(json.dumps(message))

	def _only_our_targets(self, result: dict[str, Any]) -> None:
		infos = [t for t in result.get('targetInfos', []) if t.get('browserContextId') == self.context_id]
		self.targets.update(t.get('targetId', '') for t in infos)
		result['targetInfos'] = infos

	# -- the proxy's own commands --------------------------------------------------------------

	async def _send_own(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
		assert self._upstream is not None
		message_id = self._next_own
		self._next_own += 1
		future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
		self._own[message_id] = future
		await self._upstream.send(json.dumps({'id': message_id, 'method': method, 'params': params}))
		return await future

	def _detach_foreign(self, session: str) -> None:
		"""A session the client must not see (another context's page, or a second one on a page the
		client has attached already), made by a browser-level auto-attach: let go of it at once."""
		task = asyncio.get_running_loop().create_task(self._send_own('Target.detachFromTarget', {'sessionId': session}))
		task.add_done_callback(lambda t: t.cancelled() or t.exception())

	async def _close_targets(self) -> None:
		result = await self._send_own('Target.getTargets', {})
		ours = [
			t['targetId']
			for t in result.get('result', {}).get('targetInfos', [])
			if t.get('browserContextId') == self.context_id and t.get('type') == 'page'
		]
		await asyncio.gather(*(self._send_own('Target.closeTarget', {'targetId': t}) for t in ours), return_exceptions=True)

	async def close(self) -> None:
		for connection in (self._client, self._upstream):
			if connection is not None:
				with contextlib.suppress(Exception):
					await connection.close()


class PassthroughLink:
	"""A browser of one session's own (a Chromium of ours): each client connection is a new
	connection to it, nothing rewritten."""

	def __init__(self, open_upstream: Callable[[], Awaitable[Upstream]]) -> None:
		self.open_upstream = open_upstream
		# the session's task scope, if it is made inside one: the endpoint server starts a connection's
		# task outside it, so the link adds its tasks itself and a session's close cancels them too
		self.scope = current_scope()

	async def serve(self, client: ServerConnection) -> None:
		me = asyncio.current_task()
		if self.scope is not None and me is not None:
			self.scope.add(me)
		upstream = await self.open_upstream()
		attaches = Attaches()
		own = itertools.count(OWN_IDS_START)
		let_go: set[Any] = set()  # sessions we detach, and ids of our detach commands: not the client's

		async def down() -> None:
			try:
				async for message in upstream:
					text = message if isinstance(message, str) else message.decode()
					if (let_go or attaches.waiting or text.startswith((_ATTACHED_EVENT, _DETACHED_EVENT))) and not (
						_PAGE_LEVEL_TAIL.search(text[-80:])
					):
						if not await self._browser_level(text, attaches, let_go, own, upstream):
							continue
					await client.send(message)
			except (ConnectionClosed, OSError):
				pass
			finally:
				with contextlib.suppress(Exception):
					await client.close()

		pump = asyncio.create_task(down(), name='cdp-passthrough-down')
		if self.scope is not None:
			self.scope.add(pump)
		try:
			async for message in client:
				text = message if isinstance(message, str) else message.decode()
				if any(m in text for m in _NAVIGATING):
					command = json.loads(text)
					why = urls.refused_command(command)
					if why is not None:
						await client.send(_error(command.get('id', 0), why, session=command.get('sessionId')))
						continue
				elif _AUTO_ATTACH in text or _ATTACH_TO in text:
					command = json.loads(text)
					if 'sessionId' not in command:
						attaches.sent(command)
				await upstream.send(text)
		except ConnectionClosed:
			pass
		finally:
			with contextlib.suppress(Exception):
				await upstream.close()
			pump.cancel()
			with contextlib.suppress(asyncio.CancelledError, Exception):
				await pump

	@staticmethod
	async def _browser_level(text: str, attaches: Attaches, let_go: set[Any], own: Any, upstream: Upstream) -> bool:
		"""A browser-level message from the browser: False when the client must not see it (a second
		session on a page it has, see Attaches; our detach of it, and its answer)."""
		message = json.loads(text)
		method = message.get('method')
		params = message.get('params') or {}
		if method is None:
			if message.get('id') in let_go:
				let_go.discard(message['id'])
				return False
			attaches.answered(message.get('id'))
			return True
		session = params.get('sessionId', '')
		if method == 'Target.attachedToTarget':
			if attaches.attached(session, (params.get('targetInfo') or {}).get('targetId', '')):
				return True
			detach = {'id': next(own), 'method': 'Target.detachFromTarget', 'params': {'sessionId': session}}
			let_go.update((session, detach['id']))
			await upstream.send(json.dumps(detach))
			return False
		if method == 'Target.detachedFromTarget':
			attaches.detached(session)
			if session in let_go:
				let_go.discard(session)
				return False
		return True


PATH_PREFIX = '/devtools/browser/'


_every_link: dict[str, Any] = {}  # secret path -> link, over every router of this process


def pipe_behind(cdp_url: str | None) -> PipeMux | None:
	"""The DevTools pipe of the Chromium of ours behind a session's endpoint URL (None for a remote
	browser, or a URL that is not one of ours)."""
	upstream = getattr(local_link(cdp_url), 'open_upstream', None)
	mux = getattr(upstream, '__self__', None)  # a PipeMux's open_channel
	return mux if isinstance(mux, PipeMux) and not mux.closed else None


def local_link(cdp_url: str | None) -> Link | None:
	"""The link of ours behind a session's endpoint URL, for a connection made in process
	(``local_cdp``); None for any other URL."""
	if not cdp_url or not cdp_url.startswith('ws://127.0.0.1:') or PATH_PREFIX not in cdp_url:
		return None
	return _every_link.get(cdp_url.rsplit('/', 1)[-1])


class ContextRouter:
	"""The loopback websocket server every session's browser-use connects to, one secret path per
	session. Nothing else is served: no HTTP discovery (/json/...), no page endpoints, and no
	request that carries an ``Origin`` header (every page sends one; our clients never do), so a
	page that finds the port learns nothing and gets no handshake."""

	def __init__(self) -> None:
		self._links: dict[str, Link] = {}
		self._server: Server | None = None
		self.port = 0

	async def start(self) -> None:
		if self._server is None:
			self._server = await serve(
				self._handle,
				'127.0.0.1',
				0,
				max_size=None,
				ping_interval=None,
				compression=None,
				process_request=self._screen,
			)
			self.port = self._server.sockets[0].getsockname()[1] if self._server.sockets else 0

	def add(self, link: Link) -> str:
		"""Route a new secret path to ``link``; the websocket URL browser-use connects to."""
		token = secrets.token_urlsafe(24)
		self._links[token] = link
		_every_link[token] = link
		return f'ws://127.0.0.1:{self.port}{PATH_PREFIX}{token}'

	def remove(self, url: str) -> None:
		token = url.rsplit('/', 1)[-1]
		if self._links.pop(token, None) is not None:
			_every_link.pop(token, None)

	def _link(self, path: str) -> Link | None:
		if not path.startswith(PATH_PREFIX):
			return None
		return self._links.get(path[len(PATH_PREFIX) :])

	def _screen(self, connection: ServerConnection, request: Request) -> Response | None:
		"""Before any handshake: a browser's request (it has an Origin) or an unknown path gets a bare 403/404."""
		if request.headers.get('Origin') is not None or request.headers.get('Sec-Fetch-Site') is not None:
			logger.info('refused a CDP request that came from a web page (Origin %r)', request.headers.get('Origin', '')[:100])
			return connection.respond(403, 'Forbidden\n')
		if self._link(request.path) is None:
			return connection.respond(404, 'Not Found\n')
		return None

	async def _handle(self, client: ServerConnection) -> None:
		path = client.request.path if client.request is not None else ''
		link = self._link(path)
		if link is None:
			await client.close(code=1008, reason='unknown endpoint')
			return
		try:
			await link.serve(client)
		except (OSError, ConnectionClosed) as exc:
			logger.info('CDP connection ended: %s', exc)

	async def close(self) -> None:
		for token, link in self._links.items():
			_every_link.pop(token, None)
			local_cdp.close_link(link)
		if self._server is not None:
			self._server.close()
			with contextlib.suppress(Exception):
				await asyncio.wait_for(self._server.wait_closed(), 3)
			self._server = None
