"""benchmarks.in_page reads what it claims to, on a real Chromium: the walk and the backend ids (the
server's own in-page state is tested in tests/test_in_page_state.py)."""

from __future__ import annotations

import json
import time
import urllib.parse

import pytest

from benchmarks import in_page
from benchmarks.devtools_relay import DevToolsPipe
from browser_use_mcp.browser import find_chromium, find_headless_shell

PAGE = """<!doctype html><title>t</title><style>b{color:red}</style>
<body><p>Hello <b>world</b></p><input id=q value=typed><button disabled>Go</button>
<div id=host></div><script>
document.getElementById('host').attachShadow({mode: 'open'}).innerHTML = '<a href="/x">inside</a>';
</script></body>"""


@pytest.fixture
def pipe_session():
	chromium = find_headless_shell() or find_chromium()
	if chromium is None:
		pytest.skip('no Chromium')
	pipe = DevToolsPipe(chromium, False)
	try:
		session = pipe.open_page()
		pipe.call('Page.navigate', {'url': 'data:text/html,' + urllib.parse.quote(PAGE)}, session)
		for _ in range(50):
			ready, _ = pipe.call('Runtime.evaluate', {'expression': 'document.readyState', 'returnByValue': True}, session)
			if ready and ready['result']['result']['value'] == 'complete':
				break
			time.sleep(0.1)
		yield pipe, session
	finally:
		pipe.close()


def test_the_walk_lists_every_element_text_and_shadow_root(pipe_session) -> None:
	pipe, session = pipe_session
	answer, _ = pipe.call('Runtime.evaluate', in_page._walk(True), session)
	assert answer is not None
	walked = json.loads(answer['result']['result']['value'])
	strings, rows = walked['s'], walked['r']
	elements = [strings[row[1]] for row in rows if row[1] != -1]
	texts = [strings[row[2]] for row in rows if row[1] == -1]
	# script and style are left out, as browser-use's serializer leaves them out; the shadow root's link is in
	assert elements == ['html', 'head', 'title', 'body', 'p', 'b', 'input', 'button', 'div', 'a']
	assert texts == ['t', 'Hello', 'world', 'Go', 'inside']
	by_tag = {strings[row[1]]: row for row in rows if row[1] != -1}
	link = by_tag['a']
	assert strings[rows[link[0]][1]] == 'div', "the shadow root's children hang under their host"
	width = 3 + 4  # parent, tag, attributes; then the box
	styles = dict(zip(in_page.STYLES, (strings[i] for i in by_tag['p'][width : width + len(in_page.STYLES)]), strict=True))
	assert styles['display'] == 'block' and styles['visibility'] == 'visible'
	tail = width + len(in_page.STYLES)  # tab index, editable, disabled, checked, selected, value
	assert by_tag['button'][tail + 2] == 1 and by_tag['input'][tail + 2] == 0
	assert strings[by_tag['input'][tail + 5]] == 'typed'


def test_backend_ids_come_back_for_each_listed_element(pipe_session) -> None:
	pipe, session = pipe_session
	found, _ = pipe.call('Runtime.evaluate', {'expression': in_page.LISTED}, session)
	assert found is not None
	props, _ = pipe.call(
		'Runtime.getProperties', {'objectId': found['result']['result']['objectId'], 'ownProperties': True}, session
	)
	assert props is not None
	handles = [p['value']['objectId'] for p in props['result']['result'] if p['name'].isdigit()]
	answers = in_page.call_together(pipe, [('DOM.describeNode', {'objectId': h, 'depth': 0}) for h in handles], session)
	names = [a['result']['node']['localName'] for a in answers]
	assert names == ['input', 'button'], 'the light DOM elements that look interactive, in document order'
	assert len({a['result']['node']['backendNodeId'] for a in answers}) == 2
