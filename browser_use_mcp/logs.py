"""Logging to stderr only (stdout is the protocol), each line tagged with its session, and no
secret in any line at any level.

Secrets travel in three places a debug log would show: raw protocol traffic (the MCP answers
sse_starlette dumps carry saved cookies; the CDP frames websockets and cdp-use dump carry cookies,
storage and extra headers), so those loggers stay at INFO even at ``--log-level debug``; bearer
tokens and ``?token=`` in any line, which ``Redact`` masks; and the server's own tokens, which
``hide`` registers so that no line carries one verbatim.
"""

from __future__ import annotations

import logging
import re
import sys

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


class SessionTag(logging.Filter):
	def filter(self, record: logging.LogRecord) -> bool:
		record.session = current_session.get()
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


def setup_logging(level: str = 'warning') -> None:
	handler = logging.StreamHandler(sys.stderr)
	handler.setFormatter(SessionFormatter(FORMAT))
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
