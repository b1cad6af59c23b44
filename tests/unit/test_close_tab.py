"""browser_close_tab of the focused tab names the tab the session is on, also when the browser is
slow to close it (seconds on a loaded machine): it said "now on about:blank", or named the closed
tab, while the session was on another tab. A stand-in for browser-use's BrowserSession plays the
slow close, as browser-use would see it: the tab stays listed, then leaves, and its focus is dropped."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any

from browser_use_mcp.tools.tabs import TabArgs, browser_close_tab

SLOW_CLOSE = 2.3  # s


class SlowBrowser:
	def __init__(self) -> None:
		self.urls = {'T-HOME-0001': 'http://site/', 'T-TWO-00002': 'http://site/two'}
		self.agent_focus_target_id: str | None = 'T-TWO-00002'
		self.closing: dict[str, float] = {}
		self.event_bus = SimpleNamespace(dispatch=self._dispatch)
		self.cdp_client = SimpleNamespace(send=SimpleNamespace(Target=SimpleNamespace(getTargets=self._targets)))

	def _settle(self) -> None:
		for target, at in list(self.closing.items()):
			if time.monotonic() >= at:
				del self.closing[target]
				self.urls.pop(target, None)
				if self.agent_focus_target_id == target:  # browser-use clears a detached focus
					self.agent_focus_target_id = None

	async def _dispatch(self, event: Any) -> Any:
		self.closing[event.target_id] = time.monotonic() + SLOW_CLOSE

		async def result(**_: Any) -> None:
			return None

		return SimpleNamespace(event_result=result)

	async def _targets(self) -> dict[str, Any]:
		self._settle()
		return {'targetInfos': [{'targetId': t, 'type': 'page', 'title': u} for t, u in self.urls.items()]}

	async def get_tabs(self) -> list[Any]:
		self._settle()
		return [SimpleNamespace(target_id=t, url=u, title=u) for t, u in self.urls.items()]

	async def get_or_create_cdp_session(self, target_id: str | None = None, focus: bool = False) -> Any:
		if focus and target_id in self.urls:
			self.agent_focus_target_id = target_id
		return SimpleNamespace(session_id='s')

	async def get_current_page_url(self) -> str:
		self._settle()
		target = self.agent_focus_target_id
		return self.urls[target] if target in self.urls else 'about:blank'


async def test_closing_the_focused_tab_in_a_slow_browser_names_the_tab_the_session_is_on() -> None:
	browser = SlowBrowser()
	state = SimpleNamespace(browser_session=browser)
	reply = await asyncio.wait_for(browser_close_tab.handler(state, TabArgs(tab_id='0002'), None), 20)
	assert reply == 'Closed tab # 0002, now on http://site/', reply
	assert browser.agent_focus_target_id == 'T-HOME-0001'
