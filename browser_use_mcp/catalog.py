"""The catalogue of tools: what ``tools/list`` advertises, and the one path every call takes.

This is the one place that knows about ``session_id`` and the session around a call. For a
session tool it adds the property to the schema; for every call of one it validates the
arguments, resolves the id to a ``SessionState`` through the session registry (which takes that
session's lock), makes sure the session has a live focused tab, and only then hands the handler
the state. Handlers never see ids, locks or the registry. When a tool's ``include_state`` is
true, the page state after the handler is appended here too, under the same lock.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass
from typing import Any

from browser_use_mcp.errors import InvalidArgument, ToolError, UnknownTool
from browser_use_mcp.sessions import SessionRegistry, SessionState
from browser_use_mcp.tools import ALL_TOOLS
from browser_use_mcp.tools.base import RETENTION_PLACEHOLDER, Call, Hints, Reply, Tool
from browser_use_mcp.tools.common import ensure_focus, with_page_state

logger = logging.getLogger('browser_use_mcp.catalog')

# The progress message of a call waiting while a person drives its session from the dashboard.
HELD_BY_PERSON = (
	'A person is driving this browser session from the dashboard; this call waits until they release it '
	'(or stop interacting for a while), then runs.'
)

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
		self._tools = {t.name: t for t in (tools or ALL_TOOLS)}
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

	async def call(self, name: str, arguments: dict[str, Any] | None, call: Call) -> Reply:
		tool = self.get(name)
		if arguments is not None and not isinstance(arguments, dict):
			raise InvalidArgument(f'Arguments for {name} must be a JSON object.')
		args = dict(arguments or {})
		if tool.scope == 'admin':
			return _checked(tool, _as_reply(await tool.handler(self.sessions, tool.parse(args), call)))
		session_id = args.pop('session_id', None)
		parsed = tool.parse(args)

		async def act(state: SessionState) -> Reply | str:
			record = state.log.begin(name, args)
			error: str | None = 'cancelled'
			try:
				await ensure_focus(state)
				result = await tool.handler(state, parsed, call)
				if getattr(parsed, 'include_state', False):  # still under the session's lock: the page as the action left it
					result = await with_page_state(state, _as_reply(result))
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

		async def waiting(state: SessionState) -> None:
			await call.report_progress(0, None, HELD_BY_PERSON)

		state, result = await self.sessions.run(call.principal, session_id, act, on_hold=waiting)
		reply = _checked(tool, _as_reply(result))
		reply.notes.extend(state.take_notes())
		return reply


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
