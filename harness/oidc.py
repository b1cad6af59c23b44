"""A real OpenID provider (node's oidc-provider, tests/oidc) on 127.0.0.1, and the server behind it.

``provider(work, *kids)`` starts one with fresh RSA keys and always stops it; ``Provider.token`` gets an
access token by client credentials as any OAuth client would, ``Provider.forge`` signs one with a claim
changed; ``oauth_server`` is ``harness.httpserver.http_server`` with ``--auth oauth`` against an issuer.
scripts/oidc.sh (run by scripts/setup.sh --test) installs the node package.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from harness.httpserver import HttpServer, http_server
from harness.servers import REPO, server_env

OIDC = REPO / 'tests' / 'oidc'
AUDIENCE = 'http://browser-use-mcp.test/mcp'
OTHER_AUDIENCE = 'http://another-api.test/'
SCOPE = 'mcp:tools'
CLIENTS = {
	'agent-a': 'mcp:tools',
	'agent-b': 'mcp:tools',
	'agent-c': 'other',  # may not ask for mcp:tools
}


def new_key(kid: str) -> dict[str, Any]:
	"""A private RSA JWK, as the provider's config takes it."""
	key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
	jwk = json.loads(RSAAlgorithm.to_jwk(key))
	jwk.pop('key_ops', None)
	jwk.update(kid=kid, alg='RS256', use='sig')
	return jwk


def secret(client_id: str) -> str:
	return f'{client_id}-secret-0123456789abcdef0123456789abcdef'


@dataclass
class Provider:
	"""One oidc-provider process; ``restart`` brings it back on the same port with other keys."""

	work: Path
	keys: list[dict[str, Any]]
	port: int = 0
	issuer: str = ''
	proc: subprocess.Popen[str] | None = None
	private: dict[str, Any] = field(default_factory=dict)

	def start(self) -> Provider:
		if not (OIDC / 'node_modules' / 'oidc-provider').is_dir():
			raise RuntimeError('oidc-provider is not installed: run scripts/oidc.sh (scripts/setup.sh --test runs it)')
		config = {
			'port': self.port,
			'keys': self.keys,
			'clients': [{'client_id': c, 'client_secret': secret(c), 'scope': s} for c, s in CLIENTS.items()],
			'resources': {
				AUDIENCE: {'audience': AUDIENCE, 'scope': 'mcp:tools other'},
				OTHER_AUDIENCE: {'audience': OTHER_AUDIENCE, 'scope': 'mcp:tools other'},
			},
		}
		path = self.work / 'oidc.json'
		path.write_text(json.dumps(config))
		self.proc = subprocess.Popen(
			['node', str(OIDC / 'provider.mjs'), str(path)],
			stdout=subprocess.PIPE,
			stderr=(self.work / 'oidc.log').open('ab'),
			text=True,
			cwd=OIDC,
		)
		line = self.proc.stdout.readline() if self.proc.stdout else ''
		if not line:
			self.stop()
			raise RuntimeError('oidc-provider did not start:\n' + (self.work / 'oidc.log').read_text())
		self.issuer = json.loads(line)['issuer']
		self.port = int(self.issuer.rsplit(':', 1)[1])
		self.private = {k['kid']: jwt.PyJWK(k, 'RS256').key for k in self.keys}
		return self

	def stop(self) -> None:
		if self.proc is not None and self.proc.poll() is None:
			self.proc.terminate()
			try:
				self.proc.wait(timeout=10)
			except subprocess.TimeoutExpired:
				self.proc.kill()
				self.proc.wait()
		self.proc = None

	def restart(self, keys: list[dict[str, Any]]) -> None:
		self.stop()
		self.keys = keys
		self.start()

	def token(self, client_id: str, scope: str = SCOPE, resource: str = AUDIENCE) -> str:
		"""An access token by client credentials, as any OAuth client gets one."""
		response = httpx.post(
			f'{self.issuer}/token',
			data={
				'grant_type': 'client_credentials',
				'client_id': client_id,
				'client_secret': secret(client_id),
				'scope': scope,
				'resource': resource,
			},
			timeout=30,
		)
		assert response.status_code == 200, response.text
		return response.json()['access_token']

	def forge(self, kid: str | None = None, **changes: Any) -> str:
		"""A token signed with the provider's key ``kid`` (its first by default), one claim changed."""
		kid = kid or self.keys[0]['kid']
		now = int(time.time())
		claims = {'iss': self.issuer, 'aud': AUDIENCE, 'sub': 'agent-a', 'iat': now, 'exp': now + 300, 'scope': SCOPE}
		claims.update(changes)
		claims = {k: v for k, v in claims.items() if v is not None}
		return jwt.encode(claims, self.private[kid], algorithm='RS256', headers={'kid': kid, 'typ': 'at+jwt'})


@contextlib.contextmanager
def provider(work: Path, *kids: str) -> Iterator[Provider]:
	work.mkdir(parents=True, exist_ok=True)
	p = Provider(work, [new_key(k) for k in kids or ('k1',)])
	try:
		yield p.start()
	finally:
		p.stop()


@contextlib.contextmanager
def oauth_server(home: Path, issuer: str, *args: str) -> Iterator[HttpServer]:
	# unknown kids refetch the keys at once (the default waits 10 s between fetches)
	env = server_env(home, BROWSER_USE_MCP_OAUTH_JWKS_MIN_REFRESH='0')
	with http_server(
		home, '--auth', 'oauth', '--issuer', issuer, '--audience', AUDIENCE, '--required-scopes', SCOPE, *args, env=env
	) as server:
		yield server
