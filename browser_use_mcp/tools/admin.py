"""Managing sessions themselves: create, list, close one, close all, close the caller's."""

from __future__ import annotations

import logging
import time
from typing import Any

from pydantic import Field, create_model

from browser_use_mcp.errors import SessionNotFound
from browser_use_mcp.session_options import OPTION_NAMES, SessionOptions
from browser_use_mcp.sessions import SessionRegistry, SessionState
from browser_use_mcp.tools.base import Args, Call, NoArgs, Number, Output, Reply, as_json, tool

logger = logging.getLogger('browser_use_mcp.tools')

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
)


def options_of(args: Any) -> SessionOptions | None:
	"""The options a create call gave, as one model (None when it gave none)."""
	given = {name: getattr(args, name) for name in OPTION_NAMES if getattr(args, name) is not None}
	return SessionOptions(**given) if given else None


def shown_options(state: SessionState) -> dict[str, Any]:
	return state.options.public() if state.options is not None else {}



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


# not idempotent: without session_id every call mints a new session
@tool('Create a session', destructive=False, idempotent=False, open_world=False)
async def browser_create_session(registry: SessionRegistry, args: CreateArgs, call: Call) -> Reply[CreatedSession]:
	"""Create a new isolated browser session (own browser, cookies, tabs, downloads) and return its session_id;
	pass that id to every browser tool to act in this session. Optional settings make it to order (viewport,
	device_scale_factor, user_agent, locale, timezone, geolocation, proxy, extra_http_headers, allowed_domains);
	they hold for this session only, and only when it is created. {retention}"""
	state, created = await registry.create(call.principal, args.session_id, options_of(args))
	out = CreatedSession(
		session_id=state.session_id,
		created=created,
		idle_timeout_seconds=registry.config.idle_timeout or None,
		max_session_duration_seconds=registry.config.max_session_duration or None,
		expires_in_seconds=_round(state.expires_in()),
		location=state.browser.where,
		retention=registry.retention_text(),
		options=shown_options(state),
	).dump()
	return Reply(as_json(out), structured=out, notes=state.take_notes())


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


class SessionList(Output):
	sessions: list[SessionInfo] = Field(description='Oldest first; empty when there are none.')


def describe(state: SessionState, now: float) -> SessionInfo:
	bs = state.browser_session if state.browser.alive() else None
	manager = bs.session_manager if bs is not None else None
	tabs = 0
	url = None
	if manager is not None:
		try:  # browser-use's own bookkeeping: no browser round trip, so a listing never waits on a busy session
			tabs = len(manager.get_all_page_targets())
			focus = bs.agent_focus_target_id
			target = manager.get_target(focus) if focus else None  # None: the focused tab just went away
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
	)


@tool('List sessions', read_only=True, open_world=False)
async def browser_list_sessions(registry: SessionRegistry, args: NoArgs, call: Call) -> Reply[SessionList]:
	"""List your open browser sessions: id, whether it is the default one, current URL, tab count, creation and
	last-activity times, idle seconds and seconds until it expires."""
	now = time.time()
	states = sorted(registry.sessions(call.principal), key=lambda s: s.created_at)
	out = SessionList(sessions=[describe(s, now) for s in states]).dump()
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
