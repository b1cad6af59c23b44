"""The HTTP server as an OAuth 2.1 resource server (``--auth oauth``), as the MCP authorization
specification has it: bearer JWT access tokens from the operator's identity provider.

- The issuer's metadata (RFC 8414 ``/.well-known/oauth-authorization-server``, else OpenID
  ``/.well-known/openid-configuration``) names its JWKS; both are fetched at start-up, and an issuer
  that does not answer then is a start-up error. Keys are cached: a token signed with a key id the
  cache lacks triggers one refetch (at most one every ``min_refresh`` s, shared by every request
  waiting on it), so rotated keys are picked up; if the issuer is down, the cached keys keep working
  and a new key id gets a 401 that says so. The cache is also refreshed in the background every
  ``JWKS_MAX_AGE`` s, so keys the issuer withdrew stop working.
- A token is accepted only if signed with an asymmetric algorithm its key declares (or, for a key
  without ``alg``, its key type's), never ``none`` or HMAC; ``iss`` is the issuer, ``aud`` holds the
  audience, ``exp`` and ``nbf`` hold within ``leeway`` s; the principal claim (``sub`` by default) is
  a short printable string. Required scopes (``scope`` or ``scp``) missing: 403 ``insufficient_scope``.
- The principal is ``<claim>:<value>`` (``sub:agent-a``): sessions, limits, durable records,
  recordings and the dashboard are kept per subject as they are per static token.
- ``/.well-known/oauth-protected-resource[/…]`` serves the RFC 9728 metadata; a 401 carries
  ``WWW-Authenticate: Bearer resource_metadata="…"`` (with ``error="invalid_token"`` and what is wrong
  when a token was presented).

Signature checks cost tens of microseconds (RSA-2048 verify); only key fetches await the network.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
import jwt
from mcp.server.auth.handlers.metadata import ProtectedResourceMetadataHandler
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.routes import build_resource_metadata_url, cors_middleware
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.authentication import AuthCredentials, AuthenticationBackend
from starlette.requests import HTTPConnection, Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

logger = logging.getLogger('browser_use_mcp.oauth')

WELL_KNOWN = '/.well-known/oauth-protected-resource'
# Asymmetric JWS algorithms, by key type. HMAC and 'none' are never accepted: with HMAC the
# public key would be the secret.
ALGORITHMS_BY_KTY = {
	'RSA': ('RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'),
	'EC': ('ES256', 'ES384', 'ES512'),
	'OKP': ('EdDSA',),
}
ASYMMETRIC = frozenset(a for algs in ALGORITHMS_BY_KTY.values() for a in algs)
EC_CURVE_ALG = {'P-256': 'ES256', 'P-384': 'ES384', 'P-521': 'ES512'}
JWKS_MAX_AGE = 3600.0  # s; then the next request refreshes the keys in the background
FETCH_TIMEOUT = 10.0  # s for one request to the issuer
MAX_DOCUMENT = 1024 * 1024  # bytes of a metadata or JWKS document
MAX_TOKEN = 16 * 1024  # bytes of a presented token; longer is refused before any parsing
MAX_PRINCIPAL = 256  # characters of the principal claim's value
# The key under which the bearer backend leaves why a presented token was refused, for the 401.
REFUSAL = 'browser_use_mcp.oauth_refusal'


class IssuerUnavailable(Exception):
	"""The issuer's metadata or keys could not be fetched or made no sense; says which and why."""


class Refused(Exception):
	"""A presented token is not accepted; the message says why, for the client."""


@dataclass(frozen=True)
class OAuthSettings:
	issuer: str
	audience: str
	required_scopes: tuple[str, ...] = ()
	principal_claim: str = 'sub'
	resource_url: str | None = None  # the public URL of /mcp; None: from each request's Host
	leeway: float = 60.0
	min_refresh: float = 10.0  # s between two key fetches triggered by unknown key ids


def metadata_urls(issuer: str) -> list[str]:
	"""Where the issuer's metadata may be: RFC 8414 (the well-known path before the issuer's
	path), then OpenID Connect Discovery (after it), as the MCP specification lists them."""
	parts = urlsplit(issuer)
	path = parts.path.rstrip('/')
	base = f'{parts.scheme}://{parts.netloc}'
	urls = [f'{base}/.well-known/oauth-authorization-server{path}']
	if path:
		urls.append(f'{base}/.well-known/openid-configuration{path}')
	urls.append(f'{base}{path}/.well-known/openid-configuration')
	return urls


def _algorithms_of(jwk: dict[str, Any]) -> tuple[str, ...]:
	"""The algorithms a published key may verify: its declared ``alg`` if asymmetric, else its type's."""
	kty = jwk.get('kty')
	declared = jwk.get('alg')
	if declared is not None:
		return (declared,) if declared in ALGORITHMS_BY_KTY.get(kty, ()) else ()
	if kty == 'EC':
		alg = EC_CURVE_ALG.get(jwk.get('crv', ''))
		return (alg,) if alg else ()
	return ALGORITHMS_BY_KTY.get(kty, ())


@dataclass(frozen=True)
class _Key:
	key: Any
	algorithms: tuple[str, ...]


def parse_jwks(document: Any) -> dict[str, _Key]:
	"""The signing keys of a JWKS, by key id; keys for encryption, symmetric keys, keys without an id
	and keys PyJWT cannot load are left out (the rest still work)."""
	if not isinstance(document, dict) or not isinstance(document.get('keys'), list):
		raise IssuerUnavailable('its JWKS is not a JSON object with a "keys" list')
	keys: dict[str, _Key] = {}
	for jwk in document['keys']:
		if not isinstance(jwk, dict) or jwk.get('use', 'sig') != 'sig' or not isinstance(jwk.get('kid'), str):
			continue
		algorithms = _algorithms_of(jwk)
		if not algorithms:
			continue
		try:
			key = jwt.PyJWK(jwk, algorithms[0]).key
		except (jwt.PyJWKError, jwt.InvalidKeyError, ValueError, TypeError):
			logger.warning('JWKS key %r could not be loaded; ignored', jwk.get('kid'))
			continue
		keys[jwk['kid']] = _Key(key, algorithms)
	return keys


class JwtVerifier:
	"""Verifies bearer JWTs against the issuer's keys (the SDK's ``TokenVerifier`` protocol, plus
	``principal``, the synchronous check the dashboard and /metrics use)."""

	def __init__(self, settings: OAuthSettings, client: httpx.AsyncClient | None = None) -> None:
		self.settings = settings
		self.issuer = settings.issuer
		self.jwks_uri: str | None = None
		self._keys: dict[str, _Key] = {}
		self._fetched = 0.0  # monotonic time of the last successful key fetch
		self._tried = float('-inf')  # monotonic time of the last fetch attempt
		self._refresh: asyncio.Task[None] | None = None
		self._failing = False  # the last refresh failed (the next failure is logged at info)
		self._client = client  # made on the first fetch

	# -- the issuer --------------------------------------------------------------------------

	async def _get_json(self, url: str, what: str) -> Any:
		if self._client is None:
			self._client = httpx.AsyncClient(timeout=FETCH_TIMEOUT, follow_redirects=False)
		try:
			async with self._client.stream('GET', url, headers={'Accept': 'application/json'}) as response:
				if response.status_code != 200:
					raise IssuerUnavailable(f'{what} {url} answered HTTP {response.status_code}')
				body = bytearray()
				async for chunk in response.aiter_bytes():
					body += chunk
					if len(body) > MAX_DOCUMENT:
						raise IssuerUnavailable(f'{what} {url} is larger than {MAX_DOCUMENT} bytes')
		except httpx.HTTPError as exc:
			raise IssuerUnavailable(f'{what} {url} did not answer: {exc.__class__.__name__}: {exc}') from None
		try:
			return json.loads(body)
		except ValueError:
			raise IssuerUnavailable(f'{what} {url} is not JSON') from None

	async def discover(self) -> None:
		"""Find the JWKS in the issuer's metadata and load it; raises IssuerUnavailable."""
		problems = []
		for url in metadata_urls(self.settings.issuer):
			try:
				metadata = await self._get_json(url, 'issuer metadata')
			except IssuerUnavailable as exc:
				problems.append(str(exc))
				continue
			if not isinstance(metadata, dict):
				problems.append(f'issuer metadata {url} is not a JSON object')
				continue
			# RFC 8414 §3.3: the metadata must name the issuer it was asked for (mix-up protection)
			named = metadata.get('issuer')
			if not isinstance(named, str) or named.rstrip('/') != self.settings.issuer.rstrip('/'):
				raise IssuerUnavailable(
					f'issuer metadata {url} names the issuer {named!r}, not {self.settings.issuer!r}: give --issuer exactly as '
					'the provider names itself'
				)
			jwks_uri = metadata.get('jwks_uri')
			if not isinstance(jwks_uri, str) or not jwks_uri.startswith(('https://', 'http://')):
				raise IssuerUnavailable(f'issuer metadata {url} has no jwks_uri')
			self.issuer = named  # tokens carry it exactly as the provider spells it
			self.jwks_uri = jwks_uri
			await self.load_keys()
			return
		raise IssuerUnavailable('; '.join(problems))

	async def load_keys(self) -> None:
		assert self.jwks_uri is not None
		self._tried = time.monotonic()
		keys = parse_jwks(await self._get_json(self.jwks_uri, 'JWKS'))
		if not keys:
			raise IssuerUnavailable(f'JWKS {self.jwks_uri} has no usable signing key (asymmetric, with a kid)')
		added = keys.keys() - self._keys.keys()
		removed = self._keys.keys() - keys.keys()
		if self._keys and (added or removed):
			logger.warning('issuer keys changed: %d added, %d withdrawn', len(added), len(removed))
		self._keys = keys
		self._fetched = time.monotonic()

	async def _refetch(self) -> None:
		try:
			await self.load_keys()
		except IssuerUnavailable as exc:
			# once a warning, then quietly: a down issuer is retried at most every min_refresh s
			log = logger.info if self._failing else logger.warning
			self._failing = True
			log('could not refresh the issuer keys; the %d cached key(s) stay in use: %s', len(self._keys), exc)
			return
		if self._failing:
			logger.warning('the issuer answers again: %d key(s) in use', len(self._keys))
		self._failing = False

	def _start_refresh(self) -> asyncio.Task[None]:
		if self._refresh is None or self._refresh.done():
			self._refresh = asyncio.get_running_loop().create_task(self._refetch(), name='refresh-jwks')
		return self._refresh

	@property
	def key_count(self) -> int:
		return len(self._keys)

	@property
	def algorithms(self) -> list[str]:
		"""The algorithms the cached keys allow."""
		return sorted({a for key in self._keys.values() for a in key.algorithms})

	async def close(self) -> None:
		if self._refresh is not None:
			self._refresh.cancel()
			with contextlib.suppress(asyncio.CancelledError):
				await self._refresh
		if self._client is not None:
			await self._client.aclose()
			self._client = None

	# -- tokens ------------------------------------------------------------------------------

	def _header(self, token: str) -> tuple[str, str]:
		if len(token) > MAX_TOKEN:
			raise Refused(f'the token is longer than {MAX_TOKEN} bytes')
		try:
			header = jwt.get_unverified_header(token)
		except jwt.DecodeError:
			raise Refused('the token is not a JWT') from None
		alg = header.get('alg')
		if alg not in ASYMMETRIC:
			raise Refused(f"the token is signed with {alg!r}; only the issuer's asymmetric keys are accepted")
		kid = header.get('kid')
		if not isinstance(kid, str):
			raise Refused('the token names no key (kid)')
		return alg, kid

	def _check(self, token: str, alg: str, key: _Key) -> dict[str, Any]:
		if alg not in key.algorithms:
			raise Refused(f'the token is signed with {alg}, which its key does not allow')
		s = self.settings
		try:
			claims = jwt.decode(
				token,
				key.key,
				algorithms=[alg],
				audience=s.audience,
				issuer=self.issuer,
				leeway=s.leeway,
				options={'require': ['exp', 'iss', 'aud']},
			)
		except jwt.ExpiredSignatureError:
			raise Refused('the token has expired') from None
		except jwt.ImmatureSignatureError:
			raise Refused('the token is not valid yet (nbf or iat in the future)') from None
		except jwt.InvalidAudienceError:
			raise Refused(f'the token is not for this server (its audience is not {s.audience!r})') from None
		except jwt.InvalidIssuerError:
			raise Refused(f'the token was not issued by {self.issuer}') from None
		except jwt.MissingRequiredClaimError as exc:
			raise Refused(f'the token has no {exc.claim!r} claim') from None
		except jwt.InvalidSignatureError:
			raise Refused("the token's signature does not verify") from None
		except jwt.InvalidTokenError as exc:
			raise Refused(f'the token is malformed ({exc.__class__.__name__})') from None
		return claims

	def _access(self, claims: dict[str, Any]) -> AccessToken:
		claim = self.settings.principal_claim
		value = claims.get(claim)
		if isinstance(value, int) and not isinstance(value, bool):
			value = str(value)
		if not isinstance(value, str) or not value or len(value) > MAX_PRINCIPAL or not value.isprintable():
			raise Refused(f"the token's {claim!r} claim is missing or not a short printable string")
		principal = f'{claim}:{value}'
		exp = claims.get('exp')
		return AccessToken(
			token=principal,  # the principal stands in for the token: nothing downstream holds the secret
			client_id=principal,
			scopes=token_scopes(claims),
			expires_at=int(exp + self.settings.leeway) if isinstance(exp, int | float) else None,
			subject=str(claims.get('sub')) if claims.get('sub') is not None else None,
			claims={'iss': claims.get('iss')},
		)

	async def check(self, token: str) -> AccessToken:
		"""The token's access, or Refused saying why; may refetch the keys once for an unknown kid."""
		token = token.strip()
		alg, kid = self._header(token)
		key = self._keys.get(kid)
		now = time.monotonic()
		if key is None:
			if now - self._tried >= self.settings.min_refresh or (self._refresh is not None and not self._refresh.done()):
				await asyncio.shield(self._start_refresh())
				key = self._keys.get(kid)
			if key is None:
				raise Refused(
					f'the token is signed with a key the issuer does not publish (kid {kid[:64]!r}); if the issuer rotated its '
					'keys just now, retry in a few seconds'
				)
		elif now - self._fetched > JWKS_MAX_AGE and now - self._tried >= self.settings.min_refresh:
			self._start_refresh()
		return self._access(self._check(token, alg, key))

	async def verify_token(self, token: str) -> AccessToken | None:
		try:
			return await self.check(token)
		except Refused:
			return None

	def principal(self, token: str) -> str | None:
		"""The principal of a token, with the cached keys only (the dashboard's and /metrics' check)."""
		try:
			alg, kid = self._header(token.strip())
			key = self._keys.get(kid)
			if key is None:
				return None
			access = self._access(self._check(token.strip(), alg, key))
		except Refused:
			return None
		if not set(self.settings.required_scopes) <= set(access.scopes):
			return None
		return access.client_id


def token_scopes(claims: dict[str, Any]) -> list[str]:
	"""The scopes a token grants: ``scope`` (space-separated, RFC 9068) or ``scp`` (a list or a string)."""
	scopes: list[str] = []
	for name in ('scope', 'scp'):
		value = claims.get(name)
		if isinstance(value, str):
			scopes.extend(value.split())
		elif isinstance(value, list):
			scopes.extend(v for v in value if isinstance(v, str))
	return list(dict.fromkeys(scopes))


class JwtBackend(AuthenticationBackend):
	"""Starlette authentication with a ``JwtVerifier``: a good token sets the SDK's
	``AuthenticatedUser``; a bad one leaves why on the scope for ``RequireBearer``'s 401."""

	def __init__(self, verifier: JwtVerifier) -> None:
		self.verifier = verifier

	async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, AuthenticatedUser] | None:
		header = conn.headers.get('authorization')
		if not header:
			return None
		scheme, _, token = header.partition(' ')
		if scheme.lower() != 'bearer' or not token.strip():
			conn.scope[REFUSAL] = 'the Authorization header is not "Bearer <token>"'
			return None
		try:
			access = await self.verifier.check(token)
		except Refused as exc:
			conn.scope[REFUSAL] = str(exc)
			return None
		return AuthCredentials(access.scopes), AuthenticatedUser(access)


def resource_url(settings: OAuthSettings, scope: Scope, mcp_path: str) -> str:
	"""This resource's URL: --resource-url, else the URL of /mcp as the request reached it."""
	if settings.resource_url:
		return settings.resource_url
	request = Request(scope)
	return f'{request.url.scheme}://{request.url.netloc}{mcp_path}'


def metadata_url(settings: OAuthSettings, scope: Scope, mcp_path: str) -> str:
	"""Where this resource's metadata is (RFC 9728 §3.1); a path alone when the request's Host makes
	no URL (the request is refused anyway, and says where to look)."""
	try:
		return str(build_resource_metadata_url(AnyHttpUrl(resource_url(settings, scope, mcp_path))))
	except ValueError:
		return WELL_KNOWN + mcp_path


def _quoted(text: str) -> str:
	return text.replace('\\', '\\\\').replace('"', "'")


class RequireBearer:
	"""Lets a request through only with a verified token holding the required scopes: else 401
	(``WWW-Authenticate: Bearer resource_metadata="…"``, plus ``error="invalid_token"`` and why, if a
	token was presented) or 403 ``insufficient_scope``. The SDK's ``RequireAuthMiddleware`` with the
	metadata URL taken from each request and the refusal's reason in the answer."""

	def __init__(self, app: ASGIApp, settings: OAuthSettings, mcp_path: str) -> None:
		self.app = app
		self.settings = settings
		self.mcp_path = mcp_path

	async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
		user = scope.get('user')
		metadata = metadata_url(self.settings, scope, self.mcp_path)
		if not isinstance(user, AuthenticatedUser):
			refusal = scope.get(REFUSAL)
			if refusal is None:
				await self._refuse(
					send, 401, metadata, None, 'Authentication required: send "Authorization: Bearer <access token>"'
				)
			else:
				await self._refuse(send, 401, metadata, 'invalid_token', refusal)
			return
		missing = [s for s in self.settings.required_scopes if s not in user.scopes]
		if missing:
			await self._refuse(
				send, 403, metadata, 'insufficient_scope', f'the token lacks the scope(s) {" ".join(missing)}', scope=missing
			)
			return
		await self.app(scope, receive, send)

	async def _refuse(
		self, send: Send, status: int, metadata: str, error: str | None, description: str, scope: list[str] | None = None
	) -> None:
		parts = [f'resource_metadata="{_quoted(metadata)}"']
		if error is not None:
			parts.append(f'error="{error}"')
			parts.append(f'error_description="{_quoted(description)}"')
		if scope:
			parts.append(f'scope="{_quoted(" ".join(scope))}"')
		body = json.dumps({'error': error or 'invalid_request', 'error_description': description}).encode()
		await send(
			{
				'type': 'http.response.start',
				'status': status,
				'headers': [
					(b'content-type', b'application/json'),
					(b'content-length', str(len(body)).encode()),
					(b'www-authenticate', ('Bearer ' + ', '.join(parts)).encode()),
				],
			}
		)
		await send({'type': 'http.response.body', 'body': body})


def metadata_routes(settings: OAuthSettings, issuer: str, mcp_path: str) -> list[Route]:
	"""RFC 9728 protected-resource metadata at /.well-known/oauth-protected-resource and under it
	(…/mcp, or whatever path --resource-url has), with the SDK's model and handler."""

	async def handle(request: Request) -> Response:
		try:
			resource = AnyHttpUrl(resource_url(settings, request.scope, mcp_path))
		except ValueError:
			return Response('The Host header does not make a URL of this server.', status_code=400, media_type='text/plain')
		metadata = ProtectedResourceMetadata(
			resource=resource,
			authorization_servers=[AnyHttpUrl(issuer)],
			scopes_supported=list(settings.required_scopes) or None,
			resource_name='browser-use-mcp',
		)
		return await ProtectedResourceMetadataHandler(metadata).handle(request)

	endpoint = cors_middleware(handle, ['GET', 'OPTIONS'])
	return [
		Route(WELL_KNOWN, endpoint=endpoint, methods=['GET', 'OPTIONS']),
		Route(WELL_KNOWN + '/{rest:path}', endpoint=endpoint, methods=['GET', 'OPTIONS']),
	]


def settings_problems(
	issuer: str | None, audience: str | None, claim: str, scopes: Iterable[str], resource: str | None
) -> list[str]:
	problems = []
	if not issuer:
		problems.append('--auth oauth needs --issuer URL (the identity provider whose tokens are accepted)')
	else:
		parts = urlsplit(issuer)
		loopback = parts.hostname in ('127.0.0.1', 'localhost', '::1')
		if parts.scheme != 'https' and not (parts.scheme == 'http' and loopback):
			problems.append(f'--issuer must be an https:// URL (http:// only on loopback), not {issuer!r}')
		elif parts.query or parts.fragment:
			problems.append(f'--issuer must not have a query or fragment: {issuer!r}')
	if not audience:
		problems.append('--auth oauth needs --audience (the "aud" value the provider puts in tokens for this server)')
	if not claim or not claim.strip():
		problems.append('--principal-claim must name a claim, e.g. sub')
	if any(not s or any(c.isspace() for c in s) for s in scopes):
		problems.append('--required-scopes takes scope names separated by commas or spaces')
	if resource is not None and not resource.startswith(('https://', 'http://')):
		problems.append(f'--resource-url must be the http(s):// URL clients use for /mcp, not {resource!r}')
	return problems
