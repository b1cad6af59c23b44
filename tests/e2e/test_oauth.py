"""--auth oauth end to end: a real OpenID provider (npm oidc-provider, tests/oidc/provider.mjs) on
loopback issues JWT access tokens by client credentials; the real server validates them against the
provider's JWKS; real MCP clients list tools and navigate real Chromium.

Tokens the provider would never issue (expired, another issuer, not yet valid) are signed here with
the provider's own key, so the only thing wrong with each is the one claim under test.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest

from harness.httpserver import ACCEPT, INITIALIZE, HttpServer, connect, free_port, session_ids
from harness.oidc import AUDIENCE, OTHER_AUDIENCE, SCOPE, Provider, new_key, oauth_server, provider
from harness.servers import wait_until


@pytest.fixture(scope='module')
def idp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
	with provider(tmp_path_factory.mktemp('oidc')) as p:
		yield p


@pytest.fixture(scope='module')
def server(tmp_path_factory: pytest.TempPathFactory, idp: Provider) -> Iterator[HttpServer]:
	with oauth_server(tmp_path_factory.mktemp('oauth-home'), idp.issuer) as srv:
		yield srv


def post(server: HttpServer, token: str | None) -> httpx.Response:
	headers = dict(ACCEPT)
	if token is not None:
		headers['Authorization'] = f'Bearer {token}'
	return httpx.post(server.url, json=INITIALIZE, headers=headers, timeout=30)


def metadata_url(server: HttpServer) -> str:
	return f'http://127.0.0.1:{server.port}/.well-known/oauth-protected-resource/mcp'


# -- accepted ----------------------------------------------------------------------------------


async def test_client_credentials_token_lists_tools_and_navigates(server: HttpServer, idp: Provider, site: str) -> None:
	token = idp.token('agent-a')
	async with connect(server, token) as mcp:
		tools = {t.name for t in (await mcp.client.list_tools()).tools}
		assert 'browser_navigate' in tools
		await mcp.ok('browser_navigate', url=f'{site}/two', session_id='oauth-nav')
		assert (await mcp.page_state('oauth-nav'))['url'] == f'{site}/two'
	# the stateless 2026-07-28 protocol carries the same token on every request
	async with connect(server, token, mode='auto') as modern:
		assert (await modern.page_state('oauth-nav'))['url'] == f'{site}/two'
		await modern.ok('browser_close_session', session_id='oauth-nav')
	assert token not in server.log_text()


async def test_two_subjects_do_not_see_each_others_sessions(server: HttpServer, idp: Provider, site: str) -> None:
	async with connect(server, idp.token('agent-a')) as a, connect(server, idp.token('agent-b')) as b:
		await a.ok('browser_navigate', url=f'{site}/two', session_id='shared-name')
		assert 'shared-name' in await session_ids(a)
		assert 'shared-name' not in await session_ids(b)
		# the same id is B's own, new session
		await b.ok('browser_navigate', url=f'{site}/form', session_id='shared-name')
		assert (await a.page_state('shared-name'))['url'] == f'{site}/two'
		assert (await b.page_state('shared-name'))['url'] == f'{site}/form'
		gone = await b.call('browser_close_session', session_id='nobody-has-this')
		assert gone.is_error
	# a new token of the same client is the same subject: its sessions are still there
	async with connect(server, idp.token('agent-a')) as again:
		assert 'shared-name' in await session_ids(again)
		await again.ok('browser_close_all')
	async with connect(server, idp.token('agent-b')) as b:
		assert 'shared-name' in await session_ids(b)
		await b.ok('browser_close_all')


async def test_legacy_sse_client_with_a_jwt(server: HttpServer, idp: Provider, site: str) -> None:
	"""The 1.x SDK's HTTP+SSE client with an access token: the same subject as over /mcp."""
	from tests.e2e.test_http_sse import run_v1_client

	sid = f'sse-{uuid.uuid4().hex[:8]}'
	code, report = await asyncio.to_thread(run_v1_client, server, idp.token('agent-a'), f'{site}/two', '--session-id', sid)
	assert code == 0, report
	assert report['state']['json']['url'] == f'{site}/two'
	async with connect(server, idp.token('agent-a')) as a, connect(server, idp.token('agent-b')) as b:
		assert sid in await session_ids(a)
		assert sid not in await session_ids(b)
		await a.ok('browser_close_session', session_id=sid)
	code, report = await asyncio.to_thread(run_v1_client, server, idp.forge(exp=1), f'{site}/two')
	assert (code, report) == (3, {'http_status': 401})


def test_protected_resource_metadata(server: HttpServer, idp: Provider) -> None:
	for path in ('/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource'):
		response = httpx.get(f'http://127.0.0.1:{server.port}{path}', timeout=30)
		assert response.status_code == 200, response.text
		document = response.json()
		assert document['resource'] == server.url
		assert document['authorization_servers'] == [idp.issuer] or document['authorization_servers'] == [idp.issuer + '/']
		assert document['scopes_supported'] == [SCOPE]
		assert document['bearer_methods_supported'] == ['header']


# -- refused -----------------------------------------------------------------------------------


def test_missing_token_gets_401_pointing_at_the_metadata(server: HttpServer) -> None:
	response = post(server, None)
	assert response.status_code == 401
	challenge = response.headers['WWW-Authenticate']
	assert challenge.startswith('Bearer ')
	assert f'resource_metadata="{metadata_url(server)}"' in challenge
	assert 'error=' not in challenge  # RFC 6750 §3.1: no error code when no token was sent


def test_a_host_that_makes_no_url_is_answered_not_crashed_on(server: HttpServer) -> None:
	headers = {**ACCEPT, 'Host': '%'}  # Starlette keeps it, no URL can hold it
	refused = httpx.post(server.url, json=INITIALIZE, headers=headers, timeout=30)
	assert refused.status_code == 401
	assert 'resource_metadata="/.well-known/oauth-protected-resource/mcp"' in refused.headers['WWW-Authenticate']
	document = httpx.get(f'http://127.0.0.1:{server.port}/.well-known/oauth-protected-resource', headers=headers, timeout=30)
	assert document.status_code == 400
	assert 'Traceback' not in server.log_text()


def _b64(data: dict[str, Any]) -> str:
	return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b'=').decode()


def bad_token(idp: Provider, kind: str) -> str:
	now = int(time.time())
	if kind == 'expired':
		return idp.forge(iat=now - 7200, exp=now - 3600)
	if kind == 'not-yet-valid':
		return idp.forge(nbf=now + 3600)
	if kind == 'wrong-issuer':
		return idp.forge(iss='http://127.0.0.1:1/not-the-issuer')
	if kind == 'wrong-audience':  # a real token, for another resource server
		return idp.token('agent-a', resource=OTHER_AUDIENCE)
	if kind == 'no-expiry':
		return idp.forge(exp=None)
	if kind == 'unsigned':  # alg none, claims of a real token
		real = idp.token('agent-a').split('.')
		header = {'alg': 'none', 'typ': 'at+jwt', 'kid': idp.keys[0]['kid']}
		return f'{_b64(header)}.{real[1]}.'
	if kind == 'hmac':  # signed with the public key as an HMAC secret (the algorithm-confusion attack)
		header = {'alg': 'HS256', 'typ': 'at+jwt', 'kid': idp.keys[0]['kid']}
		real = idp.token('agent-a').split('.')
		return f'{_b64(header)}.{real[1]}.{real[2]}'
	if kind == 'tampered':  # a real token whose payload says another subject
		head, payload, signature = idp.token('agent-a').split('.')
		claims = json.loads(base64.urlsafe_b64decode(payload + '=' * (-len(payload) % 4)))
		claims['sub'] = 'agent-b'
		return f'{head}.{_b64(claims)}.{signature}'
	if kind == 'unknown-key':
		other = Provider(idp.work, [new_key('not-published')])
		other.private = {'not-published': jwt.PyJWK(other.keys[0], 'RS256').key}
		other.issuer = idp.issuer
		return other.forge()
	if kind == 'garbage':
		return 'not-a-jwt'
	raise AssertionError(kind)


REFUSALS = {
	'expired': 'expired',
	'not-yet-valid': 'not valid yet',
	'wrong-issuer': 'not issued by',
	'wrong-audience': 'not for this server',
	'no-expiry': "no 'exp' claim",
	'unsigned': "signed with 'none'",
	'hmac': "signed with 'HS256'",
	'tampered': 'signature does not verify',
	'unknown-key': 'does not publish',
	'garbage': 'not a JWT',
}


@pytest.mark.parametrize('kind', list(REFUSALS))
def test_bad_tokens_get_401_invalid_token(server: HttpServer, idp: Provider, kind: str) -> None:
	response = post(server, bad_token(idp, kind))
	assert response.status_code == 401, response.text
	challenge = response.headers['WWW-Authenticate']
	assert 'error="invalid_token"' in challenge
	assert f'resource_metadata="{metadata_url(server)}"' in challenge
	assert REFUSALS[kind] in response.json()['error_description']
	# the same token is refused by the dashboard and the SSE transport too
	assert (
		httpx.get(
			f'http://127.0.0.1:{server.port}/sse', headers={'Authorization': f'Bearer {bad_token(idp, kind)}'}, timeout=30
		).status_code
		== 401
	)


def test_control_token_is_accepted(server: HttpServer, idp: Provider) -> None:
	"""What the refusals above are measured against: a forged token with nothing wrong passes."""
	assert post(server, idp.forge()).status_code == 200


def test_missing_scope_gets_403(server: HttpServer, idp: Provider) -> None:
	token = idp.token('agent-c', scope='other')
	response = post(server, token)
	assert response.status_code == 403, response.text
	challenge = response.headers['WWW-Authenticate']
	assert 'error="insufficient_scope"' in challenge and f'scope="{SCOPE}"' in challenge
	assert post(server, idp.forge(scope=None)).status_code == 403
	assert post(server, idp.forge(scope=None, scp=[SCOPE])).status_code == 200  # scp (a list) counts too


def test_dashboard_takes_a_jwt(server: HttpServer, idp: Provider) -> None:
	base = f'http://127.0.0.1:{server.port}'
	good = httpx.get(f'{base}/dashboard/api/sessions', headers={'Authorization': f'Bearer {idp.token("agent-a")}'}, timeout=30)
	bad = httpx.get(f'{base}/dashboard/api/sessions', headers={'Authorization': f'Bearer {idp.forge(exp=1)}'}, timeout=30)
	assert good.status_code == 200, good.text
	assert bad.status_code == 401


async def test_limits_are_per_subject(tmp_path: Path, idp: Provider, site: str) -> None:
	with oauth_server(tmp_path / 'home', idp.issuer, '--max-sessions-per-principal', '1', '--queue-timeout', '0') as server:
		async with connect(server, idp.token('agent-a')) as a, connect(server, idp.token('agent-b')) as b:
			await a.ok('browser_create_session', session_id='first')
			refused = await a.call('browser_create_session', session_id='second')
			assert refused.is_error and '--max-sessions-per-principal 1' in refused.text
			await b.ok('browser_create_session', session_id='first')  # another subject: its own share
			# a new token of the same subject is the same principal, at the same limit
			async with connect(server, idp.token('agent-a')) as again:
				assert (await again.call('browser_create_session', session_id='third')).is_error
			await a.ok('browser_close_all')
			await b.ok('browser_close_all')


# -- the issuer --------------------------------------------------------------------------------


def test_issuer_not_answering_is_a_start_up_error(tmp_path: Path) -> None:
	dead = f'http://127.0.0.1:{free_port()}'
	with pytest.raises(RuntimeError) as failed, oauth_server(tmp_path / 'home', dead):
		pass
	text = str(failed.value)
	assert 'exited with 2' in text
	assert f'cannot load the keys of the issuer {dead}' in text
	assert 'did not answer' in text


async def test_rotated_keys_are_picked_up_and_cached_keys_outlive_the_issuer(tmp_path: Path, site: str) -> None:
	with provider(tmp_path / 'oidc', 'k1') as idp, oauth_server(tmp_path / 'home', idp.issuer) as server:
		old = idp.token('agent-a')
		assert post(server, old).status_code == 200
		# the issuer rotates: it now signs with k2 and still publishes k1
		k1 = idp.keys[0]
		idp.restart([new_key('k2'), k1])
		new = idp.token('agent-a')
		assert jwt.get_unverified_header(new)['kid'] == 'k2'
		async with connect(server, new) as mcp:  # an unknown kid: the keys are fetched again
			await mcp.ok('browser_navigate', url=f'{site}/two', session_id='rotated')
		assert 'issuer keys changed: 1 added, 0 withdrawn' in server.log_text()
		assert post(server, old).status_code == 200

		# the issuer goes away: the cached keys keep working, a key it never published cannot be fetched
		idp.stop()
		assert post(server, new).status_code == 200
		assert post(server, old).status_code == 200
		stranger = post(server, bad_token(idp, 'unknown-key'))
		assert stranger.status_code == 401
		assert 'does not publish' in stranger.json()['error_description']
		assert wait_until(lambda: 'could not refresh the issuer keys; the 2 cached key(s) stay in use' in server.log_text())
		async with connect(server, new) as mcp:
			assert (await mcp.page_state('rotated'))['url'] == f'{site}/two'
			await mcp.ok('browser_close_all')

		# the issuer is back with yet another key: picked up as before
		idp.restart([new_key('k3'), *idp.keys])
		assert post(server, idp.token('agent-a')).status_code == 200
		assert 'the issuer answers again: 3 key(s) in use' in server.log_text()


# -- bad configuration -------------------------------------------------------------------------


@pytest.mark.parametrize(
	('flags', 'says'),
	[
		({}, '--auth oauth needs --issuer URL'),
		({'oauth_issuer': 'https://id.example'}, '--auth oauth needs --audience'),
		({'oauth_issuer': 'http://id.example', 'oauth_audience': 'a'}, 'must be an https:// URL (http:// only on loopback)'),
		({'oauth_issuer': 'https://id.example', 'oauth_audience': 'a', 'auth_tokens': ('t' * 20,)}, 'cannot be used together'),
		({'oauth_issuer': 'https://id.example', 'oauth_audience': 'a', 'transport': 'stdio'}, 'needs --transport http'),
		({'oauth_issuer': 'https://id.example', 'oauth_audience': 'a', 'oauth_principal_claim': ' '}, '--principal-claim'),
		({'oauth_issuer': 'https://id.example', 'oauth_audience': 'a', 'oauth_resource_url': 'browsers'}, '--resource-url'),
		({'auth': 'saml'}, 'auth must be token or oauth'),
	],
)
def test_bad_oauth_configuration_is_refused_at_start(flags: dict[str, Any], says: str) -> None:
	from browser_use_mcp.config import load_config

	cli = {'transport': 'http', 'auth': 'oauth', **flags}
	with pytest.raises(SystemExit) as refused:
		load_config({}, browser_use=False, **cli)
	assert says in str(refused.value)


def test_oauth_flags_and_environment() -> None:
	from browser_use_mcp.cli import build_parser, cli_overrides
	from browser_use_mcp.config import load_config

	ns = build_parser().parse_args(
		[
			'--transport',
			'http',
			'--auth',
			'oauth',
			'--issuer',
			'https://id.example',
			'--audience',
			'aud',
			'--required-scopes',
			'a, b c',
		]
	)
	config = load_config({}, browser_use=False, **cli_overrides(ns))
	assert (config.auth, config.oauth_issuer, config.oauth_audience) == ('oauth', 'https://id.example', 'aud')
	assert config.oauth_required_scopes == ('a', 'b', 'c') and config.oauth_principal_claim == 'sub'
	env = {
		'BROWSER_USE_MCP_TRANSPORT': 'http',
		'BROWSER_USE_MCP_AUTH': 'oauth',
		'BROWSER_USE_MCP_OAUTH_ISSUER': 'http://127.0.0.1:9999',
		'BROWSER_USE_MCP_OAUTH_AUDIENCE': 'aud',
		'BROWSER_USE_MCP_OAUTH_PRINCIPAL_CLAIM': 'email',
	}
	config = load_config(env, browser_use=False)
	assert (config.oauth_issuer, config.oauth_principal_claim) == ('http://127.0.0.1:9999', 'email')


async def test_doctor_checks_the_issuer(idp: Provider) -> None:
	from browser_use_mcp.config import load_config
	from browser_use_mcp.doctor import check_oauth_issuer

	def config(issuer: str) -> Any:
		return load_config({}, browser_use=False, transport='http', auth='oauth', oauth_issuer=issuer, oauth_audience=AUDIENCE)

	good = await check_oauth_issuer(config(idp.issuer))
	assert (good.status, good.summary) == ('ok', f'{idp.issuer}: 1 signing key(s) (RS256) from {idp.issuer}/jwks')
	dead = f'http://127.0.0.1:{free_port()}'
	bad = await check_oauth_issuer(config(dead))
	assert bad.status == 'fail' and f'cannot load the keys of {dead}' in bad.summary and 'did not answer' in bad.summary
