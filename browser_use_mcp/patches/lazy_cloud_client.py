"""Sessions that do not build an HTTP client for browser-use's cloud API they never call.

Why: every ``BrowserSession`` builds a client for browser-use's cloud API, and with it an
``httpx`` client whose TLS context loads the CA bundle: ~80 ms of CPU per session (the largest
Python cost of starting one), spent on a client a local browser never calls and never closes.
The patch swaps, in ``browser_use.browser.session``, the name ``CloudBrowserClient`` (what the
session's private ``_cloud_browser_client`` factory calls) for a subclass that creates its HTTP
client on first use, and whose ``close`` does nothing when it was never used.
"""

from __future__ import annotations

import logging
from typing import Any

from browser_use_mcp.patches import Patch, Saved

logger = logging.getLogger(__name__)

BROWSER_USE_VERSION = '0.13.14'
_CLIENT = 'browser_use.browser.cloud.cloud:CloudBrowserClient'

_saved = Saved()


def _make_lazy_cloud_client(base: type) -> type:
	class LazyCloudBrowserClient(base):  # type: ignore[misc, valid-type]
		"""browser-use's cloud API client, building its HTTP client only when a cloud call needs it."""

		def __init__(self, api_base_url: str = 'https://api.browser-use.com') -> None:
			self.api_base_url = api_base_url
			self.current_session_id: str | None = None
			self.current_api_version: str | None = None
			self._http: Any = None

		@property
		def client(self) -> Any:
			if self._http is None:
				import httpx

				self._http = httpx.AsyncClient(timeout=30.0)
			return self._http

		@client.setter
		def client(self, value: Any) -> None:
			self._http = value

		async def close(self) -> None:
			if self._http is None and not self.current_session_id:
				return  # never used: nothing to stop or close
			await super().close()

	LazyCloudBrowserClient.__qualname__ = LazyCloudBrowserClient.__name__
	return LazyCloudBrowserClient


def _checks() -> list[str]:
	from browser_use.browser import session as session_module

	factory = session_module.BrowserSession.__private_attributes__['_cloud_browser_client'].default_factory
	if factory is None or factory.__code__.co_names != ('CloudBrowserClient',):
		return ["BrowserSession._cloud_browser_client is no longer made by 'CloudBrowserClient()'"]
	return []


def _apply() -> None:
	from browser_use.browser import session as session_module

	_saved.replace(session_module, 'CloudBrowserClient', _make_lazy_cloud_client(session_module.CloudBrowserClient))


def _revert() -> None:
	_saved.restore()


PATCH = Patch(
	name='lazy_cloud_client',
	title='a cloud API client built on first use',
	changes='the name ``CloudBrowserClient`` in ``browser_use.browser.session`` becomes a subclass that creates its '
	'httpx client on first use and skips ``close`` when never used.',
	why='each session otherwise loads the CA bundle into a TLS context (~80 ms of CPU, the largest Python cost of '
	'starting a session) for a client a local browser never calls.',
	package='browser-use',
	versions=(BROWSER_USE_VERSION,),
	sources={f'{_CLIENT}.__init__': '8dda8e3482dd16c2', f'{_CLIENT}.close': 'ee768122bd941a82'},
	replaces=('browser_use.browser.session:CloudBrowserClient',),
	switch='lazy_cloud_client',
	when_refused='browser-use builds the cloud client, and its TLS context, with every session (~80 ms of CPU each)',
	apply=_apply,
	revert=_revert,
	checks=_checks,
	logger=logger.name,
	active_message=f'lazy cloud API client enabled (browser-use {BROWSER_USE_VERSION}): sessions build no HTTP client '
	'for a cloud they never call',
	refused_message="lazy cloud API client disabled, keeping browser-use's session start (~80 ms more CPU per session)",
)
