"""A result of megabytes (a 5 MB page's HTML) made the SDK client report "SSE stream ended without a
response". Results are capped, and the cap says how to get the rest."""

from __future__ import annotations

from browser_use_mcp.tools.content import HTML_PART, MAX_RESULT_CHARS
from harness.servers import Mcp
from tests.fixtures import isolation_modes

isolation = isolation_modes('context')

BIG = 5_000_000


async def test_a_5_mb_page_comes_in_parts_that_say_where_the_rest_is(mcp: Mcp, site: str) -> None:
	await mcp.ok('browser_navigate', session_id='big', url=f'{site}/two')
	await mcp.ok('browser_evaluate', session_id='big', expression=f'document.body.textContent = "x".repeat({BIG}); 1')
	total = (
		await mcp.ok('browser_evaluate', session_id='big', expression='document.documentElement.outerHTML.length')
	).structured['result']
	assert total > BIG
	first = (await mcp.ok('browser_get_html', session_id='big')).text
	assert len(first) < HTML_PART + 500, len(first)
	assert first.startswith('<html') and f'offset={HTML_PART}' in first and f'of {total}' in first, first[-300:]
	parts, offset = [first[:HTML_PART]], HTML_PART
	while offset < total:
		text = (await mcp.ok('browser_get_html', session_id='big', offset=offset, max_chars=MAX_RESULT_CHARS)).text
		body, _, footer = text.rpartition('\n[')
		assert len(body) <= MAX_RESULT_CHARS and f'of {total}' in footer, footer
		parts.append(body)
		offset += len(body)
	assert sum(map(len, parts)) == total and ''.join(parts).endswith('</html>')
	# a small page is returned whole, as before
	await mcp.ok('browser_navigate', session_id='big', url=f'{site}/two')
	small = (await mcp.ok('browser_get_html', session_id='big')).text
	assert small.startswith('<html') and small.endswith('</html>') and '[' not in small.splitlines()[-1]
	# a JavaScript value too large for one result is refused with how to ask for less
	huge = await mcp.call('browser_evaluate', session_id='big', expression=f'"y".repeat({BIG})')
	assert huge.is_error and 'slice' in huge.text and len(huge.text) < 1000, huge.text[:300]
	await mcp.ok('browser_close_session', session_id='big')
