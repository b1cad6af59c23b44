"""The catalogue is a compatible superset of the installed upstream server's catalogue."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from browser_use_mcp.catalog import Catalog
from browser_use_mcp.config import ServerConfig
from browser_use_mcp.sessions import SessionRegistry

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

ADMIN_TOOLS = {'browser_list_sessions', 'browser_close_session', 'browser_close_all', 'browser_create_session', 'browser_close'}


@pytest.fixture(scope='module')
def upstream(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
	"""Upstream's tool list, dumped in a subprocess (importing it reconfigures logging globally)."""
	home = tmp_path_factory.mktemp('upstream-home')
	env = dict(os.environ, HOME=str(home), ANONYMIZED_TELEMETRY='false', BROWSER_USE_CONFIG_DIR=str(home / 'cfg'))
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
	for name, tool in ours.items():
		schema = tool['inputSchema']
		if name in ADMIN_TOOLS:
			continue
		assert schema['properties']['session_id']['type'] == 'string', name
		assert 'session_id' not in schema.get('required', []), name


def test_admin_tools_keep_upstream_shape(ours: dict) -> None:
	assert ours['browser_close_session']['inputSchema']['required'] == ['session_id']
	assert ours['browser_list_sessions']['inputSchema']['properties'] == {}
	assert ours['browser_close_all']['inputSchema']['properties'] == {}


def test_descriptions_are_our_own(upstream: dict, ours: dict) -> None:
	same = [n for n, up in upstream.items() if up.get('description') == ours[n]['description']]
	assert not same, f'descriptions copied verbatim from upstream: {same}'


def test_create_session_states_retention(ours: dict) -> None:
	assert '600 s' in ours['browser_create_session']['description']
