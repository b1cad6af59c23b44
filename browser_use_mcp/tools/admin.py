"""Managing sessions themselves: create, list, close one, close all, close the caller's."""

from __future__ import annotations

import time
from typing import Any

from pydantic import Field

from browser_use_mcp.errors import SessionNotFound
from browser_use_mcp.tools.base import RETENTION_PLACEHOLDER, Args, Call, NoArgs, Reply, admin_tool, as_json

RETENTION = RETENTION_PLACEHOLDER  # filled in by the catalog from the server's configuration


class CreateArgs(Args):
	session_id: str | None = Field(
		None, description='Id to create the session under; omit to get a server-minted, unguessable handle.'
	)


@admin_tool(
	'browser_create_session',
	'Create a new isolated browser session (own browser, cookies, tabs, downloads) and return its session_id; '
	'pass that id to every browser tool to act in this session. ' + RETENTION,
	CreateArgs,
)
async def create_session(registry, args: CreateArgs, call: Call) -> Reply:
	state, created = await registry.create(call.principal, args.session_id)
	info = {
		'session_id': state.session_id,
		'created': created,
		'idle_timeout_seconds': registry.config.idle_timeout or None,
		'max_session_duration_seconds': registry.config.max_session_duration or None,
		'expires_in_seconds': _round(state.expires_in()),
		'retention': registry.retention_text(),
	}
	return Reply(as_json(info), structured=info, notes=state.take_notes())


def _round(value: float | None) -> float | None:
	return None if value is None else round(value, 1)


def _stamp(ts: float) -> str:
	return time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(ts))


def describe(state: Any, now: float) -> dict[str, Any]:
	bs = state.browser_session
	tabs = 0
	url = None
	if state.browser.alive():
		try:
			tabs = len(bs.session_manager.get_all_page_targets()) if bs.session_manager else 0
			focus = bs.agent_focus_target_id
			url = bs.session_manager.get_target(focus).url if focus and bs.session_manager else None
		except Exception:
			pass
	return {
		'session_id': state.session_id,
		'created_at': _stamp(state.created_at),
		'last_activity': _stamp(state.last_activity),
		'active': state.browser.alive(),
		'current_url': url,
		'age_minutes': round((now - state.created_at) / 60, 2),
		'default': state.is_default,
		'tabs': tabs,
		'busy': state.busy > 0,
		'idle_seconds': round(state.idle_seconds(now), 1),
		'expires_in_seconds': _round(state.expires_in(now)),
	}


@admin_tool(
	'browser_list_sessions',
	'List your open browser sessions: id, whether it is the default one, current URL, tab count, creation and '
	'last-activity times, idle seconds and seconds until it expires.',
	NoArgs,
	read_only=True,
)
async def list_sessions(registry, args: NoArgs, call: Call) -> Reply:
	now = time.time()
	sessions = [describe(s, now) for s in sorted(registry.sessions(call.principal), key=lambda s: s.created_at)]
	text = as_json(sessions) if sessions else 'No active browser sessions'
	return Reply(text, structured={'sessions': sessions})


class CloseSessionArgs(Args):
	session_id: str = Field(description='The session to close (see browser_list_sessions).')


@admin_tool(
	'browser_close_session',
	'Close one browser session: its browser is ended, its temporary profile deleted, and a call still running '
	'in it is cancelled. The id becomes free for reuse.',
	CloseSessionArgs,
)
async def close_session(registry, args: CloseSessionArgs, call: Call) -> str:
	if await registry.close(call.principal, args.session_id):
		return f'Successfully closed session {args.session_id}'
	registry.raise_if_lost(call.principal, args.session_id)
	raise SessionNotFound(args.session_id)


@admin_tool(
	'browser_close_all',
	'Close all of your browser sessions (the default one included) and free their resources.',
	NoArgs,
)
async def close_all(registry, args: NoArgs, call: Call) -> Reply:
	count = await registry.close_all(call.principal)
	text = f'Closed {count} sessions' if count else 'No active sessions to close'
	return Reply(text, structured={'closed': count})


class CloseBrowserArgs(Args):
	session_id: str | None = Field(None, description='The session whose browser to close; omit for the default session.')


@admin_tool(
	'browser_close',
	'Close the browser of the calling session (the default one, or session_id), like browser_close_session.',
	CloseBrowserArgs,
)
async def close_browser(registry, args: CloseBrowserArgs, call: Call) -> str:
	sid = registry.normalize_id(args.session_id)
	if await registry.close(call.principal, sid, 'closed by browser_close'):
		return 'Browser closed'
	return 'No browser session to close'


TOOLS = [create_session, list_sessions, close_session, close_all, close_browser]
