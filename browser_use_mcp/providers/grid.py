"""Sessions on a Selenium Grid 4: one Grid session (a Chromium on some node) per MCP session.

The Grid is asked for a Chrome session over WebDriver (``POST /session``) with our launch flags;
browser-use then drives it over the CDP websocket the Grid relays (``se:cdp``), never the node's
own ``debuggerAddress``, which only the node can reach.

The Grid does not close that websocket when its session ends (DELETE, a crashed browser, the
Grid's own idle timeout): browser-use would see a silent socket, time out after ~20 s on a
navigate, and read an empty page state without an error. So each session has a WebDriver
heartbeat (``GET /session/<id>/window/handles`` every second): it answers "invalid session id"
within milliseconds once the browser is gone, which we report as the usual one-time "browser
died" error, and it keeps an idle session alive on the Grid (CDP traffic does not count there).

Uploads go the other way: ``browser_upload_file`` copies the server's file to the node
(``/session/<id>/se/file``) and gives the browser the node's path (``GridEndpoint.upload``).

Downloads land on the node. With managed downloads (``se:downloadsEnabled``), the heartbeat
copies every finished file from ``/session/<id>/se/files`` into the session's own downloads
directory, and release does a last copy before the DELETE.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import json
import logging
import os
import urllib.parse
import zipfile
from pathlib import Path
from typing import Any

import httpx

from browser_use_mcp import browser
from browser_use_mcp.browser import SessionDirs, chromium_args
from browser_use_mcp.errors import BrowserStartFailed
from browser_use_mcp.files import GRID_PARTIAL
from browser_use_mcp.patches import internals
from browser_use_mcp.providers.base import BrowserProvider, Endpoint
from browser_use_mcp.session_options import SessionOptions
from browser_use_mcp.tasks import outside_scopes

logger = logging.getLogger('browser_use_mcp.providers.grid')

HEARTBEAT = 1.0  # s between WebDriver heartbeats of a session
HEARTBEAT_STRIKES = 3  # heartbeats in a row the Grid does not answer before its sessions count as lost
DOWNLOAD_SYNC_EVERY = 2  # heartbeats between two copies of a session's finished downloads
REQUEST_TIMEOUT = 10.0  # s for any Grid request but new-session
STATUS_PROBE_TIMEOUT = 2.0  # s a readiness probe waits for the Grid's /status

# flags that name paths or ports on this machine, meaningless (or harmful) on a node
LOCAL_ONLY_FLAGS = (
	'--user-data-dir',
	'--profile-directory',
	'--remote-debugging-port',
	'--remote-debugging-pipe',
	'--remote-debugging-address',
	'--load-extension',
	'--disable-extensions-except',
	'--disk-cache-dir',
)
PARTIAL_DOWNLOAD = ('.crdownload', '.part', '.tmp')
JSON_HEADERS = {'Content-Type': 'application/json; charset=utf-8'}  # the Grid refuses JSON without the charset


class GridError(Exception):
	"""The Grid answered with a WebDriver error (or not at all)."""

	def __init__(self, message: str, *, status: int = 0, error: str = '') -> None:
		super().__init__(message)
		self.status = status
		self.error = error


def grid_capabilities(args: list[str], extra: dict[str, Any]) -> dict[str, Any]:
	"""The new-session capabilities: Chrome with our flags and managed downloads, with the
	user's ``--grid-capabilities`` merged in (theirs win; their Chrome args are added to ours).
	``plan_request`` then drops managed downloads when no node offers them."""
	ours: dict[str, Any] = {
		'browserName': 'chrome',
		'se:downloadsEnabled': True,
		'goog:chromeOptions': {'args': [a for a in args if a.partition('=')[0] not in LOCAL_ONLY_FLAGS]},
	}
	merged = _merge(ours, extra)
	user_args = ((extra.get('goog:chromeOptions') or {}).get('args')) or []
	if user_args:
		merged['goog:chromeOptions']['args'] = ours['goog:chromeOptions']['args'] + [
			a for a in user_args if a not in ours['goog:chromeOptions']['args']
		]
	return merged


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
	out = dict(base)
	for key, value in extra.items():
		if isinstance(value, dict) and isinstance(out.get(key), dict):
			out[key] = _merge(out[key], value)
		else:
			out[key] = value
	return out


# W3C capabilities a node's slot must match, and extension prefixes the Grid leaves to the driver
MATCHED = ('browserName', 'browserVersion', 'platformName', 'se:downloadsEnabled')
DRIVER_PREFIXES = ('goog:', 'moz:', 'ms:', 'safari:', 'webkit:', 'se:')
NO_DOWNLOADS_NOTE = (
	'This download stays on the Selenium Grid node: the Grid at {url} runs without managed downloads, so '
	"files do not come back to this session's downloads directory. To get them here, start the nodes with "
	'--enable-managed-downloads true (or [node] enable-managed-downloads = true).'
)


def _offers(stereotype: dict[str, Any], name: str, wanted: Any) -> bool:
	"""Whether a slot with this stereotype offers capability ``name`` = ``wanted``, as Selenium's
	default slot matcher decides it; lenient where the stereotype says nothing."""
	have = stereotype.get(name)
	if name == 'se:downloadsEnabled':
		return not wanted or have is True
	if wanted in (None, '') or have in (None, ''):
		return True
	if name == 'browserVersion':
		return str(wanted).lower() == 'stable' or str(have) == str(wanted) or str(have).startswith(f'{wanted}.')
	if name in ('browserName', 'platformName'):
		return str(wanted).lower() in (str(have).lower(), 'any') or str(have).lower() == 'any'
	return have == wanted


def _constraints(caps: dict[str, Any]) -> dict[str, Any]:
	"""The capabilities of a request a slot must offer: the matched W3C ones and extension
	capabilities that are not a driver's own options."""
	return {k: v for k, v in caps.items() if k in MATCHED or (':' in k and not k.startswith(DRIVER_PREFIXES))}


def _up_slots(status: dict[str, Any]) -> list[dict[str, Any]]:
	return [
		slot
		for node in status.get('nodes', []) or []
		if node.get('availability', 'UP') == 'UP'
		for slot in node.get('slots', []) or []
	]


class RequestPlan:
	"""What to ask a Grid for, decided from its ``/status``: ``caps`` to send, whether managed
	downloads are on (None: unknown, the status could not be read), and ``problem``: why no node
	can ever take the request (then fail at once instead of queueing until the timeout)."""

	def __init__(self, caps: dict[str, Any], managed: bool | None, problem: str | None = None) -> None:
		self.caps = caps
		self.managed = managed
		self.problem = problem


def plan_request(url: str, status: dict[str, Any] | None, caps: dict[str, Any], user: dict[str, Any]) -> RequestPlan:
	"""Ask for managed downloads only where a node offers them (unless the user asked for them
	in ``--grid-capabilities``), and say at once when no node offers what is asked."""
	if status is None:
		return RequestPlan(caps, None)
	slots = _up_slots(status)
	wanted = _constraints(caps)
	if 'se:downloadsEnabled' not in user:
		others = {k: v for k, v in wanted.items() if k != 'se:downloadsEnabled'}
		fitting = [s for s in slots if all(_offers(s.get('stereotype') or {}, k, v) for k, v in others.items())]
		if not any((s.get('stereotype') or {}).get('se:downloadsEnabled') is True for s in fitting):
			caps = {k: v for k, v in caps.items() if k != 'se:downloadsEnabled'}
			wanted.pop('se:downloadsEnabled', None)
	if any(all(_offers(s.get('stereotype') or {}, k, v) for k, v in wanted.items()) for s in slots):
		return RequestPlan(caps, caps.get('se:downloadsEnabled') is True)
	if not slots:
		problem = f'The Selenium Grid at {url} has no node up (its /status lists no slot).'
	else:
		missing = [
			f'{k}={json.dumps(v)}' for k, v in wanted.items() if not any(_offers(s.get('stereotype') or {}, k, v) for s in slots)
		]
		offered = sorted({json.dumps(_constraints(s.get('stereotype') or {}), sort_keys=True) for s in slots})
		what = (
			', '.join(missing) if missing else 'the combination ' + ', '.join(f'{k}={json.dumps(v)}' for k, v in wanted.items())
		)
		problem = (
			f'The Selenium Grid at {url} has no node that offers {what} (its {len(slots)} slot(s) offer: '
			f'{"; ".join(offered)}). Change --grid-capabilities to match a node, or add a node that offers it.'
		)
	return RequestPlan(caps, None, problem)


class GridClient:
	"""The few WebDriver and Grid calls we make, on one pooled HTTP client (no proxy from the
	environment: the Grid URL is reached as given)."""

	def __init__(self, url: str) -> None:
		self.url = url.rstrip('/')
		self._http: httpx.AsyncClient | None = None

	@property
	def http(self) -> httpx.AsyncClient:
		if self._http is None:
			self._http = httpx.AsyncClient(base_url=self.url, trust_env=False, timeout=REQUEST_TIMEOUT)
		return self._http

	async def call(self, method: str, path: str, body: Any = None, timeout: float = REQUEST_TIMEOUT) -> Any:
		"""The ``value`` of a WebDriver answer; GridError for an error answer or no answer."""
		try:
			content = json.dumps(body).encode() if body is not None else None
			reply = await self.http.request(method, path, content=content, headers=JSON_HEADERS, timeout=timeout)
		except httpx.HTTPError as exc:
			raise GridError(f'the Grid at {self.url} did not answer ({type(exc).__name__}: {exc})') from None
		try:
			value = reply.json().get('value')
		except (ValueError, AttributeError):
			value = None
		if reply.status_code >= 400:
			error = value.get('error', '') if isinstance(value, dict) else ''
			message = value.get('message', '') if isinstance(value, dict) else reply.text[:300]
			raise GridError(f'{error or reply.status_code}: {first_line(message)}', status=reply.status_code, error=error)
		return value

	async def status(self) -> dict[str, Any]:
		return await self.call('GET', '/status', timeout=5.0) or {}

	async def close(self) -> None:
		if self._http is not None:
			await self._http.aclose()
			self._http = None


def first_line(text: str) -> str:
	return (text or '').strip().splitlines()[0][:300] if (text or '').strip() else ''


class GridEndpoint(Endpoint):
	is_local = False

	def __init__(self, provider: GridProvider, session_id: str, cdp_url: str, downloads: Path) -> None:
		super().__init__()
		self.provider = provider
		self.session_id = session_id
		self.cdp_url = cdp_url
		self.node = ''
		self.where = 'grid'
		self.downloads = downloads
		self._fetched: set[str] = set()
		self._gone: str | None = None
		self.managed_downloads = True  # the node copies downloads back (se:downloadsEnabled)
		self._notes: list[str] = []
		self._download_noted = False
		self.delete_url = f'{provider.client.url}/session/{session_id}'
		if browser.SIDECAR is not None:  # a killed server's Grid sessions end with it, not minutes later
			browser.SIDECAR.track_remote(self.delete_url)
		with outside_scopes():  # ours to stop in release, not browser-use's
			self._heartbeat = asyncio.get_running_loop().create_task(self._beat(), name=f'grid-heartbeat-{session_id[:8]}')

	def download_began(self) -> None:
		if not self.managed_downloads and not self._download_noted:
			self._download_noted = True
			self._notes.append(NO_DOWNLOADS_NOTE.format(url=self.client.url))

	def take_notes(self) -> list[str]:
		notes, self._notes = self._notes, []
		return notes

	def placed_on(self, node: str) -> None:
		self.node = node
		self.where = f'grid {node}' if node else 'grid'

	@property
	def client(self) -> GridClient:
		return self.provider.client

	def alive(self) -> bool:
		return self._gone is None

	def death_detail(self) -> str:
		return self._gone or ''

	async def _beat(self) -> None:
		strikes = 0
		beats = 0
		while True:
			await asyncio.sleep(self.provider.heartbeat)
			try:
				await self.client.call('GET', f'/session/{self.session_id}/window/handles', timeout=5.0)
			except GridError as exc:
				if exc.status == 404 or exc.error == 'invalid session id':  # what a dead browser's session answers
					self._lost(f'its Selenium Grid session ended ({exc})')
					return
				strikes += 1  # no answer, or an error that may pass: a Grid restarting, a proxy in front of it
				if strikes < HEARTBEAT_STRIKES:
					continue
				self._lost(f'the Selenium Grid at {self.client.url} stopped answering ({exc})')
				return
			strikes = 0
			beats += 1
			if self.managed_downloads and beats % DOWNLOAD_SYNC_EVERY == 0:
				with contextlib.suppress(GridError, OSError):
					await self.sync_downloads()

	def _lost(self, detail: str) -> None:
		if self.releasing:
			return
		self._gone = detail
		logger.warning('grid session %s on %s: %s', self.session_id, self.node or self.client.url, detail)
		self.died()

	async def sync_downloads(self) -> list[str]:
		"""Copy finished downloads the node holds for this session that we do not have yet."""
		listing = await self.client.call('GET', f'/session/{self.session_id}/se/files') or {}
		new = [
			n for n in listing.get('names', []) if n not in self._fetched and not n.endswith(PARTIAL_DOWNLOAD) and safe_name(n)
		]
		for name in new:
			value = await self.client.call('POST', f'/session/{self.session_id}/se/files', {'name': name}, timeout=60.0)
			data = unpack_download(value.get('contents', ''), name)
			await asyncio.to_thread(write_download, self.downloads, name, data)
			self._fetched.add(name)
		return new

	async def upload(self, path: Path) -> str:
		"""Copy a file of this server to the node (WebDriver ``POST /session/<id>/se/file``, a base64 zip
		holding it, as Selenium's clients send it) and return the node's path of the copy: the browser
		there can read that one, never ours."""
		packed = await asyncio.to_thread(pack_upload, path)
		value = await self.client.call('POST', f'/session/{self.session_id}/se/file', {'file': packed}, timeout=60.0)
		if not isinstance(value, str) or not value:
			raise GridError(f'the Grid at {self.client.url} took the file but gave no path for it on the node')
		return value

	async def release(self, graceful: bool = False) -> None:
		self.releasing = True
		self._heartbeat.cancel()
		with contextlib.suppress(asyncio.CancelledError, Exception):
			await self._heartbeat
		if self._gone is None and self.managed_downloads:
			try:
				await self.sync_downloads()
			except (GridError, OSError) as exc:
				logger.warning('could not copy the downloads of grid session %s: %s', self.session_id, exc)
		with contextlib.suppress(GridError):
			await self.client.call('DELETE', f'/session/{self.session_id}')
		if browser.SIDECAR is not None:
			browser.SIDECAR.untrack_remote(self.delete_url)
		self.provider.endpoints.discard(self)


def reachable_cdp_url(grid_url: str, cdp_url: str) -> str:
	"""``se:cdp`` on the Grid's host and port as we reach it: a Grid behind a proxy or in a
	container may name an address (0.0.0.0, its pod IP) we cannot connect to."""
	ours = urllib.parse.urlsplit(grid_url)
	theirs = urllib.parse.urlsplit(cdp_url)
	prefix = ours.path.rstrip('/')
	path = theirs.path if not prefix or theirs.path.startswith(prefix + '/') else prefix + theirs.path
	return urllib.parse.urlunsplit(('wss' if ours.scheme == 'https' else 'ws', ours.netloc, path, theirs.query, ''))


def safe_name(name: str) -> bool:
	return bool(name) and name == os.path.basename(name) and name not in ('.', '..')


def unpack_download(contents: str, name: str) -> bytes:
	"""The Grid sends a downloaded file as a base64 zip archive holding it."""
	with zipfile.ZipFile(io.BytesIO(base64.b64decode(contents))) as archive:
		members = archive.namelist()
		member = name if name in members else members[0]
		return archive.read(member)


def pack_upload(path: Path) -> str:
	"""The file as the Grid's upload endpoint takes it: a zip archive holding it alone, base64-encoded."""
	buffer = io.BytesIO()
	with zipfile.ZipFile(buffer, 'w', zipfile.ZIP_DEFLATED) as archive:
		archive.write(path, path.name)
	return base64.b64encode(buffer.getvalue()).decode('ascii')


def write_download(directory: Path, name: str, data: bytes) -> None:
	directory.mkdir(parents=True, exist_ok=True)
	partial = directory / f'.{name}{GRID_PARTIAL}'
	partial.write_bytes(data)
	partial.replace(directory / name)


class GridProvider(BrowserProvider):
	"""A Selenium Grid session per browser."""

	network_ours = False  # the node reaches the web through its own network: no egress door (docs/security.md)
	unsupported_options = {  # noqa: RUF012
		'proxy': 'a Selenium Grid node reaches the web through its own network settings; this server cannot route a '
		'Grid session through a proxy of your choice',
	}

	def __init__(
		self,
		url: str,
		*,
		capabilities: dict[str, Any],
		profile_base: dict[str, Any],
		headless: bool,
		user_args: tuple[str, ...] = (),
		create_timeout: float = 30.0,
		heartbeat: float = HEARTBEAT,
	) -> None:
		super().__init__(profile_base=profile_base, headless=headless)
		self.client = GridClient(url)
		self.capabilities = capabilities
		self.user_args = user_args
		self.create_timeout = create_timeout
		self.heartbeat = heartbeat
		self.endpoints: set[GridEndpoint] = set()
		self.waiting = 0  # new-session requests waiting for a slot (the Grid queues them)

	async def endpoint(self, dirs: SessionDirs, profile: Any, options: SessionOptions | None = None) -> GridEndpoint:
		caps = grid_capabilities(chromium_args(profile, user_args=self.user_args), self.capabilities)
		plan = plan_request(self.client.url, await self._status(), caps, self.capabilities)
		if plan.problem:  # no node could ever take it: the Grid would queue it until the timeout
			raise BrowserStartFailed(plan.problem)
		request = self.client.call('POST', '/session', {'capabilities': {'alwaysMatch': plan.caps}}, timeout=None)
		self.waiting += 1
		try:
			# giving up closes the connection, which takes the request out of the Grid's queue
			value = await asyncio.wait_for(request, self.create_timeout)
		except TimeoutError:
			raise BrowserStartFailed(await self._capacity_message(plan.caps)) from None
		except GridError as exc:
			raise BrowserStartFailed(self._refusal_message(exc)) from None
		finally:
			self.waiting -= 1
		session_id = value['sessionId']
		returned = value.get('capabilities') or {}
		cdp_url = returned.get('se:cdp')
		if not cdp_url:
			with contextlib.suppress(GridError):
				await self.client.call('DELETE', f'/session/{session_id}')
			raise BrowserStartFailed(
				f'The Selenium Grid at {self.client.url} gave a session without a CDP endpoint (no se:cdp capability). '
				'Use Grid 4 with Chrome or Chromium nodes; CDP must not be disabled on the Grid.'
			)
		endpoint = GridEndpoint(self, session_id, reachable_cdp_url(self.client.url, cdp_url), dirs.downloads)
		endpoint.managed_downloads = returned.get('se:downloadsEnabled') is True
		self.endpoints.add(endpoint)  # tracked (and deleted by the sidecar if we die) before anything else can fail
		endpoint.placed_on(await self._node_of(session_id))
		return endpoint

	async def open(self, dirs: SessionDirs, options: SessionOptions | None = None) -> Any:
		opened = await super().open(dirs, options)
		endpoint = opened.endpoint
		# downloads go where the node puts them (with managed downloads, its own directory, copied
		# back by the heartbeat), not to a path browser-use named on this machine
		with contextlib.suppress(Exception):
			await opened.session.cdp_client.send.Browser.setDownloadBehavior(
				params={'behavior': 'default', 'eventsEnabled': True}
			)
		if not endpoint.managed_downloads:  # they stay on the node: say so once, after the first began
			with contextlib.suppress(Exception):
				root = internals.root_cdp_client(opened.session) or opened.session.cdp_client
				internals.hook_cdp_event(root, 'Browser.downloadWillBegin', lambda params, sid: endpoint.download_began())
		return opened

	async def _status(self) -> dict[str, Any] | None:
		with contextlib.suppress(GridError):
			status = await self.client.status()
			return status if isinstance(status, dict) else None
		return None

	async def _node_of(self, session_id: str) -> str:
		with contextlib.suppress(GridError, AttributeError, TypeError):
			for node in (await self.client.status()).get('nodes', []):
				for slot in node.get('slots', []):
					if ((slot.get('session') or {}).get('sessionId')) == session_id:
						return node.get('uri', '')
		return ''

	async def _capacity_message(self, caps: dict[str, Any]) -> str:
		busy = ''
		with contextlib.suppress(GridError, AttributeError, TypeError):
			slots = _up_slots(await self.client.status())
			used = sum(1 for slot in slots if slot.get('session'))
			wanted = _constraints(caps)
			free = [
				s
				for s in slots
				if not s.get('session') and all(_offers(s.get('stereotype') or {}, k, v) for k, v in wanted.items())
			]
			if free:  # not capacity: a slow node, or nodes that will not take what we asked for
				asked = ', '.join(f'{k}={json.dumps(v)}' for k, v in wanted.items())
				return (
					f'The Selenium Grid at {self.client.url} started no browser within {self.create_timeout:g} s although '
					f'{len(slots) - used} of {len(slots)} browser slots are free: its nodes are slow to start a browser, '
					f'or do not accept the request ({asked}). Retry or raise --grid-timeout; if it persists, check '
					"--grid-capabilities against the nodes' stereotypes and the node logs (run `browser-use-mcp doctor`)."
				)
			busy = f' ({used} of {len(slots)} browser slots busy)'
		return (
			f'The Selenium Grid at {self.client.url} is at capacity: no browser slot became free within '
			f'{self.create_timeout:g} s{busy}. Retry later, close sessions you no longer need, raise '
			'--grid-timeout, or add Grid nodes.'
		)

	def _refusal_message(self, exc: GridError) -> str:
		if exc.status == 0:
			return f'{exc}. Check that the Selenium Grid is running and that --grid-url is its address.'
		return (
			f'The Selenium Grid at {self.client.url} refused to create a browser: {exc}. Check that it has a '
			'Chrome/Chromium node matching --grid-capabilities (run `browser-use-mcp doctor`).'
		)

	async def problem(self) -> str | None:
		try:
			status = await self.client.call('GET', '/status', timeout=STATUS_PROBE_TIMEOUT)
		except GridError as exc:
			return f'the Selenium Grid at {self.client.url} does not answer: {exc}'
		if not isinstance(status, dict) or not status.get('ready'):
			message = status.get('message', '') if isinstance(status, dict) else ''
			return f'the Selenium Grid at {self.client.url} is not ready' + (f': {message}' if message else '')
		return None

	async def shutdown(self) -> None:
		for endpoint in list(self.endpoints):
			await endpoint.release()
		await self.client.close()


def grid_summary(status: dict[str, Any]) -> tuple[bool, int, int, str]:
	"""(ready, chrome slots, busy chrome slots, message) from a Grid's ``/status`` value."""
	slots = [
		slot
		for node in status.get('nodes', [])
		if node.get('availability', 'UP') == 'UP'
		for slot in node.get('slots', [])
		if str((slot.get('stereotype') or {}).get('browserName', '')).lower() in ('chrome', 'chromium')
	]
	busy = sum(1 for slot in slots if slot.get('session'))
	return bool(status.get('ready')), len(slots), busy, str(status.get('message', ''))


def grid_problem(url: str, timeout: float = 5.0) -> str | None:
	"""Why the Grid at ``url`` cannot be used at all (nothing answers, not a Grid), or None. A
	Grid that answers but is not ready yet (nodes still registering) is not a problem here."""
	import urllib.request

	try:
		opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
		with opener.open(url.rstrip('/') + '/status', timeout=timeout) as reply:
			value = json.loads(reply.read()).get('value')
	except (OSError, ValueError) as exc:
		return (
			f'No Selenium Grid answers at --grid-url {url} ({exc}). Check that the Grid is running '
			'(java -jar selenium-server-<version>.jar standalone) and that the URL is its http://host:port.'
		)
	if not isinstance(value, dict) or 'ready' not in value:
		return f'{url}/status did not answer as a Selenium Grid 4 does (no value.ready). Check --grid-url.'
	return None
