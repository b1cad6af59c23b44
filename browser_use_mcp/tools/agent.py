"""The fallback agent: browser-use's Agent, run inside the caller's own session."""

from __future__ import annotations

import json

from pydantic import Field

from browser_use_mcp.llm import make_llm
from browser_use_mcp.tools.base import Args, Call, session_tool


class AgentArgs(Args):
	task: str = Field(
		min_length=1,
		description='The goal for the browser agent, step by step, with any data it needs and what was already tried.',
	)
	max_steps: int = Field(100, ge=1, le=500, description='Most steps the agent may take.')
	model: str | None = Field(None, description='LLM model name to use (e.g. gpt-4.1-mini); defaults to the configured model.')
	allowed_domains: list[str] | None = Field(
		None,
		description='Domains the agent may visit during this run. It can only narrow what the server configuration '
		'allows; an empty list or omitting it keeps the configured restrictions unchanged.',
	)
	use_vision: bool = Field(True, description='Let the agent see screenshots.')


@session_tool(
	'retry_with_browser_use_agent',
	'Last resort: hand a task to an autonomous browser-use agent that works in this same session (same page, '
	'cookies and tabs) until done or out of steps. Use only after direct browser tools failed several times.',
	AgentArgs,
)
async def run_agent(state, args: AgentArgs, call: Call) -> str:
	from browser_use import Agent

	llm = make_llm(state.config.llm, 'agent', model=args.model)
	profile = state.browser_session.browser_profile
	saved_domains = profile.allowed_domains
	if args.allowed_domains:
		profile.allowed_domains = narrow_domains(saved_domains, args.allowed_domains)

	async def on_step(browser_state, model_output, step: int) -> None:
		url = getattr(browser_state, 'url', '') or ''
		await call.report_progress(step, args.max_steps, f'step {step}/{args.max_steps}: {url}')

	agent = Agent(
		task=args.task,
		llm=llm,
		browser_session=state.browser_session,
		file_system_path=str(state.dirs.files),
		use_vision=args.use_vision,
		register_new_step_callback=on_step,
	)
	try:
		history = await agent.run(max_steps=args.max_steps)
	except Exception as exc:
		return f'Agent task failed: {exc}'
	finally:
		profile.allowed_domains = saved_domains
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
	return '\n'.join(lines)


def narrow_domains(configured: list[str] | set[str] | None, requested: list[str]) -> list[str]:
	"""The requested domains that the configured allow-list permits (all of them if none is set)."""
	if not configured:
		return list(requested)
	allowed = set(configured)
	return [d for d in requested if d in allowed or any(_covers(pattern, d) for pattern in allowed)] or ['__none__.invalid']


def _covers(pattern: str, domain: str) -> bool:
	host = domain.split('://', 1)[-1].split('/', 1)[0].lower()
	pat = pattern.split('://', 1)[-1].split('/', 1)[0].lower()
	if pat.startswith('*.'):
		return host == pat[2:] or host.endswith(pat[1:])
	return host == pat


TOOLS = [run_agent]
