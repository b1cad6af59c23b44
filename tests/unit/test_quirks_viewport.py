"""``quirks_viewport.fix_snapshot`` on hand-made ``DOMSnapshot`` answers: the HTML element of a
quirks-mode document gets its body's client and scroll rects, and nothing else changes. The real
pages (the walk and the three trees, a quirks-mode page and frame) are in tests/test_in_page_state.py."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from browser_use_mcp.patches.quirks_viewport import fix_snapshot, quirks_documents

WHOLE = [0, 0, 1265, 7087]  # a quirks-mode HTML element's client rect: its own box, the whole document
VIEWPORT = [0, 0, 1265, 757]  # the body's there: the viewport
SCROLLED = [0, 2000, 1265, 7087]  # the body's scroll rect there: the viewport's offset


def snapshot(body: str = 'BODY', extra_documents: int = 0) -> dict[str, Any]:
	"""One document (backend ids 1-4: document, HTML, HEAD, body), its HTML and body laid out."""
	strings = ['#document', 'HTML', 'HEAD', body]
	document = {
		'nodes': {'parentIndex': [-1, 0, 1, 1], 'nodeName': [0, 1, 2, 3], 'backendNodeId': [1, 2, 3, 4]},
		'layout': {'nodeIndex': [1, 3], 'clientRects': [WHOLE, VIEWPORT], 'scrollRects': [[0, 0, 1265, 7087], SCROLLED]},
	}
	others = [copy.deepcopy(document) for _ in range(extra_documents)]
	for n, other in enumerate(others, start=1):
		other['nodes']['backendNodeId'] = [10 * n + i for i in range(1, 5)]
	return {'strings': strings, 'documents': [document, *others]}


def dom_tree(mode: str, frame_mode: str | None = None) -> dict[str, Any]:
	root: dict[str, Any] = {'nodeType': 9, 'backendNodeId': 1, 'compatibilityMode': mode, 'children': [{'nodeType': 1}]}
	if frame_mode is not None:
		frame = {'nodeType': 1, 'contentDocument': {'nodeType': 9, 'backendNodeId': 11, 'compatibilityMode': frame_mode}}
		root['children'].append({'nodeType': 1, 'children': [frame]})
	return {'root': root}


def layout(snap: dict[str, Any], document: int = 0) -> dict[str, Any]:
	return snap['documents'][document]['layout']


def test_a_quirks_mode_documents_html_element_gets_its_bodys_rects() -> None:
	snap = snapshot()
	assert fix_snapshot(snap, dom_tree('QuirksMode')) == 1
	assert layout(snap)['clientRects'] == [VIEWPORT, VIEWPORT]
	assert layout(snap)['scrollRects'] == [SCROLLED, SCROLLED]


@pytest.mark.parametrize('mode', ['NoQuirksMode', 'LimitedQuirksMode'])
def test_a_standards_mode_document_is_left_as_it_is(mode: str) -> None:
	snap = snapshot()
	before = copy.deepcopy(snap)
	assert fix_snapshot(snap, dom_tree(mode)) == 0
	assert snap == before


def test_a_frameset_document_is_left_as_it_is() -> None:
	snap = snapshot(body='FRAMESET')
	before = copy.deepcopy(snap)
	assert fix_snapshot(snap, dom_tree('QuirksMode')) == 0
	assert snap == before


def test_only_the_frames_in_quirks_mode_are_corrected() -> None:
	snap = snapshot(extra_documents=1)
	assert quirks_documents(dom_tree('NoQuirksMode', 'QuirksMode')) == {11}
	assert fix_snapshot(snap, dom_tree('NoQuirksMode', 'QuirksMode')) == 1
	assert layout(snap, 0)['clientRects'] == [WHOLE, VIEWPORT], 'the top document is in standards mode'
	assert layout(snap, 1)['clientRects'] == [VIEWPORT, VIEWPORT]
