"""The stdio transport: one local client (the process that started the server), its principal
``local``; with ``--dashboard-port`` the dashboard is served beside it (``dashboard/server.py``).
On pipes (what MCP clients give their servers) the event loop reads and writes them itself
(``pipes.py``); on a terminal or a file the SDK's ``stdio_server`` serves."""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from browser_use_mcp.catalog import Catalog
from browser_use_mcp.config import ServerConfig
from browser_use_mcp.server import build_server
from browser_use_mcp.sessions import SessionRegistry
from browser_use_mcp.telemetry import Telemetry
from browser_use_mcp.transports import end_process, run_until_stopped

logger = logging.getLogger('browser_use_mcp.server')


async def serve_stdio(config: ServerConfig) -> None:
	from mcp.server.stdio import stdio_server

	from browser_use_mcp.transports import pipes

	transport = pipes.pipe_stdio() if config.stdio_pipes and pipes.usable() else stdio_server()
	registry = SessionRegistry(config)
	dashboard: Any = contextlib.nullcontext()
	registry.begin()
	telemetry = Telemetry(config)
	telemetry.started()
	metrics = None
	if config.dashboard_port:  # served beside the dashboard (health and metrics on the same port)
		from browser_use_mcp.dashboard.server import standalone_dashboard
		from browser_use_mcp.metrics import Metrics

		metrics = Metrics(registry)
		dashboard = standalone_dashboard(config, registry, metrics)
	server = build_server(Catalog(registry), telemetry=telemetry, metrics=metrics)
	try:
		async with dashboard, transport as (read_stream, write_stream):
			await run_until_stopped(
				server.run(read_stream, write_stream, server.create_initialization_options()), registry, config.shutdown_grace
			)
			# Every session is closed. Leaving the transport would wait for its stdin reader
			# thread, which after a signal may block on a read forever: end the process now.
			telemetry.stopped()
			logger.info('shut down: all sessions closed')
			end_process(0)
	finally:
		await registry.shutdown()
		telemetry.stopped()
