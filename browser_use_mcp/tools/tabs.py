"""Tabs of one session's browser: list, switch, close."""

from __future__ import annotations

import asyncio

from pydantic import Field

from browser_use_mcp.sessions import SessionState
from browser_use_mcp.tools.base import Args, Call, IncludeState, NoArgs, Output, Reply, as_json, tool
from browser_use_mcp.tools.common import (
	current_url,
	dispatch,
	ensure_focus,
	list_tabs,
	public_tabs,
	resolve_tab,
	tab_titles,
)

CLOSE_SETTLE = 10.0  # s a closed tab gets to leave the browser's list before the reply is made anyway


class TabInfo(Output):  # field order is the key order of the JSON text
	tab_id: str = Field(description='What browser_switch_tab and browser_close_tab take.')
	url: str
	title: str


class TabList(Output):
	tabs: list[TabInfo]


@tool('List tabs', read_only=True, open_world=False)
async def browser_list_tabs(state: SessionState, args: NoArgs, call: Call) -> Reply[TabList]:
	"""List the open tabs of the session's browser, each with its 4-character tab_id, URL and title."""
	out = TabList.model_validate({'tabs': public_tabs(await list_tabs(state))}).dump()
	return Reply(as_json(out['tabs']), structured=out)


class TabArgs(Args):
	tab_id: str = Field(min_length=1, max_length=64, description='The 4-character tab_id from browser_list_tabs.')
	include_state: IncludeState = False


@tool('Switch tab', destructive=False, idempotent=True, open_world=False)
async def browser_switch_tab(state: SessionState, args: TabArgs, call: Call) -> str:
	"""Make another tab of the session's browser the current one."""
	from browser_use.browser.events import SwitchTabEvent

	target = await resolve_tab(state, args.tab_id)
	await dispatch(state, SwitchTabEvent(target_id=target), f'Switching to tab {args.tab_id}')
	return f'Switched to tab {args.tab_id}: {await current_url(state)}'


@tool('Close tab', destructive=True, idempotent=True, open_world=False)
async def browser_close_tab(state: SessionState, args: TabArgs, call: Call) -> str:
	"""Close a tab of the session's browser."""
	from browser_use.browser.events import CloseTabEvent

	target = await resolve_tab(state, args.tab_id)
	await dispatch(state, CloseTabEvent(target_id=target), f'Closing tab {args.tab_id}')
	# the browser closes the target asynchronously (seconds on a loaded machine), and browser-use
	# drops its focus on it only then: report the settled state, never a tab that is going away
	loop = asyncio.get_running_loop()
	settle = loop.time() + CLOSE_SETTLE
	while target in await tab_titles(state) and loop.time() < settle:
		await asyncio.sleep(0.05)
	for _ in range(3):
		await ensure_focus(state)  # closing the focused tab leaves no focus until browser-use or we pick another
		focused = state.browser_session.agent_focus_target_id
		now_on = next((t for t in await list_tabs(state) if t['_target_id'] == focused and focused != target), None)
		if now_on is not None:
			return f'Closed tab # {args.tab_id}, now on {now_on["url"]}'
		await asyncio.sleep(0.1)  # browser-use took the focus away after we set it: settle again
	return f'Closed tab # {args.tab_id}, now on {await current_url(state)}'
