"""Tabs of one session's browser: list, switch, close."""

from __future__ import annotations

import asyncio

from pydantic import Field

from browser_use_mcp.tools.base import Args, Call, NoArgs, Output, Reply, as_json, session_tool
from browser_use_mcp.tools.common import current_url, dispatch, list_tabs, public_tabs, resolve_tab, tab_titles


class TabInfo(Output):  # field order is the key order of the JSON text
	tab_id: str = Field(description='What browser_switch_tab and browser_close_tab take.')
	url: str
	title: str


class TabList(Output):
	tabs: list[TabInfo]


@session_tool(
	'browser_list_tabs',
	"List the open tabs of the session's browser, each with its 4-character tab_id, URL and title.",
	NoArgs,
	read_only=True,
	output=TabList,
)
async def list_tabs_tool(state, args: NoArgs, call: Call) -> Reply:
	out = TabList.model_validate({'tabs': public_tabs(await list_tabs(state))}).dump()
	return Reply(as_json(out['tabs']), structured=out)


class TabArgs(Args):
	tab_id: str = Field(min_length=1, max_length=64, description='The 4-character tab_id from browser_list_tabs.')


@session_tool('browser_switch_tab', "Make another tab of the session's browser the current one.", TabArgs)
async def switch_tab(state, args: TabArgs, call: Call) -> str:
	from browser_use.browser.events import SwitchTabEvent

	target = await resolve_tab(state, args.tab_id)
	await dispatch(state, SwitchTabEvent(target_id=target), f'Switching to tab {args.tab_id}')
	return f'Switched to tab {args.tab_id}: {await current_url(state)}'


@session_tool('browser_close_tab', "Close a tab of the session's browser.", TabArgs)
async def close_tab(state, args: TabArgs, call: Call) -> str:
	from browser_use.browser.events import CloseTabEvent

	target = await resolve_tab(state, args.tab_id)
	await dispatch(state, CloseTabEvent(target_id=target), f'Closing tab {args.tab_id}')
	for _ in range(40):  # the browser closes the target asynchronously; report the settled state
		if target not in await tab_titles(state):
			break
		await asyncio.sleep(0.05)
	return f'Closed tab # {args.tab_id}, now on {await current_url(state)}'


TOOLS = [list_tabs_tool, switch_tab, close_tab]
