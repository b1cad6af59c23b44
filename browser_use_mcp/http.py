"""Streamable HTTP transport: one server, many MCP hosts, each principal with its own sessions.

The MCP SDK does the protocol work (``StreamableHTTPSessionManager`` serves both the
handshake-era protocol and the stateless 2026-07-28 one at the same path); this module adds
what a shared server needs around it: bearer tokens that map to principals, a refusal to
expose an unauthenticated server beyond loopback, and the same shutdown as stdio. Browser
sessions belong to the registry, not to the HTTP connection, so a client that reconnects
with a ``session_id`` finds it as it left it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import ipaddress
import logging
import socket
import sys
from collections.abc import AsyncIterator, Iterable
from typing import Any

from mcp.server import Server
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import AccessToken
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.routing import Route

from browser_use_mcp.catalog import Catalog
from browser_use_mcp.config import ServerConfig
from browser_use_mcp.server import PrincipalOf, build_server, run_until_stopped
from browser_use_mcp.sessions import LOCAL_PRINCIPAL, SessionRegistry
from browser_use_mcp.telemetry import Telemetry

logger = logging.getLogger('browser_use_mcp.http')

MCP_PATH = '/mcp'
# A token shorter than this can be guessed by anyone who can reach the port.
MIN_TOKEN_LENGTH = 16
# How long a handshake-era transport session (Mcp-Session-Id) may sit unused before the SDK
# drops it. Browser sessions are unaffected: they follow --idle-timeout and survive this.
MIN_TRANSPORT_IDLE = 1800.0
# After the browsers are closed, how long uvicorn may take to end open streams.
HTTP_SHUTDOWN_GRACE = 2.0


def principal_for_token(token: str) -> str:
	"""The principal a bearer token stands for: a digest, so logs, state-dir names and
	memory dumps never carry the token itself, yet an operator can map one to the other
	(``printf %s TOKEN | sha256sum``, first 16 hex digits)."""
	return 'token-' + hashlib.sha256(token.encode('utf-8', 'surrogatepass')).hexdigest()[:16]


def is_loopback(host: str) -> bool:
	"""Whether binding ``host`` keeps the server reachable from this machine only.

	Names other than ``localhost`` count as exposed: what they resolve to can change.
	"""
	if host.strip().lower() == 'localhost':
		return True
	try:
		return ipaddress.ip_address(host.strip('[]')).is_loopback
	except ValueError:
		return False


def check_exposure(config: ServerConfig) -> None:
	"""Refuse to serve browsers without authentication to anyone beyond this machine.

	An unauthenticated server hands out real browsers (and, for the default session, the
	user's persistent profile) to whoever can connect, so exposing one must be a decision.
	"""
	if config.auth_tokens or config.allow_unauthenticated or is_loopback(config.host):
		return
	raise SystemExit(
		f'Refusing to serve HTTP on {config.host} without authentication: anyone who can reach that address could '
		'drive the browsers. Give each client a token with --auth-token TOKEN (repeatable; or '
		'BROWSER_USE_MCP_AUTH_TOKENS=t1,t2), bind to 127.0.0.1, or pass --allow-unauthenticated if the network '
		'is trusted.'
	)


def check_tokens(config: ServerConfig) -> None:
	"""An empty token would admit a bare ``Authorization: Bearer``; refuse to start with one."""
	if any(not t.strip() for t in config.auth_tokens):
		raise SystemExit(
			'An auth token is empty. Give each client a long random token, e.g. '
			'python -c "import secrets; print(secrets.token_urlsafe(32))".'
		)


class TokenPrincipals:
	"""Maps a presented bearer token to its principal (the SDK's ``TokenVerifier`` protocol).

	Tokens are kept only as digests; a lookup hashes the presented token first, so its
	timing depends on the digest, not on how much of a real token was guessed.
	"""

	def __init__(self, tokens: Iterable[str]) -> None:
		clean = [t.strip() for t in tokens]
		self._by_digest = {hashlib.sha256(t.encode('utf-8', 'surrogatepass')).digest(): principal_for_token(t) for t in clean}

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


def build_app(server: Server[Any], config: ServerConfig, verifier: TokenPrincipals | None) -> Starlette:
	"""The ASGI app: the SDK's Streamable HTTP endpoint at /mcp, behind bearer auth if configured.

	Setting the SDK's ``AuthenticatedUser`` on each request also makes the SDK bind every
	handshake-era transport session to the principal that opened it.
	"""
	idle = config.idle_timeout
	manager = StreamableHTTPSessionManager(
		app=server,
		security_settings=transport_security(config.host),
		session_idle_timeout=max(MIN_TRANSPORT_IDLE, idle) if idle > 0 else None,
	)
	endpoint: Any = StreamableHTTPASGIApp(manager)
	middleware: list[Middleware] = []
	if verifier is not None:
		endpoint = RequireAuthMiddleware(endpoint, required_scopes=[])
		middleware.append(Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(verifier)))

	@contextlib.asynccontextmanager
	async def lifespan(_app: Starlette) -> AsyncIterator[None]:
		async with manager.run():
			yield

	return Starlette(routes=[Route(MCP_PATH, endpoint=endpoint)], middleware=middleware, lifespan=lifespan)


def bind_socket(host: str, port: int) -> socket.socket:
	"""Bind before any browser starts, so a taken port is a one-line error, not a traceback."""
	family = socket.AF_INET6 if ':' in host.strip('[]') else socket.AF_INET
	sock = socket.socket(family, socket.SOCK_STREAM)
	try:
		sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
		sock.bind((host.strip('[]'), port))
		sock.listen(128)
	except OSError as exc:
		sock.close()
		raise SystemExit(f'Cannot listen on {host}:{port}: {exc.strerror or exc}') from None
	sock.setblocking(False)
	return sock


def _uvicorn_server(app: Starlette, config: ServerConfig) -> Any:
	import uvicorn

	class QuietSignals(uvicorn.Server):
		"""uvicorn would act on SIGTERM/SIGINT too, racing its HTTP shutdown against the session
		shutdown (and re-raising the signal afterwards). ``run_until_stopped`` alone owns the
		signals, as on stdio, so sessions close first and calls in flight still get their
		answer over an open connection."""

		@contextlib.contextmanager
		def capture_signals(self) -> Any:
			yield

	uv_config = uvicorn.Config(
		app,
		log_config=None,  # our handlers (stderr, session-tagged) already sit on the root logger
		log_level=config.log_level,
		access_log=config.log_level == 'debug',
		lifespan='on',
		timeout_graceful_shutdown=1,
		server_header=False,
	)
	return QuietSignals(uv_config)


async def serve_http(config: ServerConfig) -> None:
	"""Serve MCP over Streamable HTTP until SIGTERM/SIGINT, then close every browser."""
	check_exposure(config)
	check_tokens(config)
	verifier = TokenPrincipals(config.auth_tokens) if config.auth_tokens else None
	short = sum(1 for t in config.auth_tokens if len(t) < MIN_TOKEN_LENGTH)
	if short:
		logger.warning('%d auth token(s) are shorter than %d characters and could be guessed', short, MIN_TOKEN_LENGTH)
	sock = bind_socket(config.host, config.port)

	registry = SessionRegistry(config)
	telemetry = Telemetry(config)
	uv: Any = None
	serving: asyncio.Task[None] | None = None
	try:
		await registry.start()
		telemetry.started()
		principal_of: PrincipalOf = principal_from_request if verifier else (lambda _ctx: LOCAL_PRINCIPAL)
		server = build_server(Catalog(registry), principal_of=principal_of, telemetry=telemetry)
		uv = _uvicorn_server(build_app(server, config, verifier), config)
		serving = asyncio.create_task(uv.serve(sockets=[sock]), name='http-server')
		bare = config.host.strip('[]')
		host = f'[{bare}]' if ':' in bare else bare
		auth = f'{len(verifier)} token(s)' if verifier else 'no authentication'
		print(f'browser-use-mcp: serving MCP at http://{host}:{config.port}{MCP_PATH} ({auth})', file=sys.stderr, flush=True)
		# run_until_stopped cancels what it is given; the shield keeps that cancel from tearing
		# uvicorn down mid-response, so it can be stopped in order below.
		await run_until_stopped(asyncio.shield(serving), registry, config.shutdown_grace)
	finally:
		await registry.shutdown()
		if serving is not None:
			uv.should_exit = True
			try:
				await asyncio.wait_for(asyncio.shield(serving), timeout=HTTP_SHUTDOWN_GRACE)
			except (TimeoutError, asyncio.CancelledError, Exception):
				uv.force_exit = True
				serving.cancel()
				with contextlib.suppress(asyncio.CancelledError, Exception):
					await serving
		sock.close()
		telemetry.stopped()
