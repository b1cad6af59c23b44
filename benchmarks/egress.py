"""What the egress policy costs: ``.venv/bin/python -m benchmarks.egress [--repeats N]``.

For each isolation mode, two servers side by side (real MCP client over stdio, headless
Chromium, pages on 127.0.0.1): one without the policy, one with ``--block-private-networks``
and an operator allow-list naming the page server's address and port (the explicit allowance
that lets loopback through the door). Rounds alternate between them. Measured: a navigate to a
small page (p50), and a page with 50 subresources (25 scripts, 25 images, none cached): the
navigate call and the page's own load time (``loadEventEnd``). Prints a markdown table;
measurements, never pass/fail.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import threading
from http.server import ThreadingHTTPServer
from typing import Any
from urllib.parse import urlparse

from benchmarks.common import Server, median_ms, server, table

SUBRESOURCES = 50


def many_handler() -> type:
	from harness.pages import Handler, page

	class Many(Handler):
		def do_GET(self) -> None:  # noqa: N802
			path = urlparse(self.path).path
			if path == '/many':
				half = SUBRESOURCES // 2
				scripts = ''.join(f'<script src="/res/{i}.js"></script>' for i in range(half))
				images = ''.join(f'<img src="/res/{i}.svg" width="8" height="8">' for i in range(SUBRESOURCES - half))
				self._send(page('Many', images + scripts))
			elif path.startswith('/res/') and path.endswith('.js'):
				self._send(b'window.loaded = (window.loaded || 0) + 1;', ctype='text/javascript')
			elif path.startswith('/res/') and path.endswith('.svg'):
				self._send(b'<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"/>', ctype='image/svg+xml')
			else:
				super().do_GET()

	return Many


LOAD_MS = (
	'(() => { const t = performance.getEntriesByType("navigation")[0]; '
	'return [t.loadEventEnd - t.startTime, window.loaded || 0, document.images.length] })()'
)


async def round_of(srv: Server, site: str, sid: str, warm: int) -> dict[str, list[float]]:
	out: dict[str, list[float]] = {'navigate': [], 'many_call': [], 'many_load': []}
	for i in range(warm):
		_, elapsed = await srv.ok('browser_navigate', session_id=sid, url=f'{site}/{"two" if i % 2 else ""}')
		out['navigate'].append(elapsed)
	_, elapsed = await srv.ok('browser_navigate', session_id=sid, url=f'{site}/many')
	out['many_call'].append(elapsed)
	text, _ = await srv.ok('browser_evaluate', session_id=sid, expression=LOAD_MS)
	value = json.loads(text)
	load, scripts, images = value['result'] if isinstance(value, dict) else value
	if scripts != SUBRESOURCES // 2 or images != SUBRESOURCES - SUBRESOURCES // 2:
		raise RuntimeError(f'the page did not load every subresource: {scripts} scripts, {images} images')
	out['many_load'].append(load / 1000)
	return out


async def bench(repeats: int, warm: int) -> dict[str, Any]:
	from harness.pages import PageServer

	pages = PageServer()
	pages.httpd = ThreadingHTTPServer(('127.0.0.1', 0), many_handler())
	pages.httpd.daemon_threads = True
	pages.thread = threading.Thread(target=pages.httpd.serve_forever, daemon=True)
	out: dict[str, Any] = {}
	with pages:
		site = pages.url
		on_env = {'BROWSER_USE_ALLOWED_DOMAINS': site, 'BROWSER_USE_MCP_ALLOW_PRIVATE_NETWORKS': ''}
		for mode in ('browser', 'context'):
			async with (
				server('ours', '--isolation', mode) as off,
				server('ours', '--isolation', mode, '--block-private-networks', env_extra=on_env) as on,
			):
				runs: dict[str, dict[str, list[float]]] = {'off': {}, 'on': {}}
				for srv in (off, on):
					await srv.ok('browser_create_session', session_id='bench')
					await round_of(srv, site, 'bench', 2)  # first loads pay for starting up
				for _ in range(repeats):
					for label, srv in (('off', off), ('on', on)):
						for key, values in (await round_of(srv, site, 'bench', warm)).items():
							runs[label].setdefault(key, []).extend(values)
				# the policy is really in force on the "on" server
				text, error, _ = await on.call(
					'browser_navigate', session_id='bench', url=f'{site}/redirect?to=http://localhost:1234/'
				)
				if not error or 'egress policy' not in text:
					raise RuntimeError(f'the policy is not in force on the "on" server: {text[:200]}')
				out[mode] = {label: {k: median_ms(v) for k, v in r.items()} for label, r in runs.items()}
	return out


def show(r: dict[str, Any]) -> str:
	rows = []
	for mode, runs in r.items():
		for label, p50 in runs.items():
			rows.append([mode, label, p50['navigate'], p50['many_call'], p50['many_load']])
	header = [
		'isolation',
		'egress policy',
		'navigate p50 ms (small page)',
		f'navigate p50 ms ({SUBRESOURCES} subresources)',
		f'page load p50 ms ({SUBRESOURCES} subresources)',
	]
	return table('Egress policy: latency with the door off and on (same run, alternating rounds)', header, rows)


def main() -> None:
	parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
	parser.add_argument('--repeats', type=int, default=8, help='rounds per server (default 8)')
	parser.add_argument('--warm', type=int, default=6, help='small-page navigations per round (default 6)')
	args = parser.parse_args()
	print(show(asyncio.run(bench(args.repeats, args.warm))))


if __name__ == '__main__':
	main()
