"""A pydantic ``TypeAdapter`` built once per event result type, not once per event.

Why: when a handler returns, bubus 1.5.6 (``EventResult.update``) checks the value against the
event's result type. For a type that is not a pydantic model it builds a new
``TypeAdapter(result_type)`` every time, and building one means generating the type's whole
core schema. browser-use's ``BrowserStateRequestEvent`` returns a ``BrowserStateSummary``, a
dataclass nesting the DOM state: its schema cost ~10 ms of CPU on every ``browser_get_state``,
a third of the call on a small page (docs/performance.md, "get_state").

The patch swaps the name ``TypeAdapter`` in ``bubus.models`` (the module's only use of it is that
line) for a factory that keeps one adapter per result type. An adapter is immutable once built
and depends only on its type, so a kept one validates exactly as a new one would. A type that
cannot be a dictionary key (an unhashable annotation) gets a new adapter, as before.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from browser_use_mcp.patches import Patch, Saved

logger = logging.getLogger(__name__)

BUBUS_VERSION = '1.5.6'
MAX_TYPES = 256  # distinct result types seen by one process: browser-use has a few dozen

_saved = Saved()


class CachedTypeAdapter:
	"""Stands in for ``pydantic.TypeAdapter`` inside ``bubus.models``: the same adapter per type."""

	def __init__(self, real: type) -> None:
		self.real = real
		self.adapters: dict[Any, Any] = {}
		self.lock = threading.Lock()

	def __call__(self, result_type: Any, *args: Any, **kwargs: Any) -> Any:
		if args or kwargs:  # not the call bubus makes: nothing to share
			return self.real(result_type, *args, **kwargs)
		try:
			adapter = self.adapters.get(result_type)
		except TypeError:  # unhashable: build one, as bubus does
			return self.real(result_type)
		if adapter is None:
			adapter = self.real(result_type)  # raises as bubus expects when the type cannot be adapted
			with self.lock:
				if len(self.adapters) >= MAX_TYPES:
					self.adapters.clear()
				self.adapters[result_type] = adapter
		return adapter


def _apply() -> None:
	from bubus import models

	_saved.replace(models, 'TypeAdapter', CachedTypeAdapter(models.TypeAdapter))


def _revert() -> None:
	_saved.restore()


PATCH = Patch(
	name='result_adapters',
	title='one pydantic adapter per event result type',
	changes='the name ``TypeAdapter`` in ``bubus.models`` becomes a factory that builds one pydantic ``TypeAdapter`` per '
	'result type and hands the same one out afterwards.',
	why="``EventResult.update`` built a new adapter (the type's whole pydantic schema) for every event result that is "
	"not a pydantic model: ~10 ms of CPU on each browser_get_state, for browser-use's ``BrowserStateSummary``.",
	package='bubus',
	versions=(BUBUS_VERSION,),
	sources={'bubus.models:EventResult.update': 'f17a402490884073'},
	replaces=('bubus.models:TypeAdapter',),
	switch='cached_result_types',
	when_refused='bubus builds a new pydantic adapter for every event result: ~10 ms more per browser_get_state',
	apply=_apply,
	revert=_revert,
	logger=logger.name,
	refused_message='event results validated with a new pydantic adapter each time (browser_get_state ~10 ms slower)',
)
