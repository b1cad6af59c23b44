"""Every runtime change to a dependency's behaviour, behind one contract.

browser-use, bubus, cdp-use and uvicorn are used as they ship, except for what the modules of
this package change. Each of them declares, as data (a ``Patch``):

- ``name``, ``title``, what it ``changes`` and ``why`` (a line or two each);
- the ``package`` it changes and the exact ``versions`` it was written against;
- ``sources``: the sha256 (first 16 hex digits) of the source of every function or class of a
  dependency it replaces, wraps or relies on, keyed ``module:qualified.name``;
- ``replaces``: the attributes it swaps (empty when it only subclasses);
- ``switch``: the ``ServerConfig`` field (and with it the environment variable) that switches it
  off, and ``when_refused``: the behaviour kept instead, when off or refused;
- an ``apply``/``revert`` pair.

``apply_all(config)`` applies every patch once at start-up, before the first session exists, and
returns their statuses. A patch whose package is another version, or whose targets' sources hash
differently, is refused: one warning line, nothing changed, the dependency's own (safe) behaviour
kept. ``report()`` says for each one whether it is active, off (by configuration) or refused, and
why. Reads of a dependency's private attributes go through ``browser_use_mcp.patches.internals``,
under the same version and source checks. docs/architecture.md, "Patches", has the table.

Upgrading a dependency: ``tests/unit/test_patches.py`` fails for every patch whose pins no longer
match; read the new source of each target named, port the patch, then update its pins.
"""

from __future__ import annotations

import ast
import functools
import gc
import hashlib
import importlib
import importlib.metadata
import importlib.util
import inspect
import itertools
import linecache
import logging
import re
import threading
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
	from browser_use_mcp.config import ServerConfig

State = Literal['active', 'off', 'refused']

# In the order apply_all applies them.
PATCH_MODULES = (
	'bus_locks',
	'bus_text',
	'click_settle',
	'lazy_cloud_client',
	'profile_paths',
	'factory_signatures',
	'blank_tab_animation',
	'agent_keeps_browser',
	'uvicorn_signals',
	'result_adapters',
	'dom_capture',
	'local_cdp',
	'cdp_calls',
	'direct_state',
	'early_page_info',
	'paint_order_index',
	'serializer_checks',
	'quirks_viewport',
	'offload_state',
	'in_page_state',
	'typing_keeps_focus',
	'dialog_hold',
	'late_target_info',
	'navigation_wake',
	'popup_resume',
)


def _no_checks() -> list[str]:
	return []


@dataclass(frozen=True)
class Patch:
	"""One change to a dependency, declared as data (see the module docstring)."""

	name: str  # its module's name
	title: str  # a few words, for doctor
	changes: str  # what it changes
	why: str
	package: str  # the distribution it changes
	versions: tuple[str, ...]  # exactly the versions it was written against
	sources: Mapping[str, str]  # 'module:Qualified.name' of each target -> sha256[:16] of its source
	switch: str  # the ServerConfig field that switches it off (its variable is in config.ENV_VARS)
	when_refused: str  # the behaviour kept when it is off or refused
	apply: Callable[[], None]  # make the change (called only once the checks passed)
	revert: Callable[[], None]  # put back exactly what apply replaced
	replaces: tuple[str, ...] = ()  # the dependency attributes apply swaps; none when it only subclasses
	checks: Callable[[], list[str]] = _no_checks  # requirements beyond versions and source hashes
	logger: str = 'browser_use_mcp.patches'
	active_message: str = ''  # logged (info) once applied
	off_message: str = ''  # logged (info) when switched off by configuration
	refused_message: str = ''  # the warning's opening words when refused; the reasons follow

	@property
	def env_var(self) -> str:
		from browser_use_mcp.config import ENV_VARS

		return ENV_VARS[self.switch][0]


@dataclass(frozen=True)
class Status:
	name: str
	state: State
	reason: str = ''

	def describe(self) -> str:
		return self.state if not self.reason else f'{self.state}: {self.reason}'


# -- sources -------------------------------------------------------------------------------------


def source_digest(obj: Any) -> str:
	"""sha256 (first 16 hex digits) of a live object's source, as ``inspect`` reads it."""
	return hashlib.sha256(inspect.getsource(obj).encode()).hexdigest()[:16]


_DEFINITION = re.compile(r'^(?P<indent>[ \t]*)(?:async[ \t]+def|def|class)[ \t]+(?P<name>\w+)\b')


@dataclass(frozen=True)
class _Outline:
	"""One pass over a source file: where each definition is, where each top-level statement starts."""

	lines: list[str]
	definitions: list[tuple[int, str, str]]  # (line index, indentation, name)
	top_level: list[int]  # line indices of statements at column 0 (a closing bracket does not count)


_outlines: dict[str, _Outline] = {}


def _outline(path: str) -> _Outline:
	outline = _outlines.get(path)
	if outline is None:
		lines = linecache.getlines(path)
		if not lines:
			raise OSError(f'cannot read {path}')
		definitions, top_level = [], []
		for i, line in enumerate(lines):
			if line[:1] not in ('', ' ', '\t', '\n', '\r', '#', ')', ']', '}'):
				top_level.append(i)
			match = _DEFINITION.match(line)
			if match:
				definitions.append((i, match['indent'], match['name']))
		outline = _outlines[path] = _Outline(lines, definitions, top_level)
	return outline


def target_source(target: str) -> str:
	"""The source of ``module:Qualified.name`` as its file on disk has it, without importing it.

	The same text ``inspect.getsource`` gives for the object (decorators included), read from the
	file: a module not imported yet (browser-use's Agent) costs no import, and an attribute we
	have already replaced still hashes as the dependency shipped it. Blocks are delimited by
	indentation, the target's own checked by parsing it (``_block``; tests/unit/test_patches.py
	checks the result against ``inspect`` for every pin).
	"""
	module, _, qualname = target.partition(':')
	spec = importlib.util.find_spec(module)
	if spec is None or not spec.origin or not spec.origin.endswith('.py'):
		raise ImportError(f'no source file for {module}')
	outline = _outline(spec.origin)
	lines = outline.lines
	first, last, indent = 0, len(lines), ''  # the enclosing block's lines, and its body's indentation
	enclosing: tuple[int, str] | None = None  # the enclosing definition's first line and depth (None: the module)
	parts = qualname.split('.')
	for depth, name in enumerate(parts):
		found = _last_definition(outline, name, indent, first, last)
		if found is None and enclosing is not None:  # a string or brackets at a shallower depth cut the class short
			last = enclosing[0] + len(_block(lines, enclosing[0], first - 1, enclosing[1]))
			found = _last_definition(outline, name, indent, first, last)
		if found is None:
			raise AttributeError(f'{target}: {name} not found')
		start = found
		while start > 0 and lines[start - 1].startswith(indent + '@'):
			start -= 1
		if depth == len(parts) - 1:
			return ''.join(_block(lines, start, found, indent))
		enclosing = (start, indent)
		first = found + 1
		if indent:  # nested deeper than a top-level class: delimit by indentation
			last = next((i for i in range(first, last) if _ends_block(lines[i], indent)), last)
		else:
			last = next((i for i in outline.top_level if i >= first), len(lines))
		indent = _body_indent(lines[first:last], indent)
	raise AttributeError(target)


def _last_definition(outline: _Outline, name: str, indent: str, first: int, last: int) -> int | None:
	"""The line of the last definition of ``name`` at ``indent`` in [first, last): the last wins,
	as in Python."""
	found = None
	for i, definition_indent, definition_name in outline.definitions:
		if first <= i < last and definition_name == name and definition_indent == indent:
			found = i
	return found


def _block(lines: list[str], start: int, header: int, indent: str) -> list[str]:
	"""The lines ``inspect.getblock`` gives for the definition at ``header`` (its decorators from
	``start``), found without tokenizing: up to the first code line indented no deeper than the
	definition, checked by parsing (when that line is inside a string or brackets, a script in a
	string at column 0, say, the next such line is tried), then cut after the definition's last
	statement and the comments that follow it at its body's depth, as ``inspect`` cuts. Tokenizing
	every pinned target took ~90 ms of pure Python at each start, on the way to the first session;
	this takes less than half."""
	ends = (i for i in range(header + 1, len(lines) + 1) if i == len(lines) or _ends_block(lines[i], indent))
	for end in itertools.islice(ends, 8):
		definition = _one_definition(''.join(lines[start:end]), indent)
		if definition is None:
			continue
		offset = start - (1 if indent else 0)  # file line index of the parsed source's line 1, less one
		last = offset + (definition.end_lineno or definition.lineno)  # one past its last statement
		body = definition.body[0]
		if not lines[offset + body.lineno - 1][: body.col_offset].strip():  # the body starts on a line of its own
			for i in range(last, end):
				stripped = lines[i].lstrip()
				if stripped.startswith('#') and len(lines[i]) - len(stripped) >= body.col_offset:
					last = i + 1
		return lines[start:last]
	return inspect.getblock(lines[start:])


def _one_definition(source: str, indent: str) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | None:
	"""``source`` (indented by ``indent``) parsed, if it is exactly one function or class.

	With the cyclic collector paused: a parse makes tens of thousands of nodes, none in a cycle
	(all freed when the tree goes), and at start-up each parse set off full collections of the
	~150,000 objects not frozen yet: the pins' parses took 145 ms with them, 40 without."""
	collecting = gc.isenabled()
	gc.disable()
	try:
		tree = ast.parse(f'if 1:\n{source}' if indent else source)
	except SyntaxError:
		return None
	finally:
		if collecting:
			gc.enable()
	body = tree.body
	if indent:
		if len(body) != 1 or not isinstance(body[0], ast.If):
			return None
		body = body[0].body
	if len(body) == 1 and isinstance(body[0], (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
		return body[0]
	return None


def _ends_block(line: str, indent: str) -> bool:
	stripped = line.strip()
	return bool(stripped) and not stripped.startswith(('#', ')', ']', '}')) and len(line) - len(line.lstrip()) <= len(indent)


def _body_indent(body: list[str], outer: str) -> str:
	"""The indentation of the first statement of a class body (its header's continuation lines
	are indented deeper too, but a class header rarely spans lines)."""
	for line in body:
		stripped = line.strip()
		lead = line[: len(line) - len(line.lstrip())]
		if stripped and not stripped.startswith('#') and len(lead) > len(outer):
			return lead
	raise AttributeError('empty body')


def digest(target: str) -> str:
	"""sha256 (first 16 hex digits) of ``target_source(target)``; once a process per target, as
	the files are read once (``_outline``): several patches and reads pin the same targets."""
	found = _digests.get(target)
	if found is None:
		found = _digests[target] = hashlib.sha256(target_source(target).encode()).hexdigest()[:16]
	return found


_digests: dict[str, str] = {}


def resolve(target: str) -> Any:
	"""The live object ``module:Qualified.name`` names (imports the module)."""
	module, _, qualname = target.partition(':')
	obj: Any = importlib.import_module(module)
	for attr in qualname.split('.'):
		obj = inspect.getattr_static(obj, attr)
	return obj


@functools.cache
def installed_version(package: str) -> str | None:
	try:
		return importlib.metadata.version(package)
	except importlib.metadata.PackageNotFoundError:
		return None


def pin_problems(
	package: str, versions: Iterable[str], sources: Mapping[str, str], checks: Callable[[], list[str]] = _no_checks
) -> list[str]:
	"""Why code written against ``package`` at ``versions`` must not run here; empty when it may."""
	version = installed_version(package)
	if version is None:
		return [f'{package} is not installed']
	versions = tuple(versions)
	if version not in versions:
		return [f'{package} is {version}, this was written for {" or ".join(versions)}']
	found: list[str] = []
	for target, expected in sources.items():
		try:
			actual = digest(target)
		except (ImportError, AttributeError, OSError, SyntaxError, ValueError, StopIteration) as exc:
			found.append(f'{target} unavailable ({type(exc).__name__})')
			continue
		if actual != expected:
			found.append(f'{target} changed (source {actual}, expected {expected})')
	try:
		found.extend(checks())
	except Exception as exc:  # a check that cannot even run is a refusal, not a crash
		found.append(f'check failed: {type(exc).__name__}: {exc}')
	return found


def problems(patch: Patch) -> list[str]:
	"""Why ``patch`` must not be applied here; empty when its targets are what it was written for."""
	return pin_problems(patch.package, patch.versions, patch.sources, patch.checks)


# -- applying ------------------------------------------------------------------------------------

_lock = threading.RLock()  # apply_all may run in a thread while a tool applies one patch on the loop
_statuses: dict[str, Status] = {}


def switched_on(patch: Patch, config: ServerConfig | None) -> bool:
	return True if config is None else bool(getattr(config, patch.switch))


def preview(patch: Patch, config: ServerConfig | None = None) -> Status:
	"""What ``apply`` would make of ``patch`` under ``config``; changes and logs nothing."""
	if not switched_on(patch, config):
		return Status(patch.name, 'off', f'{patch.env_var}=false')
	found = problems(patch)
	if found:
		return Status(patch.name, 'refused', '; '.join(found))
	return Status(patch.name, 'active')


def apply(patch: Patch, config: ServerConfig | None = None, *, enabled: bool | None = None) -> Status:
	"""Apply ``patch`` unless ``config`` (or ``enabled``) switches it off or its targets differ.

	Once per process: a later call returns the status of the first until ``revert``. Never
	raises; logs one line (info when applied or off, warning when refused).
	"""
	with _lock:
		status = _statuses.get(patch.name)
		if status is not None:
			return status
		log = logging.getLogger(patch.logger)
		on = switched_on(patch, config) if enabled is None else enabled
		if not on:
			status = Status(patch.name, 'off', f'{patch.env_var}=false')
			if patch.off_message:
				log.info('%s', patch.off_message)
		else:
			found = problems(patch)
			if not found:
				try:
					patch.apply()
				except Exception as exc:
					try:
						patch.revert()
					except Exception:
						log.debug('revert after a failed apply of %s failed', patch.name, exc_info=True)
					found = [f'applying it failed: {type(exc).__name__}: {exc}']
			if found:
				status = Status(patch.name, 'refused', '; '.join(found))
				log.warning('%s: %s', patch.refused_message or f'{patch.name} refused', status.reason)
			else:
				status = Status(patch.name, 'active')
				if patch.active_message:
					log.info('%s', patch.active_message)
		_statuses[patch.name] = status
		return status


def revert(patch: Patch) -> None:
	"""Undo ``patch`` (when active) and forget its status, so the next ``apply`` decides afresh."""
	with _lock:
		status = _statuses.pop(patch.name, None)
		if status is not None and status.state == 'active':
			patch.revert()


def status_of(patch: Patch | str) -> Status | None:
	return _statuses.get(patch if isinstance(patch, str) else patch.name)


def is_active(patch: Patch | str) -> bool:
	status = status_of(patch)
	return status is not None and status.state == 'active'


def all_patches() -> list[Patch]:
	return [importlib.import_module(f'{__name__}.{name}').PATCH for name in PATCH_MODULES]


def apply_all(config: ServerConfig | None = None) -> list[Status]:
	"""Apply every patch (once; idempotent) and check every private read; their statuses.

	Call it before the first session's browser-use objects exist, with the complete config.
	It reads source files and imports what browser-use's session already imports: run it in a
	thread (``await asyncio.to_thread(patches.apply_all, config)``) to keep the loop free.
	"""
	from browser_use_mcp.patches import internals

	statuses = [apply(patch, config) for patch in all_patches()]
	internals.check_all()
	return statuses


def revert_all() -> None:
	for patch in reversed(all_patches()):
		revert(patch)


def report(config: ServerConfig | None = None, patches: Iterable[Patch] | None = None) -> list[Status]:
	"""Each patch's status: as applied in this process, or else what ``config`` would make of it."""
	return [status_of(p) or preview(p, config) for p in (all_patches() if patches is None else patches)]


@dataclass
class Saved:
	"""Originals a patch replaced, to put back exactly (``revert`` restores only what was saved)."""

	values: dict[tuple[Any, str], Any] = field(default_factory=dict)

	def replace(self, owner: Any, name: str, value: Any) -> None:
		key = (owner, name)
		if key not in self.values:
			self.values[key] = vars(owner).get(name, _INHERITED)
		setattr(owner, name, value)

	def original(self, owner: Any, name: str) -> Any:
		value = self.values[(owner, name)]
		return inspect.getattr_static(owner.__mro__[1], name) if value is _INHERITED else value

	def restore(self) -> None:
		for (owner, name), value in reversed(list(self.values.items())):
			if value is _INHERITED:
				delattr(owner, name)
			else:
				setattr(owner, name, value)
		self.values.clear()


_INHERITED = object()  # the attribute was not the owner's own: restoring deletes ours


class AsyncioProxy:
	"""The ``asyncio`` module as a patched dependency module sees it (``Saved.replace(module, 'asyncio',
	...)``): everything passes through to asyncio except what a subclass overrides (``sleep``, within
	the calls a context variable marks)."""

	def __init__(self, real: Any) -> None:
		self._real = real

	def __getattr__(self, name: str) -> Any:
		return getattr(self._real, name)


def per_connection(cache: MutableMapping[Any, Any], browser_session: Any, make: Callable[[Any], Any], what: str) -> Any:
	"""What ``make(client)`` built for the session's current CDP connection (its root client), once per
	connection: cached in ``cache`` (a ``WeakKeyDictionary``). None without a connection, or when
	``make`` raised (``what`` names it in the debug log)."""
	from browser_use_mcp.patches import internals

	client = internals.root_cdp_client(browser_session)
	if client is None:
		return None
	made = cache.get(client)
	if made is None:
		try:
			made = cache[client] = make(client)
		except Exception as exc:
			logging.getLogger(__name__).debug('%s unavailable: %r', what, exc)
			return None
	return made
