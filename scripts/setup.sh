#!/usr/bin/env bash
# Install everything the server and its tests need, idempotently: Debian's Chromium (when no
# Chromium/Chrome is found), a virtualenv in .venv, and this package with its test extras.
set -euo pipefail
cd "$(dirname "$0")/.."

have_browser() {
	[ -n "${BROWSER_USE_MCP_CHROMIUM:-}" ] && [ -x "${BROWSER_USE_MCP_CHROMIUM}" ] && return 0
	for b in /usr/bin/chromium /usr/bin/chromium-browser /usr/bin/google-chrome-stable /usr/bin/google-chrome; do
		[ -x "$b" ] && return 0
	done
	return 1
}

if ! have_browser; then
	echo "setup: Chromium not found, installing it with apt-get" >&2
	SUDO=""
	[ "$(id -u)" -ne 0 ] && SUDO="sudo"
	export DEBIAN_FRONTEND=noninteractive
	if ! $SUDO apt-get install -y -qq chromium >/dev/null 2>&1; then
		$SUDO apt-get update -qq >/dev/null
		$SUDO apt-get install -y -qq chromium >/dev/null
	fi
fi

PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
	"$PY" -m venv .venv
fi
if ! .venv/bin/python -c "import browser_use_mcp, pytest, pytest_asyncio, hypothesis" >/dev/null 2>&1 \
	|| [ pyproject.toml -nt .venv/.installed ]; then
	.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test]" 2>&1 | grep -v -e "^WARNING: Location" -e "is ignored" >&2 || true
	.venv/bin/python -c "import browser_use_mcp, pytest_asyncio" # fail loudly if the install did not work
	touch .venv/.installed
fi
