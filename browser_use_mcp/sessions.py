"""Sessions: one browser each, created on first use, serialized within, parallel across.

``SessionRegistry`` is the only owner of session state. It resolves a ``(principal,
session_id)`` pair to a ``SessionState`` (creating it exactly once even under racing
calls), runs a tool call under that session's lock, cancels the call in flight when the
session is closed, expires idle sessions, and remembers - boundedly - which ids lost their
state so the next call can say so instead of silently starting over.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import math
import os
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

import anyio
from uuid_extensions import uuid7str

from browser_use_mcp import ahead
from browser_use_mcp import tasks as task_scopes
from browser_use_mcp.admission import CallSlots, Notify, QueueTimeout, SessionSlots, Waiter, wait_for_grant
from browser_use_mcp.browser import Owner, SessionDirs
from browser_use_mcp.calllog import CallLog
from browser_use_mcp.config import ServerConfig
from browser_use_mcp.durable import Record, StoreLocked, Unreadable, store_for
from browser_use_mcp.errors import (
	BrowserActionFailed,
	BrowserStartFailed,
	InvalidArgument,
	SessionClosed,
	SessionLimitReached,
	SessionLost,
	SessionNotFound,
)
from browser_use_mcp.pool import BrowserPool, Spare
from browser_use_mcp.processes import reap_orphans
from browser_use_mcp.providers import Browser, BrowserProvider
from browser_use_mcp.recorder import Recording, Recordings, parse_kinds
from browser_use_mcp.runtime import LOCAL_PRINCIPAL, BrowserRuntime
from browser_use_mcp.session_options import SessionOptions
from browser_use_mcp.tasks import held

if TYPE_CHECKING:  # browser-use's own classes: loaded once at start-up (runtime.py), not by this module
	from browser_use.browser.session import BrowserSession
	from browser_use.filesystem.file_system import FileSystem
	from browser_use.llm.base import BaseChatModel
	from browser_use.tools.service import Tools

logger = logging.getLogger('browser_use_mcp.sessions')

DEFAULT_SESSION_ID = 'default'
MAX_SESSION_ID_LENGTH = 256
TOMBSTONE_LIMIT = 1024
SNAPSHOT_TIMEOUT = 10.0  # s to read a durable session's state when it closes
# s from a durable session's first unsaved page-changing call to the save of its record: calls within
# it are saved together (one read of the session, one write, off the event loop, every SAVE_AFTER s at most)
SAVE_AFTER = 2.0
MAX_REOPENED_TABS = 20  # a durable session reopens at most this many tabs (the focused one first)
CANCEL_GRACE = 15.0  # s a cancelled handler gets to let go of the browser
DEATH_NOTICE = 2.0  # s a browser whose connection dropped gets to be seen dead before the error is the call's own
WEDGED_AFTER = 3600.0  # s after which a call given no deadline no longer keeps its session from expiring
HOLD_NOTICE = 5.0  # s between progress notices to a call waiting for a person (dashboard takeover)

current_session: contextvars.ContextVar[str] = contextvars.ContextVar('current_session', default='-')


def tagged(session_id: str) -> contextvars.Context:
	"""A context for a task working on one session, so its log lines (and those of the browser-use
	tasks it starts) carry that session's id even when no tool call is in flight."""
	context = contextvars.copy_context()
	context.run(current_session.set, session_id)
	context.run(task_scopes.leave_scope)  # it creates, closes or loses a browser: none of its tasks
	return context


T = TypeVar('T')
LossReason = Literal['expired', 'max_duration', 'crashed']


def check_session_id(session_id: Any) -> str:
	"""Accept any printable string id; reject what cannot be an id, saying why."""
	if not isinstance(session_id, str):
		raise InvalidArgument(
			f'session_id must be a string, not {type(session_id).__name__}. Omit it to use the default session.'
		)
	if session_id == '':
		raise InvalidArgument('session_id must not be empty. Omit it to use the default session.')
	if len(session_id) > MAX_SESSION_ID_LENGTH:
		raise InvalidArgument(
			f'session_id is {len(session_id)} characters long; the limit is {MAX_SESSION_ID_LENGTH}. '
			'Use a shorter id, e.g. one returned by browser_create_session.'
		)
	if any(ord(ch) < 32 or ord(ch) == 127 for ch in session_id):
		raise InvalidArgument('session_id must not contain control characters (such as NUL or newline).')
	return session_id


def new_session_id() -> str:
	"""A server-minted handle: uuid7 (time-ordered) plus 64 more random bits.

	uuid_extensions' uuid7 spends 60 bits on a public timestamp and 14 on a counter, leaving
	only 48 random; the os.urandom suffix keeps a handle unguessable (112 random bits) even to
	someone who knows when it was made.
	"""
	return f'browser_{uuid7str()}{os.urandom(8).hex()}'


def _clock(ts: float) -> str:
	return datetime.fromtimestamp(ts, UTC).strftime('%Y-%m-%d %H:%M:%S UTC')


@dataclass
class Tombstone:
	reason: LossReason
	at: float
	detail: str = ''

	def cause(self) -> str:
		when = _clock(self.at)
		return {
			'expired': f'it was closed at {when} after {self.detail} without activity (idle timeout)',
			'max_duration': f'it was closed at {when} because it reached the maximum session duration of {self.detail}',
			'crashed': f'its browser died at {when} ({self.detail})',
		}[self.reason]

	def message(self, session_id: str) -> str:
		return (
			f'Session {session_id!r} lost its browser state: {self.cause()}. Its cookies, tabs, history and '
			'page state are gone. Call again with the same session_id to start a fresh, empty session.'
		)

	def restart_note(self) -> str:
		"""For the default session, which restarts instead of failing (clients that never pass a
		session_id cannot act on "call again with the same session_id")."""
		return f'Note: the browser was restarted because {self.cause()}; its tabs and history were reset.'


# -- what rooms above the registry keep in a session ------------------------------------------
#
# The tools remember the last page state's indices in a session, the dashboard a person's takeover.
# The registry only stores them and asks whether one is there; these protocols say what each is,
# and what anyone reading it back through the session may use, without importing the rooms that
# make them (both import this module).


class PageMemory(Protocol):
	"""What the session's last page state showed, so an index is checked before it is used
	(``tools.common.PageEpoch``): the focused tab, the document in its main frame, the elements."""

	@property
	def target_id(self) -> str | None: ...

	@property
	def loader_id(self) -> str | None: ...  # None: unknown, so no index of that state is used

	@property
	def elements(self) -> Mapping[int, Any]: ...


class PersonDriving(Protocol):
	"""A person driving the session from the dashboard (``dashboard.live.Takeover``): while one is
	set, tool calls wait for the session (``SessionState.hold``) and are told why."""

	@property
	def login(self) -> str: ...

	@property
	def holding(self) -> bool: ...  # the session's lock is theirs (False: still waiting for a call)

	def remaining(self) -> float: ...  # seconds until it ends without input


@dataclass(eq=False)
class SessionState:
	"""Everything one session owns. Tool handlers receive this and nothing global."""

	session_id: str
	principal: str
	browser: Browser
	dirs: SessionDirs
	config: ServerConfig
	is_default: bool = False
	created_at: float = field(default_factory=time.time)
	last_activity: float = field(default_factory=time.time)
	lock: asyncio.Lock = field(default_factory=asyncio.Lock)
	notes: list[str] = field(default_factory=list)  # told to the client once, on its next reply
	llm: BaseChatModel | None = None  # extraction model, made on first use (tools/content.py)
	page_epoch: PageMemory | None = None  # what the last page state showed, for its indices
	busy: int = 0
	busy_until: float = 0.0  # when the running call should be over: past it, the session counts as idle again
	closed_reason: str | None = None
	calls: set[asyncio.Task[Any]] = field(default_factory=set)  # tool calls running in it now
	file_system: FileSystem | None = None  # browser-use's, in the session's files directory
	options: SessionOptions | None = None  # what browser_create_session made it with (None: server defaults)
	log: CallLog = field(default_factory=CallLog)  # recent tool calls, for the dashboard
	takeover: PersonDriving | None = None  # a person drives the page and holds the lock
	saved_states: Path | None = None  # the principal's named storage states (browser_save_state{path})
	crashed_sessions: set[str] = field(default_factory=set)  # CDP sessions of tabs whose renderer died
	crash_signal: asyncio.Event = field(default_factory=asyncio.Event)  # set on every such crash
	crash_watch: BrowserSession | None = None  # whose crashes are watched (tools.common.watch_crashes)
	persist: bool = False  # a durable session: its state is kept under the state dir (durable.py)
	saver: asyncio.Task[None] | None = None  # a durable session's record save, due after a page-changing call
	saving: bool = False  # that save is reading the session or writing its record (no longer cancellable)
	recording: Recording | None = None  # this session's flight recorder (None: not recorded)
	ahead: asyncio.Task[None] | None = None  # its page's state being built ahead (ahead.py), between calls
	_tools: Tools[Any] | None = None

	@property
	def browser_session(self) -> Any:  # a BrowserSession; typed, it shows mypy loose CDP calls in tools/common.py
		return self.browser.session

	@property
	def tools(self) -> Tools[Any]:
		"""browser-use's ``Tools`` (extraction, the agent's actions), made when first needed."""
		if self._tools is None:
			from browser_use.tools.service import Tools

			self._tools = Tools()
		return self._tools

	@property
	def key(self) -> tuple[str, str]:
		return (self.principal, self.session_id)

	def touch(self) -> None:
		self.last_activity = time.time()

	async def hold(
		self,
		deadline: float | None,
		*,
		wait: float | None = None,
		while_waiting: Callable[[], Awaitable[None]] | None = None,
	) -> None:
		"""Take the session for one holder at a time: a tool call, or a person at the dashboard.

		Waits for the session's lock (at most ``wait`` s: TimeoutError), running ``while_waiting``
		meanwhile if someone holds it. Held, the session is busy: not idle (so not expired) until
		``deadline`` s from now, or for as long as it is held (None: a takeover, which ends itself
		on inactivity). Every ``hold`` is paired with one ``let_go``. Only a build ahead (ahead.py)
		takes the lock otherwise, when free, and every ``hold`` cancels it first."""
		await ahead.stop(self)
		told = asyncio.create_task(while_waiting()) if while_waiting is not None and self.lock.locked() else None
		try:
			await asyncio.wait_for(self.lock.acquire(), wait)
		finally:
			if told is not None:
				told.cancel()
		ahead.cancel(self)  # one the call before this one scheduled as it ended (this call's state may be it)
		self.busy += 1
		self.touch()
		self.busy_until = math.inf if deadline is None else self.last_activity + deadline

	def let_go(self) -> None:
		"""End a ``hold``: the session is idle from now on, and the next holder may take it."""
		self.busy -= 1
		self.touch()
		self.lock.release()

	@contextlib.asynccontextmanager
	async def held(
		self, deadline: float | None, *, while_waiting: Callable[[], Awaitable[None]] | None = None
	) -> AsyncIterator[None]:
		"""``hold`` for the duration of a block."""
		await self.hold(deadline, while_waiting=while_waiting)
		try:
			yield
		finally:
			self.let_go()

	def idle_seconds(self, now: float | None = None) -> float:
		"""Seconds without activity; a call in flight is activity until its deadline, not forever
		(a call wedged past it must not keep its session from expiring)."""
		now = now or time.time()
		if self.busy:
			return 0.0 if now < self.busy_until else now - self.busy_until
		return max(0.0, now - self.last_activity)

	def expires_in(self, now: float | None = None) -> float | None:
		"""Seconds until the reaper closes this session (None: never)."""
		now = now or time.time()
		limits = []
		if self.config.idle_timeout > 0:
			limits.append(self.config.idle_timeout - self.idle_seconds(now))
		if self.config.max_session_duration > 0:
			limits.append(self.config.max_session_duration - (now - self.created_at))
		return max(0.0, min(limits)) if limits else None

	def take_notes(self) -> list[str]:
		notes, self.notes = self.notes, []
		with contextlib.suppress(Exception):
			notes.extend(self.browser.take_notes())
		return notes


class SessionRegistry:
	"""Creates, finds, serializes, expires and closes sessions."""

	def __init__(self, config: ServerConfig, owner: Owner | None = None, runtime: BrowserRuntime | None = None) -> None:
		"""``runtime``: what makes every session's browser (runtime.py); by default the real one, for
		``config`` (in-process tests give one whose provider is a fake)."""
		self.config = config
		self.runtime = runtime if runtime is not None else BrowserRuntime(config, owner)
		self._sessions: dict[tuple[str, str], SessionState] = {}
		self._creating: dict[tuple[str, str], asyncio.Task[SessionState]] = {}
		self._closing: dict[tuple[str, str], asyncio.Task[None]] = {}
		self._tombstones: OrderedDict[tuple[str, str], Tombstone] = OrderedDict()
		self._restarts: dict[tuple[str, str], Tombstone] = {}  # default sessions lost: told on restart
		self.recordings: Recordings | None = None  # the flight recorder's recordings (made at start)
		self._reaper: asyncio.Task[None] | None = None
		self._background: set[asyncio.Task[Any]] = set()
		self._shutting_down = False
		self.single_principal = len(config.auth_tokens) <= 1 and config.auth != 'oauth'  # OAuth: any number of subjects
		self.slots = SessionSlots(config.max_sessions, config.max_sessions_per_principal, self._held)
		self.call_slots = CallSlots(config.max_calls_per_principal)
		self.revoked: set[str] = set()  # principals whose token was removed: no new session (a call already past auth)
		self.pool: BrowserPool | None = None  # --prewarm: launched browsers for new sessions
		self._starting: asyncio.Task[None] | None = None
		self.durable = store_for(config.state_dir)  # durable sessions (owned only when persisting: durable.py)

	# -- lifecycle ---------------------------------------------------------------------------

	def begin(self) -> None:
		"""Start in the background, so the MCP handshake and tools/list are answered at once:
		loading browser-use and sweeping leftovers take a second or more (several under load,
		when some clients give up). Calls that need a browser wait for ``ready``."""
		if self._starting is None:
			self._starting = asyncio.create_task(self._start(), name='registry-start')
			self._starting.add_done_callback(lambda t: t.cancelled() or t.exception())

	async def start(self) -> None:
		self.begin()
		await self.ready()

	async def ready(self) -> None:
		if self._starting is None:
			raise RuntimeError('registry not started')
		try:
			await asyncio.shield(self._starting)
		except asyncio.CancelledError:
			if self._starting.cancelled():
				raise SessionClosed('The server is shutting down; no new sessions can be created.') from None
			raise
		except Exception as exc:
			raise BrowserStartFailed(
				f'The server could not prepare its browsers: {type(exc).__name__}: {exc}. Run `browser-use-mcp doctor`.'
			) from exc

	async def _start(self) -> None:
		await self.runtime.start()  # browser-use, the sweep, the sidecar, the patches, the providers
		self.config = self.runtime.config
		state_dir = self.runtime.state_dir
		assert state_dir is not None
		self.durable = store_for(self.config.state_dir)
		if self.config.persist_sessions:
			self.durable.acquire()  # the CLI took it before serving; StoreLocked here fails the start
		else:
			self.durable.try_acquire()  # a store left by an earlier server: serve it when nobody else does
		# recordings outlive the server under the state dir (recorder.py: adopted here, in a thread)
		self.recordings = await asyncio.to_thread(
			Recordings.open,
			self.config.state_dir,
			state_dir.path,
			self.config.recordings_ttl,
			size_cap=self.config.recording_size_cap,
		)
		await self.recordings.adopt()
		self._reaper = asyncio.create_task(self._reap_forever(), name='session-reaper')
		if self.config.prewarm > 0:
			provider = self.runtime.provider_for(is_default=False)
			self.pool = BrowserPool(
				self.config.prewarm,
				new_dirs=lambda: state_dir.new_session_dirs(LOCAL_PRINCIPAL, 'prewarmed'),
				launch=provider.open,
				room=lambda: self.config.max_sessions - self.count,
			)
			self.pool.start()

	async def started_recordings(self) -> Recordings | None:
		"""The recordings once start-up has adopted those an earlier server left (recorder.py): a
		reader asking in the server's first seconds waits for them rather than missing them."""
		if self.recordings is None and self._starting is not None:
			await asyncio.wait({self._starting})  # its failure is reported by ready(), not here
		return self.recordings

	async def shutdown(self) -> None:
		"""Close every session and remove our state dir. Idempotent; never raises."""
		self._shutting_down = True
		self.slots.close(SessionClosed('The server is shutting down; no new sessions can be created.'))
		if self._starting is not None and not self._starting.done():
			self._starting.cancel()
			with contextlib.suppress(asyncio.CancelledError, Exception):
				await self._starting
		if self._reaper:
			self._reaper.cancel()
			with contextlib.suppress(asyncio.CancelledError, Exception):
				await self._reaper
		if self.pool is not None:
			await self.pool.close()
		for task in list(self._creating.values()):
			task.cancel()
		with contextlib.suppress(Exception):
			await asyncio.gather(*self._creating.values(), return_exceptions=True)
		await asyncio.gather(
			*(self._close_state(s, 'the server shut down') for s in list(self._sessions.values())), return_exceptions=True
		)
		await asyncio.gather(*self._closing.values(), *self._background, return_exceptions=True)
		await self.runtime.shutdown()  # providers, egress doors, our state dir, the sidecar
		if self.recordings is not None:  # closed above, their metadata written: the next server adopts them
			await asyncio.to_thread(self.recordings.purge)
			self.recordings.release()
		self.durable.release()

	# -- health ------------------------------------------------------------------------------

	def providers(self) -> list[BrowserProvider]:
		"""Where sessions' browsers come from (named and default sessions), once each."""
		return self.runtime.all_providers()

	def pending(self) -> list[tuple[str, str]]:
		"""(principal, session id) of the sessions being created now."""
		return list(self._creating)

	async def not_ready(self) -> str | None:
		"""Why a new session could not be served now (None: it could), without launching anything:
		start-up (browser-use, the patches, the sweep) not done or failed, shutting down, or a
		provider that knows it cannot make a browser (no Chromium, the last launch failed, the Grid
		does not answer)."""
		if self._shutting_down:
			return 'the server is shutting down'
		starting = self._starting
		if starting is None or not starting.done():
			return 'starting: loading browser-use'
		if starting.cancelled():
			return 'the server is shutting down'
		if starting.exception() is not None:
			exc = starting.exception()
			return f'the server could not prepare its browsers: {type(exc).__name__}: {exc}'
		for provider in self.providers():
			problem = await provider.problem()
			if problem:
				return problem
		return None

	# -- lookup ------------------------------------------------------------------------------

	def sessions(self, principal: str | None = None) -> list[SessionState]:
		return [s for s in self._sessions.values() if principal is None or s.principal == principal]

	def exists(self, principal: str, session_id: str) -> bool:
		key = (principal, session_id)
		return key in self._sessions or key in self._creating

	async def saved_states(self, principal: str) -> Path:
		"""Where this principal's named storage states are kept (see ``StateDir.saved_states``)."""
		await self.ready()
		assert self.runtime.state_dir is not None
		return self.runtime.state_dir.saved_states(principal)

	def normalize_id(self, session_id: str | None) -> str:
		return DEFAULT_SESSION_ID if session_id is None else check_session_id(session_id)

	def raise_if_lost(self, principal: str, session_id: str) -> None:
		"""If this id lost its state, say so (once) instead of 'not found'."""
		lost = self._take_loss((principal, session_id))
		if lost is not None:
			raise lost

	def _take_loss(self, key: tuple[str, str]) -> SessionLost | None:
		"""The one-time error for an id whose state was lost, consumed; None if there is none."""
		tomb = self._tombstones.pop(key, None)
		return None if tomb is None else SessionLost(tomb.message(key[1]))

	def retention_text(self) -> str:
		parts = []
		if self.config.idle_timeout > 0:
			parts.append(f'closed after {self.config.idle_timeout:g} s without a call')
		if self.config.max_session_duration > 0:
			parts.append(f'closed {self.config.max_session_duration:g} s after creation whatever its activity')
		if not parts:
			return 'Sessions are kept until closed (no expiry configured).'
		return 'A session is ' + ' and '.join(parts) + '; its cookies, tabs and pages are then gone.'

	@property
	def count(self) -> int:
		return len(self._sessions) + len(self._creating)

	def _held(self, principal: str | None) -> int:
		"""Sessions open or being created, a principal's or everyone's."""
		if principal is None:
			return self.count
		return sum(1 for k in self._sessions if k[0] == principal) + sum(1 for k in self._creating if k[0] == principal)

	def _slot_freed(self) -> None:
		self.slots.admit()

	async def _wait_for_slot(self, principal: str, sid: str, waiting: Notify | None) -> None:
		"""Queue for a session slot; return holding one (reserved), or raise after --queue-timeout."""
		timeout = self.config.queue_wait
		if timeout <= 0:
			raise self._limit_error(principal, sid)
		waiter = self.slots.enqueue(principal)
		try:
			await wait_for_grant(
				waiter,
				timeout,
				waiting,
				lambda: f'Waiting for a session slot for {sid!r}: {self.slots.describe(waiter)}.',
				lambda: self._queue_timeout(waiter, sid, timeout),
			)
			waiter.future.result()  # the server shutting down fails every waiter
		except BaseException:
			self.slots.withdraw(waiter)
			raise

	def _queue_timeout(self, waiter: Waiter, sid: str, timeout: float) -> Exception:
		return QueueTimeout(
			f'Cannot create session {sid!r} yet: {self.slots.describe(waiter)}; no slot freed within {timeout:g} s '
			'(--queue-timeout). This is temporary: retry later, or close a session you no longer need with '
			'browser_close_session (browser_list_sessions shows yours).'
		)

	def _limit_error(self, principal: str, sid: str) -> Exception:
		"""No queueing (--queue-timeout 0, stdio's default): refused at once, as before queues."""
		if self.slots.principal_full(principal):
			return SessionLimitReached(
				f'Cannot create session {sid!r}: you hold {self.slots.held(principal)} sessions, your limit '
				f'(--max-sessions-per-principal {self.config.max_sessions_per_principal}). Close one you no longer need '
				'with browser_close_session (browser_list_sessions shows yours), then retry.'
			)
		held = f'already holds {self.count} sessions, its limit' if self.single_principal else 'is at its session limit'
		return SessionLimitReached(
			f'Cannot create session {sid!r}: the server {held} (--max-sessions {self.config.max_sessions}). '
			'Close one you no longer need with browser_close_session (browser_list_sessions shows yours), then retry.'
		)

	async def resolve(
		self,
		principal: str,
		session_id: str | None,
		*,
		create: bool = True,
		options: SessionOptions | None = None,
		waiting: Notify | None = None,
		persist: bool = False,
	) -> SessionState:
		"""The live session for this id; created on first use (with ``options``, if it is created
		by this call; durable with ``persist``, or reopened from its durable record); SessionLost once
		after a loss."""
		sid = self.normalize_id(session_id)
		key = (principal, sid)
		await self.ready()
		while True:
			closing = self._closing.get(key)
			if closing is not None:
				if closing.done():
					# finished, its done callback not run yet: awaiting a done task does not yield, so
					# waiting for that callback here would spin this loop forever
					self._closing.pop(key, None)
				else:
					with contextlib.suppress(Exception):
						await asyncio.shield(closing)
				continue
			state = self._sessions.get(key)
			if state is not None:
				if not state.browser.alive() and state.closed_reason is None:
					await self._lose(state, 'crashed', state.browser.death_detail())
					continue
				return state
			lost = self._take_loss(key)
			if lost is not None:
				raise lost
			if not create:
				raise SessionNotFound(sid)
			task = self._creating.get(key)
			if task is None:
				if self._shutting_down:
					raise SessionClosed('The server is shutting down; no new sessions can be created.')
				if principal in self.revoked:
					raise SessionClosed("This client's token was revoked; no new sessions can be created with it.")
				if not self.slots.try_now(principal):
					await self._wait_for_slot(principal, sid, waiting)
					if key in self._sessions or key in self._creating or key in self._closing or self._shutting_down:
						self.slots.give_back(principal)  # another call made (or is closing) this id meanwhile
						continue
				task = asyncio.create_task(
					self._create(principal, sid, options, persist), name=f'create-session-{sid[:40]}', context=tagged(sid)
				)
				self._creating[key] = task
				self.slots.taken(principal)  # counted as being created from now on
				task.add_done_callback(lambda _t, k=key: self._creation_done(k))
			return await asyncio.shield(task)

	def _creation_done(self, key: tuple[str, str]) -> None:
		self._creating.pop(key, None)
		self._slot_freed()  # a failed creation frees its slot (a made one moved to _sessions)

	async def create(
		self,
		principal: str,
		session_id: str | None,
		options: SessionOptions | None = None,
		waiting: Notify | None = None,
		persist: bool = False,
	) -> tuple[SessionState, bool]:
		"""For browser_create_session: (state, created_now). Options are for a new session only:
		with options, an id that is already open is refused rather than returned unchanged."""
		sid = new_session_id() if session_id is None else self.normalize_id(session_id)
		if options is not None and options.empty:
			options = None
		if options is not None:
			self._refuse_existing(principal, sid)
			await self.ready()
			provider = self.runtime.provider_for(is_default=sid == DEFAULT_SESSION_ID)
			provider.check_options(options)  # before anything is made
			self._refuse_existing(principal, sid)
		if persist:
			await self.ready()
			self._check_persist(sid)
		existed = self.exists(principal, sid)
		state = await self.resolve(principal, sid, options=options, waiting=waiting, persist=persist)
		if persist and not state.persist:  # open already: durable from now on
			state.persist = True
			await self._save_record(state, Record(sid, state.created_at, time.time(), options=state.options))
		if options is not None and state.options is not options:
			raise self._existing_error(sid)  # another call created it first, without these options
		return state, not existed

	def _check_persist(self, session_id: str) -> None:
		"""A durable session can be made here: a named one, and this server owns the store."""
		if session_id == DEFAULT_SESSION_ID:
			raise InvalidArgument(
				"persist: the default session cannot be made durable (with a single client it already keeps browser-use's "
				'persistent profile); give a session_id.'
			)
		try:
			self.durable.acquire()
		except (StoreLocked, OSError) as exc:
			raise InvalidArgument(f'persist: this server cannot keep durable sessions: {exc}') from None

	def persisted(self, principal: str) -> list[Record]:
		"""This principal's durable sessions that are not running now."""
		self.durable.try_acquire()  # a listing may come before start-up has looked at the store
		return [r for r in self.durable.records(principal) if not self.exists(principal, r.session_id)]

	async def delete(self, principal: str, session_id: str) -> bool:
		"""End a session for good: close it if it runs (without saving) and remove its durable record."""
		state = await self._once_created(principal, session_id)
		if state is not None:
			state.persist = False
		closed = await self.close(principal, session_id, 'deleted by browser_delete_session')
		self.durable.try_acquire()
		removed = await asyncio.to_thread(self.durable.delete, principal, session_id)
		return closed or removed

	async def _save_record(self, state: SessionState, record: Record) -> None:
		try:
			await asyncio.to_thread(self.durable.save, state.principal, record)
		except Exception:  # the session still works; its durable copy is older than it
			logger.exception('could not save durable session %r', state.session_id)

	def page_changed(self, state: SessionState) -> None:
		"""A call that may have changed a durable session's page ended: its record is saved within
		SAVE_AFTER s (one save for every call until then), so a crash loses at most that much."""
		if not state.persist or state.closed_reason is not None or self._shutting_down:
			return
		if state.saver is None or state.saver.done():
			saving = asyncio.create_task(self._save_soon(state), name=f'save-session-{state.session_id[:40]}')
			state.saver = held(saving, self._background)

	async def _save_soon(self, state: SessionState) -> None:
		await asyncio.sleep(SAVE_AFTER)
		if not state.persist or state.closed_reason is not None or not state.browser.alive():
			return
		state.saving = True
		started = time.perf_counter()
		try:
			record = await self._snapshot(state)  # CDP reads: awaits, no work on the loop to speak of
			if record is not None and state.persist and state.closed_reason is None:
				await self._save_record(state, record)  # JSON and the write in a thread
				logger.info(
					'durable session %r saved in %.0f ms (%d tab(s), %d cookie(s))',
					state.session_id,
					(time.perf_counter() - started) * 1000,
					len(record.urls),
					len(record.state.cookies),
				)
		finally:
			state.saving = False

	async def _settle_save(self, state: SessionState) -> None:
		"""Before a session's last save: a save still waiting is dropped, one under way is waited for
		(its write must not land after the last one)."""
		saver = state.saver
		if saver is None or saver.done():
			return
		if not state.saving:
			saver.cancel()
		with contextlib.suppress(asyncio.CancelledError, Exception):
			await saver

	async def _snapshot(self, state: SessionState) -> Record | None:
		"""The session's storage state and tab URLs now (None when its browser cannot be read)."""
		from browser_use_mcp.storage import read_state

		try:
			bs = state.browser_session
			data = await asyncio.wait_for(read_state(state), SNAPSHOT_TIMEOUT)
			focus = bs.agent_focus_target_id
			targets = bs.session_manager.get_all_page_targets()
			urls = [t.url for t in targets if t.target_id == focus] + [t.url for t in targets if t.target_id != focus]
		except Exception as exc:
			logger.warning('could not read durable session %r to save it: %s', state.session_id, str(exc)[:200])
			return None
		return Record(state.session_id, state.created_at, time.time(), urls, data, options=state.options)

	async def _restore(self, state: SessionState, record: Record) -> str:
		"""Apply a durable record to a session being created; the note that says so."""
		from browser_use.browser.events import SwitchTabEvent

		from browser_use_mcp.storage import apply_storage_state
		from browser_use_mcp.tools.common import dispatch, open_url

		await apply_storage_state(state, record.state)
		web = [u for u in record.urls if u.startswith(('http://', 'https://'))]
		url = record.urls[0] if web and record.urls[0] == web[0] else None  # the focused tab, if it showed a page
		others = web[1:] if url is not None else web
		skipped = max(0, len(others) - (MAX_REOPENED_TABS - 1))
		others = others[: MAX_REOPENED_TABS - 1]
		if url is not None:
			await open_url(state, url, False, f'Reopening {url[:200]}')
		focused = state.browser_session.agent_focus_target_id
		failed = 0
		for other in others:
			try:
				await open_url(state, other, True, f'Reopening {other[:200]} in a tab of its own')
			except Exception as exc:  # one tab that cannot be reopened (now refused, say) is not the session's end
				logger.info('durable session %r: could not reopen a tab: %s', state.session_id, str(exc)[:200])
				failed += 1
		if others and focused is not None:
			await dispatch(state, SwitchTabEvent(target_id=focused), 'Focusing the tab that was focused')
		saved = time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime(record.saved_at))
		tabs = ''
		if others:
			tabs = f' and {len(others) - failed} other tab(s)'
			if failed:
				tabs += f' ({failed} could not be reopened)'
		if skipped:
			tabs += f'; {skipped} more tab(s) were not reopened (at most {MAX_REOPENED_TABS})'
		applied = f'; re-applied its options ({", ".join(state.options.given)})' if state.options is not None else ''
		return (
			f'Note: restored durable session {state.session_id!r} as saved at {saved}: {len(record.state.cookies)} cookies, '
			f'localStorage of {len(record.state.origins)} origins'
			+ (f', reopened {url[:200]}' if url else '')
			+ tabs
			+ applied
			+ '.'
		)

	def _refuse_existing(self, principal: str, session_id: str) -> None:
		if self.exists(principal, session_id):
			raise self._existing_error(session_id)

	@staticmethod
	def _existing_error(session_id: str) -> InvalidArgument:
		return InvalidArgument(
			f'Session {session_id!r} is already open; options apply only when a session is created. Close it first '
			'(browser_close_session) and create it again with the options, or call without options to use it as it is.'
		)

	# -- running a call ----------------------------------------------------------------------

	async def run(
		self,
		principal: str,
		session_id: str | None,
		fn: Callable[[SessionState], Awaitable[T]],
		*,
		create: bool = True,
		on_hold: Callable[[SessionState], Awaitable[None]] | None = None,
		deadline: float = WEDGED_AFTER,
		waiting: Notify | None = None,
	) -> tuple[SessionState, T]:
		"""Run ``fn`` on the session under its lock; a close of the session cancels it. ``on_hold`` is
		awaited (then every HOLD_NOTICE s) while the call waits for a person driving it from the dashboard.
		``deadline``: when the call should be over (``fn`` keeps it); past it, plus a grace, the session
		counts as idle again, so a wedged call cannot keep it from expiring. ``waiting`` is told why
		while the call queues for a call slot (--max-calls-per-principal) or a session slot."""
		async with self.call_slots.slot(principal, self.config.queue_wait, waiting):
			return await self._run(principal, session_id, fn, create=create, on_hold=on_hold, deadline=deadline, waiting=waiting)

	async def _run(
		self,
		principal: str,
		session_id: str | None,
		fn: Callable[[SessionState], Awaitable[T]],
		*,
		create: bool,
		on_hold: Callable[[SessionState], Awaitable[None]] | None,
		deadline: float,
		waiting: Notify | None,
	) -> tuple[SessionState, T]:
		state = await self.resolve(principal, session_id, create=create, waiting=waiting)
		told = (lambda: self._tell_held(state, on_hold)) if on_hold is not None else None
		async with state.held(deadline + CANCEL_GRACE, while_waiting=told):
			if state.closed_reason is not None:
				raise SessionClosed(
					f'Session {state.session_id!r} was closed ({state.closed_reason}) while this call waited for it. '
					'Call again to start a fresh session with this id.'
				)
			if not state.browser.alive():
				await state.browser.death_noticed()
				await self._lose(state, 'crashed', state.browser.death_detail())
				return await self._run(
					principal, session_id, fn, create=create, on_hold=on_hold, deadline=deadline, waiting=waiting
				)
			with state.browser.tasks.entered():  # what the call starts belongs to this browser
				inner = asyncio.create_task(fn(state))
			state.calls.add(inner)
			try:
				return state, await asyncio.shield(inner)
			except asyncio.CancelledError:
				current = asyncio.current_task()
				if current is None or current.cancelling() == 0:
					if state.closed_reason is None:  # cancelled from inside, not by us or the client
						raise BrowserActionFailed(
							'The call was interrupted inside the browser; the session is still open, retry it.'
						) from None
					raise self._closed_error(state) from None  # the session was closed under the call
				# The client cancelled. Tell the handler once (the transport's cancel scope
				# re-delivers on every await), and keep the lock until it has let go of the
				# browser, so the next call never overlaps a handler still winding down.
				inner.cancel()
				with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_GRACE):
					await asyncio.wait({inner})
				raise
			except (SessionLost, SessionClosed):
				raise
			except Exception as exc:
				# The browser died under the call: the connection dropped before its exit was noticed.
				# That is the session's one-time "lost its browser state", not an error of this call.
				if state.closed_reason is None and await self._died_under(state, exc):
					await state.browser.death_noticed()
					await self._lose(state, 'crashed', state.browser.death_detail())
				if state.closed_reason is not None:
					raise self._closed_error(state) from None
				raise
			finally:
				state.calls.discard(inner)

	@staticmethod
	async def _died_under(state: SessionState, exc: Exception) -> bool:
		"""Whether the session's browser is gone; after a dropped connection, its exit may take a
		moment to be noticed (DEATH_NOTICE)."""
		if not state.browser.alive():
			return True
		text = f'{type(exc).__name__} {exc}'.lower()
		if not any(word in text for word in ('connection', 'websocket', 'closed', 'broken pipe', 'eof')):
			return False
		deadline = time.monotonic() + DEATH_NOTICE
		while time.monotonic() < deadline:
			await asyncio.sleep(0.05)
			if not state.browser.alive() or state.closed_reason is not None:
				return True
		return False

	@staticmethod
	async def _tell_held(state: SessionState, on_hold: Callable[[SessionState], Awaitable[None]]) -> None:
		while True:
			if state.takeover is not None:
				try:
					await on_hold(state)
				except Exception as exc:  # a notice is a courtesy: the call waits on regardless
					logger.debug('could not tell a waiting call about the takeover: %r', exc)
				await asyncio.sleep(HOLD_NOTICE)
			else:
				await asyncio.sleep(0.2)

	def _closed_error(self, state: SessionState) -> Exception:
		lost = self._take_loss(state.key)
		if lost is not None:
			return lost
		restart = self._restarts.get(state.key) if state.is_default else None
		if restart is not None:  # the default session restarts on the next call, which says so in a note
			return SessionLost(restart.message(state.session_id).replace('Call again with the same session_id', 'Call again'))
		return SessionClosed(
			f'Session {state.session_id!r} was closed ({state.closed_reason}) while this call was running; the call '
			'was cancelled. Call again to start a fresh session with this id.'
		)

	# -- closing -----------------------------------------------------------------------------

	async def _once_created(self, principal: str, session_id: str) -> SessionState | None:
		"""The session with this id, after a creation of it under way has ended (None: there is none)."""
		creating = self._creating.get((principal, session_id))
		if creating is not None:
			with contextlib.suppress(Exception):
				await asyncio.shield(creating)
		return self._sessions.get((principal, session_id))

	async def close(self, principal: str, session_id: str, reason: str = 'closed by browser_close_session') -> bool:
		"""Close a session; False if there is none with this id (for this principal)."""
		key = (principal, session_id)
		state = await self._once_created(principal, session_id)
		if state is None:
			pending = self._closing.get(key)
			if pending is not None:
				with contextlib.suppress(Exception):
					await asyncio.shield(pending)
			return False
		await self._close_state(state, reason)
		return True

	async def close_all(self, principal: str | None, reason: str = 'closed by browser_close_all') -> int:
		targets = [k for k in list(self._sessions) + list(self._creating) if principal is None or k[0] == principal]
		results = await asyncio.gather(*(self.close(k[0], k[1], reason) for k in set(targets)), return_exceptions=True)
		return sum(1 for r in results if r is True)

	async def _close_state(self, state: SessionState, reason: str) -> None:
		key = state.key
		if self._sessions.get(key) is state:
			del self._sessions[key]
			self._slot_freed()
		if state.closed_reason is None:
			state.closed_reason = reason
		pending = self._closing.get(key)
		if pending is None:
			pending = asyncio.create_task(
				self._teardown(state), name=f'close-session-{state.session_id[:40]}', context=tagged(state.session_id)
			)
			self._closing[key] = pending
			pending.add_done_callback(lambda _t, k=key: self._closing.pop(k, None))
		await asyncio.shield(pending)

	async def _teardown(self, state: SessionState) -> None:
		await ahead.stop(state)
		for task in list(state.calls):
			task.cancel()
		if state.calls:
			await asyncio.wait(list(state.calls), timeout=5)
		await self._settle_save(state)
		if state.persist and state.browser.alive():
			record = await self._snapshot(state)
			if record is not None and state.persist:  # a delete meanwhile wins
				await self._save_record(state, record)
		if state.recording is not None:
			await state.recording.close(state)
		graceful = not state.dirs.temporary
		await state.browser.close(graceful=graceful)
		await asyncio.to_thread(state.dirs.remove)
		logger.info('session %r closed (%s)', state.session_id, state.closed_reason)

	async def _lose(self, state: SessionState, reason: LossReason, detail: str) -> None:
		"""Close a session whose state is gone and remember why, for the next call to hear."""
		if state.closed_reason is not None:
			return
		tomb = Tombstone(reason, time.time(), detail)
		if state.persist:
			pass  # durable: the next call reopens it from its record, nothing to tell
		elif state.is_default:
			self._restarts[state.key] = tomb  # one per principal: the next call restarts it, with a note
		else:
			self.remember_loss(state.key, tomb)
		label = {'expired': 'idle timeout', 'max_duration': 'maximum duration reached', 'crashed': 'browser died'}[reason]
		logger.warning('session %r lost: %s (%s)', state.session_id, label, detail)
		await self._close_state(state, label)

	def remember_loss(self, key: tuple[str, str], tomb: Tombstone) -> None:
		"""Keep the newest TOMBSTONE_LIMIT losses: a stream of random ids cannot grow memory."""
		self._tombstones[key] = tomb
		self._tombstones.move_to_end(key)
		while len(self._tombstones) > TOMBSTONE_LIMIT:
			self._tombstones.popitem(last=False)

	def _on_browser_death(self, state: SessionState) -> None:
		if state.closed_reason is not None or self._shutting_down:
			return
		lose = self._lose(state, 'crashed', state.browser.death_detail())
		held(asyncio.create_task(lose, context=tagged(state.session_id)), self._background)

	# -- expiry ------------------------------------------------------------------------------

	async def _reap_forever(self) -> None:
		while True:
			await asyncio.sleep(self._reap_interval())
			try:
				await self.reap()
			except Exception:  # keep reaping: a failure here must not stop every later expiry
				logger.exception('expiring idle sessions failed')
			if self.recordings is not None:  # recordings past --recordings-ttl or over the total cap
				self.recordings.sweep()
				await asyncio.to_thread(self.recordings.purge)
			try:  # helpers of a browser killed from outside, when they are ours to reap
				if reap_orphans():
					logger.info('reaped exited helper processes of a browser that was killed')
			except Exception:
				logger.exception('reaping orphaned processes failed')

	def _reap_interval(self) -> float:
		limits = [t for t in (self.config.idle_timeout, self.config.max_session_duration) if t > 0]
		return max(0.05, min([1.0, *(t / 4 for t in limits)]))

	async def reap(self, now: float | None = None) -> int:
		now = now or time.time()
		doomed: list[tuple[SessionState, LossReason, str]] = []
		for state in list(self._sessions.values()):
			if self.config.max_session_duration > 0 and now - state.created_at >= self.config.max_session_duration:
				doomed.append((state, 'max_duration', f'{self.config.max_session_duration:g} s'))
			elif self.config.idle_timeout > 0 and state.idle_seconds(now) >= self.config.idle_timeout:
				doomed.append((state, 'expired', f'{self.config.idle_timeout:g} s'))
		await asyncio.gather(
			*(asyncio.create_task(self._lose(s, r, d), context=tagged(s.session_id)) for s, r, d in doomed),
			return_exceptions=True,
		)
		return len(doomed)

	# -- creation ----------------------------------------------------------------------------

	async def _create(
		self, principal: str, session_id: str, options: SessionOptions | None = None, persist: bool = False
	) -> SessionState:
		state_dir = self.runtime.state_dir
		assert state_dir is not None, 'registry not started'
		is_default = session_id == DEFAULT_SESSION_ID
		notes: list[str] = []
		record: Record | None = None
		if not is_default and (self.durable.has(principal, session_id) or persist or self.config.persist_sessions):
			self._check_persist(session_id)
			persist = True
			if self.durable.path(principal, session_id).exists():
				try:
					record = await asyncio.to_thread(self.durable.load, principal, session_id)
				except Unreadable as exc:
					notes.append(
						f'Note: durable session {session_id!r} could not be restored ({exc}); this is a fresh, empty session '
						'(durable from now on).'
					)
				if record is not None and record.options_problem is not None:
					notes.append(
						f'Note: the options durable session {session_id!r} was created with could not be re-applied '
						f"({record.options_problem}); it reopens with the server's defaults."
					)
				elif record is not None and options is None and record.options is not None:
					try:  # as browser_create_session checks them: this server's settings may have changed since
						self.runtime.provider_for(is_default=False).check_options(record.options)
						options = record.options  # made to order once, reopened to the same order
					except InvalidArgument as exc:
						notes.append(
							f'Note: the options durable session {session_id!r} was created with could not be re-applied '
							f"({exc.message}); it reopens with the server's defaults."
						)
		else:
			persist = False
		restarted = self._restarts.pop((principal, session_id), None) if is_default else None
		if restarted is not None:
			notes.append(restarted.restart_note())
		dirs = self.runtime.default_dirs(notes) if is_default and self.single_principal else None
		# spares are launched with the server's defaults: a session made to order gets its own (unless
		# its options are only about what the server does around the browser: dialogs, recording)
		made_to_order = options is not None and options.shapes_browser
		spare = await self.pool.claim() if not is_default and self.pool is not None and not made_to_order else None
		if spare is not None:
			dirs, browser = spare.dirs, spare.browser
		else:
			dirs, browser = await self.runtime.launch(principal, session_id, dirs, notes, is_default, options)
		try:
			from browser_use.filesystem.file_system import FileSystem

			file_system = await asyncio.to_thread(FileSystem, dirs.files)
		except BaseException:
			await Spare(dirs, browser).discard()
			raise
		state = SessionState(
			session_id=session_id,
			principal=principal,
			browser=browser,
			dirs=dirs,
			config=self.config,
			is_default=is_default,
			notes=notes,
			file_system=file_system,
			options=options,
			saved_states=state_dir.saved_states(principal),
			persist=persist,
		)
		if record is not None:
			try:
				notes.append(await self._restore(state, record))
			except Exception as exc:
				notes.append(
					f'Note: durable session {session_id!r} could not be fully restored ({str(exc)[:300]}); it goes on from '
					'what could be applied.'
				)
		elif persist:  # listed (and reopenable) from now on, even if this server is killed
			await self._save_record(state, Record(session_id, state.created_at, time.time(), options=options))
		if self._shutting_down:
			await Spare(dirs, browser).discard()
			raise SessionClosed('The server is shutting down; no new sessions can be created.')
		if self.config.record or (options is not None and options.record):
			assert self.recordings is not None
			kinds = tuple(options.record) if options is not None and options.record else parse_kinds(list(self.config.record), '')
			state.recording = self.recordings.start(principal, session_id, kinds)
			if state.recording is None:
				notes.append(
					f'Note: this session is not recorded: its recording could not be made ({self.recordings.last_error}). '
					'It works as usual; make the server state directory writable (--state-dir) to record sessions.'
				)
		self._sessions[state.key] = state
		browser.on_death(lambda s=state: self._on_browser_death(s))
		logger.info('session %r created (profile %s)', session_id, dirs.profile)
		return state
