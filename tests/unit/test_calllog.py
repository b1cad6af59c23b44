"""The per-session call log the dashboard shows: short, newest kept, secrets never shown."""

from __future__ import annotations

from browser_use_mcp.calllog import RECENT_CALLS, REDACTED, CallLog, summarize


def test_secret_arguments_are_redacted_by_name_at_any_depth() -> None:
	text = summarize(
		{
			'url': 'https://ada:s3cret-pass@example.test/login',
			'password': 'hunter2',
			'api_key': 'sk-live-123',
			'options': {'proxy': {'server': 'http://p', 'password': 'pw'}, 'cookies': [{'value': 'abc'}], 'depth': 1},
			'session_id': 'not-shown',
		}
	)
	for secret in ('s3cret-pass', 'hunter2', 'sk-live-123', 'abc', 'pw'):
		assert secret not in text
	assert 'password=***' in text and 'api_key=***' in text and f'https://{REDACTED}@example.test' in text
	assert 'session_id' not in text and 'depth: 1' in text


def test_userinfo_is_redacted_in_any_scheme_and_after_a_long_run_of_letters() -> None:
	text = summarize({'a': 'x' * 100_000 + ' ws://u:p1@h', 'b': 'git+ssh://me:p2@host/x', 'c': 'a://b://c:p3@d'})
	assert not any(secret in text for secret in ('p1', 'p2', 'p3')), text
	assert f'git+ssh://{REDACTED}@host/x' in text


def test_long_values_and_summaries_are_cut_short() -> None:
	text = summarize({'expression': 'x' * 500, 'text': 'line one\nline two'})
	assert len(text) <= 160 and '…' in text and '\n' not in text


def test_the_log_keeps_the_newest_calls_and_the_one_in_flight() -> None:
	log = CallLog()
	for i in range(RECENT_CALLS + 5):
		record = log.begin('browser_navigate', {'url': f'http://127.0.0.1/{i}'})
		assert log.current is record
		log.end(record, None if i % 2 else 'ElementNotFound: no element 3\nsecond line')
	assert log.current is None and len(log.recent) == RECENT_CALLS
	assert log.recent[0].args == "url='http://127.0.0.1/5'", 'the oldest five are gone'
	newest = log.recent[-1].as_json()  # call 24: an error
	assert newest['args'] == f"url='http://127.0.0.1/{RECENT_CALLS + 4}'" and newest['duration_ms'] is not None
	assert newest['ok'] is False and newest['error'] == 'ElementNotFound: no element 3'
	assert log.recent[-2].as_json()['ok'] is True


def test_header_values_are_redacted_and_their_names_kept() -> None:
	text = summarize({'extra_http_headers': {'Authorization': 'Bearer tok-1', 'X-Api-Key': 'key-2', 'X-Test': 'plain-3'}})
	assert 'Authorization' in text and 'X-Api-Key' in text and 'X-Test' in text
	assert not any(value in text for value in ('tok-1', 'key-2', 'plain-3')), text
