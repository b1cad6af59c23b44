"""The docs cannot drift from the code: the tools reference and README's table are regenerated
(from the catalogue and from a live server's tools/list) and compared, every flag and
environment variable must appear in configuration.md, and every relative link must resolve."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from browser_use_mcp import docgen
from browser_use_mcp.cli import build_parser
from browser_use_mcp.config import ENV_VARS
from harness.servers import REPO, Background, Mcp, running_server

DOCS = REPO / 'docs'
FIX = 'run `.venv/bin/python -m browser_use_mcp.docgen --write` and commit the result'


@pytest.fixture(scope='module')
async def mcp(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Mcp]:
	"""A server listing every tool group: the reference documents them all."""
	async with Background(running_server(tmp_path_factory.mktemp('docs-home'), '--tools', 'all')) as server:
		yield server


def test_tools_reference_matches_the_catalogue() -> None:
	expected = docgen.render_tools_md(docgen.from_catalog())
	assert (DOCS / 'tools.md').read_text(encoding='utf-8') == expected, f'docs/tools.md is stale: {FIX}'


def test_readme_tool_table_matches_the_catalogue() -> None:
	readme = (REPO / 'README.md').read_text(encoding='utf-8')
	assert docgen.README_BEGIN in readme and docgen.README_END in readme
	assert docgen.readme_with_table(readme, docgen.from_catalog()) == readme, f'README.md tool table is stale: {FIX}'


async def test_tools_reference_matches_a_live_server(mcp) -> None:
	listed = await mcp.client.list_tools()
	live = docgen.from_mcp(listed.tools)
	assert [t.name for t in live] == [t.name for t in docgen.from_catalog()]
	assert docgen.render_tools_md(live) == (DOCS / 'tools.md').read_text(encoding='utf-8'), f'docs/tools.md is stale: {FIX}'


def test_docgen_check_mode() -> None:
	assert docgen.main(['--check']) == 0


def test_every_tool_and_argument_is_documented() -> None:
	text = (DOCS / 'tools.md').read_text(encoding='utf-8')
	for tool in docgen.from_catalog():
		assert f'### `{tool.name}`' in text
		for argument in tool.properties:
			assert f'`{argument}`' in text


def _options() -> list[str]:
	return sorted(
		{opt for action in build_parser()._actions for opt in action.option_strings if opt.startswith('--')} - {'--help'}
	)


@pytest.mark.parametrize('option', _options())
def test_configuration_documents_every_flag(option: str) -> None:
	assert f'`{option}' in (DOCS / 'configuration.md').read_text(encoding='utf-8'), f'{option} missing from docs/configuration.md'


@pytest.mark.parametrize('variable', sorted(var for var, _parse in ENV_VARS.values()))
def test_configuration_documents_every_environment_variable(variable: str) -> None:
	assert f'`{variable}`' in (DOCS / 'configuration.md').read_text(encoding='utf-8'), f'{variable} missing'


def test_configuration_has_the_llm_section_errors_point_to() -> None:
	# llm.describe() tells users to read docs/configuration.md#llm
	assert re.search(r'^## LLM$', (DOCS / 'configuration.md').read_text(encoding='utf-8'), re.MULTILINE)


def _pages() -> list[Path]:
	return [REPO / 'README.md', *sorted(DOCS.glob('*.md'))]


@pytest.mark.parametrize('page', _pages(), ids=lambda p: p.name)
def test_relative_links_resolve(page: Path) -> None:
	text = page.read_text(encoding='utf-8')
	broken = []
	for target in re.findall(r'\]\(([^)\s]+)\)', text):
		if re.match(r'^[a-z]+:', target):
			continue  # external
		path, _, anchor = target.partition('#')
		resolved = (page.parent / path).resolve() if path else page
		if not resolved.exists():
			broken.append(target)
			continue
		if anchor and resolved.suffix == '.md' and anchor not in _anchors(resolved):
			broken.append(target)
	assert not broken, f'{page.name}: broken links {broken}'


def _anchors(page: Path) -> set[str]:
	"""GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
	anchors = set()
	for heading in re.findall(r'^#+ (.+)$', page.read_text(encoding='utf-8'), re.MULTILINE):
		slug = re.sub(r'[^\w\- ]', '', heading.strip().lower()).replace(' ', '-')
		anchors.add(slug)
	return anchors


def test_cli_help_states_the_defaults_of_the_config_model() -> None:
	"""--help reads each default it states from ServerConfig: a default changed there is the one --help shows."""
	import dataclasses

	from browser_use_mcp.config import ServerConfig

	text = ' '.join(build_parser().format_help().split())
	field_of = {names[0]: field for field, names in ENV_VARS.items()}
	defaults = {f.name: f.default for f in dataclasses.fields(ServerConfig)}
	stated = dict((v, k) for k, v in re.findall(r'\(default ([^;()]+?); env (\w+)\)', text))
	assert (
		stated.pop('BROWSER_USE_MCP_QUEUE_TIMEOUT')
		== f'{ServerConfig(transport="http").queue_wait:g} over HTTP, 0 = refuse at once on stdio'
	)
	assert len(stated) >= 20, stated
	for variable, value in stated.items():
		default = defaults[field_of[variable]]
		if isinstance(default, bool):  # a switch's help says when it is on, in words
			continue
		shown = 'none' if default == () else f'{default:g}' if isinstance(default, float) else str(default)
		assert value == shown, (variable, value, default)
