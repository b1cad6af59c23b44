"""Small helpers the tool handlers share: dispatching browser-use events and finding things."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from browser_use_mcp.errors import BrowserActionFailed, ElementNotFound, InvalidArgument, TabNotFound
from browser_use_mcp.patches import internals

if TYPE_CHECKING:
	from browser_use_mcp.sessions import SessionState

logger = logging.getLogger('browser_use_mcp.tools')


def _first_line(exc: BaseException) -> str:
	text = str(exc).strip() or type(exc).__name__
	text = text.splitlines()[0][:500]
	for prefix in ('Navigation failed: ', 'Failed: '):
		text = text.removeprefix(prefix)
	return text


async def dispatch(state: SessionState, event: Any, action: str) -> Any:
	"""Dispatch a browser-use event on the session's bus; raise its handler error, if any."""
	bus = state.browser_session.event_bus
	done = await bus.dispatch(event)
	try:
		return await done.event_result(raise_if_any=True, raise_if_none=False)
	except asyncio.CancelledError:
		raise
	except Exception as exc:
		raise BrowserActionFailed(f'{action} failed: {_first_line(exc)}') from exc


def check_allowed(state: SessionState, url: str) -> None:
	"""Refuse a URL the profile's allowed/prohibited domains forbid before the browser sends
	anything: browser-use's own check runs only after the request has gone out. Fails closed:
	with domains restricted, a URL that cannot be checked is refused too."""
	if url.startswith(('about:', 'data:')):
		return
	try:
		allowed = internals.url_allowed(state.browser_session, url)
	except internals.Unavailable as exc:
		raise BrowserActionFailed(
			f'Refused to open {url[:200]}: this server restricts which sites its browsers may visit (allowed_domains/'
			f'prohibited_domains), but cannot check this URL against those settings ({str(exc)[:300]}), so nothing was '
			'sent. This is a server problem, not a bad URL: its operator can run `browser-use-mcp doctor` for the cause.'
		) from None
	if not allowed:
		raise InvalidArgument(
			f"{url[:200]} is not allowed by this server's allowed_domains/prohibited_domains settings; "
			'navigate to an allowed site instead.'
		)


async def open_url(state: SessionState, url: str, new_tab: bool, action: str) -> None:
	"""Every navigation a tool starts: refused up front when the configured domains forbid it."""
	from browser_use.browser.events import NavigateToUrlEvent

	check_allowed(state, url)
	await dispatch(state, NavigateToUrlEvent(url=url, new_tab=new_tab), action)


async def element(state: SessionState, index: int) -> Any:
	node = await state.browser_session.get_dom_element_by_index(index)
	if node is None:
		bs = state.browser_session
		known = internals.selector_indices(bs)
		captured = internals.has_cached_state(bs)
		if known:
			hint = f' Valid indices now: {known[0]}-{known[-1]}.'
		elif known is None or captured is None:
			hint = ''  # browser-use's caches cannot be read here
		elif captured:
			hint = ' The last state had no interactive elements.'
		else:
			hint = ' No state has been captured yet.'
		raise ElementNotFound(
			f'Element with index {index} not found in the last browser_get_state of this session.{hint} '
			'Call browser_get_state to refresh the element indices, then retry with an index from it.'
		)
	return node


async def cdp_page(state: SessionState) -> Any:
	"""The CDP session of the focused tab."""
	return await state.browser_session.get_or_create_cdp_session(target_id=None, focus=False)


async def evaluate(state: SessionState, expression: str, *, await_promise: bool = False, timeout: float = 15.0) -> Any:
	"""Evaluate JS in the focused tab; return its JSON value or raise with the JS error."""
	cdp = await cdp_page(state)
	params: dict[str, Any] = {'expression': expression, 'returnByValue': True, 'awaitPromise': await_promise}
	try:
		result = await asyncio.wait_for(cdp.cdp_client.send.Runtime.evaluate(params=params, session_id=cdp.session_id), timeout)
	except TimeoutError:
		try:
			await cdp.cdp_client.send.Runtime.terminateExecution(session_id=cdp.session_id)
		except Exception as exc:  # the script may still be running: the next call in this tab would wait on it
			logger.warning('could not stop an expression that ran past %.0f s: %s', timeout, _first_line(exc))
		raise BrowserActionFailed(
			f'The expression did not finish within {timeout:.0f} s and was stopped. Avoid long-running loops or '
			'unresolved promises.'
		) from None
	details = result.get('exceptionDetails')
	if details:
		exc = details.get('exception') or {}
		message = exc.get('description') or details.get('text') or 'JavaScript exception'
		raise BrowserActionFailed(f'JavaScript error: {message.splitlines()[0][:500]}')
	value = result.get('result', {})
	if value.get('type') == 'undefined':
		return None
	return value.get('value')


async def page_titles(state: SessionState) -> dict[str, str]:
	"""The browser's open pages, as document title by target id; raises when the browser cannot be asked."""
	targets = await state.browser_session.cdp_client.send.Target.getTargets()
	return {t['targetId']: t.get('title', '') for t in targets.get('targetInfos', []) if t.get('type') == 'page'}


async def tab_titles(state: SessionState) -> dict[str, str]:
	"""Real document titles by target id (browser-use's cache often holds the host instead); empty,
	with a warning in the log, when the browser cannot be asked: callers then use browser-use's."""
	try:
		return await page_titles(state)
	except Exception as exc:
		logger.warning("could not read the tabs' titles from the browser (%s); using browser-use's", _first_line(exc))
		return {}


async def list_tabs(state: SessionState) -> list[dict[str, str]]:
	tabs = await state.browser_session.get_tabs()
	titles = await tab_titles(state)
	out = []
	for tab in tabs:
		if titles and tab.target_id not in titles:
			continue  # closed in the browser; browser-use has not processed the detach yet
		title = titles.get(tab.target_id, tab.title or '')
		if title == tab.url:  # Chromium shows the URL while a page has no <title>
			title = tab.title or ''
		out.append({'tab_id': tab.target_id[-4:], 'url': tab.url, 'title': title, '_target_id': tab.target_id})
	return out


async def resolve_tab(state: SessionState, tab_id: str) -> str:
	tabs = await list_tabs(state)
	matches = [t['_target_id'] for t in tabs if t['_target_id'].endswith(tab_id)]
	if len(matches) == 1:
		return matches[0]
	available = ', '.join(f'{t["tab_id"]} ({t["url"]})' for t in tabs) or 'none'
	if not matches:
		raise TabNotFound(
			f'No tab with id {tab_id!r} in this session. Open tabs: {available}. Call browser_list_tabs for the current ids.'
		)
	raise TabNotFound(f'Tab id {tab_id!r} is ambiguous in this session. Open tabs: {available}. Use the 4-character id.')


def public_tabs(tabs: list[dict[str, str]]) -> list[dict[str, str]]:
	return [{k: v for k, v in t.items() if not k.startswith('_')} for t in tabs]


async def current_url(state: SessionState) -> str:
	return await state.browser_session.get_current_page_url()


async def viewport_size(state: SessionState) -> tuple[int, int]:
	"""The focused tab's viewport in CSS pixels, (0, 0) when it cannot be read."""
	try:
		cdp = await cdp_page(state)
		metrics = await cdp.cdp_client.send.Page.getLayoutMetrics(session_id=cdp.session_id)
	except Exception as exc:  # e.g. the page is between documents; callers do without
		logger.info('could not read the viewport size: %s', _first_line(exc))
		return 0, 0
	viewport = metrics.get('cssLayoutViewport') or {}
	return int(viewport.get('clientWidth') or 0), int(viewport.get('clientHeight') or 0)


async def current_title(state: SessionState) -> str | None:
	"""The focused page's document.title, read from the page itself (target info can lag)."""
	try:
		title = await evaluate(state, 'document.title', timeout=5)
	except Exception as exc:  # e.g. the page is between documents; callers use the target's title
		logger.info('could not read the page title: %s', _first_line(exc))
		return None
	return title if isinstance(title, str) else None
