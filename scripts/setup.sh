#!/usr/bin/env bash
# Install everything the server and its tests need, idempotently: Debian's Chromium (when no
# Chromium/Chrome is found) and its headless shell, a virtualenv in .venv, and this package with its test extras.
# With --test, also what only the tests use (see below).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/apt.sh
. scripts/apt.sh

have_browser() {
	[ -n "${BROWSER_USE_MCP_CHROMIUM:-}" ] && [ -x "${BROWSER_USE_MCP_CHROMIUM}" ] && return 0
	for b in /usr/bin/chromium /usr/bin/chromium-browser /usr/bin/google-chrome-stable /usr/bin/google-chrome; do
		[ -x "$b" ] && return 0
	done
	return 1
}

if ! have_browser; then
	echo "setup: Chromium not found, installing it with apt-get" >&2
	apt_install chromium >/dev/null
fi

# Chromium's headless shell, which the server launches when headless (docs/configuration.md,
# --no-headless-shell): Debian's package at the version of the installed chromium (both depend on
# the same chromium-common). Without it the server uses the full Chromium: say so and carry on.
if [ -z "${BROWSER_USE_MCP_CHROMIUM:-}" ] && command -v dpkg-query >/dev/null 2>&1; then
	chromium_version=$(dpkg-query -W -f='${Version}' chromium 2>/dev/null || true)
	shell_version=$(dpkg-query -W -f='${Version}' chromium-headless-shell 2>/dev/null || true)
	if [ -n "$chromium_version" ] && [ "$shell_version" != "$chromium_version" ]; then
		if ! apt_install --no-install-recommends "chromium-headless-shell=$chromium_version" >/dev/null; then
			echo "setup: could not install chromium-headless-shell $chromium_version; headless sessions use the full Chromium" >&2
		fi
	fi
fi

PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
	"$PY" -m venv .venv
fi
if ! .venv/bin/python -c "import browser_use_mcp, pytest, pytest_asyncio, xdist, hypothesis" >/dev/null 2>&1 \
	|| [ pyproject.toml -nt .venv/.installed ]; then
	.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test]" 2>&1 | grep -v -e "^WARNING: Location" -e "is ignored" >&2 || true
	.venv/bin/python -c "import browser_use_mcp, pytest_asyncio" # fail loudly if the install did not work
	touch .venv/.installed
fi

[ "${1:-}" = "--test" ] || exit 0

# The 1.x MCP SDK, whose only HTTP client speaks the legacy HTTP+SSE transport, for
# tests/e2e/test_http_sse.py. It cannot share .venv (mcp 2.x), so it gets .venv-mcp1. Only the
# tests need it: if it cannot be installed (offline), say so and carry on.
MCP1_REQS=tests/compat/requirements-mcp1.txt
mcp1_ok() {
	.venv-mcp1/bin/python -c "import importlib.metadata as m, mcp.client.sse; assert m.version('mcp') == '1.2.1'" >/dev/null 2>&1
}
if [ ! -x .venv-mcp1/bin/python ]; then
	"$PY" -m venv .venv-mcp1 || true
fi
if [ -x .venv-mcp1/bin/python ] && { ! mcp1_ok || [ "$MCP1_REQS" -nt .venv-mcp1/.installed ]; }; then
	.venv-mcp1/bin/python -m pip install -q --disable-pip-version-check -r "$MCP1_REQS" 2>&1 | grep -v -e "^WARNING: Location" -e "is ignored" >&2 || true
	if mcp1_ok; then
		touch .venv-mcp1/.installed
	else
		echo "setup: could not install mcp==1.2.1 into .venv-mcp1; tests/e2e/test_http_sse.py will fail" >&2
	fi
fi

# A local Selenium Grid for tests/e2e/test_grid.py: chromium-driver matching chromium, Java 17,
# the Grid jar from npm (scripts/grid.sh). Without it those tests fail and say why.
if ! ./scripts/grid.sh >/dev/null; then
	echo "setup: could not install what a local Selenium Grid needs; tests/e2e/test_grid.py will fail" >&2
fi

# The real pages of the benchmarks' corpus (Debian's documentation packages, benchmarks/corpus.py)
# for the sameness test of tests/test_offload_state.py, which skips without them.
if ! .venv/bin/python -m benchmarks.corpus --setup >/dev/null; then
	echo "setup: could not install the corpus pages; tests/test_offload_state.py's real-page tests will skip" >&2
fi

# A real OpenID provider (npm oidc-provider) for tests/e2e/test_oauth.py (scripts/oidc.sh).
if ! ./scripts/oidc.sh >/dev/null; then
	echo "setup: could not install oidc-provider; tests/e2e/test_oauth.py will fail" >&2
fi
