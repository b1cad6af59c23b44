"""write_whole's temporary file, as a listing of the session's files sees it mid-write."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from browser_use_mcp.files import write_whole
from browser_use_mcp.tools import session_files


def _state(tmp_path: Path) -> SimpleNamespace:
	downloads, files = tmp_path / 'downloads', tmp_path / 'files'
	downloads.mkdir()
	files.mkdir()
	dirs = SimpleNamespace(downloads=str(downloads), files=str(files), temporary=True)
	return SimpleNamespace(dirs=dirs, created_at=time.time())


def test_a_file_being_written_is_listed_as_partial_then_whole(tmp_path: Path) -> None:
	state = _state(tmp_path)
	seen: list[list[tuple[str, bool]]] = []

	def chunks() -> Iterator[bytes]:
		yield b'%PDF-1.7 first half '
		listed, _ = session_files._listing(state)  # what browser_list_files answers mid-write
		seen.append([(str(f['path']), bool(f['partial'])) for f in listed])
		yield b'second half'

	write_whole(tmp_path / 'files' / 'report.pdf', chunks())
	((mid,),) = seen
	assert mid[0].startswith('files/.report.pdf-') and mid[1] is True, f'mid-write the temporary file shows as partial: {mid}'
	listed, _ = session_files._listing(state)
	assert [(f['path'], f['partial'], f['size']) for f in listed] == [('files/report.pdf', False, 31)]


def test_a_failed_write_leaves_nothing_to_list(tmp_path: Path) -> None:
	state = _state(tmp_path)

	def chunks() -> Iterator[bytes]:
		yield b'half'
		raise OSError(28, 'No space left on device')

	with pytest.raises(OSError, match='No space'):
		write_whole(tmp_path / 'files' / 'report.pdf', chunks())
	assert session_files._listing(state) == ([], False)
