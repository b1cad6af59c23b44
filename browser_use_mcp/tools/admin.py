"""Managing sessions themselves: create, clone, list, close one, close all, close the caller's, delete a
durable one, and save a session's storage state (the one session-scoped tool here)."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Annotated, Any

import anyio
from pydantic import Field, WithJsonSchema, create_model

from browser_use_mcp.durable import Record
from browser_use_mcp.errors import InvalidArgument, SessionNotFound, ToolError
from browser_use_mcp.session_options import OPTION_NAMES, SessionOptions
from browser_use_mcp.sessions import SessionRegistry, SessionState
from browser_use_mcp.storage import (
	OriginState,
	StateCookie,
	StorageState,
	apply_storage_state,
	check_name,
	load_named,
	parse_state,
	read_state,
	save_named,
)
from browser_use_mcp.tools.base import Args, Call, NoArgs, Number, Output, Reply, as_json, tool
from browser_use_mcp.tools.common import current_url, open_url

logger = logging.getLogger('browser_use_mcp.tools')


def options_of(args: Any) -> SessionOptions | None:
	"""The options a create call gave, as one model (None when it gave none)."""
	given = {name: getattr(args, name) for name in OPTION_NAMES if getattr(args, name) is not None}
	return SessionOptions(**given) if given else None


def shown_options(state: SessionState) -> dict[str, Any]:
	return state.options.public() if state.options is not None else {}


# An object or a name: checked by the handler, which names the field and the shape when it is wrong.
StorageStateArg = Annotated[
	Any,
	WithJsonSchema(
		{
			'anyOf': [
				{
					'type': 'object',
					'properties': {
						'cookies': {'type': 'array', 'items': {'type': 'object'}},
						'origins': {'type': 'array', 'items': {'type': 'object'}},
					},
				},
				{'type': 'string'},
			]
		}
	),
]


# session_id first, then every session option (declared once, in session_options)
CreateArgs = create_model(
	'CreateArgs',
	__base__=Args,
	__doc__='browser_create_session: an id, and the options of a session made to order.',
	session_id=(
		str | None,
		Field(None, description='Id to create the session under; omit to get a server-minted, unguessable handle.'),
	),
	**{name: (info.annotation, info) for name, info in SessionOptions.model_fields.items()},  # type: ignore[call-overload]
	storage_state=(
		StorageStateArg,
		Field(
			None,
			description="Start the new session with these cookies and localStorage: an object in Playwright's storageState "
			'shape (what browser_save_state returns), or the file name of a state you saved with browser_save_state{path} in '
			'one of your sessions (saved states are kept until the server stops). Only for a session that is not open yet.',
			json_schema_extra=lambda schema: schema.pop('default', None),  # absent means none; null is not offered
		),
	),
	persist=(
		bool,
		Field(
			False,
			description='Make it durable: its cookies, localStorage and last URL are kept on the server across idle expiry '
			'and restarts, and the next call with its id reopens it where it left off. Delete it for good with '
			'browser_delete_session.',
		),
	),
)


# Output models: field order is the key order of the JSON text, which clients written for the
# first release already parse; keep it.


class CreatedSession(Output):
	session_id: str = Field(description='Pass it as session_id to every browser tool.')
	created: bool = Field(description='false: a session with this id was already open and is returned as it is.')
	idle_timeout_seconds: Number | None = Field(description='Closed after this long unused; null: never.')
	max_session_duration_seconds: Number | None = Field(description='Closed this long after creation; null: no limit.')
	expires_in_seconds: Number | None = Field(description='Seconds until it is closed if left alone; null: never.')
	location: str = Field(
		description="Where its browser runs: 'local' (a Chromium of its own), 'local (shared)' (a context of a shared "
		"Chromium), 'attached' (the browser at --cdp-url) or 'grid <node URI>' (a Selenium Grid session)."
	)
	retention: str = Field(description='The retention policy in words.')
	options: dict[str, Any] = Field(
		description='The options it was created with (proxy credentials redacted); empty: the server defaults.'
	)
	persisted: bool = Field(description='Durable: kept across expiry and restarts until browser_delete_session (see persist).')


# not idempotent: without session_id every call mints a new session
@tool('Create a session', destructive=False, idempotent=False, open_world=False)
async def browser_create_session(registry: SessionRegistry, args: CreateArgs, call: Call) -> Reply[CreatedSession]:
	"""Create a new isolated browser session (own browser, cookies, tabs, downloads) and return its session_id;
	pass that id to every browser tool to act in this session. Optional settings make it to order (viewport,
	device_scale_factor, user_agent, locale, timezone, geolocation, proxy, extra_http_headers, allowed_domains),
	and storage_state starts it logged in as a saved state was (cookies and localStorage); they hold for this
	session only, and only when it is created. {retention}"""
	initial = None
	if args.storage_state is not None:
		initial = await _storage_state_arg(registry, call.principal, args.storage_state)
		if args.session_id is not None and registry.exists(call.principal, registry.normalize_id(args.session_id)):
			raise _already_open(args.session_id, 'storage_state applies to a new session only')
	from browser_use_mcp.catalog import queued_notice

	state, created = await registry.create(
		call.principal, args.session_id, options_of(args), waiting=queued_notice(call), persist=args.persist
	)
	notes = state.take_notes()
	if initial is not None:
		if not created:  # opened by another call meanwhile: never overwrite its state
			raise _already_open(state.session_id, 'storage_state applies to a new session only')
		await _start_from(registry, state, initial)
		notes.append(f'Started from the storage state: {_counts(initial)}.')
	out = _created(registry, state, created)
	return Reply(as_json(out), structured=out, notes=notes)


def _created(registry: SessionRegistry, state: SessionState, created: bool) -> dict[str, Any]:
	"""What browser_create_session and browser_clone_session return about the new session."""
	return CreatedSession(
		session_id=state.session_id,
		created=created,
		idle_timeout_seconds=registry.config.idle_timeout or None,
		max_session_duration_seconds=registry.config.max_session_duration or None,
		expires_in_seconds=_round(state.expires_in()),
		location=state.browser.where,
		retention=registry.retention_text(),
		options=shown_options(state),
		persisted=state.persist,
	).dump()


async def _storage_state_arg(registry: SessionRegistry, principal: str, value: Any) -> StorageState:
	"""The storage_state argument checked whole before anything is created: an object of the shape,
	or a name among the states this principal saved (never another's)."""
	if isinstance(value, str):
		return load_named(await registry.saved_states(principal), value)
	return parse_state(value)


def _already_open(session_id: str, why: str) -> InvalidArgument:
	return InvalidArgument(
		f'session_id: a session {session_id!r} is already open, and {why}. Omit session_id to get a new handle, or '
		'close that session first with browser_close_session.'
	)


def _counts(data: StorageState) -> str:
	return f'{len(data.cookies)} cookies, localStorage of {len(data.origins)} origins'


async def _start_from(registry: SessionRegistry, state: SessionState, data: StorageState, url: str | None = None) -> None:
	"""Apply ``data`` to a session just created (and open ``url`` in it), under its lock; on any
	failure the session is closed, so the caller is left with nothing half made."""

	async def seed(session: SessionState) -> None:
		await apply_storage_state(session, data)
		if url is not None:
			await open_url(session, url, False, f'Opening {url[:200]}')

	try:
		await registry.run(state.principal, state.session_id, seed, create=False)
	except BaseException as exc:
		with anyio.CancelScope(shield=True):  # a cancelled call still leaves nothing behind
			await registry.close(state.principal, state.session_id, 'its storage state could not be applied')
		if isinstance(exc, ToolError):
			exc.message = f'{exc.message.rstrip(".")}. No session was created.'
			exc.args = (exc.message,)
		raise


def _round(value: float | None) -> float | None:
	return None if value is None else round(value, 1)


def _stamp(ts: float) -> str:
	return time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(ts))


class SessionInfo(Output):
	session_id: str
	created_at: str = Field(description='Local time, YYYY-MM-DD HH:MM:SS.')
	last_activity: str = Field(description='Local time of the last call in this session, YYYY-MM-DD HH:MM:SS.')
	active: bool = Field(description='Its browser is running.')
	current_url: str | None = Field(description="The focused tab's URL; null if unknown.")
	age_minutes: Number
	default: bool = Field(description='This is the default session (calls without session_id).')
	tabs: int = Field(description='Open tabs.')
	busy: bool = Field(description='A call is running in it now.')
	idle_seconds: Number
	expires_in_seconds: Number | None = Field(description='Seconds until it is closed if left alone; null: never.')
	location: str = Field(description='Where its browser runs (as in browser_create_session).')
	options: dict[str, Any] = Field(description='The options it was created with (as in browser_create_session).')
	running: bool = Field(description='false: a durable session not open now; the next call with its id reopens it.')
	persisted: bool = Field(description='Durable: kept across expiry and restarts (browser_create_session{persist}).')


class SessionList(Output):
	sessions: list[SessionInfo] = Field(description='Oldest first; empty when there are none.')


def focused_target(state: SessionState) -> Any:
	"""browser-use's record of the session's focused tab (url, title), or None: no browser round trip,
	so a listing never waits on a busy session. None too when the focused tab just went away."""
	bs = state.browser_session if state.browser.alive() else None
	focus = bs.agent_focus_target_id if bs is not None else None
	return bs.session_manager.get_target(focus) if focus else None


def describe(state: SessionState, now: float) -> SessionInfo:
	bs = state.browser_session if state.browser.alive() else None
	manager = bs.session_manager if bs is not None else None
	tabs = 0
	url = None
	if manager is not None:
		try:  # browser-use's own bookkeeping, as focused_target
			tabs = len(manager.get_all_page_targets())
			target = focused_target(state)
			url = target.url if target is not None else None
		except Exception:  # a listing must not fail for one session; but this is not expected: say so
			logger.warning('could not describe session %r', state.session_id, exc_info=True)
	return SessionInfo(
		session_id=state.session_id,
		created_at=_stamp(state.created_at),
		last_activity=_stamp(state.last_activity),
		active=state.browser.alive(),
		current_url=url,
		age_minutes=round((now - state.created_at) / 60, 2),
		default=state.is_default,
		tabs=tabs,
		busy=state.busy > 0,
		idle_seconds=round(state.idle_seconds(now), 1),
		expires_in_seconds=_round(state.expires_in(now)),
		location=state.browser.where,
		options=shown_options(state),
		running=True,
		persisted=state.persist,
	)


def describe_persisted(record: Record, now: float) -> SessionInfo:
	"""A durable session that is not running: what its record says (its tabs' URLs, when it was saved)."""
	return SessionInfo(
		session_id=record.session_id,
		created_at=_stamp(record.created_at),
		last_activity=_stamp(record.saved_at),
		active=False,
		current_url=record.urls[0] if record.urls else None,
		age_minutes=round((now - record.created_at) / 60, 2),
		default=False,
		tabs=len(record.urls),
		busy=False,
		idle_seconds=round(max(0.0, now - record.saved_at), 1),
		expires_in_seconds=None,
		location='persisted',
		options={},
		running=False,
		persisted=True,
	)


@tool('List sessions', read_only=True, open_world=False)
async def browser_list_sessions(registry: SessionRegistry, args: NoArgs, call: Call) -> Reply[SessionList]:
	"""List your browser sessions: id, whether it is the default one, current URL, tab count, creation and
	last-activity times, idle seconds and seconds until it expires; durable sessions that are not open now are
	listed too (running: false, persisted: true)."""
	now = time.time()
	states = sorted(registry.sessions(call.principal), key=lambda s: s.created_at)
	kept = sorted(registry.persisted(call.principal), key=lambda r: r.created_at)
	out = SessionList(sessions=[describe(s, now) for s in states] + [describe_persisted(r, now) for r in kept]).dump()
	text = as_json(out['sessions']) if out['sessions'] else 'No active browser sessions'
	return Reply(text, structured=out)


class CloseSessionArgs(Args):
	session_id: str = Field(description='The session to close (see browser_list_sessions).')


@tool('Close a session', destructive=True, idempotent=True, open_world=False)
async def browser_close_session(registry: SessionRegistry, args: CloseSessionArgs, call: Call) -> str:
	"""Close one browser session: its browser is ended, its temporary profile deleted, and a call still running
	in it is cancelled. The id becomes free for reuse."""
	if await registry.close(call.principal, args.session_id):
		return f'Successfully closed session {args.session_id}'
	registry.raise_if_lost(call.principal, args.session_id)
	raise SessionNotFound(args.session_id)


class ClosedCount(Output):
	closed: int = Field(description='How many sessions were closed.')


@tool('Close all sessions', destructive=True, idempotent=True, open_world=False)
async def browser_close_all(registry: SessionRegistry, args: NoArgs, call: Call) -> Reply[ClosedCount]:
	"""Close all of your browser sessions (the default one included) and free their resources."""
	out = ClosedCount(closed=await registry.close_all(call.principal)).dump()
	text = f'Closed {out["closed"]} sessions' if out['closed'] else 'No active sessions to close'
	return Reply(text, structured=out)


class CloseBrowserArgs(Args):
	session_id: str | None = Field(None, description='The session whose browser to close; omit for the default session.')


@tool('Close the browser', destructive=True, idempotent=True, open_world=False)
async def browser_close(registry: SessionRegistry, args: CloseBrowserArgs, call: Call) -> str:
	"""Close the browser of the calling session (the default one, or session_id), like browser_close_session."""
	sid = registry.normalize_id(args.session_id)
	if await registry.close(call.principal, sid, 'closed by browser_close'):
		return 'Browser closed'
	return 'No browser session to close'


class SavedState(Output):
	"""Playwright's storageState: the same keys, so the JSON can be handed to Playwright as it is."""

	cookies: list[StateCookie] = Field(description="The session's cookies (its own browser context's only).")
	origins: list[OriginState] = Field(description='localStorage of every origin shown in its tabs (those with any).')


class SaveStateArgs(Args):
	path: str | None = Field(
		None,
		description='Also keep the state under this file name (a plain name ending in .json, e.g. "login.json"): written '
		"to the session's files directory and kept among your saved states until the server stops, for "
		'browser_create_session{storage_state: "login.json"}. Saving under a name again replaces it.',
	)


@tool('Save storage state', destructive=False, idempotent=True, open_world=False)
async def browser_save_state(state: SessionState, args: SaveStateArgs, call: Call) -> Reply[SavedState]:
	"""Return the session's storage state: its cookies and the localStorage of the origins open in its tabs, in
	Playwright's storageState JSON shape, to start other sessions from with browser_create_session{storage_state}.
	sessionStorage, IndexedDB and the localStorage of origins not open are not included. Cookie values are secrets
	of the sites: pass the result on only to sessions you trust."""
	name = check_name(args.path, 'path') if args.path is not None else None
	unread: list[str] = []
	data = await read_state(state, unread)
	out = SavedState.model_validate(data.model_dump()).dump()
	summary = f'Storage state of session {state.session_id!r}: {_counts(data)}.'
	if name is not None:
		await asyncio.to_thread(save_named, state, name, data)
		summary += (
			f' Saved as {name!r} (kept until the server stops): start a session from it with '
			f'browser_create_session{{storage_state: "{name}"}}.'
		)
	return Reply(f'{summary}\n{as_json(out)}', structured=out, notes=unread)


class CloneArgs(Args):
	from_session_id: str = Field(description='The session to copy, one of yours ("default" for the default session).')
	session_id: str | None = Field(
		None, description='Id for the new session (not open yet); omit to get a server-minted, unguessable handle.'
	)


@tool('Clone a session', destructive=False, idempotent=False, open_world=True)
async def browser_clone_session(registry: SessionRegistry, args: CloneArgs, call: Call) -> Reply[CreatedSession]:
	"""Make a new session with the cookies, localStorage and creation options of one of yours, opened at its
	current URL; from then on the two are independent. Returns the new session as browser_create_session does. {retention}"""
	principal = call.principal
	source = registry.normalize_id(args.from_session_id)
	if args.session_id is not None and registry.exists(principal, registry.normalize_id(args.session_id)):
		raise _already_open(args.session_id, 'a clone is always a new session')
	if not registry.exists(principal, source):
		registry.raise_if_lost(principal, source)
		raise SessionNotFound(source)

	unread: list[str] = []

	async def snapshot(session: SessionState) -> tuple[StorageState, str, SessionOptions | None]:
		return await read_state(session, unread), await current_url(session), session.options

	# the source is locked only while it is read; the clone is made to the source's order
	_, (data, url, options) = await registry.run(principal, source, snapshot, create=False)
	state, created = await registry.create(principal, args.session_id, options)
	if not created:
		raise _already_open(state.session_id, 'a clone is always a new session')
	target = url if url.startswith(('http://', 'https://')) else None
	await _start_from(registry, state, data, target)
	notes = state.take_notes()
	notes.append(f'Cloned from {source!r}: {_counts(data)}' + (f'; opened {target}.' if target else '.'))
	notes.extend(unread)
	out = _created(registry, state, True)
	return Reply(as_json(out), structured=out, notes=notes)


class DeleteSessionArgs(Args):
	session_id: str = Field(description='The session to delete, open or durable (see browser_list_sessions).')


@tool('Delete a session', destructive=True, idempotent=True, open_world=False)
async def browser_delete_session(registry: SessionRegistry, args: DeleteSessionArgs, call: Call) -> str:
	"""Delete a session for good: close it if it is open (without saving it) and remove its durable copy (cookies,
	localStorage, last URL) from the server. The id becomes free for a new, empty session."""
	sid = registry.normalize_id(args.session_id)
	if await registry.delete(call.principal, sid):
		return f'Deleted session {sid}'
	raise SessionNotFound(sid)
