"""A session's storage state: read it, check it, keep it under a name, and start a session from it.

The shape is Playwright's ``storageState`` (cookies plus localStorage per origin), so a file saved
here can be given to Playwright and one saved by Playwright can be loaded here.

- Cookies are read and written at browser level over the session's own CDP connection. In context
  mode that connection is the CDP proxy, which scopes ``Storage.*Cookies`` to the session's browser
  context: a session never reads or writes another session's jar.
- localStorage is read from every frame of the session's tabs that the page's renderer holds
  (``DOMStorage`` wants a frame of the origin). It is seeded into a fresh session through a
  throw-away tab in the session's context whose requests are answered here with an empty page, so
  each origin is "visited" without a byte leaving the machine; the tab is closed afterwards.
- Named states are files in a per-principal directory under the server's private state directory:
  they outlive the session that saved them, are gone when the server stops, and one principal's
  names are never looked up for another.

Cookie values are the caller's data: they are returned to it and written where it asked, never logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import time
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, WithJsonSchema

from browser_use_mcp.errors import BrowserActionFailed, InvalidArgument, script_error
from browser_use_mcp.files import write_whole

if TYPE_CHECKING:
	from browser_use_mcp.sessions import SessionState

logger = logging.getLogger('browser_use_mcp.storage')

MAX_COOKIES = 10_000
MAX_ORIGINS = 1_000
MAX_ITEMS = 10_000  # localStorage entries per origin
NAME = re.compile(r'[A-Za-z0-9][A-Za-z0-9._-]{0,99}\.json')
SEED_TIMEOUT = 10.0  # s for one origin's blank page to be shown and its storage written
SHAPE = (
	'{"cookies": [{"name", "value", "domain", "path", "expires" (seconds since the epoch, -1 for a session cookie), '
	'"httpOnly", "secure", "sameSite" ("Strict" | "Lax" | "None")}], "origins": [{"origin": "https://host[:port]", '
	'"localStorage": [{"name", "value"}]}]} (Playwright\'s storageState)'
)

# A number that stays an int when it is one (-1, not -1.0), advertised as plain "number".
Seconds = Annotated[int | float, WithJsonSchema({'type': 'number'})]


class _Shape(BaseModel):
	# every field is always present in what we return (defaults are for what callers give us)
	model_config = ConfigDict(strict=True, extra='ignore', json_schema_serialization_defaults_required=True)


class StateCookie(_Shape):
	name: str = Field(max_length=4096)
	value: str = Field(max_length=8192)
	domain: str = Field(min_length=1, max_length=255, description='Host (host-only cookie) or .domain (domain cookie).')
	path: str = Field('/', max_length=1024, pattern='^/', description='Starts with /.')
	expires: Seconds = Field(-1, description='Seconds since the epoch; -1: a session cookie.')
	httpOnly: bool = False  # noqa: N815 - Playwright's key
	secure: bool = False
	sameSite: Literal['Strict', 'Lax', 'None'] = 'Lax'  # noqa: N815 - Playwright's key


class StorageItem(_Shape):
	name: str
	value: str


class OriginState(_Shape):
	origin: str = Field(description='scheme://host[:port], as location.origin says it.')
	localStorage: list[StorageItem] = Field(default_factory=list, max_length=MAX_ITEMS)  # noqa: N815 - Playwright's key


class StorageState(_Shape):
	"""Playwright's ``storageState``. Unknown keys at the top are refused (a typo would otherwise
	start a session silently without the state meant); inside entries they are ignored, as newer
	Playwright versions add some."""

	model_config = ConfigDict(strict=True, extra='forbid', json_schema_serialization_defaults_required=True)

	cookies: list[StateCookie] = Field(default_factory=list, max_length=MAX_COOKIES)
	origins: list[OriginState] = Field(default_factory=list, max_length=MAX_ORIGINS)


# -- checking what callers give ---------------------------------------------------------------------


def _where(loc: tuple[Any, ...], field: str) -> str:
	out = field
	for part in loc:
		out += f'[{part}]' if isinstance(part, int) else f'.{part}'
	return out


def parse_state(value: Any, field: str = 'storage_state') -> StorageState:
	"""``value`` as a StorageState, or InvalidArgument naming the first bad entries and the shape."""
	if not isinstance(value, dict):
		raise InvalidArgument(
			f'{field} must be an object of the shape {SHAPE}, or the name of a saved state; got {type(value).__name__}.'
		)
	try:
		state = StorageState.model_validate(value)
	except ValidationError as exc:
		problems = [f'{_where(e["loc"], field)}: {e["msg"]}' for e in exc.errors(include_url=False)[:5]]
		raise InvalidArgument(f'Invalid {field}: ' + '; '.join(problems) + f'. Expected {SHAPE}.') from None
	for i, origin in enumerate(state.origins):
		if canonical_origin(origin.origin) != origin.origin:
			raise InvalidArgument(
				f'Invalid {field}.origins[{i}].origin {origin.origin[:200]!r}: give an http or https origin as location.origin '
				f'says it (scheme://host[:port], no path or trailing slash), e.g. https://example.com. Expected {SHAPE}.'
			)
	return state


def canonical_origin(url: str) -> str | None:
	"""``scheme://host[:port]`` of an http(s) URL (default ports dropped); None for anything else."""
	try:
		parts = urllib.parse.urlsplit(url)
		port = parts.port
	except ValueError:
		return None
	scheme = parts.scheme.lower()
	if scheme not in ('http', 'https') or not parts.hostname:
		return None
	host = parts.hostname.lower()
	if ':' in host:
		host = f'[{host}]'
	default = 80 if scheme == 'http' else 443
	return f'{scheme}://{host}' + (f':{port}' if port is not None and port != default else '')


def check_name(name: str, field: str) -> str:
	"""A plain file name ending in .json: no directory, no ``..``, nothing that leaves its directory."""
	if not NAME.fullmatch(name) or '..' in name:
		raise InvalidArgument(
			f'{field} {name[:200]!r} is not allowed: give a plain file name ending in .json (letters, digits, ".", "_", "-"; '
			'at most 105 characters; no directories, no ".."), e.g. "login.json". It is kept in the session\'s own '
			'files directory and among your saved states, never anywhere else.'
		)
	return name


# -- named states ------------------------------------------------------------------------------------


def _write(directory: Path, name: str, text: str) -> Path:
	"""Write ``directory/name`` whole or not at all (a reader never sees half a file), private to us."""
	directory.mkdir(parents=True, exist_ok=True, mode=0o700)
	target = directory / name
	if target.resolve().parent != directory.resolve():  # belt and braces: check_name already forbids it
		raise InvalidArgument(f'{name!r} would leave its directory.')
	return write_whole(target, [text.encode()])


def save_named(state: SessionState, name: str, data: StorageState) -> Path:
	"""Write the state to the session's files directory and keep it among the principal's saved
	states (which outlive the session); the path in the files directory is returned."""
	text = json.dumps(data.model_dump(mode='json'), indent=2, ensure_ascii=False)
	written = _write(state.dirs.files, name, text)
	if state.saved_states is not None:
		_write(state.saved_states, name, text)
	return written


def load_named(directory: Path, name: str, field: str = 'storage_state') -> StorageState:
	"""A state saved earlier by this principal; "not found" for any other name, whoever saved it."""
	check_name(name, field)
	try:
		text = (directory / name).read_text(encoding='utf-8')
	except (FileNotFoundError, NotADirectoryError):
		raise InvalidArgument(
			f'{field}: no saved state named {name!r}. Save one first with browser_save_state{{path: "{name}"}} in one of '
			'your sessions (saved states last until the server stops), or pass the state itself as an object.'
		) from None
	except OSError as exc:
		raise BrowserActionFailed(f'Could not read the saved state {name!r}: {exc.strerror or exc}.') from None
	try:
		value = json.loads(text)
	except ValueError:
		raise InvalidArgument(f'{field}: the saved state {name!r} is not valid JSON; save it again.') from None
	return parse_state(value, field)


# -- reading a session's state ----------------------------------------------------------------------


def _cookie_out(raw: dict[str, Any]) -> StateCookie | None:
	if raw.get('partitionKey'):
		return None  # partitioned (CHIPS) cookies have no place in the shape: not carried
	same_site = raw.get('sameSite')
	expires = raw.get('expires', -1)
	if raw.get('session') or not isinstance(expires, int | float) or expires <= 0:
		expires = -1
	elif float(expires).is_integer():
		expires = int(expires)
	return StateCookie(
		name=raw.get('name', ''),
		value=raw.get('value', ''),
		domain=raw.get('domain', ''),
		path=raw.get('path') or '/',
		expires=expires,
		httpOnly=bool(raw.get('httpOnly')),
		secure=bool(raw.get('secure')),
		sameSite=same_site if same_site in ('Strict', 'Lax', 'None') else 'Lax',
	)


def _frame_origins(tree: dict[str, Any]) -> list[str]:
	out: list[str] = []
	stack = [tree]
	while stack:
		node = stack.pop()
		frame = node.get('frame') or {}
		origin = canonical_origin(frame.get('securityOrigin') or '') or canonical_origin(frame.get('url') or '')
		if origin is not None and origin not in out:
			out.append(origin)
		stack.extend(node.get('childFrames') or [])
	return out


TAB_READ_BOUND = 3.0  # s a tab gets to show its frames and localStorage: a hung page never answers


async def read_state(state: SessionState, unread: list[str] | None = None) -> StorageState:
	"""The session's cookies (its own context's jar only) and the localStorage of every origin
	shown in its tabs. A tab that does not answer within ``TAB_READ_BOUND`` (a script that never
	ends) is left out; what that leaves out is said in ``unread``."""
	bs = state.browser_session
	reply = await bs.cdp_client.send.Storage.getCookies(params={})
	cookies = [c for c in (_cookie_out(raw) for raw in reply.get('cookies', [])) if c is not None]
	targets = list(bs.session_manager.get_all_page_targets())
	# every tab at once, each bounded: one hung tab costs the bound, not the tool's deadline
	found = await asyncio.gather(*(_tab_storage(bs, target.target_id) for target in targets))
	origins: dict[str, OriginState] = {}
	read: set[str] = set()
	for tab in found:
		for origin, entries in tab or ():
			if origin in read:
				continue
			read.add(origin)
			if entries:
				origins[origin] = OriginState(origin=origin, localStorage=entries)
	for target, tab in zip(targets, found, strict=True):
		origin = canonical_origin(target.url or '')
		if tab is None and origin is not None and origin not in read and unread is not None:
			unread.append(
				f'The tab at {target.url} did not answer within {TAB_READ_BOUND:g} s (a script that never ends, or a '
				f'page busy that long): the localStorage of {origin} is not in this state. Close that tab with '
				'browser_close_tab or navigate it elsewhere, then save again to include it.'
			)
	return StorageState(cookies=cookies, origins=list(origins.values()))


async def _tab_storage(bs: Any, target_id: str) -> list[tuple[str, list[StorageItem]]] | None:
	"""(origin, its localStorage entries) of each frame origin of one tab read there; [] for a tab
	closing under us, None for one that did not answer in time."""
	try:
		return await asyncio.wait_for(_read_tab(bs, target_id), TAB_READ_BOUND)
	except TimeoutError:
		logger.info('a tab did not answer within %g s: its localStorage is left out', TAB_READ_BOUND)
		return None


async def _read_tab(bs: Any, target_id: str) -> list[tuple[str, list[StorageItem]]]:
	try:
		cdp = await bs.get_or_create_cdp_session(target_id=target_id, focus=False)
		send, session_id = cdp.cdp_client.send, cdp.session_id
		tree = await send.Page.getFrameTree(session_id=session_id)
	except Exception as exc:  # a tab closing under us: it has nothing to add
		logger.info('could not read the frames of a tab: %s', str(exc)[:200])
		return []
	out: list[tuple[str, list[StorageItem]]] = []
	for origin in _frame_origins(tree.get('frameTree') or {}):
		storage_id = {'securityOrigin': origin, 'isLocalStorage': True}
		try:
			items = await send.DOMStorage.getDOMStorageItems(params={'storageId': storage_id}, session_id=session_id)
		except Exception as exc:  # e.g. an out-of-process frame: its origin is read where it is a page
			logger.info('could not read the localStorage of %s: %s', origin, str(exc)[:200])
			continue
		out.append((origin, [StorageItem(name=k, value=v) for k, v in items.get('entries', [])]))
	return out


# -- starting a session from a state ------------------------------------------------------------------


def _cookie_in(cookie: StateCookie) -> dict[str, Any]:
	out: dict[str, Any] = {
		'name': cookie.name,
		'value': cookie.value,
		'domain': cookie.domain,
		'path': cookie.path,
		'secure': cookie.secure,
		'httpOnly': cookie.httpOnly,
		'sameSite': cookie.sameSite,
	}
	if cookie.expires > 0:
		out['expires'] = cookie.expires
	return out


async def apply_storage_state(state: SessionState, data: StorageState) -> None:
	"""Give a new session the cookies and localStorage of ``data`` before it loads any page.
	Raises BrowserActionFailed saying what could not be set; the caller closes the session then."""
	bs = state.browser_session
	now = time.time()
	cookies = [c for c in data.cookies if not 0 < c.expires <= now]  # expired ones would only be dropped
	if cookies:
		try:
			await bs.cdp_client.send.Storage.setCookies(params={'cookies': [_cookie_in(c) for c in cookies]})
			jar = (await bs.cdp_client.send.Storage.getCookies(params={})).get('cookies', [])
		except Exception as exc:
			raise BrowserActionFailed(f'The browser refused the cookies of storage_state: {str(exc)[:300]}.') from None
		# Chromium drops a cookie it finds invalid without a word: say which (by name; values are secrets)
		have = {(c.get('name'), (c.get('domain') or '').lstrip('.'), c.get('path')) for c in jar}
		dropped = [c for c in cookies if (c.name, c.domain.lstrip('.'), c.path) not in have]
		if dropped:
			names = ', '.join(f'{c.name!r} ({c.domain}{c.path})' for c in dropped[:10])
			raise BrowserActionFailed(
				f'The browser refused {len(dropped)} cookie(s) of storage_state: {names}. Check their domain and path, and '
				'that a cookie with sameSite "None" or a name starting with __Secure-/__Host- has secure: true.'
			)
	origins = [o for o in data.origins if o.localStorage]
	if origins:
		await _seed_local_storage(state, origins)


# Writes only once the tab shows the origin: Page.navigate answers before the new document runs script.
SET_ITEMS = (
	'((items, origin) => { if (location.origin !== origin) return location.origin; '
	'for (const [k, v] of items) localStorage.setItem(k, v); return origin; })'
)


async def _seed_local_storage(state: SessionState, origins: list[OriginState]) -> None:
	"""Visit each origin in a throw-away tab of the session whose every request is answered here with
	an empty page (nothing goes out), write its items, close the tab. A connection of our own: its
	interception never touches the session's browser-use connection or its tabs."""
	from browser_use_mcp.providers.cdp_client import CdpError

	connection, context_id = await state.browser.endpoint.browser_connection()
	target = None
	try:
		params: dict[str, Any] = {'url': 'about:blank', 'background': True}
		if context_id is not None:
			params['browserContextId'] = context_id
		target = (await connection.send('Target.createTarget', params))['targetId']
		session = (await connection.send('Target.attachToTarget', {'targetId': target, 'flatten': True}))['sessionId']
		answering: set[asyncio.Task[Any]] = set()

		def answer(message: dict[str, Any]) -> None:
			if message.get('method') != 'Fetch.requestPaused' or message.get('sessionId') != session:
				return
			request_id = (message.get('params') or {}).get('requestId')
			fulfil = {
				'requestId': request_id,
				'responseCode': 200,
				'responseHeaders': [{'name': 'Content-Type', 'value': 'text/html'}],
				'body': '',
			}
			task = asyncio.get_running_loop().create_task(connection.send('Fetch.fulfillRequest', fulfil, session))
			answering.add(task)
			task.add_done_callback(lambda t: (answering.discard(t), t.cancelled() or t.exception()))

		connection.on_event(answer)
		await connection.send('Fetch.enable', {'patterns': [{'urlPattern': '*'}]}, session)
		for origin in origins:
			await asyncio.wait_for(_seed_origin(connection, session, origin), SEED_TIMEOUT)
	except (CdpError, TimeoutError, KeyError, OSError) as exc:
		why = 'it took too long' if isinstance(exc, TimeoutError) else str(exc)[:300]
		raise BrowserActionFailed(f'Could not set the localStorage of storage_state: {why}.') from None
	finally:
		if target is not None:
			with contextlib.suppress(Exception):
				await connection.send('Target.closeTarget', {'targetId': target})
		await connection.close()


async def _seed_origin(connection: Any, session: str, origin: OriginState) -> None:
	from browser_use_mcp.providers.cdp_client import CdpError

	await connection.send('Page.navigate', {'url': origin.origin + '/'}, session)
	items = json.dumps([[i.name, i.value] for i in origin.localStorage], ensure_ascii=True)
	expression = f'{SET_ITEMS}({items}, {json.dumps(origin.origin)})'
	while True:
		try:
			result = await connection.send('Runtime.evaluate', {'expression': expression, 'returnByValue': True}, session)
		except CdpError:  # between documents: no context to run in yet
			await asyncio.sleep(0.05)
			continue
		text = script_error(result, 'a script error')
		if text is not None:
			raise BrowserActionFailed(f'Could not set the localStorage of {origin.origin}: {text.splitlines()[0][:300]}.')
		if result.get('result', {}).get('value') == origin.origin:
			return
		await asyncio.sleep(0.05)
