"""The tool catalogue: every ``Tool`` defined in a family module, family by family.

A tool is defined once, by decorating its handler (``tools/base.py``); nothing lists tools by
hand. ``tools/list`` shows the families in the order below and each family's tools in the order
they are defined. ``base`` and ``common`` are the machinery and the helpers, not families;
``tests/test_catalog.py`` fails for a module that is neither, or a handler that is not collected.
"""

from __future__ import annotations

from types import ModuleType

from browser_use_mcp.tools import admin, agent, content, interaction, navigation, tabs
from browser_use_mcp.tools.base import Tool

FAMILIES: tuple[ModuleType, ...] = (navigation, interaction, content, tabs, agent, admin)
HELPERS = ('base', 'common')


def defined_in(module: ModuleType) -> list[Tool]:
	"""The tools a module defines (not those it imports), in definition order."""
	return [v for v in vars(module).values() if isinstance(v, Tool) and v.handler.__module__ == module.__name__]


ALL_TOOLS: list[Tool] = [t for family in FAMILIES for t in defined_in(family)]
