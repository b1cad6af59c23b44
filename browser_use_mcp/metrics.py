"""Health and metrics: ``/healthz``, ``/readyz`` and a Prometheus ``/metrics`` (issue #27).

Each server has its own ``Metrics`` and its own ``CollectorRegistry`` (never the library's global
one), so one process can hold several servers (tests). Tool calls are counted where they all pass,
server.py's ``call_tool``; everything else (sessions, shared Chromiums, takeovers, the Grid) is
read from the session registry at scrape time, on the event loop, which costs a walk over the
open sessions. Chromium memory is the one costly reading: it is gathered in a thread, bounded in
time, and cached for a few seconds, so a tight scrape loop cannot keep a core busy.

Readiness asks the registry (browser-use loaded, start-up done) and its providers (a Chromium
to launch, the last launch not failed; a Grid that answers its ``/status``), never launching a
browser, and is cached for ``READY_TTL`` s.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from browser_use_mcp import __version__

if TYPE_CHECKING:
	from browser_use_mcp.sessions import SessionRegistry

logger = logging.getLogger('browser_use_mcp.metrics')

HEALTH_PATH = '/healthz'
READY_PATH = '/readyz'
METRICS_PATH = '/metrics'
PREFIX = 'browser_use_mcp'
# Tool calls take from ~10 ms (list_tabs) to minutes (the agent tool).
LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0)
READY_TTL = 2.0  # s a readiness answer is reused: a probe every 100 ms costs one check every 2 s
MEMORY_TTL = 5.0  # s a memory sample is reused
MEMORY_BOUND = 2.0  # s one memory sample may take; what was not read by then is left out of it
LOOPBACK_HOSTS = ('127.0.0.1', 'localhost', '[::1]')


class MemorySample:
	def __init__(self, rss: int = 0, pss: int = 0, processes: int = 0, complete: bool = True) -> None:
		self.rss, self.pss, self.processes, self.complete = rss, pss, processes, complete


def _smaps_rollup(pid: int) -> tuple[int, int] | None:
	"""(RSS, PSS) in bytes from /proc/PID/smaps_rollup (Linux 4.14+), or None."""
	try:
		with open(f'/proc/{pid}/smaps_rollup', 'rb') as f:
			text = f.read()
	except OSError:
		return None
	rss = pss = 0
	for line in text.split(b'\n'):
		if line.startswith(b'Rss:'):
			rss = int(line.split()[1]) * 1024
		elif line.startswith(b'Pss:'):
			pss = int(line.split()[1]) * 1024
	return rss, pss


def chromium_memory(root: int | None = None, bound: float = MEMORY_BOUND) -> MemorySample:
	"""RSS and PSS summed over every Chromium process below ``root`` (this server): shared,
	per-session and prewarmed browsers with their renderers, GPU and utility processes. Blocking:
	run it in a thread. Stops after ``bound`` s (``complete`` False then)."""
	import psutil

	deadline = time.monotonic() + bound
	sample = MemorySample()
	try:
		children = psutil.Process(root or os.getpid()).children(recursive=True)
	except psutil.Error:
		return sample
	for proc in children:
		if time.monotonic() > deadline:
			sample.complete = False
			break
		with contextlib.suppress(psutil.Error, ValueError, IndexError):
			if 'chrom' not in proc.name().lower():
				continue  # the cleanup sidecar, anything else we started
			read = _smaps_rollup(proc.pid)
			if read is None:  # no smaps_rollup (not Linux, or too old): RSS only
				read = (proc.memory_info().rss, 0)
			sample.rss += read[0]
			sample.pss += read[1]
			sample.processes += 1
	return sample


def provider_kind(endpoint: Any) -> str:
	"""A short, bounded label for where a session's browser comes from."""
	name = type(endpoint).__name__
	if name == 'ContextEndpoint':
		return 'attached' if getattr(endpoint.shard, 'chromium', None) is None else 'shared'
	return {'ProcessEndpoint': 'process', 'GridEndpoint': 'grid', 'AttachedEndpoint': 'attached'}.get(name, 'other')


class _Collector:
	"""What is read from the registry when scraped (prometheus_client's custom-collector protocol)."""

	def __init__(self, metrics: Metrics) -> None:
		self.metrics = metrics

	def describe(self) -> list[Any]:
		return []  # dynamic: nothing to check at registration

	def collect(self) -> Iterable[Any]:
		m = self.metrics
		registry = m.sessions
		info = GaugeMetricFamily(f'{PREFIX}_info', 'The server: always 1, its version as a label', labels=['version'])
		info.add_metric([__version__], 1)
		yield info
		ready = GaugeMetricFamily(f'{PREFIX}_ready', 'Whether /readyz answers 200 (last readiness check, cached)')
		ready.add_metric([], 1 if m.ready_cache is not None and m.ready_cache[1] is None else 0)
		yield ready

		counts: dict[tuple[str, str, str], int] = {}
		takeovers = 0
		for state in registry.sessions():
			if state.takeover is not None:
				label = 'taken_over'
				takeovers += 1
			elif state.busy:
				label = 'busy'
			else:
				label = 'idle'
			key = (label, provider_kind(getattr(state.browser, 'endpoint', None)), state.principal)
			counts[key] = counts.get(key, 0) + 1
		for principal, _sid in registry.pending():
			key = ('creating', 'pending', principal)
			counts[key] = counts.get(key, 0) + 1
		sessions = GaugeMetricFamily(
			f'{PREFIX}_sessions',
			'Open browser sessions by state (creating, idle, busy, taken_over), provider and principal '
			'(token- plus 16 hex digits of the token\'s SHA-256, or "local")',
			labels=['state', 'provider', 'principal'],
		)
		for (label, provider, principal), n in sorted(counts.items()):
			sessions.add_metric([label, provider, principal], n)
		yield sessions
		taken = GaugeMetricFamily(f'{PREFIX}_takeovers', 'Sessions a person is driving from the dashboard now')
		taken.add_metric([], takeovers)
		yield taken

		shards = [s for p in registry.providers() for s in getattr(p, 'shards', [])]
		shared = GaugeMetricFamily(f'{PREFIX}_shared_browsers', 'Shared Chromiums (--isolation context) running')
		shared.add_metric([], sum(1 for s in shards if s.chromium is not None))
		yield shared
		contexts = GaugeMetricFamily(
			f'{PREFIX}_shard_contexts', 'Session contexts per shared Chromium (shard: its PID, or "attached")', labels=['shard']
		)
		for shard in shards:
			label = str(shard.chromium.pid) if shard.chromium is not None else 'attached'
			contexts.add_metric([label], len(shard.endpoints))
		yield contexts

		waiting = [p.waiting for p in registry.providers() if hasattr(p, 'waiting')]
		if waiting:
			grid = GaugeMetricFamily(f'{PREFIX}_grid_requests_waiting', 'New-session requests waiting for a Selenium Grid slot')
			grid.add_metric([], sum(waiting))
			yield grid

		if registry.pool is not None:
			spares = GaugeMetricFamily(f'{PREFIX}_prewarmed_browsers', 'Prewarmed browsers ready for new sessions (--prewarm)')
			spares.add_metric([], registry.pool.ready)
			yield spares

		recordings = registry.recordings  # None until the registry started
		kept = GaugeMetricFamily(
			f'{PREFIX}_recordings', 'Session recordings kept (open sessions and closed ones within --recordings-ttl)'
		)
		kept.add_metric([], len(recordings) if recordings is not None else 0)
		yield kept
		disk = GaugeMetricFamily(
			f'{PREFIX}_recordings_disk_bytes', 'Bytes the kept recordings take on disk (traces, screenshots, HAR, video)'
		)
		disk.add_metric([], recordings.disk_bytes() if recordings is not None else 0)
		yield disk

		from browser_use_mcp import busy

		lowered = GaugeMetricFamily(
			f'{PREFIX}_busy_processes_lowered',
			'Renderers (and one-session Chromiums or the page-state worker, by autogroup) that keep a core busy, '
			'lowered now so that the others go first',
		)
		lowered.add_metric([], len(busy.WATCH.lowered()))
		yield lowered
		yields = CounterMetricFamily(
			f'{PREFIX}_busy_yields', 'Times a busy renderer, one-session Chromium or page-state worker was lowered'
		)
		yields.add_metric([], busy.WATCH.yielded)
		yield yields

		from browser_use_mcp.patches import in_page_state

		builds = CounterMetricFamily(
			f'{PREFIX}_state_builds_ahead',
			"Page states built ahead while the agent thought (ahead.py), by what became of them: 'built' (kept for "
			"the next read), 'used' (a read took it), 'missed' (the page had changed by the read)",
			labels=['outcome'],
		)
		for outcome in ('built', 'used', 'missed'):
			builds.add_metric([outcome], in_page_state.ahead_counts[outcome])
		yield builds

		sample = m.memory_cache[1] if m.memory_cache is not None else None
		if sample is not None:
			memory = GaugeMetricFamily(
				f'{PREFIX}_chromium_memory_bytes',
				f'Memory of all Chromium processes of this server, summed (sampled at most every {MEMORY_TTL:g} s)',
				labels=['kind'],
			)
			memory.add_metric(['rss'], sample.rss)
			memory.add_metric(['pss'], sample.pss)
			yield memory
			procs = GaugeMetricFamily(f'{PREFIX}_chromium_processes', 'Chromium processes of this server')
			procs.add_metric([], sample.processes)
			yield procs


class Metrics:
	"""One server's health checks and Prometheus registry."""

	def __init__(self, sessions: SessionRegistry, memory: Callable[[], MemorySample] = chromium_memory) -> None:
		self.sessions = sessions
		self.started = time.monotonic()
		self.prom = CollectorRegistry(auto_describe=False)
		self.calls = Counter(
			f'{PREFIX}_tool_calls',
			'Tool calls ended, by tool and outcome (ok, error, cancelled)',
			['tool', 'outcome'],
			registry=self.prom,
		)
		self.latency = Histogram(
			f'{PREFIX}_tool_call_duration_seconds', 'Tool call wall time', ['tool'], buckets=LATENCY_BUCKETS, registry=self.prom
		)
		self.prom.register(_Collector(self))
		self._memory = memory
		self.memory_cache: tuple[float, MemorySample] | None = None
		self._memory_task: asyncio.Future[MemorySample] | None = None
		self.ready_cache: tuple[float, str | None] | None = None
		self._ready_task: asyncio.Task[str | None] | None = None
		self.tools: frozenset[str] = frozenset()  # known tool names: anything else is counted as "unknown"

	# -- calls --------------------------------------------------------------------------------

	def call_ended(self, tool: str, outcome: str, seconds: float) -> None:
		name = tool if tool in self.tools else 'unknown'  # a client's made-up names must not grow the series
		self.calls.labels(name, outcome).inc()
		self.latency.labels(name).observe(seconds)

	# -- readiness ----------------------------------------------------------------------------

	async def not_ready(self) -> str | None:
		"""Why the server is not ready (None: ready); cached READY_TTL s, one check at a time."""
		now = time.monotonic()
		if self.ready_cache is not None and now - self.ready_cache[0] < READY_TTL:
			return self.ready_cache[1]
		if self._ready_task is None or self._ready_task.done():
			self._ready_task = asyncio.ensure_future(self._check())
		reason = await asyncio.shield(self._ready_task)
		self.ready_cache = (time.monotonic(), reason)
		return reason

	async def _check(self) -> str | None:
		try:
			return await self.sessions.not_ready()
		except Exception as exc:  # a check that fails says so rather than answering 500
			return f'the readiness check failed: {type(exc).__name__}: {exc}'

	# -- memory -------------------------------------------------------------------------------

	async def memory(self) -> MemorySample | None:
		"""The cached sample, refreshed in a thread when older than MEMORY_TTL s; never waits
		longer than MEMORY_BOUND s (a late sample lands in the cache for the next scrape)."""
		now = time.monotonic()
		if self.memory_cache is not None and now - self.memory_cache[0] < MEMORY_TTL:
			return self.memory_cache[1]
		if self._memory_task is None or self._memory_task.done():
			self._memory_task = asyncio.ensure_future(asyncio.to_thread(self._memory))
			self._memory_task.add_done_callback(self._memory_done)
		with contextlib.suppress(TimeoutError):
			await asyncio.wait_for(asyncio.shield(self._memory_task), MEMORY_BOUND + 0.5)
		return self.memory_cache[1] if self.memory_cache is not None else None

	def _memory_done(self, task: asyncio.Future[MemorySample]) -> None:
		if task.cancelled():
			return
		if task.exception() is not None:
			logger.debug('chromium memory sample failed: %r', task.exception())
			return
		self.memory_cache = (time.monotonic(), task.result())

	# -- HTTP ---------------------------------------------------------------------------------

	async def healthz(self, _request: Request) -> Response:
		return JSONResponse({'status': 'ok', 'version': __version__, 'uptime_seconds': round(time.monotonic() - self.started, 1)})

	async def readyz(self, _request: Request) -> Response:
		reason = await self.not_ready()
		if reason is None:
			return JSONResponse({'status': 'ready'})
		return JSONResponse({'status': 'not ready', 'reason': reason}, status_code=503)

	async def metrics(self, _request: Request) -> Response:
		await self.not_ready()
		await self.memory()
		return Response(generate_latest(self.prom), media_type=CONTENT_TYPE_LATEST)

	def routes(self, guard: Callable[[Callable[[Request], Awaitable[Response]]], Any]) -> list[Route]:
		return [
			Route(HEALTH_PATH, guard(self.healthz), methods=['GET']),
			Route(READY_PATH, guard(self.readyz), methods=['GET']),
			Route(METRICS_PATH, guard(self.metrics), methods=['GET']),
		]


def needs_token(host: str, has_tokens: bool, public: bool) -> bool:
	"""Whether /healthz, /readyz and /metrics ask for a bearer token: only when the server has
	tokens, is bound beyond loopback, and the operator did not pass --metrics-public."""
	from browser_use_mcp.guard import is_loopback

	return has_tokens and not public and not is_loopback(host)


def guarded(
	handler: Callable[[Request], Awaitable[Response]],
	*,
	loopback: bool,
	principal_of: Callable[[str], str | None] | None,
) -> Callable[[Request], Awaitable[Response]]:
	"""``handler`` behind the checks a probe gets: on a loopback bind, a loopback Host header (a
	web page cannot read it through a rebound DNS name); with ``principal_of``, a bearer token
	it knows. Any token sees the whole server's figures."""

	async def endpoint(request: Request) -> Response:
		if loopback:
			host = request.headers.get('host', '')
			name = host.rsplit(':', 1)[0] if not host.endswith(']') else host
			if name not in LOOPBACK_HOSTS:
				return JSONResponse({'error': 'This endpoint answers only to a loopback host name.'}, status_code=421)
		if principal_of is not None:
			scheme, _, token = request.headers.get('authorization', '').partition(' ')
			if scheme.lower() != 'bearer' or not token.strip() or principal_of(token.strip()) is None:
				return JSONResponse(
					{'error': 'invalid_token', 'error_description': 'A bearer token of this server is required.'},
					status_code=401,
					headers={'WWW-Authenticate': 'Bearer error="invalid_token"'},
				)
		return await handler(request)

	return endpoint
