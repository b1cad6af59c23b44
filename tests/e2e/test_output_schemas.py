"""Structured content, end to end: the real server over stdio, real Chromium, and the SDK's own
client (which already rejects structured content that breaks a declared ``outputSchema``). Each
structured result is validated again here against the schema from ``tools/list``, and the text
beside it is checked to be what it was before the schemas were declared."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from harness.servers import Background, Mcp, Result, running_server
from tests.unit.test_output_schemas import STRUCTURED  # the catalogue's list: the live server must declare the same


@pytest.fixture(scope='module')
async def mcp(tmp_path_factory: pytest.TempPathFactory, isolation: str) -> AsyncIterator[Mcp]:
	"""Every group listed, so every structured tool's schema is checked live."""
	async with Background(running_server(tmp_path_factory.mktemp('schemas-home'), '--tools', 'all')) as server:
		yield server


@pytest.fixture(autouse=True)
async def clean(mcp: Mcp):
	await mcp.call('browser_close_all')
	yield
	await mcp.call('browser_close_all')


@pytest.fixture(scope='module')
async def validators(mcp: Mcp) -> dict[str, Draft202012Validator]:
	listed = (await mcp.client.list_tools()).tools
	assert {t.name for t in listed if t.output_schema is not None} == STRUCTURED
	out = {}
	for tool in listed:
		if tool.output_schema is not None:
			assert tool.output_schema['type'] == 'object'
			Draft202012Validator.check_schema(tool.output_schema)
			out[tool.name] = Draft202012Validator(tool.output_schema)
	return out


def conforms(validators: dict[str, Draft202012Validator], name: str, result: Result) -> Any:
	assert not result.is_error, result.text
	assert result.structured is not None, f'{name} declares an output schema but returned no structured content'
	validators[name].validate(result.structured)
	return result.structured


def as_text(value: Any) -> str:
	"""The JSON text these tools have always returned (tools.base.as_json)."""
	return json.dumps(value, indent=2, ensure_ascii=False)


async def test_create_session_and_list_sessions(mcp: Mcp, site: str, validators: dict) -> None:
	empty = await mcp.ok('browser_list_sessions')
	assert conforms(validators, 'browser_list_sessions', empty) == {'sessions': []}
	assert empty.text == 'No active browser sessions'

	created = await mcp.ok('browser_create_session')
	info = conforms(validators, 'browser_create_session', created)
	assert created.text == as_text(info)
	assert info['created'] is True and info['session_id'].startswith('browser_')
	assert info['idle_timeout_seconds'] == 600 and info['max_session_duration_seconds'] is None
	again = await mcp.ok('browser_create_session', session_id=info['session_id'])
	assert conforms(validators, 'browser_create_session', again)['created'] is False
	assert again.text == as_text(again.structured)

	await mcp.ok('browser_navigate', session_id=info['session_id'], url=f'{site}/two')
	await mcp.ok('browser_navigate', session_id='schema-b', url=f'{site}/')
	listed = await mcp.ok('browser_list_sessions')
	sessions = conforms(validators, 'browser_list_sessions', listed)['sessions']
	assert [s['session_id'] for s in sessions] == [info['session_id'], 'schema-b']
	assert [s['current_url'] for s in sessions] == [f'{site}/two', f'{site}/']
	assert listed.text == as_text(sessions), 'the text is the session list as JSON, as before'


async def test_list_tabs(mcp: Mcp, site: str, validators: dict) -> None:
	await mcp.ok('browser_navigate', session_id='schema-tabs', url=f'{site}/')
	await mcp.ok('browser_navigate', session_id='schema-tabs', url=f'{site}/two', new_tab=True)
	r = await mcp.ok('browser_list_tabs', session_id='schema-tabs')
	tabs = conforms(validators, 'browser_list_tabs', r)['tabs']
	assert sorted((t['url'], t['title']) for t in tabs) == [(f'{site}/', 'Home Page'), (f'{site}/two', 'Page Two')]
	assert all(len(t['tab_id']) == 4 for t in tabs)
	assert r.text == as_text(tabs)


@pytest.mark.parametrize(
	('expression', 'value'),
	[
		('6 * 7', 42),
		('1 / 4', 0.25),
		('"wörd" + "s"', 'wörds'),
		('null', None),
		('undefined', None),
		('document.title === "Home Page"', True),
		('({a: [1, 2], b: "x", c: null, d: {e: 1.5}})', {'a': [1, 2], 'b': 'x', 'c': None, 'd': {'e': 1.5}}),
		('[1, "two", null, false, [], {}]', [1, 'two', None, False, [], {}]),
		('Promise.resolve([document.title])', ['Home Page']),
	],
)
async def test_evaluate_any_json_value(mcp: Mcp, site: str, validators: dict, expression: str, value: Any) -> None:
	await mcp.ok('browser_navigate', session_id='schema-eval', url=f'{site}/')
	r = await mcp.ok('browser_evaluate', session_id='schema-eval', expression=expression)
	assert conforms(validators, 'browser_evaluate', r) == {'result': value}
	assert r.text == json.dumps(value, ensure_ascii=False), 'the text is the bare value as JSON, as before'
	assert type(r.structured['result']) is type(value)


async def test_errors_carry_no_structured_content(mcp: Mcp, site: str) -> None:
	await mcp.ok('browser_navigate', session_id='schema-err', url=f'{site}/')
	r = await mcp.call('browser_evaluate', session_id='schema-err', expression='(() => { throw new Error("boom") })()')
	assert r.is_error and r.structured is None
	assert r.text.startswith('JavaScript error: Error: boom')
	bad = await mcp.call('browser_list_tabs', session_id='')
	assert bad.is_error and bad.structured is None and bad.text.startswith('session_id must not be empty')


async def test_close_all(mcp: Mcp, site: str, validators: dict) -> None:
	for sid in ('schema-c1', 'schema-c2'):
		await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/')
	r = await mcp.ok('browser_close_all')
	assert conforms(validators, 'browser_close_all', r) == {'closed': 2}
	assert r.text == 'Closed 2 sessions'
	none = await mcp.ok('browser_close_all')
	assert conforms(validators, 'browser_close_all', none) == {'closed': 0}
	assert none.text == 'No active sessions to close'


async def test_console_messages_and_network_requests(mcp: Mcp, site: str, validators: dict) -> None:
	await mcp.ok('browser_navigate', session_id='schema-debug', url=f'{site}/console?tag=schema')
	for name in ('browser_console_messages', 'browser_network_requests'):
		r = await mcp.ok(name, session_id='schema-debug')
		out = conforms(validators, name, r)
		assert r.text == as_text(out) and out['matched'] >= 1 and out['dropped'] == 0
