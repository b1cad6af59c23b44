#!/usr/bin/env bash
# Install the OpenID provider tests/e2e/test_oauth.py runs on loopback (npm oidc-provider, at the
# version tests/oidc/package.json pins) into tests/oidc/node_modules, idempotently. Needs node and npm
# (the Debian packages nodejs and npm are installed with apt_install when missing).
# Prints the launcher's absolute path as the last line of stdout.
set -euo pipefail
cd "$(dirname "$0")/../tests/oidc"

say() { echo "oidc: $*" >&2; }

if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
	# shellcheck source=scripts/apt.sh
	. ../../scripts/apt.sh
	say 'installing nodejs npm with apt-get'
	apt_install --no-install-recommends nodejs npm >/dev/null || { say 'installing nodejs and npm failed'; exit 1; }
fi
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

installed() {
	node -e '
		const fs = require("fs");
		const [name, version] = Object.entries(JSON.parse(fs.readFileSync("package.json", "utf8")).dependencies)[0];
		let got;
		try { got = JSON.parse(fs.readFileSync(`node_modules/${name}/package.json`, "utf8")).version; } catch { got = null; }
		if (got !== version) { console.error(`oidc: ${name} ${got ?? "missing"}, want ${version}`); process.exit(1); }
	'
}

if ! installed 2>/dev/null; then
	npm install --ignore-scripts --no-package-lock --no-save --omit=dev --no-audit --no-fund --loglevel=error >&2
	installed
	say 'installed oidc-provider into tests/oidc/node_modules'
fi
echo "$PWD/provider.mjs"
