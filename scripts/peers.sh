#!/usr/bin/env bash
# Install the peer MCP servers the benchmarks compare us with (benchmarks/peers.py), idempotently,
# with npm into benchmarks/peers/node_modules, at the exact versions benchmarks/peers/package.json
# pins: @playwright/mcp and chrome-devtools-mcp. Never downloads a browser: both peers are pointed
# at the system Chromium, install scripts are not run, and the browser downloads of Playwright and
# Puppeteer are switched off anyway. Without npm, says so and exits 0 (the benchmarks skip peers).
set -euo pipefail
cd "$(dirname "$0")/../benchmarks/peers"

if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
	echo "peers: npm/node not found; peer benchmarks will be skipped (install Node.js >= 20 to run them)" >&2
	exit 0
fi

export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 PUPPETEER_SKIP_DOWNLOAD=1 PUPPETEER_SKIP_CHROMIUM_DOWNLOAD=1
export CHROME_DEVTOOLS_MCP_NO_UPDATE_CHECKS=1 npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

# Every pinned package present at its pinned version: nothing to do.
installed() {
	node -e '
		const fs = require("fs");
		const want = JSON.parse(fs.readFileSync("package.json", "utf8")).dependencies;
		for (const [name, version] of Object.entries(want)) {
			let got;
			try { got = JSON.parse(fs.readFileSync(`node_modules/${name}/package.json`, "utf8")).version; } catch { got = null; }
			if (got !== version) { console.error(`peers: ${name} ${got ?? "missing"}, want ${version}`); process.exit(1); }
		}
	'
}

if installed 2>/dev/null; then
	echo "peers: already installed ($(node -p 'Object.entries(require("./package.json").dependencies).map(e => e.join("@")).join(", ")'))" >&2
	exit 0
fi

npm install --ignore-scripts --no-package-lock --no-save --omit=dev --no-audit --no-fund --loglevel=error
installed
echo "peers: installed into benchmarks/peers/node_modules" >&2
