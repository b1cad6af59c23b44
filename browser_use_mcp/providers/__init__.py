"""Where a session's browser comes from (which provider serves which session is decided once, in
``runtime.choose_providers``).

A provider hands the registry a ``Browser`` for a session (browser-use connected to a CDP
endpoint the provider owns), tells it when that browser dies, and takes it back on close. The
registry, the pool, expiry, tombstones and every tool work the same whichever provider made it.

- ``process``: a Chromium of our own per session (``providers/process.py``);
- ``shared``: sessions as browser contexts of shared Chromiums of our own (``--isolation context``),
  or of a browser someone else started (``--cdp-url``; ``providers/shared.py``, ``cdp_proxy.py``);
- ``grid``: a Selenium Grid session per MCP session (``--grid-url``; ``providers/grid.py``).

``cdp_client.py`` is the small CDP client they (and storage, doctor) use for browser-level commands.
"""

from browser_use_mcp.providers.base import Browser, BrowserProvider, Endpoint

__all__ = ['Browser', 'BrowserProvider', 'Endpoint']
