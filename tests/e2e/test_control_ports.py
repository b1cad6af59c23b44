"""No page can reach a browser's DevTools (issue #22): a hostile tenant's page scans every TCP
port the server's process tree listens on and tries what worked against a DevTools port on
loopback: read /json/list and /json/version in its own tab (same origin as the port, so
Chromium's own origin check does not apply), fetch and open websockets to them, close another
tenant's tab with /json/close, crash the browser. Another tenant's session must not notice.

Over HTTP with two tokens, in both isolation modes (shared Chromiums and a Chromium each).
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator

import psutil
import pytest

from harness.httpserver import HttpServer, connect, http_server
from tests.fixtures import isolation_modes

isolation = isolation_modes()
pytestmark = pytest.mark.usefixtures('isolation')

TOKENS = {name: f'{name}-token-{uuid.uuid4().hex}' for name in ('tenant-a', 'tenant-b')}
SECRET = f'secret-{uuid.uuid4().hex}'

# From the attacker's page: every way to talk to a port, each returning what it could read.
PROBE = """(async (port, paths) => {
	const fetches = paths.map(async (path) => {
		try {
			const r = await fetch(`http://127.0.0.1:${port}${path}`, {cache: 'no-store', signal: AbortSignal.timeout(3000)});
			return `fetch ${path} ${r.status} ${await r.text()}`;
		} catch (e) { return `fetch ${path} failed`; }
	});
	const sockets = ['/devtools/browser', '/devtools/browser/x', '/', '/mcp', ...paths.filter(p => p.startsWith('/devtools'))].map(
		(path) => new Promise(resolve => {
			let ws;
			try { ws = new WebSocket(`ws://127.0.0.1:${port}${path}`); } catch (e) { resolve(`ws ${path} refused`); return; }
			const timer = setTimeout(() => { try { ws.close(); } catch (e) {} resolve(`ws ${path} silent`); }, 2000);
			ws.onopen = () => ws.send(JSON.stringify({id: 1, method: 'Target.getTargets'}));
			ws.onmessage = (m) => { clearTimeout(timer); ws.close(); resolve(`ws ${path} ANSWERED ${m.data}`); };
			ws.onerror = () => { clearTimeout(timer); resolve(`ws ${path} error`); };
		}));
	return (await Promise.all([...fetches, ...sockets])).join('\\n');
})"""


@pytest.fixture(scope='module')
def server(tmp_path_factory: pytest.TempPathFactory, isolation: str) -> Iterator[HttpServer]:
	tokens = [arg for t in TOKENS.values() for arg in ('--auth-token', t)]
	with http_server(tmp_path_factory.mktemp('ports-home'), *tokens) as srv:
		yield srv


def listening_ports(pid: int) -> set[int]:
	"""Every TCP port the server and its process tree (its Chromiums above all) listen on."""
	root = psutil.Process(pid)
	ports = set()
	for proc in [root, *root.children(recursive=True)]:
		with contextlib.suppress(psutil.Error):
			for conn in proc.net_connections(kind='tcp'):
				if conn.status == psutil.CONN_LISTEN:
					ports.add(conn.laddr.port)
	return ports


async def body(mcp: object, session_id: str) -> str:
	result = await mcp.ok(  # type: ignore[attr-defined]
		'browser_evaluate', session_id=session_id, expression='document.body ? document.body.innerText : ""'
	)
	return str(result.structured['result'])


async def test_no_page_reaches_any_browser_control_port(server: HttpServer, site: str) -> None:
	victim_urls = {'victim': f'{site}/two?{SECRET}=own', None: f'{site}/one?{SECRET}=default'}
	async with connect(server, TOKENS['tenant-b']) as b, connect(server, TOKENS['tenant-a']) as a:
		for session_id, url in victim_urls.items():
			await b.ok('browser_navigate', url=url, **({'session_id': session_id} if session_id else {}))
		await a.ok('browser_navigate', session_id='probe', url=f'{site}/one')
		ports = listening_ports(server.pid)
		assert server.port in ports, ports
		seen: list[str] = []
		target_ids: set[str] = set()
		for port in sorted(ports):
			for path in ('/json/list', '/json/version', '/json', '/json/list?for_tab'):
				r = await a.call('browser_navigate', session_id='probe', url=f'http://127.0.0.1:{port}{path}')
				if r.is_error:
					continue
				text = await body(a, 'probe')
				seen.append(text)
				with contextlib.suppress(ValueError):
					listed = json.loads(text)
					for entry in listed if isinstance(listed, list) else [listed]:
						if isinstance(entry, dict) and entry.get('id'):
							target_ids.add(entry['id'])
			ws_paths = [p for t in seen for p in _devtools_paths(t)]
			# from a web page, and from a page of the port's own origin (where same-origin reads are allowed)
			for origin in (f'{site}/one', f'http://127.0.0.1:{port}/json/version'):
				await a.call('browser_navigate', session_id='probe', url=origin)
				probe = await a.call(
					'browser_evaluate',
					session_id='probe',
					expression=f'{PROBE}({port}, {json.dumps(["/json/list", "/json/version", *ws_paths])})',
				)
				seen.append(str(probe.structured['result']) if not probe.is_error else probe.text)
		# what worked against a DevTools port: close every tab it listed, then crash the browser
		for target in target_ids:
			await a.call(
				'browser_navigate', session_id='probe', url=f'http://127.0.0.1:{_port_of(seen, target)}/json/close/{target}'
			)
		everything = '\n'.join(seen)
		assert SECRET not in everything, "another tenant's URL leaked:\n" + everything[:3000]
		assert 'webSocketDebuggerUrl' not in everything and 'ANSWERED' not in everything, everything[:3000]
		for url in ('chrome://gpucrash', 'chrome://inducebrowsercrashforrealz'):
			r = await a.call('browser_navigate', session_id='probe', url=url)
			assert r.is_error and 'page of the browser itself' in r.text, r.text
		# the other tenant's tabs are where they were, and its sessions still work
		for session_id, url in victim_urls.items():
			ids = {'session_id': session_id} if session_id else {}
			state = (await b.ok('browser_get_state', **ids)).json()
			assert state['url'] == url, state['url']
			await b.ok('browser_navigate', url=f'{site}/two', **ids)
		await a.ok('browser_navigate', session_id='probe', url=f'{site}/two')


def _devtools_paths(text: str) -> list[str]:
	"""The ws:// paths a DevTools listing gave away (none, once nothing leaks)."""
	paths = []
	for word in text.replace('"', ' ').split():
		if word.startswith('ws://') and '/devtools/' in word:
			paths.append('/devtools/' + word.split('/devtools/', 1)[1])
	return paths


def _port_of(seen: list[str], target: str) -> str:
	for text in seen:
		if target in text:
			for word in text.replace('"', ' ').split():
				if word.startswith('ws://127.0.0.1:') and target in word:
					return word.split(':')[2].split('/')[0]
	return '0'
