#!/usr/bin/env bash
# Install what a local Selenium Grid 4 standalone needs (harness/gridserver.py runs it), idempotently:
# the Debian chromium-driver matching the system Chromium (apt-get, only when /usr/bin/chromedriver is
# missing or its version differs from `chromium --version`), Java 17 (only when `java` is missing), and
# the Grid jar with npm into tests/grid/node_modules, at the exact version tests/grid/package.json pins.
# Never downloads a browser or driver by other means (the Grid runs with Selenium Manager off).
# Prints the jar's absolute path as the last line of stdout; every other message goes to stderr:
#   jar=$(scripts/grid.sh | tail -1)
set -euo pipefail
cd "$(dirname "$0")/../tests/grid"

say() { echo "grid: $*" >&2; }
die() {
	say "$*"
	exit 1
}

# shellcheck source=scripts/apt.sh
. ../../scripts/apt.sh  # apt_install: the package lists updated first, once per setup

# major.minor.build of the first dotted version in a --version line ("Chromium 150.0.7871.100 built on ...")
build_of() { grep -oE '[0-9]+\.[0-9]+\.[0-9]+' <<<"$1" | head -1; }

command -v chromium >/dev/null 2>&1 || die 'chromium not found (install the Debian package chromium)'
want=$(build_of "$(chromium --version 2>/dev/null)")
[ -n "$want" ] || die 'cannot read the version of chromium'
have=
[ -x /usr/bin/chromedriver ] && have=$(build_of "$(/usr/bin/chromedriver --version 2>/dev/null || true)")
if [ "$have" != "$want" ]; then
	say "chromedriver ${have:-missing}, chromium $want; installing chromium-driver chromium with apt-get"
	apt_install --no-install-recommends chromium-driver chromium || die 'installing chromium-driver failed'
	have=$(build_of "$(/usr/bin/chromedriver --version 2>/dev/null || true)")
	want=$(build_of "$(chromium --version 2>/dev/null)")
	[ "$have" = "$want" ] || die "chromedriver ${have:-missing} still differs from chromium $want"
fi

if ! command -v java >/dev/null 2>&1; then
	say 'installing openjdk-17-jre-headless with apt-get'
	apt_install --no-install-recommends openjdk-17-jre-headless || die 'installing openjdk-17-jre-headless failed'
fi

if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
	die 'npm/node not found; install Node.js to fetch the Selenium Grid jar'
fi
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

# The pinned jar package present at its pinned version: print its jar, else fail.
jar() {
	node -e '
		const fs = require("fs"), path = require("path");
		const [name, version] = Object.entries(JSON.parse(fs.readFileSync("package.json", "utf8")).dependencies)[0];
		const dir = path.resolve("node_modules", name);
		let got;
		try { got = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")).version; } catch { got = null; }
		if (got !== version) { console.error(`grid: ${name} ${got ?? "missing"}, want ${version}`); process.exit(1); }
		const jar = require(dir).path;
		if (!jar || !fs.existsSync(jar)) { console.error(`grid: no jar in ${dir}`); process.exit(1); }
		console.log(path.resolve(jar));
	'
}

if ! jar 2>/dev/null >/dev/null; then
	npm install --ignore-scripts --no-package-lock --no-save --omit=dev --no-audit --no-fund --loglevel=error >&2
	say 'installed the Selenium Grid jar into tests/grid/node_modules'
fi
jar
