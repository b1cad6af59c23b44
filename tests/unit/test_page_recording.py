"""The page recorder without a browser: redaction, truncation, the bounded buffers, redirects, and one
CDP session heard per tab (the browser end is tests/e2e/test_console_network.py)."""

from __future__ import annotations

import asyncio
from typing import Any

from browser_use_mcp.tools import debug


class Tabs:
	"""browser-use's session manager, as far as the recorder asks it: two CDP sessions on tab T1."""

	def get_target_id_from_session_id(self, session_id: str) -> str | None:
		return {'s1': 'TARGET-T1', 's1b': 'TARGET-T1', 's2': 'TARGET-T2'}.get(session_id)


def recorder(**caps: int) -> debug.Recorder:
	rec = debug.Recorder(**caps)
	rec.tabs = Tabs()
	return rec


def sent(rec: debug.Recorder, rid: str, url: str, session: str = 's1', t: float = 1.0, **more: Any) -> None:
	params = {'requestId': rid, 'request': {'method': 'GET', 'url': url}, 'type': 'Fetch', 'timestamp': t, 'wallTime': 1e9}
	rec.on_request({**params, **more}, session)


def test_secrets_in_urls_are_redacted() -> None:
	assert debug.redact('https://bob:hunter2@example.test/a') == 'https://***@example.test/a'
	assert debug.redact('/x?access_token=abc&page=2#id_token=z') == '/x?access_token=***&page=2#id_token=***'
	assert debug.redact('/x?api_key=1&sig=2&code=3&q=ok') == '/x?api_key=***&sig=***&code=***&q=ok'
	assert debug.redact('see https://a.test/?token=t1 and /b?Password=p') == 'see https://a.test/?token=*** and /b?Password=***'


def test_console_texts_are_cut_and_levels_mapped() -> None:
	rec = recorder()
	rec.on_console({'type': 'warning', 'args': [{'type': 'string', 'value': 'x' * 5000}], 'timestamp': 1e12}, 's1')
	rec.on_console({'type': 'log', 'args': [{'type': 'number', 'value': 1}, {'type': 'object', 'description': 'Object'}]}, 's2')
	rec.on_log({'entry': {'level': 'verbose', 'text': 'v', 'url': 'https://u:p@a.test/', 'lineNumber': 4}}, 's1')
	long, two, verbose = rec.console
	assert long.level == 'warning' and len(long.text) == debug.TEXT_LIMIT and long.text.endswith('…') and long.tab == 'T-T1'
	assert two.text == '1 Object' and two.tab == 'T-T2'
	assert verbose.level == 'debug' and verbose.source == 'https://***@a.test/:5'


def test_buffers_drop_the_oldest_and_count_them() -> None:
	rec = recorder(console_cap=3, network_cap=2)
	for i in range(5):
		rec.on_console({'type': 'log', 'args': [{'type': 'string', 'value': f'm{i}'}]}, 's1')
		sent(rec, f'r{i}', f'/r{i}')
	assert [m.text for m in rec.console] == ['m2', 'm3', 'm4'] and rec.console_dropped == 2
	assert [r.url for r in rec.requests] == ['/r3', '/r4'] and rec.requests_dropped == 3
	assert set(rec.pending) == {('s1', 'r3'), ('s1', 'r4')}, 'dropped requests are not kept waiting for their end'
	rec.on_finished({'requestId': 'r0', 'timestamp': 2.0}, 's1')  # a dropped one ends: nothing to update
	assert rec.requests_dropped == 3


def test_a_request_is_followed_to_its_end_and_through_redirects() -> None:
	rec = recorder()
	sent(rec, 'a', '/old')
	sent(rec, 'a', '/new', t=1.5, redirectResponse={'status': 302})
	rec.on_response({'requestId': 'a', 'response': {'status': 200}, 'type': 'Document'}, 's1')
	rec.on_finished({'requestId': 'a', 'timestamp': 1.75, 'encodedDataLength': 1234}, 's1')
	sent(rec, 'b', '/gone', t=2.0)
	rec.on_failed({'requestId': 'b', 'timestamp': 2.01, 'errorText': 'net::ERR_ABORTED', 'canceled': True}, 's1')
	old, new, gone = rec.requests
	assert (old.status, old.duration_ms, old.size) == (302, 500, None)
	assert (new.status, new.duration_ms, new.size, new.resource_type) == (200, 250, 1234, 'Document')
	assert gone.failure == 'net::ERR_ABORTED (canceled)' and gone.status is None and gone.duration_ms == 10
	assert not rec.pending


def test_one_cdp_session_is_heard_per_tab_and_domain() -> None:
	rec = recorder()
	assert rec.heard('Network', 's1') and not rec.heard('Network', 's1b') and rec.heard('Runtime', 's1b')
	assert rec.heard('Network', 's2')
	rec.on_detached({'sessionId': 's1'}, None)
	assert rec.heard('Network', 's1b'), 'once the session heard detaches, another of the tab is'


class _Root:
	"""The root CDP client as the recorder uses it: cdp-use's own event registry, commands answered empty."""

	def __init__(self) -> None:
		from cdp_use.cdp.registry import EventRegistry

		self._event_registry = EventRegistry()
		self.sent: list[tuple[str, str | None]] = []

	async def send_raw(self, method: str, params: Any = None, session_id: str | None = None) -> dict[str, Any]:
		self.sent.append((method, session_id))
		return {}


class _NotYet:
	"""browser-use's session manager before it has registered a new popup's CDP session."""

	def get_target_id_from_session_id(self, session_id: str) -> str | None:
		return None

	def get_all_page_targets(self) -> list[Any]:
		return []


class _Session:
	def __init__(self) -> None:
		self._cdp_client_root = _Root()
		self.session_manager = _NotYet()


class _State:
	def __init__(self) -> None:
		self.browser_session = _Session()


async def test_a_popups_first_message_names_its_tab_before_browser_use_knows_the_session() -> None:
	"""The race tests/e2e/test_console_network.py's popup test lost once: the popup's first console
	message arrived before browser-use's session manager had its CDP session, and had no tab."""
	state = _State()
	debug.watch(state)  # type: ignore[arg-type]
	root = state.browser_session._cdp_client_root
	attached = {'sessionId': 'POP-SESSION', 'targetInfo': {'targetId': 'TARGET-POPUP-AB12', 'type': 'page'}}
	await root._event_registry.handle_event('Target.attachedToTarget', attached, None)
	message = {'type': 'log', 'args': [{'type': 'string', 'value': 'hello pop'}]}
	await root._event_registry.handle_event('Runtime.consoleAPICalled', message, 'POP-SESSION')
	(heard,) = debug.recorder(state).console  # type: ignore[arg-type]
	assert heard.text == 'hello pop' and heard.tab == 'AB12'
	for _ in range(100):  # the domains are enabled on the popup in the background
		if root.sent:
			break
		await asyncio.sleep(0.01)
	assert ('Runtime.enable', 'POP-SESSION') in root.sent
	await root._event_registry.handle_event('Target.detachedFromTarget', {'sessionId': 'POP-SESSION'}, None)
	assert 'POP-SESSION' not in debug.recorder(state).attached  # type: ignore[arg-type]
