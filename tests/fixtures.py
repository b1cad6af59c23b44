"""Fixture factories the test modules share (plain helpers live in ``harness``)."""

from __future__ import annotations

from typing import Any

import pytest

from harness import servers


def isolation_modes(*modes: str) -> Any:
	"""A module-scoped ``isolation`` fixture running the module's tests once per mode; the servers the
	module starts (``harness.servers.server_env``) run in that mode."""

	@pytest.fixture(scope='module', params=modes or ('browser', 'context'))
	def isolation(request: Any) -> Any:
		previous, servers.ISOLATION = servers.ISOLATION, request.param
		yield request.param
		servers.ISOLATION = previous

	return isolation
