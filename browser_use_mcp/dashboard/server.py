"""The dashboard's own server, for stdio (``--dashboard-port N``): over HTTP the dashboard is served
by the transport itself, at /dashboard beside /mcp (``transports/http.py``)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.middleware import Middleware

from browser_use_mcp.config import ServerConfig
from browser_use_mcp.dashboard.app import MAX_BODY as DASHBOARD_MAX_BODY
from browser_use_mcp.dashboard.app import Dashboard, HideToken
from browser_use_mcp.guard import BodyLimit
from browser_use_mcp.logs import announce
from browser_use_mcp.metrics import Metrics, guarded
from browser_use_mcp.sessions import SessionRegistry
from browser_use_mcp.transports.http import DASHBOARD_PATH, bind_socket, connection_guard, stop_uvicorn, uvicorn_server


@contextlib.asynccontextmanager
async def standalone_dashboard(
	config: ServerConfig, registry: SessionRegistry, metrics: Metrics | None = None
) -> AsyncIterator[None]:
	"""With stdio, ``--dashboard-port N``: the dashboard on 127.0.0.1:N, for the one local
	principal, with /healthz, /readyz and /metrics beside it, served while the block runs.
	Loopback only: stdio has no tokens to check."""
	if not config.dashboard_port:
		yield
		return
	sock = bind_socket('127.0.0.1', config.dashboard_port)
	dashboard = Dashboard(registry, None, loopback=True, takeover_timeout=config.takeover_timeout)
	middleware = [Middleware(HideToken), Middleware(BodyLimit, limit_for=lambda _path: DASHBOARD_MAX_BODY)]
	health = metrics.routes(lambda handler: guarded(handler, loopback=True, principal_of=None)) if metrics is not None else []
	app = Starlette(routes=[*dashboard.routes(), *health], middleware=middleware)
	uv = uvicorn_server(app, config, connection_guard(config))
	serving = asyncio.create_task(uv.serve(sockets=[sock]), name='dashboard-server')
	announce(
		f'browser-use-mcp: dashboard at http://127.0.0.1:{config.dashboard_port}{DASHBOARD_PATH} '
		'(and /healthz, /readyz, /metrics)'
	)
	try:
		yield
	finally:
		await stop_uvicorn(uv, serving)
		sock.close()
