"""Logging to stderr only (stdout is the protocol), each line tagged with its session, and no
secret in any line at any level.

Secrets travel in three places a debug log would show: raw protocol traffic (the MCP answers
sse_starlette dumps carry saved cookies; the CDP frames websockets and cdp-use dump carry cookies,
storage and extra headers), so those loggers stay at INFO even at ``--log-level debug``; bearer
tokens and ``?token=`` in any line, which ``Redact`` masks; and the server's own tokens, which
``hide`` registers so that no line carries one verbatim.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
import sys
from dataclasses import dataclass
from datetime import UTC, datetime

from browser_use_mcp.sessions import current_session

FORMAT = '%(asctime)s %(levelname)s [%(session)s] %(name)s: %(message)s'
# Loggers that dump protocol traffic whole at DEBUG; never below INFO.
TRAFFIC_LOGGERS = ('sse_starlette', 'websockets', 'cdp_use', 'httpcore', 'hpack')
MASK = '***'
_PATTERNS = (
	re.compile(r'(?i)(\bbearer\s+)[^\s"\',;]+'),
	re.compile(r'(?i)([?&;](?:access_)?token=)[^&\s"\']+'),
	re.compile(r'(?i)(\b(?:authorization|cookie|set-cookie|x-api-key|proxy-authorization)["\']?\s*[:=]\s*["\']?)[^"\'\r\n]+'),
)
_hidden: set[str] = set()


def hide(*secrets: str) -> None:
	"""Never log these strings (the server's bearer tokens): each is masked wherever it shows."""
	_hidden.update(s for s in secrets if s)


def redact(text: str) -> str:
	for secret in _hidden:
		if secret in text:
			text = text.replace(secret, MASK)
	for pattern in _PATTERNS:
		text = pattern.sub(lambda m: m.group(1) + MASK, text)
	return text


class Redact(logging.Filter):
	"""Masks bearer tokens, ``?token=`` values, credential headers and the registered secrets in
	a record's message, arguments and traceback, before any handler formats it."""

	def filter(self, record: logging.LogRecord) -> bool:
		try:
			message = record.getMessage()
		except Exception:  # a broken record is the logging module's to report
			return True
		clean = redact(message)
		if clean != message:
			record.msg, record.args = clean, None
		if record.exc_info and not record.exc_text:
			record.exc_text = logging.Formatter().formatException(record.exc_info)
		if record.exc_text:
			record.exc_text = redact(record.exc_text)
		return True


@dataclass
class CallTag:
	"""The tool call a log line belongs to. ``active`` turns false when the call ends: a task the
	call started (browser-use's watchdogs) inherits the tag, but its later lines are not the call's."""

	principal: str
	tool: str
	active: bool = True


current_call: contextvars.ContextVar[CallTag | None] = contextvars.ContextVar('browser_use_mcp_call', default=None)


class SessionTag(logging.Filter):
	"""Puts the session (``-`` for none) and, during a tool call, its principal and tool on the record."""

	def filter(self, record: logging.LogRecord) -> bool:
		record.session = current_session.get()
		call = current_call.get()
		if call is not None and call.active:
			if not hasattr(record, 'principal'):
				record.principal = call.principal
			if not hasattr(record, 'tool'):
				record.tool = call.tool
		return True


class SessionFormatter(logging.Formatter):
	"""Repeats the tag on every continuation line (tracebacks, multi-line messages), so that
	grepping for one session's tag finds the whole record and nothing of another session."""

	def format(self, record: logging.LogRecord) -> str:
		text = super().format(record)
		if '\n' not in text:
			return text
		first, *rest = text.split('\n')
		prefix = f'    [{getattr(record, "session", "-")}] '
		return '\n'.join([first, *(prefix + line for line in rest)])


class JsonFormatter(logging.Formatter):
	"""One JSON object per line: time (UTC, ISO 8601), level, logger, message, and where known
	session_id, principal (the token's digest label, never the token), tool and duration_ms; a
	traceback as ``exception``. The ``Redact`` filter has masked secrets in the message and the
	traceback before this runs; the other fields are ours and carry none."""

	def format(self, record: logging.LogRecord) -> str:
		entry: dict[str, object] = {
			'time': datetime.fromtimestamp(record.created, UTC).isoformat(timespec='milliseconds').replace('+00:00', 'Z'),
			'level': record.levelname.lower(),
			'logger': record.name,
			'message': record.getMessage(),
		}
		session = getattr(record, 'session', '-')
		if session not in (None, '-'):
			entry['session_id'] = session
		for key in ('principal', 'tool', 'duration_ms', 'outcome'):
			value = getattr(record, key, None)
			if value is not None:
				entry[key] = value
		if record.exc_info and not record.exc_text:
			record.exc_text = redact(self.formatException(record.exc_info))
		if record.exc_text:
			entry['exception'] = record.exc_text
		if record.stack_info:
			entry['stack'] = redact(self.formatStack(record.stack_info))
		return json.dumps(entry, ensure_ascii=False, default=str)


_format = 'text'


def announce(text: str, level: str = 'info') -> None:
	"""A line the operator must see whatever the log level (the address served, a fatal start-up
	problem), on stderr: as is, or with ``--log-format json`` as a JSON object like every log line."""
	if _format == 'json':
		now = datetime.now(UTC).isoformat(timespec='milliseconds').replace('+00:00', 'Z')
		text = json.dumps({'time': now, 'level': level, 'logger': 'browser_use_mcp', 'message': redact(text)}, ensure_ascii=False)
	print(text, file=sys.stderr, flush=True)


def setup_logging(level: str = 'warning', fmt: str = 'text') -> None:
	"""Log to stderr at ``level``; ``fmt`` is ``text`` (session-tagged lines) or ``json``."""
	global _format
	_format = fmt
	if fmt == 'json':  # Python's warnings too, or they would be the one kind of line that is not JSON
		logging.captureWarnings(True)
	handler = logging.StreamHandler(sys.stderr)
	handler.setFormatter(JsonFormatter() if fmt == 'json' else SessionFormatter(FORMAT))
	handler.addFilter(SessionTag())
	handler.addFilter(Redact())
	root = logging.getLogger()
	root.handlers = [handler]
	root.setLevel(level.upper())
	# browser-use is chatty at info; keep it one notch quieter than ours unless debugging
	bu_level = 'DEBUG' if level == 'debug' else 'ERROR' if level in ('warning', 'error') else 'WARNING'
	for name in ('browser_use', 'bubus', 'cdp_use', 'httpx', 'mcp'):
		lg = logging.getLogger(name)
		lg.handlers = []
		lg.propagate = True
		lg.setLevel(bu_level if name != 'mcp' else level.upper())
	for name in TRAFFIC_LOGGERS:  # raw traffic carries cookies, storage and headers: never below INFO
		lg = logging.getLogger(name)
		if lg.getEffectiveLevel() < logging.INFO:
			lg.setLevel(logging.INFO)
