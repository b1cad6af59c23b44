"""Logging to stderr only (stdout is the protocol), each line tagged with its session."""

from __future__ import annotations

import logging
import sys

from browser_use_mcp.sessions import current_session

FORMAT = '%(asctime)s %(levelname)s [%(session)s] %(name)s: %(message)s'


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
