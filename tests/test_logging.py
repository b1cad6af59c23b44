"""Logs go to stderr only (stdout is the MCP protocol) and every line names its session.

The end-to-end test speaks raw JSON-RPC to the real server so that *any* stray byte on stdout
fails it, which a high-level client would skip over or merely log.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import re
import sys
from pathlib import Path

import pytest

from browser_use_mcp.cli import build_parser
from browser_use_mcp.logs import SessionFormatter, SessionTag, setup_logging
from browser_use_mcp.sessions import current_session
from harness.servers import RawServer, server_env

LINE = re.compile(r'^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR|CRITICAL) \[(?P<tag>[^\]]+)\] \S+: ')
CONTINUATION = re.compile(r'^    \[(?P<tag>[^\]]+)\] ')


def _tag(line: str) -> str | None:
	match = LINE.match(line) or CONTINUATION.match(line)
	return match.group('tag') if match else None


class JsonRpcPipe:
	"""Raw JSON-RPC over a server's stdio, nothing in between: we see its stdout byte for byte."""

	def __init__(self, server: RawServer) -> None:
		self.server = server
		self.proc = server.proc
		self.stdout_lines: list[str] = []
		self._next_id = 0
		self._waiting: dict[int, asyncio.Future[dict]] = {}
		self._stdout_task = asyncio.create_task(self._read_stdout())

	@property
	def stderr_lines(self) -> list[str]:
		return self.server.stderr_lines

	async def _read_stdout(self) -> None:
		"""One reader for all requests; answers are matched to requests by id."""
		assert self.proc.stdout is not None
		while raw := await self.proc.stdout.readline():
			line = raw.decode('utf-8', 'replace').rstrip('\n')
			self.stdout_lines.append(line)
			with contextlib.suppress(ValueError, AttributeError):
				waiter = self._waiting.pop(json.loads(line).get('id'), None)
				if waiter is not None and not waiter.done():
					waiter.set_result(json.loads(line))
		for waiter in self._waiting.values():
			if not waiter.done():
				waiter.set_exception(AssertionError('server closed stdout'))

	async def send(self, message: dict) -> None:
		assert self.proc.stdin is not None
		self.proc.stdin.write((json.dumps(message) + '\n').encode())
		await self.proc.stdin.drain()

	async def request(self, method: str, params: dict, timeout: float = 60) -> dict:
		self._next_id += 1
		waiter: asyncio.Future[dict] = asyncio.get_running_loop().create_future()
		self._waiting[self._next_id] = waiter
		await self.send({'jsonrpc': '2.0', 'id': self._next_id, 'method': method, 'params': params})
		return await asyncio.wait_for(waiter, timeout)

	async def call(self, name: str, **arguments: object) -> dict:
		reply = await self.request('tools/call', {'name': name, 'arguments': arguments})
		assert 'result' in reply, reply
		return reply['result']

	async def finish(self) -> None:
		"""Close stdin (how hosts stop a stdio server), then wait for it to exit by itself."""
		self.server.close_stdin()
		assert await self.server.wait(30) is not None, 'the server did not exit after stdin closed'
		await asyncio.wait_for(self._stdout_task, 10)

	async def abort(self) -> None:
		self._stdout_task.cancel()
		with contextlib.suppress(BaseException):
			await self._stdout_task


@contextlib.asynccontextmanager
async def raw_server(home: Path, *args: str, **env: str):
	server = await RawServer(home, *args, env=server_env(home, **env)).start()
	pipe = JsonRpcPipe(server)
	try:
		yield pipe
	finally:
		await server.stop()
		await pipe.abort()


async def test_logs_on_stderr_only_each_line_tagged_with_its_session(tmp_path: Path, site: str) -> None:
	# The flag must win over the environment: env says error, the flag says info.
	async with raw_server(tmp_path / 'home', '--log-level', 'info', BROWSER_USE_MCP_LOG_LEVEL='error') as server:
		init = await server.request(
			'initialize',
			{'protocolVersion': '2025-06-18', 'capabilities': {}, 'clientInfo': {'name': 'log-test', 'version': '0'}},
		)
		assert 'result' in init, init
		await server.send({'jsonrpc': '2.0', 'method': 'notifications/initialized'})
		results = await asyncio.gather(
			server.call('browser_navigate', url=site + '/', session_id='log-a'),
			server.call('browser_navigate', url=site + '/two', session_id='log-b'),
		)
		assert not any(r.get('isError') for r in results), results
		for sid in ('log-a', 'log-b'):
			closed = await server.call('browser_close_session', session_id=sid)
			assert not closed.get('isError'), closed
		await server.finish()

	# stdout: the protocol and nothing else
	assert server.stdout_lines
	for line in server.stdout_lines:
		assert json.loads(line).get('jsonrpc') == '2.0', line

	# stderr: log lines only, each one tagged
	assert server.stderr_lines, 'no log output at --log-level info'
	untagged = [line for line in server.stderr_lines if _tag(line) is None]
	assert not untagged, f'stderr lines without a session tag: {untagged[:5]}'
	for sid, other in (('log-a', 'log-b'), ('log-b', 'log-a')):
		about = [line for line in server.stderr_lines if f"session '{sid}'" in line]
		assert any(' created ' in line for line in about), f'no creation line for {sid}: {server.stderr_lines}'
		assert any(' closed ' in line for line in about), f'no close line for {sid}: {server.stderr_lines}'
		assert all(_tag(line) == sid for line in about), about
		assert not any(_tag(line) == other for line in about)


async def test_expiry_logged_by_the_reaper_carries_the_session(tmp_path: Path, site: str) -> None:
	"""The reaper runs outside any tool call; its lines must still name the session they are about."""
	async with raw_server(tmp_path / 'home', '--log-level', 'info', '--idle-timeout', '1') as server:
		await server.request(
			'initialize',
			{'protocolVersion': '2025-06-18', 'capabilities': {}, 'clientInfo': {'name': 'log-test', 'version': '0'}},
		)
		await server.send({'jsonrpc': '2.0', 'method': 'notifications/initialized'})
		result = await server.call('browser_navigate', url=site + '/', session_id='log-c')
		assert not result.get('isError'), result
		for _ in range(150):
			if any("session 'log-c' lost" in line for line in server.stderr_lines):
				break
			await asyncio.sleep(0.1)
		await server.finish()
	lost = [line for line in server.stderr_lines if "session 'log-c' lost" in line]
	assert lost, server.stderr_lines
	assert all(_tag(line) == 'log-c' for line in lost), lost
	closed = [line for line in server.stderr_lines if "session 'log-c' closed" in line]
	assert closed and all(_tag(line) == 'log-c' for line in closed), server.stderr_lines


def test_log_level_flag_is_parsed() -> None:
	parser = build_parser()
	assert parser.parse_args(['--log-level', 'debug']).log_level == 'debug'
	with pytest.raises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
		parser.parse_args(['--log-level', 'loud'])


def test_multiline_records_keep_the_tag_on_every_line() -> None:
	formatter = SessionFormatter('%(levelname)s [%(session)s] %(name)s: %(message)s')
	record = logging.LogRecord('browser_use_mcp.test', logging.ERROR, __file__, 1, 'first\nsecond', None, None)
	token = current_session.set('worker-7')
	try:
		SessionTag().filter(record)
	finally:
		current_session.reset(token)
	try:
		raise ValueError('boom')
	except ValueError:
		record.exc_info = sys.exc_info()
	lines = formatter.format(record).split('\n')
	assert len(lines) > 3
	assert lines[0] == 'ERROR [worker-7] browser_use_mcp.test: first'
	assert all(line.startswith('    [worker-7] ') for line in lines[1:])


def test_setup_logging_writes_to_stderr_not_stdout(capsys: pytest.CaptureFixture[str]) -> None:
	root = logging.getLogger()
	saved = (root.handlers[:], root.level)
	try:
		setup_logging('info')
		token = current_session.set('sess-x')
		try:
			logging.getLogger('browser_use_mcp.test').info('hello from a session')
		finally:
			current_session.reset(token)
		logging.getLogger('browser_use_mcp.test').warning('outside any session')
	finally:
		root.handlers, _ = saved
		root.setLevel(saved[1])
	out, err = capsys.readouterr()
	assert out == ''
	assert '[sess-x] browser_use_mcp.test: hello from a session' in err
	assert '[-] browser_use_mcp.test: outside any session' in err
