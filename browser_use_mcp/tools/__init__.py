"""The tool catalogue: every ``Tool`` defined in a family module, family by family.

A tool is defined once, by decorating its handler (``tools/base.py``); nothing lists tools by
hand. ``tools/list`` shows the families in the order below and each family's tools in the order
they are defined. ``base`` and ``common`` are the machinery and the helpers, not families;
``tests/unit/test_catalog.py`` fails for a module that is neither, or a handler that is not collected.
"""

from __future__ import annotations

from types import ModuleType

from browser_use_mcp.tools import (
	actions,
	admin,
	agent,
	content,
	debug,
	interaction,
	navigation,
	recording,
	session_files,
	tabs,
)
from browser_use_mcp.tools.base import Tool

FAMILIES: tuple[ModuleType, ...] = (
	navigation,
	interaction,
	content,
	tabs,
	debug,
	recording,
	agent,
	admin,
	actions,
	session_files,
)
HELPERS = ('base', 'common')

# The tool groups a server may offer (``--tools``): each a list of families. ``core`` is the
# catalogue every server offers by default (upstream's tools and the session tools); a model that
# needs more ways to act asks for ``interaction`` too, or ``all``.
GROUPS: dict[str, tuple[ModuleType, ...]] = {
	'core': (navigation, interaction, content, tabs, agent, admin),
	'interaction': (actions, session_files),
	'debug': (debug, recording),
}
ALL_GROUPS = 'all'
DEFAULT_GROUPS = ('core',)


def defined_in(module: ModuleType) -> list[Tool]:
	"""The tools a module defines (not those it imports), in definition order."""
	return [v for v in vars(module).values() if isinstance(v, Tool) and v.handler.__module__ == module.__name__]


ALL_TOOLS: list[Tool] = [t for family in FAMILIES for t in defined_in(family)]


def group_names() -> tuple[str, ...]:
	return (*GROUPS, ALL_GROUPS)


def tools_for(groups: tuple[str, ...] | list[str]) -> list[Tool]:
	"""The tools of the named groups, in catalogue order (a tool in two groups once)."""
	unknown = [g for g in groups if g not in group_names()]
	if unknown:
		raise ValueError(f'unknown tool group {", ".join(map(repr, unknown))}: choose from {", ".join(group_names())}')
	if ALL_GROUPS in groups:
		return list(ALL_TOOLS)
	families = {family for g in groups for family in GROUPS[g]}
	return [t for family in FAMILIES if family in families for t in defined_in(family)]
