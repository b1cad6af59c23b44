"""Command line: ``browser-use-mcp [serve] [flags]``, ``browser-use-mcp demo``, ``browser-use-mcp doctor``."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from typing import Any

# browser-use configures logging on import unless told not to; stdout is the protocol.
os.environ.setdefault('BROWSER_USE_SETUP_LOGGING', 'false')
os.environ.setdefault('BROWSER_USE_LOGGING_LEVEL', 'warning')

from browser_use_mcp import __version__  # noqa: E402
from browser_use_mcp.config import ENV_VARS, ServerConfig  # noqa: E402

COMMANDS = ('serve', 'demo', 'doctor', 'install-browser')


def _env(name: str) -> str:
	return ENV_VARS[name][0]


def _default(name: str) -> str:
	"""A setting's default as --help states it, read from ``ServerConfig`` (stated once, there)."""
	value = {f.name: f.default for f in dataclasses.fields(ServerConfig)}[name]
	if value == ():
		return 'none'
	return f'{value:g}' if isinstance(value, float) else str(value)


def build_parser() -> argparse.ArgumentParser:
	parser = argparse.ArgumentParser(
		prog='browser-use-mcp',
		description='MCP server giving each agent its own isolated browser (browser-use, one server, many sessions).',
		epilog='Commands: serve (default) runs the server; demo shows three isolated sessions; doctor checks this machine; '
		'install-browser installs Chromium with the system package manager (apt-get; --dry-run prints the commands).',
	)
	parser.add_argument('--version', action='version', version=f'browser-use-mcp {__version__}')
	parser.add_argument('command', nargs='?', choices=COMMANDS, default='serve', help='what to run (default: serve)')
	g = parser.add_argument_group('transport')
	g.add_argument(
		'--transport', choices=('stdio', 'http'), help=f'MCP transport (default {_default("transport")}; env {_env("transport")})'
	)
	g.add_argument('--host', help=f'HTTP bind address (default {_default("host")}; env {_env("host")})')
	g.add_argument('--port', type=int, help=f'HTTP port (default {_default("port")}; env {_env("port")})')
	g.add_argument(
		'--auth-token',
		action='append',
		dest='auth_tokens',
		metavar='TOKEN',
		help=f'HTTP bearer token; repeat for several clients, each its own principal (env {_env("auth_tokens")}, comma-separated)',
	)
	g.add_argument(
		'--auth-token-file',
		metavar='PATH',
		help='HTTP bearer tokens, one a line (# comments); re-read on SIGHUP and when the file changes: a removed '
		f"token's sessions are closed (env {_env('auth_token_file')})",
	)
	a = parser.add_argument_group('OAuth 2.1 resource server (docs/http.md#oauth)')
	a.add_argument(
		'--auth',
		choices=('token', 'oauth'),
		help='HTTP authentication: static bearer tokens (--auth-token, --auth-token-file) or JWT access tokens of an '
		f'OAuth/OpenID issuer (default token; env {_env("auth")})',
	)
	a.add_argument(
		'--issuer',
		metavar='URL',
		help=f'--auth oauth: the issuer whose tokens are accepted; its metadata names its keys (env {_env("oauth_issuer")})',
	)
	a.add_argument(
		'--audience',
		metavar='AUD',
		help=f'--auth oauth: the "aud" every token must carry, usually this server\'s URL (env {_env("oauth_audience")})',
	)
	a.add_argument(
		'--required-scopes',
		metavar='SCOPES',
		help='--auth oauth: scopes every token must grant, comma- or space-separated; a token without them gets 403 '
		f'(env {_env("oauth_required_scopes")})',
	)
	a.add_argument(
		'--principal-claim',
		metavar='CLAIM',
		help=f'--auth oauth: the claim that names the principal (default sub; env {_env("oauth_principal_claim")})',
	)
	a.add_argument(
		'--resource-url',
		metavar='URL',
		help='--auth oauth: the public URL of /mcp, as the protected-resource metadata names it (default: from the '
		f"request's Host; env {_env('oauth_resource_url')})",
	)
	g.add_argument(
		'--allow-unauthenticated',
		action='store_true',
		default=None,
		help=f'allow binding HTTP to a non-loopback address without tokens (env {_env("allow_unauthenticated")})',
	)
	g.add_argument(
		'--dashboard-port',
		type=int,
		metavar='N',
		help=f'stdio: serve the live dashboard at http://127.0.0.1:N/dashboard (default off; HTTP serves it at /dashboard; env {_env("dashboard_port")})',
	)
	g.add_argument(
		'--takeover-timeout',
		type=float,
		metavar='SECONDS',
		help=f'a dashboard takeover ends after this long without input (default {_default("takeover_timeout")}; env {_env("takeover_timeout")})',
	)
	g.add_argument(
		'--metrics-public',
		action='store_true',
		default=None,
		help='serve /healthz, /readyz and /metrics without a token even when bound beyond loopback '
		f'(on loopback they never ask for one; env {_env("metrics_public")})',
	)
	h = parser.add_argument_group('http hardening (docs/security.md)')
	h.add_argument(
		'--header-timeout',
		type=float,
		metavar='SECONDS',
		help=f'close a connection that has not sent a whole request header within this time (default {_default("header_timeout")}; env {_env("header_timeout")})',
	)
	h.add_argument(
		'--keep-alive-timeout',
		type=float,
		metavar='SECONDS',
		help=f'close an idle keep-alive connection after this time (default {_default("keep_alive_timeout")}; env {_env("keep_alive_timeout")})',
	)
	h.add_argument(
		'--max-connections',
		type=int,
		metavar='N',
		help=f'open HTTP connections at once; more get 503 (default {_default("max_connections")}; env {_env("max_connections")})',
	)
	h.add_argument(
		'--max-connections-per-client',
		type=int,
		metavar='N',
		help=f'open connections from one client address; more get 429; 0 = no cap (default {_default("max_connections_per_client")}; env {_env("max_connections_per_client")})',
	)
	h.add_argument(
		'--max-request-body',
		type=int,
		metavar='BYTES',
		help=f'largest request body at /mcp and /messages/; larger gets 413 (default {_default("max_request_body")}; env {_env("max_request_body")})',
	)
	h.add_argument(
		'--max-transport-sessions',
		type=int,
		metavar='N',
		help=f'MCP transport sessions (Mcp-Session-Id) per token; one more gets 429 (default {_default("max_transport_sessions")}; env {_env("max_transport_sessions")})',
	)
	h.add_argument(
		'--transport-session-idle',
		type=float,
		metavar='SECONDS',
		help=f'drop an MCP transport session after this long without a request (default {_default("transport_session_idle")}; env {_env("transport_session_idle")})',
	)
	s = parser.add_argument_group('sessions')
	s.add_argument(
		'--idle-timeout',
		type=float,
		metavar='SECONDS',
		help=f'close a session unused this long; 0 = never (default {_default("idle_timeout")}; env {_env("idle_timeout")})',
	)
	s.add_argument(
		'--max-session-duration',
		type=float,
		metavar='SECONDS',
		help=f'close a session this long after creation; 0 = unlimited (default {_default("max_session_duration")}; env {_env("max_session_duration")})',
	)
	s.add_argument(
		'--max-sessions',
		type=int,
		metavar='N',
		help=f'most sessions at once (default {_default("max_sessions")}; env {_env("max_sessions")})',
	)
	s.add_argument(
		'--max-sessions-per-principal',
		type=int,
		metavar='N',
		help=f'most sessions one principal (token) holds at once; more wait in a fair queue (default: no limit; env {_env("max_sessions_per_principal")})',
	)
	s.add_argument(
		'--record',
		metavar='KINDS',
		help=f'record every session, comma-separated kinds: trace (each call, its page before and after, screenshots), '
		f'har (a HAR 1.2 file of its traffic), video (a WebM of its focused tab); docs/recording.md '
		f'(default: off; env {_env("record")})',
	)
	s.add_argument(
		'--recordings-ttl',
		type=float,
		metavar='SECONDS',
		help=f'keep a recording this long after its session closed (default {_default("recordings_ttl")}; env {_env("recordings_ttl")})',
	)
	s.add_argument(
		'--max-calls-per-principal',
		type=int,
		metavar='N',
		help=f'most tool calls of one principal running at once; more wait (default: no limit; env {_env("max_calls_per_principal")})',
	)
	s.add_argument(
		'--queue-timeout',
		type=float,
		metavar='SECONDS',
		help='how long a new session or call waits for a slot when a limit is reached, then fails (retryable) '
		f'(default {ServerConfig(transport="http").queue_wait:g} over HTTP, 0 = refuse at once on stdio; '
		f'env {_env("queue_timeout")})',
	)
	s.add_argument(
		'--prewarm',
		type=int,
		metavar='N',
		help=f'keep N browsers launched and ready (default {_default("prewarm")}; env {_env("prewarm")})',
	)
	s.add_argument(
		'--persist-sessions',
		action='store_true',
		default=None,
		help='make every named session durable: its cookies, localStorage and last URL are kept under the state dir '
		f'across idle expiry and restarts (one server per state dir; env {_env("persist_sessions")})',
	)
	b = parser.add_argument_group('browser')
	b.add_argument('--chromium', dest='executable_path', metavar='PATH', help=f'browser binary (env {_env("executable_path")})')
	b.add_argument(
		'--no-headless-shell',
		dest='headless_shell',
		action='store_false',
		default=None,
		help="headless, launch the full Chromium even when Chromium's headless shell (chromium-headless-shell) "
		f'is installed (env {_env("headless_shell")}=false)',
	)
	b.add_argument('--headed', dest='headless', action='store_false', default=None, help='show browser windows (needs a display)')
	b.add_argument(
		'--headless', dest='headless', action='store_true', default=None, help='no windows (default without a display)'
	)
	b.add_argument('--state-dir', metavar='DIR', help=f'where temporary profiles live (env {_env("state_dir")})')
	b.add_argument(
		'--isolation',
		choices=('browser', 'context'),
		help=f'a named session is a context of a shared Chromium (context) or a Chromium of its own (browser) (default {_default("isolation")}; env {_env("isolation")})',
	)
	b.add_argument(
		'--dialogs',
		choices=('accept', 'hold'),
		help='JavaScript alerts, confirms, prompts and leave-page dialogs: accept them at once as browser-use does '
		f'(prompts are cancelled), or hold them for browser_handle_dialog (default {_default("dialogs")}; env {_env("dialogs")})',
	)
	b.add_argument(
		'--contexts-per-browser',
		type=int,
		metavar='K',
		help=f'--isolation context: sessions per shared Chromium (default {_default("contexts_per_browser")}; env {_env("contexts_per_browser")})',
	)
	b.add_argument(
		'--spread-browsers',
		type=int,
		metavar='M',
		help='--isolation context: new sessions go to the least busy of up to M shared Chromiums before any hosts two '
		'(1: fill one Chromium first, the least memory; '
		f'default {_default("spread_browsers")}; env {_env("spread_browsers")})',
	)
	b.add_argument(
		'--allow-browser-urls',
		metavar='URLS',
		help='browser-internal pages the tools may open anyway, comma-separated, e.g. chrome://version,about:version '
		f'(default {_default("allow_browser_urls")}; env {_env("allow_browser_urls")})',
	)
	b.add_argument(
		'--cdp-url',
		metavar='URL',
		help='attach to a running browser (http://host:port of its --remote-debugging-port): the default session '
		f'drives it, named sessions get contexts in it; it is never closed (env {_env("cdp_url")} or BROWSER_USE_CDP_URL)',
	)
	t = parser.add_argument_group('tools')
	t.add_argument(
		'--tools',
		metavar='GROUPS',
		help='which tool groups to offer, comma-separated: core (the default catalogue), interaction (select, hover, '
		f'drag, wait_for, upload), all (env {_env("tools")})',
	)
	n = parser.add_argument_group('egress policy (docs/security.md)')
	n.add_argument(
		'--block-private-networks',
		action='store_true',
		default=None,
		help='pages cannot reach loopback, private, link-local or metadata addresses (default over HTTP; '
		f'env {_env("block_private_networks")})',
	)
	n.add_argument(
		'--allow-private-networks',
		action='store_true',
		default=None,
		help=f'over HTTP, let pages reach private networks and this machine (env {_env("allow_private_networks")})',
	)
	g = parser.add_argument_group('selenium grid')
	g.add_argument(
		'--grid-url',
		metavar='URL',
		help=f"run every session's browser on this Selenium Grid 4 (http://host:4444) (env {_env('grid_url')})",
	)
	g.add_argument(
		'--grid-capabilities',
		metavar='JSON',
		help=f'a JSON object merged into each Grid new-session request, e.g. \'{{"platformName": "linux"}}\' (env {_env("grid_capabilities")})',
	)
	g.add_argument(
		'--grid-timeout',
		type=float,
		metavar='SECONDS',
		help=f'wait this long for a free Grid slot before failing as "at capacity" (default {_default("grid_timeout")}; env {_env("grid_timeout")})',
	)
	g.add_argument(
		'--grid-default-session',
		choices=('grid', 'local'),
		help='where the default session runs with a Grid: grid (default) or local (a Chromium here, persistent profile)',
	)
	o = parser.add_argument_group('output')
	o.add_argument(
		'--log-level',
		choices=('debug', 'info', 'warning', 'error'),
		help=f'stderr log level (default {_default("log_level")}; env {_env("log_level")})',
	)
	o.add_argument(
		'--log-format',
		choices=('text', 'json'),
		help=f'stderr log lines as text, or one JSON object per line (default {_default("log_format")}; env {_env("log_format")})',
	)
	o.add_argument(
		'--output',
		metavar='PATH',
		help='demo only: where to write the contact sheet PNG (default ./demo-output/contact-sheet.png)',
	)
	o.add_argument('--dry-run', action='store_true', help='install-browser only: print the commands instead of running them')
	return parser


def cli_overrides(ns: argparse.Namespace) -> dict[str, Any]:
	from pathlib import Path

	from browser_use_mcp.config import scope_list

	values = {
		'transport': ns.transport,
		'host': ns.host,
		'port': ns.port,
		'auth_tokens': tuple(ns.auth_tokens) if ns.auth_tokens else None,
		'auth_token_file': Path(ns.auth_token_file).expanduser() if ns.auth_token_file else None,
		'allow_unauthenticated': ns.allow_unauthenticated,
		'auth': ns.auth,
		'oauth_issuer': ns.issuer,
		'oauth_audience': ns.audience,
		'oauth_required_scopes': scope_list(ns.required_scopes) if ns.required_scopes is not None else None,
		'oauth_principal_claim': ns.principal_claim,
		'oauth_resource_url': ns.resource_url,
		'dashboard_port': ns.dashboard_port,
		'takeover_timeout': ns.takeover_timeout,
		'header_timeout': ns.header_timeout,
		'keep_alive_timeout': ns.keep_alive_timeout,
		'max_connections': ns.max_connections,
		'max_connections_per_client': ns.max_connections_per_client,
		'max_request_body': ns.max_request_body,
		'max_transport_sessions': ns.max_transport_sessions,
		'transport_session_idle': ns.transport_session_idle,
		'idle_timeout': ns.idle_timeout,
		'max_session_duration': ns.max_session_duration,
		'max_sessions': ns.max_sessions,
		'max_sessions_per_principal': ns.max_sessions_per_principal,
		'max_calls_per_principal': ns.max_calls_per_principal,
		'queue_timeout': ns.queue_timeout,
		'prewarm': ns.prewarm,
		'persist_sessions': ns.persist_sessions,
		'record': tuple(k.strip() for k in ns.record.split(',') if k.strip()) if ns.record is not None else None,
		'recordings_ttl': ns.recordings_ttl,
		'executable_path': ns.executable_path,
		'headless_shell': ns.headless_shell,
		'headless': ns.headless,
		'state_dir': Path(ns.state_dir).expanduser() if ns.state_dir else None,
		'isolation': ns.isolation,
		'dialogs': ns.dialogs,
		'contexts_per_browser': ns.contexts_per_browser,
		'spread_browsers': ns.spread_browsers,
		'cdp_url': ns.cdp_url,
		'allow_browser_urls': tuple(u.strip() for u in ns.allow_browser_urls.split(',') if u.strip())
		if ns.allow_browser_urls
		else None,
		'grid_url': ns.grid_url,
		'grid_capabilities': _capabilities(ns.grid_capabilities),
		'grid_timeout': ns.grid_timeout,
		'grid_default_session': ns.grid_default_session,
		'log_level': ns.log_level,
		'tools': tuple(g.strip() for g in ns.tools.split(',') if g.strip()) if ns.tools is not None else None,
		'log_format': ns.log_format,
		'metrics_public': ns.metrics_public,
		'block_private_networks': ns.block_private_networks,
		'allow_private_networks': ns.allow_private_networks,
	}
	return {k: v for k, v in values.items() if v is not None}


def _capabilities(text: str | None) -> dict[str, Any] | None:
	if text is None:
		return None
	from browser_use_mcp.config import parse_json_object

	try:
		return parse_json_object(text)
	except ValueError as exc:
		raise SystemExit(f'Invalid value for --grid-capabilities: {exc}') from None


def main(argv: list[str] | None = None) -> None:
	ns = build_parser().parse_args(argv)
	if ns.command == 'install-browser':  # needs no configuration, and must work before anything else does
		from browser_use_mcp.install import run_install_browser

		sys.exit(run_install_browser(dry_run=ns.dry_run))
	from browser_use_mcp.config import load_config
	from browser_use_mcp.logs import setup_logging

	# serving answers the MCP handshake before browser-use is imported; the registry completes the config
	config = load_config(browser_use=ns.command != 'serve', **cli_overrides(ns))
	setup_logging(config.log_level, config.log_format)
	if ns.command == 'doctor':
		from browser_use_mcp.doctor import run_doctor

		sys.exit(run_doctor(config))
	if ns.command == 'demo':
		from browser_use_mcp.demo import run_demo

		sys.exit(run_demo(config, output=ns.output))
	code = run_server(config)
	from browser_use_mcp.transports import end_process

	# The stdio reader thread may still block on a read; every session is already closed.
	end_process(code)


def run_server(config: Any) -> int:
	import asyncio

	from browser_use_mcp.logs import announce
	from browser_use_mcp.runtime import preflight

	# a --cdp-url or --grid-url that does not answer is a start-up error, with the address and what
	# to check: a typo should not wait for the first call
	problem = preflight(config)
	if problem:
		announce(f'browser-use-mcp: {problem}', 'error')
		return 2

	if config.persist_sessions:  # one server per durable store: a second one says who holds it, and stops
		from browser_use_mcp.durable import StoreLocked, store_for

		try:
			store_for(config.state_dir).acquire()
		except (StoreLocked, OSError) as exc:
			announce(f'browser-use-mcp: cannot serve durable sessions (--persist-sessions): {exc}', 'error')
			return 2

	if config.transport == 'http':
		from browser_use_mcp.transports.http import serve_http

		runner = serve_http(config)
	else:
		from browser_use_mcp.transports.stdio import serve_stdio

		runner = serve_stdio(config)
	try:
		asyncio.run(runner)
	except KeyboardInterrupt:
		pass
	except SystemExit as exc:
		announce(str(exc), 'error')
		return 2
	return 0
