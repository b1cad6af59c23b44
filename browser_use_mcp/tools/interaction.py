"""Acting on the page: click, type, send keys."""

from __future__ import annotations

import asyncio
import datetime
import difflib
import re
from urllib.parse import urljoin

from pydantic import Field

from browser_use_mcp import dialogs
from browser_use_mcp.errors import BrowserActionFailed, InvalidArgument
from browser_use_mcp.sessions import SessionState
from browser_use_mcp.tools.actions import call_on
from browser_use_mcp.tools.base import Args, Call, IncludeState, tool
from browser_use_mcp.tools.common import (
	cdp_page,
	current_url,
	dispatch,
	element,
	open_url,
	resolve_tab,
	saved_download,
	viewport_size,
)


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
	if 'file input' in why or 'file upload' in why:  # browser-use points at an upload action this server has not
		fix = 'browser_upload_file{index, path or content_base64 and name} chooses its file'
		if 'interaction' not in state.config.tools and 'all' not in state.config.tools:
			fix += ' (this server offers it when started with --tools core,interaction or --tools all)'
		raise BrowserActionFailed(f'Click refused: a file input opens a file chooser nobody can see here. {fix}.')
	raise BrowserActionFailed(f'Click refused: {why}')


async def _downloaded(state: SessionState, result: object) -> str:
	"""What a click's download saved, as browser-use's click reports it: appended to the reply ('' when
	the click started none)."""
	if not isinstance(result, dict):
		return ''
	done = result.get('download')
	if isinstance(done, dict):
		name = str(done.get('file_name') or 'the file')[:200]
		saved = await saved_download(state, name, done.get('file_size'), done.get('path'))
		return f'. It started a download: {saved}.'
	pending = result.get('download_in_progress') or result.get('download_timeout')
	if isinstance(pending, dict):
		name = str(pending.get('file_name') or 'a file')[:200]
		return f". It started a download of {name}, not finished when the click returned; it is saved in the session's downloads once done."
	return ''


@tool('Click', destructive=True, idempotent=False, open_world=True)
async def browser_click(state: SessionState, args: ClickArgs, call: Call) -> str:
	"""Click an element of the session's current page, either by its index from browser_get_state or at
	viewport coordinates (coordinate_x with coordinate_y) for pixel-precise clicks. A click that starts a
	download waits for it (at most 30 s) and names the file saved in the session's downloads."""
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
		result = await dispatch(state, event, 'Click')
		_check_click(state, result)
		return f'Clicked at coordinates ({args.coordinate_x}, {args.coordinate_y}){await _downloaded(state, result)}'
	if args.index is None:
		raise InvalidArgument('Provide either index (from browser_get_state) or both coordinate_x and coordinate_y.')

	node = await element(state, args.index)
	if args.new_tab:
		href = node.attributes.get('href')
		if href:
			target = urljoin(await current_url(state), href)
			await open_url(state, target, True, f'Opening {target}')
			return f'Clicked element {args.index} and opened in new tab {target[:20]}...'
		result = await dispatch(state, ClickElementEvent(node=node), f'Click on element {args.index}')
		_check_click(state, result, args.index)
		return f'Clicked element {args.index} (new tab not supported for non-link elements){await _downloaded(state, result)}'
	result = await dispatch(state, ClickElementEvent(node=node), f'Click on element {args.index}')
	_check_click(state, result, args.index)
	return f'Clicked element {args.index}{await _downloaded(state, result)}'


# Typing goes key by key (~2 ms a character): 20,000 characters ran past the call's 45 s and were
# reported as a hung tab (found by fuzzing). Longer text: set the value with browser_evaluate.
MAX_TYPED = 10_000
# Elements typing cannot change (found by fuzzing: "Typed '...'" was answered and nothing happened),
# by what to use instead
NOT_TYPED = {
	'select': 'a <select>: choose with browser_select_option',
	'button': 'a button: press it with browser_click',
}
NOT_TYPED_INPUTS = {
	'file': 'a file input: give it a file with browser_upload_file',
	'checkbox': 'a checkbox: toggle it with browser_click',
	'radio': 'a radio button: choose it with browser_click',
	'submit': 'a button: press it with browser_click',
	'button': 'a button: press it with browser_click',
	'reset': 'a button: press it with browser_click',
	'image': 'an image button: press it with browser_click',
	'range': 'a slider: set it with browser_evaluate (el.value = ..., then an input event) or the arrow keys',
	'color': 'a color picker: set it with browser_evaluate (el.value = "#rrggbb", then an input event)',
}


class TypeArgs(Args):
	index: int = Field(ge=0, description='Index of the input element, from browser_get_state.')
	text: str = Field(
		max_length=MAX_TYPED,
		description=f'Text to type; the field is cleared first. An empty string just clears the field. At most '
		f'{MAX_TYPED:,} characters (typed key by key).',
	)
	blur: bool = Field(
		False,
		description='Leave the field afterwards, as a user tabbing away would (its blur and change handlers run). '
		'By default the field keeps the focus, so suggestion lists that open while typing stay open.',
	)
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
	tag = (node.tag_name or '').lower()
	field_type = (node.attributes.get('type') or '').lower() if tag == 'input' else ''
	what = NOT_TYPED_INPUTS.get(field_type) if tag == 'input' else NOT_TYPED.get(tag)
	if what is not None:
		raise InvalidArgument(f'Element {args.index} takes no typed text: it is {what}.')
	if field_type in DATE_FORMS:
		return await _set_date_field(state, node, args.index, field_type, args.text)
	kind = _sensitive_kind(args.text)
	event = TypeTextEvent(node=node, text=args.text, is_sensitive=kind is not None, sensitive_key_name=kind)
	await dispatch(state, event, f'Typing into element {args.index}')
	left = ''
	if args.blur:
		await call_on(state, node, 'function() { this.blur(); }')
		left = ' and left it'
	if kind:
		return f'Typed <{kind}> into element {args.index}{left}'
	return f"Typed '{args.text}' into element {args.index}{left}"


# Date and time fields take no typed text in a fixed form (what keys do depends on the browser's
# locale), so their value is set in the one form HTML defines for it, read back, and announced with
# the input and change events typing would fire. The accepted forms, by input type:
DATE_FORMS = {
	'date': 'YYYY-MM-DD (also "6 Jan 2011", "Jan 6, 2011", or D/M/YYYY and M/D/YYYY when the day is over 12)',
	'time': 'HH:MM or HH:MM:SS, 24-hour (also "3:45 PM")',
	'datetime-local': 'YYYY-MM-DDTHH:MM (a date as for type=date, a space or T, then a time)',
	'month': 'YYYY-MM (also "Jan 2011")',
	'week': 'YYYY-Www, e.g. 2011-W01',
}
MONTHS = {m: i for i, m in enumerate(('jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'), 1)}


def _month(word: str) -> int | None:
	return MONTHS.get(word.strip('.,').lower()[:3]) if len(word.strip('.,')) >= 3 else None


def _iso_date(text: str) -> str | None:
	"""2011-01-06 from 2011-01-06, 2011/1/6, 6 Jan 2011, Jan 6, 2011, 13/01/2011 or 01/13/2011; None if
	not a date, ValueError when the day and the month cannot be told apart (01/06/2011)."""
	t = ' '.join(text.replace(',', ' ').split())
	year = month = day = None
	if m := re.fullmatch(r'(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})', t):
		year, month, day = (int(g) for g in m.groups())
	elif m := re.fullmatch(r'(\d{1,2})[-/.](\d{1,2})[-/.](\d{4})', t):
		a, b, year = (int(g) for g in m.groups())
		if a > 12 >= b:
			day, month = a, b
		elif b > 12 >= a:
			month, day = a, b
		elif a == b:
			day = month = a
		else:
			raise ValueError(f'{text!r} could be day/month or month/day')
	elif (m := re.fullmatch(r'(\d{1,2}) ([A-Za-z.]+) (\d{4})', t)) and _month(m[2]):
		day, month, year = int(m[1]), _month(m[2]), int(m[3])
	elif (m := re.fullmatch(r'([A-Za-z.]+) (\d{1,2}) (\d{4})', t)) and _month(m[1]):
		month, day, year = _month(m[1]), int(m[2]), int(m[3])
	else:
		return None
	try:
		return datetime.date(year, month, day).isoformat()
	except ValueError:
		return None


def _iso_time(text: str) -> str | None:
	m = re.fullmatch(r'(\d{1,2}):(\d{2})(?::(\d{2}))?\s*([AaPp]\.?[Mm]\.?)?', text.strip())
	if not m:
		return None
	hour, minute, second = int(m[1]), int(m[2]), m[3]
	if m[4]:
		if not 1 <= hour <= 12:
			return None
		hour = hour % 12 + (12 if m[4][0] in 'Pp' else 0)
	if hour > 23 or minute > 59 or (second is not None and int(second) > 59):
		return None
	return f'{hour:02d}:{minute:02d}' + (f':{second}' if second is not None else '')


def iso_value(field_type: str, text: str) -> str | None:
	"""``text`` in the value form of an <input type=field_type>; None when it is not one of the accepted
	forms (DATE_FORMS), ValueError when it is ambiguous."""
	t = text.strip()
	if field_type == 'date':
		return _iso_date(t)
	if field_type == 'time':
		return _iso_time(t)
	if field_type == 'datetime-local':
		m = re.fullmatch(r'(.+?)(?:T|\s+)(\d{1,2}:\d{2}(?::\d{2})?(?:\s*[AaPp]\.?[Mm]\.?)?)', t)
		day = _iso_date(m[1]) if m else None
		clock = _iso_time(m[2]) if m else None
		return f'{day}T{clock}' if day and clock else None
	if field_type == 'month':
		if m := re.fullmatch(r'(\d{4})-(\d{1,2})', t):
			year, month = int(m[1]), int(m[2])
		elif (m := re.fullmatch(r'([A-Za-z.]+),?\s+(\d{4})', t)) and _month(m[1]):
			year, month = int(m[2]), _month(m[1])
		elif m := re.fullmatch(r'(\d{1,2})/(\d{4})', t):
			month, year = int(m[1]), int(m[2])
		else:
			return None
		return f'{year:04d}-{month:02d}' if 1 <= month <= 12 else None
	if field_type == 'week':
		m = re.fullmatch(r'(\d{4})-?[Ww](\d{1,2})', t)
		return f'{int(m[1]):04d}-W{int(m[2]):02d}' if m and 1 <= int(m[2]) <= 53 else None
	return None


# The native value setter (a framework's own setter on the element would swallow the change), then
# the events typing fires; the value the field kept is returned (an impossible value leaves it empty).
SET_VALUE = """function(value) {
	const setter = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set;
	if (this.disabled || this.readOnly) return {refused: this.disabled ? 'disabled' : 'read-only'};
	this.focus();
	setter.call(this, value);
	this.dispatchEvent(new Event('input', {bubbles: true, composed: true}));
	this.dispatchEvent(new Event('change', {bubbles: true}));
	return {value: this.value};
}"""


async def _set_date_field(state: SessionState, node: object, index: int, field_type: str, text: str) -> str:
	form = DATE_FORMS[field_type]
	try:
		value = iso_value(field_type, text) if text.strip() else ''
	except ValueError as exc:
		raise InvalidArgument(
			f'text: {exc} for the <input type={field_type}> element {index}. Nothing was typed. Give it as {form}.'
		) from None
	if value is None:
		raise InvalidArgument(
			f'text: {text[:60]!r} is not a {field_type} this server understands for the <input type={field_type}> '
			f'element {index}. Nothing was typed. Give it as {form}.'
		)
	result = await call_on(state, node, SET_VALUE, value)
	if result.get('refused'):
		raise BrowserActionFailed(f'Element {index} is {result["refused"]}: it cannot be typed into. Nothing was changed.')
	if result.get('value') != value:
		raise BrowserActionFailed(
			f'The <input type={field_type}> element {index} did not take {value!r} (it holds {result.get("value")!r}): the '
			f'browser found it invalid. Give it as {form}.'
		)
	if not value:
		return f'Cleared element {index}'
	return f"Set element {index} (input type={field_type}) to '{value}'" + (f' (from {text!r})' if value != text else '')


class SendKeysArgs(Args):
	keys: str = Field(
		min_length=1,
		max_length=200,
		description='A key or shortcut for the focused element: "Enter", "Escape", "Tab", "ArrowDown", "PageDown", "F5", '
		'"Control+a", "Shift+Tab", or plain text to type key by key. A shortcut ends in one character or a key name; '
		'any other is refused.',
	)
	include_state: IncludeState = False


# How browser-use's send_keys reads ``keys`` (DefaultActionWatchdog.on_SendKeysEvent, browser-use 0.13.14; a test
# compares these with its source): names it rewrites (case-insensitive), the modifiers of a shortcut, and the
# names it presses alone; any other string it types as text, one character at a time.
KEY_ALIASES = {
	'ctrl': 'Control',
	'control': 'Control',
	'alt': 'Alt',
	'option': 'Alt',
	'meta': 'Meta',
	'cmd': 'Meta',
	'command': 'Meta',
	'shift': 'Shift',
	'enter': 'Enter',
	'return': 'Enter',
	'tab': 'Tab',
	'delete': 'Delete',
	'backspace': 'Backspace',
	'escape': 'Escape',
	'esc': 'Escape',
	'space': ' ',
	'up': 'ArrowUp',
	'down': 'ArrowDown',
	'left': 'ArrowLeft',
	'right': 'ArrowRight',
	'pageup': 'PageUp',
	'pagedown': 'PageDown',
	'home': 'Home',
	'end': 'End',
}
MODIFIERS = frozenset({'Alt', 'Control', 'Meta', 'Shift'})
PRESSED_ALONE = frozenset(
	{
		*('Enter', 'Tab', 'Delete', 'Backspace', 'Escape', 'ArrowUp', 'ArrowDown', 'ArrowLeft', 'ArrowRight'),
		*('PageUp', 'PageDown', 'Home', 'End', 'Control', 'Alt', 'Meta', 'Shift'),
		*(f'F{n}' for n in range(1, 13)),
	}
)
KEY_EXAMPLES = 'Enter, Tab, Escape, Backspace, Delete, ArrowDown, PageDown, Home, End, Insert, Space, F5'


def shortcut(keys: str) -> tuple[list[str], str] | None:
	"""(modifiers, key) when browser-use presses ``keys`` as a shortcut ("Control+a", "Shift+Tab",
	"Control++"), parsed as it parses it; None when it presses one key or types ``keys`` as text
	("1+1", "C++" and "Foo+a" are text to it)."""
	if '+' not in keys or keys == '+':
		return None
	if keys.endswith('++'):
		parts, key = keys[:-2].split('+'), '+'
	else:
		prefix, suffix = keys.rsplit('+', 1)
		if not suffix.strip():
			return None
		parts, key = prefix.split('+'), KEY_ALIASES.get(suffix.strip().lower(), suffix)
	if not all(part.strip() for part in parts):
		return None
	modifiers = [KEY_ALIASES.get(part.strip().lower(), part) for part in parts]
	return (modifiers, key) if all(m in MODIFIERS for m in modifiers) else None


def is_key(name: str) -> bool:
	"""Whether browser-use presses something for ``name`` in a shortcut: one character, or a name in its key
	table (one with a virtual key code). For any other name it sends a key event no page acts on."""
	from browser_use.actor.utils import get_key_info

	return len(name) == 1 or get_key_info(name)[1] is not None


def check_keys(keys: str) -> str:
	"""Refuse a shortcut whose key is no key (found by fuzzing: "Ctrl+Foo" answered "Sent keys" and nothing
	was pressed); else the note a reply adds when browser-use types ``keys`` as text ('' when it presses them)."""
	combination = shortcut(keys)
	if combination is not None:
		key = combination[1]
		if not is_key(key):
			near = difflib.get_close_matches(key, sorted(PRESSED_ALONE | {'Insert', 'Space'}), n=1, cutoff=0.6)
			hint = f' Did you mean {"+".join([*combination[0], near[0]])!r}?' if near else ''
			raise InvalidArgument(
				f'keys: {key[:50]!r} in {keys[:100]!r} is not a key, so nothing would be pressed; nothing was sent. '
				f'End a shortcut in one character (Control+a) or a key name: {KEY_EXAMPLES} (e.g. Shift+Tab).{hint}'
			)
		return ''
	text = KEY_ALIASES.get(keys.strip().lower(), keys)
	if text in PRESSED_ALONE or len(text) == 1:
		return ''
	return (
		' (typed as text, one character at a time: alone, only Enter, Tab, Escape, Backspace, Delete, the arrows, '
		'PageUp, PageDown, Home, End, F1-F12 and the modifiers are pressed by name)'
	)


@tool('Press keys', destructive=True, idempotent=False, open_world=True)
async def browser_send_keys(state: SessionState, args: SendKeysArgs, call: Call) -> str:
	"""Press a key or keyboard shortcut in the session's current page, sent to the focused element
	(e.g. "Enter" to submit, "Escape" to close a dialog, "Control+a" to select all). A string that is no
	key name is typed as text, and the reply says so; a shortcut whose last part is no key is refused."""
	from browser_use.browser.events import SendKeysEvent

	typed = check_keys(args.keys)
	await dispatch(state, SendKeysEvent(keys=args.keys), f'Sending keys {args.keys!r}')
	return f'Sent keys: {args.keys}{typed}'


class HandleDialogArgs(Args):
	accept: bool = Field(description='true: OK (leave the page, for a leave-page dialog); false: Cancel (stay).')
	prompt_text: str | None = Field(
		None,
		max_length=10_000,
		description="For a prompt: the text to answer with (accept: true); omit for the prompt's default.",
	)
	tab_id: str | None = Field(
		None,
		min_length=1,
		max_length=64,
		description='The tab_id (browser_list_tabs) whose dialog to answer; omit for the current tab (or the one open).',
	)


@tool('Answer a dialog', destructive=True, idempotent=False, open_world=True)
async def browser_handle_dialog(state: SessionState, args: HandleDialogArgs, call: Call) -> str:
	"""Answer the JavaScript dialog (alert, confirm, prompt, or leave-page) open in the session's page, or in
	the tab given. Dialogs wait for an answer only in a session that holds them (a server started with --dialogs
	hold, or browser_create_session{dialogs: "hold"}; otherwise they are accepted at once, prompts cancelled);
	an open one is told in a note and shown by browser_get_state."""
	if not dialogs.holding(state):
		raise InvalidArgument(
			'No dialog is open: this session answers JavaScript dialogs itself (alerts, confirms and leave-page dialogs '
			'are accepted, prompts cancelled). Create a session with browser_create_session{dialogs: "hold"}, or start '
			'the server with --dialogs hold, to answer them with this tool.'
		)
	held = dialogs.watch(state)
	if held is None:
		raise BrowserActionFailed(
			'This server cannot hold dialogs (its dialog_hold patch is off or refused: `browser-use-mcp doctor` says '
			'why), so the browser answers them itself: alerts, confirms and leave-page dialogs accepted, prompts cancelled.'
		)
	if args.tab_id is not None:
		target = await resolve_tab(state, args.tab_id)
		dialog = held.in_tab(target)
		if dialog is None:
			elsewhere = [d.target_id[-4:] for d in held.pending.values() if d.target_id and d.target_id != target]
			hint = f' Tab(s) with one: {", ".join(sorted(set(elsewhere)))}.' if elsewhere else ''
			raise InvalidArgument(f'tab_id: no dialog is open in tab {args.tab_id!r}; nothing was answered.{hint}')
	else:
		focused = (await cdp_page(state)).session_id
		dialog = held.pending.get(focused) or held.first()
	if dialog is None:
		raise InvalidArgument('No dialog is open in this session; nothing was answered.')
	if args.prompt_text is not None and dialog.kind != 'prompt':
		raise InvalidArgument(f'prompt_text is for a prompt; the open dialog is a {dialog.kind}. Nothing was answered.')
	params: dict[str, object] = {'accept': args.accept}
	if args.prompt_text is not None:
		params['promptText'] = args.prompt_text
	bs = state.browser_session
	try:
		await asyncio.wait_for(
			bs.cdp_client.send.Page.handleJavaScriptDialog(params=params, session_id=dialog.cdp_session_id), 5.0
		)
	except Exception as exc:
		held.answered(dialog)
		if 'No dialog' in str(exc):
			raise InvalidArgument('No dialog is open in this session (the page closed it); nothing was answered.') from None
		raise BrowserActionFailed(f'Answering the {dialog.kind} dialog failed: {str(exc)[:300]}') from None
	held.answered(dialog)
	answer = 'accepted' if args.accept else 'dismissed'
	if dialog.kind == 'prompt' and args.accept:
		answer += f' with {args.prompt_text if args.prompt_text is not None else dialog.default_prompt!r}'
	return f'The {dialog.kind} dialog {dialog.message[:200]!r} was {answer}.'
