"""An event bus's text made without walking its history.

Why: bubus 1.5.6 writes ``EventBus`` into its debug lines and task names as text, and builds that
text whether or not the line is logged: ``__str__`` counts the bus's pending, started and
completed events, each count a walk of the whole event history (up to 50 events, each event's
``event_started_at`` and ``event_completed_at`` themselves walks of its handlers' results). The
text is made for every handler registered (~50 per session start: browser-use's watchdogs), every
handler run (its task's name, and a second task's), every event dispatched and stepped, several
times per browser-use event; so a few times per tool call, on the event loop every session
shares. Profiled in process (a session's 5-step workflow, ten times over): 16 % of the server's
CPU on the calls' path went to these counts.

The patch swaps ``EventBus.__str__`` (``__repr__`` calls it) for one that writes the bus's name,
its running mark and its handler count, as bubus does, and leaves out the three event counts.
Those counts showed only in bubus's debug lines and task names; nothing reads them back.
"""

from __future__ import annotations

import logging
from typing import Any

from browser_use_mcp.patches import Patch, Saved

logger = logging.getLogger(__name__)

BUBUS_VERSION = '1.5.6'

_saved = Saved()


def bus_text(self: Any) -> str:
	"""The bus as bubus writes it, without the event counts (which walk its history)."""
	icon = '🟢' if self._is_running else '🔴'
	return f'{self.name}{icon}(➡️ {len(self.handlers)} 👂)'


def _apply() -> None:
	from bubus.service import EventBus

	_saved.replace(EventBus, '__str__', bus_text)


def _revert() -> None:
	_saved.restore()


PATCH = Patch(
	name='bus_text',
	title="an event bus's text without its event counts",
	changes="``bubus.service.EventBus.__str__`` (and so ``__repr__``) writes the bus's name, running mark and handler "
	'count, without the counts of pending, started and completed events.',
	why='bubus builds that text for its debug lines and task names whether or not they are logged, several times per '
	'event, and each time counts the events by walking the whole history three times: 16 % of the server CPU '
	"of a session's tool calls (profiled), on the event loop every session shares.",
	package='bubus',
	versions=(BUBUS_VERSION,),
	sources={
		'bubus.service:EventBus.__str__': '315e60700d7d6b76',
		'bubus.service:EventBus.__repr__': '6d2e13c8767a5598',  # calls str(self)
	},
	replaces=('bubus.service:EventBus.__str__',),
	switch='bus_text',
	when_refused="bubus's own text: three walks of the bus's event history each time a debug line or a task name "
	'names the bus, several times per event',
	apply=_apply,
	revert=_revert,
	logger=logger.name,
	active_message=f'event bus text without event counts (bubus {BUBUS_VERSION}): no history walk per debug line',
	refused_message="event bus text without event counts disabled, keeping bubus's text (three history walks "
	'per debug line and task name)',
)
