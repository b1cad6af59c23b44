"""browser_list_files and browser_read_file: what a session's browser saved, read back over MCP.

A real server (both isolation modes, ``--tools all``) and a real MCP client: a real download from the
test site, a real PDF from browser_save_pdf, read whole and in parts and compared with the disk; then
every way out of the session's two directories a caller or a page could try.
"""

from __future__ import annotations

import asyncio
import base64
import os
from collections.abc import AsyncIterator

import pytest

from harness.servers import Background, Mcp, running_server
from tests.e2e.test_core import session_root
from tests.fixtures import isolation_modes

isolation = isolation_modes()


@pytest.fixture(scope='module')
async def mcp(tmp_path_factory: pytest.TempPathFactory, isolation: str) -> AsyncIterator[Mcp]:
	async with Background(running_server(tmp_path_factory.mktemp('files-home'), '--tools', 'all')) as server:
		yield server


AGENT_DATA = 'files/browseruse_agent_data/'  # browser-use's FileSystem, made with every session (an empty todo.md)


async def saved(mcp: Mcp, session_id: str) -> list[dict]:
	"""What browser_list_files lists, less the browser-use agent's own working files."""
	listed = (await mcp.ok('browser_list_files', session_id=session_id)).structured
	assert listed['truncated'] is False
	return [f for f in listed['files'] if not f['path'].startswith(AGENT_DATA)]


async def test_a_download_is_listed_and_read_back_as_text(mcp: Mcp, site: str) -> None:
	sid = 'files-dl'
	assert await saved(mcp, sid) == []
	done = await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/download')
	# a server offering the file tools says where browser_read_file finds the file
	assert "hello.txt (15 bytes) is saved in the session's downloads (browser_read_file reads it as downloads/hello.txt)" in (
		done.text
	), done.text
	listed = await saved(mcp, sid)
	assert [(f['path'], f['size'], f['partial']) for f in listed] == [('downloads/hello.txt', 15, False)]
	assert listed[0]['modified'].endswith('Z')
	read = await mcp.ok('browser_read_file', session_id=sid, path='downloads/hello.txt')
	assert read.text == 'downloads/hello.txt (15 bytes, text/plain), its text follows.'
	assert read.texts[1:] == ['hello download\n']
	assert read.structured == {
		'path': 'downloads/hello.txt',
		'size': 15,
		'offset': 0,
		'length': 15,
		'more': False,
		'mime_type': 'text/plain',
		'encoding': 'text',
	}
	part = await mcp.ok('browser_read_file', session_id=sid, path='downloads/hello.txt', offset=6, max_bytes=4)
	assert part.texts[1:] == ['down'] and part.structured['more'] is True
	assert 'read on from offset 10' in part.text
	assert await saved(mcp, 'files-other') == [], "another session sees none of this session's files"


async def test_a_saved_pdf_comes_back_as_a_resource_whole_and_in_parts(mcp: Mcp, site: str) -> None:
	sid = 'files-pdf'
	await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/long')
	await mcp.ok('browser_save_pdf', session_id=sid, path='long.pdf')
	on_disk = (session_root(mcp, sid) / 'files' / 'long.pdf').read_bytes()
	listed = await saved(mcp, sid)
	assert {'path': 'files/long.pdf', 'size': len(on_disk)}.items() <= listed[0].items()
	whole = await mcp.ok('browser_read_file', session_id=sid, path='files/long.pdf')
	(resource,) = [c for c in whole.raw.content if c.type == 'resource']
	assert resource.resource.mime_type == 'application/pdf'
	assert resource.resource.uri == 'browser-use-mcp:///files/long.pdf'
	assert base64.b64decode(resource.resource.blob) == on_disk
	assert whole.structured['encoding'] == 'base64' and whole.structured['more'] is False
	parts, offset = b'', 0
	while True:
		part = await mcp.ok('browser_read_file', session_id=sid, path='files/long.pdf', offset=offset, max_bytes=4000)
		(blob,) = [c.resource.blob for c in part.raw.content if c.type == 'resource']
		parts += base64.b64decode(blob)
		offset += part.structured['length']
		if not part.structured['more']:
			break
	assert parts == on_disk and parts.startswith(b'%PDF')


@pytest.mark.parametrize(
	'path',
	['../hello.txt', '/etc/passwd', 'downloads/../../../etc/passwd', 'profile/Cookies', 'downloads/', 'downloads/./x', 'x'],
)
async def test_paths_outside_the_two_directories_are_refused(mcp: Mcp, site: str, path: str) -> None:
	result = await mcp.call('browser_read_file', session_id='files-bad', path=path)
	assert result.is_error and 'downloads/<name> or files/<path>' in result.text, result.text


async def test_links_pipes_and_missing_files_are_refused_and_the_session_keeps_working(mcp: Mcp, site: str) -> None:
	sid = 'files-traps'
	await mcp.ok('browser_navigate', session_id=sid, url=f'{site}/')
	downloads = session_root(mcp, sid) / 'downloads'
	(downloads / 'passwd').symlink_to('/etc/passwd')
	(downloads / 'up').symlink_to(downloads.parent)  # a directory link: listing does not follow it
	os.mkfifo(downloads / 'pipe')
	(downloads / '.half.txt.grid-partial').write_text('half')  # a Grid download on its way from the node
	listed = [(f['path'], f['partial']) for f in await saved(mcp, sid)]
	assert listed == [('downloads/.half.txt.grid-partial', True)], 'links and pipes are not listed; partial files say so'
	out = await mcp.call('browser_read_file', session_id=sid, path='downloads/passwd')
	assert out.is_error and 'leads out of the session' in out.text, out.text
	up = await mcp.call('browser_read_file', session_id=sid, path='downloads/up/profile/Local State')
	assert up.is_error and 'leads out of the session' in up.text, up.text
	pipe = await asyncio.wait_for(mcp.call('browser_read_file', session_id=sid, path='downloads/pipe'), 20)
	assert pipe.is_error and 'not a regular file' in pipe.text, pipe.text
	missing = await mcp.call('browser_read_file', session_id=sid, path='files/none.txt')
	assert missing.is_error and 'browser_list_files lists what there is' in missing.text, missing.text
	too_far = await mcp.call('browser_read_file', session_id=sid, path='downloads/pipe', offset=10**12)
	assert too_far.is_error
	assert (await mcp.ok('browser_get_state', session_id=sid)).json()['title'] == 'Home Page'


async def test_the_default_sessions_persistent_directories_show_only_what_it_saved(mcp: Mcp, site: str) -> None:
	"""The default session downloads into the operator's own directory (upstream's), which may hold
	files from before: those are neither listed nor read."""
	downloads = mcp.home / 'Downloads' / 'browser-use-mcp'
	downloads.mkdir(parents=True, exist_ok=True)
	private = downloads / 'tax-return.txt'
	private.write_text('PRIVATE-4711\n')
	os.utime(private, (1_700_000_000, 1_700_000_000))
	done = await mcp.ok('browser_navigate', url=f'{site}/download')  # no session_id: the default session
	assert 'hello.txt (15 bytes)' in done.text, done.text
	listed = (await mcp.ok('browser_list_files')).structured['files']
	assert [f['path'] for f in listed if not f['path'].startswith(AGENT_DATA)] == ['downloads/hello.txt']
	assert (await mcp.ok('browser_read_file', path='downloads/hello.txt')).texts[1:] == ['hello download\n']
	refused = await mcp.call('browser_read_file', path='downloads/tax-return.txt')
	assert refused.is_error and 'before this session started' in refused.text, refused.text
	assert 'PRIVATE-4711' not in refused.text and 'PRIVATE-4711' not in str(refused.raw.content)
