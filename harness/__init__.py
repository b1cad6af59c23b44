"""The real-parts harness that the tests and the benchmarks share: plain helpers, no pytest fixtures.

Everything here starts real things on 127.0.0.1 and always stops them:

- ``servers``: the server over stdio as a subprocess, the real MCP client on it (``running_server``,
  ``Background``, ``Mcp``, ``RawServer``), ``server_env``, ``user_chromium``, ``html_pages``, ``wait_until``.
- ``httpserver``: the server over Streamable HTTP (``http_server``) and a client for it (``connect``).
- ``oidc``: a real OpenID provider (node's oidc-provider) and a server that takes its tokens.
- ``pages``: the loopback test web site (``PageServer``) and the action tools' pages.
- ``gridserver``: a real Selenium Grid 4 standalone.
- ``durable``: the durable-session store as it is read back, an orderly stop.
- ``fakes``: stand-ins for what may not be reached (an LLM provider) and the in-process runtime
  (``FakeRuntime``) of tests/unit.

Pytest fixtures stay in ``tests/`` (conftest.py, fixtures.py). The package is not shipped in the wheel
(pyproject's package list is ``browser_use_mcp*``); nothing in ``browser_use_mcp`` imports it.
"""
