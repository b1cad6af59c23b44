"""A new tab is let run once browser-use has attached it, even when Chromium says it is not waiting.

Why: with Chromium's headless shell (the server's browser when headless) and a browser-wide
``Target.setAutoAttach`` (browser-use's, with ``waitForDebuggerOnStart: false``), a tab a page opens
(``window.open``, a ``target=_blank`` link) is held until a client sends it
``Runtime.runIfWaitingForDebugger``, though its ``Target.attachedToTarget`` says
``waitingForDebugger: false``; and the page that opened it is held with it (``window.open`` does
not return). browser-use 0.13.14 resumes a new tab only when the attach says it waits, so nothing
resumed it: ``browser_evaluate("window.open(url)")`` ran out its 15 s and was stopped, and a page
that opened a popup by itself stayed frozen until a tool happened to focus the popup. The full
Chromium does not hold such tabs. Measured on a bare headless shell (no browser-use): the
opener's ``Runtime.evaluate`` of ``window.open`` answered in 0.01 s without the browser-wide
auto-attach and never with it, whether it asked to wait or not.

The patch sends the new tab's ``Runtime.runIfWaitingForDebugger`` once browser-use's
``SessionManager._handle_target_attached`` has set the tab up (its monitoring enabled, as before a
resume browser-use sends itself), for every page it attaches. To a tab that is not held it is a
no-op. Bounded, and never fails the attach.

It also quiets a race at close: browser-use checks for its root CDP client before its first await
and asserts it after, so a session closing in between raised "Root CDP client required" from the
attach of every tab still opening. With the root client gone such an attach is left alone.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import Any

from browser_use_mcp.patches import Patch, Saved, internals

BROWSER_USE_VERSION = '0.13.14'
_MANAGER = 'browser_use.browser.session_manager:SessionManager'
RESUME_BOUND = 3.0  # s the resume may take (browser-use's own bound on a resume)

_saved = Saved()
logger = logging.getLogger(__name__)
stats: dict[str, int] = {}  # resumes sent, and failed (tests)


def _apply() -> None:
	from browser_use.browser.session_manager import SessionManager

	attached = SessionManager._handle_target_attached

	@functools.wraps(attached)
	async def handle_target_attached(self: Any, event: Any) -> None:
		try:
			await attached(self, event)
		except AssertionError:
			# a tab that attached as the session closed: browser-use checks for its root client before
			# its first await and asserts it after, so a close in between logged an AssertionError
			# ("Root CDP client required") from each such attach; nothing is left to set up or resume
			if internals.root_cdp_client(self.browser_session) is not None:
				raise
			stats['closing'] = stats.get('closing', 0) + 1
			logger.debug('a tab attached as its session closed: left alone')
			return
		info = event.get('targetInfo') or {}
		if info.get('type') not in ('page', 'tab') or event.get('waitingForDebugger'):
			return  # browser-use resumed it itself (or it is not a tab)
		session_id = event.get('sessionId')
		client = internals.root_cdp_client(self.browser_session)
		if not session_id or client is None or session_id not in self._sessions:
			return  # detached meanwhile
		try:
			await asyncio.wait_for(client.send.Runtime.runIfWaitingForDebugger(session_id=session_id), RESUME_BOUND)
			stats['resumed'] = stats.get('resumed', 0) + 1
		except (Exception, TimeoutError) as exc:  # a tab closing as it opened: nothing to resume
			stats['failed'] = stats.get('failed', 0) + 1
			logger.debug('could not let a new tab run: %s', str(exc)[:200])

	_saved.replace(SessionManager, '_handle_target_attached', handle_target_attached)


def _revert() -> None:
	_saved.restore()


PATCH = Patch(
	name='popup_resume',
	title='a new tab is let run once attached',
	changes='``SessionManager._handle_target_attached`` sends a new page its ``Runtime.runIfWaitingForDebugger`` once '
	'it has set the page up, also when the attach says it is not waiting; an attach the session closed under is '
	'left alone.',
	why="Chromium's headless shell holds a tab a page opens, and the page that opened it, until it is resumed, yet "
	"says it is not waiting: browser_evaluate('window.open(url)') ran out its 15 s, and a page that opened a popup "
	'stayed frozen.',
	package='browser-use',
	versions=(BROWSER_USE_VERSION,),
	sources={f'{_MANAGER}._handle_target_attached': 'fc669da436d9e214'},
	replaces=(f'{_MANAGER}._handle_target_attached',),
	switch='popup_resume',
	when_refused="browser-use's own resume (only when the attach says the tab waits): with the headless shell, a page "
	'that opens a tab is frozen until a tool focuses that tab',
	apply=_apply,
	revert=_revert,
	logger=logger.name,
	refused_message='new tabs resumed only when Chromium says they wait (a page opening a popup may freeze)',
)
