"""Which chat model the extraction and agent tools use.

Upstream reads config.json's llm entry and OPENAI_API_KEY (or Bedrock when
MODEL_PROVIDER=bedrock, for the agent only). We keep those and add the providers browser-use
ships chat models for. The provider is ``BROWSER_USE_MCP_LLM_PROVIDER``, else upstream's
``MODEL_PROVIDER``, else config.json's ``model_provider``, else guessed from which API key is
present. A ``module:function`` factory can supply any ``BaseChatModel`` instead (this is how
the tests plug in a scripted model, and how a user plugs in anything else browser-use supports).

The environment is read when a tool needs a model, not at start-up, so a key missing at
start-up is an error on those two tools only and every browser tool keeps working.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from browser_use_mcp.errors import LLMNotConfigured

Purpose = Literal['extract', 'agent']

FACTORY_VAR = 'BROWSER_USE_MCP_LLM_FACTORY'
PROVIDER_VARS = ('BROWSER_USE_MCP_LLM_PROVIDER', 'MODEL_PROVIDER')
MODEL_VAR = 'BROWSER_USE_LLM_MODEL'
BASE_URL_VAR = 'BROWSER_USE_MCP_LLM_BASE_URL'
# config.json's generated llm entry carries this placeholder key: it is not a key.
PLACEHOLDER_KEYS = {'', 'your-openai-api-key-here'}
DOCS = 'docs/llm.md'


@dataclass(frozen=True)
class Need:
	"""One setting a provider cannot work without: any of ``env`` vars, or config.json's ``config_key``."""

	env: tuple[str, ...]
	config_key: str | None = None

	def label(self) -> str:
		names = ' or '.join(self.env)
		return f'{names} (or "{self.config_key}" in config.json\'s llm entry)' if self.config_key else names


@dataclass(frozen=True)
class Provider:
	name: str
	needs: tuple[Need, ...]
	default_model: str  # '' when the model must be named (an OpenAI-compatible server serves its own)
	build: Callable[[Settings], Any]
	package: str | None = None  # import name of an optional dependency the chat model needs


@dataclass(frozen=True)
class Settings:
	"""What one provider gets to build its model: the chosen model plus the values it may read."""

	provider: str
	model: str
	config: Mapping[str, Any]  # config.json's llm entry, only when it belongs to this provider
	env: Mapping[str, str]

	def value(self, *names: str, config_key: str | None = None) -> str | None:
		"""First usable value among env ``names``, then config.json's ``config_key``."""
		for name in names:
			found = self.env.get(name)
			if found and found.strip() not in PLACEHOLDER_KEYS:
				return found.strip()
		if config_key is not None:
			found = self.config.get(config_key)
			if found is not None and str(found).strip() not in PLACEHOLDER_KEYS:
				return str(found).strip()
		return None

	@property
	def temperature(self) -> float | None:
		value = self.config.get('temperature')
		return float(value) if value is not None else None


def _openai(s: Settings) -> Any:
	from browser_use.llm import ChatOpenAI

	kwargs: dict[str, Any] = {
		'model': s.model,
		'api_key': s.value('OPENAI_API_KEY', config_key='api_key'),
		# upstream's default; browser-use drops it for reasoning models that reject it
		'temperature': 0.7 if s.temperature is None else s.temperature,
	}
	base_url = s.value(BASE_URL_VAR, 'OPENAI_BASE_URL', config_key='base_url')
	if base_url:
		kwargs['base_url'] = base_url
	return ChatOpenAI(**kwargs)


def _openai_compatible(s: Settings) -> Any:
	from browser_use.llm import ChatOpenAI

	return ChatOpenAI(
		model=s.model,
		# many local servers (vLLM, LM Studio, llama.cpp) ignore the key, but the client needs one
		api_key=s.value('OPENAI_API_KEY', config_key='api_key') or 'not-needed',
		base_url=s.value(BASE_URL_VAR, 'OPENAI_BASE_URL', config_key='base_url'),
		temperature=s.temperature,
	)


def _anthropic(s: Settings) -> Any:
	from browser_use.llm import ChatAnthropic

	return ChatAnthropic(
		model=s.model,
		api_key=s.value('ANTHROPIC_API_KEY', config_key='api_key'),
		base_url=s.value('ANTHROPIC_BASE_URL', config_key='base_url'),
		temperature=s.temperature,
	)


def _google(s: Settings) -> Any:
	from browser_use.llm import ChatGoogle

	return ChatGoogle(
		model=s.model, api_key=s.value('GOOGLE_API_KEY', 'GEMINI_API_KEY', config_key='api_key'), temperature=s.temperature
	)


def _azure(s: Settings) -> Any:
	from browser_use.llm import ChatAzureOpenAI

	kwargs: dict[str, Any] = {
		'model': s.model,
		'api_key': s.value('AZURE_OPENAI_KEY', 'AZURE_OPENAI_API_KEY', config_key='api_key'),
		'azure_endpoint': s.value('AZURE_OPENAI_ENDPOINT', config_key='base_url'),
		'azure_deployment': s.value('AZURE_OPENAI_DEPLOYMENT', config_key='azure_deployment'),
		'temperature': s.temperature,
	}
	version = s.value('AZURE_OPENAI_API_VERSION', 'OPENAI_API_VERSION', config_key='api_version')
	if version:
		kwargs['api_version'] = version
	return ChatAzureOpenAI(**kwargs)


def _ollama(s: Settings) -> Any:
	from browser_use.llm import ChatOllama

	return ChatOllama(model=s.model, host=s.value('OLLAMA_HOST', config_key='base_url'))


def _bedrock(s: Settings) -> Any:
	from browser_use.llm import ChatAWSBedrock

	return ChatAWSBedrock(
		model=s.model,
		aws_region=s.value('REGION', 'AWS_REGION', 'AWS_DEFAULT_REGION', config_key='region') or 'us-east-1',
		aws_sso_auth=bool(s.config.get('aws_sso_auth', False)),
		temperature=s.temperature,
	)


PROVIDERS: dict[str, Provider] = {
	'openai': Provider('openai', (Need(('OPENAI_API_KEY',), 'api_key'),), 'gpt-4.1-mini', _openai),
	'anthropic': Provider('anthropic', (Need(('ANTHROPIC_API_KEY',), 'api_key'),), 'claude-sonnet-4-5', _anthropic),
	'google': Provider('google', (Need(('GOOGLE_API_KEY', 'GEMINI_API_KEY'), 'api_key'),), 'gemini-2.5-flash', _google),
	'azure': Provider(
		'azure',
		(Need(('AZURE_OPENAI_KEY', 'AZURE_OPENAI_API_KEY'), 'api_key'), Need(('AZURE_OPENAI_ENDPOINT',), 'base_url')),
		'gpt-4.1-mini',
		_azure,
	),
	'openai_compatible': Provider(
		'openai_compatible', (Need((BASE_URL_VAR, 'OPENAI_BASE_URL'), 'base_url'),), '', _openai_compatible
	),
	'ollama': Provider('ollama', (), 'llama3.1', _ollama, package='ollama'),
	'bedrock': Provider('bedrock', (), 'us.anthropic.claude-sonnet-4-6', _bedrock, package='boto3'),
}
ALIASES = {
	'gemini': 'google',
	'azure_openai': 'azure',
	'aws': 'bedrock',
	'openai-compatible': 'openai_compatible',
	'compatible': 'openai_compatible',
}
# Tried in this order when no provider is named: the first whose key is present wins.
GUESS_ORDER = ('openai', 'anthropic', 'google', 'azure')


def _normalize(name: Any) -> str:
	text = str(name).strip().lower()
	return ALIASES.get(text, text)


def explicit_provider(settings: Mapping[str, Any], env: Mapping[str, str]) -> str | None:
	for var in PROVIDER_VARS:
		if env.get(var, '').strip():
			return _normalize(env[var])
	if settings.get('model_provider'):
		return _normalize(settings['model_provider'])
	return None


def config_provider(settings: Mapping[str, Any]) -> str:
	"""Whose settings config.json's llm entry holds: its model_provider, else OpenAI (as upstream)."""
	return _normalize(settings.get('model_provider') or 'openai')


def _own_config(name: str, settings: Mapping[str, Any], env: Mapping[str, str]) -> Mapping[str, Any]:
	"""config.json's llm entry if it describes this provider, else nothing.

	Its ``model`` and ``api_key`` belong to one provider: the generated config.json says
	``gpt-4.1-mini`` with a placeholder key, which must not become the model or key of, say,
	Anthropic. browser-use also folds OPENAI_API_KEY into ``api_key``, so that value is only
	ever an OpenAI key.
	"""
	if config_provider(settings) != name:
		return {}
	own = dict(settings)
	if name not in ('openai', 'openai_compatible') and own.get('api_key') and own.get('api_key') == env.get('OPENAI_API_KEY'):
		own.pop('api_key')
	return own


def _satisfied(need: Need, config: Mapping[str, Any], env: Mapping[str, str]) -> bool:
	probe = Settings('', '', config, env)
	return probe.value(*need.env, config_key=need.config_key) is not None


def provider_name(settings: Mapping[str, Any], env: Mapping[str, str]) -> str | None:
	"""The provider the tools would use: the named one, else the first with its key present."""
	explicit = explicit_provider(settings, env)
	if explicit:
		return explicit
	for name in GUESS_ORDER:
		config = _own_config(name, settings, env)
		if all(_satisfied(need, config, env) for need in PROVIDERS[name].needs):
			return name
	return None


def choose_model(name: str, settings: Mapping[str, Any], env: Mapping[str, str], requested: str | None = None) -> str:
	"""The tool's ``model`` argument, else BROWSER_USE_LLM_MODEL, else config.json's model (when
	it is this provider's), else the provider's default. Bedrock also reads upstream's MODEL."""
	if requested and requested.strip():
		return requested.strip()
	if env.get(MODEL_VAR, '').strip():
		return env[MODEL_VAR].strip()
	if name == 'bedrock' and env.get('MODEL', '').strip():
		return env['MODEL'].strip()
	own = _own_config(name, settings, env)
	if own.get('model'):
		return str(own['model'])
	provider = PROVIDERS.get(name)
	return provider.default_model if provider else ''


def describe(settings: Mapping[str, Any], env: Mapping[str, str] | None = None) -> tuple[str | None, str | None]:
	"""(provider, problem): what the tools would use, or why they cannot (also used by doctor)."""
	env = os.environ if env is None else env
	if env.get(FACTORY_VAR, '').strip():
		return 'factory', None
	name = provider_name(settings, env)
	if name is None:
		return None, (
			"No LLM is configured: set OPENAI_API_KEY in the server's environment (or ANTHROPIC_API_KEY, GOOGLE_API_KEY, "
			'or AZURE_OPENAI_KEY with AZURE_OPENAI_ENDPOINT; or BROWSER_USE_MCP_LLM_PROVIDER=ollama, bedrock or '
			f'openai_compatible). See {DOCS}.'
		)
	provider = PROVIDERS.get(name)
	if provider is None:
		return name, f'Unknown LLM provider {name!r}; choose one of {", ".join(sorted(PROVIDERS))}. See {DOCS}.'
	config = _own_config(name, settings, env)
	missing = [need.label() for need in provider.needs if not _satisfied(need, config, env)]
	if missing:
		return name, f"The {name} provider needs {' and '.join(missing)} set in the server's environment. See {DOCS}."
	if provider.package and importlib.util.find_spec(provider.package) is None:
		return name, f'The {name} provider needs the Python package {provider.package!r}: pip install {provider.package}.'
	if not choose_model(name, settings, env):
		return name, f'The {name} provider has no default model: set {MODEL_VAR} to the model your server serves.'
	return name, None


def make_llm(
	settings: Mapping[str, Any], purpose: Purpose, model: str | None = None, env: Mapping[str, str] | None = None
) -> Any:
	"""Build the chat model, or raise LLMNotConfigured naming what to set."""
	env = os.environ if env is None else env
	what = 'browser_extract_content' if purpose == 'extract' else 'retry_with_browser_use_agent'
	factory = env.get(FACTORY_VAR, '').strip()
	if factory:
		return _from_factory(factory, purpose, model, what)
	name, problem = describe(settings, env)
	if problem:
		raise LLMNotConfigured(f'{what} needs an LLM. {problem} The other browser tools work without one.')
	assert name is not None
	chosen = choose_model(name, settings, env, model)
	try:
		return PROVIDERS[name].build(Settings(name, chosen, _own_config(name, settings, env), env))
	except Exception as exc:  # a bad value (URL, region...) surfaces here, not mid-run
		raise LLMNotConfigured(f'{what} could not set up the {name} model {chosen!r}: {exc}. See {DOCS}.') from exc


def _from_factory(spec: str, purpose: Purpose, model: str | None, what: str) -> Any:
	module_name, _, attr = spec.partition(':')
	try:
		fn = getattr(importlib.import_module(module_name), attr or 'make_llm')
	except (ImportError, AttributeError) as exc:
		raise LLMNotConfigured(f'{FACTORY_VAR}={spec!r} cannot be loaded: {exc}. Use module.path:function.') from None
	try:
		return fn(purpose=purpose, model=model)
	except Exception as exc:
		raise LLMNotConfigured(f'{what}: the model factory {spec!r} failed: {type(exc).__name__}: {exc}') from exc
