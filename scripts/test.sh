#!/usr/bin/env bash
# Install what is missing, check the code with ruff (lint and format), then run the tests: the whole
# suite against real headless Chromium, or what the arguments name (e.g. tests/unit, the fast layer).
# Test files run in TEST_WORKERS processes at once (pytest-xdist, default 2; a module's tests stay
# together in one, with its fixtures); -n 0 among the arguments runs everything in this one.
#
# The servers the tests start launch Chromium's headless shell, the server's default when headless.
# A whole-suite run (no test paths among the arguments) then runs FULL_CHROMIUM_MODULES again with the
# full Chromium (BROWSER_USE_MCP_TEST_BROWSER=full), which servers run with --no-headless-shell,
# --headed or browser-use's extensions launch: about two minutes more.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --test
export ANONYMIZED_TELEMETRY=false
.venv/bin/ruff check browser_use_mcp harness tests benchmarks scripts
.venv/bin/ruff format --check browser_use_mcp harness tests benchmarks scripts

FULL_CHROMIUM_MODULES=(
	tests/e2e/test_core.py
	tests/e2e/test_stale_indices.py
	tests/e2e/test_contexts.py
	tests/e2e/test_renderers.py
	tests/e2e/test_include_state.py
	tests/e2e/test_recording_media.py
	tests/test_click_speed.py
	tests/test_cdp_hops.py
)
whole_suite=1
for arg in "$@"; do
	if [[ -e "${arg%%::*}" ]]; then
		whole_suite=0
	fi
done
if [[ $whole_suite == 0 ]]; then
	exec .venv/bin/python -m pytest -n "${TEST_WORKERS:-2}" --dist loadfile "$@"
fi
.venv/bin/python -m pytest -n "${TEST_WORKERS:-2}" --dist loadfile "$@"
echo "== the same tools on the full Chromium: ${FULL_CHROMIUM_MODULES[*]}"
BROWSER_USE_MCP_TEST_BROWSER=full exec .venv/bin/python -m pytest -n "${TEST_WORKERS:-2}" --dist loadfile "$@" "${FULL_CHROMIUM_MODULES[@]}"
