"""The dashboard's web side: who is asking, what they may see and do, and the routes.

A principal is found as the MCP endpoint finds it, from a bearer token (an ``Authorization``
header), or from a dashboard login: the sign-in form (a POST, never a ``?token=`` in a link,
which another site could use to sign a person in as the attacker) trades a token for a random
login id in an HttpOnly, SameSite=Strict cookie, so the token itself is kept in no cookie, page
or log line. The form carries a CSRF token of its own (double-submitted: a cookie and a field),
and each login has its own CSRF token, embedded in the page and required (with a same-origin
``Origin``) on every POST. A session of another principal is a 404, like one that does not
exist. Without tokens (stdio, or HTTP on loopback without ``--auth-token``) there is one
principal, as in the tools. No request body is read beyond a few KiB.
"""

from __future__ import annotations

import asyncio
import hmac
import html
import json
import logging
import re
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from starlette.responses import JSONResponse as _JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from browser_use_mcp.dashboard.live import BadInput, Frames, TakeoverRefused, release, send_input, take_over, takeover_of
from browser_use_mcp.sessions import LOCAL_PRINCIPAL, SessionRegistry, SessionState
from browser_use_mcp.texts import clean, dumps
from browser_use_mcp.tools.admin import describe, focused_target

logger = logging.getLogger('browser_use_mcp.dashboard')


class JSONResponse(_JSONResponse):
	"""JSON whose page-controlled strings (titles, URLs) may hold lone surrogates (texts.py): they are
	sent as U+FFFD rather than failing the whole answer, which one tenant's page could otherwise do to
	the dashboard of every session."""

	def render(self, content: Any) -> bytes:
		return dumps(content, allow_nan=False, indent=None, separators=(',', ':')).encode()


PREFIX = '/dashboard'
COOKIE = 'bumcp_dashboard'
SIGN_IN_COOKIE = 'bumcp_sign_in'  # the sign-in form's CSRF token, double-submitted with its field
SIGN_IN_LIFETIME = 3600
MAX_BODY = 64 * 1024  # any request body under /dashboard (BodyLimit answers 413 beyond)
LOGIN_BODY = 4096  # the sign-in form's
INPUT_BODY = 16384  # one input event's
LOGIN_LIFETIME = 12 * 3600.0
MAX_LOGINS = 1024
MAX_LOGINS_EACH = 16  # per principal: people, browsers and devices signed in at once
TOKEN_SCOPE_KEY = 'browser_use_mcp.token_in_url'  # set when a ?token= was taken out of the URL
SECRET_QUERY_KEYS = ('token', 'access_token')
STATIC = {'dashboard.js': 'text/javascript; charset=utf-8', 'dashboard.css': 'text/css; charset=utf-8'}
LOOPBACK_HOSTS = ('127.0.0.1', 'localhost', '[::1]')

SECURITY_HEADERS = {
	'Content-Security-Policy': (
		"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; "
		"frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'"
	),
	'X-Frame-Options': 'DENY',
	'X-Content-Type-Options': 'nosniff',
	'Referrer-Policy': 'same-origin',  # no-referrer would make Chromium send "Origin: null" with the sign-in form
	'Cache-Control': 'no-store',
	'Cross-Origin-Resource-Policy': 'same-origin',
}


class HideToken:
	"""ASGI wrapper: takes ``token`` (and ``access_token``) out of any URL's query before anything
	sees the request, so uvicorn's access log and our own lines never carry it. The value is
	dropped: a token in a URL signs nobody in."""

	def __init__(self, app: ASGIApp) -> None:
		self.app = app

	async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
		query = scope.get('query_string', b'') if scope['type'] in ('http', 'websocket') else b''
		if b'token' in query:
			pairs = parse_qsl(query.decode('latin-1'), keep_blank_values=True)
			kept = [(k, v) for k, v in pairs if k not in SECRET_QUERY_KEYS]
			if len(kept) != len(pairs):
				scope['query_string'] = urlencode(kept).encode('latin-1')  # in place: the server logs from this dict
				scope[TOKEN_SCOPE_KEY] = True
		await self.app(scope, receive, send)


class BodyTooLong(Exception):
	pass


async def read_body(request: Request, limit: int) -> bytes:
	"""The request's body, read no further than ``limit`` bytes (BodyTooLong beyond)."""
	declared = request.headers.get('content-length')
	if declared is not None and declared.isdigit() and int(declared) > limit:
		raise BodyTooLong
	body = bytearray()
	async for chunk in request.stream():
		body += chunk
		if len(body) > limit:
			raise BodyTooLong
	return bytes(body)


@dataclass
class Login:
	principal: str
	csrf: str
	created: float


class Dashboard:
	"""The dashboard of one server: its registry, its logins, its frames."""

	def __init__(
		self,
		registry: SessionRegistry,
		principal_for_token: Callable[[str], str | None] | None,
		*,
		loopback: bool,
		takeover_timeout: float,
	) -> None:
		"""``principal_for_token`` None: no tokens, one principal. ``loopback``: the server is
		bound to loopback only, so requests must name a loopback host (no DNS rebinding)."""
		self.registry = registry
		self._principal_for_token = principal_for_token
		self.loopback = loopback
		self.takeover_timeout = takeover_timeout
		self.frames = Frames()
		self._logins: OrderedDict[str, Login] = OrderedDict()

	# -- who is asking -----------------------------------------------------------------------

	def _token_principal(self, token: str | None) -> str | None:
		if token is None or not token.strip():
			return None
		if self._principal_for_token is None:
			return LOCAL_PRINCIPAL
		return self._principal_for_token(token.strip())

	def _login(self, request: Request) -> tuple[str, Login] | None:
		login_id = request.cookies.get(COOKIE)
		login = self._logins.get(login_id) if login_id else None
		if login is None or time.time() - login.created > LOGIN_LIFETIME:
			return None
		return login_id, login  # type: ignore[return-value]

	def _new_login(self, principal: str) -> str:
		"""A login of ``principal``; its oldest goes beyond MAX_LOGINS_EACH, so one principal
		signing in over and over cannot push the others out."""
		now = time.time()
		for stale in [k for k, v in self._logins.items() if now - v.created > LOGIN_LIFETIME]:
			del self._logins[stale]
		theirs = [k for k, v in self._logins.items() if v.principal == principal]
		for old in theirs[: max(0, len(theirs) - MAX_LOGINS_EACH + 1)]:
			del self._logins[old]
		login_id = secrets.token_urlsafe(32)
		self._logins[login_id] = Login(principal, secrets.token_urlsafe(32), now)
		while len(self._logins) > MAX_LOGINS:
			self._logins.popitem(last=False)
		return login_id

	def forget(self, principal: str) -> None:
		"""End every login of ``principal`` (its token was revoked)."""
		for login_id in [k for k, v in self._logins.items() if v.principal == principal]:
			del self._logins[login_id]

	def principal(self, request: Request) -> tuple[str | None, Login | None, str | None]:
		"""(principal, login, login id) of a request; principal None: not authenticated."""
		header = request.headers.get('authorization', '')
		if header:
			scheme, _, token = header.partition(' ')
			if scheme.lower() != 'bearer':
				return None, None, None
			return self._token_principal(token), None, None
		found = self._login(request)
		if found is not None:
			return found[1].principal, found[1], found[0]
		if self._principal_for_token is None:
			return LOCAL_PRINCIPAL, None, None
		return None, None, None

	def _host_ok(self, request: Request) -> bool:
		if not self.loopback:
			return True
		host = request.headers.get('host', '')
		name = host.rsplit(':', 1)[0] if not host.endswith(']') else host
		return name in LOOPBACK_HOSTS

	def _origin_ok(self, request: Request) -> bool:
		origin = request.headers.get('origin')
		if origin is None:
			return False
		return origin == f'{request.url.scheme}://{request.headers.get("host", "")}'

	# -- responses ---------------------------------------------------------------------------

	@staticmethod
	def _headers(response: Response) -> Response:
		for key, value in SECURITY_HEADERS.items():
			response.headers[key] = value
		return response

	def _error(self, status: int, message: str) -> Response:
		return self._headers(JSONResponse({'error': message}, status_code=status))

	def _cookie(self, response: Response, request: Request, login_id: str) -> Response:
		response.set_cookie(
			COOKIE,
			login_id,
			max_age=int(LOGIN_LIFETIME),
			path=PREFIX,
			httponly=True,
			samesite='strict',
			secure=request.url.scheme == 'https',
		)
		return response

	# -- routes ------------------------------------------------------------------------------

	def routes(self) -> list[Route]:
		return [
			Route(PREFIX, self.page, methods=['GET']),
			Route(PREFIX + '/', self.page, methods=['GET']),
			Route(PREFIX + '/login', self.login, methods=['POST']),
			Route(PREFIX + '/logout', self.guard(self.logout, csrf=True), methods=['POST']),
			Route(PREFIX + '/static/{name}', self.static, methods=['GET']),
			Route(PREFIX + '/api/sessions', self.guard(self.list_sessions), methods=['GET']),
			Route(PREFIX + '/api/sessions/{sid:path}/frame.jpg', self.guard(self.frame, session=True), methods=['GET']),
			Route(PREFIX + '/api/sessions/{sid:path}/close', self.guard(self.close, session=True, csrf=True), methods=['POST']),
			Route(
				PREFIX + '/api/sessions/{sid:path}/takeover', self.guard(self.takeover, session=True, csrf=True), methods=['POST']
			),
			Route(
				PREFIX + '/api/sessions/{sid:path}/release', self.guard(self.release, session=True, csrf=True), methods=['POST']
			),
			Route(PREFIX + '/api/sessions/{sid:path}/input', self.guard(self.input, session=True, csrf=True), methods=['POST']),
			# a session's flight recording (docs/recording.md): open or closed, the principal's own
			Route(PREFIX + '/recordings/{sid:path}', self.guard(self.replay), methods=['GET']),
			Route(PREFIX + '/api/recordings/{sid:path}/shot-{seq:int}.jpg', self.guard(self.replay_shot), methods=['GET']),
			Route(PREFIX + '/api/recordings/{sid:path}/video.webm', self.guard(self.replay_video), methods=['GET']),
			Route(PREFIX + '/api/recordings/{sid:path}/recording.har', self.guard(self.replay_har), methods=['GET']),
			Route(PREFIX + '/api/recordings/{sid:path}/recording.zip', self.guard(self.replay_zip), methods=['GET']),
		]

	def guard(self, handler: Callable[..., Awaitable[Response]], *, session: bool = False, csrf: bool = False) -> Any:
		"""Authenticate, check host, Origin and CSRF for a POST, and find the session: 401, 403
		or 404 before the handler runs."""

		async def endpoint(request: Request) -> Response:
			if not self._host_ok(request):
				return self._error(421, 'This dashboard answers only to a loopback host name.')
			principal, login, login_id = self.principal(request)
			if principal is None:
				return self._error(401, 'Not signed in: open /dashboard and sign in with your bearer token.')
			if csrf and login is not None:  # a cookie login: the browser sends it by itself, so prove the page sent this
				sent = request.headers.get('x-csrf-token', '')
				if not self._origin_ok(request) or not hmac.compare_digest(sent.encode(), login.csrf.encode()):
					return self._error(
						403, "Refused: the request lacks the dashboard page's CSRF token or comes from another origin."
					)
			elif csrf and request.headers.get('authorization') is None:
				return self._error(403, 'Refused: sign in on the dashboard page first (POSTs need its CSRF token).')
			args: dict[str, Any] = {'principal': principal, 'login_id': login_id}
			if session:
				state = self._session(principal, request.path_params['sid'])
				if state is None:
					return self._error(404, 'No such session.')
				args['state'] = state
			return self._headers(await handler(request, **args))

		return endpoint

	def _session(self, principal: str, session_id: str) -> SessionState | None:
		return next((s for s in self.registry.sessions(principal) if s.session_id == session_id), None)

	async def page(self, request: Request) -> Response:
		if not self._host_ok(request):
			return self._error(421, 'This dashboard answers only to a loopback host name.')
		principal, login, login_id = self.principal(request)
		if principal is None:
			note = (
				'A token in the address does not sign you in (another site could sign you in as someone else that '
				'way): paste it here instead.'
				if request.scope.get(TOKEN_SCOPE_KEY)
				else None
			)
			return self._headers(self._login_page(request, note, status=401))
		if login is None:  # a bearer header, or a server without tokens: the page needs a login for its CSRF token
			login_id = self._new_login(principal)
			login = self._logins[login_id]
			response = self._cookie(self._html(self._main_page(login)), request, login_id)
			return self._headers(response)
		return self._headers(self._html(self._main_page(login)))

	async def login(self, request: Request) -> Response:
		if not self._host_ok(request):
			return self._error(421, 'This dashboard answers only to a loopback host name.')
		if not self._origin_ok(request):
			return self._error(403, 'Refused: the sign-in form was sent from another origin.')
		try:
			body = (await read_body(request, LOGIN_BODY)).decode('utf-8', 'replace')
		except BodyTooLong:
			return self._error(413, 'The sign-in form is larger than a sign-in form can be.')
		form = dict(parse_qsl(body))
		expected = request.cookies.get(SIGN_IN_COOKIE, '')
		sent = form.get('csrf', '')
		if not expected or not hmac.compare_digest(sent.encode(), expected.encode()):
			return self._error(
				403, "Refused: the sign-in lacks the sign-in form's CSRF token; open /dashboard and sign in there."
			)
		principal = self._token_principal(form.get('token'))
		if principal is None:
			return self._headers(self._login_page(request, 'That token is not valid here.', status=401))
		login_id = self._new_login(principal)
		response = self._cookie(RedirectResponse(PREFIX, status_code=303), request, login_id)
		response.delete_cookie(SIGN_IN_COOKIE, path=PREFIX)
		return self._headers(response)

	async def logout(self, request: Request, principal: str, login_id: str | None) -> Response:
		if login_id is not None:
			self._logins.pop(login_id, None)
		response = JSONResponse({'signed_out': True})
		response.delete_cookie(COOKIE, path=PREFIX)
		return response

	async def static(self, request: Request) -> Response:
		name = request.path_params['name']
		if name not in STATIC:
			return self._error(404, 'Not found.')
		data = resources.files('browser_use_mcp.dashboard').joinpath('static', name).read_bytes()
		return self._headers(Response(data, media_type=STATIC[name]))

	async def list_sessions(self, request: Request, principal: str, login_id: str | None) -> Response:
		now = time.time()
		states = sorted(self.registry.sessions(principal), key=lambda s: s.created_at)
		live = {id(s.recording) for s in states if s.recording is not None}
		recordings = await self.registry.started_recordings()
		closed = [] if recordings is None else [r for r in recordings.of(principal) if id(r) not in live]
		return JSONResponse(
			{
				'now': now,
				'takeover_timeout': self.takeover_timeout,
				'sessions': [self._card(s, now, login_id) for s in states],
				# closed sessions whose recording is still kept (--recordings-ttl): a link to each replay
				'recorded': [
					{
						'session_id': r.session_id,
						'closed': r.closed_at,
						'kinds': list(r.kinds),
						'size_bytes': r.size,
						'replay': _replay_href(r.session_id),
					}
					for r in sorted(closed, key=lambda r: r.closed_at or 0, reverse=True)
				],
			}
		)

	def _card(self, state: SessionState, now: float, login_id: str | None) -> dict[str, Any]:
		info = describe(state, now).dump()
		current = state.log.current
		held = state.takeover
		info.update(
			title=self.frames.title(state) or _title(state),
			running=None
			if current is None
			else {'tool': current.tool, 'args': current.args, 'elapsed': round(now - current.started, 1)},
			takeover=None
			if held is None
			else {
				'mine': login_id is not None and held.login == login_id,
				'holding': held.holding,
				'remaining': round(held.remaining()),
			},
			calls=[r.as_json() for r in reversed(state.log.recent)],
			replay=_replay_href(state.session_id) if state.recording is not None else None,
		)
		return info

	async def _recording(self, principal: str, session_id: str) -> Any:
		from browser_use_mcp.recorder import RecordingExpired

		try:
			recordings = await self.registry.started_recordings()
			return recordings.get(principal, session_id) if recordings is not None else None
		except RecordingExpired:
			return None

	async def replay(self, request: Request, principal: str, login_id: str | None) -> Response:
		from browser_use_mcp.dashboard import replay

		recording = await self._fresh(principal, request.path_params['sid'])
		if recording is None:  # another principal's, expired, or none: all alike
			return self._error(404, 'No such recording.')
		return HTMLResponse(clean(await asyncio.to_thread(replay.render, recording)))

	async def _fresh(self, principal: str, session_id: str) -> Any:
		"""The principal's recording with its files up to date (the live session's HAR and console and
		network rows written out), or None."""
		recording = await self._recording(principal, session_id)
		if recording is not None:
			await recording.settle()
			live = next((s for s in self.registry.sessions(principal) if s.recording is recording), None)
			if live is not None:
				await recording.snapshot(live)
		return recording

	async def replay_video(self, request: Request, principal: str, login_id: str | None) -> Response:
		from browser_use_mcp.dashboard import replay

		recording = await self._recording(principal, request.path_params['sid'])
		path = None if recording is None else replay.video_path(recording)
		if path is None:
			return self._error(404, 'No such video (a video can be played once its session is closed).')
		return FileResponse(path, media_type='video/webm')

	async def replay_har(self, request: Request, principal: str, login_id: str | None) -> Response:
		from browser_use_mcp.recorder import HAR_FILE

		recording = await self._fresh(principal, request.path_params['sid'])
		path = None if recording is None or recording.har is None else recording.path / HAR_FILE
		if path is None or not path.is_file():
			return self._error(404, 'No such HAR file.')
		return FileResponse(path, media_type='application/json', filename=f'{_file_stem(recording.session_id)}.har')

	async def replay_zip(self, request: Request, principal: str, login_id: str | None) -> Response:
		from browser_use_mcp.dashboard import replay

		recording = await self._fresh(principal, request.path_params['sid'])
		if recording is None:
			return self._error(404, 'No such recording.')
		path = await asyncio.to_thread(replay.zip_file, recording)
		return FileResponse(
			path,
			media_type='application/zip',
			filename=f'{_file_stem(recording.session_id)}-recording.zip',
			background=BackgroundTask(path.unlink, missing_ok=True),
		)

	async def replay_shot(self, request: Request, principal: str, login_id: str | None) -> Response:
		from browser_use_mcp.dashboard import replay

		recording = await self._recording(principal, request.path_params['sid'])
		path = None if recording is None else replay.shot_path(recording, request.path_params['seq'])
		if path is None:
			return self._error(404, 'No such screenshot.')
		return Response(await asyncio.to_thread(path.read_bytes), media_type='image/jpeg')

	async def frame(self, request: Request, principal: str, login_id: str | None, state: SessionState) -> Response:
		size = request.query_params.get('size', 'thumb')
		if size not in ('thumb', 'large'):
			return self._error(400, 'size must be thumb or large.')
		frame = await self.frames.get(state, size)
		if frame is None:
			return self._error(503, 'No frame yet: the page is loading. Try again shortly.')
		return Response(frame.jpeg, media_type='image/jpeg', headers={'X-Viewport': f'{frame.width}x{frame.height}'})

	async def close(self, request: Request, principal: str, login_id: str | None, state: SessionState) -> Response:
		closed = await self.registry.close(principal, state.session_id, 'closed from the dashboard')
		return JSONResponse({'closed': closed})

	async def takeover(self, request: Request, principal: str, login_id: str | None, state: SessionState) -> Response:
		if login_id is None:
			return self._error(403, 'Taking over needs a dashboard login (open /dashboard in a browser).')
		try:
			held = await take_over(state, login_id, self.takeover_timeout)
		except TakeoverRefused as exc:
			return self._error(409, str(exc))
		return JSONResponse({'takeover': True, 'timeout': held.timeout})

	async def release(self, request: Request, principal: str, login_id: str | None, state: SessionState) -> Response:
		held = takeover_of(state)
		if held is None:
			return JSONResponse({'released': False})
		if held.login != login_id:
			return self._error(409, 'Someone else has taken over this session; only they can release it.')
		await release(state, held)
		return JSONResponse({'released': True})

	async def input(self, request: Request, principal: str, login_id: str | None, state: SessionState) -> Response:
		held = takeover_of(state)
		if held is None or held.login != login_id or not held.holding:
			return self._error(409, 'Take over the session first: input is forwarded only during your takeover.')
		try:
			event = json.loads(await read_body(request, INPUT_BODY) or b'null')
			if not isinstance(event, dict):
				raise BadInput('The body must be a JSON object such as {"kind": "click", "x": 0.5, "y": 0.5}.')
			held.touch()
			async with held.inputs:
				await send_input(state, event)
		except (BadInput, json.JSONDecodeError) as exc:
			return self._error(400, str(exc))
		except BodyTooLong:
			return self._error(413, f'An input event is at most {INPUT_BODY} bytes.')
		except Exception as exc:  # the page between documents, say: the person tries again
			logger.info('input to session %r failed: %r', state.session_id, exc)
			return self._error(502, 'The page did not take the input (it may be loading); try again.')
		return JSONResponse({'ok': True})

	# -- pages -------------------------------------------------------------------------------

	@staticmethod
	def _html(body: str, status: int = 200) -> Response:
		return Response(body, status_code=status, media_type='text/html; charset=utf-8')

	def _login_page(self, request: Request, problem: str | None, status: int) -> Response:
		note = f'<p class="problem" role="alert">{html.escape(problem)}</p>' if problem else ''
		csrf = secrets.token_urlsafe(32)
		body = (
			'<main class="login"><h1>browser-use-mcp dashboard</h1>'
			'<p>Sign in with the bearer token your MCP client uses. The token is not stored in the browser: '
			'you get a sign-in cookie instead.</p>'
			f'{note}<form method="post" action="{PREFIX}/login"><label for="token">Token</label> '
			f'<input type="hidden" name="csrf" value="{csrf}"> '
			'<input id="token" name="token" type="password" autocomplete="current-password" required autofocus> '
			'<button type="submit">Sign in</button></form></main>'
		)
		response = self._html(_document('Sign in', body), status)
		response.set_cookie(
			SIGN_IN_COOKIE,
			csrf,
			max_age=SIGN_IN_LIFETIME,
			path=PREFIX,
			httponly=True,
			samesite='strict',
			secure=request.url.scheme == 'https',
		)
		return response

	def _main_page(self, login: Login) -> str:
		body = (
			'<header class="top"><h1>browser-use-mcp</h1><p id="summary" aria-live="polite">Loading…</p>'
			'<button type="button" id="logout">Sign out</button></header>'
			'<main><ul id="cards" class="cards" aria-label="Sessions"></ul>'
			'<p id="empty" class="empty" hidden>No sessions yet. They appear here as soon as an agent opens one.</p>'
			'<section id="recorded" class="recorded" hidden aria-labelledby="recorded-title">'
			'<h2 id="recorded-title">Closed sessions with a recording</h2><ul id="recorded-list"></ul></section></main>'
			'<div id="viewer" class="viewer" hidden role="dialog" aria-modal="true" aria-labelledby="viewer-title">'
			'<div class="viewer-bar"><h2 id="viewer-title"></h2><span id="viewer-url" class="url"></span>'
			'<span id="viewer-status" class="status" aria-live="polite"></span>'
			'<button type="button" id="takeover">Take over</button>'
			'<button type="button" id="release" hidden>Release</button>'
			'<button type="button" id="viewer-close">Back to all sessions</button></div>'
			'<div id="screen" class="screen" tabindex="0" aria-label="Live view of the page"><img id="live" alt="Live view"></div>'
			'</div>'
		)
		return _document('Sessions', body, csrf=login.csrf, script=True)


def _replay_href(session_id: str) -> str:
	return f'{PREFIX}/recordings/{quote(session_id, safe="")}'


def _file_stem(session_id: str) -> str:
	"""A session id as a download's file name: letters, digits, - and _ only."""
	return re.sub(r'[^A-Za-z0-9_-]', '_', session_id)[:80] or 'session'


def _title(state: SessionState) -> str | None:
	"""The focused tab's title from browser-use's bookkeeping (no browser round trip)."""
	try:
		return getattr(focused_target(state), 'title', None) or None
	except Exception:  # a card without a title rather than no card
		return None


def _document(title: str, body: str, *, csrf: str | None = None, script: bool = False) -> str:
	meta = f'<meta name="csrf-token" content="{html.escape(csrf)}">' if csrf else ''
	js = f'<script src="{PREFIX}/static/dashboard.js" defer></script>' if script else ''
	return (
		'<!doctype html><html lang="en"><head><meta charset="utf-8">'
		'<meta name="viewport" content="width=device-width, initial-scale=1">'
		f'<title>{html.escape(title)} · browser-use-mcp</title>{meta}'
		f'<link rel="stylesheet" href="{PREFIX}/static/dashboard.css">{js}</head><body>{body}</body></html>'
	)
