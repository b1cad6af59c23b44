"""JavaScript dialogs a session holds for its caller (``--dialogs hold``).

browser-use answers every dialog itself (the ``dialog_hold`` patch says why and how that is gated).
With ``--dialogs hold`` (or ``browser_create_session{dialogs: 'hold'}`` for one session) a session
takes its dialogs instead: each one opening is recorded here,
told once as a note on the next tool result, shown by ``browser_get_state`` (``dialog``) while it
is open, and answered by ``browser_handle_dialog`` (``Page.handleJavaScriptDialog`` on the CDP
session of the tab that opened it). A dialog blocks its page's script, and a click or key press that
opened one is not finished until it is answered: the call in flight ends as soon as a dialog opens
(``opened``), saying so, instead of running into its deadline.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from browser_use_mcp.patches import dialog_hold, internals, is_active

if TYPE_CHECKING:
	from browser_use_mcp.sessions import SessionState

logger = logging.getLogger(__name__)

KINDS = ('alert', 'confirm', 'prompt', 'beforeunload')
POLICIES = ('accept', 'hold')  # what --dialogs and browser_create_session{dialogs} take


@dataclass
class Dialog:
	kind: str  # alert | confirm | prompt | beforeunload
	message: str
	url: str
	default_prompt: str
	cdp_session_id: str | None
	target_id: str | None = None  # the tab that opened it (None: not known)
	opened_at: float = field(default_factory=time.time)

	def same(self, other: Dialog) -> bool:
		return (self.kind, self.message, self.url) == (other.kind, other.message, other.url)

	def describe(self, with_tab: bool = False) -> dict[str, Any]:
		out: dict[str, Any] = {'type': self.kind, 'message': self.message, 'url': self.url}
		if self.kind == 'prompt':
			out['default_prompt'] = self.default_prompt
		if with_tab and self.target_id:  # in a tab other than the focused one: where to answer it
			out['tab_id'] = self.target_id[-4:]
		return out

	def note(self) -> str:
		what = {'beforeunload': 'a leave-page'}.get(self.kind, f'an {self.kind}' if self.kind == 'alert' else f'a {self.kind}')
		answer = 'browser_handle_dialog{accept: true, prompt_text?}' if self.kind == 'prompt' else 'browser_handle_dialog{accept}'
		tab = f' in tab {self.target_id[-4:]}' if self.target_id else ''
		return (
			f'Note: the page ({self.url[:200]}){tab} opened {what} dialog: {self.message[:500]!r}. It blocks the page '
			f'until answered with {answer}.'
		)


@dataclass(eq=False)
class Dialogs:
	"""The dialogs one session holds, by the CDP session (tab) that opened them."""

	pending: dict[str | None, Dialog] = field(default_factory=dict)
	opened: asyncio.Event = field(default_factory=asyncio.Event)  # set whenever one opens
	session_ref: Any = None  # weakref to the BrowserSession whose dialogs go here

	def first(self) -> Dialog | None:
		return next(iter(self.pending.values()), None)

	def blocks(self, focused: str | None) -> bool:
		"""Whether a held dialog blocks the focused tab (one whose tab is not known counts)."""
		return any(d.target_id is None or d.target_id == focused for d in self.pending.values())

	def in_tab(self, target_id: str) -> Dialog | None:
		"""The dialog open in that tab (by its CDP target id), if any."""
		return next((d for d in self.pending.values() if d.target_id == target_id), None)

	def answered(self, dialog: Dialog) -> None:
		for key in [k for k, d in self.pending.items() if d.same(dialog)]:
			del self.pending[key]


_by_state: weakref.WeakKeyDictionary[SessionState, Dialogs] = weakref.WeakKeyDictionary()


def policy(state: SessionState) -> str:
	"""The session's dialog policy: its own (browser_create_session{dialogs}), else the server's."""
	options = getattr(state, 'options', None)
	own = getattr(options, 'dialogs', None) if options is not None else None
	return own or state.config.dialogs


def holding(state: SessionState) -> bool:
	return policy(state) == 'hold'


def of(state: SessionState) -> Dialogs | None:
	"""The session's held dialogs, once it holds them (``watch``); None in accept mode."""
	try:
		return _by_state.get(state)
	except TypeError:  # not a SessionState (a stand-in): it holds none
		return None


def watch(state: SessionState) -> Dialogs | None:
	"""Make the session hold its dialogs (with ``--dialogs hold``); idempotent, cheap: every call runs it.
	A restarted browser (a new BrowserSession) is taken over again."""
	if not holding(state) or not is_active(dialog_hold.PATCH):
		return None
	dialogs = _by_state.get(state)
	if dialogs is None:
		dialogs = _by_state[state] = Dialogs()
	bs = state.browser_session
	if dialogs.session_ref is not None and dialogs.session_ref() is bs:
		return dialogs
	dialogs.session_ref = weakref.ref(bs)
	dialogs.pending.clear()
	owner = weakref.ref(state)  # the patch's registry must not keep the session alive
	browser_ref = weakref.ref(bs)  # nor the browser session

	def on_open(params: dict[str, Any], session_id: str | None) -> bool:
		dialog = Dialog(
			kind=str(params.get('type') or 'alert'),
			message=str(params.get('message') or ''),
			url=str(params.get('url') or ''),
			default_prompt=str(params.get('defaultPrompt') or ''),
			cdp_session_id=session_id,
			target_id=_target_of(browser_ref(), session_id),
		)
		# a tab with two CDP sessions attached tells it on each: one dialog, answerable on either
		again = any(d.same(dialog) for d in dialogs.pending.values())
		dialogs.pending[session_id] = dialog
		held = owner()
		if held is not None and not again:
			held.notes.append(dialog.note())
		dialogs.opened.set()
		logger.info('holding a dialog (%s) for the caller, tab %s', dialog.kind, (dialog.target_id or '?')[-4:])
		return True

	def on_closed(params: Any, session_id: str | None) -> None:
		dialogs.pending.pop(session_id, None)

	dialog_hold.hold(bs, on_open)
	root = internals.root_cdp_client(bs)
	try:
		if root is None:
			raise internals.Unavailable('no root CDP client')
		internals.hook_cdp_event(root, 'Page.javascriptDialogClosed', on_closed)
	except internals.Unavailable as exc:  # browser_handle_dialog then learns it from Chromium's answer
		logger.info('dialogs closed by the page are not noticed (%s)', exc)
	return dialogs


def _target_of(bs: Any, session_id: str | None) -> str | None:
	"""The tab (CDP target id) a CDP session is attached to, as browser-use's session manager knows it."""
	if session_id is None:
		return None
	try:
		return bs.session_manager.get_target_id_from_session_id(session_id)
	except Exception:  # no session manager (not started): the tab is not known
		return None


def stopped_reply(tool: str, dialogs: Dialogs | None, structured: bool, elsewhere: bool = False) -> Any:
	"""What a call that a dialog interrupted answers: the action was sent, the page waits for an answer.
	``elsewhere``: the dialog is in another tab, whose renderer process this tab's page seems to share."""
	from browser_use_mcp.errors import BrowserActionFailed
	from browser_use_mcp.tools.base import Reply

	dialog = dialogs.first() if dialogs is not None else None
	what = f'{"an" if dialog.kind == "alert" else "a"} {dialog.kind} dialog' if dialog is not None else 'a dialog'
	if elsewhere:
		tab = f' {dialog.target_id[-4:]}' if dialog is not None and dialog.target_id else ''
		text = (
			f'{tool}: {what} is open in tab{tab} and waits for an answer; this tab did not answer meanwhile (tabs that '
			'share a browser process pause together while one shows a dialog), so this call stopped waiting (what it '
			f'sent was sent). Answer it with browser_handle_dialog{{tab_id: "{tab.strip()}"}}, then retry.'
		)
	else:
		text = (
			f'{tool}: {what} is open in the page and waits for an answer, so this call stopped waiting for the page '
			'(what it sent was sent). Answer it with browser_handle_dialog.'
		)
	if structured:  # no output of the declared shape to give
		raise BrowserActionFailed(text)
	return Reply(text)
