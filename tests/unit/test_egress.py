"""The egress policy in process: the address classifier, the domain checks, and a door forwarding
real requests on loopback (no browser)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ipaddress
from collections.abc import AsyncIterator
from types import SimpleNamespace

import pytest

from browser_use_mcp import egress
from browser_use_mcp.config import ServerConfig
from browser_use_mcp.domains import parse_pattern
from browser_use_mcp.egress import Door, OwnPorts, Policy, Upstream, classify


@pytest.mark.parametrize(
	('address', 'kind'),
	[
		('127.0.0.1', 'loopback'),
		('127.8.9.10', 'loopback'),
		('::1', 'loopback'),
		('0.0.0.0', 'unspecified'),
		('::', 'unspecified'),
		('10.1.2.3', 'private'),
		('172.16.0.1', 'private'),
		('172.31.255.255', 'private'),
		('192.168.1.1', 'private'),
		('100.64.0.1', 'CGNAT'),
		('100.127.255.254', 'CGNAT'),
		('169.254.169.254', 'metadata'),
		('169.254.1.1', 'link-local'),
		('fe80::1', 'link-local'),
		('fd00::1', 'private'),
		('fc00::1', 'private'),
		('fd00:ec2::254', 'metadata'),
		('::ffff:127.0.0.1', 'loopback'),
		('::ffff:10.0.0.1', 'private'),
		('64:ff9b::7f00:1', 'loopback'),
		('2002:7f00:1::', 'loopback'),
		('224.0.0.1', 'multicast'),
		('255.255.255.255', 'address'),
		('240.0.0.1', 'address'),
	],
)
def test_non_public_addresses_are_named(address: str, kind: str) -> None:
	why = classify(ipaddress.ip_address(address))
	assert why is not None and kind in why, (address, why)


@pytest.mark.parametrize('address', ['93.184.216.34', '1.1.1.1', '8.8.8.8', '2606:4700:4700::1111', '172.32.0.1', '100.128.0.1'])
def test_public_addresses_pass(address: str) -> None:
	assert classify(ipaddress.ip_address(address)) is None


def test_domains_match_as_the_tools_check_them() -> None:
	def ok(pattern: str, host: str, port: int = 443, url: str | None = None) -> bool:
		return egress.pattern_matches(parse_pattern(pattern), host, port, url)

	assert ok('*', 'anything.test')
	assert ok('example.com', 'example.com') and ok('example.com', 'www.example.com')
	assert not ok('example.com', 'evil.example.com') and not ok('example.com', 'example.com.evil.test')
	assert ok('*.example.com', 'a.b.example.com') and ok('*.example.com', 'example.com')
	assert not ok('*.example.com', 'badexample.com')
	assert ok('https://example.com/app', 'example.com', 443)
	assert not ok('https://example.com/app', 'example.com', 8443)
	assert ok('http://example.com/app', 'example.com', 80, 'http://example.com/app/x')
	assert not ok('http://example.com/app', 'example.com', 80, 'http://example.com/other')
	assert ok('http://127.0.0.1:8123', '127.0.0.1', 8123, 'http://127.0.0.1:8123/two')
	assert not ok('http://127.0.0.1:8123', '127.0.0.1', 8124, 'http://127.0.0.1:8124/two')


def test_private_networks_follow_the_transport_unless_told() -> None:
	assert egress.blocks_private(ServerConfig(transport='http'))
	assert not egress.blocks_private(ServerConfig(transport='stdio'))
	assert egress.blocks_private(ServerConfig(transport='stdio', block_private_networks=True))
	assert not egress.blocks_private(ServerConfig(transport='http', allow_private_networks=True))


def test_the_two_flags_contradict_each_other() -> None:
	from browser_use_mcp.config import load_config

	with pytest.raises(SystemExit, match='contradict'):
		load_config({}, browser_use=False, block_private_networks=True, allow_private_networks=True)
	env = {'BROWSER_USE_MCP_BLOCK_PRIVATE_NETWORKS': 'true', 'BROWSER_USE_MCP_TRANSPORT': 'stdio'}
	assert egress.blocks_private(load_config(env, browser_use=False))


def test_only_the_operators_list_opens_a_private_address() -> None:
	named = egress._named_private(['127.0.0.1', 'http://10.0.0.5:8080/', 'example.com', '*.internal'])
	policy = Policy(block_private=True, named_private=named)
	no_ports = set
	assert policy.address_refusal('127.0.0.1', ipaddress.ip_address('127.0.0.1'), 5000, no_ports) is None
	assert policy.address_refusal('10.0.0.5', ipaddress.ip_address('10.0.0.5'), 8080, no_ports) is None
	assert policy.address_refusal('10.0.0.5', ipaddress.ip_address('10.0.0.5'), 22, no_ports) is not None
	assert 'private' in (policy.address_refusal('x', ipaddress.ip_address('192.168.0.1'), 80, no_ports) or '')
	# the server's own ports stay closed even when loopback is open
	assert 'port of this server' in (
		policy.address_refusal('127.0.0.1', ipaddress.ip_address('127.0.0.1'), 5000, lambda: {5000}) or ''
	)


def test_the_operators_proxy_becomes_the_upstream_and_leaves_the_flags() -> None:
	up = egress.operator_upstream(('--proxy-server=http://127.0.0.1:9', '--foo'), {})
	assert up == Upstream('http', '127.0.0.1', 9)
	profile = SimpleNamespace(proxy=SimpleNamespace(server='http://127.0.0.1:1234', bypass=egress.BYPASS_NONE))
	assert egress.launch_args(('--proxy-server=http://127.0.0.1:9', '--foo'), profile) == ('--foo',)
	assert egress.launch_args(('--proxy-server=x', '--foo'), SimpleNamespace(proxy=None)) == ('--proxy-server=x', '--foo')
	bypass = Upstream.parse('http://p:3128', bypass='*.corp, intranet')
	assert bypass.bypasses('a.corp') and bypass.bypasses('intranet') and bypass.bypasses('127.0.0.1')
	assert not bypass.bypasses('example.com')


# -- a door on loopback ---------------------------------------------------------------------------


class NoOwnPorts(OwnPorts):
	"""The test's origin servers run in this very process: not the server's ports here."""

	async def refresh(self, port: int | None = None) -> None:
		pass


class Origin:
	"""A tiny HTTP server that counts its requests."""

	def __init__(self) -> None:
		self.hits: list[str] = []
		self.port = 0

	async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
		head = await reader.readuntil(b'\r\n\r\n')
		self.hits.append(head.decode().split('\r\n', 1)[0])
		writer.write(b'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: keep-alive\r\n\r\nhello')
		await writer.drain()
		writer.close()


@pytest.fixture
async def origin() -> AsyncIterator[Origin]:
	o = Origin()
	server = await asyncio.start_server(o.handle, '127.0.0.1', 0)
	o.port = server.sockets[0].getsockname()[1]
	yield o
	server.close()


async def ask(door: Door, request: bytes) -> bytes:
	reader, writer = await asyncio.open_connection('127.0.0.1', door.port)
	writer.write(request)
	await writer.drain()
	data = await asyncio.wait_for(reader.read(), 10)
	writer.close()
	return data


async def test_a_door_refuses_loopback_and_counts_no_hit(origin: Origin) -> None:
	door = await Door(Policy(block_private=True), None, NoOwnPorts()).start()
	try:
		reply = await ask(door, f'GET http://127.0.0.1:{origin.port}/secret HTTP/1.1\r\nHost: x\r\n\r\n'.encode())
		assert reply.startswith(b'HTTP/1.1 403') and b'loopback' in reply and egress.BLOCK_TITLE.encode() in reply
		reply = await ask(door, f'GET http://localhost:{origin.port}/secret HTTP/1.1\r\nHost: x\r\n\r\n'.encode())
		assert reply.startswith(b'HTTP/1.1 403') and b'localhost (127.0.0.1)' in reply or b'localhost (::1)' in reply
		reply = await ask(door, f'CONNECT 127.0.0.1:{origin.port} HTTP/1.1\r\n\r\n'.encode())
		assert reply.startswith(b'HTTP/1.1 403')
		assert origin.hits == []
		assert [r.host for r in door.refused_since(0)] == ['127.0.0.1', 'localhost', '127.0.0.1']
		assert {r.port for r in door.refused_since(0)} == {origin.port}
	finally:
		await door.close()


async def test_a_door_forwards_what_the_policy_allows(origin: Origin) -> None:
	policy = Policy(block_private=True, named_private=egress._named_private(['127.0.0.1']))
	door = await Door(policy, None, NoOwnPorts()).start()
	try:
		reply = await ask(
			door,
			f'GET http://127.0.0.1:{origin.port}/ok?a=1 HTTP/1.1\r\nHost: x\r\nProxy-Connection: keep-alive\r\n\r\n'.encode(),
		)
		assert reply.startswith(b'HTTP/1.1 200') and reply.endswith(b'hello') and b'Connection: close' in reply
		assert origin.hits == ['GET /ok?a=1 HTTP/1.1']
		reply = await ask(door, f'CONNECT 127.0.0.1:{origin.port} HTTP/1.1\r\n\r\nGET /tunnel HTTP/1.1\r\n\r\n'.encode())
		assert reply.startswith(b'HTTP/1.1 200 Connection Established') and reply.endswith(b'hello')
		assert origin.hits[-1] == 'GET /tunnel HTTP/1.1'
	finally:
		await door.close()


async def test_allowed_domains_are_checked_per_request(origin: Origin) -> None:
	policy = Policy(block_private=False, allowed=(parse_pattern('example.com'),))
	door = await Door(policy, None, NoOwnPorts()).start()
	try:
		reply = await ask(door, f'GET http://127.0.0.1:{origin.port}/ HTTP/1.1\r\n\r\n'.encode())
		assert reply.startswith(b'HTTP/1.1 403') and b'not in the allowed domains' in reply
		assert origin.hits == []
	finally:
		await door.close()


async def test_a_door_chains_through_an_upstream_with_its_login(origin: Origin) -> None:
	"""The session's proxy sees every request, with the login the door adds for it."""
	seen: list[str] = []

	async def upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
		head = (await reader.readuntil(b'\r\n\r\n')).decode()
		seen.append(head)
		if f'Basic {base64.b64encode(b"me:pw").decode()}' not in head:
			writer.write(b'HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n')
		else:
			writer.write(b'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nup')
		await writer.drain()
		writer.close()

	server = await asyncio.start_server(upstream, '127.0.0.1', 0)
	port = server.sockets[0].getsockname()[1]
	try:
		good = Upstream.parse(f'http://127.0.0.1:{port}', 'me', 'pw')
		# the upstream is on loopback: allowed here (stdio), and only a public target goes through it
		door = await Door(Policy(block_private=False), good, NoOwnPorts()).start()
		reply = await ask(door, b'GET http://93.184.216.34/x HTTP/1.1\r\nHost: 93.184.216.34\r\n\r\n')
		assert reply.endswith(b'up') and seen[-1].startswith('GET http://93.184.216.34/x HTTP/1.1')
		await door.close()
		bad = Upstream.parse(f'http://127.0.0.1:{port}', 'me', 'wrong')
		door = await Door(Policy(block_private=False), bad, NoOwnPorts()).start()
		reply = await ask(door, b'CONNECT 93.184.216.34:443 HTTP/1.1\r\n\r\n')
		assert reply.startswith(b'HTTP/1.1 502') and b'407' in reply
		await door.close()
		# with private networks blocked, a loopback upstream is refused like any private address
		door = await Door(Policy(block_private=True), good, NoOwnPorts()).start()
		count = len(seen)
		reply = await ask(door, b'CONNECT 93.184.216.34:443 HTTP/1.1\r\n\r\n')
		assert reply.startswith(b'HTTP/1.1 403') and b'cannot be used' in reply and len(seen) == count
		await door.close()
	finally:
		server.close()


async def test_a_door_closes_its_connections_and_stops() -> None:
	door = await Door(Policy(block_private=False), None, NoOwnPorts()).start()
	reader, writer = await asyncio.open_connection('127.0.0.1', door.port)
	writer.write(b'GET http://127.0.0.1')  # an unfinished head
	await writer.drain()
	await asyncio.sleep(0.05)
	assert len(door._clients) == 1
	await door.close()
	assert door._clients == set()
	assert await asyncio.wait_for(reader.read(), 5) == b''
	with pytest.raises(OSError):
		await asyncio.open_connection('127.0.0.1', door.port)
	writer.close()


async def test_the_servers_own_ports_stay_closed_with_loopback_open(origin: Origin) -> None:
	door = await Door(Policy(block_private=False), None, OwnPorts()).start()
	try:
		reply = await ask(door, f'GET http://127.0.0.1:{origin.port}/ HTTP/1.1\r\n\r\n'.encode())
		assert reply.startswith(b'HTTP/1.1 403') and b'port of this server' in reply
		reply = await ask(door, f'CONNECT 127.0.0.1:{door.port} HTTP/1.1\r\n\r\n'.encode())
		assert reply.startswith(b'HTTP/1.1 403') and b'port of this server' in reply
		assert origin.hits == []
	finally:
		await door.close()


async def test_a_request_body_goes_up_and_nothing_after_it() -> None:
	"""One request per connection: bytes after the declared body never reach the server."""
	received: list[bytes] = []

	async def origin(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
		head = await reader.readuntil(b'\r\n\r\n')
		body = await reader.readexactly(3)
		writer.write(b'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok')
		await writer.drain()
		with contextlib.suppress(TimeoutError):
			body += await asyncio.wait_for(reader.read(100), 0.5)
		received.append(head + body)
		writer.close()

	server = await asyncio.start_server(origin, '127.0.0.1', 0)
	port = server.sockets[0].getsockname()[1]
	door = await Door(Policy(block_private=False), None, NoOwnPorts()).start()
	try:
		smuggled = b'GET http://169.254.169.254/latest HTTP/1.1\r\nHost: x\r\n\r\n'
		reply = await ask(door, f'POST http://127.0.0.1:{port}/p HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc'.encode() + smuggled)
		assert reply.endswith(b'ok')
		assert received and received[0].endswith(b'\r\n\r\nabc'), received
	finally:
		await door.close()
		server.close()
