"""Storage states without a browser: names, origins, the shape's errors, where named states live."""

from __future__ import annotations

from pathlib import Path

import pytest

from browser_use_mcp.browser import Owner, StateDir
from browser_use_mcp.errors import InvalidArgument
from browser_use_mcp.storage import _write, canonical_origin, check_name, load_named, parse_state


@pytest.mark.parametrize('name', ['login.json', 'a.json', 'Team_1-state.v2.json', 'x' * 100 + '.json'])
def test_plain_json_names_are_accepted(name: str) -> None:
	assert check_name(name, 'path') == name


@pytest.mark.parametrize(
	'name',
	[
		'',
		'.json',
		'..',
		'../x.json',
		'/etc/passwd',
		'a/b.json',
		'a\\b.json',
		'x.txt',
		'.hidden.json',
		'a..json',
		'x' * 101 + '.json',
		'ü.json',
		'a.json\n',
	],
)
def test_anything_else_is_refused_naming_the_field(name: str) -> None:
	with pytest.raises(InvalidArgument, match=r'^path .* is not allowed: give a plain file name ending in \.json'):
		check_name(name, 'path')


@pytest.mark.parametrize(
	('url', 'origin'),
	[
		('http://127.0.0.1:8000/a?b', 'http://127.0.0.1:8000'),
		('HTTPS://Example.COM:443/', 'https://example.com'),
		('http://example.com:80', 'http://example.com'),
		('http://[::1]:9/', 'http://[::1]:9'),
		('about:blank', None),
		('file:///etc/passwd', None),
		('http://host:99999/', None),
	],
)
def test_origins_are_what_location_origin_says(url: str, origin: str | None) -> None:
	assert canonical_origin(url) == origin


def test_errors_name_the_entry_and_give_the_shape() -> None:
	with pytest.raises(InvalidArgument) as caught:
		parse_state({'cookies': [{'name': 'a', 'value': 'b', 'domain': 'h'}, {'value': 'v', 'domain': 'h', 'path': 'no-slash'}]})
	message = caught.value.message
	assert 'storage_state.cookies[1].name: Field required' in message and 'storage_state.cookies[1].path' in message
	assert '"origins": [{"origin"' in message, 'the expected shape is given'
	assert 'storage_state.cookies[0]' not in message, 'a good entry is not blamed'


def test_an_error_never_repeats_a_cookie_value() -> None:
	with pytest.raises(InvalidArgument) as caught:
		parse_state({'cookies': [{'name': 'a', 'value': 'hunter2' * 2000, 'domain': 'h'}]})
	assert 'hunter2' not in caught.value.message


def test_named_states_are_per_principal(tmp_path: Path) -> None:
	state_dir = StateDir(tmp_path / 'state', Owner.current())
	alpha, beta = state_dir.saved_states('alpha'), state_dir.saved_states('beta')
	assert alpha != beta and alpha.parent == beta.parent and state_dir.path in alpha.parents
	_write(alpha, 'login.json', '{"cookies": [], "origins": []}')
	assert load_named(alpha, 'login.json').cookies == []
	with pytest.raises(InvalidArgument, match="no saved state named 'login.json'"):
		load_named(beta, 'login.json')
	assert (alpha / 'login.json').stat().st_mode & 0o077 == 0, 'readable by the server user only'
	state_dir.remove()
