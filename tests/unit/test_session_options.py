"""Session options without a browser: what is refused up front (and why), what reaches the
provider, what a listing shows. Seen from real pages in tests/e2e/test_session_options.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from browser_use_mcp.browser import Owner
from browser_use_mcp.catalog import Catalog
from browser_use_mcp.errors import InvalidArgument
from browser_use_mcp.providers.grid import GridProvider
from browser_use_mcp.providers.process import ProcessProvider
from browser_use_mcp.providers.shared import SharedProvider
from browser_use_mcp.session_options import SessionOptions, operator_proxy
from browser_use_mcp.sessions import SessionState
from browser_use_mcp.tools.base import Call
from tests.unit.test_sessions import fake  # noqa: F401 - the fixture

SECRET = 'pa55-word'
PROXY = {'server': 'http://127.0.0.1:3128', 'username': 'me', 'password': SECRET}


def process(user_args: tuple[str, ...] = (), **profile: Any) -> ProcessProvider:
	return ProcessProvider(None, owner=Owner.current(), profile_base=profile, headless=True, user_args=user_args)


@pytest.fixture(autouse=True)
def no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
	for name in ('all_proxy', 'http_proxy', 'https_proxy'):
		monkeypatch.delenv(name, raising=False)
		monkeypatch.delenv(name.upper(), raising=False)


def test_the_operators_proxy_is_found_where_chromium_would_take_it(monkeypatch: pytest.MonkeyPatch) -> None:
	assert operator_proxy((), {}) is None
	assert operator_proxy(('--headless', '--lang=de'), {'proxy': None}) is None
	assert '--proxy-server' in (operator_proxy(('--proxy-server=http://127.0.0.1:9',), {}) or '')
	assert '--proxy-pac-url' in (operator_proxy(('--proxy-pac-url=http://x/p.pac',), {}) or '')
	assert 'profile' in (operator_proxy((), {'proxy': {'server': 'http://corp:8080'}}) or '')
	monkeypatch.setenv('HTTPS_PROXY', 'http://corp:8080')
	assert 'HTTPS_PROXY' in (operator_proxy((), {}) or '')


@pytest.mark.parametrize(
	'provider',
	[
		process(('--proxy-server=http://127.0.0.1:9',)),
		process(proxy={'server': 'http://corp:8080'}),
		SharedProvider(process(('--proxy-server=http://127.0.0.1:9',)), new_dirs=lambda: None),  # type: ignore[arg-type, return-value]
	],
	ids=['flag', 'profile', 'shared'],
)
def test_a_session_proxy_is_refused_under_the_operators_proxy(provider: Any) -> None:
	options = SessionOptions(proxy=PROXY)
	with pytest.raises(InvalidArgument, match='operator routes all browser traffic through their own proxy') as caught:
		provider.check_options(options)
	assert SECRET not in str(caught.value)
	provider.check_options(SessionOptions(timezone='UTC'))  # the other options are fine


def test_without_an_operator_proxy_a_session_proxy_is_accepted() -> None:
	process().check_options(SessionOptions(proxy=PROXY))


def test_a_grid_session_cannot_take_a_proxy_but_takes_the_rest() -> None:
	grid = GridProvider('http://127.0.0.1:1', capabilities={}, profile_base={}, headless=True)
	with pytest.raises(InvalidArgument, match='proxy: a Selenium Grid node'):
		grid.check_options(SessionOptions(proxy={'server': 'http://127.0.0.1:3128'}))
	grid.check_options(SessionOptions(timezone='UTC', user_agent='x', viewport={'width': 800, 'height': 600}))


def test_allowed_domains_only_narrow_the_servers_list() -> None:
	narrowed = process(allowed_domains=['*.example.com'])
	assert narrowed.allowed_domains(SessionOptions(allowed_domains=['app.example.com'])) == [
		'http://app.example.com/',
		'https://app.example.com/',
	]
	with pytest.raises(InvalidArgument, match='allowed_domains'):
		narrowed.check_options(SessionOptions(allowed_domains=['evil.com']))
	prohibited = process(prohibited_domains=['evil.com'])
	with pytest.raises(InvalidArgument, match='prohibits'):
		prohibited.check_options(SessionOptions(allowed_domains=['evil.com']))
	assert process().allowed_domains(SessionOptions(allowed_domains=['127.0.0.1'])) == ['127.0.0.1']
	assert process().allowed_domains(SessionOptions(timezone='UTC')) is None


def test_the_profile_carries_what_browser_use_applies_itself(tmp_path: Any) -> None:
	from browser_use_mcp.browser import StateDir

	dirs = StateDir(tmp_path, Owner.current()).new_session_dirs('local', 's')
	options = SessionOptions(
		viewport={'width': 390, 'height': 700},
		device_scale_factor=3,
		user_agent='UA/1',
		geolocation={'latitude': 1, 'longitude': 2},
		proxy={**PROXY, 'bypass': '*.internal'},
		allowed_domains=['127.0.0.1'],
	)
	profile = process().profile(dirs, options)
	assert (profile.viewport.width, profile.viewport.height, profile.device_scale_factor) == (390, 700, 3)
	assert 'geolocation' in profile.permissions
	assert profile.allowed_domains == ['127.0.0.1']
	args = profile.get_args()
	assert '--proxy-server=http://127.0.0.1:3128' in args and '--proxy-bypass-list=*.internal' in args
	assert '--user-agent=UA/1' in args
	assert not any(SECRET in a for a in args), 'credentials never go on a command line'
	plain = process().profile(dirs)
	assert 'geolocation' not in plain.permissions and plain.proxy is None and not plain.allowed_domains


async def test_options_reach_the_provider_only_for_a_new_session(fake: Any) -> None:  # noqa: F811
	registry, provider = await fake()
	options = SessionOptions(timezone='Asia/Tokyo', proxy=PROXY)
	state, created = await registry.create('local', 'made', options)
	assert created and state.options is options and provider.options == [options]
	with pytest.raises(InvalidArgument, match='already open'):
		await registry.create('local', 'made', SessionOptions(timezone='UTC'))
	again, created = await registry.create('local', 'made')
	assert again is state and not created

	lazy, _ = await registry.run('local', 'lazy', _state)
	assert lazy.options is None and provider.options[-1] is None
	assert (await registry.create('local', 'empty', SessionOptions()))[0].options is None, 'empty options: defaults'


async def test_a_refused_option_makes_nothing(fake: Any, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
	registry, provider = await fake()
	monkeypatch.setenv('HTTP_PROXY', 'http://corp:8080')
	with pytest.raises(InvalidArgument, match='HTTP_PROXY'):
		await registry.create('local', 'x', SessionOptions(proxy={'server': 'http://127.0.0.1:1'}))
	assert provider.opened == 0 and registry.count == 0
	assert not list(registry.runtime.state_dir.path.glob('s-*'))


async def test_listings_show_the_options_with_the_credentials_redacted(fake: Any) -> None:  # noqa: F811
	registry, _ = await fake()
	catalog = Catalog(registry)
	call = Call()
	headers = {'Authorization': f'Bearer {SECRET}', 'X-Api-Key': 'key-' + SECRET}
	args = {'session_id': 'p', 'proxy': PROXY, 'locale': 'de-DE', 'extra_http_headers': headers}
	created = await catalog.call('browser_create_session', args, call)
	shown = {
		'proxy': {'server': PROXY['server'], 'credentials': 'redacted'},
		'locale': 'de-DE',
		'extra_http_headers': {'Authorization': 'redacted', 'X-Api-Key': 'redacted'},
	}
	assert created.structured is not None and created.structured['options'] == shown
	listing = await catalog.call('browser_list_sessions', {}, call)
	assert listing.structured is not None and listing.structured['sessions'][0]['options'] == shown
	for text in (created.text, listing.text, json.dumps(listing.structured), repr(registry.sessions()[0].options)):
		assert SECRET not in text and "'me'" not in text


async def _state(state: SessionState) -> SessionState:
	return state


@pytest.mark.parametrize('tool', ['browser_create_session', 'retry_with_browser_use_agent'])
def test_allowed_domains_are_bounded_in_length_and_number(tool: str) -> None:
	"""Found by fuzzing: a 100,000-character pattern was taken (the session's and the agent's)."""
	from browser_use_mcp.domains import MAX_PATTERN_LENGTH, MAX_PATTERNS
	from browser_use_mcp.tools import admin, agent

	assert (MAX_PATTERN_LENGTH, MAX_PATTERNS) == (300, 99)
	handler = admin.browser_create_session if tool == 'browser_create_session' else agent.retry_with_browser_use_agent
	base = {} if tool == 'browser_create_session' else {'task': 'x'}
	longest = 'https://' + 'a' * 63 + '.' + 'b' * 63 + '.' + 'c' * 63 + '.' + 'd' * 57 + '.com:65535/app'
	assert len(longest) <= MAX_PATTERN_LENGTH  # a 253-character host, a scheme, a port and a path
	fits = handler.parse({**base, 'allowed_domains': [longest, *(f'*.site{n}.example' for n in range(MAX_PATTERNS - 1))]})
	assert len(fits.allowed_domains) == MAX_PATTERNS
	for domains, words in [
		(['x' * 100_000], ['allowed_domains', 'at most 300 characters', '100,000', '"*.example.com"']),
		(['a.com', 'b' * 301], ['at most 300 characters', '301']),
		([f'site{n}.example' for n in range(MAX_PATTERNS + 1)], ['allowed_domains', 'at most 99 patterns', 'not 100']),
	]:
		with pytest.raises(InvalidArgument) as refused:
			handler.parse({**base, 'allowed_domains': domains})
		text = str(refused.value)
		assert len(text) < 1_000, 'the pattern is not echoed whole'
		for word in words:
			assert word in text, (word, text)
