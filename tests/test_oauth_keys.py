"""browser_use_mcp.oauth in process, no network: which published keys are used, with which algorithms,
and what a token's claims come to. The end-to-end tests against a real provider are tests/e2e/test_oauth.py."""

from __future__ import annotations

import json
import time
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from browser_use_mcp.oauth import JwtVerifier, OAuthSettings, Refused, metadata_urls, parse_jwks, token_scopes

ISSUER = 'https://id.example'
AUDIENCE = 'https://browsers.example/mcp'


def rsa_key() -> Any:
	return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def public_jwk(key: Any, kid: str, **extra: Any) -> dict[str, Any]:
	algorithm = RSAAlgorithm if isinstance(key, rsa.RSAPrivateKey) else ECAlgorithm
	jwk = json.loads(algorithm.to_jwk(key.public_key()))
	jwk.update(kid=kid, **extra)
	return {k: v for k, v in jwk.items() if v is not None}


def verifier(*jwks: dict[str, Any], **settings: Any) -> JwtVerifier:
	v = JwtVerifier(OAuthSettings(issuer=ISSUER, audience=AUDIENCE, **settings))
	v._keys = parse_jwks({'keys': list(jwks)})
	v._fetched = v._tried = time.monotonic()
	return v


def token(key: Any, kid: str, alg: str = 'RS256', **claims: Any) -> str:
	now = int(time.time())
	body = {'iss': ISSUER, 'aud': AUDIENCE, 'sub': 'agent', 'exp': now + 300, **claims}
	return jwt.encode({k: v for k, v in body.items() if v is not None}, key, algorithm=alg, headers={'kid': kid})


def test_only_asymmetric_signing_keys_with_an_id_are_used() -> None:
	key = rsa_key()
	keys = parse_jwks(
		{
			'keys': [
				public_jwk(key, 'sig'),
				public_jwk(key, 'enc', use='enc'),
				public_jwk(key, None),
				public_jwk(key, 'hs', alg='HS256'),
				{'kty': 'oct', 'k': 'c2VjcmV0', 'kid': 'oct'},
				{'kty': 'RSA', 'kid': 'broken', 'n': '!!', 'e': 'AQAB'},
			]
		}
	)
	assert list(keys) == ['sig']
	assert 'RS256' in keys['sig'].algorithms and 'PS256' in keys['sig'].algorithms
	assert 'HS256' not in keys['sig'].algorithms


async def test_a_key_that_declares_its_algorithm_verifies_only_that_one() -> None:
	key = rsa_key()
	v = verifier(public_jwk(key, 'k', alg='RS256'))
	assert (await v.check(token(key, 'k'))).client_id == 'sub:agent'
	with pytest.raises(Refused, match='signed with PS256, which its key does not allow'):
		await v.check(token(key, 'k', alg='PS256'))


async def test_ec_keys_by_curve() -> None:
	key = ec.generate_private_key(ec.SECP256R1())
	v = verifier(public_jwk(key, 'ec'))
	assert (await v.check(token(key, 'ec', alg='ES256'))).client_id == 'sub:agent'


async def test_the_principal_claim_and_its_bounds() -> None:
	key = rsa_key()
	v = verifier(public_jwk(key, 'k'), principal_claim='email')
	assert (await v.check(token(key, 'k', email='ann@example.com'))).client_id == 'email:ann@example.com'
	for bad in (None, '', 'x' * 257, 'tab\there', ['a']):
		with pytest.raises(Refused, match="'email' claim is missing or not a short printable string"):
			await v.check(token(key, 'k', email=bad))


def test_scopes_from_scope_or_scp() -> None:
	assert token_scopes({'scope': 'a b'}) == ['a', 'b']
	assert token_scopes({'scp': ['a', 'c'], 'scope': 'a'}) == ['a', 'c']
	assert token_scopes({'scp': 'a b'}) == ['a', 'b']
	assert token_scopes({'scope': 3}) == []


async def test_the_sync_check_needs_the_required_scopes_too() -> None:
	key = rsa_key()
	v = verifier(public_jwk(key, 'k'), required_scopes=('mcp',))
	assert v.principal(token(key, 'k', scope='mcp')) == 'sub:agent'
	assert v.principal(token(key, 'k', scope='other')) is None
	assert v.principal(token(key, 'unknown', scope='mcp')) is None  # no fetch from a sync check


def test_where_the_issuer_metadata_is_looked_for() -> None:
	assert metadata_urls('https://id.example') == [
		'https://id.example/.well-known/oauth-authorization-server',
		'https://id.example/.well-known/openid-configuration',
	]
	assert metadata_urls('https://id.example/realms/a/') == [
		'https://id.example/.well-known/oauth-authorization-server/realms/a',
		'https://id.example/.well-known/openid-configuration/realms/a',
		'https://id.example/realms/a/.well-known/openid-configuration',
	]


async def test_an_oversized_token_is_refused_before_parsing() -> None:
	v = verifier(public_jwk(rsa_key(), 'k'))
	with pytest.raises(Refused, match='longer than'):
		await v.check('a' * 20000)
