"""A tab that attaches as its session closes (``patches.popup_resume``): browser-use's
``SessionManager._handle_target_attached`` checks for the root CDP client before its first await
and asserts it after, so a close in between raised "Root CDP client required" from every attach
still under way. The race is timing; here the close happens inside that first await, every time:
browser-use's own SessionManager, a stand-in for the session whose client's first answer comes
after the session dropped it."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest
from browser_use.browser.session_manager import SessionManager

from browser_use_mcp.patches import popup_resume
from tests.fixtures import patches_active, patches_reverted


class _ClosingSession:
	"""What ``_handle_target_attached`` reads of a browser session; it closes during the attach."""

	def __init__(self) -> None:
		self.logger = logging.getLogger('test.closing-session')

		async def set_auto_attach(params: dict[str, Any], session_id: str) -> dict[str, Any]:
			self._cdp_client_root = None  # the session closes while this answer is awaited
			return {}

		self._cdp_client_root: Any = SimpleNamespace(send=SimpleNamespace(Target=SimpleNamespace(setAutoAttach=set_auto_attach)))


EVENT = {
	'sessionId': 'S1',
	'targetInfo': {'targetId': 'T1', 'type': 'page', 'url': 'about:blank', 'title': ''},
	'waitingForDebugger': False,
}


async def test_a_tab_attaching_as_its_session_closes_is_left_alone() -> None:
	with patches_active(popup_resume.PATCH):
		popup_resume.stats.clear()
		manager = SessionManager(_ClosingSession())  # type: ignore[arg-type]
		await manager._handle_target_attached(EVENT)  # type: ignore[arg-type]
		assert popup_resume.stats.get('closing') == 1
		assert 'S1' not in manager._sessions


async def test_without_the_patch_browser_use_asserts() -> None:
	with patches_reverted(popup_resume.PATCH):
		manager = SessionManager(_ClosingSession())  # type: ignore[arg-type]
		with pytest.raises(AssertionError, match='Root CDP client required'):
			await manager._handle_target_attached(EVENT)  # type: ignore[arg-type]
