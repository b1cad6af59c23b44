"""cdp-use's connection to our own CDP endpoint made in process, not over a loopback socket.

Why: every session's browser-use connects to a link of ours (``providers.cdp_proxy``), in this
very process, which forwards to the browser's DevTools pipe. Over the loopback websocket each
message was framed and sent by cdp-use, woke the loop through ``epoll``, was parsed by the
websocket server, and its answer came back the same way: on a small page's
``browser_get_state`` (about fifteen round trips) that was a third of the server's CPU time per
call, all of it on the event loop every session shares.

``CDPClient.start`` is replaced by one that, when the client's URL is a link of ours
(``cdp_proxy.local_link``), connects through ``providers.local_cdp`` (a pair of in-memory ends
used exactly like websocket connections) and starts cdp-use's own message handler on it. Every
other URL (a remote browser, a Grid node) connects as cdp-use does. The messages are the same
text either way; the links and cdp-use handle them unchanged.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from browser_use_mcp.patches import Patch, Saved

logger = logging.getLogger(__name__)

CDP_USE_VERSION = '1.4.5'
_CLIENT = 'cdp_use.client:CDPClient'

_saved = Saved()


def _local_start(start: Any) -> Any:
	async def local_start(self: Any) -> None:
		"""Stands in for ``CDPClient.start`` (see the module docstring)."""
		from browser_use_mcp.providers import cdp_proxy, local_cdp

		link = cdp_proxy.local_link(self.url)
		if link is None:
			return await start(self)
		if self.ws is not None:
			raise RuntimeError('Client is already started')
		self.ws = local_cdp.connect(link)
		self._message_handler_task = asyncio.create_task(self._handle_messages())

	return local_start


def _apply() -> None:
	from cdp_use.client import CDPClient

	_saved.replace(CDPClient, 'start', _local_start(CDPClient.__dict__['start']))


def _revert() -> None:
	_saved.restore()


PATCH = Patch(
	name='local_cdp',
	title='CDP to our own endpoint in process',
	changes='``CDPClient.start`` connects a client whose URL is one of our CDP endpoints through an in-memory pair '
	'of ends (``providers.local_cdp``) instead of a loopback websocket; any other URL connects as before.',
	why='each CDP message crossed a loopback socket twice (framed, woken through epoll, parsed): a third of the '
	"server's CPU time of a small page's browser_get_state, all on the event loop.",
	package='cdp-use',
	versions=(CDP_USE_VERSION,),
	sources={
		f'{_CLIENT}.start': '67a670534b70d017',
		f'{_CLIENT}.stop': '1e8cd26dd9a3752d',  # closes ``ws``
		f'{_CLIENT}._handle_messages': 'aadafa3b1676b0e7',  # ``ws.recv`` until ConnectionClosed
		f'{_CLIENT}.send_raw': 'e4cf09f79f25715e',  # ``ws.send`` of the text
	},
	replaces=(f'{_CLIENT}.start',),
	switch='local_cdp',
	when_refused='browser-use reaches our CDP endpoint over a loopback websocket: more CPU per CDP message',
	apply=_apply,
	revert=_revert,
	logger=logger.name,
	refused_message='CDP to our own endpoint over a loopback websocket (more CPU per message)',
)
