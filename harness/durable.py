"""The durable-session store as a test or benchmark reads it, and the orderly stop a restart makes."""

from __future__ import annotations

from pathlib import Path

from harness.servers import RawServer


def records(home: Path) -> list[Path]:
	return sorted((home / 'state' / 'durable').glob('p-*/*.json'))


async def stop(server: RawServer) -> None:
	"""An orderly stop (the host closes stdin), as a restart would be."""
	server.close_stdin()
	assert await server.wait(30) == 0, server.stderr_lines[-20:]
	await server.stop()
