"""The patches contract (browser_use_mcp.patches): every runtime change to a dependency, and every
read of a dependency's private attribute, is declared, pinned to what is installed, reversible,
refused safely, and made nowhere else.

A browser-use (or bubus, cdp-use, uvicorn) upgrade fails here first: the pins name each function
whose source changed; port the patch, then update them.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.metadata
import logging
import re
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest

from browser_use_mcp import patches
from browser_use_mcp.config import ENV_VARS, ServerConfig, load_config
from browser_use_mcp.errors import BrowserActionFailed, InvalidArgument
from browser_use_mcp.patches import agent_keeps_browser, internals, uvicorn_signals
from browser_use_mcp.tools.common import check_allowed
from harness.servers import REPO

PATCHES = patches.all_patches()
BY_NAME = {p.name: p for p in PATCHES}
NAMES = [p.name for p in PATCHES]
DIGEST = re.compile(r'^[0-9a-f]{16}$')


@pytest.fixture
def pristine() -> Iterator[None]:
	"""Every dependency as shipped for the test; afterwards each patch as an earlier in-process
	server (or test) left it."""
	before = {p.name: patches.status_of(p) for p in PATCHES}
	patches.revert_all()
	yield
	patches.revert_all()
	for patch in PATCHES:
		status = before[patch.name]
		if status is not None:
			patches.apply(patch, enabled=status.state != 'off')


def snapshot(patch: patches.Patch) -> dict[str, Any]:
	"""The dependency objects the patch replaces or relies on, as they are now."""
	return {target: patches.resolve(target) for target in (*patch.replaces, *patch.sources)}


def same(a: dict[str, Any], b: dict[str, Any]) -> bool:
	return a.keys() == b.keys() and all(a[k] is b[k] for k in a)


def records(caplog: pytest.LogCaptureFixture, patch: patches.Patch) -> list[logging.LogRecord]:
	return [r for r in caplog.records if r.name == patch.logger]


# -- declarations and pins -----------------------------------------------------------------------


@pytest.mark.parametrize('name', NAMES)
def test_every_patch_is_declared_and_matches_the_installed_package(name: str) -> None:
	patch = BY_NAME[name]
	assert patch.name == name and patch.logger.endswith(f'.patches.{name}')
	assert all(text.strip() for text in (patch.title, patch.changes, patch.why, patch.when_refused, patch.refused_message))
	assert patch.versions and patch.sources
	assert all(DIGEST.match(d) for d in patch.sources.values()), patch.sources
	assert importlib.metadata.version(patch.package) in patch.versions, (
		f'{patch.package} {importlib.metadata.version(patch.package)} is installed; {name} was written for {patch.versions}'
	)
	assert patches.problems(patch) == [], f'{name}: port it to what is installed, then update its pins'
	# its off switch is a config field, read from a documented environment variable, on by default
	assert patch.switch in ENV_VARS and getattr(ServerConfig(), patch.switch) is True
	assert getattr(load_config({patch.env_var: 'false'}, browser_use=False), patch.switch) is False


def test_every_private_read_is_declared_and_matches_the_installed_packages() -> None:
	for read in internals.READS:
		assert read.fallback.strip() and read.reads.strip()
		assert importlib.metadata.version(read.package) in read.versions, read
		assert all(DIGEST.match(d) for d in read.sources.values())
		assert read.problems() == [], read.name
	assert all(not found for found in internals.check_all().values())


def _all_targets() -> list[str]:
	return sorted({t for p in PATCHES for t in p.sources} | {t for r in internals.READS for t in r.sources})


@pytest.mark.parametrize('target', _all_targets())
def test_a_pin_hashes_the_same_source_inspect_sees(target: str, pristine: None) -> None:
	"""Pins are checked from the source files (no import, unaffected by our own swaps); they must
	hash exactly what ``inspect.getsource`` gives for the live object."""
	assert patches.digest(target) == patches.source_digest(patches.resolve(target))


# Shapes a pinned definition can take that indentation alone would delimit wrongly or not at all;
# the pins' digests must be of exactly what ``inspect`` gives for each.
BLOCK_SHAPES = """\
import functools


def one_liner(): return 1
# a comment at column 0 after it


@functools.cache
def decorated(a,
		b):
	return a + b
	# a trailing comment at the body's depth: inspect keeps it
# one at column 0: inspect leaves it


def script():
	code = \"\"\"
function f() {
	return 1;
}
\"\"\"
	return code


class Holder:
	def method(self):
		text = \"\"\"
not indented at all
\"\"\"
		return text

	async def closing_bracket(
		self,
	):
		return [
	1,
]

	# a comment between methods

	def last(self):
		return (
			1
		)


def after(): ...
"""


@pytest.mark.parametrize(
	'qualname', ['one_liner', 'decorated', 'script', 'Holder', 'Holder.method', 'Holder.closing_bracket', 'Holder.last', 'after']
)
def test_a_definition_is_delimited_as_inspect_does(qualname: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
	"""Indentation finds a block's end, a parse checks it: a string or brackets at a shallower
	indentation, decorators, comments after the body and a one-line definition give the text
	``inspect.getsource`` gives."""
	import importlib
	import inspect

	(tmp_path / 'pin_shapes.py').write_text(BLOCK_SHAPES)
	monkeypatch.syspath_prepend(str(tmp_path))
	module = importlib.import_module('pin_shapes')
	obj: Any = module
	for part in qualname.split('.'):
		obj = getattr(obj, part)
	try:
		assert patches.target_source(f'pin_shapes:{qualname}') == inspect.getsource(obj)
	finally:
		del __import__('sys').modules['pin_shapes']
		patches._outlines.pop(str(tmp_path / 'pin_shapes.py'), None)


# -- apply, revert, refuse, off ------------------------------------------------------------------


@pytest.mark.parametrize('name', NAMES)
def test_apply_and_revert_round_trip_to_the_exact_original_objects(name: str, pristine: None) -> None:
	patch = BY_NAME[name]
	before = snapshot(patch)
	status = patches.apply(patch, enabled=True)
	assert status == patches.Status(name, 'active')
	during = snapshot(patch)
	for target in patch.replaces:
		assert during[target] is not before[target], f'{target} was not replaced'
	assert patches.apply(patch, enabled=True) is status  # once per process
	assert same(snapshot(patch), during)
	patches.revert(patch)
	assert same(snapshot(patch), before)
	assert patches.status_of(patch) is None


@pytest.mark.parametrize('name', NAMES)
def test_an_applied_patch_still_passes_its_own_checks(name: str, pristine: None) -> None:
	"""doctor checks the patches of a server that has applied them: a patch must not read its own
	change as a changed dependency (profile_paths once did, and doctor reported it refused)."""
	patch = BY_NAME[name]
	assert patches.apply(patch, enabled=True).state == 'active'
	assert patches.problems(patch) == []
	assert patches.preview(patch).state == 'active'


@pytest.mark.parametrize('name', NAMES)
def test_a_changed_source_refuses_with_one_warning_and_touches_nothing(
	name: str, pristine: None, caplog: pytest.LogCaptureFixture
) -> None:
	patch = BY_NAME[name]
	target = next(iter(patch.sources))
	broken = dataclasses.replace(patch, sources={**patch.sources, target: '0' * 16})
	before = snapshot(patch)
	with caplog.at_level(logging.INFO, logger=patch.logger):
		status = patches.apply(broken, enabled=True)
		assert patches.apply(broken, enabled=True) is status  # decided once: no second warning
	assert status.state == 'refused' and f'{target} changed' in status.reason
	logged = records(caplog, patch)
	assert len(logged) == 1 and logged[0].levelno == logging.WARNING, [r.getMessage() for r in logged]
	assert logged[0].getMessage().startswith(patch.refused_message) and target in logged[0].getMessage()
	assert same(snapshot(patch), before)
	assert patches.report(patches=[broken]) == [status]


@pytest.mark.parametrize('name', NAMES)
def test_another_version_is_refused(name: str, pristine: None) -> None:
	patch = BY_NAME[name]
	broken = dataclasses.replace(patch, versions=('0.0.1',))
	before = snapshot(patch)
	status = patches.apply(broken, enabled=True)
	assert status.state == 'refused' and 'written for 0.0.1' in status.reason
	assert same(snapshot(patch), before)


@pytest.mark.parametrize('name', NAMES)
def test_the_off_switch_leaves_the_target_untouched(name: str, pristine: None, caplog: pytest.LogCaptureFixture) -> None:
	patch = BY_NAME[name]
	config = load_config({patch.env_var: 'false'}, browser_use=False)
	before = snapshot(patch)
	with caplog.at_level(logging.INFO, logger=patch.logger):
		status = patches.apply(patch, config)
	assert status == patches.Status(name, 'off', f'{patch.env_var}=false')
	assert same(snapshot(patch), before)
	assert all(r.levelno < logging.WARNING for r in records(caplog, patch))


def test_apply_all_applies_each_once_and_reports_it(pristine: None, caplog: pytest.LogCaptureFixture) -> None:
	config = ServerConfig(fast_actions=False)
	assert [s.state for s in patches.report(config)] == ['off' if p.name == 'click_settle' else 'active' for p in PATCHES], (
		'a preview'
	)
	assert all(patches.status_of(p) is None for p in PATCHES), 'a preview applies nothing'
	statuses = patches.apply_all(config)
	assert [s.name for s in statuses] == NAMES
	assert {s.name: s.state for s in statuses} == {n: 'off' if n == 'click_settle' else 'active' for n in NAMES}
	assert statuses[NAMES.index('click_settle')].reason == 'BROWSER_USE_MCP_FAST_ACTIONS=false'
	applied = {n: snapshot(BY_NAME[n]) for n in NAMES}
	caplog.clear()
	with caplog.at_level(logging.DEBUG, logger='browser_use_mcp.patches'):
		assert patches.apply_all(ServerConfig()) == statuses  # idempotent: the first decision stands
	assert not caplog.records
	assert all(same(snapshot(BY_NAME[n]), applied[n]) for n in NAMES)
	assert patches.report() == statuses


# -- the safe behaviour of patches that subclass -------------------------------------------------


def test_without_its_patch_the_agent_tool_refuses_rather_than_close_the_browser(pristine: None) -> None:
	with pytest.raises(BrowserActionFailed, match='BROWSER_USE_MCP_AGENT_KEEPS_BROWSER=false') as raised:
		agent_keeps_browser.agent_class(ServerConfig(agent_keeps_browser=False))
	assert 'retry_with_browser_use_agent is unavailable' in raised.value.message
	patches.revert_all()
	broken = dataclasses.replace(agent_keeps_browser.PATCH, versions=('0.0.1',))
	patches.apply(broken)
	with pytest.raises(BrowserActionFailed, match='refused'):
		agent_keeps_browser.agent_class(ServerConfig())


def test_the_session_agent_only_overrides_close(pristine: None) -> None:
	from browser_use.agent.service import Agent

	close = Agent.__dict__['close']
	cls = agent_keeps_browser.agent_class(ServerConfig())
	assert issubclass(cls, Agent) and {k for k in vars(cls) if not k.startswith('__')} == {'close'}
	assert Agent.__dict__['close'] is close


def test_uvicorn_keeps_its_signals_only_when_the_patch_is_not_active(pristine: None) -> None:
	import uvicorn

	assert uvicorn_signals.server_class(ServerConfig(orderly_http_shutdown=False)) is uvicorn.Server
	patches.revert_all()
	quiet = uvicorn_signals.server_class(ServerConfig())
	assert issubclass(quiet, uvicorn.Server) and quiet is not uvicorn.Server
	assert {k for k in vars(quiet) if not k.startswith('__')} == {'capture_signals'}


# -- private reads fail safe ---------------------------------------------------------------------


class NoCheck:
	"""A security watchdog without the method the pre-check calls."""


class FailingCheck:
	def _is_url_allowed(self, url: str) -> bool:
		raise RuntimeError('boom')


class Verdict:
	def __init__(self, allowed: bool) -> None:
		self.allowed = allowed

	def _is_url_allowed(self, url: str) -> bool:
		return self.allowed


def session_state(watchdog: Any, **profile: Any) -> Any:
	settings = {'allowed_domains': None, 'prohibited_domains': None, 'block_ip_addresses': False, **profile}
	browser_session = types.SimpleNamespace(browser_profile=types.SimpleNamespace(**settings), _security_watchdog=watchdog)
	return types.SimpleNamespace(browser_session=browser_session)


RESTRICTIONS = [
	{'allowed_domains': ['example.com']},
	{'prohibited_domains': ['evil.example']},
	{'block_ip_addresses': True},
]
BROKEN_WATCHDOGS = {'no watchdog': None, 'no check': NoCheck(), 'check raises': FailingCheck()}


@pytest.mark.parametrize('restriction', RESTRICTIONS, ids=lambda r: next(iter(r)))
@pytest.mark.parametrize('broken', list(BROKEN_WATCHDOGS))
def test_the_domain_pre_check_fails_closed_when_domains_are_restricted(broken: str, restriction: dict[str, Any]) -> None:
	state = session_state(BROKEN_WATCHDOGS[broken], **restriction)
	with pytest.raises(BrowserActionFailed, match='cannot check this URL') as raised:
		check_allowed(state, 'https://example.com/')
	assert 'nothing was sent' in raised.value.message


@pytest.mark.parametrize('broken', list(BROKEN_WATCHDOGS))
def test_the_domain_pre_check_passes_through_when_nothing_is_restricted(broken: str) -> None:
	check_allowed(session_state(BROKEN_WATCHDOGS[broken]), 'https://example.com/')


def test_the_domain_pre_check_follows_browser_uses_verdict() -> None:
	with pytest.raises(InvalidArgument, match='not allowed'):
		check_allowed(session_state(Verdict(False), allowed_domains=['other.example']), 'https://example.com/')
	check_allowed(session_state(Verdict(True), allowed_domains=['example.com']), 'https://example.com/')
	check_allowed(session_state(None, allowed_domains=['example.com']), 'about:blank')  # never sent anywhere


def test_a_refused_read_fails_closed_and_warns_once(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
	read = internals._BY_NAME['url_allowed']
	monkeypatch.setitem(internals._BY_NAME, 'url_allowed', dataclasses.replace(read, versions=('0.0.1',)))
	internals.forget()
	try:
		with caplog.at_level(logging.INFO, logger=internals.logger.name):
			for _ in range(2):
				with pytest.raises(BrowserActionFailed, match='written for 0.0.1'):
					check_allowed(session_state(Verdict(True), allowed_domains=['example.com']), 'https://example.com/')
			check_allowed(session_state(Verdict(True)), 'https://example.com/')
		warnings = [r for r in caplog.records if r.name == internals.logger.name]
		assert len(warnings) == 1 and warnings[0].levelno == logging.WARNING
		assert 'url_allowed' in warnings[0].getMessage()
	finally:
		monkeypatch.undo()
		internals.forget()


def test_other_private_reads_fall_back_when_the_attribute_is_not_there() -> None:
	bare = types.SimpleNamespace()
	assert internals.root_cdp_client(bare) is None
	with pytest.raises(internals.Unavailable):
		internals.downloads_watchdog(bare)
	with pytest.raises(internals.Unavailable):
		internals.hook_cdp_event(bare, 'Page.frameNavigated', lambda params, session_id: None)
	assert internals.mark_intentional_stop(object()) is False


# -- private attributes are touched only inside patches/ -----------------------------------------

PACKAGE = REPO / 'browser_use_mcp'
PATCHES_DIR = PACKAGE / 'patches'
# Private reads still made outside patches/, each with the internals function that will replace
# it; empty when none is left. The test fails when an entry no longer occurs.
PENDING: dict[str, str] = {}
# Documented names that merely start with an underscore.
CONVENTIONAL = {('os', '_exit')}
ACCESSORS = {'getattr', 'setattr', 'hasattr', 'delattr'}


def _outside_patches() -> list[Path]:
	return sorted(p for p in PACKAGE.rglob('*.py') if PATCHES_DIR not in p.parents)


def _private(name: str) -> bool:
	return name.startswith('_') and not (name.startswith('__') and name.endswith('__'))


def our_private_names() -> set[str]:
	"""Private attributes our own classes define (outside patches/, whose classes may mirror a
	dependency's names): ``self._x =`` / ``cls._x =`` assignments, class-body names and methods,
	dataclass fields; and the ``_browser_use_mcp`` namespace we put on objects we make."""
	names: set[str] = set()
	for path in _outside_patches():
		for node in ast.walk(ast.parse(path.read_text(encoding='utf-8'))):
			if isinstance(node, ast.ClassDef):
				for stmt in node.body:
					if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
						names.add(stmt.name)
					elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
						names.add(stmt.target.id)
					elif isinstance(stmt, ast.Assign):
						names.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
			targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
			for target in targets:
				if (
					isinstance(target, ast.Attribute)
					and isinstance(target.value, ast.Name)
					and target.value.id in ('self', 'cls')
				):
					names.add(target.attr)
	return {n for n in names if _private(n)}


def private_accesses(tree: ast.AST, ours: set[str]) -> Iterator[tuple[str, int]]:
	"""(attribute, line) for each private attribute in ``tree`` that is neither ours nor on self/cls."""
	for node in ast.walk(tree):
		if isinstance(node, ast.Attribute):
			owner, name = node.value, node.attr
		elif (
			isinstance(node, ast.Call)
			and isinstance(node.func, ast.Name)
			and node.func.id in ACCESSORS
			and len(node.args) >= 2
			and isinstance(node.args[1], ast.Constant)
			and isinstance(node.args[1].value, str)
		):
			owner, name = node.args[0], node.args[1].value
		else:
			continue
		if not _private(name) or name in ours or name.startswith('_browser_use_mcp'):
			continue
		if isinstance(owner, ast.Name) and (owner.id in ('self', 'cls') or (owner.id, name) in CONVENTIONAL):
			continue
		yield name, node.lineno


def foreign_private_accesses() -> dict[tuple[str, str], list[int]]:
	"""(file, attribute) -> lines, for every private attribute outside patches/ that is not ours."""
	ours = our_private_names()
	found: dict[tuple[str, str], list[int]] = {}
	for path in _outside_patches():
		for name, line in private_accesses(ast.parse(path.read_text(encoding='utf-8')), ours):
			found.setdefault((path.relative_to(PACKAGE).as_posix(), name), []).append(line)
	return found


def test_no_module_outside_patches_touches_a_dependencys_private_attribute() -> None:
	found = foreign_private_accesses()
	unexpected = {key: lines for key, lines in found.items() if key[1] not in PENDING}
	assert not unexpected, (
		'private attributes of dependencies touched outside browser_use_mcp/patches/ (add a guarded function to '
		f'patches/internals.py and call it instead): {unexpected}'
	)
	seen = {name for _file, name in found}
	stale = [f'{name} (now {fix})' for name, fix in PENDING.items() if name not in seen]
	assert not stale, f'these no longer occur: remove them from PENDING in tests/unit/test_patches.py: {stale}'


def test_the_private_attribute_check_flags_what_it_must() -> None:
	ours = our_private_names()
	assert {'_tasks', '_ready', '_sessions'} <= ours  # SessionState._tasks, ChromiumProcess._ready, the registry's
	assert not ours & {'_cached_selector_map', '_security_watchdog', '_intentional_stop', '_event_registry'}
	code = (
		'bs._cached_selector_map\n'
		'getattr(bs, "_security_watchdog", None)\n'
		'bs._intentional_stop = True\n'
		'self._mine\n'
		'os._exit(0)\n'
		'state._tasks\n'
		'obj.__dict__\n'
		'factory._browser_use_mcp_scoped\n'
	)
	flagged = [name for name, _line in private_accesses(ast.parse(code), ours)]
	assert sorted(flagged) == ['_cached_selector_map', '_intentional_stop', '_security_watchdog']


# -- the docs ------------------------------------------------------------------------------------


def test_architecture_has_the_patches_table() -> None:
	text = (REPO / 'docs' / 'architecture.md').read_text(encoding='utf-8')
	section = text.split('## Patches', 1)[1].split('\n## ', 1)[0]
	for patch in PATCHES:
		row = next((line for line in section.splitlines() if line.startswith(f'| `{patch.name}`')), None)
		assert row is not None, f'{patch.name} missing from the Patches table of docs/architecture.md'
		assert f'`{patch.env_var}`' in row and f'{patch.package}@{patch.versions[0]}' in row
	for read in internals.READS:
		assert f'`{read.name}`' in section, f'{read.name} missing from docs/architecture.md'


# -- the get_state patches -----------------------------------------------------------------------


def test_result_adapters_build_one_adapter_per_type_that_validates_as_a_new_one() -> None:
	from pydantic import TypeAdapter

	from browser_use_mcp.patches.result_adapters import CachedTypeAdapter

	cached = CachedTypeAdapter(TypeAdapter)
	first = cached(dict[str, int])
	assert cached(dict[str, int]) is first and cached(list[int]) is not first
	assert first.validate_python({'a': '1'}) == TypeAdapter(dict[str, int]).validate_python({'a': '1'}) == {'a': 1}
	with pytest.raises(ValueError):
		first.validate_python({'a': 'x'})
	unhashable = Annotated[int, {'a dict': 'cannot be hashed'}]  # cannot be a dictionary key: a new adapter each time
	assert cached(unhashable) is not cached(unhashable) and cached(unhashable).validate_python('3') == 3


class _Bus:
	def __init__(self, queued: int) -> None:
		self.event_queue = types.SimpleNamespace(qsize=lambda: queued)


class _Session:
	"""A browser session whose state comes either from its DOM watchdog or through its bus."""

	def __init__(self, queued: int = 0) -> None:
		self.event_bus = _Bus(queued)
		self.via: list[str] = []
		outer = self

		class Watchdog:
			async def on_BrowserStateRequestEvent(self, event: Any) -> str:  # noqa: N802
				assert event.include_screenshot is False
				outer.via.append('watchdog')
				return 'state'

		self._dom_watchdog = Watchdog()

	async def get_browser_state_summary(self, include_screenshot: bool = True) -> str:
		self.via.append(f'bus (screenshot={include_screenshot})')
		return 'state'


async def test_direct_state_asks_the_watchdog_only_when_that_is_what_the_bus_would_do(pristine: None) -> None:
	from browser_use_mcp.patches import bus_locks, direct_state

	patches.apply(bus_locks.PATCH, enabled=True)
	patches.apply(direct_state.PATCH, enabled=True)
	idle, busy = _Session(), _Session(queued=1)
	assert await direct_state.request_state(idle) == 'state' and idle.via == ['watchdog']
	await direct_state.request_state(idle, include_screenshot=True)  # the screenshot needs the bus
	await direct_state.request_state(busy)  # events are queued: the state waits its turn behind them
	assert idle.via[1:] == ['bus (screenshot=True)'] and busy.via == ['bus (screenshot=False)']
	async with bus_locks.lock_for(idle.event_bus):  # an event is being processed: same
		await direct_state.request_state(idle)
	assert idle.via[2:] == ['bus (screenshot=False)']
	patches.revert(direct_state.PATCH)  # switched off: always the bus
	await direct_state.request_state(idle)
	assert idle.via[3:] == ['bus (screenshot=False)']


async def test_the_dialog_gate_hands_a_held_sessions_dialogs_over_and_leaves_the_others_to_browser_use(
	pristine: None,
) -> None:
	from browser_use.browser.watchdogs.popups_watchdog import PopupsWatchdog
	from cdp_use.cdp.registry import EventRegistry

	from browser_use_mcp.patches import dialog_hold

	assert patches.apply(dialog_hold.PATCH).state == 'active'
	answered_by_browser_use: list[str] = []

	async def original(self: Any, event: Any) -> None:  # what browser-use's handler registration amounts to
		self.browser_session._cdp_client_root._event_registry.register(
			dialog_hold.EVENT, lambda params, sid=None: answered_by_browser_use.append(params['message'])
		)

	class Session:  # weakly referenced, as a BrowserSession is
		def __init__(self) -> None:
			self._cdp_client_root = types.SimpleNamespace(_event_registry=EventRegistry())

	held, other = Session(), Session()
	wrapped = PopupsWatchdog.on_TabCreatedEvent
	assert wrapped.__wrapped__ is dialog_hold._saved.original(PopupsWatchdog, 'on_TabCreatedEvent')
	taken: list[tuple[str, str | None]] = []
	dialog_hold.hold(held, lambda params, sid: taken.append((params['message'], sid)) or True)
	for session in (held, other):
		for _ in range(2):  # a tab each: browser-use re-registers, the gate is put in front once
			await dialog_hold._wrap(original)(types.SimpleNamespace(browser_session=session), None)
		await session._cdp_client_root._event_registry.handle_event(dialog_hold.EVENT, {'message': 'hi'}, 'S1')
	assert taken == [('hi', 'S1')] and answered_by_browser_use == ['hi']
	dialog_hold.release(held)
	await held._cdp_client_root._event_registry.handle_event(dialog_hold.EVENT, {'message': 'again'}, 'S1')
	assert answered_by_browser_use == ['hi', 'again']
	dialog_hold.hold(other, lambda params, sid: True)
	del other, session  # an entry goes with its session
	assert len(dialog_hold._holders) == 0


async def test_early_page_info_is_read_once_beside_the_build() -> None:
	"""Within a state request the page info read starts with the build and is handed to the handler's
	own call (one read, begun before the build ended); outside one, or after a failed early read, the
	handler reads it itself; a read nobody asked for is not left running."""
	import asyncio

	from browser_use_mcp.patches import early_page_info

	log: list[str] = []
	fail = [False]

	class BrowserSession:
		async def get_or_create_cdp_session(self, target_id: object = None, focus: bool = True) -> object:
			client = types.SimpleNamespace(
				send=types.SimpleNamespace(Runtime=types.SimpleNamespace(runIfWaitingForDebugger=resume))
			)
			return types.SimpleNamespace(cdp_client=client, session_id='s1')

	async def resume(session_id: str) -> dict:
		log.append('resume')
		return {}

	async def page_info(self: Any) -> str:  # browser-use's: asks for the focused session, then reads
		await self.browser_session.get_or_create_cdp_session(focus=True)
		log.append('read')
		await asyncio.sleep(0.01)
		if fail[0]:
			fail[0] = False
			raise RuntimeError('no answer')
		return f'info {log.count("read")}'

	async def build(self: object) -> str:
		await asyncio.sleep(0.02)  # the trees take longer than the page info
		log.append('built')
		return 'dom'

	started_build = early_page_info._early_build(build, page_info)
	handed_over = early_page_info._handed_over(page_info)
	watchdog = types.SimpleNamespace(browser_session=BrowserSession())

	async def handler() -> tuple[str, str]:  # browser-use's order: the build (in a task), then the page info
		dom = await asyncio.create_task(started_build(watchdog))
		return dom, await handed_over(watchdog)

	with early_page_info.requested():
		assert await handler() == ('dom', 'info 1')
	# one read, started before the build ended; the tab's resume sent before it, not awaited
	assert log == ['resume', 'read', 'built']
	log.clear()
	assert await handler() == ('dom', 'info 1')
	assert log == ['built', 'read']  # outside a request: browser-use's order
	log.clear()
	fail[0] = True
	with early_page_info.requested():
		assert await handler() == ('dom', 'info 2')
	assert log == ['resume', 'read', 'built', 'read']  # the early read failed: read again
	log.clear()
	fail[0] = True
	with early_page_info.requested():
		await started_build(watchdog)  # the handler never asks, and the read fails: nothing left running or unretrieved
	assert log == ['resume', 'read', 'built'] and asyncio.all_tasks() == {asyncio.current_task()}


async def test_pending_requests_are_read_as_the_block_begins_and_handed_to_the_handler(monkeypatch: pytest.MonkeyPatch) -> None:
	"""``requested(session)`` sends browser-use's pending-requests read at once, its tab's resume sent
	just before its evaluate (not awaited before it), and the handler's own call gets that answer; a
	read the handler never asks for is cancelled; a failed early read is made again the handler's way;
	without a session, or with the patch not active, nothing is read early."""
	import asyncio

	from browser_use_mcp.patches import early_page_info

	sent: list[str] = []
	fail = [False]
	reads = [0]

	class Client:
		def __init__(self) -> None:
			self.send = types.SimpleNamespace(Runtime=types.SimpleNamespace(runIfWaitingForDebugger=self.resume))

		async def resume(self, session_id: str) -> dict:
			sent.append(f'resume {session_id}')
			await asyncio.sleep(0.05)  # an answer that comes late: nobody waits for it
			return {}

	class BrowserSession:
		def __init__(self) -> None:
			self._dom_watchdog = types.SimpleNamespace(browser_session=self, logger=logging.getLogger('t'))
			self.client = Client()

		async def get_or_create_cdp_session(self, target_id: object = None, focus: bool = True) -> object:
			sent.append(f'session focus={focus}')
			return types.SimpleNamespace(cdp_client=self.client, session_id='s1')

	async def pending(self: Any) -> list[str]:  # browser-use's: asks for the focused session, then evaluates
		session = await self.browser_session.get_or_create_cdp_session(focus=True)
		sent.append(f'evaluate {session.session_id}')
		await asyncio.sleep(0.01)
		reads[0] += 1
		if fail[0]:
			fail[0] = False
			raise RuntimeError('no answer')
		return [f'answer {reads[0]}']

	handed_over = early_page_info._pending_handed_over(pending)
	monkeypatch.setitem(early_page_info._pending_original, 'read', pending)
	monkeypatch.setattr(early_page_info, 'is_active', lambda patch: patch is early_page_info.PATCH)
	bs = BrowserSession()
	watchdog = bs._dom_watchdog

	with early_page_info.requested(bs):
		await asyncio.sleep(0)
		await asyncio.sleep(0)
		assert sent == ['session focus=False', 'resume s1', 'evaluate s1']  # sent before anyone asked
		assert await handed_over(watchdog) == ['answer 1']
	assert sent.count('evaluate s1') == 1  # the handler's call made no read of its own
	sent.clear()
	fail[0] = True
	with early_page_info.requested(bs):
		assert await handed_over(watchdog) == ['answer 3']  # the early read failed (2): read again, browser-use's way
	assert sent[-2:] == ['session focus=True', 'evaluate s1']
	sent.clear()
	with early_page_info.requested(bs):
		await asyncio.sleep(0)
	await asyncio.sleep(0.1)
	assert 'answer' not in ''.join(sent) and asyncio.all_tasks() == {asyncio.current_task()}  # not asked: cancelled
	sent.clear()
	with early_page_info.requested():
		assert await handed_over(watchdog) == ['answer 4']
	monkeypatch.setattr(early_page_info, 'is_active', lambda patch: False)
	with early_page_info.requested(bs):
		assert await handed_over(watchdog) == ['answer 5']
	assert 'session focus=False' not in sent  # no early read outside a session or with the patch off


async def test_a_request_within_one_for_the_same_tab_uses_its_reads(monkeypatch: pytest.MonkeyPatch) -> None:
	"""``requested(session)`` inside a block of the same session and focused tab (browser_get_state's
	read-ahead, then the state's own block) makes no read of its own: the outer block's is handed
	over. Once the focus has moved to another tab, the inner block reads for that tab."""
	import asyncio

	from browser_use_mcp.patches import early_page_info

	reads: list[str] = []

	class BrowserSession:
		def __init__(self) -> None:
			self._dom_watchdog = types.SimpleNamespace(browser_session=self)
			self.agent_focus_target_id = 't1'

		async def get_or_create_cdp_session(self, target_id: object = None, focus: bool = True) -> object:
			client = types.SimpleNamespace(
				send=types.SimpleNamespace(Runtime=types.SimpleNamespace(runIfWaitingForDebugger=resume))
			)
			return types.SimpleNamespace(cdp_client=client, session_id=self.agent_focus_target_id)

	async def resume(session_id: str) -> dict:
		return {}

	async def pending(self: Any) -> list[str]:
		session = await self.browser_session.get_or_create_cdp_session(focus=True)
		reads.append(session.session_id)
		return [f'read of {session.session_id}']

	handed_over = early_page_info._pending_handed_over(pending)
	monkeypatch.setitem(early_page_info._pending_original, 'read', pending)
	monkeypatch.setattr(early_page_info, 'is_active', lambda patch: patch is early_page_info.PATCH)
	bs = BrowserSession()
	with early_page_info.requested(bs):
		await asyncio.sleep(0.01)
		with early_page_info.requested(bs):
			assert await handed_over(bs._dom_watchdog) == ['read of t1']
	assert reads == ['t1']
	reads.clear()
	with early_page_info.requested(bs):
		bs.agent_focus_target_id = 't2'  # the focus check moved the focus
		with early_page_info.requested(bs):
			assert await handed_over(bs._dom_watchdog) == ['read of t2']
	assert 't2' in reads and asyncio.all_tasks() == {asyncio.current_task()}
