"""The page's state built ahead, while the agent thinks (issue #24).

An agent acts, reads the result of its action, thinks for seconds, and almost always calls
``browser_get_state`` next. On a large page most of that read is the build of browser-use's tree
and serializer in the page-state worker (the Bootstrap cheatsheet: a walk of ~26 ms, then ~45 ms
of build and hop). A page-changing call that ends without a state (``include_state`` gives one
already) schedules a walk and a build of the focused page ``AFTER`` s later, in the background; the
read that follows walks the page again (the walk is what tells that nothing changed) and, when its
walk answers the same, takes that build (``in_page_state.build_ahead``). A read that comes while
the build is still being made waits for it instead of making another.

What it must never do, and how:

- Delay a call. It runs only while nobody holds the session: it takes the session's lock only when
  free, and every ``SessionState.hold`` (a call, a person at the dashboard) cancels it first. The
  walk's CDP commands are abandoned; a build already in the worker goes on (a read of the same walk
  takes it).
- Cost a script anything. Back-to-back calls never give it ``AFTER`` s of quiet.
- Keep building for nothing. A page that keeps changing (an animation, a clock, a feed) makes
  builds no read can use: after each unused one, the next ones on that document are skipped, one,
  two, four, then eight at most, until a build is used again.
- Touch small pages. A page whose build runs in process is cheap at the read: it is only walked.
- Take CPU the reads need. It uses spare time only: one build ahead at a time server-wide, none
  while the page-state worker has a job, and none unless at least ``IDLE_CORES`` of the CPUs this
  server may use were idle on average over the ``AFTER`` s of quiet (``cpu``: the machine's
  ``/proc/stat`` for the CPUs of its affinity, and its cgroup's CPU quota and usage where it has
  one, as in a container). With many agents at work the reads' own builds
  keep the worker busy, and the builds ahead mostly give way: they cost a second walk of the page
  and would queue beside the reads' builds (16 agents thinking 1 s each on the cheatsheet: reads
  slower with a build ahead for every step than with none, ``benchmarks.sustained --think``).

``BROWSER_USE_MCP_BUILD_AHEAD=0`` turns it off. ``/metrics`` counts builds
made, used and missed.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from typing import TYPE_CHECKING, Any

from browser_use_mcp import cpu
from browser_use_mcp.tasks import held

if TYPE_CHECKING:
	from browser_use_mcp.sessions import SessionState

logger = logging.getLogger(__name__)

AFTER = 0.3  # s of quiet after a page-changing call before the page is walked and built
AT_ONCE = 1  # builds ahead at work at a time, server-wide
IDLE_CORES = 1.0  # CPUs (of those this server may use) that must have been idle, on average, over the AFTER s of quiet
STOP_BOUND = 1.0  # s a cancelled build ahead may take to let go of the session

_running: set[asyncio.Task[Any]] = set()
_at_work = 0  # builds ahead walking or building now
ENABLED = True  # benchmarks' switch (state_corpus --compare-ahead); the server's is config.build_ahead
outcomes: collections.Counter[str] = collections.Counter()  # what the builds ahead did (``in_page_state.build_ahead``'s answers)


def schedule(state: SessionState) -> None:
	"""After a page-changing call of ``state`` ended (its lock still held): build its page's state
	ahead once the session has been quiet for ``AFTER`` s. A build ahead already scheduled is
	replaced."""
	if not (ENABLED and state.config.build_ahead) or state.closed_reason is not None:
		return
	cancel(state)
	task = asyncio.get_running_loop().create_task(_ahead(state), name=f'build-ahead-{state.session_id[:40]}')
	state.ahead = held(task, _running)


def cancel(state: SessionState) -> asyncio.Task[Any] | None:
	"""Cancel the session's build ahead (if any); the task, to wait for."""
	task, state.ahead = state.ahead, None
	if task is not None and not task.done():
		task.cancel()
		return task
	return None


async def stop(state: SessionState) -> None:
	"""Cancel the session's build ahead and wait (at most ``STOP_BOUND`` s) until it let go."""
	task = cancel(state)
	if task is not None:  # (a cancel of the caller meanwhile is the caller's, and goes on up)
		await asyncio.wait({task}, timeout=STOP_BOUND)


async def _ahead(state: SessionState) -> None:
	global _at_work
	before = cpu.sample()
	await asyncio.sleep(AFTER)
	if state.lock.locked() or state.closed_reason is not None or not state.browser.alive():
		return
	service = _dom_service(state)
	if service is None:  # the session has not read a state yet: nothing to build for
		return
	idle = cpu.idle_cpus(before, cpu.sample())
	if _at_work >= AT_ONCE or _worker_busy() or (idle is not None and idle < IDLE_CORES):
		outcomes['busy'] += 1  # spare time only: the reads come first
		return
	await state.lock.acquire()  # free: taken at once (no other holder can slip in before it)
	_at_work += 1
	outcome = 'failed'
	try:
		outcome = await _build(service)
	except asyncio.CancelledError:
		outcome = 'cancelled'
		raise
	except Exception as exc:  # a page that went away, a worker that died: the read builds as before
		logger.debug('build ahead failed: %s: %s', type(exc).__name__, exc)
	finally:
		_at_work -= 1
		state.lock.release()
		outcomes[outcome] += 1


def _worker_busy() -> bool:
	from browser_use_mcp.patches import offload_state

	return offload_state.pool.in_flight > 0


async def _build(service: Any) -> str:
	from browser_use_mcp.patches import in_page_state, offload_state

	if not offload_state.active() or offload_state.walked_route is None:  # the patches are off
		return 'none'
	return await in_page_state.build_ahead(service)


def _dom_service(state: SessionState) -> Any:
	"""The ``DomService`` browser-use's DOM watchdog reads states with (made at its first read)."""
	from browser_use_mcp.patches import internals

	session = state.browser.session
	return internals.dom_service(session) if session is not None else None
