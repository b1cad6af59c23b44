"""The catalogue: a compatible superset of the installed upstream server's, every tool declared once
(by its handler) and collected, and every tool's MCP annotations advertised."""

from __future__ import annotations

import ast
import asyncio
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest

from browser_use_mcp import docgen, tools
from browser_use_mcp.catalog import Catalog
from browser_use_mcp.config import ServerConfig, load_config
from browser_use_mcp.server import build_server
from browser_use_mcp.sessions import SessionRegistry, SessionState
from browser_use_mcp.tools import ALL_TOOLS, tools_for
from browser_use_mcp.tools.admin import ClosedCount
from browser_use_mcp.tools.base import Args, Call, Hints, IncludeState, NoArgs, Reply, tool

UPSTREAM_DUMP = """
import asyncio, json
from browser_use.mcp.server import BrowserUseServer
import mcp.types as types
async def main():
	server = BrowserUseServer()
	entry = server.server.get_request_handler('tools/list')
	result = await entry.handler(None, types.PaginatedRequestParams())
	print(json.dumps([t.model_dump(mode='json', by_alias=True, exclude_none=True) for t in result.tools]))
asyncio.run(main())
"""

ADMIN_TOOLS = {
	'browser_list_sessions',
	'browser_close_session',
	'browser_close_all',
	'browser_create_session',
	'browser_close',
	'browser_clone_session',
	'browser_delete_session',
	'browser_get_recording',
}


@pytest.fixture(scope='module')
def upstream(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
	"""Upstream's tool list, dumped in a subprocess (importing it reconfigures logging globally)."""
	home = tmp_path_factory.mktemp('upstream-home')
	# TMPDIR: importing browser-use makes an empty downloads dir in the temp dir; this keeps it in ours
	env = dict(
		os.environ, HOME=str(home), TMPDIR=str(home), ANONYMIZED_TELEMETRY='false', BROWSER_USE_CONFIG_DIR=str(home / 'cfg')
	)
	out = subprocess.run([sys.executable, '-c', UPSTREAM_DUMP], env=env, capture_output=True, text=True, timeout=120, check=True)
	return {t['name']: t for t in json.loads(out.stdout.strip().splitlines()[-1])}


@pytest.fixture(scope='module')
def ours(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
	config = ServerConfig(state_dir=Path(tmp_path_factory.mktemp('state')))
	catalog = Catalog(SessionRegistry(config))
	return {
		t.name: {'name': t.name, 'description': t.description, 'inputSchema': t.input_schema, 'read_only': t.read_only}
		for t in catalog.list()
	}


def test_every_upstream_tool_is_offered(upstream: dict, ours: dict) -> None:
	assert len(upstream) >= 16
	missing = set(upstream) - set(ours)
	assert not missing, f'upstream tools missing here: {missing}'


def test_new_tools_are_offered(ours: dict) -> None:
	assert {'browser_send_keys', 'browser_evaluate', 'browser_create_session', 'browser_close'} <= set(ours)


@pytest.mark.parametrize('key', ['type', 'enum', 'items', 'default'])
def test_argument_types_and_defaults_match_upstream(upstream: dict, ours: dict, key: str) -> None:
	for name, up in upstream.items():
		up_props = up['inputSchema'].get('properties', {})
		our_props = ours[name]['inputSchema']['properties']
		for arg, up_schema in up_props.items():
			assert arg in our_props, f'{name}.{arg} missing'
			assert our_props[arg].get(key) == up_schema.get(key), (
				f'{name}.{arg}: {key} differs: ours {our_props[arg].get(key)!r}, upstream {up_schema.get(key)!r}'
			)


def test_required_lists_match_upstream(upstream: dict, ours: dict) -> None:
	for name, up in upstream.items():
		assert sorted(ours[name]['inputSchema'].get('required', [])) == sorted(up['inputSchema'].get('required', [])), name


def test_read_only_annotations_match_upstream(upstream: dict, ours: dict) -> None:
	for name, up in upstream.items():
		up_ro = bool((up.get('annotations') or {}).get('readOnlyHint'))
		assert ours[name]['read_only'] == up_ro, name


def test_session_id_is_optional_on_every_browser_tool(ours: dict) -> None:
	for name, listed in ours.items():
		schema = listed['inputSchema']
		if name in ADMIN_TOOLS:
			continue
		assert schema['properties']['session_id']['type'] == 'string', name
		assert 'session_id' not in schema.get('required', []), name


# Arguments this server adds to upstream's tools: optional, and when omitted the tool does what upstream's does.
ADDED_ARGUMENTS = {
	'session_id',
	'include_state',
	'offset',
	'max_chars',
	'index',
	'amount',
	'blur',  # browser_type: leave the field afterwards (upstream's always sent a synthetic blur)
}  # all optional: upstream's calls still work
REPORTS_STATE = {
	'browser_navigate',
	'browser_click',
	'browser_type',
	'browser_send_keys',
	'browser_scroll',
	'browser_go_back',
	'browser_switch_tab',
	'browser_close_tab',
}


def test_arguments_added_to_upstream_tools_are_optional(upstream: dict, ours: dict) -> None:
	for name, up in upstream.items():
		schema = ours[name]['inputSchema']
		added = set(schema['properties']) - set(up['inputSchema'].get('properties', {}))
		assert added <= ADDED_ARGUMENTS, f'{name}: arguments upstream does not have: {added - ADDED_ARGUMENTS}'
		assert not added & set(schema.get('required', [])), f'{name}: an added argument is required'


def test_include_state_is_offered_by_the_tools_that_change_the_page_and_off_by_default(ours: dict) -> None:
	offering = {name for name, listed in ours.items() if 'include_state' in listed['inputSchema']['properties']}
	assert offering == REPORTS_STATE
	for name in offering:
		prop = ours[name]['inputSchema']['properties']['include_state']
		assert (prop['type'], prop['default']) == ('boolean', False), name
		assert 'browser_get_state' in prop['description'], name


def test_admin_tools_keep_upstream_shape(ours: dict) -> None:
	assert ours['browser_close_session']['inputSchema']['required'] == ['session_id']
	assert ours['browser_list_sessions']['inputSchema']['properties'] == {}
	assert ours['browser_close_all']['inputSchema']['properties'] == {}


def test_descriptions_are_our_own(upstream: dict, ours: dict) -> None:
	same = [n for n, up in upstream.items() if up.get('description') == ours[n]['description']]
	assert not same, f'descriptions copied verbatim from upstream: {same}'


def test_create_session_states_retention(ours: dict) -> None:
	assert '600 s' in ours['browser_create_session']['description']


# -- one declaration per tool ---------------------------------------------------------------

TOOLS_LIST_ORDER = [
	'browser_navigate',
	'browser_go_back',
	'browser_scroll',
	'browser_click',
	'browser_type',
	'browser_send_keys',
	'browser_handle_dialog',  # ours: answers a dialog held with --dialogs hold
	'browser_get_state',
	'browser_get_html',
	'browser_screenshot',
	'browser_extract_content',
	'browser_evaluate',
	'browser_list_tabs',
	'browser_switch_tab',
	'browser_close_tab',
	'retry_with_browser_use_agent',
	'browser_create_session',
	'browser_list_sessions',
	'browser_close_session',
	'browser_close_all',
	'browser_close',
	'browser_save_state',
	'browser_clone_session',
	'browser_delete_session',
]


def test_tools_list_keeps_its_order(ours: dict) -> None:
	assert list(ours) == TOOLS_LIST_ORDER
	assert len({t.name for t in ALL_TOOLS}) == len(ALL_TOOLS), 'two tools with one name: one would hide the other'


def _is_handler(node: ast.AST) -> bool:
	"""An async function shaped like a tool handler: (SessionState | SessionRegistry, args, Call)."""
	if not isinstance(node, ast.AsyncFunctionDef) or len(node.args.args) != 3:
		return False
	first, _args, last = node.args.args
	scope = ast.unparse(first.annotation) if first.annotation else ''
	return scope in ('SessionState', 'SessionRegistry') and last.annotation is not None and ast.unparse(last.annotation) == 'Call'


def test_every_handler_in_tools_is_in_the_catalogue() -> None:
	"""Defining a tool is all it takes to list it, and nothing in tools/ looks like a tool without being one."""
	package = Path(tools.__file__).parent
	modules = {m.name for m in pkgutil.iter_modules([str(package)])}
	families = {m.__name__.rsplit('.', 1)[1] for m in tools.FAMILIES}
	assert modules == families | set(tools.HELPERS), f'neither a family nor a helper: {modules - families - set(tools.HELPERS)}'
	handlers = set()
	for name in modules:
		for node in ast.parse((package / f'{name}.py').read_text(encoding='utf-8')).body:
			decorated = any('tool' in ast.unparse(d) for d in getattr(node, 'decorator_list', []))
			if _is_handler(node) or decorated:
				handlers.add((f'browser_use_mcp.tools.{name}', node.name))
	listed = {(t.handler.__module__, t.handler.__name__) for t in ALL_TOOLS}
	assert handlers == listed, f'not in the catalogue: {handlers - listed}; listed but not found: {listed - handlers}'
	assert {t.name for t in ALL_TOOLS} == {t.handler.__name__ for t in ALL_TOOLS}


def test_a_tool_is_declared_by_its_handler() -> None:
	@tool('Probe', destructive=False, idempotent=True, open_world=False)
	async def probe(state: SessionState, args: NoArgs, call: Call) -> Reply[ClosedCount]:
		"""Looks   at
		the session."""
		return Reply('x', structured={'closed': 0})

	assert (probe.name, probe.description, probe.scope, probe.args, probe.output) == (
		'probe',
		'Looks at the session.',
		'session',
		NoArgs,
		ClosedCount,
	)
	assert probe.hints == Hints('Probe', read_only=False, destructive=False, idempotent=True, open_world=False)

	@tool('Admin probe', read_only=True, open_world=False)
	async def admin_probe(registry: SessionRegistry, args: NoArgs, call: Call) -> str:
		"""Looks at the sessions."""
		return 'x'

	assert (admin_probe.scope, admin_probe.output) == ('admin', None)
	assert admin_probe.hints == Hints('Admin probe', read_only=True, destructive=False, idempotent=True, open_world=False)


class _AfterwardsArgs(Args):
	then_show: IncludeState = False


class _NamedLikeItArgs(Args):
	include_state: bool = False  # named like it, not typed IncludeState: not a request for the page state


def test_include_state_is_declared_by_its_type_not_guessed_from_its_name() -> None:
	@tool('Declares it', destructive=False, idempotent=True, open_world=False)
	async def declares(state: SessionState, args: _AfterwardsArgs, call: Call) -> str:
		"""Asks for the page state under another name."""
		return 'x'

	@tool('Only named like it', destructive=False, idempotent=True, open_world=False)
	async def named(state: SessionState, args: _NamedLikeItArgs, call: Call) -> str:
		"""Has a field named like it."""
		return 'x'

	assert declares.state_argument == 'then_show'
	assert declares.wants_state(_AfterwardsArgs(then_show=True))
	assert not declares.wants_state(_AfterwardsArgs())
	assert named.state_argument is None
	assert not named.wants_state(_NamedLikeItArgs(include_state=True))


async def _no_doc(state: SessionState, args: NoArgs, call: Call) -> str:
	return 'x'


async def _untyped(state: Any, args: NoArgs, call: Call) -> str:
	"""No scope."""
	return 'x'


async def _not_args(state: SessionState, args: dict, call: Call) -> str:
	"""No input model."""
	return 'x'


async def _bad_return(state: SessionState, args: NoArgs, call: Call) -> dict:
	"""Neither text nor a reply."""
	return {}


async def _bad_output(state: SessionState, args: NoArgs, call: Call) -> Reply[NoArgs]:  # type: ignore[type-var]
	"""An input model as output."""
	return Reply('x')


@pytest.mark.parametrize(
	('handler', 'words'),
	[
		(_no_doc, 'docstring'),
		(_untyped, 'SessionState'),
		(_not_args, 'Args'),
		(_bad_return, 'return'),
		(_bad_output, 'Output'),
	],
)
def test_a_handler_that_does_not_declare_itself_is_refused(handler: Any, words: str) -> None:
	with pytest.raises(TypeError, match=words):
		tool('Bad', read_only=True, open_world=False)(handler)


def test_every_hint_is_decided_not_defaulted() -> None:
	with pytest.raises(TypeError, match='destructive and idempotent'):
		tool('Vague', open_world=True)
	with pytest.raises(TypeError, match='read-only'):
		tool('Contradiction', read_only=True, destructive=True, open_world=False)


# -- annotations ----------------------------------------------------------------------------


@pytest.fixture(scope='module')
def advertised(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
	"""tools/list as the server sends it."""
	catalog = Catalog(SessionRegistry(ServerConfig(state_dir=Path(tmp_path_factory.mktemp('state')))))

	async def listed() -> list[Any]:
		entry = build_server(catalog).get_request_handler('tools/list')
		return (await entry.handler(None, types.PaginatedRequestParams())).tools

	tools_ = asyncio.run(listed())
	return {t.name: t.model_dump(mode='json', by_alias=True, exclude_none=True) for t in tools_}


def test_every_tool_advertises_every_annotation(advertised: dict[str, dict]) -> None:
	titles = set()
	for name, wire in advertised.items():
		notes = wire['annotations']
		assert set(notes) == {'title', 'readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'}, name
		assert notes['title'] and wire['title'] == notes['title'], name
		titles.add(notes['title'])
		if notes['readOnlyHint']:
			assert notes['idempotentHint'] and not notes['destructiveHint'], f'{name}: read-only yet changes things'
	assert len(titles) == len(advertised), 'titles tell the tools apart'


def _with(advertised: dict[str, dict], hint: str) -> set[str]:
	return {name for name, wire in advertised.items() if wire['annotations'][hint]}


def test_annotations_say_what_each_tool_does(advertised: dict[str, dict]) -> None:
	reads = {
		'browser_get_state',
		'browser_get_html',
		'browser_screenshot',
		'browser_list_tabs',
		'browser_list_sessions',
	}
	assert _with(advertised, 'readOnlyHint') == reads
	closing = {'browser_close_tab', 'browser_close_session', 'browser_close_all', 'browser_close', 'browser_delete_session'}
	acting_on_pages = {
		'browser_click',
		'browser_type',
		'browser_send_keys',
		'browser_handle_dialog',
		'browser_evaluate',
		'retry_with_browser_use_agent',
	}
	assert _with(advertised, 'destructiveHint') == closing | acting_on_pages
	# what may reach a web site or the LLM provider; managing sessions and tabs stays on this machine
	# (a clone opens its source's URL)
	reaching_out = {'browser_navigate', 'browser_go_back', 'browser_extract_content', 'browser_clone_session'} | acting_on_pages
	assert _with(advertised, 'openWorldHint') == reaching_out
	# again with the same arguments: the same end state (closing twice closes once)
	# (saving a state under a name again writes the same file)
	assert _with(advertised, 'idempotentHint') == reads | closing | {'browser_type', 'browser_switch_tab', 'browser_save_state'}


def test_the_docs_read_the_annotations_back(advertised: dict[str, dict]) -> None:
	back = {t.name: t.hints for t in docgen.from_mcp(types.Tool.model_validate(w) for w in advertised.values())}
	assert back == {t.name: t.hints for t in tools_for(('core',))}


# -- tool groups (--tools) ------------------------------------------------------------------

INTERACTION_TOOLS = [
	'browser_hover',
	'browser_get_options',
	'browser_select_option',
	'browser_drag',
	'browser_wait_for',
	'browser_upload_file',
	'browser_save_pdf',
	'browser_list_files',
	'browser_read_file',
]


def _listed(tmp_path: Path, *groups: str) -> dict[str, Any]:
	catalog = Catalog(SessionRegistry(ServerConfig(state_dir=tmp_path / 'state', tools=groups)))
	return {t.name: t for t in catalog.list()}


def test_the_default_group_is_the_core_catalogue(tmp_path: Path) -> None:
	assert list(_listed(tmp_path, 'core')) == TOOLS_LIST_ORDER
	assert ServerConfig().tools == ('core',)


DEBUG_TOOLS = ['browser_console_messages', 'browser_network_requests', 'browser_get_recording']


def test_groups_add_their_families_in_catalogue_order(tmp_path: Path) -> None:
	assert list(_listed(tmp_path, 'interaction')) == INTERACTION_TOOLS
	assert list(_listed(tmp_path, 'debug')) == DEBUG_TOOLS
	all_listed = list(_listed(tmp_path, 'all'))
	assert sorted(all_listed) == sorted(TOOLS_LIST_ORDER + INTERACTION_TOOLS + DEBUG_TOOLS)
	assert [n for n in all_listed if n in TOOLS_LIST_ORDER] == TOOLS_LIST_ORDER
	assert list(_listed(tmp_path, 'interaction', 'core')) == TOOLS_LIST_ORDER + INTERACTION_TOOLS


def test_the_debug_tools_only_read(tmp_path: Path) -> None:
	listed = _listed(tmp_path, 'debug')
	assert {n for n, t in listed.items() if t.read_only} == set(DEBUG_TOOLS)
	assert not any(t.hints.destructive for t in listed.values())
	assert {n for n, t in listed.items() if not t.session_scoped} == {'browser_get_recording'}  # closed sessions too


def test_the_interaction_tools_declare_their_hints_and_include_state(tmp_path: Path) -> None:
	listed = _listed(tmp_path, 'interaction')
	assert {n for n, t in listed.items() if t.read_only} == {
		'browser_get_options',
		'browser_wait_for',
		'browser_list_files',
		'browser_read_file',
	}
	assert {n for n, t in listed.items() if t.hints.destructive} == {
		'browser_select_option',
		'browser_drag',
		'browser_upload_file',
	}
	offering = {n for n, t in listed.items() if 'include_state' in t.properties}
	assert offering == {'browser_hover', 'browser_select_option', 'browser_drag', 'browser_upload_file'}
	assert all(t.session_scoped for t in listed.values())


@pytest.mark.parametrize(
	('environ', 'flags'),
	[({'BROWSER_USE_MCP_TOOLS': 'core,nope'}, {}), ({}, {'tools': ('interactions',)}), ({}, {'tools': ()})],
)
def test_an_unknown_group_stops_the_start_naming_the_valid_ones(environ: dict, flags: dict) -> None:
	with pytest.raises(SystemExit, match='core, interaction, debug, all'):
		load_config(environ, browser_use=False, **flags)


def test_groups_come_from_the_environment_and_flags() -> None:
	assert load_config({'BROWSER_USE_MCP_TOOLS': 'core, interaction'}, browser_use=False).tools == ('core', 'interaction')
	assert load_config({'BROWSER_USE_MCP_TOOLS': 'core'}, browser_use=False, tools=('all',)).tools == ('all',)


async def test_the_arguments_own_error_comes_before_an_unusable_session_id(tmp_path: Path) -> None:
	from browser_use_mcp.errors import InvalidArgument

	catalog = Catalog(SessionRegistry(ServerConfig(state_dir=tmp_path / 'state')))
	with pytest.raises(InvalidArgument, match='^Invalid arguments for browser_navigate'):
		await catalog.call('browser_navigate', {'session_id': []}, Call())
	with pytest.raises(InvalidArgument, match='^session_id must be a string, not list'):
		await catalog.call('browser_navigate', {'session_id': [], 'url': 'http://127.0.0.1:9/'}, Call())
