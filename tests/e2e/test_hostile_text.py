"""A page's lone UTF-16 surrogates never reach the wire (found by fuzzing: one took the server down).

JavaScript strings may hold half a surrogate pair. A title, a text or an evaluated value carrying one
made the reply unencodable as UTF-8, and the stdio transport's failure to write it ended the server:
every session of every agent. Through a real stdio client: a page built to carry them, read every way a
tool reads a page, and a bystander session that must keep working throughout.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from harness.servers import Background, Mcp, html_pages, running_server

PAGE = """<p id="p">x</p><button id="b">go</button><script>
document.title = 'half \\ud800 a pair';
document.getElementById('p').textContent = 'text \\udc00 here';
document.getElementById('b').setAttribute('aria-label', 'label \\ud83d end');
</script>"""


@pytest.fixture(scope='module')
async def mcp(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Mcp]:
	"""A server offering every tool (browser_get_recording is a debug tool)."""
	async with Background(running_server(tmp_path_factory.mktemp('hostile-home'), '--tools', 'all')) as server:
		yield server


@pytest.fixture(scope='module')
def hostile() -> Iterator[str]:
	with html_pages({'/half': PAGE}) as url:
		yield f'{url}/half'


async def test_lone_surrogates_in_a_page_never_take_the_server_down(mcp: Mcp, site: str, hostile: str) -> None:
	await mcp.ok('browser_navigate', session_id='bystander', url=f'{site}/two')
	await mcp.ok('browser_navigate', session_id='half', url=hostile)
	state = await mcp.ok('browser_get_state', session_id='half')
	assert 'half \ufffd a pair' in state.text, state.text[:2000]
	html = await mcp.ok('browser_get_html', session_id='half')
	assert 'text \ufffd here' in html.text, html.text[:2000]
	value = await mcp.ok('browser_evaluate', session_id='half', expression="'\\ud800' + document.title")
	assert '\ufffd' in value.text and 'half' in value.text, value.text
	tabs = await mcp.ok('browser_list_tabs', session_id='half')
	assert 'half' in tabs.text
	shown = await mcp.ok('browser_navigate', session_id='half', url=hostile, include_state=True)
	assert any('half \ufffd a pair' in getattr(block, 'text', '') for block in shown.raw.content), shown.raw.content
	# a recorded session writes its trace and HAR with them, and reads them back
	await mcp.ok('browser_create_session', session_id='taped', record=['trace', 'har'])
	await mcp.ok('browser_navigate', session_id='taped', url=hostile)
	await mcp.ok('browser_get_state', session_id='taped')
	await mcp.ok('browser_evaluate', session_id='taped', expression="'\\udfff'")
	recording = await mcp.ok('browser_get_recording', session_id='taped')
	assert 'half \ufffd a pair' in recording.text, recording.text[:3000]
	# the server is alive, and so is every other session
	await mcp.ok('browser_navigate', session_id='bystander', url=f'{site}/one')
	assert (await mcp.page_state('bystander'))['url'] == f'{site}/one'
	listed = await mcp.ok('browser_list_sessions')
	assert 'half' in listed.text and 'bystander' in listed.text
