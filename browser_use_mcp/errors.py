"""Typed tool errors.

Handlers raise these; the server turns each into an MCP result with ``is_error`` set and
the message as its text. Every message says what went wrong *and* what the model should do
next, because the reader is usually an LLM deciding its next call.
"""

from __future__ import annotations

from typing import Any


class ToolError(Exception):
	"""A failure the caller can act on. The message is shown to the client verbatim."""

	def __init__(self, message: str) -> None:
		super().__init__(message)
		self.message = message


class InvalidArgument(ToolError):
	"""The arguments do not fit the tool's schema or contradict each other."""


class UnknownTool(ToolError):
	"""No tool of that name."""


class SessionNotFound(ToolError):
	"""An id that names no open session, for a call that does not create one."""

	def __init__(self, session_id: str) -> None:
		super().__init__(
			f'Session {session_id!r} not found. Call browser_list_sessions to see the open sessions; '
			'any browser tool called with a new session_id creates that session.'
		)


class SessionLost(ToolError):
	"""The session existed, but its browser state is gone (expired, duration limit, crash)."""


class SessionClosed(ToolError):
	"""The call was cancelled because its session was closed while it ran."""


class SessionLimitReached(ToolError):
	"""A new session would pass --max-sessions."""


class BrowserStartFailed(ToolError):
	"""The session's browser could not be started or connected to."""


class ElementNotFound(ToolError):
	"""An element index that the session's latest state does not have."""


class StaleElement(ToolError):
	"""An element index from a state whose page has changed since: another tab, another document,
	or its element is no longer attached. Refused rather than acted on whatever is there now."""


class TabNotFound(ToolError):
	"""A tab id that matches no open tab of the session, or more than one."""


class BrowserActionFailed(ToolError):
	"""The browser refused or failed an action (navigation error, bad selector, JS exception)."""


class ActionTimedOut(BrowserActionFailed):
	"""browser-use gave up on an action after its own time limit (``limit`` s): a page that never
	answered, say. The message says so in plain words, without browser-use's internal names."""

	def __init__(self, message: str, limit: float) -> None:
		super().__init__(message)
		self.limit = limit


class LLMNotConfigured(ToolError):
	"""The tool needs an LLM and the server has no usable key or provider."""


def script_error(result: Any, default: str) -> str | None:
	"""What a CDP evaluation's answer (``Runtime.evaluate``, ``Runtime.callFunctionOn``) says went wrong
	in the page: the exception's description, else the details' text, else ``default``; None when the
	script ran."""
	details = result.get('exceptionDetails') if isinstance(result, dict) else None
	if not details:
		return None
	return str((details.get('exception') or {}).get('description') or details.get('text') or default)
