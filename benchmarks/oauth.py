"""What --auth oauth costs per request, beside static tokens (docs/http.md#oauth). Prints figures;
asserts nothing.

    .venv/bin/python -m benchmarks.oauth [--requests N]

1. In process: one token check, static (``TokenPrincipals.verify_token``: a SHA-256 and a dict
   lookup) against OAuth (``JwtVerifier.check``: parse, RS256 verify, claims), with the keys of a real
   OpenID provider (tests/oidc/provider.mjs) on loopback; and an unknown kid's JWKS refetch.
2. End to end: N stateless ``tools/list`` POSTs (protocol 2026-07-28) to /mcp of the real server, once with a static token and once
   with --auth oauth and a client-credentials token, alternating per request; p50 and p95 of each.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import httpx


def _pct(values: list[float], q: float) -> float:
	ordered = sorted(values)
	return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def in_process(idp: object, rounds: int) -> None:
	from browser_use_mcp.oauth import JwtVerifier, OAuthSettings
	from browser_use_mcp.transports.http import TokenPrincipals
	from harness.oidc import AUDIENCE, new_key

	static_token = f'bench-{uuid.uuid4().hex}'
	static = TokenPrincipals([static_token])
	verifier = JwtVerifier(OAuthSettings(issuer=idp.issuer, audience=AUDIENCE, min_refresh=0))  # type: ignore[attr-defined]
	await verifier.discover()
	token = idp.token('agent-a')  # type: ignore[attr-defined]
	for label, check in (
		('static token', lambda: static.verify_token(static_token)),
		('OAuth JWT', lambda: verifier.check(token)),
	):
		for _ in range(50):
			await check()
		started = time.perf_counter()
		for _ in range(rounds):
			assert await check() is not None
		print(f'  {label:>13}: {(time.perf_counter() - started) / rounds * 1e6:8.1f} µs per check ({rounds} checks)')
	# an unknown kid: the keys are fetched again (one loopback round trip to the provider)
	idp.restart([new_key('k2'), *idp.keys])  # type: ignore[attr-defined]
	rotated = idp.token('agent-a')  # type: ignore[attr-defined]
	started = time.perf_counter()
	await verifier.check(rotated)
	print(f'  unknown kid, JWKS refetched: {(time.perf_counter() - started) * 1000:.1f} ms once, then as above')
	await verifier.close()


def end_to_end(idp: object, requests: int) -> None:
	from harness.httpserver import ACCEPT, MODERN, http_server
	from harness.oidc import oauth_server

	static_token = f'bench-{uuid.uuid4().hex}'
	meta = {'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {}}
	list_tools = {'jsonrpc': '2.0', 'id': 1, 'method': 'tools/list', 'params': {'_meta': meta}}
	home = Path(tempfile.mkdtemp(prefix='bench-oauth-'))
	with http_server(home / 'static', '--auth-token', static_token) as static, oauth_server(home / 'oauth', idp.issuer) as oauth:  # type: ignore[attr-defined]
		sides = {'static token': (static.url, static_token), 'OAuth JWT': (oauth.url, idp.token('agent-a'))}  # type: ignore[attr-defined]
		times: dict[str, list[float]] = {k: [] for k in sides}
		with httpx.Client(timeout=30) as client:
			for i in range(requests + 10):
				order = list(sides) if i % 2 == 0 else list(reversed(sides))
				for label in order:
					url, token = sides[label]
					started = time.perf_counter()
					reply = client.post(
						url,
						json=list_tools,
						headers={
							**ACCEPT,
							'MCP-Protocol-Version': MODERN,
							'Mcp-Method': 'tools/list',
							'Authorization': f'Bearer {token}',
						},
					)
					elapsed = (time.perf_counter() - started) * 1000
					assert reply.status_code == 200, reply.text
					if i >= 10:  # warm-up
						times[label].append(elapsed)
		for label, values in times.items():
			print(
				f'  {label:>13}: p50 {statistics.median(values):6.2f} ms, p95 {_pct(values, 0.95):6.2f} ms '
				f'({len(values)} stateless tools/list POSTs)'
			)


async def main() -> None:
	parser = argparse.ArgumentParser()
	parser.add_argument('--requests', type=int, default=300)
	parser.add_argument('--checks', type=int, default=2000)
	args = parser.parse_args()
	from harness.oidc import provider

	with provider(Path(tempfile.mkdtemp(prefix='bench-oidc-'))) as idp:
		print('token check, in process:')
		await in_process(idp, args.checks)
	with provider(Path(tempfile.mkdtemp(prefix='bench-oidc-'))) as idp:
		print('tools/list over HTTP (protocol 2026-07-28, stateless), end to end:')
		await asyncio.to_thread(end_to_end, idp, args.requests)


if __name__ == '__main__':
	asyncio.run(main())
