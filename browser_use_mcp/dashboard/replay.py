"""The dashboard's replay page: a recorded session's calls as a timeline with their screenshots.

Rendered on the server, every value escaped, no script and no inline style (the dashboard's CSP
forbids both), images from the dashboard's own origin only: it works offline.
"""

from __future__ import annotations

import html
import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from browser_use_mcp.recorder import Recording, read_trace

PREFIX = '/dashboard'


def shot_path(recording: Recording, seq: int) -> Path | None:
	"""The screenshot file of call ``seq`` (named from the integer: no path from the request)."""
	path = recording.path / f'shot-{seq:05d}.jpg'
	return path if path.is_file() else None


def _when(ts: Any) -> str:
	return time.strftime('%H:%M:%S', time.localtime(ts)) if isinstance(ts, int | float) else ''


def render(recording: Recording) -> str:
	e = html.escape
	sid = recording.session_id
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
	return (
		'<!doctype html><html lang="en"><head><meta charset="utf-8">'
		f'<title>Recording of {e(sid)}</title>'
		f'<link rel="stylesheet" href="{PREFIX}/static/dashboard.css"></head><body>'
		f'<h1>Recording of session <code>{e(sid)}</code></h1>'
		f'<p>{e(state)}; {len(rows)} calls; {recording.size} bytes. <a href="{PREFIX}/">Back to the dashboard</a></p>'
		f'{truncated}<ol class="timeline">{"".join(rows) or "<li>No calls yet.</li>"}</ol></body></html>'
	)
