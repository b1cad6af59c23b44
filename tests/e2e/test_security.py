"""Security boundaries a session's browser must respect."""

from __future__ import annotations

import http.server
import threading
from pathlib import Path

from tests.support import RawServer, server_env


async def test_navigate_refuses_a_disallowed_url_before_any_request(tmp_path: Path, site: str) -> None:
	"""browser-use blocks a disallowed navigation only after Chromium sent it; we refuse first."""
	hits: list[str] = []

	class Trap(http.server.BaseHTTPRequestHandler):
		def do_GET(self) -> None:  # noqa: N802
			hits.append(self.path)
			self.send_response(200)
			self.end_headers()

		def log_message(self, *args: object) -> None:
			pass

	trap = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Trap)
	threading.Thread(target=trap.serve_forever, daemon=True).start()
	home = tmp_path / 'home'
	allowed = site.split('://', 1)[1]
	server = await RawServer(home, env=server_env(home, BROWSER_USE_ALLOWED_DOMAINS=f'http://{allowed}')).start()
	try:
		async with server.client() as mcp:
			await mcp.ok('browser_navigate', session_id='guarded', url=f'{site}/two')
			r = await mcp.call('browser_navigate', session_id='guarded', url=f'http://localhost:{trap.server_address[1]}/secret')
			assert r.is_error and 'not allowed' in r.text, r.text
			assert hits == [], 'the disallowed URL was never requested'
			assert (await mcp.ok('browser_get_state', session_id='guarded')).json()['url'] == f'{site}/two'
			# the same guard covers a link opened in a new tab by browser_click
			trap_url = f'http://localhost:{trap.server_address[1]}/via-link'
			await mcp.ok(
				'browser_evaluate',
				session_id='guarded',
				expression=f'(() => {{ const a = document.createElement("a"); a.href = "{trap_url}"; a.textContent = "out"; document.body.appendChild(a); return true; }})()',
			)
			state = (await mcp.ok('browser_get_state', session_id='guarded')).json()
			link = next(e for e in state['interactive_elements'] if e.get('href') == trap_url)
			r = await mcp.call('browser_click', session_id='guarded', index=link['index'], new_tab=True)
			assert r.is_error and 'not allowed' in r.text, r.text
			assert hits == [], 'the disallowed link was never requested'
	finally:
		await server.stop()
		trap.shutdown()
		trap.server_close()
