"""Files written whole or not at all: a reader (or the next server, after a crash) never sees half of one."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

# how a Selenium Grid session's download is named while its copy from the node is written into the
# session's downloads (``providers.grid.write_download``), before it is renamed to its own name
GRID_PARTIAL = '.grid-partial'
# how ``write_whole``'s temporary file ends while it is written (``.<name>-<random>.writing``), before
# it is renamed into place: a listing of the directory meanwhile can tell it from a finished file
WRITING = '.writing'


def write_whole(target: Path, chunks: Iterable[bytes]) -> Path:
	"""Write ``chunks`` to ``target`` through a temporary file renamed into place, mode 0600 (mkstemp's).
	Blocking: call it in a thread from the event loop. Raises OSError; leaves no temporary file behind."""
	fd, tmp = tempfile.mkstemp(prefix=f'.{target.name[:40]}-', suffix=WRITING, dir=target.parent)
	try:
		with os.fdopen(fd, 'wb') as out:
			for chunk in chunks:
				out.write(chunk)
		os.replace(tmp, target)
	except BaseException:
		with contextlib.suppress(OSError):
			os.unlink(tmp)
		raise
	return target
