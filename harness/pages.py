"""A tiny web site on 127.0.0.1 for the tests and benchmarks: forms, cookies, storage, links, tabs, slow pages.

Every page is static HTML built here; nothing leaves loopback.
"""

from __future__ import annotations

import base64
import email.parser
import email.policy
import hashlib
import html
import json
import threading
import time
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


def page(title: str, body: str, head: str = '') -> bytes:
	return (
		f'<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>{head}</head>'
		f'<body>{body}</body></html>'
	).encode()


ROUTES_DOC = {
	'/': 'home page with links and a button',
	'/two': 'second page',
	'/doc.pdf': 'a one-page PDF (application/pdf)',
	'/form': 'form with inputs',
	'/login?user=U': 'sets cookie user=U',
	'/whoami': 'shows the cookie user',
	'/storage?set=V': 'writes localStorage',
	'/signin?user=U&note=N': 'sets the HttpOnly cookie auth=U and localStorage note=N',
	'/me': 'title "Me: <auth cookie> / <localStorage note>" (nobody / none when unset)',
	'/signout': 'clears the auth cookie and localStorage note',
	'/slow?s=N': 'responds after N seconds',
	'/late-load?s=N': 'a page shown at once whose load event waits N seconds for an image',
	'/download': 'a file download',
	'/nothing': '204 No Content (a navigation there is aborted, nothing downloads)',
	'/long': 'a tall page for scrolling',
	'/popup': 'a link opening a new tab',
	'/epoch': 'buttons that record clicks (sessionStorage), add a row, replace themselves, re-render a field',
	'/epoch-frame': 'a same-origin iframe holding /epoch-inner, a button that records its clicks',
	'/rich': 'a bit of everything a page state shows: iframe, shadow DOM, listeners, hidden and disabled elements',
	'/console?tag=T&n=N': 'logs "hello T" (N times), warns, errors, throws; fetches a 404 and /pixel.png; a popup link',
	'/pixel.png': 'a 1x1 PNG',
	'/heavy': '~5,000 elements: a table, links, inputs, nested divs, a hidden section (benchmarks)',
	'/upload': 'a multipart form with a file input; POSTed, shows each file received: name, size and SHA-256',
}

# Elements a page state must describe alike whichever way it is captured: a same-origin iframe,
# an open shadow root, elements clickable only through a JS listener, hidden and disabled ones.
RICH = (
	'<h1>Rich</h1><nav><a href="/two">Two</a> <a href="/form">Form</a> <a href="#bottom">Bottom</a></nav>'
	'<form><input id="name" placeholder="your name"> <input type="checkbox" id="agree"> <select id="pick">'
	'<option>one</option><option>two</option></select> <textarea placeholder="notes"></textarea>'
	'<button type="button" disabled>Disabled</button></form>'
	'<div id="listener" style="cursor:pointer">Div with a click listener</div>'
	'<span id="pointer">Span with a pointerdown listener</span>'
	'<div id="host"></div><div style="display:none"><button>Hidden button</button><a href="/two">hidden link</a></div>'
	'<div contenteditable="true">Editable</div><details><summary>More</summary><a href="/two">inside details</a></details>'
	'<iframe id="frame" src="/epoch-inner" width="400" height="80"></iframe>'
	'<p id="bottom"><button onclick="this.textContent=\'pressed\'">Bottom button</button></p>'
	'<script>document.getElementById("listener").addEventListener("click", () => {});'
	'document.getElementById("pointer").addEventListener("pointerdown", () => {});'
	'const root = document.getElementById("host").attachShadow({mode: "open"});'
	'root.innerHTML = `<button id="shadow-button">Shadow button</button><input placeholder="shadow input">`;</script>'
)


def heavy_page() -> bytes:
	"""About 5,000 elements of the kinds real pages are made of (benchmarks' heavy page)."""
	parts = ['<h1>Heavy</h1><nav>', *(f'<a href="/two?n={i}">link {i}</a> ' for i in range(150)), '</nav>']
	parts.append('<table><thead><tr><th>#</th><th>name</th><th>value</th><th>edit</th><th>open</th></tr></thead><tbody>')
	for i in range(240):
		parts.append(
			f'<tr><td>{i}</td><td>item {i}</td><td><span>{i * 7 % 101}</span></td>'
			f'<td><input name="v{i}" placeholder="value {i}"></td><td><a href="/two?row={i}">open {i}</a></td></tr>'
		)
	parts.append('</tbody></table>')
	for i in range(250):
		parts.append(
			f'<div class="card"><div><div><p>card {i} <b>bold</b> <i>text</i></p><button>Act {i}</button></div></div></div>'
		)
	parts.append('<div style="display:none">')
	parts.extend(f'<div><button>hidden {i}</button><a href="/two">hidden link {i}</a></div>' for i in range(150))
	parts.append('</div><ul>')
	parts.extend(f'<li><label>option {i} <input type="checkbox"></label></li>' for i in range(150))
	parts.append('</ul>')
	return page('Heavy', ''.join(parts))


# Every click on /epoch (and in its iframe) is recorded in the tab's sessionStorage, which survives
# reloads and navigations: a test reads ``sessionStorage.clicks`` to know what was really clicked.
EPOCH_SCRIPT = """<script>
function record(what) { const log = window.top.sessionStorage; log.setItem('clicks', (log.getItem('clicks') || '') + what + ' '); }
function addRow() { record('add'); document.getElementById('rows').insertAdjacentHTML('beforeend', '<li><button onclick="record(`row`)">Row</button></li>'); }
function replaceMe(button) { record('replace'); button.outerHTML = button.outerHTML; }
function push() { record('push'); history.pushState({}, '', '?pushed=1'); }
function rerender() { record('rerender'); const field = document.getElementById('field'); field.innerHTML = field.innerHTML; }
</script>"""
EPOCH = (
	'<h1>Epoch</h1><button id="count" onclick="record(`count`)">Count</button> '
	'<button id="add" onclick="addRow()">Add row</button> '
	'<button id="replace" onclick="replaceMe(this)">Replace me</button> '
	'<button id="push" onclick="push()">Push</button> '
	'<button id="rerender" onclick="rerender()">Re-render</button> '
	'<a id="jump" href="#rows" onclick="record(`jump`)">Jump</a>'
	'<div id="field"><input id="name" placeholder="your name"></div><ul id="rows"></ul>'
)


PIXEL = base64.b64decode('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==')


# the pages of the action tools' tests and benchmark (hover, drag, select, scroll, wait, listbox, ...),
# served by ``harness.servers.html_pages``
ACTION_PAGES = {
	'/hover': """<style>#menu .sub{display:none} #menu:hover .sub{display:block} #menu{width:220px;padding:8px}</style>
<div id="menu" role="button" tabindex="0">Menu<div class="sub"><a href="#x" id="subitem">Sub item</a></div></div>
<button id="over" onmouseover="this.dataset.over='yes'">Hover target</button>
<div style="height:calc(100vh + 200px)"></div>
<button id="far" onmouseenter="this.dataset.over='yes'">Far target</button>""",
	'/drag': """<style>li{height:30px;width:200px;margin:4px;background:#ddd;cursor:move;list-style:none}
#src,#zone{width:150px;height:60px;margin:10px;background:#cde}</style>
<ul id="list"><li role="button" tabindex="0">Alpha</li><li role="button" tabindex="0">Beta</li>
<li role="button" tabindex="0">Gamma</li></ul>
<div id="src" draggable="true" role="button" tabindex="0">Drag source</div>
<div id="zone" role="button" tabindex="0">Drop zone</div>
<script>
let held = null;
const list = document.getElementById('list');
list.addEventListener('mousedown', (e) => { held = e.target.closest('li'); });
document.addEventListener('mouseup', (e) => {
	if (!held) return;
	const over = document.elementFromPoint(e.clientX, e.clientY);
	const li = over && over.closest('li');
	if (li && li !== held) list.insertBefore(held, li.nextSibling);
	held = null;
});
const src = document.getElementById('src'), zone = document.getElementById('zone');
src.addEventListener('dragstart', (e) => e.dataTransfer.setData('text/plain', 'payload-42'));
zone.addEventListener('dragover', (e) => e.preventDefault());
zone.addEventListener('drop', (e) => { e.preventDefault(); zone.textContent = 'dropped ' + e.dataTransfer.getData('text/plain'); });
</script>""",
	'/select': """<select id="single"><option value="">Choose</option><option value="r">Red</option>
<option value="g">Green</option><option value="b" disabled>Blue</option></select>
<select id="multi" multiple size="4"><option value="1">One</option><option value="2" selected>Two</option>
<option value="3">Three</option></select>
<button id="plain" onclick="this.dataset.clicked='yes'">Plain button</button>
<script>window.events = [];
for (const s of document.querySelectorAll('select')) for (const kind of ['input', 'change'])
	s.addEventListener(kind, () => window.events.push(s.id + ':' + kind));</script>""",
	'/scroll': """<div id="box" style="height:120px;width:300px;overflow:auto;border:1px solid">"""
	+ ''.join(f'<button style="display:block;height:30px">Row {i}</button>' for i in range(30))
	+ """</div><div style="height:3000px">tall page</div>""",
	'/wait': """<p id="status">Loading...</p><script>setTimeout(() => {
	document.getElementById('status').remove();
	const p = document.createElement('p'); p.id = 'late'; p.textContent = 'Loaded late'; document.body.appendChild(p);
}, 500);</script>""",
	'/listbox': """<div id="lb" role="listbox" aria-label="Fruit" tabindex="0">
<div role="option" id="apple" aria-selected="false">Apple</div><div role="option" id="pear" aria-selected="false">Pear</div></div>
<button id="cb" role="combobox" aria-controls="cb-list" aria-expanded="false">Pick a colour</button>
<ul id="cb-list" role="listbox" hidden><li role="option" data-value="red">Red</li><li role="option" data-value="blue">Blue</li></ul>
<script>
document.getElementById('cb').addEventListener('click', () => { const l = document.getElementById('cb-list'); l.hidden = !l.hidden; });
for (const box of document.querySelectorAll('[role=listbox]')) box.addEventListener('click', (e) => {
	const o = e.target.closest('[role=option]');
	if (!o) return;
	for (const x of box.querySelectorAll('[role=option]')) x.setAttribute('aria-selected', String(x === o));
	if (box.id === 'cb-list') { document.getElementById('cb').textContent = o.textContent; box.hidden = true; }
});
</script>""",
	'/upload': """<input id="f" type="file"> <label id="lab" style="cursor:pointer">Attach
<input id="hidden" type="file" style="display:none"></label> <button id="plain">Not an input</button>
<script>window.got = [];
for (const i of document.querySelectorAll('input')) i.addEventListener('change', async () => {
	for (const f of i.files) window.got.push([i.id, f.name, await f.text()]);
});</script>""",
	'/later': """<p>Moving on soon</p><script>setTimeout(() => { location.href = '/select'; }, 400);</script>""",
	'/dates': """<input id="d" type="date"> <input id="t" type="time"> <input id="dt" type="datetime-local">
<input id="m" type="month"> <input id="w" type="week"> <input id="text" type="text" placeholder="plain">
<script>window.changes = []; for (const i of document.querySelectorAll('input'))
	i.addEventListener('change', () => window.changes.push(i.id));</script>""",
}


# one empty page: enough for a browser to treat the URL as a PDF document
TINY_PDF = (
	b'%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj 2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj '
	b'3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 200 200]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n'
)


class Handler(BaseHTTPRequestHandler):
	protocol_version = 'HTTP/1.1'
	# headers and body go out in two writes: with Nagle's algorithm on, the body waited for the browser's
	# delayed ACK of the headers on a kept-alive connection, ~40 ms added to every page (web servers set
	# TCP_NODELAY)
	disable_nagle_algorithm = True

	def log_message(self, *args: object) -> None:
		pass

	def _send(self, body: bytes, status: int = 200, ctype: str = 'text/html; charset=utf-8', headers: dict | None = None) -> None:
		self.send_response(status)
		self.send_header('Content-Type', ctype)
		self.send_header('Content-Length', str(len(body)))
		self.send_header('Cache-Control', 'no-store')
		for k, v in (headers or {}).items():
			self.send_header(k, v)
		self.end_headers()
		self.wfile.write(body)

	def do_POST(self) -> None:  # noqa: N802
		length = int(self.headers.get('Content-Length') or 0)
		if urlparse(self.path).path == '/upload':  # the files as this server received them
			body = self.rfile.read(length)
			head = f'Content-Type: {self.headers.get("Content-Type", "")}\r\n\r\n'.encode()
			message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + body)
			got = [
				f'{part.get_filename()}:{len(data)}:{hashlib.sha256(data).hexdigest()}'
				for part in message.iter_parts()
				if part.get_filename() is not None
				for data in [part.get_payload(decode=True) or b'']
			]
			self._send(page('Received', ''.join(f'<p class="got">{html.escape(g)}</p>' for g in got) or '<p>no file</p>'))
			return
		data = parse_qs(self.rfile.read(length).decode())
		user = (data.get('user') or [''])[0]
		self._send(
			page('Logged in', f'<p id="who">logged in as {html.escape(user)}</p><a href="/whoami">who am i</a>'),
			headers={'Set-Cookie': f'user={user}; Path=/'},
		)

	def do_GET(self) -> None:  # noqa: N802
		url = urlparse(self.path)
		q = {k: v[0] for k, v in parse_qs(url.query).items()}
		cookies = SimpleCookie(self.headers.get('Cookie', ''))
		user = cookies['user'].value if 'user' in cookies else ''
		p = url.path
		if p == '/':
			self._send(
				page(
					'Home Page',
					'<h1>Home</h1><a id="to-two" href="/two">Go to two</a> '
					"<button id=\"btn\" onclick=\"document.title='Clicked';document.getElementById('out').textContent='clicked'\">Press me</button>"
					'<p id="out"></p><input id="q" placeholder="search here">',
				)
			)
		elif p == '/two':
			self._send(page('Page Two', '<h1>Two</h1><a href="/">back home</a>'))
		elif p == '/doc.pdf':
			self._send(TINY_PDF, ctype='application/pdf')
		elif p == '/upload':
			self._send(
				page(
					'Upload',
					'<form method="post" action="/upload" enctype="multipart/form-data">'
					'<input type="file" name="file" id="file"><button type="submit">Send</button></form>',
				)
			)
		elif p == '/form':
			self._send(
				page(
					'Form',
					'<form method="post" action="/login-form"><input name="user" id="user" placeholder="user name">'
					'<input name="email" id="email" placeholder="email"><button type="submit">Log in</button></form>'
					'<p id="echo"></p><script>document.getElementById("user").addEventListener("input",'
					' e => document.getElementById("echo").textContent = e.target.value)</script>',
				)
			)
		elif p == '/login':
			name = q.get('user', '')
			self._send(
				page('Logged in', f'<p id="who">logged in as {html.escape(name)}</p>'),
				headers={'Set-Cookie': f'user={name}; Path=/'},
			)
		elif p == '/whoami':
			self._send(page(f'Who: {user or "nobody"}', f'<p id="who">{html.escape(user or "nobody")}</p>'))
		elif p == '/storage':
			value = q.get('set')
			script = f'localStorage.setItem("v", {value!r});' if value else ''
			self._send(
				page(
					'Storage',
					f'<p id="v"></p><script>{script}document.getElementById("v").textContent = localStorage.getItem("v") || "empty"</script>',
				)
			)
		elif p == '/signin':
			name, note = q.get('user', ''), q.get('note', '')
			self._send(
				page(
					'Signed in',
					f'<p id="who">signed in as {html.escape(name)}</p><script>localStorage.setItem("note", {note!r})</script>',
				),
				headers={'Set-Cookie': f'auth={name}; Path=/; HttpOnly; SameSite=Lax'},
			)
		elif p == '/me':
			auth = cookies['auth'].value if 'auth' in cookies else ''
			script = f'document.title = "Me: " + {(auth or "nobody")!r} + " / " + (localStorage.getItem("note") || "none")'
			self._send(page('Me', f'<p id="who">{html.escape(auth or "nobody")}</p><script>{script}</script>'))
		elif p == '/signout':
			self._send(
				page('Signed out', '<script>localStorage.removeItem("note")</script>'),
				headers={'Set-Cookie': 'auth=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax'},
			)
		elif p == '/late-load':
			self._send(page('Late load', f'<p>shown</p><img alt="late" src="/slow?s={float(q.get("s", "0.3"))}">'))
		elif p == '/slow':
			time.sleep(float(q.get('s', '3')))
			self._send(page('Slow', '<p>slow done</p>'))
		elif p == '/download':
			self._send(
				b'hello download\n',
				ctype='application/octet-stream',
				headers={'Content-Disposition': 'attachment; filename="hello.txt"'},
			)
		elif p == '/nothing':
			self._send(b'', status=204)
		elif p == '/long':
			rows = ''.join(f'<p style="height:200px">row {i}</p>' for i in range(60))
			self._send(page('Long', rows))
		elif p == '/epoch':
			self._send(page('Epoch', EPOCH, EPOCH_SCRIPT))
		elif p == '/epoch-frame':
			frame = '<iframe id="inner" src="/epoch-inner" width="400" height="120"></iframe>'
			self._send(page('Epoch frame', frame, EPOCH_SCRIPT))
		elif p == '/epoch-inner':
			self._send(page('Inner', '<button id="inner-count" onclick="record(`inner`)">Inner count</button>', EPOCH_SCRIPT))
		elif p == '/headers':  # the request's headers, as the page server got them
			shown = html.escape(json.dumps({k.lower(): v for k, v in self.headers.items()}))
			self._send(page('Headers', f'<pre id="headers">{shown}</pre>'))
		elif p == '/rich':
			self._send(page('Rich', RICH))
		elif p == '/heavy':
			self._send(heavy_page())
		elif p == '/redirect':  # a 302 to ?to=
			self.send_response(302)
			self.send_header('Location', q.get('to', '/'))
			self.send_header('Content-Length', '0')
			self.end_headers()
		elif p == '/console':
			tag, n = json.dumps(q.get('tag', '')), int(q.get('n', '1'))
			script = (
				f'for (let i = 0; i < {n}; i++) console.log("hello " + {tag}); console.warn("careful warn");'
				'console.error("bad error"); fetch("/missing-404?token=s3cret").catch(() => {});'
				'const img = new Image(); img.src = "/pixel.png"; document.body.append(img);'
			)
			body = f'<a id="pop" href="/console?tag=pop" target="_blank">popup</a><script>{script}</script>'
			self._send(page('Console', body + '<script>throw new Error("boom uncaught")</script>'))
		elif p == '/pixel.png':
			self._send(PIXEL, ctype='image/png')
		elif p == '/popup':
			self._send(page('Popup', '<a id="pop" href="/two" target="_blank">open two in new tab</a>'))
		else:
			self._send(page('Not found', '<p>404</p>'), status=404)


class PageServer:
	def __init__(self) -> None:
		self.httpd = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
		self.httpd.daemon_threads = True
		self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

	@property
	def url(self) -> str:
		return f'http://127.0.0.1:{self.httpd.server_address[1]}'

	def __enter__(self) -> PageServer:
		self.thread.start()
		return self

	def __exit__(self, *exc: object) -> None:
		self.httpd.shutdown()
		self.httpd.server_close()
