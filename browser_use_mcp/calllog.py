"""What each session's recent tool calls were, for the dashboard: short, and with secrets hidden.

The catalogue records every session tool call here (name, arguments, duration, outcome). The
arguments are kept only as a short redacted summary, never as given: the dashboard is read by
people, and an agent may type a password or pass a token.
"""

from __future__ import annotations

import re
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

RECENT_CALLS = 20  # per session
SUMMARY_LIMIT = 160  # characters of one call's argument summary
VALUE_LIMIT = 60  # characters of one argument value
REDACTED = '***'

# An argument whose name contains one of these holds a secret, whatever the tool.
SECRET_NAMES = ('password', 'passwd', 'secret', 'token', 'cookie', 'credential', 'auth', 'api_key', 'apikey', 'proxy')
# The user:password@ of a URL. Anchored on the literal '://' so a search is linear in the text: a
# scheme pattern in front (``[a-z][a-z0-9+.-]*://``) backtracks quadratically on a long run of
# letters, and an agent's 100,000-character argument then held its call for a minute.
USERINFO = re.compile(r'://[^/@\s]*@')


def is_secret(name: str) -> bool:
	lowered = name.lower()
	return any(word in lowered for word in SECRET_NAMES)


def _value(name: str, value: Any, depth: int) -> str:
	"""One named value: a secret's is ``***``; a mapping of headers keeps its names only (any
	header may carry a credential: Authorization, X-Api-Key, a session cookie)."""
	if is_secret(name):
		return REDACTED
	if 'header' in name.lower() and isinstance(value, dict):
		return '{' + ', '.join(f'{k}: {REDACTED}' for k in list(value)[:10]) + (', …' if len(value) > 10 else '') + '}'
	return _short(value, depth)


def _short(value: Any, depth: int = 0) -> str:
	if isinstance(value, str):
		text = USERINFO.sub(f'://{REDACTED}@', value)  # http://user:pass@host
		text = text.replace('\n', ' ')
		return repr(text if len(text) <= VALUE_LIMIT else text[: VALUE_LIMIT - 1] + '…')
	if isinstance(value, dict):
		if depth > 1:
			return '{…}'
		return '{' + ', '.join(f'{k}: {_value(str(k), v, depth + 1)}' for k, v in value.items()) + '}'
	if isinstance(value, list | tuple):
		if depth > 1:
			return '[…]'
		return '[' + ', '.join(_short(v, depth + 1) for v in value[:5]) + (', …' if len(value) > 5 else '') + ']'
	return repr(value)


def summarize(arguments: dict[str, Any]) -> str:
	"""``name=value`` pairs, secrets replaced by ``***``, long values and the whole cut short."""
	parts = [f'{k}={_value(k, v, 0)}' for k, v in arguments.items() if k != 'session_id']
	text = ', '.join(parts)
	return text if len(text) <= SUMMARY_LIMIT else text[: SUMMARY_LIMIT - 1] + '…'


@dataclass
class CallRecord:
	tool: str
	args: str
	started: float = field(default_factory=time.time)
	duration: float | None = None  # None: still running
	error: str | None = None

	def finish(self, error: str | None = None) -> None:
		self.duration = time.time() - self.started
		self.error = error

	def as_json(self) -> dict[str, Any]:
		return {
			'tool': self.tool,
			'args': self.args,
			'started': self.started,
			'duration_ms': None if self.duration is None else round(self.duration * 1000),
			'ok': self.error is None,
			'error': self.error,
		}


class CallLog:
	"""One session's call in flight and its last ``RECENT_CALLS`` calls, newest last."""

	def __init__(self) -> None:
		self.current: CallRecord | None = None
		self.recent: deque[CallRecord] = deque(maxlen=RECENT_CALLS)

	def begin(self, tool: str, arguments: dict[str, Any]) -> CallRecord:
		record = CallRecord(tool, summarize(arguments))
		self.current = record
		return record

	def end(self, record: CallRecord, error: str | None = None) -> None:
		record.finish(None if error is None else error.splitlines()[0][:200] if error.strip() else 'error')
		self.recent.append(record)
		if self.current is record:
			self.current = None
