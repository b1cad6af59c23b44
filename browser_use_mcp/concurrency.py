"""Placeholder: per-event-bus locking for parallel sessions (see docs/architecture.md)."""

from __future__ import annotations


def install(enabled: bool = True) -> bool:
	return False
