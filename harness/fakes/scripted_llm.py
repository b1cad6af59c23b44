"""A chat model that follows a script instead of calling a provider: no network, same interface.

It implements browser-use's ``BaseChatModel`` protocol (``ainvoke(messages, output_format)``
returning a ``ChatInvokeCompletion``), so the real ``Agent`` and the real ``extract`` action
drive it exactly as they drive ChatOpenAI. The server loads it through
``BROWSER_USE_MCP_LLM_FACTORY=harness.fakes.scripted_llm:make_llm``.

The script travels inside the agent's task, between ``@@script`` and ``@@end``, so each test
(and each of several concurrent agents) brings its own::

    {"steps": [[{"navigate": {"url": "http://127.0.0.1:8000/two"}}],
               [{"done": {"text": "saw {url}: {page}", "success": true}}]],
     "delay": 0.2}

Each step is the list of actions for one agent step; ``{url}`` and ``{page}`` in any string
become the page the agent is looking at in that step (its URL and visible text, read from the
state message it got), which is how a test proves what the agent saw. After the last scripted
step the model answers ``done``. ``delay`` (seconds) slows every step, for progress and cancel tests;
``delays`` (a list) sets it per step, e.g. to hang in one step like a slow provider.
Extraction calls (no output format) answer with the query and the start of the page text.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any, TypeVar

from browser_use.llm.messages import BaseMessage
from browser_use.llm.views import ChatInvokeCompletion
from pydantic import BaseModel

T = TypeVar('T', bound=BaseModel)

SCRIPT_RE = re.compile(r'@@script(.*?)@@end', re.DOTALL)
CURRENT_TAB_RE = re.compile(r'^Current tab: (\S+)$', re.MULTILINE)
PAGE_RE = re.compile(r'\[Start of page\](.*?)\[End of page\]', re.DOTALL)
TAG_RE = re.compile(r'<(query|webpage_content)>\n?(.*?)\n?</\1>', re.DOTALL)


def _text(message: BaseMessage) -> str:
	content = getattr(message, 'content', '')
	if isinstance(content, str):
		return content
	parts = []
	for part in content or []:
		text = getattr(part, 'text', None)
		if isinstance(text, str):
			parts.append(text)
	return '\n'.join(parts)


def _fill(value: Any, seen: dict[str, str]) -> Any:
	if isinstance(value, str):
		for key, found in seen.items():
			value = value.replace('{' + key + '}', found)
		return value
	if isinstance(value, list):
		return [_fill(v, seen) for v in value]
	if isinstance(value, dict):
		return {k: _fill(v, seen) for k, v in value.items()}
	return value


class ScriptedChatModel:
	"""Plays back the script found in the task; one instance per agent run (it counts steps).

	An Agent wraps ``ainvoke`` on the instance to count tokens, so it is a plain class that allows
	attribute assignment, and the server makes a new one per run (the factory is called each time).
	"""

	_verified_api_keys = True

	def __init__(self, model: str = 'scripted', purpose: str = 'agent') -> None:
		self.model = model
		self.purpose = purpose
		self.calls = 0

	@property
	def provider(self) -> str:
		return 'scripted'

	@property
	def name(self) -> str:
		return self.model

	@property
	def model_name(self) -> str:
		return self.model

	async def ainvoke(
		self, messages: list[BaseMessage], output_format: type[T] | None = None, **kwargs: Any
	) -> ChatInvokeCompletion[Any]:
		texts = [_text(m) for m in messages]
		if output_format is None:
			return ChatInvokeCompletion(completion=self._extract(texts[-1] if texts else ''), usage=None)
		if output_format.__name__ == 'JudgementResult':
			return ChatInvokeCompletion(
				completion=output_format.model_validate({'verdict': True, 'reasoning': 'scripted'}), usage=None
			)
		script = self._script(texts)
		index = self.calls
		self.calls += 1
		delays = script.get('delays') or []
		delay = float(delays[index] if index < len(delays) else script.get('delay', 0))
		if delay:
			await asyncio.sleep(delay)
		steps = script.get('steps', [])
		actions = steps[index] if index < len(steps) else [{'done': {'text': 'script finished', 'success': True}}]
		actions = _fill(actions, self._seen(texts))
		payload = {
			'thinking': f'scripted step {index + 1}',
			'evaluation_previous_goal': 'scripted',
			'memory': f'scripted step {index + 1}',
			'next_goal': f'scripted step {index + 1}: {", ".join(next(iter(a)) for a in actions)}',
			'action': actions,
		}
		return ChatInvokeCompletion(completion=output_format.model_validate(payload), usage=None)

	@staticmethod
	def _script(texts: list[str]) -> dict[str, Any]:
		for text in texts:
			match = SCRIPT_RE.search(text)
			if match:
				return json.loads(match.group(1))
		return {}

	@staticmethod
	def _seen(texts: list[str]) -> dict[str, str]:
		"""What the latest browser-state message shows: the focused tab's URL and the page's text."""
		for text in reversed(texts):
			tab = CURRENT_TAB_RE.search(text)
			if tab is None:
				continue
			line = re.search(rf'^Tab {re.escape(tab.group(1))}: (\S+)', text, re.MULTILINE)
			page = PAGE_RE.search(text)
			return {'url': line.group(1) if line else '', 'page': ' '.join(page.group(1).split()) if page else ''}
		return {}

	@staticmethod
	def _extract(prompt: str) -> str:
		tags = {name: body for name, body in TAG_RE.findall(prompt)}
		page = ' '.join(tags.get('webpage_content', '').split())
		return f'scripted extraction for {tags.get("query", "")!r}: {page[:400]}'


def make_llm(purpose: str = 'agent', model: str | None = None) -> ScriptedChatModel:
	return ScriptedChatModel(model or 'scripted', purpose)
