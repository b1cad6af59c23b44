"""A session's traffic as a HAR 1.2 log (the ``har`` recording kind, docs/recording.md).

Fed by the CDP Network events of the session's own tabs (``tools/debug.py`` hooks the session's
root CDP client; in a shared Chromium that connection only ever sees the session's own targets,
cdp_proxy.py), so another session's traffic can never enter it. Response bodies are fetched with
``Network.getResponseBody`` in background tasks after a response finished (never on a call's
path), at most ``BODY_CAP`` bytes each and ``BODIES_TOTAL`` per session; larger ones are left out
with a comment saying so. Credentials are not kept: ``Authorization``, ``Cookie`` and
``Set-Cookie`` values (and their proxy variants) become ``***``, as do a URL's user:password@
and token-like query values (tools/debug.py's rules, as the network tool shows them).

Headers and cookies as sent and received: ``Network.requestWillBeSentExtraInfo`` and
``Network.responseReceivedExtraInfo`` (one of each per hop of a request, in order, before or after
the hop's own event) give the headers the network stack added and the raw response headers, and the
cookies Chromium sent, held back or refused; cookies are listed by name and attributes, never value.

Pages: each document a tab's main frame loads is a page of the log (its URL as title, redacted as
above), timed by that tab's ``Page.domContentEventFired`` and ``Page.loadEventFired``; every request
a tab makes after a page began is that page's (``pageref``), so HAR viewers group and time them by
page. A tab's main frame is told by its frame id, which Chromium gives the tab's target.

Bounded: at most ``ENTRY_CAP`` entries (the oldest are dropped and counted in the log's comment),
``PAGE_CAP`` pages, at most ``FETCHES`` bodies being fetched at once and ``QUEUE_CAP`` waiting.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from browser_use_mcp import __version__
from browser_use_mcp.calllog import REDACTED
from browser_use_mcp.tasks import held

logger = logging.getLogger('browser_use_mcp.har')

BODY_CAP = 512 * 1024  # bytes of one response body kept in the HAR
BODIES_TOTAL = 16 * 1024 * 1024  # bytes of bodies kept per session; later bodies are left out
ENTRY_CAP = 5000  # requests kept per session; the oldest are dropped
PAGE_CAP = 1000  # pages (main-frame documents) kept per session; the oldest are dropped
LAST_DATE = 253_402_300_800  # 10000-01-01 UTC: a cookie's expiry past it is not written (no date can say it)
EARLY_CAP = 256  # requests whose headers Chromium told before the request itself, waiting for it
TABS_CAP = 10_000  # tabs (and out-of-process iframes) whose page is remembered; past it the oldest are forgotten
FETCHES = 2  # bodies fetched at once
QUEUE_CAP = 200  # bodies waiting to be fetched; past it a body is left out
FETCH_BOUND = 5.0  # s one body fetch may take
SECRET_HEADERS = frozenset({'authorization', 'proxy-authorization', 'cookie', 'set-cookie'})
SKIP_BODIES = frozenset({'Media', 'Font', 'WebSocket', 'EventSource'})  # not worth a fetch, or never complete

Fetch = Callable[[str, str | None], Awaitable[dict[str, Any]]]  # (requestId, CDP session) -> getResponseBody's result


def _iso(wall: float | None) -> str:
	seconds = wall if isinstance(wall, int | float) and wall > 0 else time.time()
	return datetime.fromtimestamp(seconds, UTC).isoformat(timespec='milliseconds').replace('+00:00', 'Z')


def _url(url: str) -> str:
	"""A URL with its user:password@ and token-like query values redacted (as the network tool does)."""
	from browser_use_mcp.tools.debug import redact

	return redact(url)


def _headers(headers: Any) -> list[dict[str, str]]:
	out = []
	if isinstance(headers, dict):
		for name, value in headers.items():
			name = str(name)
			for one in str(value).split('\n'):  # CDP joins repeated headers with newlines
				out.append({'name': name, 'value': REDACTED if name.lower() in SECRET_HEADERS else one})
	return out


def _cookie(name: str, attributes: dict[str, Any]) -> dict[str, Any]:
	"""A HAR cookie: its name and attributes; its value is a credential, so it is never kept."""
	cookie: dict[str, Any] = {'name': name, 'value': REDACTED}
	for key in ('path', 'domain'):
		if isinstance(attributes.get(key), str) and attributes[key]:
			cookie[key] = attributes[key]
	expires = attributes.get('expires')
	if isinstance(expires, int | float) and 0 < expires < LAST_DATE:  # (-1: a session cookie)
		cookie['expires'] = _iso(expires)
	for key in ('httpOnly', 'secure'):
		if key in attributes:
			cookie[key] = bool(attributes[key])
	return cookie


def _sent_cookies(sent: dict[str, Any] | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
	"""The cookies a request carried, and those Chromium held back with its reasons (ExtraInfo)."""
	cookies: list[dict[str, Any]] = []
	held_back: list[dict[str, Any]] = []
	for item in (sent or {}).get('associatedCookies') or []:
		if not isinstance(item, dict) or not isinstance(item.get('cookie'), dict):
			continue
		cookie, reasons = item['cookie'], [str(r) for r in item.get('blockedReasons') or []]
		if reasons:
			held_back.append({'name': str(cookie.get('name', '')), 'reasons': reasons})
		else:
			cookies.append(_cookie(str(cookie.get('name', '')), cookie))
	return cookies, held_back


def _set_cookies(headers: Any) -> list[dict[str, Any]]:
	"""The cookies a response's ``Set-Cookie`` lines set: names and attributes."""
	cookies = []
	if not isinstance(headers, dict):
		return cookies
	for header, value in headers.items():
		if str(header).lower() != 'set-cookie':
			continue
		for line in str(value).split('\n'):
			first, *attributes = line.split(';')
			if '=' not in first:
				continue
			found: dict[str, Any] = {}
			for attribute in attributes:
				key, _, text = attribute.strip().partition('=')
				key = key.lower()
				if key in ('path', 'domain'):
					found[key] = text.strip()
				elif key == 'expires':
					with contextlib.suppress(TypeError, ValueError, IndexError, OverflowError):
						found['expires'] = parsedate_to_datetime(text.strip()).timestamp()
				elif key == 'httponly':
					found['httpOnly'] = True
				elif key == 'secure':
					found['secure'] = True
			cookies.append(_cookie(first.split('=', 1)[0].strip(), found))
	return cookies


def _refused_cookies(received: dict[str, Any] | None) -> list[dict[str, Any]]:
	"""The cookies a response set that Chromium refused to store, with its reasons (ExtraInfo)."""
	refused = []
	for item in (received or {}).get('blockedCookies') or []:
		if not isinstance(item, dict):
			continue
		cookie = item.get('cookie') if isinstance(item.get('cookie'), dict) else {}
		name = cookie.get('name') or str(item.get('cookieLine', '')).split(';', 1)[0].split('=', 1)[0].strip()
		refused.append({'name': str(name), 'reasons': [str(r) for r in item.get('blockedReasons') or []]})
	return refused


def _query(url: str) -> list[dict[str, str]]:
	try:
		return [{'name': k, 'value': v} for k, v in parse_qsl(urlsplit(url).query, keep_blank_values=True)]
	except ValueError:
		return []


def _http_version(protocol: Any) -> str:
	text = str(protocol or '').lower()
	return {'h2': 'HTTP/2', 'h3': 'HTTP/3', 'http/1.0': 'HTTP/1.0', 'http/1.1': 'HTTP/1.1'}.get(text, text.upper() or 'HTTP/1.1')


def _bounded(tabs: dict[str, Any]) -> dict[str, Any]:
	"""``tabs``, its oldest key forgotten if it holds ``TABS_CAP`` (a tab long closed, most likely)."""
	if len(tabs) >= TABS_CAP:
		del tabs[next(iter(tabs))]
	return tabs


class _Entry:
	__slots__ = (
		'body',
		'comment',
		'done',
		'ended',
		'failure',
		'page',
		'received',
		'request',
		'response',
		'sent',
		'started',
		'type',
		'wall',
	)

	def __init__(self, request: dict[str, Any], started: float, wall: float | None, kind: str | None) -> None:
		self.request = request
		self.started = started  # CDP monotonic s
		self.wall = wall
		self.type = kind
		self.response: dict[str, Any] | None = None
		self.ended: float | None = None
		self.failure: str | None = None
		self.body: dict[str, Any] | None = None  # {'text': ..., 'encoding': 'base64'?}
		self.comment = ''
		self.done = False
		self.page: str | None = None  # the id of the tab's page it was requested in
		self.sent: dict[str, Any] | None = None  # Network.requestWillBeSentExtraInfo: the headers and cookies sent
		self.received: dict[str, Any] | None = None  # Network.responseReceivedExtraInfo: the raw headers, refused cookies


class _Page:
	"""A document a tab's main frame loaded, and when its DOMContentLoaded and load came."""

	__slots__ = ('content', 'id', 'load', 'request', 'started', 'title', 'wall')

	def __init__(self, page_id: str, request: str, started: float, wall: float | None, title: str) -> None:
		self.id = page_id
		self.request = request  # the navigation's requestId (its redirects keep it)
		self.started = started  # CDP monotonic s
		self.wall = wall
		self.title = title
		self.content: float | None = None  # ms after started
		self.load: float | None = None

	def row(self) -> dict[str, Any]:
		def ms(value: float | None) -> float:
			return value if value is not None else -1

		return {
			'startedDateTime': _iso(self.wall),
			'id': self.id,
			'title': self.title,
			'pageTimings': {'onContentLoad': ms(self.content), 'onLoad': ms(self.load)},
		}


class HarLog:
	"""One session's requests, kept until the HAR is written (``build``)."""

	def __init__(
		self, body_cap: int = BODY_CAP, bodies_total: int = BODIES_TOTAL, entry_cap: int = ENTRY_CAP, page_cap: int = PAGE_CAP
	) -> None:
		self.body_cap = body_cap
		self.bodies_left = bodies_total
		self.entry_cap = entry_cap
		self.page_cap = page_cap
		self.pages: OrderedDict[str, _Page] = OrderedDict()
		self.current: dict[str, _Page] = {}  # tab -> the page it shows
		self.main_frames: dict[str, str] = {}  # CDP session -> its main frame, when its target is not known
		self.tab_of: Callable[[str | None], str | None] = lambda session_id: None  # set by the watcher: CDP session -> target
		self.frame_parents: dict[str, str] = {}  # out-of-process iframe target -> the tab it is in (set by the watcher)
		self._page_count = 0
		self.entries: OrderedDict[tuple[str | None, str, int], _Entry] = OrderedDict()
		self.open: dict[tuple[str | None, str], tuple[str | None, str, int]] = {}  # (CDP session, requestId) -> entry key
		self.hops: dict[tuple[str | None, str], list[tuple[str | None, str, int]]] = {}  # its entries: each redirect, in order
		# ExtraInfo events that came before the hop they describe: (CDP session, requestId) -> 'sent'/'received' -> params
		self.early: OrderedDict[tuple[str | None, str], dict[str, list[dict[str, Any]]]] = OrderedDict()
		self.dropped = 0
		self.fetch: Fetch | None = None  # set by the watcher: how to ask the tab for a body
		self.tasks: set[asyncio.Task[None]] = set()
		self._queue: asyncio.Queue[tuple[_Entry, str, str | None]] | None = None
		self._hop = 0

	# -- CDP events (never raise) --

	def on_request(self, params: dict[str, Any], session_id: str | None) -> None:
		rid = str(params.get('requestId', ''))
		redirected = params.get('redirectResponse')
		if redirected:  # the hop it leaves ends here, with the redirect as its response
			previous = self._entry(session_id, rid)
			if previous is not None:
				previous.response = redirected
				previous.ended = params.get('timestamp')
				previous.done = True
		request = params.get('request') or {}
		self._hop += 1
		key = (session_id, rid, self._hop)
		if len(self.entries) >= self.entry_cap:
			self.entries.popitem(last=False)
			self.dropped += 1
		entry = self.entries[key] = _Entry(request, params.get('timestamp') or 0.0, params.get('wallTime'), params.get('type'))
		self.open[(session_id, rid)] = key
		self.hops.setdefault((session_id, rid), []).append(key)
		early = self.early.get((session_id, rid))
		if early is not None:  # what Chromium told of this hop before the hop itself
			for kind in ('sent', 'received'):
				if early[kind]:
					setattr(entry, kind, early[kind].pop(0))
			if not early['sent'] and not early['received']:
				del self.early[(session_id, rid)]
		tab = self._tab(session_id)
		if params.get('type') == 'Document' and self._is_main_frame(params.get('frameId'), session_id, tab):
			shown = self.current.get(tab)
			if shown is None or shown.request != rid:  # a new navigation, not one of its redirects
				self._new_page(tab, rid, entry, _url(str(request.get('url', ''))))
		shown = self.current.get(tab)
		entry.page = shown.id if shown is not None else None

	def _tab(self, session_id: str | None) -> str:
		"""The tab a CDP session's events belong to: its target, or for an out-of-process iframe the
		tab the iframe is in (whose main frame its documents are not); the session when unknown."""
		target = self.tab_of(session_id)
		if target is None:
			return session_id or ''
		return self.frame_parents.get(target, target)

	def in_tab(self, frame_target: str, parent_session: str | None) -> None:
		"""An out-of-process iframe attached under a tab's (or another such iframe's) CDP session."""
		_bounded(self.frame_parents)[frame_target] = self._tab(parent_session)

	def _is_main_frame(self, frame: Any, session_id: str | None, tab: str) -> bool:
		if not isinstance(frame, str) or not frame:
			return False
		if tab != (session_id or ''):  # the tab is known: its main frame has its target's id
			return frame == tab
		if tab not in self.main_frames:  # else the session's first document's frame
			_bounded(self.main_frames)[tab] = frame
		return self.main_frames[tab] == frame

	def _new_page(self, tab: str, rid: str, entry: _Entry, url: str) -> None:
		self._page_count += 1
		page = _Page(f'page_{self._page_count}', rid, entry.started, entry.wall, url)
		if len(self.pages) >= self.page_cap:
			self.pages.popitem(last=False)
		if tab not in self.current:
			_bounded(self.current)
		self.pages[page.id] = self.current[tab] = page

	def on_content_loaded(self, params: dict[str, Any], session_id: str | None) -> None:
		"""Page.domContentEventFired of a tab."""
		self._page_time(params, session_id, 'content')

	def on_loaded(self, params: dict[str, Any], session_id: str | None) -> None:
		"""Page.loadEventFired of a tab."""
		self._page_time(params, session_id, 'load')

	def _page_time(self, params: dict[str, Any], session_id: str | None, which: str) -> None:
		if self.tab_of(session_id) in self.frame_parents:  # an out-of-process iframe's own document
			return
		page = self.current.get(self._tab(session_id))
		stamp = params.get('timestamp')
		if page is not None and getattr(page, which) is None and isinstance(stamp, int | float) and stamp >= page.started:
			setattr(page, which, round((stamp - page.started) * 1000, 3))

	def _entry(self, session_id: str | None, rid: str) -> _Entry | None:
		key = self.open.get((session_id, rid))
		return self.entries.get(key) if key is not None else None

	def on_response(self, params: dict[str, Any], session_id: str | None) -> None:
		entry = self._entry(session_id, str(params.get('requestId', '')))
		if entry is not None:
			entry.response = params.get('response') or {}
			entry.type = params.get('type') or entry.type

	def on_request_extra(self, params: dict[str, Any], session_id: str | None) -> None:
		"""Network.requestWillBeSentExtraInfo: the headers as sent (the network stack's own added)
		and the cookies Chromium sent or held back, for the next hop of the request that has none."""
		self._extra(params, session_id, 'sent')

	def on_response_extra(self, params: dict[str, Any], session_id: str | None) -> None:
		"""Network.responseReceivedExtraInfo: the raw response headers (``Set-Cookie`` among them) and
		the cookies Chromium refused to store."""
		self._extra(params, session_id, 'received')

	def _extra(self, params: dict[str, Any], session_id: str | None, kind: str) -> None:
		# each hop of a request gets one of each, in order, whether it comes before or after the hop's own event
		rid = str(params.get('requestId', ''))
		for key in self.hops.get((session_id, rid), ()):
			entry = self.entries.get(key)
			if entry is not None and getattr(entry, kind) is None:
				setattr(entry, kind, params)
				return
		if len(self.early) >= EARLY_CAP:
			self.early.popitem(last=False)
		self.early.setdefault((session_id, rid), {'sent': [], 'received': []})[kind].append(params)

	def on_finished(self, params: dict[str, Any], session_id: str | None) -> None:
		rid = str(params.get('requestId', ''))
		entry = self._entry(session_id, rid)
		self.open.pop((session_id, rid), None)
		self.hops.pop((session_id, rid), None)
		if entry is None:
			return
		entry.ended = params.get('timestamp')
		entry.done = True
		if entry.response is not None:
			size = params.get('encodedDataLength')
			entry.response = {**entry.response, '_encoded': size if isinstance(size, int | float) else -1}
		self._want_body(entry, rid, session_id)

	def on_failed(self, params: dict[str, Any], session_id: str | None) -> None:
		rid = str(params.get('requestId', ''))
		entry = self._entry(session_id, rid)
		self.open.pop((session_id, rid), None)
		self.hops.pop((session_id, rid), None)
		if entry is not None:
			entry.ended = params.get('timestamp')
			entry.failure = str(params.get('errorText') or 'failed')[:200]
			entry.done = True

	# -- bodies, in the background --

	def _want_body(self, entry: _Entry, rid: str, session_id: str | None) -> None:
		if self.fetch is None or entry.response is None or entry.type in SKIP_BODIES:
			return
		status = entry.response.get('status')
		if isinstance(status, int) and (status == 204 or 300 <= status < 400):
			return
		if self.bodies_left <= 0:
			entry.comment = 'body not kept: the bodies of this recording reached their total cap'
			return
		if self._queue is None:
			self._queue = asyncio.Queue(QUEUE_CAP)
			for i in range(FETCHES):
				held(asyncio.get_running_loop().create_task(self._fetcher(), name=f'har-bodies-{i}'), self.tasks)
		try:
			self._queue.put_nowait((entry, rid, session_id))
		except asyncio.QueueFull:
			entry.comment = 'body not kept: too many responses at once'

	async def _fetcher(self) -> None:
		assert self._queue is not None
		while True:
			entry, rid, session_id = await self._queue.get()
			try:
				if self.fetch is None:
					continue
				result = await asyncio.wait_for(self.fetch(rid, session_id), FETCH_BOUND)
				text = result.get('body')
				if not isinstance(text, str):
					continue
				encoded = bool(result.get('base64Encoded'))
				size = len(text) * 3 // 4 if encoded else len(text.encode('utf-8', 'replace'))
				if size > self.body_cap:
					entry.comment = f'body not kept: {size} bytes, over the cap of {self.body_cap}'
				elif size > self.bodies_left:
					entry.comment = 'body not kept: the bodies of this recording reached their total cap'
				else:
					self.bodies_left -= size
					entry.body = {'text': text, 'size': size, **({'encoding': 'base64'} if encoded else {})}
			except (Exception, TimeoutError) as exc:  # the tab closed, navigated away, or the body is gone
				entry.comment = f'body not available: {str(exc)[:120] or type(exc).__name__}'
			finally:
				self._queue.task_done()

	async def settle(self, bound: float = FETCH_BOUND) -> None:
		"""Wait (bounded) for the bodies being fetched."""
		if self._queue is not None:  # join() returns at once when nothing is waiting
			with contextlib.suppress(TimeoutError):
				await asyncio.wait_for(self._queue.join(), bound)

	def stop(self) -> None:
		self.fetch = None
		for task in list(self.tasks):
			task.cancel()

	# -- the HAR --

	def taken(self) -> tuple[list[_Entry], list[dict[str, Any]]]:
		"""The entries and the pages as they are now, taken on the event loop, for ``build`` in a thread."""
		return list(self.entries.values()), [page.row() for page in self.pages.values()]

	def build(self, entries: list[_Entry] | None = None, pages: list[dict[str, Any]] | None = None) -> dict[str, Any]:
		"""The HAR 1.2 log of what was seen so far (requests still open are listed as they are).
		``entries``, ``pages``: as ``taken`` gave them on the event loop, to build it in a thread."""
		if entries is None or pages is None:
			entries, pages = self.taken()
		kept = {page['id'] for page in pages}
		rows = [self._har(e, kept) for e in entries]
		comment = f'{self.dropped} older requests not kept (at most {self.entry_cap})' if self.dropped else ''
		return {
			'log': {
				'version': '1.2',
				'creator': {'name': 'browser-use-mcp', 'version': __version__},
				'pages': pages,
				'entries': rows,
				**({'comment': comment} if comment else {}),
			}
		}

	def _har(self, e: _Entry, pages: set[str]) -> dict[str, Any]:
		req, resp = e.request, e.response or {}
		url = _url(str(req.get('url', '')))
		sent = (e.sent or {}).get('headers')
		headers = sent if isinstance(sent, dict) and sent else req.get('headers') or {}  # as sent, when Chromium told
		post = req.get('postData')
		cookies, held_back = _sent_cookies(e.sent)
		request: dict[str, Any] = {
			'method': str(req.get('method', 'GET')),
			'url': url,
			'httpVersion': _http_version(resp.get('protocol')),
			'cookies': cookies,
			'headers': _headers(headers),
			'queryString': _query(url),
			'headersSize': -1,
			'bodySize': len(post.encode('utf-8', 'replace')) if isinstance(post, str) else 0,
		}
		if isinstance(post, str):
			mime = next((str(v) for k, v in headers.items() if str(k).lower() == 'content-type'), 'application/octet-stream')
			request['postData'] = {'mimeType': mime, 'text': post}
		if held_back:
			request['_blockedCookies'] = held_back
		encoded = resp.get('_encoded', -1)
		header_bytes = resp.get('encodedDataLength')
		body_size = -1
		if isinstance(encoded, int | float) and encoded >= 0:
			body_size = max(0, int(encoded) - (int(header_bytes) if isinstance(header_bytes, int | float) else 0))
		content: dict[str, Any] = {
			'size': e.body['size'] if e.body else max(body_size, 0),
			'mimeType': str(resp.get('mimeType') or 'x-unknown'),
		}
		if e.body:
			content['text'] = e.body['text']
			if 'encoding' in e.body:
				content['encoding'] = e.body['encoding']
		raw = (e.received or {}).get('headers')
		resp_headers = raw if isinstance(raw, dict) and raw else resp.get('headers') or {}
		location = next((str(v) for k, v in resp_headers.items() if str(k).lower() == 'location'), '')
		response = {
			'status': int(resp.get('status') or 0),
			'statusText': str(resp.get('statusText') or ''),
			'httpVersion': _http_version(resp.get('protocol')),
			'cookies': _set_cookies(resp_headers),
			'headers': _headers(resp_headers),
			'content': content,
			'redirectURL': _url(location),
			'headersSize': -1,
			'bodySize': body_size,
		}
		if e.failure:
			response['_error'] = e.failure
		refused = _refused_cookies(e.received)
		if refused:
			response['_blockedCookies'] = refused
		timings = self._timings(e, resp)
		entry: dict[str, Any] = {
			**({'pageref': e.page} if e.page in pages else {}),
			'startedDateTime': _iso(e.wall),
			'time': round(sum(v for k, v in timings.items() if v > 0 and k != 'ssl'), 3),
			'request': request,
			'response': response,
			'cache': {},
			'timings': timings,
			'_resourceType': e.type,
		}
		ip = resp.get('remoteIPAddress')
		if ip:
			entry['serverIPAddress'] = str(ip).strip('[]')
		if e.comment or not e.done:
			entry['comment'] = e.comment or 'still loading when the HAR was written'
		return entry

	@staticmethod
	def _timings(e: _Entry, resp: dict[str, Any]) -> dict[str, float]:
		total = max(0.0, ((e.ended or e.started) - e.started) * 1000) if e.started else 0.0
		t = resp.get('timing')
		if not isinstance(t, dict) or not isinstance(t.get('requestTime'), int | float):
			return {'blocked': -1, 'dns': -1, 'connect': -1, 'ssl': -1, 'send': 0, 'wait': round(total, 3), 'receive': 0}

		def span(start: str, end: str) -> float:
			a, b = t.get(start, -1), t.get(end, -1)
			return round(b - a, 3) if isinstance(a, int | float) and a >= 0 and isinstance(b, int | float) and b >= a else -1

		first = next(
			(t[k] for k in ('dnsStart', 'connectStart', 'sendStart') if isinstance(t.get(k), int | float) and t[k] >= 0), 0
		)
		offset = (t['requestTime'] - e.started) * 1000 if e.started else 0.0  # queueing before the timing's origin
		send = max(0.0, span('sendStart', 'sendEnd'))
		wait = max(0.0, float(t.get('receiveHeadersEnd', 0) or 0) - float(t.get('sendEnd', 0) or 0))
		headers_end = offset + float(t.get('receiveHeadersEnd', 0) or 0)
		receive = max(0.0, total - headers_end) if e.ended else 0.0
		return {
			'blocked': round(max(0.0, offset + first), 3),
			'dns': span('dnsStart', 'dnsEnd'),
			'connect': span('connectStart', 'connectEnd'),
			'ssl': span('sslStart', 'sslEnd'),
			'send': round(send, 3),
			'wait': round(wait, 3),
			'receive': round(receive, 3),
		}


def decode_body(content: dict[str, Any]) -> bytes:
	"""A HAR entry's body as bytes (tests and tools)."""
	text = content.get('text', '')
	return base64.b64decode(text) if content.get('encoding') == 'base64' else text.encode('utf-8')
