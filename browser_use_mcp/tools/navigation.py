"""Moving around: navigate, go back, scroll."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from pathlib import PurePosixPath
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

from pydantic import Field

from browser_use_mcp.egress import BLOCK_TITLE
from browser_use_mcp.errors import ActionTimedOut, BrowserActionFailed, InvalidArgument
from browser_use_mcp.patches import internals
from browser_use_mcp.sessions import SessionState
from browser_use_mcp.tools.actions import call_on
from browser_use_mcp.tools.base import Args, Call, IncludeState, tool
from browser_use_mcp.tools.common import (
	check_browser_page,
	current_title,
	current_url,
	dispatch,
	element,
	open_url,
	saved_download,
	shown_url,
)

logger = logging.getLogger(__name__)

SCHEMES = ('http', 'https', 'data', 'about', 'chrome', 'blob')  # file: is refused before (urls.local_file)


def _suggestion(url: str) -> str:
	"""What the caller probably meant: https:// before a bare host (example.com/x, //host/, host:8080),
	else an example."""
	text = url.strip()
	rest = text.lstrip('/')
	host = rest.split('/', 1)[0]
	bare = bool(host) and not any(c.isspace() for c in text) and not re.match(r'^[A-Za-z][A-Za-z0-9+.-]*:(?!\d)', rest)
	if bare and ('.' in host or host.split(':', 1)[0] == 'localhost' or host.startswith('[')):
		return f'https://{rest[:200]}'
	return 'https://example.com'


def _bad_host(parsed: Any) -> str | None:
	"""Why an http(s) URL's host or port cannot be opened, or None."""
	try:
		parsed.port  # noqa: B018 - raises for a port out of range
	except ValueError:
		return 'its port is not a number from 1 to 65535'
	host = parsed.hostname or ''
	if re.fullmatch(r'[0-9.]+', host) and any(int(part) > 255 for part in host.split('.') if part):
		return 'its host is not an IPv4 address (each part is at most 255)'
	return None


def check_url(url: str) -> None:
	"""Refuse what Chromium cannot open, with the fix, instead of a silent error page."""
	parsed = urlsplit(url.strip())
	scheme = parsed.scheme.lower()
	if scheme not in SCHEMES or (scheme in ('http', 'https') and not parsed.netloc):
		script = ' To run script in the page, use browser_evaluate.' if scheme == 'javascript' else ''
		raise InvalidArgument(f'Invalid URL {url[:200]!r}: give an absolute http(s) URL, e.g. {_suggestion(url)}.{script}')
	why = _bad_host(parsed) if scheme in ('http', 'https') else None
	if why is not None:
		raise InvalidArgument(f'Invalid URL {url[:200]!r}: {why}.')


class NavigateArgs(Args):
	url: str = Field(min_length=1, description='The URL to open, e.g. https://example.com.')
	new_tab: bool = Field(False, description='Open the URL in a new tab instead of the current one.')
	include_state: IncludeState = False


@tool('Open a URL', destructive=False, idempotent=False, open_world=True)
async def browser_navigate(state: SessionState, args: NavigateArgs, call: Call) -> str:
	"""Open a URL in the session's browser (current tab, or a new tab with new_tab=true).
	Returns "Navigated to: <url>" once the page has loaded. A URL the browser saves instead of showing
	(an attachment, or a PDF in the headless shell) returns the file's name and size in the session's
	downloads and the page the tab still shows."""
	check_browser_page(state, args.url)  # before the scheme check: chrome-untrusted:// etc. get the right reason
	check_url(args.url)
	door = state.browser.door
	mark = door.serial if door is not None else 0
	with DownloadWatch(state) as downloads:
		try:
			await open_url(state, args.url, args.new_tab, f'Navigation to {args.url}')
		except BrowserActionFailed as exc:
			blocked = await egress_blocked(state, mark, args.url, failed=True)
			if blocked:
				raise BrowserActionFailed(blocked) from exc
			if isinstance(exc, ActionTimedOut):
				raise  # says what happened and what to do
			if 'ERR_ABORTED' not in exc.message:
				raise BrowserActionFailed(
					f'{exc.message}. Check the URL and that the site is reachable from the server.'
				) from exc
			# the page never replaced the current one: not a network failure. A file the browser saves instead
			# of showing (an attachment; a PDF in the headless shell, which has no PDF viewer) is a result.
			if not await downloads.started_within(DOWNLOAD_START_GRACE):
				raise BrowserActionFailed(
					f'{exc.message}: the browser did not show that URL, and no download started. Another navigation may have '
					'replaced it, or the server answered without a page (e.g. 204 No Content). Call browser_get_state to see '
					'what the tab shows.'
				) from exc
			return await downloaded(state, args.url, downloads)
	if not args.new_tab and not downloads.started and await shown_url(state) == '':
		raise BrowserActionFailed(
			f'Navigation to {args.url[:200]} did not happen: the tab is stuck on its page, which does not respond (a '
			'script that never ends), so no new page could replace it. Close that tab with browser_close_tab, or '
			'open the URL in a new tab (new_tab: true).'
		)
	blocked = await egress_blocked(state, mark, args.url)
	if blocked:
		raise BrowserActionFailed(blocked)
	return f'Opened new tab with URL: {args.url}' if args.new_tab else f'Navigated to: {args.url}'


DOWNLOAD_START_GRACE = 3.0  # s after an aborted navigation for Chromium to announce the download it became
DOWNLOAD_BUDGET = 30.0  # s browser_navigate waits for a download it turned into to finish (the tool has 60)


class DownloadWatch:
	"""The downloads that begin and end while one navigation runs, as the session's browser-use
	downloads watchdog reports them (its direct callbacks, called from its CDP handlers). Without a
	readable watchdog it sees nothing, and an aborted navigation stays an error."""

	def __init__(self, state: SessionState) -> None:
		try:
			self.watchdog: Any = internals.downloads_watchdog(state.browser_session)
		except internals.Unavailable:
			self.watchdog = None
		self.started: list[dict[str, Any]] = []
		self.done: dict[str, dict[str, Any]] = {}  # guid -> browser-use's completion info
		self._changed = asyncio.Event()

	def __enter__(self) -> DownloadWatch:
		if self.watchdog is not None:
			with contextlib.suppress(Exception):
				self.watchdog.register_download_callbacks(on_start=self._on_start, on_complete=self._on_complete)
		return self

	def __exit__(self, *exc: object) -> None:
		if self.watchdog is not None:
			with contextlib.suppress(Exception):
				self.watchdog.unregister_download_callbacks(on_start=self._on_start, on_complete=self._on_complete)

	def _on_start(self, info: dict[str, Any]) -> None:
		if isinstance(info, dict) and not info.get('auto_download'):
			self.started.append(info)
			self._changed.set()

	def _on_complete(self, info: dict[str, Any]) -> None:
		if isinstance(info, dict) and not info.get('auto_download'):
			self.done[str(info.get('guid'))] = info
			self._changed.set()

	async def _until(self, ready: Any, timeout: float) -> bool:
		loop = asyncio.get_running_loop()
		deadline = loop.time() + timeout
		while not ready():
			left = deadline - loop.time()
			if left <= 0:
				return False
			self._changed.clear()
			with contextlib.suppress(TimeoutError):
				await asyncio.wait_for(self._changed.wait(), left)
		return True

	async def started_within(self, timeout: float) -> bool:
		return await self._until(lambda: bool(self.started), timeout)

	async def finished_within(self, timeout: float) -> dict[str, Any] | None:
		"""The first download's completion info, or None if it has not finished within ``timeout``."""
		guid = str(self.started[0].get('guid'))
		if await self._until(lambda: guid in self.done, timeout):
			return self.done[guid]
		return None


def _named(info: dict[str, Any], url: str) -> str:
	name = info.get('file_name') or info.get('suggested_filename') or PurePosixPath(unquote(urlsplit(url).path)).name
	return str(name or 'the file')[:200]


async def downloaded(state: SessionState, url: str, downloads: DownloadWatch) -> str:
	"""The reply of a navigation that became a download: where the file is, and what the tab shows."""
	started = downloads.started[0]
	loop = asyncio.get_running_loop()
	deadline = loop.time() + DOWNLOAD_BUDGET
	finished = await downloads.finished_within(DOWNLOAD_BUDGET)
	name = _named(finished or started, url)
	if finished is not None:
		# its size once whole: browser-use read it while its own second copy could be truncating it
		copy_bound = max(0.0, deadline - loop.time())
		saved = await saved_download(
			state, name, finished.get('file_size'), finished.get('path'), str(started.get('url') or url), copy_bound
		)
	else:
		saved = f"{name} is still downloading after {DOWNLOAD_BUDGET:g} s; it is saved in the session's downloads once done"
	try:
		shown = await current_url(state)
	except Exception as exc:  # the reply says what it can
		logger.info('could not read the URL after a download: %s', exc)
		shown = None
	text = f'Navigated to: {url}. The browser downloaded it instead of showing it: {saved}'
	text += f'; the tab still shows {shown}.' if shown else '.'
	if name.lower().endswith('.pdf') or str(started.get('url', url)).lower().split('?')[0].endswith('.pdf'):
		text += (
			" Chromium's headless shell (the server's default browser when headless) has no PDF viewer: a server run "
			'with --no-headless-shell opens PDFs in the tab.'
		)
	return text


async def egress_blocked(state: SessionState, mark: int, url: str, failed: bool = False) -> str | None:
	"""Why the server's egress policy stopped this navigation (None if it did not): a refusal, since
	``mark``, of the URL's host, or of any host when the tab now shows the policy's block page
	(a redirect to a refused host) or the navigation failed."""
	door = state.browser.door
	refusals = door.refused_since(mark) if door is not None else []
	if not refusals:
		return None
	parts = urlsplit(url)
	host = (parts.hostname or '').lower().rstrip('.')
	try:
		port = parts.port or (443 if parts.scheme.lower() == 'https' else 80)
	except ValueError:
		port = 0
	hit = next((r for r in reversed(refusals) if (r.host, r.port) == (host, port)), None)
	if hit is None and (failed or await current_title(state) == BLOCK_TITLE):
		hit = refusals[-1]
	if hit is None:
		return None  # a subresource was refused; the page itself loaded
	return (
		f"Navigation to {url} was blocked by the server's egress policy: {hit.reason}. The page shows the "
		'refusal; the session cannot reach that address (ask the server operator if it should).'
	)


class GoBackArgs(Args):
	include_state: IncludeState = False


@tool('Go back', destructive=False, idempotent=False, open_world=True)
async def browser_go_back(state: SessionState, args: GoBackArgs, call: Call) -> str:
	"""Go back one entry in the current tab's history."""
	from browser_use.browser.events import GoBackEvent

	await dispatch(state, GoBackEvent(), 'Going back')
	return 'Navigated back'


class ScrollArgs(Args):
	direction: Literal['up', 'down'] = Field('down', description='Which way to scroll.')
	index: int | None = Field(
		None,
		ge=0,
		description='Index of an element from browser_get_state: scroll it, or its nearest scrollable ancestor (a list, '
		'a panel), instead of the page.',
	)
	amount: int | None = Field(None, ge=1, le=100_000, description='How far to scroll, in CSS pixels (default 500).')
	include_state: IncludeState = False


DEFAULT_SCROLL = 500

# The element itself or its nearest ancestor that scrolls vertically (crossing shadow roots), or the
# page's own scroller when none does; scrolled at once, whatever the page's scroll-behavior.
SCROLL_ELEMENT = """function(dy) {
	const scrolls = (el) => {
		const s = getComputedStyle(el);
		return /(auto|scroll|overlay)/.test(s.overflowY) && el.scrollHeight > el.clientHeight;
	};
	let el = this.nodeType === 1 ? this : this.parentElement;
	while (el && !scrolls(el)) el = el.parentElement || (el.getRootNode().host || null);
	const doc = this.ownerDocument;
	const page = !el || el === doc.documentElement || el === doc.body;
	if (page) el = doc.scrollingElement || doc.documentElement;
	const before = el.scrollTop;
	el.scrollBy({top: dy, behavior: 'instant'});
	const name = el.tagName.toLowerCase() + (el.id ? '#' + el.id : '');
	return {page, name, before: Math.round(before), after: Math.round(el.scrollTop),
		max: Math.round(el.scrollHeight - el.clientHeight)};
}"""


@tool('Scroll the page', destructive=False, idempotent=False, open_world=False)
async def browser_scroll(state: SessionState, args: ScrollArgs, call: Call) -> str:
	"""Scroll the current page by about one screen (500 px, or amount) up or down; with index, scroll that
	element or its nearest scrollable ancestor instead (a list or panel with its own scroll bar)."""
	from browser_use.browser.events import ScrollEvent

	amount = args.amount or DEFAULT_SCROLL
	if args.index is None:
		await dispatch(state, ScrollEvent(direction=args.direction, amount=amount), 'Scrolling')
		return f'Scrolled {args.direction}'
	node = await element(state, args.index)
	moved = await call_on(state, node, SCROLL_ELEMENT, amount if args.direction == 'down' else -amount)
	where = 'the page' if moved['page'] else f'<{moved["name"]}>'
	if moved['after'] == moved['before']:
		end = 'bottom' if args.direction == 'down' else 'top'
		return (
			f'Nothing scrolled: {where} (the scrollable container of element {args.index}) is already at its {end} '
			f'(scrollTop {moved["after"]} of {moved["max"]}).'
		)
	return (
		f'Scrolled {where} (the scrollable container of element {args.index}) {args.direction} by '
		f'{abs(moved["after"] - moved["before"])} px: scrollTop {moved["after"]} of {moved["max"]}'
	)
