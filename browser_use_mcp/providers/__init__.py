"""Where a session's browser comes from: one decision, made in one place.

A provider hands the registry a ``Browser`` for a session (browser-use connected to a CDP
endpoint the provider owns), tells it when that browser dies, and takes it back on close. The
registry, the pool, expiry, tombstones and every tool work the same whichever provider made it.

- ``process``: a Chromium of our own per session (``providers/process.py``);
- more to come on the same seam: browser contexts in shared Chromiums, contexts in a browser
  someone else started (``--cdp-url``), Selenium Grid sessions.
"""

from browser_use_mcp.providers.base import Browser, BrowserProvider, Endpoint

__all__ = ['Browser', 'BrowserProvider', 'Endpoint']
