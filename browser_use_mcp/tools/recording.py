"""Reading a session's flight recording (recorder.py): its calls, in order, with their screenshots."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import quote

from pydantic import Field

from browser_use_mcp.errors import SessionNotFound, ToolError
from browser_use_mcp.recorder import HAR_FILE, RESULT_LIMIT, RecordingExpired, read_trace
from browser_use_mcp.sessions import SessionRegistry
from browser_use_mcp.tools.base import Args, Call, Output, Reply, as_json, tool


class GetRecordingArgs(Args):
	session_id: str = Field(description='The session whose recording to read: open, or closed within --recordings-ttl.')


class RecordedCall(Output):
	seq: int = Field(description='1 for the first call of the session, in the order they ran.')
	tool: str
	started: float = Field(description='Unix time the call started.')
	duration_ms: float
	args: dict[str, Any] = Field(description='Its arguments, secrets redacted (as in the dashboard), long strings cut.')
	ok: bool
	error: str | None = Field(description='The error it ended with; "cancelled" if the session closed meanwhile.')
	result: str | None = Field(description=f'The text of its result, its first {RESULT_LIMIT} characters.')
	result_truncated: bool
	url_before: str | None
	title_before: str | None
	url_after: str | None
	title_after: str | None
	screenshot: str | None = Field(
		description='Path (on the server) of a JPEG of the page after a page-changing call; null for other calls or '
		'once the recording was truncated.'
	)


class Recording(Output):
	session_id: str
	kinds: list[str] = Field(description='What is recorded: "trace", "har", "video".')
	directory: str = Field(description='Where the recording is kept on the server.')
	har: str | None = Field(
		description='Path of the HAR 1.2 file of the session\'s traffic (kind "har"), up to date as of this call.'
	)
	video: str | None = Field(
		description='Path of the WebM video of the focused tab (kind "video"); complete once the session closed.'
	)
	video_note: str | None = Field(description='Why the video stopped early (its size cap, ffmpeg failing); null: fine.')
	dashboard: str = Field(description='Path of its replay page on the dashboard (with a zip of everything).')
	live: bool = Field(description='false: the session is closed; the recording is kept for --recordings-ttl.')
	started: float
	closed: float | None
	size_bytes: int
	truncated: str | None = Field(description='Why the recording stopped growing (its size cap, a full disk); null: complete.')
	calls: list[RecordedCall]


@tool('Get a session recording', read_only=True, open_world=False)
async def browser_get_recording(registry: SessionRegistry, args: GetRecordingArgs, call: Call) -> Reply[Recording]:
	"""Return the flight recording of one of your sessions, made when it was created with record: "trace", "har"
	and/or "video" (or the server runs with --record): every call in order with its arguments (secrets redacted),
	result, error, duration, URL and title before and after, and the path of a screenshot after each page-changing
	call; the paths of its HAR file and video. Works for an open session and, for a while, a closed one."""
	sid = registry.normalize_id(args.session_id)
	try:
		recordings = await registry.started_recordings()
		rec = recordings.get(call.principal, sid) if recordings is not None else None
	except RecordingExpired:
		raise ToolError(
			f'The recording of session {sid!r} has expired: recordings are kept {registry.config.recordings_ttl:g} s after '
			'their session closed (--recordings-ttl), fewer when the recordings exceed their total size cap.'
		) from None
	if rec is None:
		if registry.exists(call.principal, sid):
			raise ToolError(
				f'Session {sid!r} is not being recorded. Create a session with record: ["trace"] '
				'(browser_create_session) to record it.'
			)
		raise SessionNotFound(sid)
	await rec.settle()  # the last call's screenshot, if it is still being taken
	live = next((s for s in registry.sessions(call.principal) if s.recording is rec), None)
	await rec.snapshot(live)  # the HAR and the console/network rows so far
	lines = await asyncio.to_thread(read_trace, rec)
	calls = []
	for line in lines:
		if 'seq' not in line:
			continue
		if line.get('screenshot'):
			line['screenshot'] = str(rec.path / line['screenshot'])
		calls.append(RecordedCall(**{k: line.get(k) for k in RecordedCall.model_fields}))
	out = Recording(
		session_id=sid,
		kinds=list(rec.kinds),
		directory=str(rec.path),
		har=str(rec.path / HAR_FILE) if rec.har is not None and (rec.path / HAR_FILE).exists() else None,
		video=str(rec.video) if rec.video is not None and rec.video.exists() else None,
		video_note=rec.video_note,
		dashboard=f'/dashboard/recordings/{quote(sid, safe="")}',
		live=rec.closed_at is None,
		started=rec.started,
		closed=rec.closed_at,
		size_bytes=rec.size,
		truncated=rec.truncated,
		calls=calls,
	).dump()
	summary = {k: v for k, v in out.items() if k != 'calls'} | {'calls': len(calls)}
	return Reply(as_json(summary) + '\n' + as_json(out['calls']), structured=out)
