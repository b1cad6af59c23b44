"""The fallback agent: browser-use's Agent, run inside the caller's own session.

Upstream starts its agent in a brand-new browser, on a blank page. Here the agent drives the
calling session's ``BrowserSession`` and ``FileSystem`` under that session's lock (the registry
holds it for the whole call), so it starts on the caller's page with the caller's cookies and
tabs, and the caller finds the session alive on whatever page the agent left.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from pydantic import Field

from browser_use_mcp.errors import BrowserActionFailed, InvalidArgument
from browser_use_mcp.llm import make_llm
from browser_use_mcp.patches import agent_keeps_browser
from browser_use_mcp.tools.base import Args, Call, session_tool

if TYPE_CHECKING:
	from browser_use_mcp.sessions import SessionState

logger = logging.getLogger('browser_use_mcp.agent')

# The Agent would otherwise ask PyPI for a newer browser-use on every run. An explicit setting wins.
AGENT_ENV_DEFAULTS = {'BROWSER_USE_VERSION_CHECK': 'false', 'BROWSER_USE_CLOUD_SYNC': 'false'}
STOP_GRACE = 3.0  # seconds a cancelled agent gets to finish its current step before it is interrupted
SETTLE_LIMIT = 5.0  # seconds an interrupted agent gets to unwind before the call returns regardless
DOMAIN_SET_THRESHOLD = 100  # browser-use's BrowserProfile turns a list this long into a set


class AgentArgs(Args):
	task: str = Field(
		min_length=1,
		description='The high-level goal and a detailed step-by-step description of what the agent must do, with any '
		'data it needs and what was already tried. The agent starts on the page this session is on now.',
	)
	max_steps: int = Field(100, ge=1, le=500, description='Maximum number of steps the agent may take.')
	model: str | None = Field(
		None, description='LLM model to use (e.g. gpt-4.1-mini, claude-sonnet-4-5). Defaults to the configured model.'
	)
	allowed_domains: list[str] | None = Field(
		None,
		description='Domains the agent may visit during this run (security feature), e.g. ["example.com", '
		'"*.example.org"]. It can only narrow what the server configuration allows. Omit it to use the configured '
		'restrictions; an empty list is treated the same as omitting it and does NOT lift them.',
	)
	use_vision: bool = Field(True, description='Whether the agent sees screenshots of the page.')


@session_tool(
	'retry_with_browser_use_agent',
	'Last resort: hand a task to an autonomous browser-use agent that works in this same session (same page, '
	'cookies and tabs) until it is done or out of steps, then returns its result. Use it only after direct '
	'browser tools failed several times. Sends progress notifications (step n of max_steps, current URL) and '
	'stops at its next step when the request is cancelled; the session stays open on the page the agent left.',
	AgentArgs,
)
async def run_agent(state: SessionState, args: AgentArgs, call: Call) -> str:
	llm = make_llm(state.config.llm, 'agent', model=args.model)
	profile = state.browser_session.browser_profile
	configured = profile.allowed_domains
	domains = run_domains(configured, args.allowed_domains, profile.prohibited_domains)
	# browser-use's Agent minus its close(), which would end the session's browser (patches/agent_keeps_browser.py);
	# in a thread: its first import takes seconds
	agent_class = await asyncio.to_thread(agent_keeps_browser.agent_class, state.config)
	for name, value in AGENT_ENV_DEFAULTS.items():
		os.environ.setdefault(name, value)
	from browser_use.agent.views import AgentState

	async def on_step(browser_state: Any, model_output: Any, step: int) -> None:
		url = getattr(browser_state, 'url', '') or ''
		goal = (getattr(model_output, 'next_goal', None) or '').strip()
		message = f'Step {step}/{args.max_steps}: {url}' + (f' - {goal[:200]}' if goal else '')
		await call.report_progress(step, args.max_steps, message)

	agent = None
	screenshot_size = state.browser_session.llm_screenshot_size  # the Agent sets it on the session
	if domains is not None:
		profile.allowed_domains = domains  # SecurityWatchdog reads the live profile at every navigation
	try:
		agent = agent_class(
			task=args.task,
			llm=llm,
			browser_session=state.browser_session,
			use_vision=args.use_vision,
			# continue the session's FileSystem (same directory, same files) instead of wiping it
			injected_agent_state=AgentState(file_system_state=state.file_system.get_state()),
			register_new_step_callback=on_step,
			directly_open_url=False,  # start where the caller is, not at a URL guessed from the task
			use_judge=False,  # a second LLM call (with screenshots) whose verdict the result never shows
			enable_signal_handler=False,  # SIGINT/SIGTERM belong to the server
		)
		history = await _run_to_end(agent, args.max_steps)
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


async def _run_to_end(agent: Any, max_steps: int) -> Any:
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
	with contextlib.suppress(Exception):
		return await asyncio.wait_for(state.browser_session.get_current_page_url(), 5)
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


# -- allowed_domains -----------------------------------------------------------------------
# browser-use's SecurityWatchdog matches each navigation against the profile's list: "*" allows
# all, "*.d" allows http(s) on d and its subdomains, "scheme://..." is a URL prefix, anything else
# an exact host (plus "www." for a root domain like example.com). A list of 100+ becomes a set of
# exact hosts, each also matching its www./non-www. twin. An empty list allows everything.

Kind = Literal['any', 'host', 'sub', 'url', 'glob']


@dataclass(frozen=True)
class Pattern:
	text: str
	kind: Kind
	host: str = ''  # the host (host, url) or the domain (sub)
	scheme: str = ''  # url only

	@property
	def fixed_host(self) -> bool:
		"""A URL prefix that pins the host: something after the authority, or "x@evil.com" slips through."""
		return self.kind == 'url' and '/' in self.text.split('://', 1)[1]


def parse_pattern(text: str) -> Pattern:
	text = text.strip()
	if text == '*':
		return Pattern(text, 'any')
	if text.startswith('*.') and '*' not in text[2:] and '://' not in text:
		return Pattern(text, 'sub', text[2:].lower())
	if '*' in text:
		return Pattern(text, 'glob')
	if '://' in text:
		with contextlib.suppress(ValueError):
			parts = urlsplit(text)
			return Pattern(text, 'url', (parts.hostname or '').lower(), parts.scheme.lower())
		return Pattern(text, 'glob')
	return Pattern(text, 'host', text.lower())


def harden(text: str) -> str:
	"""A requested URL prefix with its host pinned and lower-cased (https://a.com -> https://a.com/)."""
	pattern = parse_pattern(text)
	if pattern.kind != 'url':
		return pattern.text
	scheme, rest = pattern.text.split('://', 1)
	authority, slash, path = rest.partition('/')
	return f'{scheme.lower()}://{authority.lower()}/{path}'


def _root(host: str) -> bool:
	return host.count('.') == 1


def _under(host: str, domain: str) -> bool:
	return host == domain or host.endswith('.' + domain)


def covers(outer: Pattern, inner: Pattern) -> bool:
	"""True only if every URL ``inner`` allows, ``outer`` allows too (conservative: unsure is False)."""
	if outer.kind == 'any':
		return True
	if outer.kind == inner.kind and outer.kind in ('host', 'sub') and outer.host == inner.host:
		return True
	if outer.text == inner.text:
		return True
	if inner.kind == 'url':
		if outer.kind == 'url':
			return inner.text.startswith(outer.text)
		if not inner.fixed_host:
			return False
		if outer.kind == 'host':
			return inner.host == outer.host or (_root(outer.host) and inner.host == 'www.' + outer.host)
		return outer.kind == 'sub' and inner.scheme in ('http', 'https') and _under(inner.host, outer.host)
	if inner.kind == 'host' and outer.kind == 'host':
		return _root(outer.host) and inner.host == 'www.' + outer.host
	if inner.kind == 'sub' and outer.kind == 'sub':
		return _under(inner.host, outer.host)
	return False


def _twin(host: str) -> str:
	return host[4:] if host.startswith('www.') else 'www.' + host


@dataclass(frozen=True)
class Hosts:
	"""The hosts a pattern can match: an exact set, or every host under one domain."""

	exact: frozenset[str] = frozenset()
	under: str | None = None


def _hosts(p: Pattern) -> Hosts | None:
	"""None when the pattern's hosts are unknown (globs, unpinned URL prefixes)."""
	if p.kind == 'host':
		return Hosts(frozenset({p.host, f'www.{p.host}'} if _root(p.host) else {p.host}))
	if p.fixed_host:
		return Hosts(frozenset({p.host}))
	if p.kind == 'sub':
		return Hosts(under=p.host)
	return None


def disjoint(a: Pattern, b: Pattern) -> bool:
	"""True only if no URL can match both patterns (conservative: unsure is False)."""
	x, y = _hosts(a), _hosts(b)
	if x is None or y is None:
		return False
	if x.under is not None and y.under is not None:
		return not (_under(x.under, y.under) or _under(y.under, x.under))
	if x.under is not None:
		x, y = y, x
	if y.under is not None:
		return not any(_under(h, y.under) for h in x.exact)
	return x.exact.isdisjoint(y.exact)


def _as_patterns(domains: Iterable[str], exact: bool) -> list[Pattern]:
	"""A profile's list as patterns; a set (browser-use's fast path) holds exact hosts and their www. twins."""
	if not exact:
		return [parse_pattern(d) for d in domains]
	return [Pattern(h, 'host', h.lower()) for d in domains for h in (d, _twin(d))]


def run_domains(
	configured: Iterable[str] | None, requested: list[str] | None, prohibited: Iterable[str] | None = None
) -> list[str] | None:
	"""The allow-list for one agent run, or None to leave the configured one untouched.

	GHSA-vfcm-843v-w6v3: an omitted or empty list never widens anything (the watchdog reads an
	empty list as "no restriction"). A non-empty one narrows: with a configured list the run gets
	only what both allow - each requested pattern that a configured one covers, each configured
	pattern that a requested one covers, and for a bare host inside a "*.d" the host over http(s)
	only. Without one it is used as given, minus any pattern that might reach a prohibited domain
	(browser-use ignores prohibited_domains once an allow-list is set). When unsure a pattern is
	dropped; nothing left is an error rather than a run that can go nowhere.
	"""
	wanted = [parse_pattern(harden(d)) for d in requested or [] if isinstance(d, str) and d.strip()]
	if not wanted:
		return None
	if configured:
		kept = _overlap(configured, wanted, requested or [])
	else:
		banned = _as_patterns(prohibited or [], isinstance(prohibited, set))
		kept = [p.text for p in wanted if all(disjoint(p, q) for q in banned)]
		if not kept:
			raise InvalidArgument(
				f'Every domain in allowed_domains {requested} may reach a domain this server prohibits; a run can only '
				'be narrowed, never widened. Pass domains clear of the prohibited list, or omit allowed_domains.'
			)
	if len(kept) >= DOMAIN_SET_THRESHOLD:
		# browser-use turns such a list into a set of exact hosts that also match their www. twins
		raise InvalidArgument(
			f'allowed_domains narrows to {len(kept)} patterns; keep it under {DOMAIN_SET_THRESHOLD} (use "*.domain" patterns).'
		)
	return kept


def _overlap(configured: Iterable[str], wanted: list[Pattern], requested: list[str]) -> list[str]:
	exact = isinstance(configured, set)
	allowed = [Pattern(d, 'host', d.lower()) if exact else parse_pattern(d) for d in configured]
	kept: list[str] = []

	def keep(text: str) -> None:
		if text not in kept:
			kept.append(text)

	def keep_web(host: str) -> None:
		# a bare host allows every scheme, "*.d" only http(s): their overlap is the host over http(s)
		keep(f'http://{host}/')
		keep(f'https://{host}/')

	for p in wanted:
		if any(covers(q, p) for q in allowed):
			keep(p.text)
		elif p.kind == 'host' and any(q.kind == 'sub' and _under(p.host, q.host) for q in allowed):
			keep_web(p.host)
	for q in allowed:
		twins = [q, Pattern(_twin(q.host), 'host', _twin(q.host))] if exact else [q]
		if all(any(covers(p, t) for p in wanted) for t in twins):
			keep(q.text)
		elif not exact and q.kind == 'host' and any(p.kind == 'sub' and _under(q.host, p.host) for p in wanted):
			keep_web(q.host)
	if not kept:
		shown = sorted(configured)[:20] if exact else list(configured)
		more = ' ...' if len(shown) < len(list(configured)) else ''
		raise InvalidArgument(
			f'None of allowed_domains {requested} is within the allow-list this server is configured with '
			f'({", ".join(shown)}{more}); a run can only be narrowed, never widened. Pass domains inside that list, '
			'or omit allowed_domains to use the list as it is.'
		)
	return kept


TOOLS = [run_agent]
