"""Structured content is declared: every tool that returns it advertises an ``outputSchema``
(a valid JSON Schema with an object root), and what the tools build conforms to it. No browser."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import mcp.types as types
import pytest
from jsonschema import Draft202012Validator
from jsonschema.validators import validator_for

from browser_use_mcp.catalog import Catalog
from browser_use_mcp.config import ServerConfig
from browser_use_mcp.server import build_server
from browser_use_mcp.session_options import SessionOptions
from browser_use_mcp.sessions import SessionRegistry
from browser_use_mcp.storage import parse_state
from browser_use_mcp.tools import ALL_TOOLS
from browser_use_mcp.tools.admin import ClosedCount, CreatedSession, SavedState, SessionList, describe
from browser_use_mcp.tools.base import Call, NoArgs, Output, Reply, as_json, output_model_schema, tool
from browser_use_mcp.tools.content import Evaluated
from browser_use_mcp.tools.tabs import TabList

STRUCTURED = {
	'browser_list_sessions',
	'browser_list_tabs',
	'browser_evaluate',
	'browser_create_session',
	'browser_close_all',
	'browser_save_state',
	'browser_clone_session',
	'browser_console_messages',
	'browser_network_requests',
	'browser_get_recording',
	'browser_list_files',
	'browser_read_file',
}


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
	"""Every group listed, so every structured tool is advertised."""
	return Catalog(SessionRegistry(ServerConfig(state_dir=tmp_path / 'state', tools=('all',))))


def _returns_structured(handler: Any) -> bool:
	return 'structured=' in inspect.getsource(handler)


def test_every_tool_returning_structured_content_declares_an_output_model() -> None:
	returning = {t.name for t in ALL_TOOLS if _returns_structured(t.handler)}
	declaring = {t.name for t in ALL_TOOLS if t.output is not None}
	assert returning == declaring == STRUCTURED


@pytest.mark.parametrize('name', sorted(STRUCTURED))
def test_output_schema_is_valid_json_schema_with_an_object_root(catalog: Catalog, name: str) -> None:
	(info,) = [t for t in catalog.list() if t.name == name]
	schema = info.output_schema
	assert schema is not None and schema['type'] == 'object'
	assert validator_for(schema) is Draft202012Validator  # no $schema: 2020-12, as MCP says and the SDK client assumes
	Draft202012Validator.check_schema(schema)
	text = json.dumps(schema)
	assert '$ref' not in text and '$defs' not in text, 'self-contained: nested models are inlined'
	assert set(schema['properties']) == set(schema['required']), 'every field is always present (null when unknown)'


def test_tools_without_structured_content_declare_no_output_schema(catalog: Catalog) -> None:
	assert {t.name for t in catalog.list() if t.output_schema is not None} == STRUCTURED


async def test_the_server_advertises_the_output_schemas(catalog: Catalog) -> None:
	entry = build_server(catalog).get_request_handler('tools/list')
	listed = (await entry.handler(None, types.PaginatedRequestParams())).tools
	by_name = {t.name: t for t in listed}
	for info in catalog.list():
		assert by_name[info.name].output_schema == info.output_schema
		assert by_name[info.name].input_schema == info.input_schema
	wire = [t.model_dump(mode='json', by_alias=True, exclude_none=True) for t in listed]
	assert {t['name'] for t in wire if 'outputSchema' in t} == STRUCTURED


def test_tools_with_include_state_declare_no_output_schema() -> None:
	"""include_state appends the page state as a text block only: a tool that also declared an output
	schema would have to carry the state in its structured content too, or its schema would lie."""
	offering = {t.name for t in ALL_TOOLS if 'include_state' in t.args.model_fields}
	assert offering and not offering & STRUCTURED


def _conforms(model: type[Output], value: dict[str, Any]) -> None:
	Draft202012Validator(output_model_schema(model)).validate(value)


@pytest.mark.parametrize(
	'value', [42, 1.5, -0.25, 'text', '', None, True, False, {'a': [1, None, 'é']}, [1, 'two', None, {}], {}, []]
)
def test_evaluate_result_schema_accepts_any_json_value(value: Any) -> None:
	out = Evaluated(result=value).dump()
	assert out == {'result': value}
	assert type(out['result']) is type(value), '42 stays an int, 1.5 a float: the text is json.dumps of it'
	_conforms(Evaluated, out)


def test_evaluate_result_is_required() -> None:
	assert not Draft202012Validator(output_model_schema(Evaluated)).is_valid({})


def _fake_session(sid: str, *, expires: float | None, default: bool = False, options: Any = None) -> Any:
	return SimpleNamespace(
		options=options,
		persist=False,
		session_id=sid,
		created_at=1_700_000_000.0,
		last_activity=1_700_000_030.0,
		browser=SimpleNamespace(alive=lambda: False, where='local (shared)'),
		browser_session=None,
		is_default=default,
		busy=0,
		idle_seconds=lambda now=None: 12.34,
		expires_in=lambda now=None: expires,
	)


def test_session_list_conforms_and_its_text_is_unchanged() -> None:
	made = SessionOptions(locale='de-DE', proxy={'server': 'http://127.0.0.1:3128', 'username': 'u', 'password': 'p'})
	states = [_fake_session('default', expires=None, default=True), _fake_session('a', expires=587.66, options=made)]
	out = SessionList(sessions=[describe(s, 1_700_000_060.0) for s in states]).dump()
	_conforms(SessionList, out)
	first = out['sessions'][0]
	assert list(first) == [
		'session_id',
		'created_at',
		'last_activity',
		'active',
		'current_url',
		'age_minutes',
		'default',
		'tabs',
		'busy',
		'idle_seconds',
		'expires_in_seconds',
		'location',  # ours, after upstream's keys
		'options',
		'running',  # durable sessions: added last, so the keys before keep their places
		'persisted',
	], 'the key order of the JSON text clients parse'
	assert first['location'] == 'local (shared)'
	assert first['options'] == {}
	assert out['sessions'][1]['options'] == {
		'locale': 'de-DE',
		'proxy': {'server': 'http://127.0.0.1:3128', 'credentials': 'redacted'},
	}
	assert first['current_url'] is None and first['expires_in_seconds'] is None and first['tabs'] == 0
	assert out['sessions'][1]['expires_in_seconds'] == 587.7 and out['sessions'][1]['age_minutes'] == 1.0


@pytest.mark.parametrize('idle', [600.0, 600, None])
def test_created_session_keeps_number_types(idle: float | None) -> None:
	info = {
		'session_id': 'browser_x',
		'created': True,
		'idle_timeout_seconds': idle,
		'max_session_duration_seconds': None,
		'expires_in_seconds': 599.9,
		'location': 'grid http://10.0.0.7:5555',
		'retention': 'closed after 600 s unused',
		'options': {'viewport': {'width': 390, 'height': 844}, 'device_scale_factor': 3},
		'persisted': False,
	}
	out = CreatedSession(**info).dump()
	assert as_json(out) == as_json(info), 'text as before: an int stays an int'
	_conforms(CreatedSession, out)


def test_saved_state_is_playwrights_storage_state() -> None:
	"""A file Playwright wrote loads (its extra keys inside entries ignored) and comes back in the same
	shape, every key present, so it can be handed back to Playwright."""
	playwright = {
		'cookies': [
			{
				'name': 'sid',
				'value': 's3cr3t',
				'domain': '.example.com',
				'path': '/',
				'expires': 1893456000.5,
				'httpOnly': True,
				'secure': True,
				'sameSite': 'None',
				'partitionKey': None,
			},
			{'name': 'pref', 'value': 'x', 'domain': 'example.com'},
		],
		'origins': [{'origin': 'https://example.com', 'localStorage': [{'name': 'k', 'value': 'v'}]}],
	}
	out = SavedState.model_validate(parse_state(playwright).model_dump()).dump()
	_conforms(SavedState, out)
	assert out['cookies'][0] == {k: v for k, v in playwright['cookies'][0].items() if k != 'partitionKey'}
	assert out['cookies'][1] == {
		'name': 'pref',
		'value': 'x',
		'domain': 'example.com',
		'path': '/',
		'expires': -1,
		'httpOnly': False,
		'secure': False,
		'sameSite': 'Lax',
	}
	assert out['origins'] == playwright['origins']
	assert not Draft202012Validator(output_model_schema(SavedState)).is_valid({'cookies': []})


def test_tab_list_and_closed_count_conform() -> None:
	tabs = [
		{'tab_id': 'AB12', 'url': 'http://127.0.0.1/', 'title': 'Home'},
		{'tab_id': 'CD34', 'url': 'about:blank', 'title': ''},
	]
	out = TabList.model_validate({'tabs': tabs}).dump()
	assert out == {'tabs': tabs}
	_conforms(TabList, out)
	assert ClosedCount(closed=3).dump() == {'closed': 3}
	_conforms(ClosedCount, ClosedCount(closed=0).dump())
	assert not Draft202012Validator(output_model_schema(ClosedCount)).is_valid({'closed': 'three'})


async def test_admin_tools_without_sessions_return_conforming_content(catalog: Catalog) -> None:
	schemas = {t.name: t.output_schema for t in catalog.list()}
	listed = await catalog.call('browser_list_sessions', {}, Call())
	assert listed.text == 'No active browser sessions' and listed.structured == {'sessions': []}
	Draft202012Validator(schemas['browser_list_sessions']).validate(listed.structured)
	closed = await catalog.call('browser_close_all', {}, Call())
	assert closed.text == 'No active sessions to close' and closed.structured == {'closed': 0}
	Draft202012Validator(schemas['browser_close_all']).validate(closed.structured)


def _fake_tools() -> list[Any]:
	@tool('Undeclared', read_only=True, open_world=False)
	async def undeclared(registry: SessionRegistry, args: NoArgs, call: Call) -> Reply:
		"""Returns structured content it does not declare."""
		return Reply('x', structured={'closed': 1})

	@tool('Missing', read_only=True, open_world=False)
	async def missing(registry: SessionRegistry, args: NoArgs, call: Call) -> Reply[ClosedCount]:
		"""Declares structured content it does not return."""
		return Reply('x')

	@tool('Fine', read_only=True, open_world=False)
	async def fine(registry: SessionRegistry, args: NoArgs, call: Call) -> Reply[ClosedCount]:
		"""Declares and returns it."""
		return Reply('x', structured={'closed': 1})

	return [undeclared, missing, fine]


async def test_structured_content_is_sent_only_when_declared(tmp_path: Path) -> None:
	undeclared, missing, fine = _fake_tools()
	assert (undeclared.output, missing.output, fine.output) == (None, ClosedCount, ClosedCount)
	catalog = Catalog(SessionRegistry(ServerConfig(state_dir=tmp_path / 'state')), [undeclared, missing, fine])
	with pytest.raises(RuntimeError, match='declares no output schema'):
		await catalog.call('undeclared', {}, Call())
	with pytest.raises(RuntimeError, match='returned no structured content'):
		await catalog.call('missing', {}, Call())
	assert (await catalog.call('fine', {}, Call())).structured == {'closed': 1}


async def test_an_error_from_a_tool_with_an_output_schema_is_plain_is_error_text(catalog: Catalog) -> None:
	call_tool = build_server(catalog).get_request_handler('tools/call').handler
	result = await call_tool(None, types.CallToolRequestParams(name='browser_evaluate', arguments={'expression': 5}))
	assert result.is_error and result.structured_content is None
	assert result.content[0].text.startswith('Invalid arguments for browser_evaluate: expression')
