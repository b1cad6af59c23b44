"""The flight recorder: what a recorded session did, call by call, kept on disk for a while.

A session is recorded when the server runs with ``--record trace`` or when
``browser_create_session`` asks for ``record: ["trace"]``. Its recording is a directory under the
persistent state directory (``<state dir>/recordings/p-<principal digest>/<session digest>-<rand>/``:
one-way digests and a random suffix, never the id itself), holding ``meta.json`` (who, what, when;
rewritten whole at start and close), ``trace.jsonl`` (one JSON object per call, written once its
page read and screenshot are in) and ``shot-<n>.jpg``: a scaled-down JPEG of the page after each
page-changing call, a frame of the tab's screencast scaled by the browser itself (screencast.py;
``Page.captureScreenshot`` where there is no cast), so no image work runs on the loop. When the
frame is asked for, and why not at once: ``_DueShot``.

Bounded: a recording stops growing at ``SIZE_CAP`` bytes (a last ``truncated`` line says so);
a write that fails (full disk, a directory gone) marks it truncated and the session carries on.
Recordings outlive their session for ``--recordings-ttl`` seconds, all of them together under
``TOTAL_CAP`` bytes (the oldest closed ones go first), and belong to the session's principal.
They outlive the server too: the next server on the same state dir adopts them at start
(``Recordings.adopt``), matching a caller by the digest of its principal. One server at a time owns
that directory (``owner.lock``, as the durable store's); a second one keeps its recordings in its own
scratch directory, gone when it stops.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import secrets
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from browser_use_mcp.calllog import REDACTED, USERINFO, is_secret
from browser_use_mcp.durable import DirHeld, own_dir, principal_digest, release_dir
from browser_use_mcp.files import write_whole
from browser_use_mcp.har import HarLog
from browser_use_mcp.screencast import Screencast
from browser_use_mcp.tasks import held
from browser_use_mcp.texts import dumps

logger = logging.getLogger('browser_use_mcp.recorder')

KINDS = ('trace', 'har', 'video')  # what a session can record
NOT_YET: tuple[str, ...] = ()  # kinds known but refused with a clear error until they exist
RESULT_LIMIT = 2000  # characters of a call's result text kept in the trace
VALUE_LIMIT = 2000  # characters of one string argument kept in the trace
SHOT_WIDTH = 640  # px: screenshots are scaled down to this width (never up)
SHOT_QUALITY = 60  # JPEG quality
SIZE_CAP = 50 * 1024 * 1024  # bytes of one recording; past it, it says "truncated" and stops
TOTAL_CAP = 500 * 1024 * 1024  # bytes of all recordings kept; the oldest closed ones are evicted first
DEFAULT_TTL = 86400.0  # s a recording is kept after its session closed
STEP_BOUND = 2.0  # s the recorder may spend on each read of the page around one call
SHOT_WAIT = 0.5  # s a page-changing call's screenshot waits for the screencast's next frame (off the call's path)
PAINT_LAG = 0.05  # s after a page-changing call ends before its frame is asked for: what it changed is painted by then
SHOT_QUIET = 0.15  # s of a quiet session after which a page-changing call's frame is asked for (see Recording.after)
SHOT_DUE_BOUND = 300.0  # s a frame asked for late may wait for its turn at most (the next calls' deadlines are shorter)
VIDEO_SHARE = 0.5  # of a recording's size cap the video may take (ffmpeg's -fs)
HAR_FILE = 'recording.har'
VIDEO_FILE = 'video.webm'
CONSOLE_FILE = 'console.json'
NETWORK_FILE = 'network.json'
META_FILE = 'meta.json'
META_VERSION = 1
STOPPED = 'server stopped'  # why a recording still open when its server died was cut short

# Calls after which the page (or which page is shown) may have changed: a screenshot follows.
PAGE_CHANGING = frozenset(
	{
		'browser_navigate',
		'browser_click',
		'browser_type',
		'browser_send_keys',
		'browser_go_back',
		'browser_scroll',
		'browser_switch_tab',
		'browser_close_tab',
		'browser_select_option',
		'browser_hover',
		'browser_drag',
		'browser_upload_file',
		'browser_evaluate',
		'retry_with_browser_use_agent',
	}
)


def parse_kinds(value: Any, where: str = 'record') -> tuple[str, ...]:
	"""``"trace"`` or ``["trace"]`` as a tuple of kinds; anything else is a ValueError that says
	what is valid (``har`` and ``video`` are known but not supported yet)."""
	items = [value] if isinstance(value, str) else value
	at = f'{where}: ' if where else ''
	if not isinstance(items, list | tuple) or not all(isinstance(i, str) for i in items):
		raise ValueError(f'{at}must be a kind or a list of kinds; valid kinds: {", ".join(KINDS)}')
	kinds: list[str] = []
	for item in items:
		kind = item.strip().lower()
		if kind in NOT_YET:
			raise ValueError(f'{at}{kind!r} is not supported yet; valid kinds: {", ".join(KINDS)}')
		if kind not in KINDS:
			raise ValueError(f'{at}unknown kind {item[:40]!r}; valid kinds: {", ".join(KINDS)}')
		if kind not in kinds:
			kinds.append(kind)
	return tuple(kinds)


def redact(value: Any, name: str = '', depth: int = 0) -> Any:
	"""An argument as the trace keeps it: the rules of calllog.py (a secret-named value is ``***``,
	a header mapping keeps its names, a URL's user:password@ goes), strings cut at VALUE_LIMIT."""
	if name and is_secret(name):
		return REDACTED
	if isinstance(value, dict):
		if 'header' in name.lower():
			return dict.fromkeys(map(str, value), REDACTED)
		if depth > 3:
			return '{…}'
		return {str(k): redact(v, str(k), depth + 1) for k, v in value.items()}
	if isinstance(value, list | tuple):
		return [redact(v, name, depth + 1) for v in list(value)[:50]]
	if isinstance(value, str):
		text = USERINFO.sub(f'://{REDACTED}@', value)
		return text if len(text) <= VALUE_LIMIT else text[: VALUE_LIMIT - 1] + '…'
	return value


def _typed_secret(tool: str, args: dict[str, Any]) -> dict[str, Any]:
	"""browser_type's text when it looks like an email or a token: hidden from the trace as it is
	from the tool's own reply."""
	if tool == 'browser_type' and isinstance(args.get('text'), str):
		from browser_use_mcp.tools.interaction import _sensitive_kind

		if _sensitive_kind(args['text']):
			return {**args, 'text': REDACTED}
	return args


@dataclass
class Recording:
	"""One session's recording on disk: its trace, and with those kinds its HAR and video."""

	principal: str
	session_id: str
	path: Path
	size_cap: int = SIZE_CAP
	kinds: tuple[str, ...] = ('trace',)
	started: float = field(default_factory=time.time)
	closed_at: float | None = None
	size: int = 0
	calls: int = 0
	truncated: str | None = None  # why it stopped growing
	pending: asyncio.Task[None] | None = field(default=None, repr=False)  # a screenshot taken without the screencast
	har: HarLog | None = field(default=None, repr=False)
	cast: Screencast | None = field(default=None, repr=False)
	writes: set[asyncio.Task[None]] = field(default_factory=set, repr=False)  # page-changing calls being completed
	replaced: dict[str, int] = field(default_factory=dict, repr=False)  # bytes of the files rewritten whole (HAR …)
	video_bytes: int = 0
	owner: str = ''  # digest of the principal: what a recording adopted after a restart is matched by
	due: _DueShot | None = field(default=None, repr=False)  # a page-changing call's frame, not asked for yet
	deferred: _DueShot | None = field(default=None, repr=False)  # a frame asked for, its cast's start waiting for PAINT_LAG

	def __post_init__(self) -> None:
		self.owner = self.owner or principal_digest(self.principal)
		if 'har' in self.kinds:
			self.har = HarLog()
		# the screencast: the trace's screenshots and the video are taken from it
		if 'trace' in self.kinds or 'video' in self.kinds:
			video = self.path / VIDEO_FILE if 'video' in self.kinds else None
			self.cast = Screencast(video, int(self.size_cap * VIDEO_SHARE))

	@property
	def trace(self) -> Path:
		return self.path / 'trace.jsonl'

	@property
	def tracing(self) -> bool:
		return 'trace' in self.kinds

	def _write(self, data: bytes, path: Path, mode: str = 'ab') -> bool:
		"""Append/write ``data``; False (and truncated) when over the cap or the disk refuses."""
		if self.truncated is not None:
			return False
		if self.size + len(data) > self.size_cap:
			self._truncate(f'size cap of {self.size_cap} bytes reached')
			return False
		try:
			with open(path, mode) as f:
				f.write(data)
		except OSError as exc:
			self._truncate(f'could not write: {exc.strerror or exc}')
			return False
		self.size += len(data)
		return True

	def _replace(self, name: str, data: bytes) -> bool:
		"""Write a file whole (a newer HAR replaces the older one), counted once against the cap.
		Blocking: run it in a thread."""
		if self.truncated is not None:
			return False
		old = self.replaced.get(name, 0)
		if self.size - old + len(data) > self.size_cap:
			self._truncate(f'size cap of {self.size_cap} bytes reached (writing {name})')
			return False
		tmp = self.path / f'.{name}.tmp'
		try:
			with open(tmp, 'wb') as f:
				f.write(data)
			tmp.replace(self.path / name)
		except OSError as exc:
			with contextlib.suppress(OSError):
				tmp.unlink()
			self._truncate(f'could not write {name}: {exc.strerror or exc}')
			return False
		self.replaced[name] = len(data)
		self.size += len(data) - old
		return True

	def _truncate(self, why: str) -> None:
		self.truncated = why
		logger.warning('recording of session %r truncated: %s', self.session_id[:40], why)
		line = json.dumps({'truncated': why, 'at': time.time()}).encode() + b'\n'
		with contextlib.suppress(OSError):  # best effort: the disk may be the reason
			with open(self.trace, 'ab') as f:
				f.write(line)
			self.size += len(line)
		self.write_meta()  # why it was cut, kept for the next server should this one be killed

	def meta(self) -> dict[str, Any]:
		"""What the next server needs to adopt this recording (the principal only as its digest)."""
		return {
			'version': META_VERSION,
			'session_id': self.session_id,
			'principal': self.owner,
			'kinds': list(self.kinds),
			'started': self.started,
			'closed_at': self.closed_at,
			'size': self.size,
			'size_cap': self.size_cap,
			'truncated': self.truncated,
			'video_note': self.video_note,
		}

	def write_meta(self) -> bool:
		"""Write meta.json whole or not at all (0600); False when the disk refuses. Small and blocking."""
		try:
			write_whole(self.path / META_FILE, [dumps(self.meta()).encode()])
		except OSError as exc:
			logger.info('could not write the metadata of the recording of %r: %s', self.session_id[:40], exc)
			return False
		return True

	def line(self, entry: dict[str, Any]) -> bool:
		return self._write(dumps(entry, default=str).encode() + b'\n', self.trace)

	async def settle(self) -> None:
		"""Wait (bounded) for the screenshots of the last calls to be taken and written."""
		self.ask_due()
		task = self.pending
		if task is not None and not task.done():
			await asyncio.wait({task}, timeout=2 * STEP_BOUND)
		if self.writes:
			await asyncio.wait(set(self.writes), timeout=2 * STEP_BOUND)

	async def before(self, state: Any, read_only: bool) -> dict[str, Any]:
		"""The page before a call, from browser-use's own record of the focused tab (no round trip;
		read from the page only when it has none). Never waits for the previous call's screenshot when
		it comes from the screencast (the first frame painted after that call, whenever it arrives); a
		capture without the screencast is waited for by a page-changing call, so it never shows its
		doing. A page-changing call first makes sure the cast follows the focused tab (the video)."""
		if not read_only:
			self.ask_due(at_once=True)  # the last page-changing call's frame, before this one changes the page
			if self.pending is not None and not self.pending.done():
				await self.settle()
			if self.cast is not None:
				await self.cast.follow(state)
		elif self.due is not None:
			self.due.hold()  # a read does not change the page: its frame can wait until the read is done
		if not self.tracing:
			return {}
		url, title = _known_page(state)
		if url is None:
			url, title = await _page(state)
		return {'url_before': redact(url), 'title_before': title}

	async def after(
		self,
		state: Any,
		tool: str,
		read_only: bool,
		args: dict[str, Any],
		started: float,
		duration: float,
		result: Any,
		error: str | None,
		seen: dict[str, Any],
	) -> None:
		"""Write one call's entry once it ended. After a call that may change the page, the page after
		it is asked for at once (one ``Runtime.evaluate``: sent later, it could show the next call's
		doing) and after a page-changing call its screenshot (the screencast's first frame painted once
		it is asked for, see _DueShot; within SHOT_WAIT, else the latest one): both in the background,
		the reply waits for neither, and the entry is written once both are in. Never raises."""
		if not self.tracing:
			if self.cast is not None and not read_only and error != 'cancelled':
				await self.cast.follow(state)  # a new tab may have the focus now
			return
		try:
			self.calls += 1
			seq = self.calls
			entry: dict[str, Any] = {
				'seq': seq,
				'tool': tool,
				'started': started,
				'duration_ms': round(duration * 1000, 1),
				'args': redact(_typed_secret(tool, args)),
				'ok': error is None,
				'error': error,
				'result': None,
				'result_truncated': False,
				**seen,
				'url_after': None,
				'title_after': None,
				'screenshot': None,
			}
			text = getattr(result, 'text', result if isinstance(result, str) else None)
			if isinstance(text, str):
				entry['result'] = USERINFO.sub(f'://{REDACTED}@', text[:RESULT_LIMIT])
				entry['result_truncated'] = len(text) > RESULT_LIMIT
			cancelled = error == 'cancelled'
			if read_only:  # it did not change the page: after is before
				entry['url_after'], entry['title_after'] = seen.get('url_before'), seen.get('title_before')
				self.line(entry)
				if self.due is not None:
					self.due.arm()
				return
			if cancelled:
				self.line(entry)
				return
			# sent now, so Chromium answers it before anything the next call sends to the tab; awaited off the reply's path
			page = asyncio.create_task(self._read_after(state, entry), name=f'recorder-page-{seq}')
			shoot = tool in PAGE_CHANGING and self.truncated is None
			cast = self.cast
			if shoot and cast is not None and await cast.follow(state):  # (before() asked for the last call's frame)
				self.due = due = _DueShot(self, cast)
				if cast.continuous:  # a video's cast runs all along: nothing to start, the next frame is the one
					due.ask()
				else:
					due.arm()
				self._write_later(self._complete(entry, page, due), seq)
			elif shoot:  # no screencast: a capture, in the background (the next page-changing call waits for it)
				self.pending = asyncio.create_task(self._shoot(state, entry, page), name=f'recorder-shot-{seq}')
			else:
				self._write_later(self._complete(entry, page, None), seq)
		except Exception as exc:  # the recorder never breaks a call
			logger.warning('could not record %s: %s', tool, exc)

	def ask_due(self, at_once: bool = False) -> None:
		"""Ask now for the frame a page-changing call is still owed; ``at_once``: before another
		page-changing call, whose navigation could lose a cast started during it (so a frame asked for
		a moment ago, its start waiting for PAINT_LAG, is started now too)."""
		if self.due is not None:
			self.due.ask(at_once)
		if at_once and self.deferred is not None:
			self.deferred.start_now()

	def _write_later(self, coro: Any, seq: int) -> None:
		held(asyncio.create_task(coro, name=f'recorder-entry-{seq}'), self.writes)

	async def _read_after(self, state: Any, entry: dict[str, Any]) -> None:
		url, title = await _page(state)
		entry['url_after'], entry['title_after'] = redact(url), title

	async def _complete(self, entry: dict[str, Any], page: asyncio.Task[None], due: _DueShot | None) -> None:
		"""The page after a call and, after a page-changing one, its frame; then its entry."""
		try:
			await page
			if due is None:
				return
			try:
				await asyncio.wait_for(due.asked.wait(), SHOT_DUE_BOUND)
				data = await asyncio.wait_for(asyncio.shield(due.frame), SHOT_WAIT)
			except TimeoutError:  # no repaint: the page looks as the latest frame shows it
				data = self.cast.frame if self.cast is not None else None
			if data is not None:
				name = f'shot-{entry["seq"]:05d}.jpg'
				if await asyncio.to_thread(self._write_frame, data, name):
					entry['screenshot'] = name
		except Exception as exc:
			logger.warning('could not record the screenshot after %s: %s', entry.get('tool'), exc)
		finally:
			self.line(entry)

	def _write_frame(self, frame: str, name: str) -> bool:
		return self._write(base64.b64decode(frame), self.path / name, 'wb')

	async def _shoot(self, state: Any, entry: dict[str, Any], page: asyncio.Task[None]) -> None:
		try:
			await page
			data = await _shot(state)
			if data is not None:
				name = f'shot-{entry["seq"]:05d}.jpg'
				if await asyncio.to_thread(self._write, data, self.path / name, 'wb'):
					entry['screenshot'] = name
		except Exception as exc:
			logger.warning('could not record the screenshot after %s: %s', entry.get('tool'), exc)
		finally:
			self.line(entry)

	@property
	def video(self) -> Path | None:
		return self.cast.video if self.cast is not None else None

	def disk_bytes(self) -> int:
		"""Bytes on disk now, the video being written included (a stat while it grows)."""
		size = self.size
		if self.video is not None and self.closed_at is None:
			with contextlib.suppress(OSError):
				size += self.video.stat().st_size
		return size

	async def snapshot(self, state: Any = None) -> None:
		"""Bring the files read after the fact up to date: the HAR so far and, from the open session,
		its console messages and network requests (tools/debug.py's buffers). Never raises. A closed
		recording's files are final (one adopted after a restart has no HAR entries in memory)."""
		if self.closed_at is not None:
			return
		try:
			if self.har is not None:
				await self.har.settle()
				har, (entries, pages) = self.har, self.har.taken()  # taken on the loop; built in a thread
				data = await asyncio.to_thread(lambda: dumps(har.build(entries, pages)).encode())
				await asyncio.to_thread(self._replace, HAR_FILE, data)
			if state is not None:
				from browser_use_mcp.tools import debug

				buffers = debug.recorder(state)
				console = [m.dump() for m in buffers.console]
				network = [r.out().dump() for r in buffers.requests]
				for name, rows in ((CONSOLE_FILE, console), (NETWORK_FILE, network)):
					data = await asyncio.to_thread(lambda r=rows: dumps(r).encode())
					await asyncio.to_thread(self._replace, name, data)
		except Exception as exc:
			logger.warning('could not write the recording of session %r: %s', self.session_id[:40], exc)

	async def close(self, state: Any = None) -> None:
		if self.closed_at is None:
			await self.settle()
			if self.cast is not None:
				await self.cast.stop()
				if self.video is not None:
					with contextlib.suppress(OSError):
						self.video_bytes = self.video.stat().st_size
						self.size += self.video_bytes
			await self.snapshot(state)
			if self.har is not None:
				self.har.stop()
			self.closed_at = time.time()
			self.line({'closed': self.closed_at, **({'video': self.cast.video_error} if self.video and self.cast else {})})
			await asyncio.to_thread(self.write_meta)  # a restarted server adopts it from this

	@property
	def video_note(self) -> str | None:
		return self.cast.video_error if self.cast is not None and self.video is not None else None


class _DueShot:
	"""The frame a page-changing call is owed, asked of the screencast once the session is quiet.

	Starting the screencast makes Chromium set up a capture and repaint the tab, on the same two cores
	as whatever the agent does next: asked for at once, it made a ``get_state`` right after a
	navigate a third slower (+7 to +10 ms), while the frame itself is the same a moment later. So the
	frame is asked for once no call has run for SHOT_QUIET s, after a read that follows (a read does
	not change the page), or just before the next page-changing call, whichever comes first: the
	same moment as before when a page-changing call follows at once, never during a read."""

	def __init__(self, recording: Recording, cast: Screencast) -> None:
		self.recording = recording
		self.cast = cast
		self.frame: asyncio.Future[str] = asyncio.get_running_loop().create_future()
		self.asked = asyncio.Event()
		self._timer: asyncio.TimerHandle | None = None
		self.ended = time.monotonic()  # made as its call ended
		self._start: asyncio.TimerHandle | None = None  # the cast's start, when it waits for PAINT_LAG
		self._started = False

	def arm(self) -> None:
		"""Ask in SHOT_QUIET s unless a call comes first."""
		self.hold()
		self._timer = asyncio.get_running_loop().call_later(SHOT_QUIET, self.ask)

	def hold(self) -> None:
		if self._timer is not None:
			self._timer.cancel()
			self._timer = None

	def ask(self, at_once: bool = False) -> None:
		"""Ask the screencast for this call's frame. Asked for within a few ms of its call's end by a
		read (browser_get_state, browser_get_recording), the cast's first frame could still be the one
		painted before the call's change reached the screen: the cast then starts PAINT_LAG s after the
		call. ``at_once`` (the next page-changing call is about to run, and a navigation under way would
		lose the cast's start) starts it now, as does a later ``start_now``."""
		self.hold()
		if self.recording.due is self:
			self.recording.due = None
		if not self.asked.is_set():
			self.asked.set()
			lag = self.ended + PAINT_LAG - time.monotonic()
			if lag > 0 and not at_once:
				self.recording.deferred = self
				self._start = asyncio.get_running_loop().call_later(lag, self.start_now)
			else:
				self.start_now()

	def start_now(self) -> None:
		"""Start the cast for this frame now, if it is not started yet."""
		if self._start is not None:
			self._start.cancel()
			self._start = None
		if self.recording.deferred is self:
			self.recording.deferred = None
		if not self._started:
			self._started = True
			frame = self.frame
			self.cast.next_frame(lambda f: frame.done() or frame.set_result(f))


def _known_page(state: Any) -> tuple[str | None, str | None]:
	"""The focused tab's URL and title as browser-use last heard them (Target.targetInfoChanged)."""
	from browser_use_mcp.tools.admin import focused_target

	try:
		target = focused_target(state)
	except Exception:
		return None, None
	url = getattr(target, 'url', None)
	return (str(url), str(getattr(target, 'title', '') or '')) if url else (None, None)


async def _page(state: Any) -> tuple[str | None, str | None]:
	"""The focused page's URL and title, in one round trip, bounded; (None, None) if unreadable."""
	from browser_use_mcp.tools.common import cdp_page

	try:
		cdp = await asyncio.wait_for(cdp_page(state), STEP_BOUND)
		result = await asyncio.wait_for(
			cdp.cdp_client.send.Runtime.evaluate(
				params={'expression': '[location.href, document.title]', 'returnByValue': True}, session_id=cdp.session_id
			),
			STEP_BOUND,
		)
		value = result.get('result', {}).get('value')
		if isinstance(value, list) and len(value) == 2:
			return str(value[0]), str(value[1])
	except (Exception, TimeoutError) as exc:
		logger.info('recorder could not read the page: %s', exc)
	return None, None


async def _shot(state: Any) -> bytes | None:
	"""The visible part of the focused page as a JPEG SHOT_WIDTH px wide at most, scaled by Chromium."""
	from browser_use_mcp.tools.common import visible_jpeg

	try:
		return (await visible_jpeg(state, SHOT_WIDTH, SHOT_QUALITY, bound=STEP_BOUND))[0]
	except (Exception, TimeoutError) as exc:
		logger.info('recorder could not take a screenshot: %s', exc)
		return None


class RecordingExpired(Exception):
	pass


class Recordings:
	"""Every recording of this server: made per session, looked up by (principal digest, session id),
	kept ``ttl`` s after the session closed, all under ``total_cap`` bytes. Persistent (``lock_fd``
	given: ``open`` took ``root``'s owner lock), they are adopted by the next server on that state dir."""

	def __init__(
		self,
		root: Path,
		ttl: float = DEFAULT_TTL,
		total_cap: int = TOTAL_CAP,
		size_cap: int = SIZE_CAP,
		lock_fd: int | None = None,
	) -> None:
		self.root = root
		self.ttl = ttl
		self.total_cap = total_cap
		self.size_cap = size_cap
		self._lock_fd = lock_fd
		self._by_key: dict[tuple[str, str], Recording] = {}
		self._expired: dict[tuple[str, str], float] = {}  # key -> when its recording was dropped
		self._doomed: list[Path] = []  # directories of dropped recordings, deleted off the loop (purge)
		self.last_error = ''  # why the last recording could not be started

	@classmethod
	def open(
		cls, state_dir: Path, scratch: Path, ttl: float = DEFAULT_TTL, total_cap: int = TOTAL_CAP, size_cap: int = SIZE_CAP
	) -> Recordings:
		"""The recordings of ``<state dir>/recordings``, owned by this server; when another live server
		owns them (or the directory cannot be made), recordings in this server's ``scratch`` directory,
		gone when it stops (the log says so). Blocking: run it in a thread."""
		root = state_dir / 'recordings'
		try:
			fd = own_dir(root)
		except (DirHeld, OSError) as exc:
			why = str(exc) if isinstance(exc, DirHeld) else f'{root} cannot be made ({exc.strerror or exc})'
			logger.warning(
				"recordings are kept in this server's scratch directory and deleted when it stops: %s; "
				'give this server a --state-dir of its own to keep them across restarts',
				why,
			)
			return cls(scratch / 'recordings', ttl, total_cap, size_cap)
		return cls(root, ttl, total_cap, size_cap, lock_fd=fd)

	@property
	def persistent(self) -> bool:
		return self._lock_fd is not None

	def release(self) -> None:
		"""Give up the recordings directory (the next server adopts what is in it)."""
		if self._lock_fd is not None:
			release_dir(self._lock_fd)
			self._lock_fd = None

	@staticmethod
	def _key(principal: str, session_id: str) -> tuple[str, str]:
		return principal_digest(principal), session_id

	def start(self, principal: str, session_id: str, kinds: tuple[str, ...] = ('trace',)) -> Recording | None:
		"""A new recording for this session (replacing an older one of the same id); None when its
		directory cannot be made (the session then runs unrecorded, and the log says why)."""
		from browser_use_mcp.browser import session_digest

		self.sweep()
		key = self._key(principal, session_id)
		old = self._by_key.pop(key, None)
		if old is not None:
			self._drop(old)
		self._expired.pop(key, None)
		folder = self.root / f'p-{key[0]}'
		path = folder / f'{session_digest(principal, session_id)}-{secrets.token_hex(4)}'
		try:
			self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
			folder.mkdir(exist_ok=True, mode=0o700)
			path.mkdir(mode=0o700)
		except OSError as exc:
			logger.warning('cannot record session %r: %s', session_id[:40], exc)
			self.last_error = f'{exc.strerror or exc} ({self.root})'
			return None
		recording = Recording(principal, session_id, path, size_cap=self.size_cap, kinds=tuple(kinds) or ('trace',))
		recording.line({'recording': list(recording.kinds), 'started': recording.started, 'size_cap': self.size_cap})
		recording.write_meta()  # a server killed from now on leaves it adoptable
		self._by_key[key] = recording
		return recording

	def get(self, principal: str, session_id: str) -> Recording | None:
		"""This principal's recording of that session; None if there is none (or it is another's);
		raises RecordingExpired when it was kept and has since gone."""
		self.sweep()
		key = self._key(principal, session_id)
		recording = self._by_key.get(key)
		if recording is None and key in self._expired:
			raise RecordingExpired(key)
		return recording

	def disk_bytes(self) -> int:
		"""Bytes all recordings kept take on disk now (for /metrics)."""
		return sum(r.disk_bytes() for r in list(self._by_key.values()))

	def of(self, principal: str) -> list[Recording]:
		"""This principal's recordings kept now, open and closed."""
		owner = principal_digest(principal)
		return [r for (p, _), r in list(self._by_key.items()) if p == owner]

	def __len__(self) -> int:
		return len(self._by_key)

	# -- after a restart ---------------------------------------------------------------------------

	async def adopt(self) -> int:
		"""Take over the recordings an earlier server left in a persistent root (read and cleaned in a
		thread); a recording it was still writing counts as closed and truncated. The number adopted."""
		if not self.persistent:
			return 0
		found, expired = await asyncio.to_thread(self.scan)
		now = time.time()
		for key in expired:
			self._expired[key] = now
		for rec in sorted(found, key=lambda r: r.started):  # the newest recording of one id wins
			key = (rec.owner, rec.session_id)
			old = self._by_key.get(key)
			if old is not None:
				self._drop(old)
			self._by_key[key] = rec
		self.sweep()  # the total cap, oldest first
		await asyncio.to_thread(self.purge)
		if found or expired:
			logger.info(
				'adopted %d recordings from %s (%d past --recordings-ttl deleted)', len(self._by_key), self.root, len(expired)
			)
		return len(self._by_key)

	def scan(self, now: float | None = None) -> tuple[list[Recording], list[tuple[str, str]]]:
		"""The recordings in ``root`` as closed ones, and the keys of those past the ttl, which are
		deleted (as are directories without readable metadata). Blocking: run it in a thread."""
		now = time.time() if now is None else now
		found: list[Recording] = []
		expired: list[tuple[str, str]] = []
		for folder in sorted(self.root.glob('p-*')):
			if not folder.is_dir() or folder.is_symlink():
				continue
			for path in sorted(folder.iterdir()):
				if not path.is_dir() or path.is_symlink():
					continue
				rec = self._load(path, folder.name[2:], now)
				if isinstance(rec, Recording):
					found.append(rec)
					continue
				if rec is not None:
					expired.append(rec)
				shutil.rmtree(path, ignore_errors=True)
			with contextlib.suppress(OSError):
				folder.rmdir()  # only when empty
		return found, expired

	def _load(self, path: Path, owner: str, now: float) -> Recording | tuple[str, str] | None:
		"""One recording directory as a closed Recording; its key when it is past the ttl; None when
		it cannot be read (no metadata: made by a server killed before it wrote any)."""
		try:
			meta = json.loads((path / META_FILE).read_text(encoding='utf-8'))
			if not isinstance(meta, dict) or meta.get('version') != META_VERSION or meta.get('principal') != owner:
				raise ValueError('not a recording of this version and principal')
			session_id = meta['session_id']
			kinds = tuple(k for k in meta.get('kinds') or () if k in KINDS) or ('trace',)
			started = float(meta['started'])
			closed = meta.get('closed_at')
			truncated = meta.get('truncated')
			if not isinstance(session_id, str) or not isinstance(truncated, str | None):
				raise ValueError('a field of the wrong type')
			files = [f for f in path.iterdir() if f.is_file() and not f.is_symlink() and f.name != META_FILE]
			stats = [f.stat() for f in files]
		except (OSError, ValueError, KeyError, TypeError) as exc:
			logger.info('deleting the unreadable recording %s: %s', path, exc)
			return None
		crashed = closed is None
		if crashed:  # its server was killed while it was being written: closed when it was last written
			closed = max((st.st_mtime for st in stats), default=started)
			truncated = truncated or STOPPED
		if now - float(closed) > self.ttl:
			return owner, session_id
		rec = Recording(
			'',
			session_id,
			path,
			size_cap=int(meta.get('size_cap') or self.size_cap),
			kinds=kinds,
			started=started,
			closed_at=float(closed),
			size=sum(st.st_size for st in stats),
			truncated=truncated,
			owner=owner,
		)
		if rec.cast is not None and isinstance(meta.get('video_note'), str):
			rec.cast.video_error = meta['video_note']
		if crashed:
			rec.write_meta()  # adopted as closed: said once, for the next restart too
		return rec

	# -- expiry ------------------------------------------------------------------------------------

	def sweep(self, now: float | None = None) -> None:
		"""Drop closed recordings past their ttl, then the oldest closed ones while over the total cap."""
		now = time.time() if now is None else now
		for key, rec in list(self._by_key.items()):
			if rec.closed_at is not None and now - rec.closed_at > self.ttl:
				self._evict(key, now)
		total = sum(r.size for r in self._by_key.values())
		for key, rec in sorted(self._by_key.items(), key=lambda kv: kv[1].closed_at or float('inf')):
			if total <= self.total_cap or rec.closed_at is None:
				break
			total -= rec.size
			self._evict(key, now)

	def _evict(self, key: tuple[str, str], now: float) -> None:
		rec = self._by_key.pop(key)
		self._expired[key] = now
		self._drop(rec)

	def _drop(self, rec: Recording) -> None:
		rec.truncated = rec.truncated or 'expired'  # a call still writing to it stops
		self._doomed.append(rec.path)

	def purge(self) -> None:
		"""Delete the directories of dropped recordings (blocking: run it in a thread)."""
		while self._doomed:
			shutil.rmtree(self._doomed.pop(), ignore_errors=True)


def read_trace(recording: Recording) -> list[dict[str, Any]]:
	"""The trace's lines as written (a line cut by a full disk is skipped)."""
	out = []
	try:
		text = recording.trace.read_text(encoding='utf-8', errors='replace')
	except OSError:
		return out
	for line in text.splitlines():
		with contextlib.suppress(ValueError):
			out.append(json.loads(line))
	# a page-changing call's entry is written when its screenshot is in: possibly after the next call's
	return sorted(out, key=lambda e: e.get('seq', 0) if isinstance(e, dict) else 0)
