"""What form state costs browser_get_state: warm p50 with and without it, on form-heavy and other pages.

``python -m benchmarks.form_state [--repeats N] [--isolation browser|context]`` drives a
SessionRegistry through the catalogue in process (no MCP transport), like ``benchmarks.state_corpus``,
and times ``browser_get_state`` with form-state extraction on (the default: each element's value,
checked, selected, disabled and expanded, from the DOM snapshot and accessibility tree the capture
already holds, plus one small script per <select> and password field, at most 50) and off
(``tools.common.FORM_STATE = False``: the state as before #26), the two interleaved call by call in
the same session. Pages: a synthetic form-heavy page (400 fields: text inputs, selects, checkboxes,
radios, passwords, textareas, some disabled), and the corpus of ``benchmarks/corpus.py`` where it is
installed (``python -m benchmarks.corpus --setup``): its checkout form and a big table without forms.

Prints per page: elements listed, p50 on and off (ms), their difference, the p50 of the form-state work
alone on the page's state (the per-element fields, pure Python on the loop; the scripts for <select> and
password fields, over CDP), and the answer's length on and off. On a shared machine the end-to-end
difference is within the noise; the work alone is the steadier figure. Figures only: nothing here
passes or fails.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import run_in_scratch_home


def form_heavy(fields: int = 400) -> str:
	"""A long form: every kind of field the state describes, a tenth of them disabled."""
	rows = []
	for i in range(fields):
		off = ' disabled' if i % 10 == 9 else ''
		kind = i % 8
		if kind == 0:
			rows.append(f'<label>Name {i} <input name="t{i}" value="value {i}"{off}></label>')
		elif kind == 1:
			options = ''.join(f'<option value="{j}"{" selected" if j == i % 5 else ""}>Choice {j}</option>' for j in range(5))
			rows.append(f'<label>Pick {i} <select name="s{i}"{off}>{options}</select></label>')
		elif kind == 2:
			rows.append(f'<label><input type="checkbox" name="c{i}"{" checked" if i % 3 else ""}{off}> Check {i}</label>')
		elif kind == 3:
			rows.append(f'<label><input type="radio" name="r{i // 16}" value="{i}"{off}> Radio {i}</label>')
		elif kind == 4:
			rows.append(f'<label>Secret {i} <input type="password" name="p{i}" value="pw-{i}"{off}></label>')
		elif kind == 5:
			rows.append(f'<label>Notes {i} <textarea name="n{i}"{off}>text {i}</textarea></label>')
		elif kind == 6:
			rows.append(f'<button type="button" aria-expanded="{"true" if i % 2 else "false"}"{off}>Menu {i}</button>')
		else:
			rows.append(f'<label>When {i} <input type="date" name="d{i}" value="2024-01-{i % 28 + 1:02d}"{off}></label>')
	return '<form>' + ''.join(f'<div>{r}</div>' for r in rows) + '</form>'


def set_form_state(on: bool) -> None:
	from browser_use_mcp.tools import common

	common.FORM_STATE = on


async def timed(catalog: Any, name: str, args: dict[str, Any]) -> tuple[float, str]:
	from browser_use_mcp.tools.base import Call

	started = time.perf_counter()
	try:
		text = (await catalog.call(name, args, Call())).text
	except Exception as exc:
		print(f'  {name} failed after {time.perf_counter() - started:.1f} s: {exc}', file=sys.stderr)
		text = ''
	return (time.perf_counter() - started) * 1000, text


async def extraction(registry: Any, sid: str, repeats: int) -> tuple[float, float]:
	"""p50 (ms) of the form-state work alone on the session's last state: the per-element fields from
	the capture (pure Python, on the loop) and the scripts for <select> and password fields (CDP)."""
	from browser_use_mcp.tools.common import _live_form, form_state

	state = next(s for s in registry.sessions() if s.session_id == sid)
	elements = dict(state.page_epoch.elements)
	python, live = [], []
	for _ in range(repeats):
		started = time.perf_counter()
		for node in elements.values():
			form_state(node)
		python.append((time.perf_counter() - started) * 1000)
		started = time.perf_counter()
		await _live_form(state, elements)
		live.append((time.perf_counter() - started) * 1000)
	return statistics.median(python), statistics.median(live)


async def page_times(catalog: Any, registry: Any, url: str, repeats: int) -> dict[str, Any]:
	sid = 'form-state'
	await timed(catalog, 'browser_navigate', {'session_id': sid, 'url': url})
	samples: dict[bool, list[float]] = {True: [], False: []}
	lengths: dict[bool, int] = {}
	listed = 0
	for on in (True, False):  # warm-up: the page's first layout, the worker's import
		set_form_state(on)
		for _ in range(2):
			await timed(catalog, 'browser_get_state', {'session_id': sid})
	for _ in range(repeats):
		for on in (True, False):
			set_form_state(on)
			ms, text = await timed(catalog, 'browser_get_state', {'session_id': sid})
			samples[on].append(ms)
			if text:
				lengths[on] = len(text)
				listed = len(json.loads(text)['interactive_elements'])
	set_form_state(True)
	await timed(catalog, 'browser_get_state', {'session_id': sid})
	python, live = await extraction(registry, sid, repeats)
	return {
		'python': python,
		'live': live,
		'listed': listed,
		'on': statistics.median(samples[True]),
		'off': statistics.median(samples[False]),
		'chars_on': lengths.get(True),
		'chars_off': lengths.get(False),
	}


async def main(args: argparse.Namespace) -> None:
	from benchmarks.common import machine, table
	from benchmarks.corpus import PAGES, CorpusServer, available
	from browser_use_mcp.catalog import Catalog
	from browser_use_mcp.config import load_config
	from browser_use_mcp.sessions import SessionRegistry
	from harness.pages import PageServer
	from harness.servers import html_pages

	config = dataclasses.replace(load_config(), isolation=args.isolation)
	wanted = ('bootstrap checkout', 'bootstrap cheatsheet', 'postgres sql-keywords', 'synthetic heavy')
	corpus_pages = [p for p in PAGES if p.name in wanted and available(p)]
	missing = [name for name in wanted if not any(p.name == name for p in corpus_pages)]
	with PageServer() as site, CorpusServer() as corpus, html_pages({'/form-heavy': form_heavy()}) as forms:
		site.httpd.handle_error = lambda *_: None
		registry = SessionRegistry(config)
		await registry.start()
		try:
			catalog = Catalog(registry)
			targets = [('synthetic form-heavy (400 fields)', f'{forms}/form-heavy')] + [
				(p.name, f'{site.url if p.synthetic else corpus.url}{p.path}') for p in corpus_pages
			]
			rows, raw = [], {}
			for name, url in targets:
				result = await page_times(catalog, registry, url, args.repeats)
				raw[name] = result
				rows.append(
					[
						name,
						result['listed'],
						round(result['on'], 1),
						round(result['off'], 1),
						round(result['on'] - result['off'], 1),
						round(result['python'], 2),
						round(result['live'], 1),
						result['chars_on'],
						result['chars_off'],
					]
				)
				print(*rows[-1], sep=' | ', file=sys.stderr, flush=True)
			print(
				table(
					f'browser_get_state with and without form state, warm p50 of {args.repeats} (ms), isolation {args.isolation}',
					[
						'page',
						'listed',
						'form state on',
						'off',
						'on - off',
						'fields (Python)',
						'scripts (CDP)',
						'chars on',
						'chars off',
					],
					rows,
				)
			)
			if missing:
				print('corpus pages left out (package missing):', ', '.join(missing))
			if args.json:
				Path(args.json).write_text(json.dumps({'machine': machine(), 'results': raw}, indent=1, default=str))
		finally:
			await registry.shutdown()


def parse(argv: list[str] | None = None) -> argparse.Namespace:
	parser = argparse.ArgumentParser(prog='python -m benchmarks.form_state', description=__doc__)
	parser.add_argument('--repeats', type=int, default=15)
	parser.add_argument('--isolation', default='context', choices=['browser', 'context'])
	parser.add_argument('--json', help='write the raw figures here')
	return parser.parse_args(argv)


if __name__ == '__main__':
	run_in_scratch_home('bench-form-state-', lambda: main(parse()))
