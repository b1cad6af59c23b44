"""The egress policy: where a session's browser may connect, decided in the network path.

Checking a tool's URL is not enough: a page navigates by itself (``location=``, a redirect,
``window.open``), fetches, loads subresources and opens websockets. So every browser context we
make (and every Chromium of a session's own) is pointed at a ``Door``: a small HTTP/CONNECT
forward proxy of ours on 127.0.0.1, one listening port per session, loopback not bypassed. The
door checks each request against the session's policy, resolves the name itself, checks every
address it resolved to, and connects to the address it checked (no second lookup for a DNS
rebinding to slip into). A refused request gets a 403 page saying why; the door remembers the
last refusals so the tool that caused one can say so.

Policy: private, loopback, link-local, CGNAT and unspecified addresses (and metadata endpoints)
are refused when private networks are blocked (HTTP transport by default), except the private
hosts the operator's own ``allowed_domains`` names literally (``127.0.0.1``, ``http://10.0.0.5:8080``);
the session's ``allowed_domains`` (and the server's ``prohibited_domains``) are checked for every
request; the listening ports of this server and its browsers are never reachable on loopback.
A session's own ``proxy`` (or the operator's proxy flag) becomes the door's upstream: the door
forwards there, logging in itself; loopback and the proxy's bypass list go direct, as Chromium did.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import contextlib
import fnmatch
import html
import ipaddress
import logging
import os
import socket
import ssl
import time
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from browser_use_mcp.domains import Pattern, parse_pattern

logger = logging.getLogger('browser_use_mcp.egress')

BLOCK_TITLE = 'Blocked by egress policy'
BYPASS_NONE = '<-loopback>'  # Chromium's default bypass of localhost, taken away: loopback goes through the door too
MAX_HEAD = 16 * 1024  # bytes of a request or response head
MAX_CONNECTIONS = 256  # open client connections per door
HEAD_TIMEOUT = 30.0  # s for a client to send its request head
CONNECT_TIMEOUT = 15.0  # s to resolve and connect to the destination (or upstream)
IDLE_TIMEOUT = 120.0  # s a relayed connection may stay silent both ways
CHUNK = 64 * 1024
RESOLVE_TIMEOUT = 10.0
OWN_PORTS_TTL = 1.0  # s the listening ports of this process tree are cached

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

_METADATA = {ipaddress.ip_address('169.254.169.254'), ipaddress.ip_address('fd00:ec2::254')}
_CGNAT = ipaddress.ip_network('100.64.0.0/10')
_NAT64 = ipaddress.ip_network('64:ff9b::/96')


def classify(ip: Address) -> str | None:
	"""Why ``ip`` is not a public internet address ("loopback", "private", ...), or None if it is."""
	if isinstance(ip, ipaddress.IPv6Address):
		embedded = ip.ipv4_mapped or ip.sixtofour or (ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF) if ip in _NAT64 else None)
		if embedded is not None:
			return classify(embedded)
	if ip in _METADATA:
		return 'a cloud metadata address'
	if ip.is_unspecified:
		return 'an unspecified address (it reaches this machine)'
	if ip.is_loopback:
		return 'a loopback address (this machine)'
	if ip.is_link_local:
		return 'a link-local address'
	if isinstance(ip, ipaddress.IPv4Address) and ip in _CGNAT:
		return 'a shared (CGNAT) address'
	if ip.is_multicast:
		return 'a multicast address'
	if ip.is_private:
		return 'a private address'
	if ip.is_reserved or not ip.is_global:
		return 'a reserved address'
	return None


def _local(ip: Address) -> bool:
	"""An address that reaches this machine (where the server's own ports are)."""
	why = classify(ip) or ''
	return 'loopback' in why or 'unspecified' in why


def _ip(text: str) -> Address | None:
	try:
		return ipaddress.ip_address(text.strip('[]').split('%', 1)[0])
	except ValueError:
		return None


# -- the policy -----------------------------------------------------------------------------


def _under(host: str, domain: str) -> bool:
	return host == domain or host.endswith('.' + domain)


def _default_port(scheme: str) -> int:
	return 443 if scheme in ('https', 'wss') else 80


def pattern_matches(p: Pattern, host: str, port: int, url: str | None) -> bool:
	"""Whether a request to ``host:port`` (``url`` when the door sees it: plain http) matches an
	allowed_domains pattern. Inside a tunnel the path is unseen: a URL prefix matches by its host,
	port and scheme family only (the tools' own check still applies the whole prefix to navigations)."""
	if p.kind == 'any':
		return True
	if p.kind == 'host':
		return host == p.host or (p.host.count('.') == 1 and host == 'www.' + p.host)
	if p.kind == 'sub':
		return _under(host, p.host)
	if p.kind == 'url':
		if url is not None:
			return url.startswith(harden_prefix(p.text))  # the authority pinned: :80 is no prefix of :8080
		parts = urllib.parse.urlsplit(p.text)
		try:
			wanted = parts.port or _default_port(parts.scheme.lower())
		except ValueError:
			return False
		return (parts.hostname or '').lower() == host and wanted == port
	return fnmatch.fnmatch(host, p.text.lower()) or (url is not None and fnmatch.fnmatch(url, p.text))


def harden_prefix(text: str) -> str:
	scheme, _, rest = text.partition('://')
	authority, slash, path = rest.partition('/')
	return f'{scheme.lower()}://{authority.lower()}/{path}'


def _named_private(domains: Iterable[str]) -> frozenset[tuple[Address, int | None]]:
	"""Private addresses the operator's allow-list names literally, with the port it names (None: any)."""
	out = set()
	for text in domains:
		p = parse_pattern(text)
		ip = _ip(p.host) if p.kind in ('host', 'url') else None
		if ip is None:
			continue
		port = None
		if p.kind == 'url':
			with contextlib.suppress(ValueError):
				port = urllib.parse.urlsplit(p.text).port
		out.add((ip, port))
	return frozenset(out)


@dataclass(frozen=True)
class Policy:
	"""What one session may reach."""

	block_private: bool
	allowed: tuple[Pattern, ...] | None = None  # None: every host
	prohibited: tuple[Pattern, ...] = ()
	named_private: frozenset[tuple[Address, int | None]] = frozenset()  # the operator's explicit exceptions

	def host_refusal(self, host: str, port: int, url: str | None) -> str | None:
		"""Why a request to this host is refused by the domain lists, or None."""
		if self.allowed is not None and not any(pattern_matches(p, host, port, url) for p in self.allowed):
			return f'{host} is not in the allowed domains of this session'
		if self.allowed is None and any(pattern_matches(p, host, port, url) for p in self.prohibited):
			return f'{host} is a prohibited domain'
		return None

	def address_refusal(self, host: str, ip: Address, port: int, own_ports: Callable[[], set[int]]) -> str | None:
		"""Why connecting to ``ip:port`` (resolved from ``host``) is refused, or None."""
		why = classify(ip)
		if why is None:
			return None
		named = (ip, None) in self.named_private or (ip, port) in self.named_private
		if self.block_private and not named:
			shown = host if host == str(ip) else f'{host} ({ip})'
			return f'{shown} is {why}'
		if _local(ip):
			if port in own_ports():
				return f'{host}:{port} is a port of this server or its browsers'
		return None


def own_listening_ports() -> set[int]:
	"""TCP ports this server and the processes it started (its Chromiums) listen on. Direct
	children only: a Chromium listens in its browser process, never in a renderer, and a scan of
	the whole tree took ~180 ms against ~10 ms with two Chromiums."""
	import psutil

	ports: set[int] = set()
	try:
		me = psutil.Process()
		procs = [me, *me.children()]
	except psutil.Error:
		return ports
	for proc in procs:
		with contextlib.suppress(psutil.Error):
			for conn in proc.net_connections(kind='tcp'):
				if conn.status == psutil.CONN_LISTEN and conn.laddr:
					ports.add(conn.laddr.port)
	return ports


class OwnPorts:
	"""``own_listening_ports``, cached briefly, refreshed off the event loop."""

	def __init__(self, extra: Callable[[], set[int]] = set) -> None:
		self._ports: set[int] = set()
		self._at = 0.0
		self._extra = extra
		self._lock = asyncio.Lock()

	async def refresh(self, port: int | None = None) -> None:
		"""Scan again unless the last scan is recent or already names ``port`` (refused anyway)."""
		if port is not None and port in self._ports:
			return
		async with self._lock:
			if time.monotonic() - self._at < OWN_PORTS_TTL:
				return
			self._ports = await asyncio.to_thread(own_listening_ports)
			self._at = time.monotonic()

	def __call__(self) -> set[int]:
		return self._ports | self._extra()


# -- upstream proxies -----------------------------------------------------------------------


@dataclass(frozen=True)
class Upstream:
	"""A proxy the door forwards to: the session's own, or the operator's."""

	scheme: str
	host: str
	port: int
	username: str | None = field(default=None, repr=False)
	password: str | None = field(default=None, repr=False)
	bypass: tuple[str, ...] = ()

	@classmethod
	def parse(cls, server: str, username: str | None = None, password: str | None = None, bypass: str | None = None) -> Upstream:
		if '://' not in server:
			server = 'http://' + server
		parts = urllib.parse.urlsplit(server)
		scheme = parts.scheme.lower()
		if scheme not in ('http', 'https', 'socks4', 'socks5') or not parts.hostname:
			raise ValueError(f'unsupported proxy {server!r}')
		port = parts.port or {'http': 80, 'https': 443}.get(scheme, 1080)
		entries = tuple(e.strip().lower() for e in (bypass or '').replace(';', ',').split(',') if e.strip())
		return cls(scheme, parts.hostname.lower(), port, username, password, entries)

	def bypasses(self, host: str) -> bool:
		"""Chromium's own rule (loopback never goes through a proxy) plus the proxy's bypass list."""
		ip = _ip(host)
		if host == 'localhost' or host.endswith('.localhost') or (ip is not None and ip.is_loopback):
			return True
		for entry in self.bypass:
			if entry == '<local>' and '.' not in host and ip is None:
				return True
			entry = entry.split('://', 1)[-1]
			if entry.startswith('*.'):
				entry = entry[1:]
			if entry.startswith('.') and host.endswith(entry) or host == entry or fnmatch.fnmatch(host, entry):
				return True
		return False

	def auth_header(self) -> bytes:
		if self.username is None:
			return b''
		token = base64.b64encode(f'{self.username}:{self.password or ""}'.encode()).decode()
		return f'Proxy-Authorization: Basic {token}\r\n'.encode()


def operator_upstream(chromium_args: Iterable[str], profile_base: dict[str, Any]) -> Upstream | None:
	"""The operator's proxy (a --proxy-server flag, config.json's proxy, or the environment) as an upstream."""
	for arg in chromium_args:
		if arg.startswith('--proxy-server='):
			server = arg.split('=', 1)[1].split(';', 1)[0]
			return Upstream.parse(server.split('=', 1)[-1])
	proxy = profile_base.get('proxy')
	if isinstance(proxy, dict) and proxy.get('server'):
		return Upstream.parse(proxy['server'], proxy.get('username'), proxy.get('password'), proxy.get('bypass'))
	for name in ('all_proxy', 'https_proxy', 'http_proxy'):
		value = os.environ.get(name) or os.environ.get(name.upper())
		if value:
			parts = urllib.parse.urlsplit(value if '://' in value else 'http://' + value)
			bypass = os.environ.get('no_proxy') or os.environ.get('NO_PROXY')
			return Upstream.parse(f'{parts.scheme}://{parts.hostname}:{parts.port or 80}', parts.username, parts.password, bypass)
	return None


# -- the door ---------------------------------------------------------------------------------


class Refused(Exception):
	def __init__(self, reason: str, status: int = 403) -> None:
		super().__init__(reason)
		self.reason = reason
		self.status = status


@dataclass(frozen=True)
class Refusal:
	host: str
	port: int
	reason: str
	serial: int


async def _resolve(host: str, port: int) -> list[Address]:
	ip = _ip(host)
	if ip is not None:
		return [ip]
	loop = asyncio.get_running_loop()
	try:
		infos = await asyncio.wait_for(loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), RESOLVE_TIMEOUT)
	except (OSError, TimeoutError) as exc:
		raise Refused(f'{host} could not be resolved ({exc})', 502) from None
	addresses: list[Address] = []
	for info in infos:
		address = _ip(str(info[4][0]))
		if address is not None and address not in addresses:
			addresses.append(address)
	if not addresses:
		raise Refused(f'{host} could not be resolved', 502)
	return addresses


def _block_page(status: int, reason: str) -> bytes:
	title = BLOCK_TITLE if status == 403 else 'Egress proxy error'
	lead = "Blocked by the server's egress policy" if status == 403 else 'The request could not be forwarded'
	body = (
		f'<!doctype html><html><head><meta charset="utf-8"><title>{title}</title></head>'
		f'<body><h1>{title}</h1><p id="egress-reason">{html.escape(lead)}: {html.escape(reason)}</p></body></html>'
	).encode()
	phrase = {403: 'Forbidden', 502: 'Bad Gateway', 503: 'Service Unavailable', 400: 'Bad Request'}.get(status, 'Error')
	head = (
		f'HTTP/1.1 {status} {phrase}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {len(body)}\r\n'
		f'Cache-Control: no-store\r\nX-Egress-Policy: {reason[:200].encode("ascii", "replace").decode()}\r\nConnection: close\r\n\r\n'
	)
	return head.encode('latin-1', 'replace') + body


_HOP = {'proxy-connection', 'proxy-authorization', 'connection', 'keep-alive', 'te', 'trailer', 'upgrade'}


class Door:
	"""One session's forward proxy: a listening port on 127.0.0.1 and the policy behind it."""

	def __init__(self, policy: Policy, upstream: Upstream | None, own_ports: OwnPorts, *, label: str = '') -> None:
		self.policy = policy
		self.upstream = upstream
		self.own_ports = own_ports
		self.label = label
		self.port = 0
		self.refusals: collections.deque[Refusal] = collections.deque(maxlen=32)
		self.serial = 0  # requests seen so far: a tool marks it before acting, reads refusals after
		self._server: asyncio.Server | None = None
		self._clients: set[asyncio.Task[Any]] = set()
		self.owner: set[Door] | None = None  # the gate's open doors

	@property
	def server(self) -> str:
		return f'http://127.0.0.1:{self.port}'

	async def start(self) -> Door:
		self._server = await asyncio.start_server(self._accept, '127.0.0.1', 0, limit=MAX_HEAD, backlog=128)
		self.port = self._server.sockets[0].getsockname()[1]
		return self

	def refused_since(self, serial: int) -> list[Refusal]:
		return [r for r in self.refusals if r.serial > serial]

	async def close(self) -> None:
		if self.owner is not None:
			self.owner.discard(self)
		if self._server is not None:
			self._server.close()
		for task in list(self._clients):
			task.cancel()
		if self._clients:
			await asyncio.wait(list(self._clients), timeout=2.0)
		if self._server is not None:
			with contextlib.suppress(Exception):
				await asyncio.wait_for(self._server.wait_closed(), 2.0)
			self._server = None

	async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
		task = asyncio.current_task()
		assert task is not None
		if len(self._clients) >= MAX_CONNECTIONS:
			with contextlib.suppress(Exception):
				writer.write(_block_page(503, f'too many connections (at most {MAX_CONNECTIONS})'))
				await writer.drain()
			writer.close()
			return
		self._clients.add(task)
		try:
			await self._serve(reader, writer)
		except (ConnectionError, TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError, ssl.SSLError):
			pass
		except asyncio.CancelledError:
			pass  # the door closes: asyncio's stream callback would report a cancelled task as an error
		except Exception:
			logger.exception('egress proxy: a connection failed')
		finally:
			self._clients.discard(task)
			writer.close()

	async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
		head = await asyncio.wait_for(reader.readuntil(b'\r\n\r\n'), HEAD_TIMEOUT)
		lines = head.decode('latin-1').split('\r\n')
		method, target, version = (lines[0].split(' ') + ['', '', ''])[:3]
		method = method.upper()
		headers = [line for line in lines[1:] if line]
		self.serial += 1
		serial, host, port = self.serial, target[:100], 0
		try:
			if method == 'CONNECT':
				host, port = _split_hostport(target, 443)
				url = None
			else:
				parts = urllib.parse.urlsplit(target)
				if parts.scheme.lower() != 'http' or not parts.hostname:
					raise Refused(f'the proxy only forwards absolute http:// requests, not {target[:100]!r}', 400)
				host, port = parts.hostname, parts.port or 80
				url = target
			host = host.lower().rstrip('.')
			why = self.policy.host_refusal(host, port, url)
			if why is not None:
				raise Refused(why)
			server_reader, server_writer, via_proxy = await self._open(host, port, tunnel=method == 'CONNECT')
		except Refused as refusal:
			if refusal.status == 403:
				self.refusals.append(Refusal(host, port, refusal.reason, serial))
				logger.info('egress refused %s: %s', host, refusal.reason)  # the log line carries the session
			writer.write(_block_page(refusal.status, refusal.reason))
			await writer.drain()
			return
		try:
			if method == 'CONNECT':
				writer.write(b'HTTP/1.1 200 Connection Established\r\n\r\n')
				await writer.drain()
				await _relay(reader, writer, server_reader, server_writer)
				return
			# one request per connection: the next may be for another host, so it is checked afresh
			parts = urllib.parse.urlsplit(target)
			line = target if via_proxy else (urllib.parse.urlunsplit(('', '', parts.path or '/', parts.query, '')))
			kept = [h for h in headers if h.split(':', 1)[0].strip().lower() not in _HOP]
			extra = self.upstream.auth_header() if via_proxy and self.upstream is not None else b''
			out = f'{method} {line} {version}\r\n' + ''.join(h + '\r\n' for h in kept) + 'Connection: close\r\n'
			server_writer.write(out.encode('latin-1') + extra + b'\r\n')
			await server_writer.drain()
			await _relay(reader, writer, server_reader, server_writer, rewrite_head=True, body=_body_length(kept))
		finally:
			server_writer.close()

	async def _open(self, host: str, port: int, tunnel: bool) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, bool]:
		"""A connection that reaches ``host:port``: to the address checked (direct), or through the
		upstream (True: an HTTP proxy that takes the request itself, in absolute form)."""
		upstream = self.upstream
		if upstream is None or upstream.bypasses(host):
			addresses = await _resolve(host, port)
			if any(_local(a) for a in addresses):
				await self.own_ports.refresh(port)
			for ip in addresses:  # every address the name has: the one connected to is among them
				why = self.policy.address_refusal(host, ip, port, self.own_ports)
				if why is not None:
					raise Refused(why)
			reader, writer = await _connect([str(ip) for ip in addresses], port)
			return reader, writer, False
		# the upstream resolves the name; an address literal, or a name that is private from here,
		# is checked all the same, and so is the upstream's own address
		ip = _ip(host)
		if ip is not None:
			if _local(ip):
				await self.own_ports.refresh(port)
			why = self.policy.address_refusal(host, ip, port, self.own_ports)
			if why is not None:
				raise Refused(why)
		else:
			resolved: list[Address] = []
			with contextlib.suppress(Refused):  # a name only the upstream knows is its business
				resolved = await _resolve(host, port)
			if any(_local(a) for a in resolved):
				await self.own_ports.refresh(port)
			for address in resolved:
				why = self.policy.address_refusal(host, address, port, self.own_ports)
				if why is not None:
					raise Refused(why)
		proxy_ips = await _resolve(upstream.host, upstream.port)
		if any(_local(a) for a in proxy_ips):
			await self.own_ports.refresh(upstream.port)
		for proxy_ip in proxy_ips:
			why = self.policy.address_refusal(upstream.host, proxy_ip, upstream.port, self.own_ports)
			if why is not None:
				raise Refused(f'the proxy {upstream.host} cannot be used: {why}')
		tls = upstream.host if upstream.scheme == 'https' else None
		reader, writer = await _connect([str(a) for a in proxy_ips], upstream.port, tls)
		try:
			if upstream.scheme.startswith('socks'):
				await _socks_connect(reader, writer, upstream, host, port)
			elif tunnel:
				await _http_connect(reader, writer, upstream, host, port)
			else:
				return reader, writer, True
		except BaseException:
			writer.close()
			raise
		return reader, writer, False


async def _connect(
	addresses: list[str], port: int, tls_host: str | None = None
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
	"""Connect to the first of ``addresses`` that answers: the very addresses the policy checked."""
	last: Exception | None = None
	for address in addresses:
		try:
			context = ssl.create_default_context() if tls_host else None
			return await asyncio.wait_for(
				asyncio.open_connection(address, port, limit=CHUNK, ssl=context, server_hostname=tls_host), CONNECT_TIMEOUT
			)
		except (OSError, TimeoutError) as exc:
			last = exc
	raise Refused(f'could not connect to port {port}: {last}', 502)


def _split_hostport(target: str, default: int) -> tuple[str, int]:
	if target.startswith('['):
		host, _, rest = target[1:].partition(']')
		port = rest.lstrip(':')
	else:
		host, _, port = target.rpartition(':') if ':' in target else (target, '', '')
	try:
		number = int(port) if port else default
	except ValueError:
		raise Refused(f'bad port in {target[:100]!r}', 400) from None
	if not host or not 0 < number < 65536:
		raise Refused(f'bad target {target[:100]!r}', 400)
	return host, number


async def _read_head(reader: asyncio.StreamReader) -> str:
	head = await asyncio.wait_for(reader.readuntil(b'\r\n\r\n'), CONNECT_TIMEOUT)
	return head.decode('latin-1')


async def _http_connect(
	reader: asyncio.StreamReader, writer: asyncio.StreamWriter, upstream: Upstream, host: str, port: int
) -> None:
	"""Open a tunnel through an HTTP proxy, logging in with the session's credentials."""
	authority = f'[{host}]:{port}' if ':' in host else f'{host}:{port}'
	writer.write(f'CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n'.encode() + upstream.auth_header() + b'\r\n')
	await writer.drain()
	status_line = (await _read_head(reader)).split('\r\n', 1)[0]
	status = status_line.split(' ')[1] if ' ' in status_line else ''
	if status == '407':
		raise Refused(f"the session's proxy {upstream.host} refused its login (407)", 502)
	if status != '200':
		raise Refused(f"the session's proxy {upstream.host} answered {status_line[:100]!r}", 502)


async def _socks_connect(
	reader: asyncio.StreamReader, writer: asyncio.StreamWriter, upstream: Upstream, host: str, port: int
) -> None:
	ip = _ip(host)
	if upstream.scheme == 'socks4':
		if ip is not None and ip.version == 4:
			writer.write(b'\x04\x01' + port.to_bytes(2, 'big') + ip.packed + b'\x00')
		else:  # SOCKS4a: the proxy resolves the name
			writer.write(b'\x04\x01' + port.to_bytes(2, 'big') + b'\x00\x00\x00\x01\x00' + host.encode('idna') + b'\x00')
		await writer.drain()
		reply = await asyncio.wait_for(reader.readexactly(8), CONNECT_TIMEOUT)
		if reply[1] != 0x5A:
			raise Refused(f"the session's SOCKS4 proxy {upstream.host} refused the connection ({reply[1]:#x})", 502)
		return
	writer.write(b'\x05\x01\x00')
	await writer.drain()
	if await asyncio.wait_for(reader.readexactly(2), CONNECT_TIMEOUT) != b'\x05\x00':
		raise Refused(f"the session's SOCKS5 proxy {upstream.host} wants a login the server cannot give", 502)
	if ip is not None:
		address = (b'\x01' if ip.version == 4 else b'\x04') + ip.packed
	else:
		name = host.encode('idna')
		address = b'\x03' + bytes([len(name)]) + name
	writer.write(b'\x05\x01\x00' + address + port.to_bytes(2, 'big'))
	await writer.drain()
	reply = await asyncio.wait_for(reader.readexactly(4), CONNECT_TIMEOUT)
	if reply[1] != 0:
		raise Refused(f"the session's SOCKS5 proxy {upstream.host} refused the connection ({reply[1]:#x})", 502)
	rest = {1: 4, 4: 16}.get(reply[3])
	if rest is None:
		rest = (await asyncio.wait_for(reader.readexactly(1), CONNECT_TIMEOUT))[0]
	await asyncio.wait_for(reader.readexactly(rest + 2), CONNECT_TIMEOUT)


def _body_length(headers: list[str]) -> int | None:
	"""How many bytes of request body follow the head: Content-Length, 0 without one, None
	(until the client stops) for a chunked body."""
	length = 0
	for line in headers:
		name, _, value = line.partition(':')
		name = name.strip().lower()
		if name == 'transfer-encoding' and 'chunked' in value.lower():
			return None
		if name == 'content-length':
			try:
				length = max(0, int(value.strip()))
			except ValueError:
				raise Refused('bad Content-Length', 400) from None
	return length


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, limit: int | None = None) -> None:
	"""Copy until EOF (passed on as a half-close), or ``limit`` bytes (a request body: nothing
	after it reaches the server, and the connection stays open for the answer)."""
	left = limit
	while left is None or left > 0:
		data = await asyncio.wait_for(reader.read(CHUNK if left is None else min(CHUNK, left)), IDLE_TIMEOUT)
		if not data:
			with contextlib.suppress(Exception):
				if writer.can_write_eof():
					writer.write_eof()
			return
		if left is not None:
			left -= len(data)
		writer.write(data)
		await writer.drain()  # back-pressure: nothing piles up in memory


def _closing_head(head: bytes) -> bytes:
	"""A response head that tells the client the connection ends with this response."""
	lines = head.decode('latin-1').split('\r\n')
	kept = [
		line
		for line in lines[1:]
		if line and line.split(':', 1)[0].strip().lower() not in ('connection', 'keep-alive', 'proxy-connection')
	]
	return ('\r\n'.join([lines[0], *kept, 'Connection: close', 'Proxy-Connection: close']) + '\r\n\r\n').encode('latin-1')


async def _relay(
	client_reader: asyncio.StreamReader,
	client_writer: asyncio.StreamWriter,
	server_reader: asyncio.StreamReader,
	server_writer: asyncio.StreamWriter,
	rewrite_head: bool = False,
	body: int | None = None,
) -> None:
	"""Bytes both ways until the server's side ends, either side errs, or both idle out.
	``rewrite_head``: one plain HTTP request, whose ``body`` bytes (None: until EOF) go up."""
	if rewrite_head:
		# the client's body (if any) goes up while the response head is awaited
		up = asyncio.ensure_future(_pipe(client_reader, server_writer, body))
		try:
			head = await asyncio.wait_for(server_reader.readuntil(b'\r\n\r\n'), IDLE_TIMEOUT)
			client_writer.write(_closing_head(head))
			await client_writer.drain()
		except BaseException:
			up.cancel()
			await asyncio.gather(up, return_exceptions=True)
			raise
	else:
		up = asyncio.ensure_future(_pipe(client_reader, server_writer))
	down = asyncio.ensure_future(_pipe(server_reader, client_writer))
	try:
		done, _ = await asyncio.wait({down, up}, return_when=asyncio.FIRST_COMPLETED)
		if up in done and up.exception() is None and not down.done():
			await down  # the client finished sending: the answer may still be coming
	finally:
		for task in (up, down):
			task.cancel()
		await asyncio.gather(up, down, return_exceptions=True)


# -- the server's gate: a door per session ------------------------------------------------------


def blocks_private(config: Any) -> bool:
	"""HTTP serves many clients, so private networks are closed to them unless the operator opens
	them; stdio serves the person who started it, so they stay open unless the operator closes them."""
	if config.allow_private_networks:
		return False
	return bool(config.block_private_networks) or config.transport == 'http'


class EgressGate:
	"""Opens a door for each session whose traffic must be checked, and closes them all at the end."""

	def __init__(
		self, *, block_private: bool, everyone: bool, profile_base: dict[str, Any], chromium_args: Iterable[str]
	) -> None:
		"""``everyone``: every session gets a door (HTTP, or a server-wide policy); otherwise only
		sessions with allowed_domains of their own."""
		self.block_private = block_private
		self.everyone = (
			everyone or block_private or bool(profile_base.get('allowed_domains') or profile_base.get('prohibited_domains'))
		)
		self.named_private = _named_private(profile_base.get('allowed_domains') or ())
		args = tuple(chromium_args)
		self.pac = next((a.split('=', 1)[0] for a in args if a.startswith(('--proxy-pac-url', '--proxy-auto-detect'))), None)
		self.operator = operator_upstream(args, profile_base)
		self.own_ports = OwnPorts()
		self.doors: set[Door] = set()

	def wanted(self, options: Any) -> bool:
		return self.everyone or (options is not None and getattr(options, 'allowed_domains', None) is not None)

	async def open_door(self, profile: Any, options: Any, label: str = '') -> Door:
		"""A door for a session whose BrowserProfile is ``profile`` (its domain lists) made with ``options``."""
		if self.pac is not None:
			raise ValueError(
				f'the egress policy cannot chain through the proxy auto-configuration the operator set ({self.pac}); '
				'give the proxy with --proxy-server instead'
			)
		allowed = getattr(profile, 'allowed_domains', None)
		prohibited = getattr(profile, 'prohibited_domains', None)
		policy = Policy(
			block_private=self.block_private,
			allowed=tuple(parse_pattern(d) for d in allowed) if allowed else None,
			prohibited=tuple(parse_pattern(d) for d in prohibited or ()),
			named_private=self.named_private,
		)
		upstream = self.operator
		proxy = getattr(options, 'proxy', None)
		if proxy is not None:
			upstream = Upstream.parse(proxy.server, proxy.username, proxy.password, proxy.bypass)
		door = await Door(policy, upstream, self.own_ports, label=label).start()
		self.doors.add(door)
		door.owner = self.doors
		return door

	async def close(self) -> None:
		doors, self.doors = list(self.doors), set()
		await asyncio.gather(*(d.close() for d in doors), return_exceptions=True)


PROXY_FLAGS = ('--proxy-server', '--proxy-bypass-list', '--proxy-pac-url', '--proxy-auto-detect', '--no-proxy-server')


def launch_args(user_args: tuple[str, ...], profile: Any) -> tuple[str, ...]:
	"""The operator's flags for a Chromium whose profile routes it through a door: without their
	proxy flags (the door forwards to that proxy itself; a later flag would win over the door)."""
	proxy = getattr(profile, 'proxy', None)
	if proxy is None or getattr(proxy, 'bypass', None) != BYPASS_NONE:
		return user_args
	return tuple(a for a in user_args if not a.startswith(PROXY_FLAGS))


def gate_for(config: Any) -> EgressGate | None:
	"""The server's gate: always over HTTP (at least the server's own ports are closed to pages),
	and on stdio for a private-network block or an allow/prohibit list; None: nothing to check
	unless a session asks for allowed_domains of its own (a gate that waits for such sessions)."""
	block = blocks_private(config)
	profile_base = dict(config.browser_profile)
	return EgressGate(
		block_private=block,
		everyone=config.transport == 'http',
		profile_base=profile_base,
		chromium_args=config.chromium_args,
	)


def warn_uncovered(gate: EgressGate | None, providers: Iterable[Any]) -> None:
	"""Say once, at start, which sessions the policy cannot cover: nothing is left uncovered silently."""
	if gate is None or not gate.everyone:
		return
	for provider in providers:
		if not getattr(provider, 'network_ours', True):
			logger.warning(
				"egress policy: sessions on %s reach the web through that browser's own network; the policy "
				'(private networks, allowed_domains in the network path) does not cover them (docs/security.md)',
				type(provider).__name__.removesuffix('Provider').lower() or 'that provider',
			)
