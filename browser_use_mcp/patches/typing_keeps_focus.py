"""Typing leaves the field focused: no synthetic blur after the keys.

browser-use's ``DefaultActionWatchdog`` types into a field with real key events, then calls
``_trigger_framework_events``, which dispatches synthetic ``input``, ``change`` and ``blur`` events on
the field (the field keeps the focus, but its blur listeners run). A user who has just typed has not
left the field: an autocomplete that opens on ``input`` and closes on ``blur`` (jQuery UI's, and most
like it) was closed again before the tool returned, so its suggestions never showed (issue #26).

The patch replaces ``_trigger_framework_events`` with ``announce_typed_value``: the field is focused
and gets the ``input`` and ``change`` events upstream sends (frameworks that listen to one of them
still see the new value), and no ``blur``. ``browser_type{blur: true}`` then moves the focus away for
real (``element.blur()``), which fires the browser's own ``blur``/``focusout`` like a user leaving.
Dropped with upstream's blur: its React and Vue extras (a second ``input`` event, one of them with a
redefined ``isTrusted`` that the browser refuses anyway); the real key events already reach both.
"""

from __future__ import annotations

import logging
from typing import Any

from browser_use_mcp.patches import Patch, Saved

logger = logging.getLogger(__name__)

BROWSER_USE_VERSION = '0.13.14'
_WATCHDOG = 'browser_use.browser.watchdogs.default_action_watchdog:DefaultActionWatchdog'
_METHOD = '_trigger_framework_events'

_saved = Saved()

# ``this`` is the field just typed into; what it returns is only logged.
ANNOUNCE = """function() {
	if (document.activeElement !== this) this.focus();
	this.dispatchEvent(new InputEvent('input', {bubbles: true, cancelable: true, inputType: 'insertText',
		data: typeof this.value === 'string' ? this.value : null}));
	this.dispatchEvent(new Event('change', {bubbles: true, cancelable: true}));
	return true;
}"""


async def announce_typed_value(self: Any, object_id: str, cdp_session: Any) -> None:
	"""Stands in for ``DefaultActionWatchdog._trigger_framework_events``: input and change, no blur."""
	try:
		await cdp_session.cdp_client.send.Runtime.callFunctionOn(
			params={'objectId': object_id, 'functionDeclaration': ANNOUNCE, 'returnByValue': True},
			session_id=cdp_session.session_id,
		)
	except Exception as exc:  # best effort, as upstream's: the keys have been typed already
		logger.debug('announcing the typed value failed: %s: %s', type(exc).__name__, exc)


def _apply() -> None:
	from browser_use.browser.watchdogs.default_action_watchdog import DefaultActionWatchdog

	_saved.replace(DefaultActionWatchdog, _METHOD, announce_typed_value)


def _revert() -> None:
	_saved.restore()


PATCH = Patch(
	name='typing_keeps_focus',
	title='typing keeps the field focused',
	changes='``DefaultActionWatchdog._trigger_framework_events`` (run after typing) sends the field ``input`` and '
	'``change`` and no synthetic ``blur``.',
	why='the synthetic blur closed autocompletes (they open on input and close on blur) before the tool returned, '
	'so their suggestions never showed.',
	package='browser-use',
	versions=(BROWSER_USE_VERSION,),
	sources={
		f'{_WATCHDOG}.{_METHOD}': '5a99fa8f77dd3bb1',
		f'{_WATCHDOG}._input_text_element_node_impl': 'd92dc80f86fc2c11',  # its caller: types, then calls it
	},
	replaces=(f'{_WATCHDOG}.{_METHOD}',),
	switch='typing_keeps_focus',
	when_refused="browser-use's synthetic blur after typing: autocompletes that close on blur close at once",
	apply=_apply,
	revert=_revert,
	logger=logger.name,
	refused_message="browser-use's blur after typing kept (autocompletes close before their suggestions show)",
)
