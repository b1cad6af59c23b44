"""JavaScript dialogs a session holds for its caller, instead of browser-use answering them.

browser-use's ``PopupsWatchdog`` registers, for every new tab, a ``Page.javascriptDialogOpening``
handler on the session's CDP client that accepts alerts, confirms and leave-page dialogs at once and
cancels prompts. cdp-use keeps one handler per event per client, and the watchdog registers a fresh
one for each tab, replacing the last.

The patch wraps ``PopupsWatchdog.on_TabCreatedEvent``: after browser-use has registered its handler,
a gate is put in front of it. For a browser session that asked to hold its dialogs (``hold``), the
gate hands each dialog to that session's callback and does not call browser-use's handler, so the
dialog stays open until someone answers it (``Page.handleJavaScriptDialog``). For every other
session, the gate calls browser-use's handler, unchanged. Nothing else of the watchdog changes.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable
from typing import Any

from browser_use_mcp.patches import Patch, Saved, internals

logger = logging.getLogger(__name__)

BROWSER_USE_VERSION = '0.13.14'
_WATCHDOG = 'browser_use.browser.watchdogs.popups_watchdog:PopupsWatchdog'
_METHOD = 'on_TabCreatedEvent'
EVENT = 'Page.javascriptDialogOpening'

_saved = Saved()

Callback = Callable[[dict[str, Any], 'str | None'], bool]

# id(BrowserSession) -> (the session, weakly; the callback of a session that holds its dialogs). The
# callback returns True when it took the dialog (False: browser-use answers it as usual). Neither
# keeps the browser session alive; an entry goes with its session.
_holders: dict[int, tuple[weakref.ref[Any], Callback]] = {}


def hold(browser_session: Any, callback: Callback) -> None:
	"""Hand the dialogs of ``browser_session`` to ``callback`` instead of browser-use's handler."""
	key = id(browser_session)

	def gone(ref: weakref.ref[Any]) -> None:
		if _holders.get(key, (None,))[0] is ref:
			del _holders[key]

	_holders[key] = (weakref.ref(browser_session, gone), callback)


def release(browser_session: Any) -> None:
	entry = _holders.get(id(browser_session))
	if entry is not None and entry[0]() is browser_session:
		del _holders[id(browser_session)]


def holder(browser_session: Any) -> Callback | None:
	entry = _holders.get(id(browser_session))
	return entry[1] if entry is not None and entry[0]() is browser_session else None


def _gate(browser_session: Any, previous: Callable[..., Any] | None) -> Callable[..., Any]:
	session = weakref.ref(browser_session)

	def on_dialog(params: Any, session_id: str | None = None) -> Any:
		live = session()
		callback = holder(live) if live is not None else None
		if callback is not None:
			try:
				if callback(params if isinstance(params, dict) else {}, session_id):
					return None
			except Exception:  # ours is plain bookkeeping: a bug, but browser-use's handler still answers
				logger.exception('holding a dialog failed; browser-use answers it')
		return previous(params, session_id) if previous is not None else None

	on_dialog.browser_use_mcp_gate = True  # type: ignore[attr-defined]
	return on_dialog


def _guard(client: Any, browser_session: Any) -> None:
	registry = getattr(client, '_event_registry', None)
	handlers = getattr(registry, '_handlers', None)
	if not isinstance(handlers, dict):
		return
	current = handlers.get(EVENT)
	if current is None or getattr(current, 'browser_use_mcp_gate', False):
		return
	registry.register(EVENT, _gate(browser_session, current))


def _wrap(original: Callable[..., Any]) -> Callable[..., Any]:
	async def on_TabCreatedEvent(self: Any, event: Any) -> None:  # noqa: N802
		await original(self, event)
		browser_session = self.browser_session
		try:
			client = internals.root_cdp_client(browser_session)
			if client is not None:
				_guard(client, browser_session)
		except Exception:
			logger.exception('could not put the dialog gate in front of browser-use handler')

	on_TabCreatedEvent.__wrapped__ = original  # type: ignore[attr-defined]
	return on_TabCreatedEvent


def _apply() -> None:
	from browser_use.browser.watchdogs.popups_watchdog import PopupsWatchdog

	_saved.replace(PopupsWatchdog, _METHOD, _wrap(PopupsWatchdog.__dict__[_METHOD]))


def _revert() -> None:
	_saved.restore()


PATCH = Patch(
	name='dialog_hold',
	title='dialogs held for browser_handle_dialog',
	changes='``PopupsWatchdog.on_TabCreatedEvent`` puts a gate in front of the ``Page.javascriptDialogOpening`` handler '
	'it registers: dialogs of a session that holds them (``--dialogs hold``) go to that session, not to browser-use.',
	why='browser-use accepts every alert, confirm and leave-page dialog and cancels every prompt at once: a caller '
	'could neither read a dialog nor answer it.',
	package='browser-use',
	versions=(BROWSER_USE_VERSION,),
	sources={
		f'{_WATCHDOG}.{_METHOD}': '5fe8ddbcb3c4e089',
		'cdp_use.cdp.registry:EventRegistry.register': '55554329b1d39a27',  # one handler per event: the gate chains
		'cdp_use.cdp.registry:EventRegistry.handle_event': '092b0e43e7886c92',  # calls it with (params, session_id)
	},
	replaces=(f'{_WATCHDOG}.{_METHOD}',),
	switch='dialog_gate',
	when_refused='browser-use answers every dialog at once (alerts, confirms and leave-page dialogs accepted, prompts '
	'cancelled), whatever --dialogs says; browser_handle_dialog says so',
	apply=_apply,
	revert=_revert,
	logger=logger.name,
	refused_message='browser-use answers every JavaScript dialog itself (--dialogs hold cannot hold them)',
)
