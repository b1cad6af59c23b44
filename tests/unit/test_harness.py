"""Who may import whom among the repository's top-level folders: the benchmarks and the tests share the
real-parts harness (``harness/``), the benchmarks never reach into ``tests/``, and the wheel ships only
``browser_use_mcp``."""

from __future__ import annotations

import ast
import fnmatch
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def imported_roots(source: str) -> set[str]:
	"""The top-level packages a module imports, at any depth (lazy imports inside functions too)."""
	roots = set()
	for node in ast.walk(ast.parse(source)):
		if isinstance(node, ast.Import):
			roots |= {alias.name.split('.')[0] for alias in node.names}
		elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
			roots.add(node.module.split('.')[0])
	return roots


def modules(folder: str) -> list[Path]:
	return sorted(p for p in (REPO / folder).rglob('*.py') if 'node_modules' not in p.parts)


def offenders(folder: str, forbidden: set[str]) -> list[str]:
	return [str(p.relative_to(REPO)) for p in modules(folder) if imported_roots(p.read_text()) & forbidden]


def test_the_check_sees_lazy_and_dotted_imports() -> None:
	source = 'import os\ndef f():\n\tfrom tests.e2e.test_http import connect\n\timport tests.pages\n'
	assert imported_roots(source) == {'os', 'tests'}
	assert imported_roots('from . import common\nfrom harness.pages import PageServer\n') == {'harness'}


@pytest.mark.parametrize(
	('folder', 'forbidden'),
	[
		('benchmarks', {'tests'}),  # benchmarks take their helpers from harness/
		('harness', {'tests', 'benchmarks'}),  # the harness stands on the package alone
		('browser_use_mcp', {'tests', 'benchmarks', 'harness'}),  # the product never imports its test rig
	],
)
def test_no_folder_imports_what_it_must_not(folder: str, forbidden: set[str]) -> None:
	assert modules(folder), f'no modules found under {folder}/'
	assert offenders(folder, forbidden) == [], f'{folder}/ must not import {sorted(forbidden)}: move the helper into harness/'


def test_the_wheel_packages_only_browser_use_mcp() -> None:
	config = tomllib.loads((REPO / 'pyproject.toml').read_text())['tool']['setuptools']['packages']['find']
	include = config['include']
	assert any(fnmatch.fnmatch('browser_use_mcp.tools', pattern) for pattern in include)
	for name in ('harness', 'harness.fakes', 'tests', 'tests.unit', 'benchmarks', 'scripts'):
		assert not any(fnmatch.fnmatch(name, pattern) for pattern in include), f'{name} would ship in the wheel'


def test_a_free_port_lies_below_the_ephemeral_range_and_binds() -> None:
	"""No outgoing connection can be given a port below the ephemeral range as its local port, so the
	port a test starts a server on cannot be taken that way before the server binds it."""
	import socket

	from harness.httpserver import LOWEST_PORT, _ephemeral_start, free_port

	top = _ephemeral_start()
	ports = {free_port() for _ in range(20)}
	assert all(LOWEST_PORT <= p < top for p in ports), (sorted(ports), top)
	assert len(ports) > 1, 'picked at random, not one fixed port'
	for port in ports:
		with socket.socket() as sock:
			sock.bind(('127.0.0.1', port))
