"""What the session's pages said and fetched: console messages and network requests, always recorded.

Each session keeps two bounded ring buffers (``CONSOLE_CAP`` messages, ``NETWORK_CAP`` requests;
the oldest are dropped and counted), fed by CDP events of every tab of the session, popups
included: the first call on a session hooks its root CDP client (which sees every target's
events) and enables the Runtime and Log domains on each page as it attaches (browser-use already
enables Network on pages). Runtime.enable replays what a page logged before it, so a popup's first
messages are not lost. Nothing here keeps a body: texts and URLs are cut short, and credentials in
URLs (user:password@, token-like query values) are redacted as ``calllog`` redacts arguments.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
import weakref
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import Field

from browser_use_mcp import calllog
from browser_use_mcp.errors import InvalidArgument
from browser_use_mcp.patches import internals
from browser_use_mcp.sessions import SessionState
from browser_use_mcp.tasks import held
from browser_use_mcp.tools.base import Args, Call, Output, Reply, as_json, tool

logger = logging.getLogger('browser_use_mcp.tools')


CONSOLE_CAP = 500  # messages kept per session
NETWORK_CAP = 1000  # requests kept per session
TEXT_LIMIT = 1000  # characters of one console message
URL_LIMIT = 500  # characters of one URL

LEVELS = ('debug', 'log', 'info', 'warning', 'error')
Level = Literal['debug', 'log', 'info', 'warning', 'error']
_CONSOLE_LEVEL = {'debug': 'debug', 'info': 'info', 'warning': 'warning', 'error': 'error', 'assert': 'error'}
_LOG_LEVEL = {'verbose': 'debug', 'info': 'info', 'warning': 'warning', 'error': 'error'}

# key=value in a query string or fragment whose key names a secret (calllog.SECRET_NAMES, plus key,
# sig, code: signed URLs and OAuth codes). Linear: no nested quantifiers.
_SECRET_QUERY = re.compile(
	r'([?&#;](?:[^=&#\s]*(?:'
	+ '|'.join(map(re.escape, (*calllog.SECRET_NAMES, 'key', 'sig', 'code')))
	+ r')[^=&#\s]*)=)[^&#\s]*',
	re.IGNORECASE,
)


def _cut(text: str, limit: int) -> str:
	return text if len(text) <= limit else text[: limit - 1] + '…'


def redact(text: str) -> str:
	"""``text`` with the user:password@ of URLs and token-like query values replaced by ``***``."""
	text = calllog.USERINFO.sub(f'://{calllog.REDACTED}@', text)
	return _SECRET_QUERY.sub(lambda m: m.group(1) + calllog.REDACTED, text)


def _url(url: str) -> str:
	return _cut(redact(url), URL_LIMIT)


def _when(epoch_ms: float | None) -> str:
	seconds = epoch_ms / 1000 if epoch_ms else time.time()
	return datetime.fromtimestamp(seconds, UTC).isoformat(timespec='milliseconds').replace('+00:00', 'Z')


class ConsoleMessage(Output):
	level: str = Field(description='debug, log, info, warning or error (uncaught exceptions are errors)')
	text: str
	source: str | None = Field(description='URL:line the message came from, when known')
	time: str = Field(description='when, ISO 8601 UTC')
	tab: str | None = Field(description='tab_id of the tab (browser_list_tabs), when known')


class NetworkRequest(Output):
	method: str
	url: str
	resource_type: str | None = Field(description='Document, Script, Image, Fetch, XHR, ...')
	status: int | None = Field(description='HTTP status; null while pending or when no response came')
	duration_ms: int | None = Field(description='from request to the last byte (or failure); null while pending')
	size: int | None = Field(description='bytes received over the network, headers included; null until finished')
	failure: str | None = Field(description="the browser's reason when the request failed, e.g. net::ERR_ABORTED")
	time: str = Field(description='when it was sent, ISO 8601 UTC')
	tab: str | None


class ConsoleMessages(Output):
	messages: list[ConsoleMessage] = Field(description='oldest first')
	matched: int = Field(description='how many recorded messages match the filters (only the last `limit` are returned)')
	dropped: int = Field(description='how many older messages this session no longer keeps (the buffer holds the last ones)')


class NetworkRequests(Output):
	requests: list[NetworkRequest] = Field(description='oldest first')
	matched: int = Field(description='how many recorded requests match the filters (only the last `limit` are returned)')
	dropped: int = Field(description='how many older requests this session no longer keeps (the buffer holds the last ones)')


@dataclass
class _Request:
	method: str
	url: str
	resource_type: str | None
	time: str
	tab: str | None
	started: float  # CDP monotonic timestamp, s
	status: int | None = None
	duration_ms: int | None = None
	size: int | None = None
	failure: str | None = None
	key: tuple[str | None, str] = ('', '')

	def out(self) -> NetworkRequest:
		return NetworkRequest(
			method=self.method,
			url=self.url,
			resource_type=self.resource_type,
			status=self.status,
			duration_ms=self.duration_ms,
			size=self.size,
			failure=self.failure,
			time=self.time,
			tab=self.tab,
		)


@dataclass
class Recorder:
	"""One session's buffers and the browser-use session they are fed from."""

	console_cap: int = CONSOLE_CAP
	network_cap: int = NETWORK_CAP
	console: deque[ConsoleMessage] = field(default_factory=deque)
	requests: deque[_Request] = field(default_factory=deque)
	pending: dict[tuple[str | None, str], _Request] = field(default_factory=dict)
	console_dropped: int = 0
	requests_dropped: int = 0
	watching: Any = None  # the BrowserSession hooked
	tabs: Any = None  # session_id -> target_id (browser-use's session manager)
	tasks: set[asyncio.Task[None]] = field(default_factory=set)  # enabling the domains on tabs, in the background
	speakers: dict[tuple[str, str], str] = field(default_factory=dict)  # (domain, target_id) -> the CDP session recorded for it
	har: Any = None  # har.HarLog of the session's recording (the ``har`` kind), fed the same Network events
	# CDP session -> target of the tabs attached since recording began, as Target.attachedToTarget says:
	# a popup's first events can come before browser-use's session manager has heard of its session
	attached: dict[str, str] = field(default_factory=dict)

	def target(self, session_id: str | None) -> str | None:
		if not session_id:
			return None
		known = self.attached.get(session_id)
		if known is not None or self.tabs is None:
			return known
		try:
			return self.tabs.get_target_id_from_session_id(session_id)
		except Exception:
			return None

	def tab(self, session_id: str | None) -> str | None:
		target = self.target(session_id)
		return target[-4:] if target else None

	def heard(self, domain: str, session_id: str | None) -> bool:
		"""Whether to record an event of this CDP session: a tab may have several (browser-use attaches
		more than one), each with the domain enabled; per domain, the first that speaks for a tab is heard."""
		if not session_id:
			return True
		target = self.target(session_id) or session_id
		return self.speakers.setdefault((domain, target), session_id) == session_id

	def on_detached(self, params: dict[str, Any], session_id: str | None) -> None:
		gone = params.get('sessionId')
		self.attached.pop(gone, None)
		for target in [t for t, s in self.speakers.items() if s == gone]:
			del self.speakers[target]

	def add_console(self, message: ConsoleMessage) -> None:
		if len(self.console) >= self.console_cap:
			self.console.popleft()
			self.console_dropped += 1
		self.console.append(message)

	def add_request(self, request: _Request) -> None:
		if len(self.requests) >= self.network_cap:
			old = self.requests.popleft()
			self.requests_dropped += 1
			if self.pending.get(old.key) is old:
				del self.pending[old.key]
		self.requests.append(request)
		self.pending[request.key] = request

	# -- CDP events (never raise: they run inside cdp-use's dispatch) --

	def on_console(self, params: dict[str, Any], session_id: str | None) -> None:
		parts = []
		for arg in params.get('args') or []:
			if 'value' in arg:
				value = arg['value']
				parts.append(value if isinstance(value, str) else as_json(value).replace('\n', ' '))
			else:
				parts.append(str(arg.get('unserializableValue') or arg.get('description') or arg.get('type', '')))
		frames = (params.get('stackTrace') or {}).get('callFrames') or []
		source = (
			f'{_url(frames[0].get("url", ""))}:{frames[0].get("lineNumber", 0) + 1}' if frames and frames[0].get('url') else None
		)
		level = _CONSOLE_LEVEL.get(params.get('type', ''), 'log')
		self._console(level, ' '.join(parts), source, params.get('timestamp'), session_id)

	def on_exception(self, params: dict[str, Any], session_id: str | None) -> None:
		details = params.get('exceptionDetails') or {}
		text = (details.get('exception') or {}).get('description') or details.get('text') or 'Uncaught exception'
		url = details.get('url')
		source = f'{_url(url)}:{details.get("lineNumber", 0) + 1}' if url else None
		self._console('error', text, source, params.get('timestamp'), session_id)

	def on_log(self, params: dict[str, Any], session_id: str | None) -> None:
		entry = params.get('entry') or {}
		url = entry.get('url')
		line = entry.get('lineNumber')
		source = (f'{_url(url)}:{line + 1}' if isinstance(line, int) else _url(url)) if url else None
		level = _LOG_LEVEL.get(entry.get('level', ''), 'info')
		self._console(level, entry.get('text', ''), source, entry.get('timestamp'), session_id)

	def _console(self, level: str, text: str, source: str | None, stamp: Any, session_id: str | None) -> None:
		stamp = stamp if isinstance(stamp, int | float) else None
		text = _cut(redact(_cut(text, TEXT_LIMIT * 2)), TEXT_LIMIT)
		self.add_console(ConsoleMessage(level=level, text=text, source=source, time=_when(stamp), tab=self.tab(session_id)))

	def on_request(self, params: dict[str, Any], session_id: str | None) -> None:
		key = (session_id, params.get('requestId', ''))
		redirected = params.get('redirectResponse')
		if redirected:  # the same requestId goes on to the next URL: the hop it leaves ends here
			previous = self.pending.pop(key, None)
			if previous is not None:
				previous.status = redirected.get('status')
				self._finish(previous, params.get('timestamp'))
		request = params.get('request') or {}
		wall = params.get('wallTime')
		self.add_request(
			_Request(
				method=str(request.get('method', 'GET')),
				url=_url(str(request.get('url', ''))),
				resource_type=params.get('type'),
				time=_when(wall * 1000 if isinstance(wall, int | float) else None),
				tab=self.tab(session_id),
				started=params.get('timestamp') or 0.0,
				key=key,
			)
		)

	def on_response(self, params: dict[str, Any], session_id: str | None) -> None:
		request = self.pending.get((session_id, params.get('requestId', '')))
		if request is not None:
			request.status = (params.get('response') or {}).get('status')
			request.resource_type = params.get('type') or request.resource_type

	def on_finished(self, params: dict[str, Any], session_id: str | None) -> None:
		request = self.pending.pop((session_id, params.get('requestId', '')), None)
		if request is not None:
			size = params.get('encodedDataLength')
			request.size = int(size) if isinstance(size, int | float) else None
			self._finish(request, params.get('timestamp'))

	def on_failed(self, params: dict[str, Any], session_id: str | None) -> None:
		request = self.pending.pop((session_id, params.get('requestId', '')), None)
		if request is not None:
			request.failure = _cut(str(params.get('errorText') or 'failed'), 200)
			if params.get('canceled'):
				request.failure += ' (canceled)'
			request.resource_type = params.get('type') or request.resource_type
			self._finish(request, params.get('timestamp'))

	@staticmethod
	def _finish(request: _Request, stamp: Any) -> None:
		if isinstance(stamp, int | float) and request.started:
			request.duration_ms = max(0, round((stamp - request.started) * 1000))


_recorders: weakref.WeakKeyDictionary[Any, Recorder] = weakref.WeakKeyDictionary()

_EVENTS = {
	'Runtime.consoleAPICalled': 'on_console',
	'Runtime.exceptionThrown': 'on_exception',
	'Log.entryAdded': 'on_log',
	'Network.requestWillBeSent': 'on_request',
	'Network.responseReceived': 'on_response',
	'Network.loadingFinished': 'on_finished',
	'Network.loadingFailed': 'on_failed',
}
_HAR_EVENTS = {  # heard only for a HAR: when each page loaded; the headers and cookies as sent and as received
	'Page.domContentEventFired': 'on_content_loaded',
	'Page.loadEventFired': 'on_loaded',
	'Network.requestWillBeSentExtraInfo': 'on_request_extra',
	'Network.responseReceivedExtraInfo': 'on_response_extra',
}
_PAGES = ('page', 'iframe')  # targets whose console is recorded (an out-of-process iframe is its own target)


def recorder(state: SessionState) -> Recorder:
	found = _recorders.get(state)
	if found is None:
		found = _recorders[state] = Recorder()
	return found


ENABLE_TIMEOUT = 5.0  # s: a hung tab never answers; its recording is given up, nothing waits on it


async def _enable(client: Any, session_id: str) -> None:
	"""Runtime and Log on one tab (Network: browser-use enables it on pages; on iframes too, here)."""
	try:
		await asyncio.wait_for(
			asyncio.gather(
				client.send_raw('Runtime.enable', {}, session_id),
				client.send_raw('Log.enable', {}, session_id),
				client.send_raw('Network.enable', {}, session_id),
			),
			ENABLE_TIMEOUT,
		)
	except (Exception, TimeoutError) as exc:  # e.g. the tab closed meanwhile, or hangs
		logger.debug('console and network are not recorded for a tab: %s', str(exc)[:200] or type(exc).__name__)


async def _enable_open_tabs(bs: Any, client: Any) -> None:
	"""The tabs open when recording starts (later ones are enabled as they attach)."""
	for target in bs.session_manager.get_all_page_targets():
		try:
			cdp = await asyncio.wait_for(bs.get_or_create_cdp_session(target.target_id, focus=False), ENABLE_TIMEOUT)
		except (Exception, TimeoutError) as exc:
			logger.debug('console and network are not recorded for tab %s: %s', target.target_id[-4:], str(exc)[:200])
			continue
		await _enable(client, cdp.session_id)


def watch(state: SessionState) -> None:
	"""Record the console and the network of every tab of the session, once per browser. Never waits
	on the browser (a call's deadline starts after this): the domains are enabled in the background."""
	bs = state.browser_session
	rec = recorder(state)
	if rec.watching is bs:
		return
	rec.watching = bs
	rec.tabs = getattr(bs, 'session_manager', None)
	root = internals.root_cdp_client(bs)
	pending = rec.tasks
	recording = getattr(state, 'recording', None)
	har = getattr(recording, 'har', None)
	if har is not None and root is not None:  # the HAR's bodies: asked of the tab that loaded them, in the background
		har.fetch = lambda request_id, session_id: root.send_raw('Network.getResponseBody', {'requestId': request_id}, session_id)
	if har is not None:
		har.tab_of = rec.target  # its pages are each tab's main-frame documents
	rec.har = har

	def heard(handler: Any, name: str, domain: str) -> Any:
		to_har = getattr(har, name, None) if domain == 'Network' and har is not None else None

		def on_event(params: dict[str, Any], session_id: str | None) -> None:
			if rec.heard(domain, session_id):
				handler(params, session_id)
				if to_har is not None:
					to_har(params, session_id)

		return on_event

	def guarded(method: str, handler: Any) -> Any:
		def on_event(params: Any, session_id: str | None = None) -> None:
			try:
				handler(params if isinstance(params, dict) else {}, session_id)
			except Exception:  # bookkeeping only: a bug here must not break cdp-use's dispatch
				logger.exception('recording %s failed', method)

		return on_event

	def on_attached(params: dict[str, Any], parent: str | None) -> None:
		info = params.get('targetInfo') or {}
		session_id = params.get('sessionId')
		if info.get('type') in _PAGES and session_id:
			if info.get('targetId'):
				rec.attached[session_id] = info['targetId']
				if info.get('type') == 'iframe' and har is not None:  # its requests are its tab's page's
					har.in_tab(info['targetId'], parent)
			held(asyncio.get_running_loop().create_task(_enable(root, session_id)), pending)

	try:
		if root is None:
			raise internals.Unavailable('no root CDP client')
		for method, name in _EVENTS.items():
			internals.hook_cdp_event(root, method, guarded(method, heard(getattr(rec, name), name, method.split('.')[0])))
		if har is not None:  # (browser-use enables Page on its tabs)
			for method, name in _HAR_EVENTS.items():
				internals.hook_cdp_event(root, method, guarded(method, heard(getattr(har, name), '', method.split('.')[0])))
		internals.hook_cdp_event(root, 'Target.detachedFromTarget', guarded('Target.detachedFromTarget', rec.on_detached))
		internals.hook_cdp_event(root, 'Target.attachedToTarget', guarded('Target.attachedToTarget', on_attached))
	except internals.Unavailable as exc:
		logger.warning('console messages and network requests are not recorded for this session (%s)', exc)
		return
	held(asyncio.get_running_loop().create_task(_enable_open_tabs(bs, root)), pending)


# -- the tools ---------------------------------------------------------------------------------

Limit = Annotated[int, Field(ge=1, le=1000, description='Return at most this many, the most recent (default 100).')]


class ConsoleArgs(Args):
	level: Level | None = Field(
		default=None, description='Only messages at least this severe: debug < log < info < warning < error.'
	)
	text: str | None = Field(default=None, description='Only messages containing this text (case-insensitive).')
	limit: Limit = 100


class NetworkArgs(Args):
	url_contains: str | None = Field(default=None, description='Only requests whose URL contains this (case-insensitive).')
	status: int | None = Field(default=None, ge=100, le=599, description='Only responses with this HTTP status.')
	method: str | None = Field(default=None, description='Only this HTTP method (GET, POST, ...).')
	failed_only: bool = Field(
		default=False, description='Only requests that failed: no response (net::ERR_...) or an HTTP status of 400 or more.'
	)
	limit: Limit = 100


@tool('Console messages', read_only=True, open_world=False)
async def browser_console_messages(state: SessionState, args: ConsoleArgs, call: Call) -> Reply[ConsoleMessages]:
	"""The session's recent console messages (console.log/warn/error…, uncaught exceptions, browser warnings
	such as failed loads) from all its tabs, oldest first: level, text, source URL:line, time, tab. Always
	recorded, the last 500 per session; long texts are cut and secrets in URLs redacted."""
	rec = recorder(state)
	least = LEVELS.index(args.level) if args.level else 0
	needle = args.text.lower() if args.text else None
	matched = [m for m in rec.console if LEVELS.index(m.level) >= least and (needle is None or needle in m.text.lower())]
	out = ConsoleMessages(messages=matched[-args.limit :], matched=len(matched), dropped=rec.console_dropped)
	return Reply(as_json(out.dump()), structured=out.dump())


@tool('Network requests', read_only=True, open_world=False)
async def browser_network_requests(state: SessionState, args: NetworkArgs, call: Call) -> Reply[NetworkRequests]:
	"""The session's recent network requests from all its tabs, oldest first: method, URL, resource type,
	status, duration, size, failure (never bodies). Always recorded, the last 1000 per session; secrets in
	URLs are redacted."""
	if args.method is not None and not re.fullmatch(r'[A-Za-z]{1,20}', args.method):
		raise InvalidArgument(f'method: {args.method[:40]!r} is not an HTTP method; use e.g. GET or POST.')
	rec = recorder(state)
	needle = args.url_contains.lower() if args.url_contains else None
	method = args.method.upper() if args.method else None

	def keep(r: _Request) -> bool:
		if needle is not None and needle not in r.url.lower():
			return False
		if args.status is not None and r.status != args.status:
			return False
		if method is not None and r.method != method:
			return False
		return not args.failed_only or r.failure is not None or (r.status or 0) >= 400

	matched = [r for r in rec.requests if keep(r)]
	out = NetworkRequests(requests=[r.out() for r in matched[-args.limit :]], matched=len(matched), dropped=rec.requests_dropped)
	return Reply(as_json(out.dump()), structured=out.dump())
