"""The fallback agent leaves the session's browser as it found it: running.

browser-use's ``Agent.close()`` (run at the end of every ``Agent.run()``) kills a browser
without keep_alive and stops the event bus of one with it. The agent tool drives the calling
session's own ``BrowserSession``, so the caller's next call must find it as the agent left it.
``SessionAgent`` is browser-use's Agent with a ``close`` that does nothing; nothing of
browser-use is modified (a subclass, used only by the agent tool).

Safe behaviour when off or refused: browser-use's own ``close`` would end or stop the session's
browser, so the agent tool refuses to run (its call fails with a message saying why); every
other tool is unaffected.
"""

from __future__ import annotations

import functools
import logging

from browser_use_mcp.errors import BrowserActionFailed
from browser_use_mcp.patches import Patch, apply

logger = logging.getLogger(__name__)

BROWSER_USE_VERSION = '0.13.14'
_AGENT = 'browser_use.agent.service:Agent'


@functools.cache
def session_agent_class() -> type:
	"""browser-use's Agent, minus the one thing it must not do here: end the session's browser.

	Imported in a thread by the caller: the first import (anthropic's SDK, which ``Agent.__init__``
	pulls in) takes seconds and would stall every other session.
	"""
	import browser_use.llm.anthropic.chat  # noqa: F401
	from browser_use import Agent

	class SessionAgent(Agent):
		async def close(self) -> None:
			"""Leave the browser and its event bus running for the session's next call."""

	return SessionAgent


def agent_class(config: object | None = None) -> type:
	"""``SessionAgent``; when this patch is off or refused, a tool error saying why the agent cannot
	run. Call it in a thread (see ``session_agent_class``)."""
	status = apply(PATCH, config)  # type: ignore[arg-type]
	if status.state != 'active':
		why = f'it is switched off ({status.reason})' if status.state == 'off' else f'it was refused ({status.reason})'
		raise BrowserActionFailed(
			"retry_with_browser_use_agent is unavailable on this server: browser-use's Agent would close this "
			f"session's browser when it finishes, and the patch that prevents it is not active: {why}. The session "
			'is untouched; continue with the direct browser tools.'
		)
	return session_agent_class()


def _apply() -> None:
	"""Nothing of browser-use changes; the class is built on first use (``session_agent_class``)."""


def _revert() -> None:
	session_agent_class.cache_clear()


PATCH = Patch(
	name='agent_keeps_browser',
	title="the agent leaves the session's browser open",
	changes="the agent tool runs ``SessionAgent``, a subclass of browser-use's ``Agent`` whose ``close`` (called at "
	'the end of every ``run``) does nothing.',
	why="the agent drives the caller's own session: ``Agent.close`` would kill its browser (or stop its event bus), "
	'and the next call must find the session as the agent left it.',
	package='browser-use',
	versions=(BROWSER_USE_VERSION,),
	sources={
		f'{_AGENT}.close': '9b65a36cc53c215e',
		f'{_AGENT}.run': 'cf00fd10a02d62f3',  # ends by calling self.close()
	},
	switch='agent_keeps_browser',
	when_refused='retry_with_browser_use_agent refuses to run (its error says why); the other tools are unaffected',
	apply=_apply,
	revert=_revert,
	logger=logger.name,
	refused_message="retry_with_browser_use_agent disabled (browser-use's Agent would close the session's browser)",
)
