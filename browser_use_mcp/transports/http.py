"""HTTP transports: one server, many MCP hosts, each principal with its own sessions.

The MCP SDK does the protocol work (``StreamableHTTPSessionManager`` serves both the
handshake-era protocol and the stateless 2026-07-28 one at /mcp; ``SseServerTransport``
serves the legacy HTTP+SSE transport at /sse and /messages/ for clients that speak nothing
else, such as the 1.x Python SDK); this module adds what a shared server needs around it:
bearer tokens that map to principals, a refusal to expose an unauthenticated server beyond
loopback, limits that keep a client without a token from taking it down (guard.py), and the
same shutdown as stdio. Browser sessions belong to the registry, not to
the HTTP connection or the transport, so a client that reconnects with a ``session_id`` finds
it as it left it, over either transport.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import logging
import socket
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any, Self

import anyio
from mcp.server import Server
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import AccessToken
from mcp.server.context import ServerRequestContext
from mcp.server.sse import SseServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, TransportSecuritySettings
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse, RequestId
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from browser_use_mcp.catalog import Catalog
from browser_use_mcp.config import ServerConfig
from browser_use_mcp.dashboard.app import MAX_BODY as DASHBOARD_MAX_BODY
from browser_use_mcp.dashboard.app import Dashboard, HideToken
from browser_use_mcp.guard import (
	FD_RESERVE,
	BodyLimit,
	ConnectionGuard,
	Throttled,
	TransportSessions,
	guarded_protocol,
	is_loopback,
	quiet_accept_errors,
	quiet_uvicorn,
	raise_fd_limit,
)
from browser_use_mcp.logs import announce, hide
from browser_use_mcp.metrics import Metrics, guarded, needs_token
from browser_use_mcp.oauth import IssuerUnavailable, JwtBackend, JwtVerifier, OAuthSettings, RequireBearer, metadata_routes
from browser_use_mcp.server import PrincipalOf, build_server
from browser_use_mcp.sessions import LOCAL_PRINCIPAL, SessionRegistry
from browser_use_mcp.tasks import held
from browser_use_mcp.telemetry import Telemetry
from browser_use_mcp.transports import run_until_stopped

logger = logging.getLogger('browser_use_mcp.http')

MCP_PATH = '/mcp'
# The legacy HTTP+SSE transport (protocol 2024-11-05), for clients that speak nothing newer:
# GET SSE_PATH opens the stream, whose first event names MESSAGES_PATH?session_id=... to POST to.
SSE_PATH = '/sse'
DASHBOARD_PATH = '/dashboard'
MESSAGES_PATH = '/messages/'
# A token shorter than this can be guessed by anyone who can reach the port.
MIN_TOKEN_LENGTH = 16
# After the browsers are closed, how long uvicorn may take to end open streams.
HTTP_SHUTDOWN_GRACE = 2.0
# At shutdown, how long legacy SSE streams stay open for answers to requests still in flight.
SSE_DRAIN = 1.0


def principal_for_token(token: str) -> str:
	"""The principal a bearer token stands for: a digest, so logs, state-dir names and
	memory dumps never carry the token itself, yet an operator can map one to the other
	(``printf %s TOKEN | sha256sum``, first 16 hex digits)."""
	return 'token-' + hashlib.sha256(token.encode('utf-8', 'surrogatepass')).hexdigest()[:16]


def check_exposure(config: ServerConfig) -> None:
	"""Refuse to serve browsers without authentication to anyone beyond this machine.

	An unauthenticated server hands out real browsers (and, for the default session, the
	user's persistent profile) to whoever can connect, so exposing one must be a decision.
	"""
	if config.auth_tokens or config.auth == 'oauth' or config.allow_unauthenticated or is_loopback(config.host):
		return
	raise SystemExit(
		f'Refusing to serve HTTP on {config.host} without authentication: anyone who can reach that address could '
		'drive the browsers. Give each client a token with --auth-token TOKEN (repeatable; or '
		'BROWSER_USE_MCP_AUTH_TOKENS=t1,t2), bind to 127.0.0.1, or pass --allow-unauthenticated if the network '
		'is trusted.'
	)


def check_tokens(config: ServerConfig) -> None:
	"""An empty token would admit a bare ``Authorization: Bearer``; refuse to start with one."""
	try:
		check_tokens_of(config.auth_tokens)
	except ValueError as exc:
		raise SystemExit(str(exc)) from None


def check_tokens_of(tokens: Iterable[str]) -> None:
	if any(not t.strip() for t in tokens):
		raise ValueError(
			'An auth token is empty. Give each client a long random token, e.g. '
			'python -c "import secrets; print(secrets.token_urlsafe(32))".'
		)


def with_token_file(config: ServerConfig) -> ServerConfig:
	"""The config with the token file's tokens added to the others; a bad file is a start-up error."""
	if config.auth_token_file is None:
		return config
	try:
		tokens = read_token_file(config.auth_token_file)
	except ValueError as exc:
		raise SystemExit(f'--auth-token-file: {exc}') from None
	return dataclasses.replace(config, auth_tokens=tuple(dict.fromkeys(config.auth_tokens + tokens)))


class TokenPrincipals:
	"""Maps a presented bearer token to its principal (the SDK's ``TokenVerifier`` protocol).

	Tokens are kept only as digests; a lookup hashes the presented token first, so its
	timing depends on the digest, not on how much of a real token was guessed.
	"""

	def __init__(self, tokens: Iterable[str]) -> None:
		self.replace(tokens)

	def replace(self, tokens: Iterable[str]) -> set[str]:
		"""Accept exactly these tokens from now on; the principals no longer accepted."""
		before = set(getattr(self, '_by_digest', {}).values())
		clean = [t.strip() for t in tokens]
		# one assignment: a lookup sees the old set or the new one, never half of each
		self._by_digest = {hashlib.sha256(t.encode('utf-8', 'surrogatepass')).digest(): principal_for_token(t) for t in clean}
		return before - set(self._by_digest.values())

	@property
	def principals(self) -> set[str]:
		return set(self._by_digest.values())

	def __len__(self) -> int:
		return len(self._by_digest)

	def principal(self, token: str) -> str | None:
		return self._by_digest.get(hashlib.sha256(token.encode('utf-8', 'surrogatepass')).digest())

	async def verify_token(self, token: str) -> AccessToken | None:
		principal = self.principal(token.strip())
		if principal is None:
			return None
		# The principal stands in for the token, so nothing downstream holds the secret.
		return AccessToken(token=principal, client_id=principal, scopes=[])


def read_token_file(path: Path) -> tuple[str, ...]:
	"""The tokens of a token file: one a line, blank lines and ``#`` comments ignored.

	Raises ValueError saying what is wrong: unreadable, not UTF-8, no token at all, or a line
	that is not one token (whitespace inside: two tokens on a line, or a stray word).
	"""
	try:
		text = path.read_text(encoding='utf-8')
	except FileNotFoundError:
		raise ValueError(f'{path} does not exist') from None
	except UnicodeDecodeError:
		raise ValueError(f'{path} is not UTF-8 text') from None
	except OSError as exc:
		raise ValueError(f'{path} cannot be read: {exc.strerror or exc}') from None
	tokens = []
	for number, raw in enumerate(text.splitlines(), 1):
		line = raw.strip()
		if not line or line.startswith('#'):
			continue
		if any(c.isspace() or not c.isprintable() for c in line):
			raise ValueError(f'{path} line {number} is not one token (it has whitespace or control characters inside)')
		tokens.append(line)
	if not tokens:
		raise ValueError(f'{path} has no token (an empty file would lock every client out)')
	return tuple(dict.fromkeys(tokens))


def file_identity(path: Path) -> tuple[int, int, int, int] | None:
	"""What changes when a file is rewritten, in place or by rename: mtime, size, inode, ctime."""
	try:
		st = path.stat()
	except OSError:
		return None
	return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns)


class TokenReloader:
	"""Re-reads --auth-token-file on SIGHUP and when it changes (polled every ``interval`` s).

	The tokens given by --auth-token / BROWSER_USE_MCP_AUTH_TOKENS stay; the file's are replaced
	whole. A principal whose token is gone gets 401 from its next request, its sessions are
	closed (its saved storage states stay, under its principal) and its dashboard logins end.
	A file that cannot be read or parsed changes nothing: the tokens in use stay, and the log says why.
	"""

	def __init__(
		self,
		path: Path,
		fixed: tuple[str, ...],
		verifier: TokenPrincipals,
		registry: SessionRegistry,
		dashboard: Dashboard | None,
		interval: float = 1.0,
	) -> None:
		self.path = path
		self.fixed = fixed
		self.verifier = verifier
		self.registry = registry
		self.dashboard = dashboard
		self.interval = interval
		self._seen = file_identity(path)
		self._lock = asyncio.Lock()
		self._tasks: set[asyncio.Task[Any]] = set()
		self._start_principals = verifier.principals

	def hangup(self) -> None:
		"""The SIGHUP handler: reload now (in a task; signal handlers cannot await)."""
		held(asyncio.get_running_loop().create_task(self.reload('SIGHUP'), name='reload-tokens'), self._tasks)

	async def watch(self) -> None:
		while True:
			await asyncio.sleep(self.interval)
			seen = file_identity(self.path)
			if seen != self._seen:
				await self.reload('the file changed')

	async def reload(self, why: str) -> None:
		async with self._lock:
			self._seen = file_identity(self.path)
			try:
				tokens = read_token_file(self.path)
				check_tokens_of(tokens)
			except ValueError as exc:
				logger.warning('token file not reloaded (%s), keeping the %d token(s) in use: %s', why, len(self.verifier), exc)
				return
			hide(*tokens)
			every = tuple(dict.fromkeys(self.fixed + tokens))
			removed = self.verifier.replace(every)
			self.registry.revoked = (self.registry.revoked | removed) - self.verifier.principals
			# the persistent profile went to a lone principal's default session: once another principal
			# is (or was) let in, no default session gets it again
			if not self.verifier.principals <= self._start_principals:
				self.registry.single_principal = False
			short = sum(1 for t in every if len(t) < MIN_TOKEN_LENGTH)
			if short:
				logger.warning('%d auth token(s) are shorter than %d characters and could be guessed', short, MIN_TOKEN_LENGTH)
			closed = 0
			for principal in removed:
				if self.dashboard is not None:
					self.dashboard.forget(principal)
				closed += await self.registry.close_all(principal, reason='its token was removed from the token file')
			logger.warning(
				'token file reloaded (%s): %d token(s) in use, %d principal(s) removed, %d of their session(s) closed',
				why,
				len(self.verifier),
				len(removed),
				closed,
			)

	async def close(self) -> None:
		for task in list(self._tasks):
			task.cancel()
		await asyncio.gather(*self._tasks, return_exceptions=True)


def principal_from_request(ctx: ServerRequestContext[Any, Any]) -> str:
	"""The principal of an authenticated HTTP request; fails closed if there is none.

	The SDK hands every message the Starlette request that carried it (legacy and 2026-07-28
	alike), and the auth middleware has put the verified user on its scope.
	"""
	request = ctx.request
	user = getattr(request, 'scope', {}).get('user') if request is not None else None
	if isinstance(user, AuthenticatedUser):
		return user.access_token.client_id
	raise PermissionError('request reached a tool without an authenticated principal')


def scope_principal(scope: Scope) -> str:
	"""The principal of an HTTP request's scope (the one principal when there are no tokens)."""
	user = scope.get('user')
	return user.access_token.client_id if isinstance(user, AuthenticatedUser) else LOCAL_PRINCIPAL


def transport_security(host: str) -> TransportSecuritySettings | None:
	"""DNS-rebinding protection for a loopback bind, as the SDK's own app sets it up: a web page
	must not reach a local server through a hostile DNS name."""
	if not is_loopback(host):
		return None
	return TransportSecuritySettings(
		enable_dns_rebinding_protection=True,
		allowed_hosts=['127.0.0.1:*', 'localhost:*', '[::1]:*'],
		allowed_origins=['http://127.0.0.1:*', 'http://localhost:*', 'http://[::1]:*'],
	)


class _Asgi:
	"""An ASGI callable as Starlette routes it: a bound method would be taken for a request handler."""

	def __init__(self, app: ASGIApp) -> None:
		self.app = app

	async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
		await self.app(scope, receive, send)


class _SseStream:
	"""One open legacy SSE stream: how to end it, and its client's requests not yet answered."""

	def __init__(self) -> None:
		self.cancel = anyio.CancelScope()
		self.pending: set[RequestId] = set()


class _Tracking:
	"""A stream of the server loop wrapped to keep ``pending`` (request ids not yet answered) up to date."""

	def __init__(self, inner: Any, pending: set[RequestId]) -> None:
		self._inner = inner
		self._pending = pending

	async def aclose(self) -> None:
		await self._inner.aclose()

	async def __aenter__(self) -> Self:
		return self

	async def __aexit__(self, *_exc: object) -> None:
		await self.aclose()


class _Inbound(_Tracking):
	"""The server loop's read stream (the SDK's ``ReadStream`` protocol), noting each request."""

	@property
	def last_context(self) -> Any:
		# the SDK runs each message in the context of the POST that carried it
		return getattr(self._inner, 'last_context', None)

	def _note(self, item: Any) -> Any:
		message = item.message if isinstance(item, SessionMessage) else None
		if isinstance(message, JSONRPCRequest):
			self._pending.add(message.id)
		elif isinstance(message, JSONRPCNotification) and message.method == 'notifications/cancelled':
			cancelled = (message.params or {}).get('requestId')
			if isinstance(cancelled, int | str):  # a cancelled request gets no answer
				self._pending.discard(cancelled)
		return item

	async def receive(self) -> Any:
		return self._note(await self._inner.receive())

	def __aiter__(self) -> _Inbound:
		return self

	async def __anext__(self) -> Any:
		return self._note(await self._inner.__anext__())


class _Outbound(_Tracking):
	"""The server loop's write stream (``WriteStream``), crossing off each request answered."""

	async def send(self, item: SessionMessage, /) -> None:
		await self._inner.send(item)
		if isinstance(item.message, JSONRPCResponse | JSONRPCError) and item.message.id is not None:
			self._pending.discard(item.message.id)


class LegacySse:
	"""The legacy HTTP+SSE transport, served by the same ``Server`` as /mcp.

	The SDK's ``SseServerTransport`` does the protocol, checks Host/Origin, and binds each SSE
	session to the principal that opened it (a POST from another principal gets the 404 of an
	unknown session). What it lacks is an end: a stream lasts as long as its client keeps it
	open, so ``close`` ends them all at shutdown, once requests in flight have their answers.
	"""

	def __init__(
		self, server: Server[Any], security: TransportSecuritySettings | None, max_body: int = DEFAULT_MAX_REQUEST_BODY_SIZE
	) -> None:
		self._server = server
		self.transport = SseServerTransport(MESSAGES_PATH, security_settings=security, max_request_body_size=max_body)
		self._streams: set[_SseStream] = set()
		self._closing = False

	async def stream(self, scope: Scope, receive: Receive, send: Send) -> None:
		"""ASGI app for GET SSE_PATH: one MCP connection for as long as the stream is open."""
		if scope['method'] != 'GET':
			await Response(status_code=405, headers={'Allow': 'GET'})(scope, receive, send)
			return
		stream = _SseStream()
		async with contextlib.AsyncExitStack() as stack:
			try:
				read, write = await stack.enter_async_context(self.transport.connect_sse(scope, receive, send))
			except ValueError:  # refused by the Host/Origin check, which has sent the answer
				return
			self._streams.add(stream)
			try:
				with stream.cancel:
					if self._closing:
						stream.cancel.cancel()
					server = self._server
					options = server.create_initialization_options()
					await server.run(_Inbound(read, stream.pending), _Outbound(write, stream.pending), options)
			finally:
				self._streams.discard(stream)
				# The event stream ends once the server's side is closed (a cancel can come
				# before the server loop took ownership of it).
				await write.aclose()

	async def close(self, drain: float) -> None:
		"""End every open stream, letting requests in flight be answered for up to ``drain`` s."""
		self._closing = True
		loop = asyncio.get_running_loop()
		deadline = loop.time() + drain
		while any(s.pending for s in self._streams) and loop.time() < deadline:
			await asyncio.sleep(0.02)
		for stream in list(self._streams):
			stream.cancel.cancel()


Verifier = TokenPrincipals | JwtVerifier


def oauth_settings(config: ServerConfig) -> OAuthSettings:
	assert config.oauth_issuer is not None and config.oauth_audience is not None  # validate() saw to it
	return OAuthSettings(
		issuer=config.oauth_issuer,
		audience=config.oauth_audience,
		required_scopes=config.oauth_required_scopes,
		principal_claim=config.oauth_principal_claim.strip(),
		resource_url=config.oauth_resource_url,
		min_refresh=config.oauth_jwks_min_refresh,
	)


async def start_oauth(config: ServerConfig) -> JwtVerifier:
	"""The JWT verifier with the issuer's keys loaded; an issuer that does not answer is a start-up error."""
	verifier = JwtVerifier(oauth_settings(config))
	try:
		await verifier.discover()
	except IssuerUnavailable as exc:
		await verifier.close()
		raise SystemExit(
			f'--auth oauth: cannot load the keys of the issuer {config.oauth_issuer}: {exc}. Check --issuer (the URL the '
			'provider names as its issuer) and that this machine can reach it.'
		) from None
	return verifier


def metrics_routes(metrics: Metrics, config: ServerConfig, verifier: Verifier | None) -> list[Route]:
	"""/healthz, /readyz, /metrics: without a token on a loopback bind or with --metrics-public,
	else behind the same tokens as /mcp (any token sees the whole server's figures)."""
	principal_of = verifier.principal if verifier is not None else None
	if not needs_token(config.host, verifier is not None, config.metrics_public):
		principal_of = None
	return metrics.routes(lambda handler: guarded(handler, loopback=is_loopback(config.host), principal_of=principal_of))


def build_app(
	server: Server[Any],
	config: ServerConfig,
	verifier: Verifier | None,
	dashboard: Dashboard | None = None,
	metrics: Metrics | None = None,
) -> Starlette:
	"""The ASGI app: the SDK's Streamable HTTP endpoint at /mcp and its legacy HTTP+SSE one at
	/sse and /messages/, one ``Server`` behind both, behind bearer auth if configured; the
	dashboard at /dashboard (it checks the same tokens itself, and also takes a sign-in cookie);
	and /healthz, /readyz, /metrics (``metrics_routes``).

	Setting the SDK's ``AuthenticatedUser`` on each request also makes the SDK bind every
	handshake-era transport session and every SSE session to the principal that opened it.
	The ``LegacySse`` is ``app.state.legacy_sse``, for ``serve_http`` to close at shutdown.
	"""
	security = transport_security(config.host)
	# Browser sessions are unaffected by a transport session's end: they follow --idle-timeout.
	manager = StreamableHTTPSessionManager(
		app=server,
		security_settings=security,
		session_idle_timeout=config.transport_session_idle,
		max_request_body_size=config.max_request_body,
	)
	legacy = LegacySse(server, security, config.max_request_body)

	def body_limit(path: str) -> int:
		return DASHBOARD_MAX_BODY if path.startswith(DASHBOARD_PATH) else config.max_request_body

	# first: a ?token= is gone from the URL before anything logs it; then no body is read unbounded
	middleware: list[Middleware] = [Middleware(HideToken), Middleware(BodyLimit, limit_for=body_limit)]
	if isinstance(verifier, JwtVerifier):
		middleware.append(Middleware(AuthenticationMiddleware, backend=JwtBackend(verifier)))
	elif verifier is not None:
		middleware.append(Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(verifier)))

	def protect(app: ASGIApp) -> ASGIApp:
		if isinstance(verifier, JwtVerifier):
			return RequireBearer(app, verifier.settings, MCP_PATH)
		return RequireAuthMiddleware(app, required_scopes=[]) if verifier is not None else _Asgi(app)

	@contextlib.asynccontextmanager
	async def lifespan(_app: Starlette) -> AsyncIterator[None]:
		async with manager.run():
			yield

	routes = [
		Route(
			MCP_PATH,
			endpoint=protect(
				TransportSessions(
					StreamableHTTPASGIApp(manager),
					scope_principal,
					cap=config.max_transport_sessions,
					idle=config.transport_session_idle,
				)
			),
		),
		Route(SSE_PATH, endpoint=protect(legacy.stream)),
		Route(MESSAGES_PATH, endpoint=protect(legacy.transport.handle_post_message)),
		*(dashboard.routes() if dashboard is not None else []),
		*(metrics_routes(metrics, config, verifier) if metrics is not None else []),
		*(metadata_routes(verifier.settings, verifier.issuer, MCP_PATH) if isinstance(verifier, JwtVerifier) else []),
	]
	app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan)
	app.state.legacy_sse = legacy
	return app


def bind_socket(host: str, port: int) -> socket.socket:
	"""Bind before any browser starts, so a taken port is a one-line error, not a traceback."""
	family = socket.AF_INET6 if ':' in host.strip('[]') else socket.AF_INET
	sock = socket.socket(family, socket.SOCK_STREAM)
	try:
		sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
		sock.bind((host.strip('[]'), port))
		sock.listen(1024)  # the kernel caps it at somaxconn; a flood of connects should not crowd out the rest
	except OSError as exc:
		sock.close()
		raise SystemExit(f'Cannot listen on {host}:{port}: {exc.strerror or exc}') from None
	sock.setblocking(False)
	return sock


def connection_guard(config: ServerConfig) -> ConnectionGuard:
	"""The caps on connections, with the open-file limit raised as far as it goes and
	--max-connections lowered if the descriptors would run out before it is reached."""
	soft = raise_fd_limit()
	cap = config.max_connections
	if soft and cap > soft - FD_RESERVE:
		lowered = max(1, soft - FD_RESERVE)
		logger.warning('--max-connections %d is more than the open-file limit (%d) allows; using %d', cap, soft, lowered)
		cap = lowered
	quiet_accept_errors(asyncio.get_running_loop(), Throttled(logger))
	quiet_uvicorn()
	return ConnectionGuard(cap, config.max_connections_per_client, config.header_timeout)


def uvicorn_server(app: Starlette, config: ServerConfig, guard: ConnectionGuard) -> Any:
	import uvicorn

	from browser_use_mcp.patches import uvicorn_signals

	uv_config = uvicorn.Config(
		app,
		log_config=None,  # our handlers (stderr, session-tagged) already sit on the root logger
		log_level=config.log_level,
		access_log=config.log_level == 'debug',
		lifespan='on',
		timeout_graceful_shutdown=1,
		server_header=False,
		http=guarded_protocol(guard),  # h11 with connection caps and a header deadline (guard.py)
		timeout_keep_alive=config.keep_alive_timeout,
	)
	# uvicorn.Server minus its own SIGTERM/SIGINT handlers: run_until_stopped alone owns the signals,
	# so sessions close first (patches/uvicorn_signals.py)
	return uvicorn_signals.server_class(config)(uv_config)


async def serve_http(config: ServerConfig) -> None:
	"""Serve MCP over HTTP (Streamable HTTP, and legacy HTTP+SSE) until SIGTERM/SIGINT, then
	close every browser."""
	fixed_tokens = config.auth_tokens
	config = with_token_file(config)
	check_exposure(config)
	check_tokens(config)
	hide(*config.auth_tokens)  # no log line carries one verbatim, whoever logs it
	verifier: Verifier | None = TokenPrincipals(config.auth_tokens) if config.auth_tokens else None
	if config.auth == 'oauth':
		verifier = await start_oauth(config)
	short = sum(1 for t in config.auth_tokens if len(t) < MIN_TOKEN_LENGTH)
	if short:
		logger.warning('%d auth token(s) are shorter than %d characters and could be guessed', short, MIN_TOKEN_LENGTH)
	try:
		sock = bind_socket(config.host, config.port)
	except SystemExit:
		if isinstance(verifier, JwtVerifier):
			await verifier.close()
		raise

	registry = SessionRegistry(config)
	telemetry = Telemetry(config)
	uv: Any = None
	legacy: LegacySse | None = None
	serving: asyncio.Task[None] | None = None
	reloader: TokenReloader | None = None
	watching: asyncio.Task[None] | None = None
	try:
		registry.begin()
		telemetry.started()
		principal_of: PrincipalOf = principal_from_request if verifier else (lambda _ctx: LOCAL_PRINCIPAL)
		metrics = Metrics(registry)
		server = build_server(Catalog(registry), principal_of=principal_of, telemetry=telemetry, metrics=metrics)
		dashboard = Dashboard(
			registry,
			verifier.principal if verifier else None,
			loopback=is_loopback(config.host),
			takeover_timeout=config.takeover_timeout,
		)
		app = build_app(server, config, verifier, dashboard, metrics)
		legacy = app.state.legacy_sse
		if config.auth_token_file is not None and isinstance(verifier, TokenPrincipals):
			reloader = TokenReloader(
				config.auth_token_file, fixed_tokens, verifier, registry, dashboard, interval=config.token_file_poll
			)
			if config.token_file_poll > 0:
				watching = asyncio.create_task(reloader.watch(), name='watch-token-file')
		uv = uvicorn_server(app, config, connection_guard(config))
		serving = asyncio.create_task(uv.serve(sockets=[sock]), name='http-server')
		bare = config.host.strip('[]')
		host = f'[{bare}]' if ':' in bare else bare
		if isinstance(verifier, JwtVerifier):
			auth = f'OAuth: JWTs of {verifier.issuer} for {verifier.settings.audience}'
		else:
			auth = f'{len(verifier)} token(s)' if verifier else 'no authentication'
		if reloader is not None:
			auth += f', reloaded from {config.auth_token_file} on SIGHUP or change'
		announce(
			f'browser-use-mcp: serving MCP at http://{host}:{config.port}{MCP_PATH} (legacy HTTP+SSE at {SSE_PATH}; '
			f'dashboard at {DASHBOARD_PATH}; /healthz, /readyz, /metrics; {auth})'
		)
		# run_until_stopped cancels what it is given; the shield keeps that cancel from tearing
		# uvicorn down mid-response, so it can be stopped in order below.
		await run_until_stopped(
			asyncio.shield(serving), registry, config.shutdown_grace, on_hangup=reloader.hangup if reloader else None
		)
	finally:
		if watching is not None:
			watching.cancel()
			with contextlib.suppress(asyncio.CancelledError):
				await watching
		if reloader is not None:
			await reloader.close()
		await registry.shutdown()
		if serving is not None:
			# An SSE stream lasts until its client leaves: end them, or uvicorn would wait on them.
			if legacy is not None:
				try:
					await legacy.close(SSE_DRAIN)
				except Exception:  # uvicorn is stopped below regardless, forcibly if a stream holds it
					logger.warning('ending the legacy SSE streams failed', exc_info=True)
			await stop_uvicorn(uv, serving)
		sock.close()
		if isinstance(verifier, JwtVerifier):
			await verifier.close()
		telemetry.stopped()


async def stop_uvicorn(uv: Any, serving: asyncio.Task[Any]) -> None:
	"""Ask uvicorn to stop, and force it after HTTP_SHUTDOWN_GRACE seconds; never raises."""
	uv.should_exit = True
	try:
		await asyncio.wait_for(asyncio.shield(serving), timeout=HTTP_SHUTDOWN_GRACE)
	except (TimeoutError, asyncio.CancelledError, Exception):
		uv.force_exit = True
		serving.cancel()
		try:
			await serving
		except asyncio.CancelledError:
			pass  # what we asked for
		except Exception as exc:  # the process is ending; uvicorn's error is no longer news
			logger.debug('HTTP server ended with %r after a forced exit', exc)
