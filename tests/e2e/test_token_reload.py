"""--auth-token-file reloads without a restart: a removed token's sessions are closed, every other
session is untouched, a malformed file changes nothing. Real HTTP server, real clients, real Chromium."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from harness.httpserver import INITIALIZE, HttpServer, connect, free_port, http_server
from harness.servers import server_env, wait_until

A = f'alpha-{uuid.uuid4().hex}'
B = f'beta-{uuid.uuid4().hex}'


@contextlib.contextmanager
def token_file_server(home: Path, tokens: Path, poll: str) -> Iterator[HttpServer]:
	home.mkdir(parents=True, exist_ok=True)
	env = server_env(home, BROWSER_USE_MCP_TOKEN_FILE_POLL=poll, BROWSER_USE_MCP_AUTH_TOKEN_FILE=str(tokens))
	with http_server(home, env=env) as server:
		yield server


def status(server: HttpServer, token: str) -> int:
	return httpx.post(server.url, json=INITIALIZE, headers={'Authorization': f'Bearer {token}'}, timeout=30).status_code


def write(path: Path, text: str) -> None:
	"""Rewrite in place, as an editor or `echo >` does; the mtime moves even within one clock tick."""
	path.write_text(text)
	st = path.stat()
	os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


@pytest.mark.parametrize('how', ['sighup', 'rewrite'])
async def test_removed_token_loses_its_sessions_and_nobody_else_does(tmp_path: Path, site: str, how: str) -> None:
	tokens = tmp_path / 'tokens'
	tokens.write_text(f'# two clients\n{A}\n\n{B}\n')
	# SIGHUP only, or polling only: each way is shown to work on its own
	with token_file_server(tmp_path / 'home', tokens, poll='0' if how == 'sighup' else '1') as server:

		def reloads(word: str) -> int:
			return server.log_text().count(word)

		def apply() -> None:
			if how == 'sighup':
				server.proc.send_signal(signal.SIGHUP)

		async with connect(server, A) as alpha, connect(server, B) as beta:
			for session in ('work', 'more'):
				await alpha.ok('browser_navigate', url=f'{site}/two', session_id=session)
			await beta.ok('browser_navigate', url=f'{site}/form', session_id='work')

			# a malformed file keeps both tokens, and says why
			write(tokens, f'{A} {B}\n')
			apply()
			assert wait_until(lambda: reloads('token file not reloaded') == 1, timeout=15), server.log_text()
			assert 'line 1 is not one token' in server.log_text()
			assert status(server, A) == 200 and status(server, B) == 200
			assert (await alpha.page_state('work'))['url'] == f'{site}/two'

			# A removed: 401, and its sessions are closed on the server
			write(tokens, f'{B}\n')
			apply()
			assert wait_until(lambda: reloads('token file reloaded') == 1, timeout=15), server.log_text()
			assert '1 principal(s) removed, 2 of their session(s) closed' in server.log_text()
			assert status(server, A) == 401
			assert status(server, B) == 200
			# B's session is untouched: the same page, over the connection it already had
			assert (await beta.page_state('work'))['url'] == f'{site}/form'
			assert A not in server.log_text() and B not in server.log_text()

		# A back: a new principal's fresh start, none of its old sessions
		write(tokens, f'{A}\n{B}\n')
		apply()
		assert wait_until(lambda: reloads('token file reloaded') == 2, timeout=15), server.log_text()
		async with connect(server, A) as alpha:
			listed = (await alpha.ok('browser_list_sessions')).structured['sessions']
			assert not [s for s in listed if s['session_id'] in ('work', 'more')], listed


def test_token_file_format(tmp_path: Path) -> None:
	from browser_use_mcp.transports.http import read_token_file

	path = tmp_path / 'tokens'
	path.write_text(f'# comment\n\n  {A}  \n{B}\n{A}\n')
	assert read_token_file(path) == (A, B)
	for bad, why in [
		('# only a comment\n\n', 'has no token'),
		(f'{A} {B}\n', 'line 1 is not one token'),
		(f'{A}\x07\n', 'line 1'),
	]:
		path.write_text(bad)
		with pytest.raises(ValueError, match=why):
			read_token_file(path)
	with pytest.raises(ValueError, match='does not exist'):
		read_token_file(tmp_path / 'missing')


def test_malformed_token_file_is_a_start_up_error(tmp_path: Path) -> None:
	path = tmp_path / 'tokens'
	path.write_text('\n')
	done = subprocess.run(
		[
			sys.executable,
			'-m',
			'browser_use_mcp',
			'--transport',
			'http',
			'--port',
			str(free_port()),
			'--auth-token-file',
			str(path),
		],
		env=server_env(tmp_path),
		capture_output=True,
		text=True,
		timeout=60,
	)
	assert done.returncode == 2
	assert 'has no token' in done.stderr
