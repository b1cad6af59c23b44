"""Make docs/dashboard.png: the dashboard with three sessions, as a person sees it on a laptop.

    .venv/bin/python scripts/dashboard_screenshot.py [OUTPUT.png]

Starts the real HTTP server with a token, drives three sessions against the demo's loopback
site (alice and bob sign in, carol stays on the sign-in page), opens /dashboard in a headless
Chromium at 1440x900 and saves what it shows. Everything stays on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from browser_use_mcp.demo import DemoSite  # noqa: E402
from harness.httpserver import connect, http_server  # noqa: E402
from harness.servers import user_chromium  # noqa: E402
from tests.e2e.test_dashboard import Person  # noqa: E402


async def main(output: Path) -> None:
	token = f'shot-{uuid.uuid4().hex}'
	scratch = Path(tempfile.mkdtemp(prefix='dashboard-shot-'))
	with DemoSite() as site, http_server(scratch / 'home', '--auth-token', token) as server:
		async with connect(server, token) as mcp:
			for user in ('alice', 'bob', 'carol'):
				sid = f'research-{user}'
				await mcp.ok('browser_navigate', session_id=sid, url=f'{site.url}/')
				await mcp.ok('browser_get_state', session_id=sid)
				if user != 'carol':
					fill = f"document.querySelector('input').value = '{user}'; document.querySelector('form').submit(); 'sent'"
					await mcp.ok('browser_evaluate', session_id=sid, expression=fill)
					await asyncio.sleep(0.5)
					await mcp.ok('browser_get_state', session_id=sid)
			with user_chromium(scratch / 'person', '--window-size=1440,900') as (browser, _proc):
				async with Person.open(browser) as person:
					await person.go(f'http://127.0.0.1:{server.port}/dashboard?token={token}')
					await person.wait('document.querySelectorAll("#cards > li").length === 3')
					await person.wait('[...document.querySelectorAll(".thumb img")].every(i => i.classList.contains("loaded"))')
					await asyncio.sleep(1.5)  # titles come with the frames
					await person.screenshot(output)
	print(f'wrote {output}')


if __name__ == '__main__':
	asyncio.run(main(Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / 'docs' / 'dashboard.png'))
