"""Over HTTP, SIGTERM and SIGINT belong to the server, not to uvicorn.

uvicorn's ``Server.capture_signals`` installs its own SIGTERM/SIGINT handlers while it serves:
it would start its HTTP shutdown on a signal, racing the session shutdown, and re-raise the
signal afterwards. ``QuietSignals`` is ``uvicorn.Server`` with a ``capture_signals`` that
captures nothing, so ``run_until_stopped`` alone owns the signals, as on stdio: sessions close
first and calls in flight still get their answer over an open connection. Nothing of uvicorn is
modified (a subclass, used only by ``browser_use_mcp.transports.http``).
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from browser_use_mcp.patches import Patch, apply, is_active

logger = logging.getLogger(__name__)

UVICORN_VERSION = '0.54.0'

_classes: dict[str, type] = {}


def _apply() -> None:
	import uvicorn

	class QuietSignals(uvicorn.Server):
		"""uvicorn, leaving SIGTERM/SIGINT to ``run_until_stopped`` (see the module docstring)."""

		@contextlib.contextmanager
		def capture_signals(self) -> Any:
			yield

	_classes['server'] = QuietSignals


def _revert() -> None:
	_classes.clear()


def server_class(config: object | None = None) -> type:
	"""The ``uvicorn.Server`` class to serve with: ``QuietSignals`` unless off or refused."""
	import uvicorn

	apply(PATCH, config)  # type: ignore[arg-type]
	return _classes['server'] if is_active(PATCH) else uvicorn.Server


PATCH = Patch(
	name='uvicorn_signals',
	title='the server owns SIGTERM/SIGINT over HTTP',
	changes='HTTP is served by ``QuietSignals``, a subclass of ``uvicorn.Server`` whose ``capture_signals`` installs '
	'no signal handlers.',
	why='uvicorn would act on SIGTERM/SIGINT too, racing its HTTP shutdown against the session shutdown: sessions must '
	'close first, while calls in flight can still get their answer.',
	package='uvicorn',
	versions=(UVICORN_VERSION,),
	sources={'uvicorn.server:Server.capture_signals': 'e1bbcd4770d1c887'},
	switch='orderly_http_shutdown',
	when_refused="uvicorn's own signal handling: on SIGTERM it closes HTTP connections while sessions are still closing "
	'(calls in flight may lose their answer), then re-raises the signal',
	apply=_apply,
	revert=_revert,
	logger=logger.name,
	refused_message="uvicorn keeps its own signal handlers (on SIGTERM, HTTP may close before the sessions' answers are sent)",
)
