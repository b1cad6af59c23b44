"""What a session's browser tries to reach beyond loopback, seen through a recording proxy.

Chromium itself preconnects to a few Google hosts at start whatever its flags say (documented in
docs/troubleshooting.md); everything the server or browser-use adds on top must be gone. The
proxy answers nothing, so no byte leaves the machine during this test either.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from harness.servers import RawServer, server_env

# Chromium's own start-up preconnects (not ours; see docs/troubleshooting.md#network).
CHROMIUM_PRECONNECTS = {'accounts.google.com', 'android.clients.google.com', 'www.google.com'}


async def test_sessions_add_no_traffic_beyond_chromiums_own(tmp_path: Path, site: str) -> None:
	seen: list[str] = []

	async def record(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
		with contextlib.suppress(Exception):
			line = (await asyncio.wait_for(reader.readline(), 5)).decode(errors='replace').split()
			if len(line) >= 2:
				target = line[1]
				host = target.split('://', 1)[-1].split('/', 1)[0].rsplit(':', 1)[0]
				seen.append(host)
			writer.write(b'HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n')
			await writer.drain()
		writer.close()

	proxy = await asyncio.start_server(record, '127.0.0.1', 0)
	port = proxy.sockets[0].getsockname()[1]
	home = tmp_path / 'home'
	server = await RawServer(
		home, env=server_env(home, BROWSER_USE_MCP_CHROMIUM_ARGS=f'--proxy-server=http://127.0.0.1:{port}')
	).start()
	try:
		async with server.client() as mcp:
			await mcp.ok('browser_navigate', session_id='net', url=f'{site}/')
			await mcp.ok('browser_navigate', session_id='net', url='about:blank', new_tab=True)
			await mcp.ok('browser_get_state', session_id='net', include_screenshot=True)
			await asyncio.sleep(4)
	finally:
		await server.stop()
		proxy.close()
	extra = set(seen) - CHROMIUM_PRECONNECTS
	assert 'cf.browser-use.com' not in extra, 'browser-use logo animation is disabled'
	assert 'clients2.google.com' not in extra, 'network time queries are disabled'
	assert extra == set(), f'unexpected hosts contacted: {sorted(extra)}'
