"""Typed tool errors.

Handlers raise these; the server turns each into an MCP result with ``is_error`` set and
the message as its text. Every message says what went wrong *and* what the model should do
next, because the reader is usually an LLM deciding its next call.
"""

from __future__ import annotations


class ToolError(Exception):
	"""A failure the caller can act on. The message is shown to the client verbatim."""

	code = 'tool_error'

	def __init__(self, message: str) -> None:
		super().__init__(message)
		self.message = message


class InvalidArgument(ToolError):
	code = 'invalid_argument'


class UnknownTool(ToolError):
	code = 'unknown_tool'


class SessionNotFound(ToolError):
	code = 'session_not_found'

	def __init__(self, session_id: str) -> None:
		super().__init__(
			f'Session {session_id!r} not found. Call browser_list_sessions to see the open sessions; '
			'any browser tool called with a new session_id creates that session.'
		)


class SessionLost(ToolError):
	"""The session existed, but its browser state is gone (expired, duration limit, crash)."""

	code = 'session_lost'


class SessionClosed(ToolError):
	"""The call was cancelled because its session was closed while it ran."""

	code = 'session_closed'


class SessionLimitReached(ToolError):
	code = 'session_limit'


class BrowserStartFailed(ToolError):
	code = 'browser_start_failed'


class ElementNotFound(ToolError):
	code = 'element_not_found'


class TabNotFound(ToolError):
	code = 'tab_not_found'


class BrowserActionFailed(ToolError):
	"""The browser refused or failed an action (navigation error, bad selector, JS exception)."""

	code = 'browser_action_failed'


class LLMNotConfigured(ToolError):
	code = 'llm_not_configured'
