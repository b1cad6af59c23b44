"""Fixture factories the test modules share (plain helpers live in ``harness``)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
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


@contextlib.asynccontextmanager
async def in_process_registry(state_dir: Path, isolation: str, **options: Any) -> AsyncIterator[Any]:
	"""A started ``SessionRegistry`` in this process (headless, the test Chromium flags, an empty
	shared Chromium closed at once), shut down afterwards with every browser it started."""
	from browser_use_mcp.config import ServerConfig
	from browser_use_mcp.sessions import SessionRegistry

	config = ServerConfig(
		state_dir=state_dir,
		chromium_args=servers.TEST_CHROMIUM_ARGS,
		headless=True,
		isolation=isolation,
		shared_browser_idle=0,
		**options,
	)
	registry = SessionRegistry(config)
	await registry.start()
	try:
		yield registry
	finally:
		await registry.shutdown()


@contextlib.contextmanager
def patches_active(*chosen: Any) -> Iterator[None]:
	"""Each of ``chosen`` (``Patch``) applied afresh and active inside the block; afterwards each as
	it was (active, off, or never applied)."""
	from browser_use_mcp import patches

	before = {p.name: patches.status_of(p) for p in chosen}
	for patch in chosen:
		patches.revert(patch)
		assert patches.apply(patch, enabled=True).state == 'active', patches.status_of(patch)
	try:
		yield
	finally:
		for patch in reversed(chosen):
			patches.revert(patch)
			if before[patch.name] is not None:
				patches.apply(patch, enabled=before[patch.name].state != 'off')


@contextlib.contextmanager
def patches_reverted(*chosen: Any) -> Iterator[None]:
	"""Each of ``chosen`` (``Patch``) reverted inside the block: the dependency's own behaviour;
	afterwards each as it was (active, off, or never applied)."""
	from browser_use_mcp import patches

	before = {p.name: patches.status_of(p) for p in chosen}
	for patch in chosen:
		patches.revert(patch)
	try:
		yield
	finally:
		for patch in reversed(chosen):
			if before[patch.name] is not None:
				patches.apply(patch, enabled=before[patch.name].state != 'off')


def scraped_metrics(registry: Any) -> list[Any]:
	"""Every sample of the server's /metrics for ``registry``, as Prometheus's own parser reads the
	text the endpoint serves (in process: no HTTP)."""
	from prometheus_client import generate_latest
	from prometheus_client.parser import text_string_to_metric_families

	from browser_use_mcp.metrics import Metrics

	text = generate_latest(Metrics(registry).prom).decode()
	return [sample for family in text_string_to_metric_families(text) for sample in family.samples]
