"""MCP wiring: tools/list from the catalog, tools/call through it, errors as is_error results.

This is the only module that speaks MCP types; everything below it deals in ``Reply`` and
``ToolError``. The transports (``transports/stdio.py``, ``transports/http.py``) differ only in how
a call's principal is found and how the process is kept alive.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import mcp.types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext

from browser_use_mcp import __version__
from browser_use_mcp.catalog import Catalog, ToolInfo
from browser_use_mcp.errors import ToolError
from browser_use_mcp.logs import CallTag, current_call
from browser_use_mcp.sessions import LOCAL_PRINCIPAL, current_session
from browser_use_mcp.telemetry import Telemetry
from browser_use_mcp.texts import clean, clean_value
from browser_use_mcp.tools.base import Call, Reply

if TYPE_CHECKING:
	from browser_use_mcp.metrics import Metrics

logger = logging.getLogger('browser_use_mcp.server')

INSTRUCTIONS = (
	'Each browser tool takes an optional session_id. Calls without one share the default session; give each '
	'agent or sub-task its own session_id (any string, or one minted by browser_create_session) to get an '
	'isolated browser with its own cookies, tabs and history. Calls within one session run one at a time.'
)

PrincipalOf = Callable[[ServerRequestContext[Any, Any]], str]


def to_result(reply: Reply) -> types.CallToolResult:
	"""The reply as MCP sends it; page-controlled strings in it may hold lone surrogates, which no
	transport can encode (texts.py): they become U+FFFD here."""
	content: list[types.ContentBlock] = [types.TextContent(type='text', text=clean(reply.text))]
	if reply.page_state is not None:
		content.append(types.TextContent(type='text', text=clean(reply.page_state)))
	if reply.body is not None:
		content.append(types.TextContent(type='text', text=clean(reply.body)))
	for image in reply.images:
		content.append(types.ImageContent(type='image', data=image.data, mime_type=image.mime_type))
	for resource in reply.resources:
		blob = types.BlobResourceContents(uri=resource.uri, mime_type=resource.mime_type, blob=resource.blob)
		content.append(types.EmbeddedResource(type='resource', resource=blob))
	for note in reply.notes:
		content.append(types.TextContent(type='text', text=clean(note)))
	structured = clean_value(reply.structured) if reply.structured is not None else None
	return types.CallToolResult(content=content, structured_content=structured)


def error_result(message: str) -> types.CallToolResult:
	return types.CallToolResult(content=[types.TextContent(type='text', text=clean(message))], is_error=True)


def advertised(info: ToolInfo) -> types.Tool:
	"""A catalogue entry as ``tools/list`` shows it, its hints as MCP tool annotations."""
	hints = info.hints
	return types.Tool(
		name=info.name,
		title=hints.title,
		description=info.description,
		input_schema=info.input_schema,
		output_schema=info.output_schema,
		annotations=types.ToolAnnotations(
			title=hints.title,
			read_only_hint=hints.read_only,
			destructive_hint=hints.destructive,
			idempotent_hint=hints.idempotent,
			open_world_hint=hints.open_world,
		),
	)


def build_server(
	catalog: Catalog,
	principal_of: PrincipalOf = lambda _ctx: LOCAL_PRINCIPAL,
	telemetry: Telemetry | None = None,
	metrics: Metrics | None = None,
) -> Server[Any]:
	tool_list = [advertised(info) for info in catalog.list()]
	if metrics is not None:
		metrics.tools = frozenset(info.name for info in catalog.list())

	async def list_tools(
		ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
	) -> types.ListToolsResult:
		return types.ListToolsResult(tools=tool_list)

	async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> types.CallToolResult:
		started = time.monotonic()

		async def progress(done: float, total: float | None, message: str | None) -> None:
			try:
				await ctx.session.report_progress(done, total, message)
			except Exception as exc:  # a client gone or without a progress token: the call itself goes on
				logger.debug('progress notification not sent: %r', exc)

		call = Call(principal=principal_of(ctx), progress=progress)
		error: str | None = None
		outcome = 'cancelled'  # unless it ends otherwise: a cancel is the one way out that is not a return
		tag = current_session.set('-')  # the catalogue names the call's session once it has read its id
		call_tag = CallTag(call.principal, params.name)
		call_token = current_call.set(call_tag)
		try:
			reply = await catalog.call(params.name, params.arguments, call)
			outcome = 'ok'
			return to_result(reply)
		except ToolError as exc:
			error = exc.message
			outcome = 'error'
			return error_result(exc.message)
		except Exception as exc:  # a bug or an unexpected browser failure: report, keep serving
			logger.exception('tool %s failed unexpectedly', params.name)
			error = f'{type(exc).__name__}: {exc}'
			outcome = 'error'
			return error_result(
				f'{params.name} failed unexpectedly: {type(exc).__name__}: {str(exc)[:500]}. The session is still open; '
				'call browser_get_state to see where it is, then retry or try another approach.'
			)
		finally:
			elapsed = time.monotonic() - started
			if metrics is not None:
				metrics.call_ended(params.name, outcome, elapsed)
			logger.info(
				'tool %s: %s in %.0f ms',
				params.name,
				outcome,
				elapsed * 1000,
				extra={'duration_ms': round(elapsed * 1000, 1), 'outcome': outcome},
			)
			call_tag.active = False
			current_call.reset(call_token)
			current_session.reset(tag)
			if telemetry is not None:
				telemetry.tool_call(params.name, elapsed, error)

	return Server(
		'browser-use-mcp',
		version=__version__,
		instructions=INSTRUCTIONS,
		on_list_tools=list_tools,
		on_call_tool=call_tool,
	)
