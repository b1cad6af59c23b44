"""The live part of the dashboard: frames of a session's page, and a person driving it (takeover).

Frames are taken only when a dashboard page asks for one, through the focused tab's CDP session
and never under the session's lock, so agents' calls do not wait for them; a session has at most
one capture in flight per size, and a frame younger than its size's interval is served again
instead of taking another. A capture ends within CAPTURE_TIMEOUT even when the page never answers
(a renderer stuck in a script, a reply that never comes): a wedged capture would otherwise hold its
session's slot, and every later request would join it instead of trying again. A takeover holds
the session's lock: agents' calls wait behind it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

from browser_use_mcp.sessions import SessionState
from browser_use_mcp.tools.common import cdp_page, current_title, visible_jpeg

logger = logging.getLogger('browser_use_mcp.dashboard')

# width in CSS pixels a frame is scaled down to, JPEG quality, and how often it may be taken
# (measured: docs/dashboard.md#costs)
FRAME_WIDTH: dict[str, int] = {'thumb': 400, 'large': 1280}
FRAME_QUALITY: dict[str, int] = {'thumb': 50, 'large': 60}
FRAME_INTERVAL: dict[str, float] = {'thumb': 0.8, 'large': 0.2}
TITLE_INTERVAL = 3.0  # s between reads of a page's title (with a frame)
# While an agent's call younger than QUIET_DURING_CALLS runs, the last frame is served again (up to
# MAX_FRAME_AGE old) instead of taking one: a capture then competes with the call for the renderer
# (docs/dashboard.md#costs). An agent calling back to back still gets a frame every MAX_FRAME_AGE.
QUIET_DURING_CALLS = 2.0
MAX_FRAME_AGE = 3.0
CAPTURE_TIMEOUT = 5.0  # s a capture may take in all; then it is abandoned and the next request tries again
LOCK_WAIT = 30.0  # s a takeover waits for the agent's call in flight to end
WATCH_INTERVAL = 0.25


@dataclass
class Frame:
	jpeg: bytes
	at: float
	width: int  # the viewport it shows, in CSS pixels
	height: int
	title: str | None = None  # the page's title then (browser-use's target titles can lag behind)


async def _capture(state: SessionState, size: str, read_title: bool) -> Frame:
	async with asyncio.timeout(CAPTURE_TIMEOUT):
		jpeg, width, height = await visible_jpeg(state, FRAME_WIDTH[size], FRAME_QUALITY[size])
		title = await current_title(state) if read_title else None  # None: a frame without a title rather than no frame
	return Frame(jpeg, time.monotonic(), width, height, title)


class Frames:
	"""The newest frame of each session and size, taken on demand and throttled. Held weakly:
	a closed session's frames go with it."""

	def __init__(self) -> None:
		self._frames: weakref.WeakKeyDictionary[SessionState, dict[str, Frame]] = weakref.WeakKeyDictionary()
		self._inflight: dict[tuple[SessionState, str], asyncio.Task[Frame]] = {}
		self._titles: weakref.WeakKeyDictionary[SessionState, tuple[float, str]] = weakref.WeakKeyDictionary()

	async def get(self, state: SessionState, size: str) -> Frame | None:
		"""A recent frame; the previous one if a new one cannot be taken (the page is between
		documents, say); None if there has never been one."""
		last = self._frames.get(state, {}).get(size)
		now = time.monotonic()
		if last is not None and now - last.at < FRAME_INTERVAL[size]:
			return last
		call = state.log.current
		if (
			last is not None
			and call is not None
			and time.time() - call.started < QUIET_DURING_CALLS
			and now - last.at < MAX_FRAME_AGE
		):
			return last
		key = (state, size)
		task = self._inflight.get(key)
		if task is None:  # else join the capture in flight rather than start another
			known = self._titles.get(state)
			read_title = known is None or now - known[0] > TITLE_INTERVAL
			task = asyncio.create_task(_capture(state, size, read_title), name='dashboard-frame')
			self._inflight[key] = task
			task.add_done_callback(lambda t, k=key: self._done(k, t))
		try:
			return await asyncio.wait_for(asyncio.shield(task), CAPTURE_TIMEOUT)
		except Exception as exc:
			logger.debug('no frame of session %r: %r', state.session_id, exc)
			return last

	def _done(self, key: tuple[SessionState, str], task: asyncio.Task[Frame]) -> None:
		self._inflight.pop(key, None)
		state, size = key
		if not task.cancelled() and task.exception() is None and state.closed_reason is None:
			frame = task.result()
			self._frames.setdefault(state, {})[size] = frame
			if frame.title is not None:
				self._titles[state] = (frame.at, frame.title)

	def title(self, state: SessionState) -> str | None:
		"""The page title a recent frame of this session saw, if any."""
		known = self._titles.get(state)
		return known[1] if known else None


# -- takeover --------------------------------------------------------------------------------


@dataclass(eq=False)
class Takeover:
	"""A person driving one session from the dashboard (one dashboard login at a time)."""

	login: str
	timeout: float
	started: float = field(default_factory=time.time)
	last_input: float = field(default_factory=time.monotonic)
	holding: bool = False  # the session's lock is ours (False: still waiting for the agent's call)
	released: asyncio.Event = field(default_factory=asyncio.Event)
	watcher: asyncio.Task[None] | None = None
	inputs: asyncio.Lock = field(default_factory=asyncio.Lock)  # events reach the page in the order sent

	def touch(self) -> None:
		self.last_input = time.monotonic()

	def remaining(self) -> float:
		return max(0.0, self.timeout - (time.monotonic() - self.last_input))


class TakeoverRefused(Exception):
	"""Why a takeover cannot start (someone else holds it, or the agent's call did not end)."""


def takeover_of(state: SessionState) -> Takeover | None:
	"""The session's takeover as this module made it (the session keeps it as a ``PersonDriving``)."""
	held = state.takeover
	return held if isinstance(held, Takeover) else None


async def take_over(state: SessionState, login: str, timeout: float) -> Takeover:
	"""Hold the session's lock for a person until they release it, stop sending input for
	``timeout`` s, or the session closes. Agents' calls wait meanwhile."""
	held = takeover_of(state)
	if held is not None:
		if held.login == login:
			return held
		raise TakeoverRefused('Someone else has taken over this session; wait until they release it.')
	takeover = Takeover(login, timeout)
	state.takeover = takeover  # claimed before waiting, so a second person is refused at once
	try:
		await state.hold(None, wait=LOCK_WAIT)  # held until released: a person has no call deadline
	except TimeoutError:
		state.takeover = None
		raise TakeoverRefused(
			f"The agent's call in this session did not end within {LOCK_WAIT:.0f} s; try again in a moment."
		) from None
	except BaseException:
		state.takeover = None
		raise
	if state.closed_reason is not None:
		state.let_go()
		state.takeover = None
		raise TakeoverRefused('The session was closed.')
	takeover.holding = True  # the session is busy (not idle, so not expired) while a person drives it
	takeover.touch()
	takeover.watcher = asyncio.create_task(_hold(state, takeover), name='dashboard-takeover')
	logger.info('session %r taken over from the dashboard', state.session_id)
	return takeover


async def _hold(state: SessionState, takeover: Takeover) -> None:
	try:
		while not takeover.released.is_set() and state.closed_reason is None and takeover.remaining() > 0:
			with contextlib.suppress(TimeoutError):
				await asyncio.wait_for(takeover.released.wait(), WATCH_INTERVAL)
	finally:
		why = 'released' if takeover.released.is_set() else 'session closed' if state.closed_reason else 'inactivity timeout'
		state.takeover = None
		state.let_go()
		logger.info('takeover of session %r ended (%s)', state.session_id, why)


async def release(state: SessionState, takeover: Takeover) -> None:
	takeover.released.set()
	if takeover.watcher is not None:
		await asyncio.wait({takeover.watcher}, timeout=5)


# -- input -----------------------------------------------------------------------------------

# key name -> (Windows virtual key code, the text it types)
KEYS: dict[str, tuple[int, str]] = {
	'Enter': (13, '\r'),
	'Backspace': (8, ''),
	'Tab': (9, ''),
	'Escape': (27, ''),
	'Delete': (46, ''),
	'ArrowLeft': (37, ''),
	'ArrowUp': (38, ''),
	'ArrowRight': (39, ''),
	'ArrowDown': (40, ''),
	'Home': (36, ''),
	'End': (35, ''),
	'PageUp': (33, ''),
	'PageDown': (34, ''),
}
MAX_TEXT = 2000
MAX_SCROLL = 5000


class BadInput(ValueError):
	"""An input event the dashboard cannot forward; the message names the field."""


def _fraction(event: dict[str, Any], name: str) -> float:
	value = event.get(name)
	if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
		raise BadInput(f'{name} must be a number from 0 to 1 (the position across the frame).')
	return float(value)


async def send_input(state: SessionState, event: dict[str, Any]) -> None:
	"""Forward one person's input event to the focused tab with CDP Input.dispatch*.

	Positions come as fractions of the frame, so the page's viewport size is read here."""
	kind = event.get('kind')
	if kind not in ('click', 'scroll', 'key', 'text'):
		raise BadInput('kind must be one of click, scroll, key, text.')
	cdp = await cdp_page(state)
	send, sid = cdp.cdp_client.send, cdp.session_id
	if kind in ('click', 'scroll'):
		fx, fy = _fraction(event, 'x'), _fraction(event, 'y')
		metrics = await send.Page.getLayoutMetrics(session_id=sid)
		view = metrics.get('cssVisualViewport') or metrics.get('cssLayoutViewport') or {}
		x, y = fx * float(view.get('clientWidth') or 0), fy * float(view.get('clientHeight') or 0)
		if kind == 'click':
			base = {'x': x, 'y': y, 'button': 'left', 'clickCount': 1}
			await send.Input.dispatchMouseEvent(params={'type': 'mouseMoved', 'x': x, 'y': y}, session_id=sid)
			await send.Input.dispatchMouseEvent(params={'type': 'mousePressed', **base}, session_id=sid)
			await send.Input.dispatchMouseEvent(params={'type': 'mouseReleased', **base}, session_id=sid)
		else:
			dy, dx = event.get('dy', 0), event.get('dx', 0)
			for name, value in (('dy', dy), ('dx', dx)):
				if isinstance(value, bool) or not isinstance(value, int | float) or abs(value) > MAX_SCROLL:
					raise BadInput(f'{name} must be a number of pixels between -{MAX_SCROLL} and {MAX_SCROLL}.')
			params = {'type': 'mouseWheel', 'x': x, 'y': y, 'deltaX': float(dx), 'deltaY': float(dy)}
			await send.Input.dispatchMouseEvent(params=params, session_id=sid)
	elif kind == 'text':
		text = event.get('text')
		if not isinstance(text, str) or not text or len(text) > MAX_TEXT:
			raise BadInput(f'text must be a non-empty string of at most {MAX_TEXT} characters.')
		await send.Input.insertText(params={'text': text}, session_id=sid)
	else:
		key = event.get('key')
		if key not in KEYS:
			raise BadInput(f'key must be one of {", ".join(KEYS)}.')
		code, text = KEYS[key]
		down: dict[str, Any] = {
			'type': 'keyDown' if text else 'rawKeyDown',
			'key': key,
			'code': key,
			'windowsVirtualKeyCode': code,
		}
		if text:
			down['text'] = text
		await send.Input.dispatchKeyEvent(params=down, session_id=sid)
		await send.Input.dispatchKeyEvent(
			params={'type': 'keyUp', 'key': key, 'code': key, 'windowsVirtualKeyCode': code}, session_id=sid
		)
