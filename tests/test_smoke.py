async def test_navigate_and_state(mcp, site):
	r = await mcp.ok('browser_navigate', url=site + '/', session_id='smoke')
	assert r.text == f'Navigated to: {site}/'
	state = (await mcp.ok('browser_get_state', session_id='smoke')).json()
	assert state['title'] == 'Home Page'
	await mcp.ok('browser_close_session', session_id='smoke')
