"""Which chat model the LLM tools get, per provider, from config.json and the environment.

Only constructs the models (browser-use's chat classes open no connection until called); no
request is made.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from browser_use_mcp.errors import LLMNotConfigured
from browser_use_mcp.llm import choose_model, describe, make_llm
from harness.fakes.scripted_llm import ScriptedChatModel

# What browser-use writes into a fresh config.json: an OpenAI model with a placeholder key.
GENERATED = {'model': 'gpt-4.1-mini', 'api_key': 'your-openai-api-key-here'}


def build(settings: dict[str, Any], env: dict[str, str], **kw: Any) -> Any:
	return make_llm(settings, 'agent', env=env, **kw)


def test_no_key_names_the_variable_to_set() -> None:
	for settings in ({}, GENERATED):
		provider, problem = describe(settings, {})
		assert provider is None and problem and 'OPENAI_API_KEY' in problem
		with pytest.raises(LLMNotConfigured) as info:
			make_llm(settings, 'extract', env={})
		assert info.value.message.startswith('browser_extract_content needs an LLM.')
		assert 'OPENAI_API_KEY' in info.value.message and 'other browser tools work' in info.value.message


def test_openai_as_upstream() -> None:
	llm = build(GENERATED, {'OPENAI_API_KEY': 'sk-test'})
	assert (type(llm).__name__, llm.model, llm.api_key, llm.temperature) == ('ChatOpenAI', 'gpt-4.1-mini', 'sk-test', 0.7)
	# config.json's own key, model, base_url and temperature
	llm = build({'api_key': 'sk-conf', 'model': 'gpt-4o', 'base_url': 'http://127.0.0.1:9/v1', 'temperature': 0.1}, {})
	assert (llm.api_key, llm.model, str(llm.base_url), llm.temperature) == ('sk-conf', 'gpt-4o', 'http://127.0.0.1:9/v1', 0.1)
	assert build({}, {'OPENAI_API_KEY': 'sk', 'OPENAI_BASE_URL': 'http://127.0.0.1:9/v1'}).base_url == 'http://127.0.0.1:9/v1'


def test_model_precedence() -> None:
	env = {'OPENAI_API_KEY': 'sk'}
	assert build({'model': 'from-config'}, env, model='from-call').model == 'from-call'
	assert build({'model': 'from-config'}, {**env, 'BROWSER_USE_LLM_MODEL': 'from-env'}).model == 'from-env'
	assert build({'model': 'from-config'}, env).model == 'from-config'
	assert build({}, env).model == 'gpt-4.1-mini'


def test_a_key_picks_its_provider_and_config_json_model_stays_openais() -> None:
	llm = build(GENERATED, {'ANTHROPIC_API_KEY': 'sk-ant'})
	assert (type(llm).__name__, llm.model, llm.api_key) == ('ChatAnthropic', 'claude-sonnet-4-5', 'sk-ant')
	llm = build(GENERATED, {'GEMINI_API_KEY': 'g-key'})
	assert (type(llm).__name__, llm.model, llm.api_key) == ('ChatGoogle', 'gemini-2.5-flash', 'g-key')
	# OpenAI wins when several keys are present, as upstream would use it
	assert type(build({}, {'OPENAI_API_KEY': 'sk', 'ANTHROPIC_API_KEY': 'a'})).__name__ == 'ChatOpenAI'


def test_named_provider_wins_and_config_json_can_name_one() -> None:
	env = {'OPENAI_API_KEY': 'sk', 'ANTHROPIC_API_KEY': 'sk-ant', 'BROWSER_USE_MCP_LLM_PROVIDER': 'anthropic'}
	assert type(build(GENERATED, env)).__name__ == 'ChatAnthropic'
	# config.json's entry describes the provider it names: its model and key go with it
	conf = {'model_provider': 'anthropic', 'model': 'claude-opus-4-1', 'api_key': 'sk-conf'}
	llm = build(conf, {})
	assert (type(llm).__name__, llm.model, llm.api_key) == ('ChatAnthropic', 'claude-opus-4-1', 'sk-conf')
	# browser-use folds OPENAI_API_KEY into config.json's api_key: never hand it to another provider
	with pytest.raises(LLMNotConfigured, match='ANTHROPIC_API_KEY'):
		build({'model_provider': 'anthropic', 'api_key': 'sk-openai'}, {'OPENAI_API_KEY': 'sk-openai'})


def test_azure_needs_key_and_endpoint() -> None:
	provider, problem = describe({}, {'BROWSER_USE_MCP_LLM_PROVIDER': 'azure', 'AZURE_OPENAI_KEY': 'k'})
	assert provider == 'azure' and problem and 'AZURE_OPENAI_ENDPOINT' in problem and 'AZURE_OPENAI_KEY' not in problem
	env = {
		'AZURE_OPENAI_API_KEY': 'k',
		'AZURE_OPENAI_ENDPOINT': 'https://example.openai.azure.com',
		'AZURE_OPENAI_DEPLOYMENT': 'dep',
		'AZURE_OPENAI_API_VERSION': '2025-01-01-preview',
	}
	llm = build({}, env)
	assert type(llm).__name__ == 'ChatAzureOpenAI'
	assert (llm.api_key, llm.azure_endpoint, llm.azure_deployment, llm.api_version) == (
		'k',
		'https://example.openai.azure.com',
		'dep',
		'2025-01-01-preview',
	)


def test_ollama_and_openai_compatible_need_no_key() -> None:
	llm = build(GENERATED, {'BROWSER_USE_MCP_LLM_PROVIDER': 'ollama', 'OLLAMA_HOST': 'http://127.0.0.1:11434'})
	assert (type(llm).__name__, llm.model, llm.host) == ('ChatOllama', 'llama3.1', 'http://127.0.0.1:11434')
	env = {'BROWSER_USE_MCP_LLM_PROVIDER': 'openai_compatible'}
	assert 'OPENAI_BASE_URL' in (describe({}, env)[1] or '')
	env['BROWSER_USE_MCP_LLM_BASE_URL'] = 'http://127.0.0.1:8000/v1'
	assert 'BROWSER_USE_LLM_MODEL' in (describe(GENERATED, env)[1] or '')  # it serves its own model names
	llm = build(GENERATED, {**env, 'BROWSER_USE_LLM_MODEL': 'qwen2.5'})
	assert (type(llm).__name__, llm.model, llm.base_url, llm.api_key) == (
		'ChatOpenAI',
		'qwen2.5',
		'http://127.0.0.1:8000/v1',
		'not-needed',
	)


def test_bedrock_as_upstream() -> None:
	env = {'MODEL_PROVIDER': 'bedrock', 'MODEL': 'us.anthropic.claude-opus-4-1', 'REGION': 'eu-west-1'}
	assert choose_model('bedrock', GENERATED, env) == 'us.anthropic.claude-opus-4-1'
	assert choose_model('bedrock', GENERATED, {}) == 'us.anthropic.claude-sonnet-4-6'
	if importlib.util.find_spec('boto3') is None:
		with pytest.raises(LLMNotConfigured, match='boto3'):
			build({}, env)
	else:
		llm = build({}, env)
		assert (llm.model, llm.aws_region) == ('us.anthropic.claude-opus-4-1', 'eu-west-1')


def test_unknown_provider() -> None:
	assert 'Unknown LLM provider' in (describe({}, {'MODEL_PROVIDER': 'nope'})[1] or '')


def test_factory_supplies_any_model() -> None:
	env = {'BROWSER_USE_MCP_LLM_FACTORY': 'harness.fakes.scripted_llm:make_llm'}
	assert describe({}, env) == ('factory', None)
	llm = make_llm({}, 'extract', model='m1', env=env)
	assert isinstance(llm, ScriptedChatModel) and (llm.purpose, llm.model) == ('extract', 'm1')
	with pytest.raises(LLMNotConfigured, match='cannot be loaded'):
		make_llm({}, 'agent', env={'BROWSER_USE_MCP_LLM_FACTORY': 'harness.fakes.nothing_here:make'})
	with pytest.raises(LLMNotConfigured, match='cannot be loaded'):
		make_llm({}, 'agent', env={'BROWSER_USE_MCP_LLM_FACTORY': 'harness.fakes.scripted_llm:missing'})
