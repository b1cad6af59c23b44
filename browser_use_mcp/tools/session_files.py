"""The files a session's browser produced, read back over MCP: its downloads and its files directory.

A download, a PDF from ``browser_save_pdf``, an upload sent inline: each lands in a directory of the
session's own on the server's disk. An agent on another machine (every HTTP client) cannot open a
path there; these tools give it the list and the bytes. Only those two directories of the calling
session are reachable: a path names one of them (``downloads/...`` or ``files/...``), ``..`` and
absolute paths are refused, a symbolic link that leads out of its directory is refused, and only
regular files are read (never a FIFO or a device, which could block the call or never end).

The default session of a server with one principal keeps upstream's persistent directories
(``~/Downloads/browser-use-mcp`` or config.json's ``downloads_path``, ``~/.browser-use-mcp``): the
operator's own, which may hold files from before. There these tools show and read only the files
written since the session started, what its browser saved, and never the rest of the directory.
"""

from __future__ import annotations

import asyncio
import base64
import mimetypes
import os
import stat
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

from pydantic import Field

from browser_use_mcp.errors import InvalidArgument
from browser_use_mcp.files import GRID_PARTIAL, WRITING
from browser_use_mcp.sessions import SessionState
from browser_use_mcp.tools.base import Args, Call, NoArgs, Output, Reply, Resource, as_json, tool

ROOTS = ('downloads', 'files')  # what a path starts with: the session's downloads, its files directory
LIST_CAP = 500  # files listed at most, newest first
READ_DEFAULT = 1024 * 1024  # bytes one read returns unless asked for fewer or more
READ_MAX = 4 * 1024 * 1024  # bytes one read may return (5.3 MB as base64)
# how a file still being written is named: a download by Chromium, a Grid session's copy from its node,
# a PDF from browser_save_pdf (written whole, then renamed)
PARTIAL = ('.crdownload', GRID_PARTIAL, WRITING)
TEXT_TYPES = ('application/json', 'application/xml', 'application/javascript', 'application/x-ndjson', 'image/svg+xml')
URI_SCHEME = 'browser-use-mcp'


def _root(state: SessionState, name: str) -> Path:
	return Path(state.dirs.downloads if name == 'downloads' else state.dirs.files)


def _since(state: SessionState) -> float | None:
	"""Files older than this are not the session's (its directories are the operator's persistent
	ones: the default session); None when every file in them is the session's."""
	return None if state.dirs.temporary else state.created_at - 1.0  # 1 s: file times are rounded


class FileInfo(Output):  # field order is the key order of the JSON text
	path: str = Field(description='What browser_read_file takes: downloads/<name> or files/<path>.')
	size: int = Field(description='Bytes.')
	modified: str = Field(description='When it was last written, ISO 8601 UTC.')
	partial: bool = Field(
		description='Still being written, under a temporary name that goes away once it is whole (a download: '
		'*.crdownload, *.grid-partial on a Selenium Grid; a saved PDF: .<name>-<random>.writing).'
	)


class FileList(Output):
	files: list[FileInfo]
	truncated: bool = Field(description=f'More than {LIST_CAP} files: the oldest are left out.')


def _listing(state: SessionState) -> tuple[list[dict[str, object]], bool]:
	found: list[tuple[float, dict[str, object]]] = []
	since = _since(state)
	for name in ROOTS:
		root = _root(state, name)
		if not root.is_dir():
			continue
		for where, dirs, names in os.walk(root):  # symbolic links to directories are not followed
			dirs.sort()
			for file in sorted(names):
				full = os.path.join(where, file)
				try:
					info = os.lstat(full)
				except OSError:
					continue  # gone since the walk saw it
				if not stat.S_ISREG(info.st_mode):
					continue  # a link, a FIFO, a socket: nothing to read
				if since is not None and info.st_mtime < since:
					continue  # the operator's, from before this session
				relative = Path(full).relative_to(root).as_posix()
				modified = datetime.fromtimestamp(info.st_mtime, UTC).isoformat(timespec='seconds').replace('+00:00', 'Z')
				found.append(
					(
						info.st_mtime,
						{
							'path': f'{name}/{relative}',
							'size': info.st_size,
							'modified': modified,
							'partial': file.endswith(PARTIAL),
						},
					)
				)
	found.sort(key=lambda pair: pair[0], reverse=True)
	return [entry for _, entry in found[:LIST_CAP]], len(found) > LIST_CAP


@tool('List the session files', read_only=True, open_world=False)
async def browser_list_files(state: SessionState, args: NoArgs, call: Call) -> Reply[FileList]:
	"""List the files the session's browser saved: its downloads (downloads/<name>) and its files directory
	(files/<path>: PDFs from browser_save_pdf, uploads sent inline), newest first, with size and time.
	browser_read_file returns a file's contents."""
	files, truncated = await asyncio.to_thread(_listing, state)
	out = FileList.model_validate({'files': files, 'truncated': truncated}).dump()
	return Reply(
		as_json(out['files']) if files else 'No files: the session has downloaded and saved nothing yet.', structured=out
	)


class ReadFileArgs(Args):
	path: str = Field(
		min_length=1,
		max_length=1000,
		description='The file, as browser_list_files gives it: downloads/<name> or files/<path>.',
	)
	offset: int = Field(0, ge=0, description='Byte to start at, for reading a large file in parts.')
	max_bytes: int = Field(
		READ_DEFAULT,
		ge=1,
		le=READ_MAX,
		description=f'Bytes to return at most (default {READ_DEFAULT // 1024} KiB, at most {READ_MAX // (1024 * 1024)} MiB).',
	)


class FileRead(Output):
	path: str
	size: int = Field(description="The file's size in bytes.")
	offset: int
	length: int = Field(description='Bytes returned.')
	more: bool = Field(description='The file goes on past what was returned: read again from offset + length.')
	mime_type: str
	encoding: str = Field(
		description='text: the bytes are UTF-8 text, in the second text block; base64: binary, an embedded resource.'
	)


@dataclass
class _Read:
	data: bytes
	size: int


def _checked(state: SessionState, path: str) -> tuple[Path, str]:
	"""The real path of ``path`` inside one of the session's two directories, and the path as given
	back; InvalidArgument saying what to give instead."""
	parts = path.split('/')
	if parts[0] not in ROOTS or len(parts) < 2 or any(p in ('', '.', '..') for p in parts[1:]) or '\\' in path or '\0' in path:
		raise InvalidArgument(
			f'path: {path[:200]!r} is not a file of this session: give it as browser_list_files lists it, downloads/<name> '
			"or files/<path> (no leading '/', no '..')."
		)
	root = os.path.realpath(_root(state, parts[0]))
	full = os.path.realpath(os.path.join(root, *parts[1:]))
	if os.path.commonpath([root, full]) != root:
		raise InvalidArgument(f"path: {path[:200]!r} leads out of the session's {parts[0]} directory; it cannot be read.")
	return Path(full), '/'.join(parts)


def _read(full: Path, shown: str, offset: int, limit: int, since: float | None) -> _Read:
	try:
		fd = os.open(full, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
	except FileNotFoundError:
		raise InvalidArgument(f'path: no file {shown!r} in this session. browser_list_files lists what there is.') from None
	except OSError as exc:
		raise InvalidArgument(f'path: {shown!r} cannot be read ({exc.strerror}).') from None
	try:
		info = os.fstat(fd)
		if not stat.S_ISREG(info.st_mode):
			raise InvalidArgument(f'path: {shown!r} is not a regular file (a directory, a pipe or a device); nothing was read.')
		if since is not None and info.st_mtime < since:
			raise InvalidArgument(
				f"path: {shown!r} was there before this session started: the default session's directories are the "
				"operator's own, and only what the session's browser saved since is read. browser_list_files lists it."
			)
		if offset > info.st_size:
			raise InvalidArgument(f'offset: {offset} is past the end of {shown!r} ({info.st_size} bytes).')
		os.lseek(fd, offset, os.SEEK_SET)
		chunks, left = [], limit
		while left > 0:
			chunk = os.read(fd, min(left, 1024 * 1024))
			if not chunk:
				break
			chunks.append(chunk)
			left -= len(chunk)
		return _Read(b''.join(chunks), info.st_size)
	finally:
		os.close(fd)


def _as_text(data: bytes, mime: str, complete: bool) -> str | None:
	"""The bytes as text when they are UTF-8 text (a character cut at the end of a part is allowed),
	else None."""
	if b'\0' in data:
		return None
	textual = mime.startswith('text/') or mime in TEXT_TYPES or mime.endswith(('+json', '+xml'))
	if not textual and mime != 'application/octet-stream':
		return None
	try:
		return data.decode('utf-8')
	except UnicodeDecodeError as exc:
		if complete or exc.start < len(data) - 3:
			return None
		return data[: exc.start].decode('utf-8')


@tool('Read a session file', read_only=True, open_world=False)
async def browser_read_file(state: SessionState, args: ReadFileArgs, call: Call) -> Reply[FileRead]:
	"""Read a file the session's browser saved (a download, a saved PDF), by its path from browser_list_files.
	A text file comes back as text, any other as an embedded resource (base64) with its MIME type; a large
	file in parts (offset, max_bytes: 1 MiB by default, at most 4 MiB)."""
	full, shown = _checked(state, args.path)
	read = await asyncio.to_thread(_read, full, shown, args.offset, args.max_bytes, _since(state))
	name = next((full.name.removesuffix(end) for end in PARTIAL if full.name.endswith(end)), full.name)
	mime = mimetypes.guess_type(name)[0] or 'application/octet-stream'
	complete = args.offset + len(read.data) >= read.size
	text = _as_text(read.data, mime, complete)
	length = len(text.encode('utf-8')) if text is not None else len(read.data)
	more = args.offset + length < read.size
	out = FileRead(
		path=shown,
		size=read.size,
		offset=args.offset,
		length=length,
		more=more,
		mime_type=mime,
		encoding='text' if text is not None else 'base64',
	).dump()
	span = f'bytes {args.offset:,}-{args.offset + length:,} of {read.size:,}' if args.offset or more else f'{read.size:,} bytes'
	rest = f'; read on from offset {args.offset + length}' if more else ''
	if text is not None:
		return Reply(f'{shown} ({span}, {mime}), its text follows{rest}.', structured=out, body=text)
	uri = f'{URI_SCHEME}:///{quote(shown)}'
	resource = Resource(uri=uri, mime_type=mime, blob=base64.b64encode(read.data).decode('ascii'))
	return Reply(f'{shown} ({span}, {mime}), as an embedded resource{rest}.', structured=out, resources=[resource])
