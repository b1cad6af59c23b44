#!/usr/bin/env bash
# Install what is missing, check the code with ruff (lint and format), then run the tests: the whole
# suite against real headless Chromium, or what the arguments name (e.g. tests/unit, the fast layer).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --test
export ANONYMIZED_TELEMETRY=false
.venv/bin/ruff check browser_use_mcp harness tests benchmarks scripts
.venv/bin/ruff format --check browser_use_mcp harness tests benchmarks scripts
exec .venv/bin/python -m pytest "$@"
