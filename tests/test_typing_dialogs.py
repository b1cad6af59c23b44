"""Issue #26, the rest: typing that leaves autocompletes open, and JavaScript dialogs held for the
caller to answer. Through a real server (both isolation modes) on pages served from 127.0.0.1; every
check reads the page's own state back with browser_evaluate."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.support import Background, Mcp, isolation_modes, running_server

isolation = isolation_modes()

PAGES = {
	# opens on input, closes on blur: the behaviour of jQuery UI's autocomplete (without jQuery)
	'/autocomplete': """<label>City <input id="city" autocomplete="off"></label>
<ul id="menu" role="listbox" style="display:none"></ul>
<button id="other">Elsewhere</button>
<script>
const cities = ['Paris', 'Parma', 'Prague', 'Oslo'];
const city = document.getElementById('city'), menu = document.getElementById('menu');
window.log = [];
city.addEventListener('input', () => {
	window.log.push('input');
	const hits = cities.filter(c => city.value && c.toLowerCase().startsWith(city.value.toLowerCase()));
	menu.innerHTML = hits.map(c => '<li role="option">' + c + '</li>').join('');
	menu.style.display = hits.length ? 'block' : 'none';
});
city.addEventListener('blur', () => { window.log.push('blur'); menu.style.display = 'none'; });
city.addEventListener('change', () => window.log.push('change'));
</script>""",
}


class _Pages(BaseHTTPRequestHandler):
	def log_message(self, *args: object) -> None:
		pass

	def do_GET(self) -> None:  # noqa: N802
		body = PAGES.get(self.path.split('?')[0])
		data = f'<!doctype html><html><head><meta charset="utf-8"><title>{self.path}</title></head><body>{body}</body></html>'
		self.send_response(200 if body is not None else 404)
		self.send_header('Content-Type', 'text/html; charset=utf-8')
		self.send_header('Cache-Control', 'no-store')
		self.end_headers()
		self.wfile.write(data.encode())


@pytest.fixture(scope='module')
def pages() -> Iterator[str]:
	server = ThreadingHTTPServer(('127.0.0.1', 0), _Pages)
	threading.Thread(target=server.serve_forever, daemon=True).start()
	yield f'http://127.0.0.1:{server.server_address[1]}'
	server.shutdown()
	server.server_close()


@pytest.fixture(scope='module')
async def mcp(tmp_path_factory: pytest.TempPathFactory, isolation: str) -> AsyncIterator[Mcp]:
	async with Background(running_server(tmp_path_factory.mktemp('typing-home'), '--tools', 'all')) as server:
		yield server


SID = 'typing-test'


async def open_page(mcp: Mcp, url: str, session: str = SID) -> dict[str, Any]:
	await mcp.ok('browser_navigate', session_id=session, url=url)
	return await mcp.page_state(session)


def index_of(state: dict[str, Any], tag: str, nth: int = 0) -> int:
	found = [e['index'] for e in state['interactive_elements'] if e['tag'] == tag]
	assert len(found) > nth, f'no element {tag} in {state["interactive_elements"]}'
	return found[nth]


async def js(mcp: Mcp, expression: str, session: str = SID) -> Any:
	return (await mcp.ok('browser_evaluate', session_id=session, expression=expression)).structured['result']


async def test_typing_leaves_an_autocomplete_open(mcp: Mcp, pages: str) -> None:
	state = await open_page(mcp, f'{pages}/autocomplete')
	field = index_of(state, 'input')
	done = await mcp.ok('browser_type', session_id=SID, index=field, text='Par')
	assert 'left it' not in done.text
	shown = await js(mcp, '[menu.style.display, [...menu.children].map(li => li.textContent), window.log.includes("blur")]')
	assert shown == ['block', ['Paris', 'Parma'], False]
	assert await js(mcp, 'document.activeElement.id') == 'city'
	# the suggestions are elements of the next state, to be clicked
	state = await mcp.page_state(SID)
	assert any(e['text'] == 'Parma' for e in state['interactive_elements']) or 'Parma' in str(state)


async def test_typing_with_blur_leaves_the_field_as_a_user_would(mcp: Mcp, pages: str) -> None:
	state = await open_page(mcp, f'{pages}/autocomplete')
	done = await mcp.ok('browser_type', session_id=SID, index=index_of(state, 'input'), text='Os', blur=True)
	assert 'left it' in done.text
	assert await js(mcp, '[city.value, menu.style.display, window.log.includes("blur"), document.activeElement === city]') == [
		'Os',
		'none',
		True,
		False,
	]
