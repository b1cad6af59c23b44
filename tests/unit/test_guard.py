"""The HTTP guards without a server: log masking, throttled warnings, connection counting,
the new limits' validation. The end-to-end attacks are in tests/e2e/test_hardening.py."""

from __future__ import annotations

import logging

import pytest

from browser_use_mcp import logs
from browser_use_mcp.config import load_config
from browser_use_mcp.guard import FULL, TOO_MANY, ConnectionGuard, QuietRepeats, Throttled


def test_redact_masks_tokens_bearer_values_token_params_and_credential_headers() -> None:
	logs.hide('registered-secret-123')
	text = logs.redact(
		'GET /x?a=1&token=tok-abc HTTP/1.1; Authorization: Bearer bear-xyz; saw registered-secret-123; '
		'{"X-Api-Key": "key-789"}; cookie=sid-456'
	)
	for secret in ('tok-abc', 'bear-xyz', 'registered-secret-123', 'key-789', 'sid-456'):
		assert secret not in text, text
	assert 'token=***' in text and 'a=1' in text


def test_the_filter_masks_arguments_and_tracebacks() -> None:
	record = logging.LogRecord('x', logging.ERROR, __file__, 1, 'sent %s', ('Bearer abc-secret',), None)
	try:
		raise ValueError('Authorization: Bearer in-traceback')
	except ValueError:
		import sys

		record.exc_info = sys.exc_info()
	assert logs.Redact().filter(record)
	assert 'abc-secret' not in record.getMessage()
	assert record.exc_text and 'in-traceback' not in record.exc_text


def test_throttled_logs_once_per_interval_with_a_count(caplog: pytest.LogCaptureFixture) -> None:
	throttle = Throttled(logging.getLogger('throttle-test'), interval=60)
	with caplog.at_level(logging.WARNING, 'throttle-test'):
		for _ in range(1000):
			throttle.note('accept', 'cannot accept')
	assert len(caplog.records) == 1
	throttle._last['accept'] = -1e9  # the interval has passed
	with caplog.at_level(logging.WARNING, 'throttle-test'):
		throttle.note('accept', 'cannot accept')
	assert len(caplog.records) == 2 and '1000 since' in caplog.records[1].getMessage()


def test_uvicorns_per_request_warnings_are_logged_once_per_interval() -> None:
	quiet = QuietRepeats(interval=60)

	def record(msg: str) -> logging.LogRecord:
		return logging.LogRecord('uvicorn.error', logging.WARNING, __file__, 1, msg, None, None)

	passed = [quiet.filter(record('Invalid HTTP request received.')) for _ in range(500)]
	assert passed.count(True) == 1
	assert all(quiet.filter(record('something else')) for _ in range(3))
	quiet._last.clear()  # the interval has passed
	later = record('Invalid HTTP request received.')
	assert quiet.filter(later) and '499 more' in later.getMessage()


def test_connection_guard_counts_in_all_and_per_address() -> None:
	guard = ConnectionGuard(max_connections=3, per_client=2, header_timeout=1)
	assert guard.admit('a') is None and guard.admit('a') is None
	assert guard.admit('a') == TOO_MANY
	assert guard.admit('b') is None
	assert guard.admit('c') == FULL
	guard.release('a')
	assert guard.admit('c') is None
	for host in ('a', 'b', 'c'):
		guard.release(host)
	assert guard.open == 0 and not guard.by_host


@pytest.mark.parametrize(
	('variable', 'value'),
	[
		('HEADER_TIMEOUT', '0'),
		('KEEP_ALIVE_TIMEOUT', '-1'),
		('MAX_CONNECTIONS', '0'),
		('MAX_CONNECTIONS_PER_CLIENT', '-1'),
		('MAX_REQUEST_BODY', '10'),
		('MAX_TRANSPORT_SESSIONS', '0'),
		('TRANSPORT_SESSION_IDLE', '0'),
	],
)
def test_bad_limits_stop_the_server_at_start(variable: str, value: str) -> None:
	with pytest.raises(SystemExit, match='Invalid configuration'):
		load_config({f'BROWSER_USE_MCP_{variable}': value}, browser_use=False)


def test_limits_come_from_flags_and_environment() -> None:
	config = load_config(
		{'BROWSER_USE_MCP_MAX_CONNECTIONS': '50', 'BROWSER_USE_MCP_TRANSPORT_SESSION_IDLE': '60'},
		browser_use=False,
		max_transport_sessions=7,
	)
	assert (config.max_connections, config.transport_session_idle, config.max_transport_sessions) == (50, 60.0, 7)
	assert (config.header_timeout, config.max_connections_per_client) == (10.0, 100)
