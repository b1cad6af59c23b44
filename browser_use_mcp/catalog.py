"""The catalogue of tools: what ``tools/list`` advertises, and the one path every call takes.

This is the one place that knows about a tool's ``session_id`` argument and the session around a
call. For a session tool it adds the property to the schema; for every call of one it reads and
checks the id (once: it also tags the call's log lines with it), validates the arguments, resolves
the id to a ``SessionState`` through the session registry (which holds that session for the call),
makes sure the session has a live focused tab, and only then hands the handler the state. Handlers
never see ids, locks or the registry. When a tool declares ``include_state`` and a call sets it,
the page state after the handler is appended here too, under the same hold.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import os
from dataclasses import dataclass
from typing import Any

from browser_use_mcp import ahead, dialogs
from browser_use_mcp.errors import InvalidArgument, ToolError, UnknownTool
from browser_use_mcp.sessions import SessionRegistry, SessionState, current_session
from browser_use_mcp.tools import debug, tools_for
from browser_use_mcp.tools.base import RETENTION_PLACEHOLDER, Call, Hints, Reply, Tool
from browser_use_mcp.tools.common import (
	current_url,
	ensure_focus,
	focused_tab_crashed,
	replace_crashed_tab,
	tab_crashed_error,
	tab_hung_error,
	watch_crashes,
	with_page_state,
)

logger = logging.getLogger('browser_use_mcp.catalog')

# The progress message of a call waiting while a person drives its session from the dashboard.
HELD_BY_PERSON = (
	'A person is driving this browser session from the dashboard; this call waits until they release it '
	'(or stop interacting for a while), then runs.'
)

# How long one call of a session tool may take (s), from holding the session's lock to its reply
# (docs/sessions.md, "Deadlines"). A call past it is stopped and answered with what happened: the
# tab crashed (it is replaced) or stopped responding. include_state adds the state's own bound.
DEADLINES = {
	'browser_navigate': 60.0,
	'browser_go_back': 60.0,
	'browser_get_state': 60.0,
	'browser_get_html': 60.0,
	'browser_screenshot': 45.0,
	'browser_save_pdf': 90.0,  # the browser gets 60 s to print, then the file is read
	'browser_evaluate': 25.0,  # its expression gets 15 s
	'browser_extract_content': 240.0,  # an LLM answers
	'retry_with_browser_use_agent': 3600.0,  # up to max_steps agent steps; cancel it to stop sooner
}
DEFAULT_DEADLINE = 45.0
# tools that still make sense once a crashed focused tab is replaced: they run, with a note
AFTER_A_CRASH = frozenset({'browser_navigate', 'browser_list_tabs', 'browser_switch_tab'})
STOP_GRACE = 2.0  # s a call past its deadline gets to unwind before it is answered anyway
UNWIND_BOUND = 15.0  # s a cancelled call's handler gets to unwind (an agent's 3 s stop grace, then its interrupt)
DIALOG_GRACE = 0.3  # s a call gets to end by itself once the page opened a dialog (--dialogs hold)
# s a call gets while a dialog is held in another tab: Chromium pauses every page of the renderer process
# that shows a dialog: a popup and its opener, other tabs of the session when they share that process
OTHER_TAB_DIALOG_BOUND = 10.0
DEADLINE_SCALE_ENV = 'BROWSER_USE_MCP_DEADLINE_SCALE'


def deadline(name: str, include_state: bool = False) -> float:
	"""The bound on one call of tool ``name`` (s); BROWSER_USE_MCP_DEADLINE_SCALE multiplies every one."""
	try:
		scale = float(os.environ.get(DEADLINE_SCALE_ENV, '') or 1.0)
	except ValueError:
		scale = 1.0
	base = DEADLINES.get(name, DEFAULT_DEADLINE) + (DEADLINES['browser_get_state'] if include_state else 0.0)
	return base * (scale if scale > 0 else 1.0)


SESSION_ID_SCHEMA = {
	'type': 'string',
	'description': 'The browser session to act in. Omit it to use the default session. An id not seen before '
	'creates a new isolated session (its own browser, cookies, tabs and downloads); browser_create_session '
	'mints one for you.',
}


@dataclass(frozen=True)
class ToolInfo:
	"""What a client learns about a tool from ``tools/list``, and nothing more."""

	name: str
	description: str
	input_schema: dict[str, Any]
	hints: Hints
	output_schema: dict[str, Any] | None = None  # the structured content of its successful results

	@property
	def read_only(self) -> bool:
		return self.hints.read_only

	@property
	def properties(self) -> dict[str, Any]:
		return self.input_schema.get('properties', {})

	@property
	def session_scoped(self) -> bool:
		"""Acts inside one session: carries the catalogue's shared ``session_id`` argument."""
		return self.properties.get('session_id') == SESSION_ID_SCHEMA


class Catalog:
	def __init__(self, sessions: SessionRegistry, tools: list[Tool] | None = None) -> None:
		self.sessions = sessions
		self._tools = {t.name: t for t in (tools if tools is not None else tools_for(sessions.config.tools))}
		self._infos = [self._info(t) for t in self._tools.values()]

	def _info(self, tool: Tool) -> ToolInfo:
		schema = copy.deepcopy(tool.input_schema())
		if tool.scope == 'session':
			schema['properties']['session_id'] = dict(SESSION_ID_SCHEMA)
		description = tool.description.replace(RETENTION_PLACEHOLDER, self.sessions.retention_text())
		return ToolInfo(tool.name, description, schema, tool.hints, tool.output_schema())

	def list(self) -> list[ToolInfo]:
		return list(self._infos)

	def get(self, name: str) -> Tool:
		tool = self._tools.get(name)
		if tool is None:
			raise UnknownTool(f'Unknown tool {name!r}. Available tools: {", ".join(sorted(self._tools))}.')
		return tool

	def _session_of(self, raw: Any) -> tuple[str, ToolError | None]:
		"""A call's session id, read and checked once, and set as its log tag (the transport resets the
		tag once the call is answered and logged); an unusable id is returned as its error."""
		try:
			session_id = self.sessions.normalize_id(raw)
		except ToolError as exc:
			return '', exc
		current_session.set(session_id)
		return session_id, None

	async def call(self, name: str, arguments: dict[str, Any] | None, call: Call) -> Reply:
		tool = self.get(name)
		if arguments is not None and not isinstance(arguments, dict):
			raise InvalidArgument(f'Arguments for {name} must be a JSON object.')
		args = dict(arguments or {})
		if tool.scope == 'admin':
			_tag_admin_call(self.sessions, args)
			return _checked(tool, _as_reply(await tool.handler(self.sessions, tool.parse(args), call)))
		session_id, unusable = self._session_of(args.pop('session_id', None))
		parsed = tool.parse(args)  # the arguments' own errors come first, as they always have
		if unusable is not None:
			raise unusable

		wants_state = tool.wants_state(parsed)
		limit = deadline(name, wants_state)

		async def body(state: SessionState) -> Reply | str:
			with tool.read_ahead(state) if tool.read_ahead is not None else contextlib.nullcontext():
				await ensure_focus(state)
				result = await tool.handler(state, parsed, call)
			if wants_state:  # still under the session's lock: the page as the action left it
				result = await with_page_state(state, _as_reply(result))
			return result

		async def act(state: SessionState) -> Reply | str:
			record = state.log.begin(name, args)
			error: str | None = 'cancelled'
			recording, result, seen = state.recording, None, {}
			try:
				if recording is not None:  # the page before the call, for the flight recorder
					seen = await recording.before(state, tool.hints.read_only)
				result = await _bounded(name, limit, state, body, structured=tool.output is not None)
				error = None
				return result
			except ToolError as exc:
				error = exc.message
				raise
			except Exception as exc:
				error = f'{type(exc).__name__}: {exc}'
				raise
			finally:
				state.log.end(record, error)
				if recording is not None:  # the flight recorder (recorder.py): never raises
					await recording.after(
						state, name, tool.hints.read_only, args, record.started, record.duration or 0.0, result, error, seen
					)
				if not tool.hints.read_only:  # a durable session's record follows its page (saved within seconds)
					self.sessions.page_changed(state)
					if error is None and not wants_state:  # the state the agent reads next, built while it thinks
						ahead.schedule(state)

		async def waiting(state: SessionState) -> None:
			await call.report_progress(0, None, HELD_BY_PERSON)

		state, result = await self.sessions.run(
			call.principal, session_id, act, on_hold=waiting, deadline=limit, waiting=queued_notice(call)
		)
		reply = _checked(tool, _as_reply(result))
		reply.notes.extend(state.take_notes())
		return reply


def _tag_admin_call(sessions: SessionRegistry, args: dict[str, Any]) -> None:
	"""An admin tool that names a session (close, delete, create...) tags its log lines with it; an
	unusable id is left for the tool to refuse, saying why."""
	if 'session_id' in args and args['session_id'] is not None:
		with contextlib.suppress(ToolError):
			current_session.set(sessions.normalize_id(args['session_id']))


def queued_notice(call: Call) -> Any:
	"""A waiting call's progress: seconds waited of --queue-timeout, and why it waits."""

	async def notify(waited: float, timeout: float, message: str) -> None:
		await call.report_progress(round(waited, 1), timeout, message)

	return notify


async def _bounded(name: str, limit: float, state: SessionState, body: Any, *, structured: bool = False) -> Reply | str:
	"""``body(state)`` ended by ``limit`` s, or at once when the focused tab's renderer dies: CDP
	commands to a crashed or hung tab are never answered, so the handler alone might never end.
	With ``--dialogs hold``, also soon after the page opens a dialog: what opened it (a click, a key)
	waits for its answer."""
	watch_crashes(state)
	debug.watch(state)  # console messages and network requests, recorded from the first call on
	held = dialogs.watch(state)
	if await focused_tab_crashed(state):  # crashed since the last call: nothing sent to it would answer
		now_on = await replace_crashed_tab(state)
		if name not in AFTER_A_CRASH:
			raise tab_crashed_error(name, now_on, before=True)
		state.notes.append(
			f"Note: the session's tab had crashed (its page's renderer died); it was closed, and this call ran with "
			f'the session on {now_on}.'
		)
	state.crash_signal.clear()
	loop = asyncio.get_running_loop()
	end = loop.time() + limit
	elsewhere = False  # a dialog is held in another tab: this call is bounded by OTHER_TAB_DIALOG_BOUND
	if held is not None:  # one already open blocks its page: what waits on the page ends as if it opened now
		if held.blocks(state.browser_session.agent_focus_target_id):
			held.opened.set()
		else:  # none, or only in other tabs (answered with browser_handle_dialog{tab_id}): this tab works
			held.opened.clear()
			if held.pending:
				elsewhere, end = True, min(end, loop.time() + OTHER_TAB_DIALOG_BOUND)
	work = asyncio.ensure_future(body(state))
	crash = asyncio.ensure_future(state.crash_signal.wait())
	opened = asyncio.ensure_future(held.opened.wait()) if held is not None else loop.create_future()
	try:
		while not work.done():
			crash_seen = False
			await asyncio.wait({work, crash, opened}, timeout=max(0.0, end - loop.time()), return_when=asyncio.FIRST_COMPLETED)
			if not work.done() and opened.done():  # a dialog opened: what opened it may wait for its answer
				await asyncio.wait({work}, timeout=DIALOG_GRACE)
				if not work.done() and held is not None and not held.blocks(state.browser_session.agent_focus_target_id):
					# only in other tabs (a timer's alert there, or this call moved to a new tab): go on here,
					# for a while: a tab that shares the dialog's renderer process is paused with it
					held.opened.clear()
					opened = asyncio.ensure_future(held.opened.wait())
					if not elsewhere:
						elsewhere, end = True, min(end, loop.time() + OTHER_TAB_DIALOG_BOUND)
					continue
				if not work.done():
					work.cancel()
					await asyncio.wait({work}, timeout=STOP_GRACE)
					return dialogs.stopped_reply(name, held, structured)
			if work.done():
				break
			if crash.done():  # a tab crashed: ours? (another tab's crash lets the call go on)
				crash_seen = True
				state.crash_signal.clear()
				crash = asyncio.ensure_future(state.crash_signal.wait())
				if not await focused_tab_crashed(state):
					continue
			elif loop.time() < end:
				continue
			work.cancel()
			await asyncio.wait({work}, timeout=STOP_GRACE)
			if elsewhere and held is not None and held.pending and not crash_seen:
				return dialogs.stopped_reply(name, held, structured, elsewhere=True)
			if crash_seen or await focused_tab_crashed(state):
				raise tab_crashed_error(name, await replace_crashed_tab(state), before=False)
			url = 'its page'
			with contextlib.suppress(Exception, TimeoutError):
				url = await asyncio.wait_for(current_url(state), 1.0)
			logger.warning('%s overran its %g s deadline; stopped', name, limit)
			raise tab_hung_error(name, limit, url)
		try:
			return work.result()
		except ToolError:
			raise
		except Exception:
			if await focused_tab_crashed(state):  # the crash is what to say, not the error it caused
				raise tab_crashed_error(name, await replace_crashed_tab(state), before=False) from None
			raise
	except asyncio.CancelledError:
		# the call was cancelled (a client's cancel, a session close): the handler unwinds (an agent's
		# stop grace, browser-use's own cleanup) while this call still holds the session, as when it
		# ran in this task; otherwise the next call would run beside a handler still at work
		work.cancel()
		await _unwound(work)
		raise
	finally:
		crash.cancel()
		opened.cancel()
		if not work.done():
			work.cancel()


async def _unwound(work: asyncio.Future[Any]) -> None:
	"""Wait up to UNWIND_BOUND s for a cancelled handler to finish; a further cancel is passed on to it."""
	loop = asyncio.get_running_loop()
	end = loop.time() + UNWIND_BOUND
	while not work.done() and loop.time() < end:
		try:
			await asyncio.wait({work}, timeout=end - loop.time())
		except asyncio.CancelledError:
			work.cancel()
	if work.done() and not work.cancelled():
		work.exception()  # retrieved: its error was the cancel's consequence, not news


def _as_reply(result: Reply | str) -> Reply:
	return result if isinstance(result, Reply) else Reply(str(result))


def _checked(tool: Tool, reply: Reply) -> Reply:
	"""Structured content goes out exactly when the tool declares an output schema: content nobody
	declared, or a declared schema with no content, is a bug here (the 2.x SDK client rejects the
	latter), reported as an unexpected failure rather than sent."""
	if (reply.structured is None) != (tool.output is None):
		raise RuntimeError(
			f'{tool.name} returned {"no " if reply.structured is None else ""}structured content but '
			f'{"declares" if tool.output is not None else "declares no"} output schema'
		)
	return reply
