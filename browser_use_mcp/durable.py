"""Durable sessions: a named session's storage state and last URLs, kept under the state dir.

What is kept is the portable part of a session, the same in both isolation modes: its cookies
(HttpOnly included), the localStorage of the origins its tabs show (storage.py's read and apply)
and the URL of every tab, the focused one first; and the options the session was created with. It is
rewritten within seconds of each page-changing call (sessions.py, ``page_changed``) and when the
session closes. A whole Chromium profile would only exist with
``--isolation browser``: a context of a shared Chromium has no profile directory of its own.

Layout, private to the server's user (0700 directories, 0600 files)::

    <state dir>/durable/owner.lock                      the owning server's pid, flock-held
    <state dir>/durable/p-<principal digest>/<session digest>.json

No client-chosen string is ever part of a path: the principal and the id are hashed.

One server at a time owns the store: the lock is an ``flock`` held for the life of the process
(so a killed server never leaves a stale lock), with the pid written in for the message.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from browser_use_mcp.browser import session_digest
from browser_use_mcp.files import write_whole
from browser_use_mcp.storage import StorageState, parse_state

logger = logging.getLogger('browser_use_mcp.durable')

VERSION = 1
LOCK_NAME = 'owner.lock'


class StoreLocked(Exception):
	"""Another live server owns the durable store of this state dir."""

	def __init__(self, root: Path, holder: str) -> None:
		self.root = root
		self.holder = holder
		super().__init__(
			f'the durable session store {root} is owned by another running browser-use-mcp server ({holder}); '
			'durable sessions can be served by one server at a time. Stop that server, or give this one another '
			'--state-dir.'
		)


class DirHeld(Exception):
	"""Another live process holds the owner lock of a directory (``holder`` names its pid)."""

	def __init__(self, root: Path, holder: str) -> None:
		self.root = root
		self.holder = holder
		super().__init__(f'{root} is owned by another running browser-use-mcp server ({holder})')


def own_dir(root: Path) -> int:
	"""Make ``root`` (0700) and take its ``owner.lock``: an ``flock`` held as long as the returned fd
	is open (a killed server never leaves a stale lock), the pid written in for the message.
	DirHeld when another live process holds it; OSError when the directory cannot be made."""
	root.mkdir(parents=True, exist_ok=True, mode=0o700)
	with contextlib.suppress(OSError):
		os.chmod(root, 0o700)
	fd = os.open(root / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
	try:
		fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
	except OSError:
		try:
			holder = os.pread(fd, 200, 0).decode('utf-8', 'replace').strip()
		except OSError:
			holder = ''
		os.close(fd)
		raise DirHeld(root, f'pid {holder.split()[0]}' if holder else 'pid unknown') from None
	os.ftruncate(fd, 0)
	os.pwrite(fd, f'{os.getpid()} {time.time():.0f}\n'.encode(), 0)
	os.set_inheritable(fd, False)
	return fd


def release_dir(fd: int) -> None:
	"""Give up a lock taken by own_dir (closing the fd drops the flock)."""
	with contextlib.suppress(OSError):
		os.ftruncate(fd, 0)
	with contextlib.suppress(OSError):
		os.close(fd)


class Unreadable(Exception):
	"""A record exists but cannot be used (deleted under us, corrupted, wrong shape)."""


@dataclass
class Record:
	session_id: str
	created_at: float
	saved_at: float
	urls: list[str] = field(default_factory=list)  # every tab's URL, the focused one first
	state: StorageState = field(default_factory=lambda: StorageState(cookies=[], origins=[]))
	# what browser_create_session made it with (session_options.SessionOptions), re-applied when it reopens;
	# kept whole, secrets too (a proxy's password, header values): the file is the server user's only
	options: Any = None
	options_problem: str | None = None  # the record's options could not be read back: why

	def dump(self) -> dict[str, Any]:
		out = {
			'version': VERSION,
			'session_id': self.session_id,
			'created_at': self.created_at,
			'saved_at': self.saved_at,
			'urls': self.urls,
			'storage_state': self.state.model_dump(mode='json'),
		}
		if self.options is not None:
			out['options'] = self.options.model_dump(mode='json', exclude_none=True)
		return out

	@classmethod
	def load(cls, data: Any) -> Record:
		if not isinstance(data, dict) or data.get('version') != VERSION:
			raise Unreadable('not a durable session record of this version')
		try:
			urls = data['urls']
			if not isinstance(urls, list) or not all(isinstance(u, str) for u in urls):
				raise Unreadable('its urls are not a list of strings')
			options, problem = _options(data.get('options'))
			return cls(
				session_id=str(data['session_id']),
				created_at=float(data['created_at']),
				saved_at=float(data['saved_at']),
				urls=urls,
				state=parse_state(data['storage_state']),
				options=options,
				options_problem=problem,
			)
		except Unreadable:
			raise
		except Exception as exc:  # KeyError, ValueError, InvalidArgument from the state's shape
			raise Unreadable(f'{type(exc).__name__}: {str(exc)[:200]}') from None


def _options(raw: Any) -> tuple[Any, str | None]:
	"""A record's creation options, validated as browser_create_session validates them: (options,
	None), (None, None) for none, or (None, why) for options this server no longer accepts."""
	if raw is None:
		return None, None
	from pydantic import ValidationError

	from browser_use_mcp.session_options import SessionOptions

	try:
		options = SessionOptions.model_validate_json(json.dumps(raw))
	except (ValidationError, TypeError, ValueError) as exc:
		first = exc.errors()[0] if isinstance(exc, ValidationError) and exc.errors() else None
		where = '.'.join(str(p) for p in first['loc']) if first else ''
		return None, f'{where}: {first["msg"]}' if first else f'{type(exc).__name__}'
	return (None if options.empty else options), None


def principal_digest(principal: str) -> str:
	return hashlib.sha256(principal.encode('utf-8', 'surrogatepass')).hexdigest()[:16]


class DurableStore:
	"""The durable records of one state dir; usable only while this process holds its lock."""

	def __init__(self, state_dir: Path) -> None:
		self.root = state_dir / 'durable'
		self._lock_fd: int | None = None

	# -- ownership ---------------------------------------------------------------------------------

	@property
	def owned(self) -> bool:
		return self._lock_fd is not None

	def exists(self) -> bool:
		return self.root.is_dir()

	def acquire(self) -> None:
		"""Own the store (idempotent); StoreLocked naming the holder if another live process does."""
		if self._lock_fd is not None:
			return
		try:
			self._lock_fd = own_dir(self.root)
		except DirHeld as exc:
			raise StoreLocked(self.root, exc.holder) from None

	def try_acquire(self) -> bool:
		"""Own the store if it exists and nobody else does; False otherwise (never raises)."""
		if self._lock_fd is not None:
			return True
		if not self.exists():
			return False
		try:
			self.acquire()
		except (StoreLocked, OSError) as exc:
			logger.info('durable sessions not served by this server: %s', exc)
			return False
		return True

	def release(self) -> None:
		if self._lock_fd is not None:
			release_dir(self._lock_fd)
			self._lock_fd = None

	# -- records -----------------------------------------------------------------------------------

	def _dir(self, principal: str) -> Path:
		return self.root / f'p-{principal_digest(principal)}'

	def path(self, principal: str, session_id: str) -> Path:
		return self._dir(principal) / f'{session_digest(principal, session_id)}.json'

	def has(self, principal: str, session_id: str) -> bool:
		return self.owned and self.path(principal, session_id).is_file()

	def save(self, principal: str, record: Record) -> None:
		"""Write the record whole or not at all, readable by the server's user only."""
		assert self.owned
		directory = self._dir(principal)
		directory.mkdir(parents=True, exist_ok=True, mode=0o700)
		write_whole(self.path(principal, record.session_id), [json.dumps(record.dump(), ensure_ascii=False).encode()])

	def load(self, principal: str, session_id: str) -> Record:
		"""The record, or Unreadable saying why (a record that is gone counts: it was deleted under us)."""
		path = self.path(principal, session_id)
		try:
			text = path.read_text(encoding='utf-8')
		except OSError as exc:
			raise Unreadable(f'its file could not be read ({exc.strerror or exc})') from None
		try:
			record = Record.load(json.loads(text))
		except ValueError:
			raise Unreadable('its file is not valid JSON') from None
		if record.session_id != session_id:
			raise Unreadable('its file belongs to another session id')
		return record

	def records(self, principal: str) -> list[Record]:
		"""This principal's readable records (an unreadable one is left for its reopen to report)."""
		if not self.owned:
			return []
		out = []
		directory = self._dir(principal)
		if not directory.is_dir():
			return []
		for path in directory.glob('*.json'):
			try:
				out.append(Record.load(json.loads(path.read_text(encoding='utf-8'))))
			except (OSError, ValueError, Unreadable):
				continue
		return out

	def delete(self, principal: str, session_id: str) -> bool:
		if not self.owned:
			return False
		try:
			self.path(principal, session_id).unlink()
		except FileNotFoundError:
			return False
		return True

	def size(self, principal: str, session_id: str) -> int:
		try:
			return self.path(principal, session_id).stat().st_size
		except OSError:
			return 0


_STORES: dict[Path, DurableStore] = {}


def store_for(state_dir: Path) -> DurableStore:
	"""The process's one store object per state dir (the lock taken at start-up is the registry's too)."""
	key = state_dir.expanduser().absolute()
	if key not in _STORES:
		_STORES[key] = DurableStore(key)
	return _STORES[key]
