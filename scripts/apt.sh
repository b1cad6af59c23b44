# Sourced by setup.sh and grid.sh: apt-get install with the package lists updated first, once per
# setup (a stale list installs an old Chromium: 150 while the security release is 156). The
# update is remembered in BROWSER_USE_MCP_APT_UPDATED, exported, so grid.sh run by setup.sh does
# not update again.

apt_get() {
	if [ "$(id -u)" -ne 0 ]; then sudo apt-get "$@"; else apt-get "$@"; fi
}

# apt_install [OPTION...] PACKAGE...: update the lists (once), then install or upgrade the packages
apt_install() {
	command -v apt-get >/dev/null 2>&1 || {
		echo "apt-get not found; install $* yourself" >&2
		return 1
	}
	export DEBIAN_FRONTEND=noninteractive
	if [ -z "${BROWSER_USE_MCP_APT_UPDATED:-}" ]; then
		apt_get update -qq >&2 || return 1
		export BROWSER_USE_MCP_APT_UPDATED=1
	fi
	apt_get install -y -qq "$@" >&2
}
