"""The fallback agent: browser-use's Agent, run inside the caller's own session
(``browser_use_mcp/agent_runner.py`` runs it; ``browser_use_mcp/domains.py`` narrows its domains)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from browser_use_mcp.agent_runner import AgentTask, run_in_session
from browser_use_mcp.domains import MAX_PATTERN_LENGTH, MAX_PATTERNS, check_patterns
from browser_use_mcp.sessions import SessionState
from browser_use_mcp.tools.base import Args, Call, tool


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
	allowed_domains: Annotated[list[str], AfterValidator(check_patterns)] | None = Field(
		None,
		description='Domains the agent may visit during this run (security feature), e.g. ["example.com", '
		f'"*.example.org"]; at most {MAX_PATTERNS}, each at most {MAX_PATTERN_LENGTH} characters. It can only narrow '
		'what the server configuration allows. Omit it to use the configured restrictions; an empty list is treated '
		'the same as omitting it and does NOT lift them.',
	)
	use_vision: bool = Field(True, description='Whether the agent sees screenshots of the page.')


@tool('Hand the task to an agent', destructive=True, idempotent=False, open_world=True)
async def retry_with_browser_use_agent(state: SessionState, args: AgentArgs, call: Call) -> str:
	"""Last resort: hand a task to an autonomous browser-use agent that works in this same session (same page,
	cookies and tabs) until it is done or out of steps, then returns its result. Use it only after direct
	browser tools failed several times. Sends progress notifications (step n of max_steps, current URL) and
	stops at its next step when the request is cancelled; the session stays open on the page the agent left."""
	job = AgentTask(args.task, args.max_steps, args.model, args.allowed_domains, args.use_vision)
	return await run_in_session(state, job, call.report_progress)
