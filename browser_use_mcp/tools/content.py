"""Reading the page: state, HTML, screenshot, extraction, JavaScript."""

from __future__ import annotations

import base64
import dataclasses
import json
from typing import Any

from pydantic import Field, JsonValue

from browser_use_mcp.errors import BrowserActionFailed, InvalidArgument
from browser_use_mcp.llm import make_llm
from browser_use_mcp.sessions import SessionState
from browser_use_mcp.tools.base import Args, Call, Image, Output, Reply, tool
from browser_use_mcp.tools.common import capture_state, clip, evaluate, read_ahead, viewport_size


class GetStateArgs(Args):
	include_screenshot: bool = Field(False, description='Also return a screenshot of the viewport as an image.')


@tool('Read the page state', read_only=True, open_world=False)
async def browser_get_state(state: SessionState, args: GetStateArgs, call: Call) -> Reply:
	"""Describe the session's current page: URL, title, open tabs, viewport and scroll position, and the
	interactive elements with the indices that browser_click and browser_type take; form fields carry their
	current value (a filled password shows as <redacted>), checked, selected option(s), disabled and expanded,
	where they apply. Call it again after
	the page changes: indices refer to the latest state only, and one whose page has changed since
	(another tab, a navigation or reload, its element removed) is refused, never used on another element."""
	return await capture_state(state, args.include_screenshot)


# its document and browser-use's pending-requests check are read beside the focus check before it
browser_get_state = dataclasses.replace(browser_get_state, read_ahead=read_ahead)


# The most characters one result carries: an MCP client reading a streamed answer of megabytes
# gives up ("SSE stream ended without a response"). Larger HTML comes in parts (offset); a larger
# JavaScript value is refused with how to ask for less.
MAX_RESULT_CHARS = 200_000
HTML_PART = 100_000


class GetHtmlArgs(Args):
	selector: str | None = Field(
		None, min_length=1, description='CSS selector of one element whose outer HTML to return; omit for the whole page.'
	)
	offset: int = Field(0, ge=0, description='Start at this character of the HTML (for the parts after the first).')
	max_chars: int = Field(
		HTML_PART,
		ge=1,
		le=MAX_RESULT_CHARS,
		description=f'Return at most this many characters (up to {MAX_RESULT_CHARS}); a longer HTML ends with a line '
		'saying the offset of the rest.',
	)


@tool('Read the HTML', read_only=True, open_world=False)
async def browser_get_html(state: SessionState, args: GetHtmlArgs, call: Call) -> str:
	"""Return the raw HTML of the session's current page, or the outer HTML of the first element matching a CSS
	selector, at most max_chars characters from offset: a longer HTML ends with a line giving the offset of the rest."""
	pick = 'document.documentElement ? document.documentElement.outerHTML : ""'
	if args.selector is not None:
		pick = (
			'(() => { let el; try { el = document.querySelector(' + json.dumps(args.selector) + '); }'
			' catch (e) { return {bad: String(e.message)}; } return el ? el.outerHTML : null; })()'
		)
	# only the part asked for crosses CDP and comes back
	expr = (
		f'(() => {{ const h = {pick}; if (h === null || (typeof h === "object")) return h;'
		f' return {{total: h.length, part: h.slice({args.offset}, {args.offset + args.max_chars})}}; }})()'
	)
	found = await evaluate(state, expr)
	if isinstance(found, dict) and 'bad' in found:
		raise BrowserActionFailed(f'Invalid CSS selector {clip(args.selector)}: {str(found["bad"])[:200]}')
	if not isinstance(found, dict) or 'part' not in found:
		return f'No element found for selector: {args.selector if len(args.selector) <= 200 else clip(args.selector)}'
	total, part = int(found['total']), str(found['part'])
	end = args.offset + len(part)
	if args.offset == 0 and end >= total:
		return part
	if args.offset >= total and total:
		raise InvalidArgument(f'offset {args.offset} is past the end of the HTML ({total} characters).')
	if end >= total:
		return f'{part}\n[characters {args.offset}-{end} of {total}: the end of the HTML]'
	return (
		f'{part}\n[HTML cut at {args.max_chars} characters: this is {args.offset}-{end} of {total}. Call browser_get_html '
		f'again with offset={end} for the next part, or give a selector for one element.]'
	)


class ScreenshotArgs(Args):
	full_page: bool = Field(False, description='Capture the whole scrollable page instead of just the viewport.')


@tool('Take a screenshot', read_only=True, open_world=False)
async def browser_screenshot(state: SessionState, args: ScreenshotArgs, call: Call) -> Reply:
	"""Take a PNG screenshot of the session's current page. Returns JSON with its size and the viewport, then the image."""
	try:
		data = await state.browser_session.take_screenshot(full_page=args.full_page)
	except RuntimeError as exc:  # Chromium's -32000 answers (found by fuzzing: they were "failed unexpectedly")
		if 'Page is too large' in str(exc):
			raise BrowserActionFailed(
				'The whole page is too large for one image (Chromium refused it). Take the visible part (full_page '
				'false), scrolling with browser_scroll between screenshots.'
			) from None
		if 'Not attached to an active page' in str(exc):
			raise BrowserActionFailed(
				'The tab has no page to capture now (it is loading, hung or gone). Call browser_list_tabs; close or '
				'navigate a tab that does not answer, then take the screenshot again.'
			) from None
		raise
	meta: dict[str, Any] = {'size_bytes': len(data)}
	width, height = await viewport_size(state)
	if width and height:
		meta['viewport'] = {'width': width, 'height': height}
	return Reply(json.dumps(meta), images=[Image(base64.b64encode(data).decode())])


class ExtractArgs(Args):
	query: str = Field(min_length=1, description='What to extract from the page, in plain words.')
	extract_links: bool = Field(False, description="Include the page's links in what the model reads.")


# not read-only: browser-use's extract action may save a long answer to the session's files;
# open world: the page goes to the LLM provider
@tool('Extract with the LLM', destructive=False, idempotent=False, open_world=True)
async def browser_extract_content(state: SessionState, args: ExtractArgs, call: Call) -> str:
	"""Have the configured LLM read the session's current page and answer a query about it (structured
	extraction). Needs an LLM key in the server's environment; see docs/configuration.md."""
	from browser_use import ActionModel
	from pydantic import create_model

	if state.llm is None:
		state.llm = make_llm(state.config.llm, 'extract')
	action_model = create_model('ExtractContent', __base__=ActionModel, extract=(dict[str, Any], ...))
	action = action_model.model_validate({'extract': {'query': args.query, 'extract_links': args.extract_links}})
	result = await state.tools.act(
		action=action,
		browser_session=state.browser_session,
		page_extraction_llm=state.llm,
		file_system=state.file_system,
	)
	if result.error:
		raise BrowserActionFailed(f'Extraction failed: {result.error}')
	return result.extracted_content or 'No content extracted'


class EvaluateArgs(Args):
	expression: str = Field(
		min_length=1,
		max_length=100_000,
		description='A JavaScript expression evaluated in the page, e.g. "document.title" or '
		'"[...document.querySelectorAll(\'h2\')].map(e => e.textContent)". Promises are awaited.',
	)


class Evaluated(Output):
	# JsonValue: any JSON type, null included; its schema is the empty (accept-all) schema.
	result: JsonValue = Field(description="The expression's value: any JSON value; null for undefined or null.")


# the page's script can do anything the page can: change or delete, and talk to any site
@tool('Run JavaScript', destructive=True, idempotent=False, open_world=True)
async def browser_evaluate(state: SessionState, args: EvaluateArgs, call: Call) -> Reply[Evaluated]:
	"""Run a JavaScript expression in the session's current page and return its value as JSON (DOM nodes and
	functions are not serializable: return their properties instead)."""
	out = Evaluated(result=await evaluate(state, args.expression, await_promise=True)).dump()
	text = json.dumps(out['result'], ensure_ascii=False)
	if len(text) > MAX_RESULT_CHARS:
		raise BrowserActionFailed(
			f"The expression's value is {len(text)} characters of JSON, more than the {MAX_RESULT_CHARS} one result may "
			'carry. Return less: a slice (e.g. .slice(0, 100000) of a string or an array) or a count, then the rest '
			"in further calls; for the page's HTML use browser_get_html (offset, max_chars)."
		)
	return Reply(text, structured=out)
