"""``browser-use-mcp demo``: three agents, three isolated browser sessions, one MCP server, in a minute.

The demo is a real MCP client of a real server: it starts ``python -m browser_use_mcp`` as a
subprocess over stdio (headless, in a throw-away HOME and state directory, so the user's own
profile is never touched), serves a little login site on 127.0.0.1, and drives three sessions
in parallel. Every session signs in as a different user; only after *all* of them have signed
in does each read back who it is. If cookies were shared, the last sign-in would win and two
sessions would read the wrong name, so the read-back is a proof of isolation, not a smoke test.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import html
import io
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import parse_qs, urlparse

from browser_use_mcp.config import ServerConfig
from browser_use_mcp.processes import find_spawned_server, owned_processes, stop_server

USERS = ('alice', 'bob', 'carol')
COLORS = {'alice': '#2563eb', 'bob': '#15803d', 'carol': '#be185d'}
DEFAULT_OUTPUT = Path('demo-output') / 'contact-sheet.png'
COOKIE = 'demo_user'
CALL_TIMEOUT = 90.0
DEMO_TIMEOUT = 300.0
STEPS = ('start', 'login', 'tabs', 'read', 'shot')
STEP_LEGEND = (
	('start', "browser_create_session (a browser context, or with --isolation browser the session's own Chromium)"),
	('login', 'browser_navigate + browser_get_state + browser_type + browser_click, until /me has loaded'),
	('tabs', 'browser_navigate new_tab=true, once per extra tab'),
	('read', 'browser_evaluate (cookie jar, page) + browser_list_tabs'),
	('shot', 'browser_screenshot'),
)
_USER_RE = re.compile(r'^[a-z0-9_-]{1,32}$')


# -- the site ------------------------------------------------------------------------------


def _page(title: str, body: str, color: str = '#334155') -> bytes:
	style = (
		'body{margin:0;font:48px/1.4 sans-serif;background:#f8fafc;color:#0f172a}'
		f'header{{background:{color};color:#fff;padding:72px 96px;font-size:120px;font-weight:700}}'
		'main{padding:64px 96px}input,button{font-size:48px;padding:16px 24px;margin-right:24px}'
	)
	return (
		f'<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
		f'<style>{style}</style></head><body>{body}</body></html>'
	).encode()


class _SiteHandler(BaseHTTPRequestHandler):
	protocol_version = 'HTTP/1.1'

	def log_message(self, *args: object) -> None:
		pass  # the demo's own output is the table; request logs would bury it

	def _send(self, status: int, body: bytes = b'', headers: dict[str, str] | None = None) -> None:
		self.send_response(status)
		self.send_header('Content-Type', 'text/html; charset=utf-8')
		self.send_header('Content-Length', str(len(body)))
		self.send_header('Cache-Control', 'no-store')
		for key, value in (headers or {}).items():
			self.send_header(key, value)
		self.end_headers()
		self.wfile.write(body)

	def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
		path = urlparse(self.path).path
		if path == '/':
			form = (
				'<header>Demo shop</header><main><p>Sign in to see your account.</p>'
				'<form method="post" action="/login"><input name="user" placeholder="user name" autocomplete="off">'
				'<button type="submit">Sign in</button></form></main>'
			)
			self._send(200, _page('Sign in', form))
		elif path == '/me':
			jar = SimpleCookie(self.headers.get('Cookie', ''))
			user = jar[COOKIE].value if COOKIE in jar else ''
			if not user:
				self._send(200, _page('Not signed in', '<header>Not signed in</header><main><a href="/">Sign in</a></main>'))
				return
			body = (
				f'<header>Signed in as <span id="who">{html.escape(user)}</span></header>'
				f"<main><p>The server read <code>{COOKIE}={html.escape(user)}</code> from this browser's cookie.</p></main>"
			)
			self._send(200, _page(f'Signed in: {user}', body, COLORS.get(user, '#334155')))
		else:
			self._send(404, _page('Not found', '<main>404</main>'))

	def do_POST(self) -> None:  # noqa: N802
		if urlparse(self.path).path != '/login':
			self._send(404, _page('Not found', '<main>404</main>'))
			return
		length = min(int(self.headers.get('Content-Length') or 0), 4096)
		user = (parse_qs(self.rfile.read(length).decode('utf-8', 'replace')).get('user') or [''])[0].strip().lower()
		if not _USER_RE.match(user):
			self._send(400, _page('Bad user name', '<main>Use 1-32 letters, digits, - or _.</main>'))
			return
		# Not HttpOnly on purpose: the demo reads the cookie jar from the page as a second witness.
		self._send(303, headers={'Location': '/me', 'Set-Cookie': f'{COOKIE}={user}; Path=/; SameSite=Lax'})


class _QuietServer(ThreadingHTTPServer):
	daemon_threads = True

	def handle_error(self, request: Any, client_address: Any) -> None:
		"""A browser killed mid-keep-alive resets its connection; that is expected, not news."""
		if not isinstance(sys.exc_info()[1], ConnectionError):
			super().handle_error(request, client_address)


class DemoSite:
	"""The login site, on an ephemeral port of 127.0.0.1 only."""

	def __init__(self) -> None:
		self.httpd = _QuietServer(('127.0.0.1', 0), _SiteHandler)
		self._thread = threading.Thread(target=self.httpd.serve_forever, name='demo-site', daemon=True)

	@property
	def url(self) -> str:
		return f'http://127.0.0.1:{self.httpd.server_address[1]}'

	def __enter__(self) -> DemoSite:
		self._thread.start()
		return self

	def __exit__(self, *exc: object) -> None:
		self.httpd.shutdown()
		self.httpd.server_close()


# -- the server the demo talks to ----------------------------------------------------------


def server_environment(home: Path, config: ServerConfig, base: dict[str, str] | None = None) -> dict[str, str]:
	"""An environment that keeps every file the server writes inside ``home``.

	The user's browser-use settings and API keys are left out on purpose: the demo needs no
	LLM and must behave the same on every machine. Only the browser path is carried over.
	"""
	source = dict(os.environ if base is None else base)
	dropped = ('BROWSER_USE', 'OPENAI', 'ANTHROPIC', 'GOOGLE_API', 'GEMINI', 'AZURE_OPENAI', 'MODEL_PROVIDER')
	env = {k: v for k, v in source.items() if not k.startswith(dropped)}
	package_root = str(Path(__file__).resolve().parent.parent)
	env.update(
		HOME=str(home),
		XDG_CONFIG_HOME=str(home / '.config'),
		XDG_CACHE_HOME=str(home / '.cache'),
		XDG_RUNTIME_DIR='',
		BROWSER_USE_CONFIG_DIR=str(home / '.config' / 'browseruse'),
		BROWSER_USE_MCP_STATE_DIR=str(home / 'state'),
		BROWSER_USE_HEADLESS='true',
		BROWSER_USE_MCP_LOG_LEVEL=config.log_level if config.log_level != 'warning' else 'info',
		ANONYMIZED_TELEMETRY='false',
		PYTHONPATH=os.pathsep.join(p for p in (package_root, source.get('PYTHONPATH', '')) if p),
	)
	if config.executable_path:
		env['BROWSER_USE_MCP_CHROMIUM'] = config.executable_path
	env['BROWSER_USE_MCP_HEADLESS_SHELL'] = 'true' if config.headless_shell else 'false'
	env['BROWSER_USE_MCP_ISOLATION'] = config.isolation
	env['BROWSER_USE_MCP_CONTEXTS_PER_BROWSER'] = str(config.contexts_per_browser)
	env['BROWSER_USE_MCP_SPREAD_BROWSERS'] = str(config.spread_browsers)
	# The demo's site is on loopback; a proxy on a closed loopback port (last, so it wins) keeps
	# Chromium's own background connections to Google from leaving the machine.
	env['BROWSER_USE_MCP_CHROMIUM_ARGS'] = shlex.join((*config.chromium_args, '--proxy-server=http://127.0.0.1:9'))
	return env


def _profiles_of(pids: set[int]) -> set[str]:
	"""The distinct --user-data-dir of the browser main processes (renderers carry --type=)."""
	import psutil

	profiles = set()
	for pid in pids:
		with contextlib.suppress(psutil.Error):
			args = psutil.Process(pid).cmdline()
			if any(a.startswith('--type=') for a in args):
				continue
			profiles.update(a.split('=', 1)[1] for a in args if a.startswith('--user-data-dir='))
	return profiles


# -- driving three sessions ----------------------------------------------------------------


@dataclass
class SessionRun:
	"""What one simulated agent did and saw."""

	user: str
	tabs_wanted: int
	session_id: str = ''
	url: str = ''
	cookie_user: str = ''
	page_user: str = ''
	tabs: int = 0
	ms: dict[str, float] = field(default_factory=dict)
	screenshot: bytes | None = None
	error: str | None = None


class DemoError(Exception):
	"""A tool call failed; the message is the server's own error text."""


_AT_ME = 'for (let i = 0; i < 50 && location.pathname !== "/me"; i++) await new Promise(r => setTimeout(r, 100));'


class _Driver:
	"""Plays the agents: only tool calls, as any MCP client would make them, timed per step."""

	def __init__(self, client: Any, site: str) -> None:
		self.client = client
		self.site = site

	async def call(self, name: str, **arguments: Any) -> Any:
		result = await self.client.call_tool(name, arguments, read_timeout_seconds=CALL_TIMEOUT)
		if result.is_error:
			text = ' '.join(getattr(c, 'text', '') for c in result.content)
			raise DemoError(f'{name} failed: {text}')
		return result

	@staticmethod
	def text(result: Any) -> str:
		return next((c.text for c in result.content if getattr(c, 'type', None) == 'text'), '')

	async def step(self, run: SessionRun, name: str, coro: Any) -> Any:
		started = time.perf_counter()
		try:
			return await coro
		finally:
			run.ms[name] = run.ms.get(name, 0.0) + (time.perf_counter() - started) * 1000

	async def sign_in(self, run: SessionRun) -> None:
		"""Phase one: get a session and sign in through the form, like an agent would."""
		try:
			created = await self.step(run, 'start', self.call('browser_create_session'))
			run.session_id = json.loads(self.text(created))['session_id']
			await self.step(run, 'login', self._login(run))
		except Exception as exc:
			run.error = run.error or str(exc)

	async def _login(self, run: SessionRun) -> None:
		sid = run.session_id
		await self.call('browser_navigate', url=self.site + '/', session_id=sid)
		state = json.loads(self.text(await self.call('browser_get_state', session_id=sid)))
		elements = state.get('interactive_elements', [])
		field_index = next((e['index'] for e in elements if e.get('tag') == 'input'), None)
		button_index = next((e['index'] for e in elements if e.get('tag') == 'button'), None)
		if field_index is None or button_index is None:
			raise DemoError(f'the sign-in form was not found in browser_get_state: {elements}')
		await self.call('browser_type', index=field_index, text=run.user, session_id=sid)
		await self.call('browser_click', index=button_index, session_id=sid)
		# The sign-in counts only once /me has rendered, i.e. the cookie is set: that is what makes
		# "everyone signed in before anyone reads" true, and the read-back a proof.
		landed = await self.call(
			'browser_evaluate', expression=f'(async () => {{ {_AT_ME} return location.pathname; }})()', session_id=sid
		)
		if json.loads(self.text(landed)) != '/me':
			raise DemoError(f'signing in as {run.user} did not reach /me (the page is at {self.text(landed)})')

	async def read_back(self, run: SessionRun) -> None:
		"""Phase two, after every session signed in: open tabs, ask who we are, take a picture."""
		if run.error:
			return
		sid = run.session_id
		try:
			for _ in range(run.tabs_wanted - 1):
				await self.step(run, 'tabs', self.call('browser_navigate', url=self.site + '/me', new_tab=True, session_id=sid))
			run.ms.setdefault('tabs', 0.0)
			await self.step(run, 'read', self._read(run))
			shot = await self.step(run, 'shot', self.call('browser_screenshot', session_id=sid))
			image = next((c for c in shot.content if getattr(c, 'type', None) == 'image'), None)
			run.screenshot = base64.b64decode(image.data) if image is not None else None
		except Exception as exc:
			run.error = str(exc)

	async def _read(self, run: SessionRun) -> None:
		sid = run.session_id
		expression = (
			f'(async () => {{ {_AT_ME} const who = document.getElementById("who"); '
			'return {url: location.href, cookie: document.cookie, shown: who ? who.textContent : ""}; })()'
		)
		seen = json.loads(self.text(await self.call('browser_evaluate', expression=expression, session_id=sid)))
		run.url = seen.get('url', '')
		run.page_user = seen.get('shown', '')
		jar = SimpleCookie(seen.get('cookie', ''))
		run.cookie_user = jar[COOKIE].value if COOKIE in jar else ''
		tabs = json.loads(self.text(await self.call('browser_list_tabs', session_id=sid)))
		run.tabs = len(tabs)


@dataclass
class IsolationCheck:
	"""One line of the verdict: what must hold if the sessions were isolated, and whether it did."""

	ok: bool | None  # None: could not be checked here
	text: str


def isolation_checks(
	runs: list[SessionRun],
	listed: list[str] | None,
	profiles: set[str] | None,
	contexts_per_browser: int | None = None,
	spread: int = 1,
) -> list[IsolationCheck]:
	"""What must be true if, and only if, the sessions were isolated from each other.
	``contexts_per_browser``: the sessions are contexts of shared Chromiums, this many to one, spread
	over ``spread`` Chromiums before any hosts two (``--spread-browsers``)."""
	checks = []
	good = [r for r in runs if not r.error]
	checks.append(IsolationCheck(len(good) == len(runs), f'{len(good)} of {len(runs)} sessions completed every step'))
	ids = [r.session_id for r in runs if r.session_id]
	checks.append(IsolationCheck(len(ids) == len(runs) and len(set(ids)) == len(ids), f'{len(set(ids))} distinct session ids'))
	mine = all(r.cookie_user == r.user and r.page_user == r.user for r in runs)
	checks.append(
		IsolationCheck(
			mine and bool(runs),
			'each session reads back its own user, from its cookie jar and from the page the site rendered '
			'(all signed in before any read)',
		)
	)
	tabs_ok = all(r.tabs == r.tabs_wanted for r in runs)
	wanted = ', '.join(str(r.tabs_wanted) for r in runs)
	checks.append(IsolationCheck(tabs_ok, f'each session has exactly the tabs it opened ({wanted})'))
	if listed is None:
		checks.append(IsolationCheck(False, 'browser_list_sessions could not be read'))
	else:
		extra = sorted(set(listed) - set(ids))
		checks.append(
			IsolationCheck(
				bool(ids) and sorted(listed) == sorted(ids),
				f'browser_list_sessions shows exactly these {len(ids)} sessions'
				+ (f' (unexpected: {", ".join(extra)})' if extra else ''),
			)
		)
	if profiles is None:
		checks.append(IsolationCheck(None, 'separate browser processes (not visible from here; skipped)'))
	elif contexts_per_browser:
		shared = max(-(-len(runs) // contexts_per_browser), min(len(runs), spread))
		checks.append(
			IsolationCheck(
				len(profiles) == shared,
				f'{len(runs)} sessions as browser contexts of {len(profiles)} shared Chromium process(es) (expected {shared})',
			)
		)
	else:
		checks.append(
			IsolationCheck(len(profiles) == len(runs), f'{len(profiles)} Chromium processes, each on its own profile directory')
		)
	return checks


# -- output --------------------------------------------------------------------------------


def short_id(session_id: str) -> str:
	"""Minted ids share their time prefix; the random tail is what tells them apart."""
	if len(session_id) <= 18:
		return session_id or '-'
	return session_id[:8] + '…' + session_id[-8:]


def format_table(runs: list[SessionRun]) -> str:
	headers = ['session', 'URL', 'cookie user', 'tabs', *(f'{s} ms' for s in STEPS)]
	rows = []
	for run in runs:
		url = run.url.split('://', 1)[-1] if run.url else '-'
		ms = [f'{run.ms[s]:.0f}' if s in run.ms else '-' for s in STEPS]
		rows.append([short_id(run.session_id), url, run.cookie_user or '-', str(run.tabs), *ms])
	widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
	numeric = {3, *range(4, len(headers))}

	def line(cells: list[str]) -> str:
		return '  '.join(c.rjust(w) if i in numeric else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True)))

	out = [line(headers), line(['-' * w for w in widths])]
	out.extend(line(r) for r in rows)
	return '\n'.join(out)


def write_contact_sheet(runs: list[SessionRun], path: Path) -> Path:
	"""The three screenshots side by side, each under a bar naming its session and user."""
	from PIL import Image, ImageDraw, ImageFont

	tile_w, tile_h, bar, pad = 640, 360, 56, 16
	sheet = Image.new('RGB', (pad + len(runs) * (tile_w + pad), pad + bar + tile_h + pad), '#0f172a')
	draw = ImageDraw.Draw(sheet)
	try:
		font = ImageFont.load_default(size=22)
	except TypeError:  # Pillow without FreeType
		font = ImageFont.load_default()
	for i, run in enumerate(runs):
		x = pad + i * (tile_w + pad)
		draw.rectangle([x, pad, x + tile_w - 1, pad + bar - 1], fill=COLORS.get(run.user, '#334155'))
		label = f'{run.user}  ·  {short_id(run.session_id)}  ·  {run.tabs} tab{"s" if run.tabs != 1 else ""}'
		draw.text((x + 14, pad + 15), label, fill='white', font=font)
		if run.screenshot:
			shot = Image.open(io.BytesIO(run.screenshot)).convert('RGB')
			shot.thumbnail((tile_w, tile_h))
			sheet.paste(shot, (x, pad + bar))
		else:
			draw.rectangle([x, pad + bar, x + tile_w - 1, pad + bar + tile_h - 1], fill='#1e293b')
			draw.text((x + 14, pad + bar + 14), f'no screenshot: {(run.error or "")[:60]}', fill='#f87171', font=font)
	path.parent.mkdir(parents=True, exist_ok=True)
	sheet.save(path, 'PNG')
	return path


# -- the whole run -------------------------------------------------------------------------


@contextlib.contextmanager
def _scratch_home() -> Iterator[Path]:
	home = Path(tempfile.mkdtemp(prefix='browser-use-mcp-demo-'))
	try:
		yield home
	finally:
		shutil.rmtree(home, ignore_errors=True)


async def _run(config: ServerConfig, output: Path, out: TextIO, home: Path, server_log: TextIO) -> int:
	import psutil
	from mcp import Client, StdioServerParameters
	from mcp.client.stdio import stdio_client

	runs = [SessionRun(user, tabs_wanted=i + 1) for i, user in enumerate(USERS)]
	listed: list[str] | None = None
	profiles: set[str] | None = None
	server_pid: int | None = None
	with DemoSite() as site:
		params = StdioServerParameters(
			command=sys.executable,
			args=['-m', 'browser_use_mcp', '--headless'],
			env=server_environment(home, config),
			cwd=str(home),
		)
		before = {c.pid for c in psutil.Process().children()}
		print(f'  site    {site.url}  (served by this demo on loopback; nothing leaves this machine)', file=out)
		try:
			async with Client(
				stdio_client(params, errlog=server_log), mode='legacy', read_timeout_seconds=CALL_TIMEOUT
			) as client:
				server_pid = await asyncio.to_thread(find_spawned_server, before)
				print(f'  server  {sys.executable} -m browser_use_mcp --headless  (pid {server_pid}, stdio)', file=out)
				print(f'  agents  {", ".join(USERS)}: one session each, all at once\n', file=out, flush=True)
				driver = _Driver(client, site.url)
				await asyncio.gather(*(driver.sign_in(r) for r in runs))
				await asyncio.gather(*(driver.read_back(r) for r in runs))
				if server_pid is not None:
					profiles = _profiles_of(await asyncio.to_thread(owned_processes, server_pid))
				with contextlib.suppress(Exception):  # unread, the listing check below fails and says so
					listing = await driver.call('browser_list_sessions')
					listed = [s['session_id'] for s in (listing.structured_content or {}).get('sessions', [])]
				with contextlib.suppress(Exception):  # what it would have closed, stop_server kills and reports below
					await driver.call('browser_close_all')
		finally:
			leftovers = 0 if server_pid is None else await asyncio.to_thread(stop_server, server_pid)
	if leftovers:
		print(f'  note: had to kill {leftovers} leftover server/browser processes', file=out)

	print(format_table(runs), file=out)
	print('', file=out)
	for i, (step, meaning) in enumerate(STEP_LEGEND):
		print(f'  {"ms per step" if i == 0 else "":11}  {step:5}  {meaning}', file=out)
	print('', file=out)
	shared = config.contexts_per_browser if config.isolation == 'context' else None
	checks = isolation_checks(runs, listed, profiles, shared, config.spread_browsers)
	print('Isolation checks', file=out)
	for check in checks:
		mark = 'PASS' if check.ok else 'skip' if check.ok is None else 'FAIL'
		print(f'  {mark}  {check.text}', file=out)
	errors = [r for r in runs if r.error]
	for run in errors:
		print(f"  error in {run.user}'s session: {run.error}", file=out)
	if any(r.screenshot for r in runs):
		path = write_contact_sheet(runs, output)
		print(f'\nContact sheet: {path.resolve()}', file=out)
	held = all(c.ok is not False for c in checks)
	if held:
		print(f'\nIsolation held: {len(runs)} sessions, {len(runs)} users, no cookie or tab crossed over.', file=out)
		return 0
	print('\nIsolation NOT shown (see above). `browser-use-mcp doctor` checks this machine.', file=out)
	return 1


def run_demo(config: ServerConfig, output: Path | str | None = None, out: TextIO | None = None) -> int:
	"""Run the demo; 0 only if every isolation check passed. Always stops server and browsers."""
	from browser_use_mcp.browser import find_chromium

	out = out or sys.stdout
	target = Path(output) if output else DEFAULT_OUTPUT
	print('browser-use-mcp demo: three agents, three isolated browser sessions, one MCP server\n', file=out)
	if find_chromium(config.executable_path) is None:
		from browser_use_mcp.install import missing_browser_message

		print(missing_browser_message(config.executable_path) + ' `browser-use-mcp doctor` checks the rest.', file=out)
		return 1
	with _scratch_home() as home:
		log_path = home / 'server.log'
		with open(log_path, 'w', encoding='utf-8') as server_log:
			try:
				code = asyncio.run(asyncio.wait_for(_run(config, target, out, home, server_log), DEMO_TIMEOUT))
			except (Exception, TimeoutError) as exc:
				print(f'The demo failed: {type(exc).__name__}: {exc}', file=out)
				code = 1
			except KeyboardInterrupt:  # the server and browsers were stopped on the way out
				print('Interrupted.', file=out)
				return 130
		if code != 0:
			tail = log_path.read_text(encoding='utf-8', errors='replace').splitlines()[-25:]
			if tail:
				print('\nLast lines of the server log:', file=sys.stderr)
				print('\n'.join(tail), file=sys.stderr)
	return code
