"""Text that can always be sent: a page's lone UTF-16 surrogates replaced.

JavaScript strings may hold half of a surrogate pair ('\\ud800'); a page's title, text or an
evaluated value can carry one into a reply, and such a string cannot be encoded as UTF-8. Sent as
it is, the reply's serialization failed and took the stdio connection down, every session of every
agent with it (found by fuzzing). Everything a tool returns goes through ``clean`` on its way out;
the transports fall back to ``clean_json`` for anything else.
"""

from __future__ import annotations

import json
import re
from typing import Any

LONE_SURROGATE = re.compile('[\ud800-\udfff]')
REPLACEMENT = '\ufffd'


def clean(text: str) -> str:
	"""``text`` with every lone surrogate replaced by U+FFFD (the common case, none, costs one encode)."""
	try:
		text.encode('utf-8')
	except UnicodeEncodeError:
		return LONE_SURROGATE.sub(REPLACEMENT, text)
	return text


def clean_value(value: Any) -> Any:
	"""A JSON-like value (dicts, lists, strings, numbers) with every string ``clean``."""
	if isinstance(value, str):
		return clean(value)
	if isinstance(value, dict):
		return {clean(k) if isinstance(k, str) else k: clean_value(v) for k, v in value.items()}
	if isinstance(value, list | tuple):
		return [clean_value(v) for v in value]
	return value


def dumps(value: Any, **options: Any) -> str:
	"""``value`` as JSON text (``json.dumps`` with ``options``, non-ASCII kept), its strings ``clean``:
	for whatever is written or sent with page text in it (recordings, the dashboard's answers)."""
	return clean(json.dumps(value, ensure_ascii=False, **options))


def clean_json(model: Any, **dump: Any) -> str:
	"""A pydantic model as compact JSON, its strings ``clean``: for a message whose own
	``model_dump_json`` failed on a surrogate."""
	return dumps(model.model_dump(mode='json', **dump), separators=(',', ':'))
