"""stdio on pipes, read and written by the event loop (``transports/pipes.py``).

The transport is driven in a child process whose stdin and stdout are real pipes, as an MCP client
starts its server: messages split across writes and several in one write arrive whole and in
order, a blank line is skipped, a line that is not JSON-RPC and one over the size cap are answered
with JSON-RPC errors (with the request's id when it has one) while the next line still works, stray output of the
process and of its children goes to stderr, never to the wire, and fd 0 / 1 are the wire again
once the transport ends. Then the real server over the SDK's own stdio client, with the pipe
transport and with ``BROWSER_USE_MCP_STDIO_PIPES=false``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import textwrap
from pathlib import Path

from browser_use_mcp.transports import pipes
from harness.servers import RawServer, server_env

ECHO = textwrap.dedent(
	"""
	import anyio, os, sys
	import mcp_types as types
	from mcp.shared.message import SessionMessage
	from browser_use_mcp.transports import pipes

	pipes.MAX_LINE = 1 << 20

	async def main():
		async with pipes.pipe_stdio() as (read_stream, write_stream):
			print('stray print while serving')
			os.system('echo stray child output')
			async with read_stream, write_stream:
				async for item in read_stream:
					if isinstance(item, Exception):
						note = {'jsonrpc': '2.0', 'method': 'error', 'params': {'text': str(item)[:80]}}
						item = SessionMessage(types.jsonrpc_message_adapter.validate_python(note))
					else:
						print('another stray print')
					await write_stream.send(item)
		os.write(1, b'after: fd 1 is the wire again\\n')
		sys.stdout.write('print after\\n')

	anyio.run(main)
	"""
)


def _ping(n: int, pad: int = 0) -> bytes:
	return (json.dumps({'jsonrpc': '2.0', 'id': n, 'method': 'ping', 'params': {'pad': 'x' * pad}}) + '\n').encode()


async def test_pipe_transport_splits_lines_reports_bad_ones_and_keeps_strays_off_the_wire() -> None:
	proc = await asyncio.create_subprocess_exec(
		sys.executable,
		'-c',
		ECHO,
		stdin=asyncio.subprocess.PIPE,
		stdout=asyncio.subprocess.PIPE,
		stderr=asyncio.subprocess.PIPE,
		limit=1 << 24,
	)
	assert proc.stdin and proc.stdout and proc.stderr
	try:
		big = _ping(2, pad=600_000)
		proc.stdin.write(_ping(1) + big[:1000])  # one whole message, the start of the next
		await proc.stdin.drain()
		await asyncio.sleep(0.1)
		proc.stdin.write(
			big[1000:]
			+ b'\n   \n'
			+ b'not json\n'
			+ _ping(3, pad=2 << 20)
			+ _ping(4)
			# found by fuzzing: these got no answer at all, and their requests waited for ever
			+ b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "x", "arguments": {"a": "\\ud800"}}}\n'
			+ b'{"jsonrpc": "2.0", "id": "eight", "method": "ping", "params": {"a": ' * 1
			+ b'\n'
			+ b'[' * 100_000
			+ b'\n'
			+ b'{"jsonrpc": "2.0", "method": "notifications/x", "params": {"a": "\\udc00"}}\n'
			+ b'{"jsonrpc": "2.0", "id": 5, "method": "ping"}'
		)
		await proc.stdin.drain()
		proc.stdin.close()  # the last message has no newline: it still counts
		out, err = await asyncio.wait_for(proc.communicate(), 30)
	finally:
		if proc.returncode is None:
			proc.kill()
			await proc.wait()
	assert proc.returncode == 0, err.decode()[-2000:]
	lines = out.decode().splitlines()
	assert lines[-2:] == ['after: fd 1 is the wire again', 'print after'], lines[-3:]
	messages = [json.loads(line) for line in lines[:-2]]  # every line before is JSON-RPC: nothing stray
	# an unreadable line is answered on the wire with a JSON-RPC error: its request's id when it has one
	# (-32600), else a null id (-32700); a notification (no id) gets no answer. Answers need not keep the
	# lines' order: an error is written by the reader at once, the echo goes through the server.
	echoed = [m for m in messages if 'error' not in m]
	assert [m['id'] for m in echoed] == [1, 2, 4, 5], echoed
	assert len(echoed[1]['params']['pad']) == 600_000
	errors = [m for m in messages if 'error' in m]
	assert sorted((str(m['id']), m['error']['code']) for m in errors) == [('7', -32600)] + [('None', -32700)] * 4, errors
	texts = [m['error']['message'] for m in errors]
	assert all('one JSON-RPC 2.0 object per line' in t for t in texts), texts
	assert any('longer than 1,048,576 bytes' in t for t in texts), texts
	assert any('lone UTF-16 surrogate' in t for t in texts if 'object' in t), texts
	assert sum('not one JSON object' in t for t in texts) == 3, texts  # not json, the cut line, 100,000 brackets
	assert next(m for m in errors if m['id'] == 7)['error']['message'].count('surrogate') == 1
	stderr = err.decode()
	for stray in ('stray print while serving', 'stray child output', 'another stray print'):
		assert stray in stderr, stderr[-2000:]


def test_only_pipes_and_sockets_are_served_by_the_loop(tmp_path: Path) -> None:
	regular = tmp_path / 'file'
	regular.write_text('')
	read_end, write_end = os.pipe()
	with open(regular) as handle:
		try:
			assert pipes.is_pipe(read_end) and pipes.is_pipe(write_end)
			assert not pipes.is_pipe(handle.fileno())
			null = os.open(os.devnull, os.O_RDONLY)
			try:
				assert not pipes.is_pipe(null)  # a character device: the SDK's transport serves it
			finally:
				os.close(null)
			assert not pipes.is_pipe(10_000)  # not open
		finally:
			os.close(read_end)
			os.close(write_end)


async def _serve_one_call(home: Path, **env: str) -> tuple[dict, list[str]]:
	server = await RawServer(home, '--log-level', 'debug', env=server_env(home, **env)).start()
	try:
		proc = server.proc
		assert proc.stdin and proc.stdout

		async def request(n: int, method: str, params: dict) -> dict:
			proc.stdin.write((json.dumps({'jsonrpc': '2.0', 'id': n, 'method': method, 'params': params}) + '\n').encode())
			await proc.stdin.drain()
			return json.loads(await asyncio.wait_for(proc.stdout.readline(), 60))

		init = await request(
			1, 'initialize', {'protocolVersion': '2025-06-18', 'capabilities': {}, 'clientInfo': {'name': 't', 'version': '0'}}
		)
		assert 'result' in init, init
		proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
		listed = await request(2, 'tools/call', {'name': 'browser_list_sessions', 'arguments': {}})
		server.close_stdin()
		assert await server.wait(30) == 0, 'the server did not end when its stdin closed'
		return listed, list(server.stderr_lines)
	finally:
		await server.stop()


async def test_the_server_serves_its_pipes_from_the_loop_and_the_sdk_transport_when_told(tmp_path: Path) -> None:
	listed, stderr = await _serve_one_call(tmp_path / 'a')
	assert 'result' in listed and not listed['result'].get('isError'), listed
	assert any('event loop reads stdin' in line for line in stderr), stderr[-20:]
	listed, stderr = await _serve_one_call(tmp_path / 'b', BROWSER_USE_MCP_STDIO_PIPES='false')
	assert 'result' in listed and not listed['result'].get('isError'), listed
	assert not any('event loop reads stdin' in line for line in stderr), stderr[-20:]
