"""The fast layer refuses what would make it slow: a Chromium, or a server of ours in a subprocess.

Other helper processes (the upstream catalogue dump, ``ldconfig``) are allowed: they are short and
start no browser.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

REFUSED = (
	'tests/unit launches no browser and no server: a test that needs one belongs in tests/ or tests/e2e/ '
	'(the layer that runs real Chromium)'
)


def launches_a_browser_or_server(args: Any) -> bool:
	argv = [args] if isinstance(args, str | bytes | os.PathLike) else list(args)
	words = [os.fsdecode(a) for a in argv]
	program = os.path.basename(words[0]).lower() if words else ''
	serves = any(a == '-m' and b.startswith('browser_use_mcp') for a, b in zip(words, words[1:], strict=False))
	return 'chrom' in program or 'headless_shell' in program or serves


@pytest.fixture(scope='package', autouse=True)
def no_browsers() -> Iterator[None]:
	"""Package-scoped: active for every test of tests/unit (and their module fixtures), and only for them."""
	launch = subprocess.Popen.__init__

	def guarded(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
		if launches_a_browser_or_server(args):
			raise RuntimeError(f'{REFUSED}; refused: {args!r}'[:400])
		launch(self, args, *rest, **kwargs)

	subprocess.Popen.__init__ = guarded  # type: ignore[method-assign]
	try:
		yield
	finally:
		subprocess.Popen.__init__ = launch  # type: ignore[method-assign]
