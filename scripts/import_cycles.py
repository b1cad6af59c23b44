"""Import cycles between the package's modules: ``.venv/bin/python scripts/import_cycles.py``.

Prints each strongly connected group of modules that import each other, twice: counting only
imports made when a module loads (its top level, outside ``if TYPE_CHECKING``), then counting the
imports made inside functions too (lazy ones). A package's ``__init__`` counts as importing its
submodules only when it names them. Reads the source (ast); imports nothing of the package.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = 'browser_use_mcp'


def module_name(path: Path) -> str:
	parts = list(path.relative_to(ROOT).with_suffix('').parts)
	if parts[-1] == '__init__':
		parts.pop()
	return '.'.join(parts)


def resolve(name: str, modules: set[str]) -> str | None:
	"""The package module an imported name lives in (the longest known prefix)."""
	while name:
		if name in modules:
			return name
		name = name.rpartition('.')[0]
	return None


def _type_checking(node: ast.If) -> bool:
	test = node.test
	return (isinstance(test, ast.Name) and test.id == 'TYPE_CHECKING') or (
		isinstance(test, ast.Attribute) and test.attr == 'TYPE_CHECKING'
	)


def imports(tree: ast.Module, here: str, is_package: bool, modules: set[str]) -> tuple[set[str], set[str]]:
	"""(modules imported at load, modules imported lazily inside functions)."""
	eager: set[str] = set()
	lazy: set[str] = set()

	def targets(node: ast.Import | ast.ImportFrom) -> set[str]:
		names: list[str] = []
		if isinstance(node, ast.Import):
			names = [a.name for a in node.names]
		else:
			base = node.module or ''
			if node.level:
				anchor = here if is_package else here.rpartition('.')[0]
				for _ in range(node.level - 1):
					anchor = anchor.rpartition('.')[0]
				base = f'{anchor}.{base}' if base else anchor
			names = [f'{base}.{a.name}' for a in node.names] + [base]
		found = {resolve(n, modules) for n in names if n.startswith(PACKAGE)}
		return {m for m in found if m and m != here}

	def walk(node: ast.AST, in_function: bool) -> None:
		for child in ast.iter_child_nodes(node):
			if isinstance(child, ast.If) and _type_checking(child):
				continue
			if isinstance(child, ast.Import | ast.ImportFrom):
				(lazy if in_function else eager).update(targets(child))
			walk(child, in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda))

	walk(tree, False)
	return eager, lazy - eager


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
	"""Tarjan's strongly connected components of more than one module (or a module importing itself)."""
	index: dict[str, int] = {}
	low: dict[str, int] = {}
	stack: list[str] = []
	on_stack: set[str] = set()
	found: list[list[str]] = []
	sys.setrecursionlimit(10000)

	def visit(v: str) -> None:
		index[v] = low[v] = len(index)
		stack.append(v)
		on_stack.add(v)
		for w in graph.get(v, ()):
			if w not in index:
				visit(w)
				low[v] = min(low[v], low[w])
			elif w in on_stack:
				low[v] = min(low[v], index[w])
		if low[v] == index[v]:
			group = []
			while True:
				w = stack.pop()
				on_stack.discard(w)
				group.append(w)
				if w == v:
					break
			if len(group) > 1:
				found.append(sorted(group))

	for v in sorted(graph):
		if v not in index:
			visit(v)
	return found


def main() -> int:
	paths = sorted((ROOT / PACKAGE).rglob('*.py'))
	modules = {module_name(p) for p in paths}
	eager: dict[str, set[str]] = {}
	both: dict[str, set[str]] = {}
	for path in paths:
		here = module_name(path)
		at_load, inside = imports(ast.parse(path.read_text(encoding='utf-8')), here, path.name == '__init__.py', modules)
		eager[here] = at_load
		both[here] = at_load | inside
	for label, graph in (('at load', eager), ('with lazy imports', both)):
		groups = cycles(graph)
		print(f'{label}: {len(groups)} cycle(s)')
		for group in groups:
			print('  ' + ' <-> '.join(m.removeprefix(PACKAGE + '.') for m in group))
	return 0


if __name__ == '__main__':
	raise SystemExit(main())
