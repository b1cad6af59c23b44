"""The allowed_domains arithmetic of one agent run (browser_use_mcp/domains.py), without a browser.

The same policy through the real server and the real agent: tests/test_agent.py.
"""

from __future__ import annotations

import pytest

from browser_use_mcp.domains import harden, run_domains
from browser_use_mcp.errors import InvalidArgument


def test_empty_or_omitted_keeps_the_configured_list() -> None:
	assert run_domains(['example.com'], None) is None
	assert run_domains(['example.com'], []) is None
	assert run_domains(['example.com'], ['', '  ']) is None
	assert run_domains(None, None) is None


def test_without_a_configured_list_the_request_is_used() -> None:
	assert run_domains(None, ['a.com', 'https://B.com']) == ['a.com', 'https://b.com/']
	assert run_domains([], ['*.a.com']) == ['*.a.com']


def test_with_a_configured_list_only_the_overlap_is_kept() -> None:
	configured = ['example.com', '*.corp.net', 'https://app.io/']
	assert run_domains(configured, ['example.com']) == ['example.com']
	assert run_domains(configured, ['www.example.com']) == ['www.example.com']
	assert run_domains(configured, ['https://example.com/login']) == ['https://example.com/login']
	assert run_domains(configured, ['*.corp.net', 'evil.com']) == ['*.corp.net']
	assert run_domains(configured, ['*.hr.corp.net']) == ['*.hr.corp.net']
	# a bare host under "*.d" may use any scheme, "*.d" only http(s): the run gets the http(s) part
	assert run_domains(configured, ['hr.corp.net']) == ['http://hr.corp.net/', 'https://hr.corp.net/']
	assert run_domains(configured, ['https://app.io/admin']) == ['https://app.io/admin']
	# a wider request keeps the configured entries it covers
	assert run_domains(configured, ['*']) == configured
	assert run_domains(['a.example.com', 'b.other.com'], ['*.example.com']) == ['http://a.example.com/', 'https://a.example.com/']
	assert run_domains(['*.example.com', 'b.other.com'], ['*.a.example.com']) == ['*.a.example.com']
	with pytest.raises(InvalidArgument, match='allow-list'):
		run_domains(configured, ['evil.com', '*.other.org'])


def test_url_prefixes_cannot_smuggle_another_host() -> None:
	# "https://example.com" as a bare prefix also matches https://example.com@evil.com/
	assert harden('https://example.com') == 'https://example.com/'
	with pytest.raises(InvalidArgument):
		run_domains(['example.com'], ['*.evil.com', 'https://evil.com'])
	assert run_domains(['https://example.com'], ['https://example.com/a']) == ['https://example.com/a']
	# a configured bare prefix is not "covered" by a host pattern: its host is not pinned
	with pytest.raises(InvalidArgument):
		run_domains(['https://example.com'], ['example.com'])


def test_prohibited_domains_stay_prohibited() -> None:
	# browser-use skips prohibited_domains once an allow-list is set: a request must steer clear of them
	prohibited = ['evil.com', '*.tracker.net']
	assert run_domains(None, ['good.org', '*.shop.io'], prohibited) == ['good.org', '*.shop.io']
	assert run_domains(None, ['good.org', 'www.evil.com', 'a.tracker.net', '*.net', '*'], prohibited) == ['good.org']
	with pytest.raises(InvalidArgument, match='prohibits'):
		run_domains(None, ['evil.com'], prohibited)
	with pytest.raises(InvalidArgument, match='prohibits'):
		run_domains(None, ['https://evil.com'], {f'x{i}.com' for i in range(99)} | {'www.evil.com'})


def test_a_large_configured_set_is_matched_as_exact_hosts() -> None:
	configured = {f'site{i}.com' for i in range(120)}
	assert run_domains(configured, ['site7.com', 'evil.com']) == ['site7.com']
	assert run_domains(configured, ['https://www.site7.com/x']) == ['https://www.site7.com/x']
	with pytest.raises(InvalidArgument):
		run_domains(configured, ['*.com'])
