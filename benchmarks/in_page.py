"""What moving the state's reading into the page could gain: ``python -m benchmarks.in_page``.

``browser_get_state`` builds on browser-use's three CDP trees (``DOMSnapshot.captureSnapshot``,
``DOM.getDocument``, ``Accessibility.getFullAXTree``), which Chromium alone takes ~1 s to answer on
the corpus's largest page, twice ``@playwright/mcp``'s whole snapshot. Issue 24 names the other
design: read what the state needs in the page, in one ``Runtime.evaluate``, as ``@playwright/mcp``
does. Before anyone rewrites browser-use's serializer for it, this measures its floor: on each
corpus page (``python -m benchmarks.corpus --setup``), over a DevTools pipe to the headless shell
as the server launches it, warm p50 of ``--rounds``:

- the three trees, asked for as browser-use asks (sent together, as it sends them), their size
  and how long the page-state worker's decoder (msgspec) takes to turn them into Python objects;
- one in-page walk returning, as one JSON string, what those trees give the serializer for each
  node: every element's tag, attributes, box (``getBoundingClientRect``) and the ten computed
  styles browser-use reads, every text node's text, open shadow roots and same-origin frames, and
  in place of the accessibility tree what its interactivity checks read from it (explicit role,
  tab index, editable, disabled, checked, selected, expanded, pressed, required, a form control's
  value); and the same walk without the styles and boxes, to show what they cost;
- the backend node ids of up to 500 elements that look interactive (what the actions would need):
  one ``Runtime.evaluate`` for them, one ``Runtime.getProperties``, a ``DOM.describeNode`` each, sent
  together;
- ``Accessibility.queryAXTree`` for buttons: Chromium computes the whole accessibility tree for it
  and answers a few nodes, so this is what the tree costs before any of it is sent.

What the walk cannot give, and a serializer built on it would have to do without or get otherwise:
paint order (browser-use hides elements painted over by others with it), closed shadow roots,
cross-origin frames' contents (a CDP call per frame, as now), Chromium's computed roles for
elements without an explicit one (a table cell is ``cell``, which browser-use lists), and the
backend node ids its actions need (one ``DOM.describeNode`` per listed element, sent together).
Figures only: nothing here passes or fails.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from browser_use.dom.enhanced_snapshot import REQUIRED_COMPUTED_STYLES

# the computed styles browser-use's DomService asks the snapshot for, and reads
STYLES = list(REQUIRED_COMPUTED_STYLES)
TREES: list[tuple[str, dict[str, Any]]] = [
	(
		'DOMSnapshot.captureSnapshot',
		{
			'computedStyles': STYLES,
			'includePaintOrder': True,
			'includeDOMRects': True,
			'includeBlendedBackgroundColors': False,
			'includeTextColorOpacities': False,
		},
	),
	('DOM.getDocument', {'depth': -1, 'pierce': True}),
	('Accessibility.getFullAXTree', {}),
]

# one walk of the composed tree; strings go to a table (``s``), each node is one flat row:
# element: [parent, tag, [attr name, value, ...], x, y, w, h, *styles, role-ish fields]; text: [parent, -1, text]
WALK = r"""
(withLayout) => {
  const STYLES = %s;
  const index = new Map(), table = [];
  const s = (v) => { let i = index.get(v); if (i === undefined) { i = table.length; table.push(v); index.set(v, i); } return i; };
  const rows = [];
  const visit = (node, parent) => {
    for (let child = node.firstChild; child; child = child.nextSibling) {
      if (child.nodeType === 3) {
        const text = child.nodeValue.trim();
        if (text) rows.push([parent, -1, s(text)]);
        continue;
      }
      if (child.nodeType !== 1) continue;
      const tag = child.localName;
      if (tag === 'script' || tag === 'style' || tag === 'noscript') continue;
      const attrs = [];
      for (const a of child.attributes) attrs.push(s(a.name), s(a.value));
      const row = [parent, s(tag), attrs];
      if (withLayout) {
        const r = child.getBoundingClientRect();
        row.push(Math.round(r.x), Math.round(r.y), Math.round(r.width), Math.round(r.height));
        const cs = getComputedStyle(child);
        for (const name of STYLES) row.push(s(cs.getPropertyValue(name)));
      }
      row.push(child.tabIndex, child.isContentEditable ? 1 : 0, child.disabled ? 1 : 0,
        child.checked === true ? 1 : 0, child.selected === true ? 1 : 0,
        typeof child.value === 'string' && tag !== 'option' && tag !== 'button' ? s(child.value.slice(0, 200)) : -1);
      const me = rows.length;
      rows.push(row);
      if (child.shadowRoot) visit(child.shadowRoot, me);
      if (tag === 'iframe' || tag === 'frame') {
        let doc = null;
        try { doc = child.contentDocument; } catch (e) {}
        if (doc && doc.documentElement) visit(doc, me);
      } else {
        visit(child, me);
      }
    }
  };
  visit(document, -1);
  return JSON.stringify({s: table, r: rows});
}
"""


# the elements a state would list, in a stand-in for the serializer's choice (the first 500 that look
# interactive): their backend node ids are what browser-use's actions take
LISTED = (
	"Array.from(document.querySelectorAll('a[href], button, input, select, textarea, summary, [role], [tabindex], "
	"[onclick]')).slice(0, 500)"
)


def call_together(pipe: Any, calls: list[tuple[str, dict[str, Any]]], session: str) -> list[dict[str, Any]]:
	"""Send every call at once, then read until each is answered (as the server's pipe does)."""
	import json
	import os

	first = pipe.ids + 1
	for method, params in calls:
		pipe.ids += 1
		message = {'id': pipe.ids, 'method': method, 'params': params, 'sessionId': session}
		os.write(pipe.write_fd, json.dumps(message).encode() + b'\0')
	answers: dict[int, dict[str, Any]] = {}
	while len(answers) < len(calls):
		decoded = json.loads(pipe._message())
		if first <= decoded.get('id', 0) <= pipe.ids:
			answers[decoded['id']] = decoded
	return [answers[i] for i in sorted(answers)]


def _walk(with_layout: bool) -> dict[str, Any]:
	import json

	fn = WALK % json.dumps(STYLES)
	return {'expression': f'({fn})({str(with_layout).lower()})', 'returnByValue': True}


def measure(pipe: Any, session: str, rounds: int) -> dict[str, Any]:
	import msgspec

	out: dict[str, Any] = {}

	def answer(method: str, params: dict[str, Any]) -> bytes:
		small, _ = pipe.call(method, params, session)
		return pipe.last if small is None else msgspec.json.encode(small)

	trees_wall, trees_decode, trees_mb = [], [], 0.0
	for _ in range(rounds):
		started = time.perf_counter()
		raws = []
		for method, params in TREES:  # browser-use sends them together; the renderer answers one after another
			raws.append(answer(method, params))
		trees_wall.append((time.perf_counter() - started) * 1000)
		started = time.perf_counter()
		for raw in raws:
			msgspec.json.decode(raw)
		trees_decode.append((time.perf_counter() - started) * 1000)
		trees_mb = sum(len(raw) for raw in raws) / 1e6
	out['trees'] = (statistics.median(trees_wall), statistics.median(trees_decode), trees_mb)
	ids_wall, listed = [], 0
	for _ in range(rounds):
		started = time.perf_counter()
		found = msgspec.json.decode(answer('Runtime.evaluate', {'expression': LISTED, 'objectGroup': 'in-page-probe'}))
		props = msgspec.json.decode(
			answer('Runtime.getProperties', {'objectId': found['result']['result']['objectId'], 'ownProperties': True})
		)
		handles = [p['value']['objectId'] for p in props['result']['result'] if p['name'].isdigit()]
		answers = call_together(pipe, [('DOM.describeNode', {'objectId': h, 'depth': 0}) for h in handles], session)
		assert all('backendNodeId' in a['result']['node'] for a in answers)
		ids_wall.append((time.perf_counter() - started) * 1000)
		pipe.call('Runtime.releaseObjectGroup', {'objectGroup': 'in-page-probe'}, session)
		listed = len(handles)
	out['ids'] = (statistics.median(ids_wall), listed)
	# Chromium computes the accessibility tree anew for each request: a query with (nearly) nothing to
	# answer shows what the computing alone costs, before 10+ MB of answer are sent
	document = msgspec.json.decode(answer('DOM.getDocument', {'depth': 0}))['result']['root']['backendNodeId']
	query = []
	for _ in range(rounds):
		started = time.perf_counter()
		answer('Accessibility.queryAXTree', {'backendNodeId': document, 'role': 'button'})
		query.append((time.perf_counter() - started) * 1000)
	out['ax_query'] = statistics.median(query)
	for label, layout in (('walk', True), ('walk, no boxes or styles', False)):
		wall, decode, mb, nodes = [], [], 0.0, 0
		for _ in range(rounds):
			started = time.perf_counter()
			raw = answer('Runtime.evaluate', _walk(layout))
			wall.append((time.perf_counter() - started) * 1000)
			started = time.perf_counter()
			value = msgspec.json.decode(raw)['result']['result']['value']
			walked = msgspec.json.decode(value)
			decode.append((time.perf_counter() - started) * 1000)
			mb, nodes = len(raw) / 1e6, len(walked['r'])
		out[label] = (statistics.median(wall), statistics.median(decode), mb)
		out['nodes'] = nodes
	return out


def run(args: argparse.Namespace) -> None:
	from benchmarks.common import table
	from benchmarks.corpus import COUNT_ELEMENTS, PAGES, CorpusServer, available
	from benchmarks.devtools_relay import DevToolsPipe
	from browser_use_mcp.browser import find_chromium, find_headless_shell
	from browser_use_mcp.doctor import chromium_version

	chromium = find_headless_shell() or find_chromium() or 'chromium'
	version = chromium_version(find_chromium() or chromium).split(' built')[0]
	pages = [p for p in PAGES if not p.synthetic and available(p) and (not args.pages or any(n in p.name for n in args.pages))]
	rows = []
	with CorpusServer() as corpus:
		pipe = DevToolsPipe(chromium, False)
		try:
			session = pipe.open_page()
			for page in pages:
				pipe.call('Page.navigate', {'url': corpus.url + page.path}, session)
				time.sleep(args.settle)
				counted, _ = pipe.call('Runtime.evaluate', {'expression': COUNT_ELEMENTS, 'returnByValue': True}, session)
				elements = counted['result']['result']['value'] if counted else 0
				result = measure(pipe, session, args.rounds)
				trees, walk, bare = result['trees'], result['walk'], result['walk, no boxes or styles']
				rows.append(
					[
						page.name,
						elements,
						f'{trees[0]:.0f} + {trees[1]:.0f} ({trees[2]:.1f} MB)',
						f'{walk[0]:.0f} + {walk[1]:.0f} ({walk[2]:.1f} MB, {result["nodes"]:,} rows)',
						f'{bare[0]:.0f} + {bare[1]:.0f} ({bare[2]:.1f} MB)',
						f'{result["ids"][0]:.0f} ({result["ids"][1]} elements)',
						f'{result["ax_query"]:.0f}',
						f'{(walk[0] + walk[1] + result["ids"][0]) / (trees[0] + trees[1]):.2f}',
					]
				)
		finally:
			pipe.close()
	print(
		table(
			f"Reading a page's state: browser-use's three trees vs one in-page walk, {version} (headless shell), "
			f'warm p50 of {args.rounds}, ms (answer + decode in Python)',
			[
				'page',
				'elements',
				'three trees',
				'in-page walk',
				'walk without boxes and styles',
				'backend node ids',
				'accessibility tree computed alone',
				'walk + ids ÷ trees',
			],
			rows,
		)
	)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
	parser = argparse.ArgumentParser(prog='python -m benchmarks.in_page', description=__doc__)
	parser.add_argument('--rounds', type=int, default=5)
	parser.add_argument('--pages', nargs='*', help='corpus pages by (part of their) name; default: all but the synthetic one')
	parser.add_argument('--settle', type=float, default=4.0, help='seconds after a navigation before reading')
	return parser.parse_args(argv)


if __name__ == '__main__':
	run(parse())
