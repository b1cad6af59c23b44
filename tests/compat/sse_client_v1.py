"""An MCP host built on the 1.x Python SDK, whose only HTTP client speaks the legacy HTTP+SSE
transport: what tests/e2e/test_http_sse.py connects to our server with.

It needs mcp==1.2.1 (tests/compat/requirements-mcp1.txt), so it runs in .venv-mcp1, which
scripts/setup.sh creates; .venv holds mcp 2.x. The bearer token comes from MCP_BEARER_TOKEN,
not the command line, which every user of the machine can read:

	MCP_BEARER_TOKEN=... .venv-mcp1/bin/python tests/compat/sse_client_v1.py \\
		http://127.0.0.1:8000/sse http://127.0.0.1:8080/page [--session-id ID]

It connects, initializes, lists the tools, calls ``browser_navigate`` to the page, then
``browser_get_state``, and prints one JSON object with the results. If the server refuses the
connection it prints ``{"http_status": N}`` and exits 3.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from datetime import timedelta
from typing import Any

import httpx
from mcp import ClientSession
from mcp.client.sse import sse_client


def tool_result(result: Any) -> dict[str, Any]:
	texts = [c.text for c in result.content if getattr(c, 'type', None) == 'text']
	out: dict[str, Any] = {'is_error': bool(result.isError), 'texts': texts}
	try:
		out['json'] = json.loads(texts[0])
	except (IndexError, ValueError):
		out['json'] = None
	return out


async def run(sse_url: str, page: str, session_id: str | None) -> dict[str, Any]:
	token = os.environ.get('MCP_BEARER_TOKEN')
	headers = {'Authorization': f'Bearer {token}'} if token else None
	ids = {'session_id': session_id} if session_id else {}
	async with sse_client(sse_url, headers=headers) as (read, write):
		async with ClientSession(read, write, read_timeout_seconds=timedelta(seconds=120)) as session:
			init = await session.initialize()
			tools = await session.list_tools()
			navigate = await session.call_tool('browser_navigate', {'url': page, **ids})
			state = await session.call_tool('browser_get_state', ids)
	return {
		'protocol_version': init.protocolVersion,
		'server': init.serverInfo.name,
		'tools': [t.name for t in tools.tools],
		'navigate': tool_result(navigate),
		'state': tool_result(state),
	}


def http_status(exc: BaseException) -> int | None:
	"""The status of the HTTP error behind ``exc``, which a task group may have wrapped."""
	if isinstance(exc, httpx.HTTPStatusError):
		return exc.response.status_code
	for inner in getattr(exc, 'exceptions', ()):
		status = http_status(inner)
		if status is not None:
			return status
	return None


def main() -> int:
	parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
	parser.add_argument('sse_url', help='the legacy SSE endpoint, e.g. http://127.0.0.1:8000/sse')
	parser.add_argument('page', help='the URL to navigate to')
	parser.add_argument('--session-id', help='the browser session to use (default: the default session)')
	args = parser.parse_args()
	try:
		report = asyncio.run(run(args.sse_url, args.page, args.session_id))
	except BaseException as exc:
		status = http_status(exc)
		if status is None:
			raise
		print(json.dumps({'http_status': status}))
		return 3
	print(json.dumps(report))
	return 0


if __name__ == '__main__':
	sys.exit(main())
