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
	for _ in range(40):  # the browser closes the target asynchronously; report the settled state
		if target not in await tab_titles(state):
			break
		await asyncio.sleep(0.05)
	await ensure_focus(state)  # closing the focused tab leaves no focus until browser-use or we pick another
	return f'Closed tab # {args.tab_id}, now on {await current_url(state)}'
