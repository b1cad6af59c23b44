"""Which chat model the extraction and agent tools use.

Upstream reads config.json's llm entry and OPENAI_API_KEY (or Bedrock when
MODEL_PROVIDER=bedrock). We keep those and add the providers browser-use ships chat models
for, chosen by ``BROWSER_USE_MCP_LLM_PROVIDER`` (or upstream's ``MODEL_PROVIDER``, or
config.json's ``model_provider``), else guessed from which API key is present. A
``module:function`` factory can supply any ``BaseChatModel`` (this is how the tests plug in
a scripted model, and how a user plugs in anything browser-use supports).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from browser_use_mcp.errors import LLMNotConfigured

Purpose = Literal['extract', 'agent']
PLACEHOLDER_KEYS = {'', 'your-openai-api-key-here'}


@dataclass(frozen=True)
class Provider:
	name: str
	key_vars: tuple[str, ...]  # all must be set
	default_model: str
	build: Callable[[str, Mapping[str, Any], Mapping[str, str]], Any]


def _key(env: Mapping[str, str], settings: Mapping[str, Any], var: str) -> str | None:
	value = env.get(var) or None
	if var == 'OPENAI_API_KEY' and not value:
		value = settings.get('api_key')
	return None if value is None or str(value).strip() in PLACEHOLDER_KEYS else str(value)


def _openai(model: str, s: Mapping[str, Any], env: Mapping[str, str]) -> Any:
	from browser_use.llm import ChatOpenAI

	kwargs: dict[str, Any] = {'model': model, 'api_key': _key(env, s, 'OPENAI_API_KEY')}
	base_url = s.get('base_url') or env.get('OPENAI_BASE_URL')
	if base_url:
		kwargs['base_url'] = base_url
	if s.get('temperature') is not None:
		kwargs['temperature'] = s['temperature']
	return ChatOpenAI(**kwargs)


def _anthropic(model: str, s: Mapping[str, Any], env: Mapping[str, str]) -> Any:
	from browser_use.llm import ChatAnthropic

	return ChatAnthropic(model=model, api_key=env.get('ANTHROPIC_API_KEY'), temperature=s.get('temperature'))


def _google(model: str, s: Mapping[str, Any], env: Mapping[str, str]) -> Any:
	from browser_use.llm import ChatGoogle

	return ChatGoogle(
		model=model, api_key=env.get('GOOGLE_API_KEY') or env.get('GEMINI_API_KEY'), temperature=s.get('temperature')
	)


def _azure(model: str, s: Mapping[str, Any], env: Mapping[str, str]) -> Any:
	from browser_use.llm import ChatAzureOpenAI

	return ChatAzureOpenAI(
		model=model,
		api_key=env.get('AZURE_OPENAI_KEY') or env.get('AZURE_OPENAI_API_KEY'),
		azure_endpoint=env.get('AZURE_OPENAI_ENDPOINT'),
		azure_deployment=s.get('azure_deployment') or env.get('AZURE_OPENAI_DEPLOYMENT'),
	)


def _ollama(model: str, s: Mapping[str, Any], env: Mapping[str, str]) -> Any:
	from browser_use.llm import ChatOllama

	return ChatOllama(model=model, host=s.get('base_url') or env.get('OLLAMA_HOST'))


def _bedrock(model: str, s: Mapping[str, Any], env: Mapping[str, str]) -> Any:
	from browser_use.llm import ChatAWSBedrock

	return ChatAWSBedrock(
		model=model,
		aws_region=s.get('region') or env.get('REGION') or env.get('AWS_REGION') or 'us-east-1',
		aws_sso_auth=bool(s.get('aws_sso_auth', False)),
	)


PROVIDERS: dict[str, Provider] = {
	'openai': Provider('openai', ('OPENAI_API_KEY',), 'gpt-4.1-mini', _openai),
	'anthropic': Provider('anthropic', ('ANTHROPIC_API_KEY',), 'claude-sonnet-4-5', _anthropic),
	'google': Provider('google', ('GOOGLE_API_KEY',), 'gemini-2.5-flash', _google),
	'azure': Provider('azure', ('AZURE_OPENAI_KEY', 'AZURE_OPENAI_ENDPOINT'), 'gpt-4.1-mini', _azure),
	'ollama': Provider('ollama', (), 'llama3.1', _ollama),
	'bedrock': Provider('bedrock', (), 'us.anthropic.claude-sonnet-4-6', _bedrock),
}
ALIASES = {'gemini': 'google', 'azure_openai': 'azure', 'aws': 'bedrock', 'openai_compatible': 'openai'}


def provider_name(settings: Mapping[str, Any], env: Mapping[str, str]) -> str | None:
	explicit = env.get('BROWSER_USE_MCP_LLM_PROVIDER') or env.get('MODEL_PROVIDER') or settings.get('model_provider')
	if explicit:
		name = str(explicit).strip().lower()
		return ALIASES.get(name, name)
	for name in ('openai', 'anthropic', 'google', 'azure'):
		if all(
			_key(env, settings, var) or (var == 'GOOGLE_API_KEY' and env.get('GEMINI_API_KEY'))
			for var in PROVIDERS[name].key_vars
		):
			return name
	return None


def describe(settings: Mapping[str, Any], env: Mapping[str, str] | None = None) -> tuple[str | None, str | None]:
	"""(provider, problem): what the tools would use, or why they cannot (for doctor)."""
	env = os.environ if env is None else env
	if env.get('BROWSER_USE_MCP_LLM_FACTORY'):
		return 'factory', None
	name = provider_name(settings, env)
	if name is None:
		return None, (
			'No LLM is configured. Set OPENAI_API_KEY (or ANTHROPIC_API_KEY, GOOGLE_API_KEY, AZURE_OPENAI_KEY with '
			'AZURE_OPENAI_ENDPOINT), or BROWSER_USE_MCP_LLM_PROVIDER=ollama|bedrock. See docs/configuration.md#llm.'
		)
	provider = PROVIDERS.get(name)
	if provider is None:
		return name, f'Unknown LLM provider {name!r}; choose one of {", ".join(sorted(PROVIDERS))}.'
	missing = [
		var
		for var in provider.key_vars
		if not _key(env, settings, var) and not (var == 'GOOGLE_API_KEY' and env.get('GEMINI_API_KEY'))
	]
	if missing:
		return name, f"The {name} provider needs {' and '.join(missing)} to be set in the server's environment."
	return name, None


def make_llm(
	settings: Mapping[str, Any], purpose: Purpose, model: str | None = None, env: Mapping[str, str] | None = None
) -> Any:
	"""Build the chat model, or raise LLMNotConfigured naming what to set."""
	env = os.environ if env is None else env
	factory = env.get('BROWSER_USE_MCP_LLM_FACTORY')
	if factory:
		module_name, _, attr = factory.partition(':')
		try:
			fn = getattr(importlib.import_module(module_name), attr or 'make_llm')
		except (ImportError, AttributeError) as exc:
			raise LLMNotConfigured(f'BROWSER_USE_MCP_LLM_FACTORY={factory!r} cannot be loaded: {exc}') from None
		return fn(purpose=purpose, model=model)
	name, problem = describe(settings, env)
	if problem:
		what = 'browser_extract_content' if purpose == 'extract' else 'retry_with_browser_use_agent'
		raise LLMNotConfigured(f'{what} needs an LLM. {problem} The other browser tools work without one.')
	assert name is not None
	provider = PROVIDERS[name]
	chosen = model or settings.get('model') or env.get('BROWSER_USE_LLM_MODEL') or provider.default_model
	return provider.build(str(chosen), settings, env)
