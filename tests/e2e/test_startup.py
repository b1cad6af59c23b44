"""Start-up: the MCP handshake and tools/list never wait for browser-use to load.

Some clients give up when ``initialize`` takes more than 10 s (browser-use's own MCPClient),
and on a loaded machine loading browser-use took most of that. Here the server runs with an
import hook that holds any import of browser-use until the test opens a gate: the handshake
and the tool list must complete while it is held, and the first browser call once it opens.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from harness.servers import running_server, server_env, wait_until

GATE_HOOK = '''
import os, sys, time

class _HoldBrowserUse:
	"""Blocks the first import of browser-use until the gate file exists."""

	def find_spec(self, name, path=None, target=None):
		if name.split('.')[0] in ('browser_use', 'bubus'):
			gate = os.environ['TEST_BROWSER_USE_GATE']
			open(gate + '.waiting', 'w').close()
			while not os.path.exists(gate):
				time.sleep(0.02)
			sys.meta_path.remove(self)
		return None

sys.meta_path.insert(0, _HoldBrowserUse())
'''


async def test_handshake_and_tool_list_do_not_wait_for_browser_use(tmp_path: Path, site: str) -> None:
	hook = tmp_path / 'hook'
	hook.mkdir()
	(hook / 'sitecustomize.py').write_text(GATE_HOOK)
	gate = tmp_path / 'gate'
	home = tmp_path / 'home'
	env = server_env(home, TEST_BROWSER_USE_GATE=str(gate))
	env['PYTHONPATH'] = os.pathsep.join([str(hook), env['PYTHONPATH']])
	async with running_server(home, env=env) as mcp:
		tools = await asyncio.wait_for(mcp.client.list_tools(), 30)
		assert len(tools.tools) >= 20
		assert not gate.exists()
		waiting = Path(str(gate) + '.waiting')
		assert await asyncio.to_thread(wait_until, waiting.exists, 10), 'the server loads browser-use, in the background'
		listed = await mcp.ok('browser_list_sessions')  # needs no browser either
		assert listed.text == 'No active browser sessions'
		pending = asyncio.create_task(mcp.call('browser_navigate', session_id='s', url=f'{site}/two'))
		await asyncio.sleep(0.5)
		assert not pending.done(), 'a browser call waits for browser-use to load'
		gate.touch()
		result = await asyncio.wait_for(pending, 60)
		assert not result.is_error, result.text
		assert (await mcp.ok('browser_get_state', session_id='s')).json()['title'] == 'Page Two'
