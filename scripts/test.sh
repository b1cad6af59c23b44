#!/usr/bin/env bash
# Install what is missing, check the code with ruff (lint and format), then run the tests: the whole
# suite against real headless Chromium, or what the arguments name (e.g. tests/unit, the fast layer).
# Test files run in TEST_WORKERS processes at once (pytest-xdist, default 2; a module's tests stay
# together in one, with its fixtures); -n 0 among the arguments runs everything in this one.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --test
export ANONYMIZED_TELEMETRY=false
.venv/bin/ruff check browser_use_mcp harness tests benchmarks scripts
.venv/bin/ruff format --check browser_use_mcp harness tests benchmarks scripts
exec .venv/bin/python -m pytest -n "${TEST_WORKERS:-2}" --dist loadfile "$@"
