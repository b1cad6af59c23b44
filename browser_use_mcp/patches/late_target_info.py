"""A new tab's URL and title reach browser-use even when they change while it is being attached.

browser-use's ``SessionManager`` learns a tab's URL and title from ``Target.targetInfoChanged``,
which it applies only to tabs it already tracks. A tab starts being tracked in
``_handle_target_attached``, but only after that handler's first round trip (``setAutoAttach`` for
the tab's children): a change Chromium sends during that round trip is dropped, and the tab keeps
the URL it was attached with until its next change. Chromium's headless shell (the server's browser
when headless, see docs/configuration.md) answers ``Target.createTarget`` before a new tab's first
navigation commits, so a tab opened with a URL (``window.open``, a ``target=_blank`` link, another
client) was attached with the URL ``''`` and kept it: ``browser_get_state`` and ``browser_list_tabs``
showed no URL for it. The full Chromium reported the URL in the attach itself, so the race never showed.

The patch remembers a change for a tab whose attach has begun but which is not tracked yet, and
applies the latest such change once the attach has tracked the tab. A change that arrived before the
attach began is older than what the attach carries and is dropped, as before.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from browser_use_mcp.patches import Patch, Saved

BROWSER_USE_VERSION = '0.13.14'
_MANAGER = 'browser_use.browser.session_manager:SessionManager'

_saved = Saved()
logger = logging.getLogger(__name__)


def _pending(manager: Any) -> dict[str, dict[str, Any] | None]:
	"""Tabs whose attach is under way: target id -> the latest info that arrived meanwhile (or None)."""
	pending = manager.__dict__.get('_mcp_attaching')
	if pending is None:
		pending = manager.__dict__['_mcp_attaching'] = {}
	return pending


def _apply() -> None:
	from browser_use.browser.session_manager import SessionManager

	attached = SessionManager._handle_target_attached
	changed = SessionManager._handle_target_info_changed

	@functools.wraps(attached)
	async def handle_target_attached(self: Any, event: Any) -> None:
		target_id = event['targetInfo']['targetId']
		pending = _pending(self)
		pending.setdefault(target_id, None)  # before the first await: later changes are kept
		try:
			await attached(self, event)
		finally:
			info = pending.pop(target_id, None)
			if info is not None:
				async with self._lock:
					target = self._targets.get(target_id)
					if target is not None:
						target.url = info.get('url', target.url)
						target.title = info.get('title', target.title)

	@functools.wraps(changed)
	async def handle_target_info_changed(self: Any, event: dict) -> None:
		info = event.get('targetInfo', {})
		target_id = info.get('targetId')
		pending = _pending(self)
		if target_id in pending and target_id not in self._targets:
			pending[target_id] = info
			return
		await changed(self, event)

	_saved.replace(SessionManager, '_handle_target_attached', handle_target_attached)
	_saved.replace(SessionManager, '_handle_target_info_changed', handle_target_info_changed)


def _revert() -> None:
	_saved.restore()


PATCH = Patch(
	name='late_target_info',
	title="a new tab's URL survives its attach",
	changes='``SessionManager._handle_target_info_changed`` keeps a change for a tab whose attach has begun but '
	'which is not tracked yet; ``_handle_target_attached`` applies the latest one once it tracks the tab.',
	why="a change that arrived during the attach's first round trip was dropped: with Chromium's headless shell a "
	'tab opened with a URL kept the URL "" in the state and the tab list.',
	package='browser-use',
	versions=(BROWSER_USE_VERSION,),
	sources={
		f'{_MANAGER}._handle_target_attached': 'fc669da436d9e214',
		f'{_MANAGER}._handle_target_info_changed': 'd78a4f444cd9aa4e',
	},
	replaces=(f'{_MANAGER}._handle_target_attached', f'{_MANAGER}._handle_target_info_changed'),
	switch='late_target_info',
	when_refused='browser-use\'s own tracking: a tab opened with a URL may show the URL "" until it navigates again',
	apply=_apply,
	revert=_revert,
	logger=logger.name,
	refused_message="browser-use's own tab tracking kept (a tab opened with a URL may show no URL until it navigates)",
)
