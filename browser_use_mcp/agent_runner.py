"""Running browser-use's Agent inside the caller's own session, to its end or until the call is
cancelled, and reporting what it did.

Upstream starts its agent in a brand-new browser, on a blank page. Here the agent drives the
calling session's ``BrowserSession`` and ``FileSystem`` under that session's lock (the registry
holds it for the whole call), so it starts on the caller's page with the caller's cookies and
tabs, and the caller finds the session alive on whatever page the agent left. The agent class is
``SessionAgent`` (``patches/agent_keeps_browser.py``): browser-use's ``Agent`` without the
``close`` that would end the session's browser.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from browser_use_mcp.domains import run_domains
from browser_use_mcp.errors import BrowserActionFailed
from browser_use_mcp.llm import make_llm
from browser_use_mcp.patches import agent_keeps_browser
from browser_use_mcp.sessions import SessionState

logger = logging.getLogger('browser_use_mcp.agent')

# The Agent would otherwise ask PyPI for a newer browser-use on every run. An explicit setting wins.
AGENT_ENV_DEFAULTS = {'BROWSER_USE_VERSION_CHECK': 'false', 'BROWSER_USE_CLOUD_SYNC': 'false'}
STOP_GRACE = 3.0  # seconds a cancelled agent gets to finish its current step before it is interrupted
SETTLE_LIMIT = 5.0  # seconds an interrupted agent gets to unwind before the call returns regardless

Progress = Callable[[float, float | None, str | None], Awaitable[None]]


@dataclass(frozen=True)
class AgentTask:
	"""One run: what the caller asked for."""

	task: str
	max_steps: int
	model: str | None = None
	allowed_domains: list[str] | None = None  # narrows the configured list for this run only
	use_vision: bool = True


async def run_in_session(state: SessionState, job: AgentTask, progress: Progress) -> str:
	"""Run the agent in ``state``'s browser and return upstream's report of the run. The session's
	settings the run changes (allowed domains, screenshot size) are restored, whatever happens."""
	llm = make_llm(state.config.llm, 'agent', model=job.model)
	profile = state.browser_session.browser_profile
	configured = profile.allowed_domains
	domains = run_domains(configured, job.allowed_domains, profile.prohibited_domains)
	# in a thread: the Agent's first import takes seconds
	agent_class = await asyncio.to_thread(agent_keeps_browser.agent_class, state.config)
	for name, value in AGENT_ENV_DEFAULTS.items():
		os.environ.setdefault(name, value)
	from browser_use.agent.views import AgentState

	async def on_step(browser_state: Any, model_output: Any, step: int) -> None:
		url = getattr(browser_state, 'url', '') or ''
		goal = (getattr(model_output, 'next_goal', None) or '').strip()
		message = f'Step {step}/{job.max_steps}: {url}' + (f' - {goal[:200]}' if goal else '')
		await progress(step, job.max_steps, message)

	agent = None
	screenshot_size = state.browser_session.llm_screenshot_size  # the Agent sets it on the session
	if domains is not None:
		profile.allowed_domains = domains  # SecurityWatchdog reads the live profile at every navigation
	try:
		agent = agent_class(
			task=job.task,
			llm=llm,
			browser_session=state.browser_session,
			use_vision=job.use_vision,
			# continue the session's FileSystem (same directory, same files) instead of wiping it
			injected_agent_state=AgentState(file_system_state=state.file_system.get_state()),
			register_new_step_callback=on_step,
			directly_open_url=False,  # start where the caller is, not at a URL guessed from the task
			use_judge=False,  # a second LLM call (with screenshots) whose verdict the result never shows
			enable_signal_handler=False,  # SIGINT/SIGTERM belong to the server
		)
		history = await run_to_end(agent, job.max_steps)
	except Exception as exc:
		logger.warning('agent run failed', exc_info=True)
		raise BrowserActionFailed(
			f'Agent task failed: {type(exc).__name__}: {str(exc)[:500]}. The session is still open; call '
			'browser_get_state to see where the agent left it.'
		) from exc
	finally:
		if domains is not None:
			profile.allowed_domains = configured
		state.browser_session.llm_screenshot_size = screenshot_size  # leave the session's settings as they were
		if agent is not None:
			state.file_system = agent.file_system
			shutil.rmtree(agent.agent_directory, ignore_errors=True)  # the agent's per-step screenshots
	return report(history, await _current_url(state))


async def run_to_end(agent: Any, max_steps: int) -> Any:
	"""Run the agent; when this call is cancelled, stop it at its next step and wait for it.

	The run goes on in its own task: a cancelled MCP request is cancelled again at every await
	until its handler returns, which would interrupt the agent mid-action. Instead the agent is
	asked to stop (it checks between phases of a step) and only interrupted if it does not
	within ``STOP_GRACE``. Either way the call returns only once the agent no longer touches the
	browser, so the session's next call never races it.
	"""
	task = asyncio.create_task(agent.run(max_steps=max_steps), name='browser-use-agent')
	task.add_done_callback(lambda t: t.cancelled() or t.exception())
	try:
		return await asyncio.shield(task)
	except asyncio.CancelledError:
		logger.info('agent call cancelled: stopping the agent at its next step')
		agent.stop()
		if not await _settle(task, STOP_GRACE):
			logger.info('agent did not stop within %.0f s of the cancel; interrupting it', STOP_GRACE)
			task.cancel()
			if not await _settle(task, SETTLE_LIMIT):
				logger.warning('agent still unwinding %.0f s after being interrupted; releasing the session', SETTLE_LIMIT)
		raise


async def _settle(task: asyncio.Task[Any], timeout: float) -> bool:
	"""Wait up to ``timeout`` for ``task`` even while our own task keeps being cancelled."""
	loop = asyncio.get_running_loop()
	deadline = loop.time() + timeout
	while not task.done():
		remaining = deadline - loop.time()
		if remaining <= 0:
			break
		with contextlib.suppress(asyncio.CancelledError):
			await asyncio.wait({task}, timeout=remaining)
	return task.done()


async def _current_url(state: SessionState) -> str | None:
	"""Where the agent left the session, for the report; None (logged) when the browser cannot say."""
	try:
		return await asyncio.wait_for(state.browser_session.get_current_page_url(), 5)
	except Exception as exc:
		logger.warning('could not read where the agent left the session: %s: %s', type(exc).__name__, exc)
		return None


def report(history: Any, url: str | None = None) -> str:
	"""Upstream's result text (steps, success, final result, errors, URLs), plus where the session is now."""
	lines = [f'Task completed in {len(history.history)} steps', f'Success: {history.is_successful()}']
	final = history.final_result()
	if final:
		lines.append(f'\nFinal result:\n{final}')
	errors = [e for e in history.errors() if e]
	if errors:
		lines.append(f'\nErrors encountered:\n{json.dumps(errors, indent=2)}')
	urls = [str(u) for u in history.urls() if u]
	if urls:
		lines.append(f'\nURLs visited: {", ".join(urls)}')
	if url:
		lines.append(f'\nThe session is now on: {url}')
	return '\n'.join(lines)
