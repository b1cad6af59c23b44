#!/usr/bin/env bash
# Install what is missing, then run the whole test suite against real headless Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --test
export ANONYMIZED_TELEMETRY=false
.venv/bin/ruff check browser_use_mcp tests benchmarks
.venv/bin/ruff format --check browser_use_mcp tests benchmarks
exec .venv/bin/python -m pytest "$@"
