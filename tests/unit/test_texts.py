"""texts.clean: lone surrogates become U+FFFD, everything else (astral characters included) stays."""

from __future__ import annotations

import json

import mcp.types as types

from browser_use_mcp.texts import clean, clean_json, clean_value


def test_lone_surrogates_are_replaced_and_real_characters_kept() -> None:
	assert clean('a\ud800b\udfffc') == 'a\ufffdb\ufffdc'
	assert clean('smile \U0001f600 ok') == 'smile \U0001f600 ok'  # one code point, not a pair of halves
	text = 'plain'
	assert clean(text) is text
	assert clean_value({'t\ud800': ['x\udc00', 1, None, {'k': 'v\ud83d'}]}) == {'t\ufffd': ['x\ufffd', 1, None, {'k': 'v\ufffd'}]}


def test_a_message_that_cannot_be_encoded_is_sent_clean() -> None:
	result = types.CallToolResult(content=[types.TextContent(type='text', text='half \ud800')])
	try:
		result.model_dump_json()
	except ValueError:
		pass
	else:  # pragma: no cover - pydantic's own encoder would have to change
		raise AssertionError('pydantic now encodes lone surrogates; texts.py may be unneeded')
	sent = json.loads(clean_json(result, by_alias=True, exclude_unset=True))
	assert sent['content'][0]['text'] == 'half \ufffd'


def test_the_dashboard_answers_a_page_title_it_cannot_encode() -> None:
	from browser_use_mcp.dashboard.app import JSONResponse

	body = JSONResponse({'sessions': [{'title': 'half \ud800 a pair'}]}).body
	assert json.loads(body) == {'sessions': [{'title': 'half \ufffd a pair'}]}
