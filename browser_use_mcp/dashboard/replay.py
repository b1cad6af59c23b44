"""The dashboard's replay page: a recorded session's calls as a timeline with their screenshots,
its console messages and network requests, its video, and a zip of everything.

Rendered on the server, every value escaped (page-controlled strings: titles, URLs, console
texts), no script and no inline style (the dashboard's CSP forbids both), images and video from
the dashboard's own origin only: it works offline.
"""

from __future__ import annotations

import html
import json
import os
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any
from urllib.parse import quote

from browser_use_mcp.recorder import CONSOLE_FILE, HAR_FILE, NETWORK_FILE, Recording, read_trace

PREFIX = '/dashboard'


def shot_path(recording: Recording, seq: int) -> Path | None:
	"""The screenshot file of call ``seq`` (named from the integer: no path from the request)."""
	path = recording.path / f'shot-{seq:05d}.jpg'
	return path if path.is_file() else None


def _when(ts: Any) -> str:
	return time.strftime('%H:%M:%S', time.localtime(ts)) if isinstance(ts, int | float) else ''


def _rows(recording: Recording, name: str) -> list[dict[str, Any]]:
	try:
		rows = json.loads((recording.path / name).read_text(encoding='utf-8'))
	except (OSError, ValueError):
		return []
	return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


def _table(head: list[str], rows: list[list[Any]]) -> str:
	e = html.escape
	th = ''.join(f'<th scope="col">{e(h)}</th>' for h in head)
	body = ''.join('<tr>' + ''.join(f'<td>{e("" if v is None else str(v))}</td>' for v in row) + '</tr>' for row in rows)
	return f'<table class="rows"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'


def video_path(recording: Recording) -> Path | None:
	"""The video, once its session closed (ffmpeg finished the file)."""
	video = recording.video
	return video if video is not None and recording.closed_at is not None and video.is_file() else None


ZIP_NAMES = ('trace.jsonl', HAR_FILE, CONSOLE_FILE, NETWORK_FILE)


def zip_file(recording: Recording) -> Path:
	"""Everything of a recording in one zip, in a temporary file (blocking: run it in a thread; the
	caller deletes it). Only the recording's own files, by name: nothing else can be added."""
	fd, name = tempfile.mkstemp(prefix='recording-', suffix='.zip')
	os.close(fd)
	path = Path(name)
	try:
		with zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED) as z:
			for file in ZIP_NAMES:
				if (recording.path / file).is_file():
					z.write(recording.path / file, file)
			for shot in sorted(recording.path.glob('shot-*.jpg')):
				z.write(shot, shot.name, compress_type=zipfile.ZIP_STORED)
			video = video_path(recording)
			if video is not None:
				z.write(video, video.name, compress_type=zipfile.ZIP_STORED)
	except BaseException:
		path.unlink(missing_ok=True)
		raise
	return path


def render(recording: Recording) -> str:
	e = html.escape
	sid = recording.session_id
	base = f'{PREFIX}/api/recordings/{quote(sid, safe="")}'
	rows = []
	for entry in read_trace(recording):
		if 'seq' not in entry:
			continue
		seq = int(entry['seq'])
		outcome = 'ok' if entry.get('ok') else f'error: {entry.get("error") or ""}'
		args = json.dumps(entry.get('args') or {}, ensure_ascii=False)
		shot = ''
		if entry.get('screenshot'):
			src = f'{PREFIX}/api/recordings/{quote(sid, safe="")}/shot-{seq}.jpg'
			shot = f'<a href="{e(src)}"><img src="{e(src)}" alt="page after call {seq}" loading="lazy" width="320"></a>'
		rows.append(
			'<li class="call">'
			f'<h3>{seq}. {e(str(entry.get("tool", "")))} <small>{e(_when(entry.get("started")))}, '
			f'{e(str(entry.get("duration_ms", "")))} ms, {e(outcome)}</small></h3>'
			f'<p><code>{e(args)}</code></p>'
			f'<p>before: {e(str(entry.get("title_before") or ""))} <code>{e(str(entry.get("url_before") or ""))}</code><br>'
			f'after: {e(str(entry.get("title_after") or ""))} <code>{e(str(entry.get("url_after") or ""))}</code></p>'
			f'<details><summary>result</summary><pre>{e(str(entry.get("result") or ""))}</pre></details>'
			f'{shot}</li>'
		)
	state = 'live' if recording.closed_at is None else f'closed at {_when(recording.closed_at)}'
	truncated = f'<p><strong>Truncated: {e(recording.truncated)}</strong></p>' if recording.truncated else ''
	kinds = ', '.join(recording.kinds)
	video = ''
	if recording.video is not None:
		if video_path(recording) is not None:
			note = f'<p>{e(recording.video_note)}</p>' if recording.video_note else ''
			video = (
				f'<section><h2>Video</h2><video controls preload="metadata" width="640" src="{e(base)}/video.webm">'
				f'<a href="{e(base)}/video.webm">video.webm</a></video>{note}</section>'
			)
		else:
			video = '<section><h2>Video</h2><p>Being recorded: it can be played once the session is closed.</p></section>'
	console = _rows(recording, CONSOLE_FILE)
	network = _rows(recording, NETWORK_FILE)
	console_table = _table(
		['time', 'level', 'text', 'source', 'tab'],
		[[m.get('time'), m.get('level'), m.get('text'), m.get('source'), m.get('tab')] for m in console],
	)
	network_table = _table(
		['time', 'method', 'status', 'URL', 'type', 'ms', 'bytes', 'failure'],
		[
			[
				r.get('time'),
				r.get('method'),
				r.get('status'),
				r.get('url'),
				r.get('resource_type'),
				r.get('duration_ms'),
				r.get('size'),
				r.get('failure'),
			]
			for r in network
		],
	)
	har = f' <a href="{e(base)}/recording.har" download>HAR</a>' if recording.har is not None else ''
	return (
		'<!doctype html><html lang="en"><head><meta charset="utf-8">'
		f'<title>Recording of {e(sid)}</title>'
		f'<link rel="stylesheet" href="{PREFIX}/static/dashboard.css"></head><body class="replay">'
		f'<h1>Recording of session <code>{e(sid)}</code></h1>'
		f'<p>{e(state)}; {e(kinds)}; {len(rows)} calls; {recording.size} bytes. '
		f'<a href="{e(base)}/recording.zip" download>Download everything (zip)</a>{har} · '
		f'<a href="{PREFIX}/">Back to the dashboard</a></p>'
		f'{truncated}{video}'
		f'<section><h2>Calls</h2><ol class="timeline">{"".join(rows) or "<li>No calls yet.</li>"}</ol></section>'
		f'<section><h2>Console ({len(console)})</h2>{console_table if console else "<p>No console messages.</p>"}</section>'
		f'<section><h2>Network ({len(network)})</h2>{network_table if network else "<p>No requests.</p>"}</section>'
		'</body></html>'
	)
