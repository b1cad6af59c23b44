"""Acting on the page: click, type, send keys."""

from __future__ import annotations

from urllib.parse import urljoin

from pydantic import Field

from browser_use_mcp.errors import BrowserActionFailed, InvalidArgument
from browser_use_mcp.sessions import SessionState
from browser_use_mcp.tools.base import Args, Call, IncludeState, tool
from browser_use_mcp.tools.common import current_url, dispatch, element, open_url, viewport_size


class ClickArgs(Args):
	index: int | None = Field(
		None,
		ge=0,
		description='Index of the element to click, from browser_get_state. Give this or coordinate_x and coordinate_y.',
	)
	coordinate_x: int | None = Field(
		None, ge=0, description='Horizontal position in CSS pixels from the left edge of the viewport; needs coordinate_y.'
	)
	coordinate_y: int | None = Field(
		None, ge=0, description='Vertical position in CSS pixels from the top edge of the viewport; needs coordinate_x.'
	)
	new_tab: bool = Field(False, description='If the element is a link, open its target in a new tab instead of clicking.')
	include_state: IncludeState = False


def _check_click(state: SessionState, result: object, index: int | None = None) -> None:
	if not (isinstance(result, dict) and result.get('validation_error')):
		return
	why = str(result['validation_error'])
	if '<select>' in why:  # browser-use names its own action (dropdown_options), which this server has not
		which = f'element {index} is' if index is not None else 'the element at those coordinates is'
		arg = f'index: {index}' if index is not None else 'index'
		fix = f'browser_get_options{{{arg}}} lists its options; browser_select_option{{{arg}, values or labels}} chooses'
		if 'interaction' not in state.config.tools and 'all' not in state.config.tools:
			fix += ' (this server offers them when started with --tools core,interaction or --tools all)'
		raise BrowserActionFailed(f'Click refused: {which} a <select>, which a click cannot choose from. {fix}.')
	raise BrowserActionFailed(f'Click refused: {why}')


@tool('Click', destructive=True, idempotent=False, open_world=True)
async def browser_click(state: SessionState, args: ClickArgs, call: Call) -> str:
	"""Click an element of the session's current page, either by its index from browser_get_state or at
	viewport coordinates (coordinate_x with coordinate_y) for pixel-precise clicks."""
	from browser_use.browser.events import ClickCoordinateEvent, ClickElementEvent

	has_x, has_y = args.coordinate_x is not None, args.coordinate_y is not None
	if has_x != has_y:
		raise InvalidArgument('coordinate_x and coordinate_y must be given together (or give index instead).')
	if has_x and has_y:
		width, height = await viewport_size(state)
		if width and height and (args.coordinate_x >= width or args.coordinate_y >= height):
			raise InvalidArgument(
				f'Coordinates ({args.coordinate_x}, {args.coordinate_y}) are outside the {width}x{height} viewport. '
				'Scroll the target into view, then use coordinates inside the viewport (browser_get_state shows its size).'
			)
		event = ClickCoordinateEvent(coordinate_x=args.coordinate_x, coordinate_y=args.coordinate_y)
		_check_click(state, await dispatch(state, event, 'Click'))
		return f'Clicked at coordinates ({args.coordinate_x}, {args.coordinate_y})'
	if args.index is None:
		raise InvalidArgument('Provide either index (from browser_get_state) or both coordinate_x and coordinate_y.')

	node = await element(state, args.index)
	if args.new_tab:
		href = node.attributes.get('href')
		if href:
			target = urljoin(await current_url(state), href)
			await open_url(state, target, True, f'Opening {target}')
			return f'Clicked element {args.index} and opened in new tab {target[:20]}...'
		_check_click(state, await dispatch(state, ClickElementEvent(node=node), f'Click on element {args.index}'), args.index)
		return f'Clicked element {args.index} (new tab not supported for non-link elements)'
	_check_click(state, await dispatch(state, ClickElementEvent(node=node), f'Click on element {args.index}'), args.index)
	return f'Clicked element {args.index}'


class TypeArgs(Args):
	index: int = Field(ge=0, description='Index of the input element, from browser_get_state.')
	text: str = Field(description='Text to type; the field is cleared first. An empty string just clears the field.')
	include_state: IncludeState = False


def _sensitive_kind(text: str) -> str | None:
	"""Keep obvious secrets out of the reply (and so out of transcripts): emails and tokens."""
	if len(text) < 6:
		return None
	local, at, domain = text.rpartition('@')
	if at and local and '.' in domain:
		return 'email'
	if len(text) >= 16 and any(c.isdigit() for c in text) and any(c.isalpha() for c in text) and any(c in '.-_' for c in text):
		return 'credential'
	return None


# destructive: the field's text is replaced; idempotent: the same text again leaves the same field
@tool('Type text', destructive=True, idempotent=True, open_world=True)
async def browser_type(state: SessionState, args: TypeArgs, call: Call) -> str:
	"""Type text into an input element of the session's current page (by index from browser_get_state).
	Existing text is replaced; pass text="" to clear the field."""
	from browser_use.browser.events import TypeTextEvent

	node = await element(state, args.index)
	kind = _sensitive_kind(args.text)
	event = TypeTextEvent(node=node, text=args.text, is_sensitive=kind is not None, sensitive_key_name=kind)
	await dispatch(state, event, f'Typing into element {args.index}')
	if kind:
		return f'Typed <{kind}> into element {args.index}'
	return f"Typed '{args.text}' into element {args.index}"


class SendKeysArgs(Args):
	keys: str = Field(
		min_length=1,
		max_length=200,
		description='A key or shortcut for the focused element: "Enter", "Escape", "Tab", "ArrowDown", "Control+a", '
		'"Shift+Tab", or plain text to type key by key.',
	)
	include_state: IncludeState = False


@tool('Press keys', destructive=True, idempotent=False, open_world=True)
async def browser_send_keys(state: SessionState, args: SendKeysArgs, call: Call) -> str:
	"""Press a key or keyboard shortcut in the session's current page, sent to the focused element
	(e.g. "Enter" to submit, "Escape" to close a dialog, "Control+a" to select all)."""
	from browser_use.browser.events import SendKeysEvent

	await dispatch(state, SendKeysEvent(keys=args.keys), f'Sending keys {args.keys!r}')
	return f'Sent keys: {args.keys}'
