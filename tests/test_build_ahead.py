"""The page's state built ahead while the agent thinks (browser_use_mcp/ahead.py), on a real Chromium.

A page-changing call schedules a walk and a build of the focused page once the session has been
quiet for ``ahead.AFTER`` s; the read that follows takes that build when its own walk answers the
same, and never waits for a build ahead it does not need: a call cancels it."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures import scraped_metrics
from tests.test_in_page_state import both_ways, call

LIVE_PAGE = """<button id=tick>0</button><script>
let n = 0; setInterval(() => { document.getElementById('tick').textContent = String(++n); }, 40);
</script>"""


@pytest.fixture(autouse=True)
def any_load(monkeypatch: pytest.MonkeyPatch) -> None:
	"""Builds ahead whatever the machine's load (the suite runs beside other tests): the CPU gate is
	tested on its own, below."""
	from browser_use_mcp import ahead

	monkeypatch.setattr(ahead, 'IDLE_CORES', 0.0)


async def until(predicate: Any, within: float = 15.0) -> None:
	end = time.monotonic() + within
	while not predicate():
		assert time.monotonic() < end, 'not within the time allowed'
		await asyncio.sleep(0.05)


def scraped(catalog: Any) -> dict[str, float]:
	"""browser_use_mcp_state_builds_ahead_total by outcome, as a Prometheus scrape of /metrics reads it."""
	return {
		sample.labels['outcome']: sample.value
		for sample in scraped_metrics(catalog.sessions)
		if sample.name == 'browser_use_mcp_state_builds_ahead_total'
	}


def counts() -> dict[str, int]:
	from browser_use_mcp.patches import in_page_state

	return dict(in_page_state.ahead_counts)


def grew(before: dict[str, int], key: str) -> int:
	return counts().get(key, 0) - before.get(key, 0)


async def elements(catalog: Any, session_id: str = 'walk') -> list[Any]:
	return json.loads(await call(catalog, 'browser_get_state', session_id=session_id))['interactive_elements']


async def test_a_read_after_a_pause_takes_the_build_made_ahead(catalog: Any, site: str, worker_jobs: list[Any]) -> None:
	"""After a click-like change and a pause, the page is walked and built ahead in the worker; the
	read then walks, finds the same answer, and sends nothing to the worker. Its state is the one a
	build of the changed page gives: the three trees' state, with the change in it."""
	from browser_use_mcp.patches import in_page_state

	await call(catalog, 'browser_navigate', session_id='walk', url=f'{site}/heavy')
	await elements(catalog)
	before, jobs, scrape = counts(), len(worker_jobs), scraped(catalog)
	await call(
		catalog,
		'browser_evaluate',
		session_id='walk',
		expression="document.body.prepend(Object.assign(document.createElement('button'), {textContent: 'Made ahead'}))",
	)
	await until(lambda: grew(before, 'built') == 1)
	assert len(worker_jobs) == jobs + 1, 'built ahead in the worker'
	read = await elements(catalog)
	assert in_page_state.last_timing.get('build_reused') == 1.0 and len(worker_jobs) == jobs + 1, 'the read took it'
	assert grew(before, 'used') == 1 and grew(before, 'missed') == 0
	assert 'Made ahead' in [e.get('text') for e in read]
	now = scraped(catalog)  # /metrics, as Prometheus reads it
	assert {k: now[k] - scrape.get(k, 0) for k in now} == {'built': 1, 'used': 1, 'missed': 0}
	walked, trees, fell_back = await both_ways(catalog)
	assert fell_back == {} and walked == trees == read


async def test_back_to_back_calls_build_nothing_ahead(catalog: Any, site: str, worker_jobs: list[Any]) -> None:
	"""A script's pace never gives the build ahead its quiet: every read builds once, as before."""
	await call(catalog, 'browser_navigate', session_id='walk', url=f'{site}/heavy')
	await elements(catalog)
	before, jobs = counts(), len(worker_jobs)
	for n in range(3):
		await call(catalog, 'browser_evaluate', session_id='walk', expression=f"document.title = 'step {n}'")
		await call(
			catalog,
			'browser_evaluate',
			session_id='walk',
			expression=f"document.body.prepend(Object.assign(document.createElement('button'), {{textContent: 'b{n}'}}))",
		)
		await elements(catalog)
	assert counts() == before and len(worker_jobs) == jobs + 3


async def test_a_call_never_waits_for_a_build_ahead(catalog: Any, site: str, monkeypatch: pytest.MonkeyPatch) -> None:
	"""A build ahead holds the session's lock only until a call comes: the call cancels it. Here the
	build ahead never ends on its own; the call still runs at once, and the session is unharmed."""
	from browser_use_mcp import ahead
	from browser_use_mcp.patches import in_page_state

	started = asyncio.Event()

	async def forever(_service: Any) -> str:
		started.set()
		await asyncio.sleep(3600)
		return 'built'

	monkeypatch.setattr(in_page_state, 'build_ahead', forever)
	await call(catalog, 'browser_navigate', session_id='walk', url=f'{site}/heavy')
	await elements(catalog)
	cancelled = ahead.outcomes.get('cancelled', 0)
	await call(catalog, 'browser_evaluate', session_id='walk', expression="document.title = 'changed'")
	await asyncio.wait_for(started.wait(), 10)
	(state,) = [s for s in catalog.sessions.sessions() if s.session_id == 'walk']
	assert state.lock.locked(), 'the build ahead holds the session while nobody else does'
	first = state.ahead
	assert first is not None
	began = time.monotonic()
	read = call(catalog, 'browser_evaluate', session_id='walk', expression='document.title')
	assert 'changed' in await asyncio.wait_for(read, 10), 'the call went ahead'
	assert time.monotonic() - began < 5
	assert ahead.outcomes.get('cancelled', 0) == cancelled + 1
	assert first.done() and state.ahead is not first  # (the evaluate scheduled another)


async def test_a_page_that_keeps_changing_is_built_ahead_less_and_less(catalog: Any, site: str) -> None:
	"""A page that changes all the time makes builds ahead that no read can use: after each unused
	one the next ones on that document are skipped, one, then two."""
	from browser_use_mcp import ahead
	from harness.servers import html_pages

	heavy = await asyncio.to_thread(_get, f'{site}/heavy')
	with html_pages({'/live': heavy.replace('</body>', LIVE_PAGE + '</body>')}) as url:
		await call(catalog, 'browser_navigate', session_id='walk', url=f'{url}/live')
		await elements(catalog)
		before, skipped = counts(), ahead.outcomes.get('skipped', 0)
		done = ahead.outcomes.copy()
		for _ in range(4):
			await call(catalog, 'browser_evaluate', session_id='walk', expression='1')
			await until(lambda seen=sum(done.values()): sum(ahead.outcomes.values()) > seen)
			done = ahead.outcomes.copy()
			await elements(catalog)
		# built (missed), skipped, built (missed), skipped
		assert grew(before, 'missed') == 2 and grew(before, 'used') == 0, counts()
		assert ahead.outcomes.get('skipped', 0) == skipped + 2


def _get(url: str) -> str:
	import urllib.request

	with urllib.request.urlopen(url) as answer:  # the test site on 127.0.0.1
		return answer.read().decode()


@pytest.fixture
async def off_catalog(tmp_path: Path) -> AsyncIterator[Any]:
	from browser_use_mcp.catalog import Catalog
	from tests.fixtures import in_process_registry

	async with in_process_registry(tmp_path / 'state', 'context', idle_timeout=600, build_ahead=False) as registry:
		yield Catalog(registry)


async def test_switched_off_nothing_is_built_ahead(off_catalog: Any, site: str, worker_jobs: list[Any]) -> None:
	from browser_use_mcp import ahead

	await call(off_catalog, 'browser_navigate', session_id='walk', url=f'{site}/heavy')
	await elements(off_catalog)
	before, outcomes, jobs = counts(), ahead.outcomes.copy(), len(worker_jobs)
	await call(off_catalog, 'browser_evaluate', session_id='walk', expression="document.title = 'changed'")
	await asyncio.sleep(ahead.AFTER + 1.0)
	assert counts() == before and ahead.outcomes == outcomes and len(worker_jobs) == jobs
	await elements(off_catalog)
	assert len(worker_jobs) == jobs + 1


async def test_a_read_during_the_build_ahead_waits_for_it_instead_of_building_again(
	catalog: Any, site: str, monkeypatch: pytest.MonkeyPatch
) -> None:
	"""The call cancels the build ahead, but a build already in the worker goes on; a read whose walk
	answers what that build's walk answered takes it when it comes (one build, not two)."""
	from browser_use_mcp.patches import in_page_state, offload_state

	jobs: list[Any] = []
	run = offload_state.pool.run
	in_worker = asyncio.Event()

	async def slow(job: Any, fn: Any = None) -> Any:  # a worker still at the build when the read comes
		jobs.append(job)
		in_worker.set()
		await asyncio.sleep(1.0)
		return await run(job, fn)

	await call(catalog, 'browser_navigate', session_id='walk', url=f'{site}/heavy')
	await elements(catalog)
	monkeypatch.setattr(offload_state.pool, 'run', slow)
	before = counts()
	await call(
		catalog,
		'browser_evaluate',
		session_id='walk',
		expression="document.body.prepend(Object.assign(document.createElement('button'), {textContent: 'joined'}))",
	)
	await asyncio.wait_for(in_worker.wait(), 10)
	read = await elements(catalog)
	assert in_page_state.last_timing.get('build_joined') == 1.0 and len(jobs) == 1
	assert 'joined' in [e.get('text') for e in read]
	assert grew(before, 'used') == 1 and grew(before, 'built') == 1


async def test_a_small_page_is_not_built_ahead(catalog: Any, site: str, worker_jobs: list[Any]) -> None:
	"""A page whose state is built in process at the read is cheap there: nothing is built ahead."""
	from browser_use_mcp import ahead

	await call(catalog, 'browser_navigate', session_id='walk', url=f'{site}/')
	await elements(catalog)
	before, small = counts(), ahead.outcomes.get('small', 0)
	await call(
		catalog, 'browser_evaluate', session_id='walk', expression="document.body.prepend(document.createElement('button'))"
	)
	await until(lambda: ahead.outcomes.get('small', 0) == small + 1)
	assert counts() == before and worker_jobs == []
	assert len(await elements(catalog)) > 0 and worker_jobs == []


async def test_nothing_is_built_ahead_without_spare_cpu(
	catalog: Any, site: str, worker_jobs: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
	"""A build ahead uses spare time only: when fewer CPUs than ``IDLE_CORES`` were idle over the quiet
	(here, more than the machine has), or while the worker has a read's build, it gives way."""
	from browser_use_mcp import ahead
	from browser_use_mcp.patches import offload_state

	await call(catalog, 'browser_navigate', session_id='walk', url=f'{site}/heavy')
	await elements(catalog)
	before, jobs = counts(), len(worker_jobs)
	monkeypatch.setattr(ahead, 'IDLE_CORES', (os.cpu_count() or 1) + 1.0)
	busy = ahead.outcomes.get('busy', 0)
	await call(
		catalog, 'browser_evaluate', session_id='walk', expression="document.body.prepend(document.createElement('button'))"
	)
	await until(lambda: ahead.outcomes.get('busy', 0) == busy + 1)
	monkeypatch.setattr(ahead, 'IDLE_CORES', 0.0)
	monkeypatch.setattr(offload_state.pool, 'in_flight', 1)  # a read's build in the worker
	await call(
		catalog, 'browser_evaluate', session_id='walk', expression="document.body.prepend(document.createElement('button'))"
	)
	await until(lambda: ahead.outcomes.get('busy', 0) == busy + 2)
	assert counts() == before and len(worker_jobs) == jobs
	monkeypatch.setattr(offload_state.pool, 'in_flight', 0)
	await elements(catalog)
	assert len(worker_jobs) == jobs + 1
