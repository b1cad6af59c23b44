"""The tool catalogue, one module per family."""

from __future__ import annotations

from browser_use_mcp.tools import admin, agent, content, interaction, navigation, tabs
from browser_use_mcp.tools.base import Tool

ALL_TOOLS: list[Tool] = [
	*navigation.TOOLS,
	*interaction.TOOLS,
	*content.TOOLS,
	*tabs.TOOLS,
	*agent.TOOLS,
	*admin.TOOLS,
]
