"""Anonymous usage telemetry through browser-use's own client, which honours
ANONYMIZED_TELEMETRY=false (and sends nothing then)."""

from __future__ import annotations

import logging
import time
from typing import Any

from browser_use_mcp.config import ServerConfig

logger = logging.getLogger('browser_use_mcp.telemetry')


class Telemetry:
	"""Best effort: telemetry never fails or slows a call; what goes wrong with it is logged at debug."""

	def __init__(self, config: ServerConfig) -> None:
		self._client: Any = None
		self._started = time.time()
		if not config.telemetry:
			return
		try:
			from browser_use.telemetry import ProductTelemetry

			self._client = ProductTelemetry()
		except Exception as exc:
			logger.debug('telemetry unavailable: %r', exc)

	def _capture(self, **fields: Any) -> None:
		if self._client is None:
			return
		try:
			from browser_use.telemetry import MCPServerTelemetryEvent
			from browser_use.utils import get_browser_use_version

			self._client.capture(MCPServerTelemetryEvent(version=get_browser_use_version(), **fields))
		except Exception as exc:
			logger.debug('telemetry event %s not sent: %r', fields.get('action'), exc)

	def started(self) -> None:
		self._capture(action='start')

	def tool_call(self, name: str, seconds: float, error: str | None) -> None:
		self._capture(action='tool_call', tool_name=name, duration_seconds=seconds, error_message=error)

	def stopped(self) -> None:
		self._capture(action='stop', duration_seconds=time.time() - self._started)
		if self._client is not None:
			try:
				self._client.flush()
			except Exception as exc:
				logger.debug('telemetry not flushed: %r', exc)
