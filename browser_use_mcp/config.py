"""Server configuration: defaults <- browser-use config.json <- environment <- CLI flags.

One frozen ``ServerConfig`` is built at start-up and handed down; nothing below reads the
environment again, so a test can build a config and know exactly what the server will do.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

Transport = Literal['stdio', 'http']

ENV_PREFIX = 'BROWSER_USE_MCP_'

# What upstream's server sets on top of browser-use's defaults, config.json values win. Not its
# fixed 0.5 s wait_between_actions: that floor under every click buys nothing for one MCP call
# (see docs/performance.md); browser-use's own default applies instead.
UPSTREAM_PROFILE_DEFAULTS: dict[str, Any] = {
	'keep_alive': True,
	'device_scale_factor': 1.0,
	'disable_security': False,
}


def _truthy(value: str) -> bool:
	return value.strip().lower() in ('1', 'true', 't', 'yes', 'y', 'on')


def default_state_dir() -> Path:
	"""Where temporary profiles live: per user, on tmpfs when the system offers one."""
	runtime = os.environ.get('XDG_RUNTIME_DIR')
	if runtime and Path(runtime).is_dir() and os.access(runtime, os.W_OK):
		return Path(runtime) / 'browser-use-mcp'
	return Path(tempfile.gettempdir()) / f'browser-use-mcp-{os.getuid()}'


def display_available() -> bool:
	if sys.platform in ('darwin', 'win32'):
		return True
	return bool(os.environ.get('DISPLAY') or os.environ.get('WAYLAND_DISPLAY'))


@dataclass(frozen=True)
class ServerConfig:
	# transport
	transport: Transport = 'stdio'
	stdio_pipes: bool = True  # stdio on pipes is read and written by the event loop itself, not by a thread per line
	host: str = '127.0.0.1'
	port: int = 8000
	auth_tokens: tuple[str, ...] = ()
	auth_token_file: Path | None = None  # HTTP: more tokens, one a line; re-read on SIGHUP and when it changes
	token_file_poll: float = 1.0  # s between looks at the token file's mtime; 0 = only on SIGHUP
	allow_unauthenticated: bool = False
	# HTTP: 'token' (static bearer tokens, above) or 'oauth' (JWT access tokens of an issuer; docs/http.md#oauth)
	auth: str = 'token'
	oauth_issuer: str | None = None  # the identity provider whose JWTs are accepted (its metadata names its JWKS)
	oauth_audience: str | None = None  # the 'aud' a token must carry
	oauth_required_scopes: tuple[str, ...] = ()  # scopes every token must grant ('scope' or 'scp'); else 403
	oauth_principal_claim: str = 'sub'  # the claim that names the principal
	oauth_resource_url: str | None = None  # the public URL of /mcp, for the protected-resource metadata; None: from Host
	oauth_jwks_min_refresh: float = 10.0  # s between two key fetches triggered by tokens with unknown key ids
	dashboard_port: int = 0  # stdio: serve the dashboard on 127.0.0.1 at this port; 0 = off (HTTP: always at /dashboard)
	takeover_timeout: float = 120.0  # s without input after which a dashboard takeover ends by itself
	metrics_public: bool = False  # /healthz, /readyz, /metrics without a token even off loopback
	# HTTP hardening (docs/security.md#http-hardening)
	header_timeout: float = 10.0  # s a connection may take to send a whole request header
	keep_alive_timeout: float = 5.0  # s an idle keep-alive connection stays open between requests
	max_connections: int = 1000  # open HTTP connections at once; more get a 503 and are closed
	max_connections_per_client: int = 100  # open connections from one client address; more get a 429; 0 = no cap
	max_request_body: int = 4 * 1024 * 1024  # bytes of one request body at /mcp and /messages/ (413 beyond); the SDK's default
	max_transport_sessions: int = 100  # handshake-era transport sessions (Mcp-Session-Id) per principal
	transport_session_idle: float = 1800.0  # s without a request after which a transport session is dropped

	# lifecycle
	idle_timeout: float = 600.0
	max_session_duration: float = 0.0
	max_sessions: int = 32
	max_sessions_per_principal: int | None = None  # sessions one principal (token) may hold; None = only --max-sessions
	max_calls_per_principal: int | None = None  # tool calls of one principal running at once; None = no limit
	queue_timeout: float | None = None  # s a new session or call waits for a slot; None: 30 over HTTP, 0 (refuse) on stdio
	prewarm: int = 0
	persist_sessions: bool = False  # every named session is durable (docs/sessions.md#durable-sessions)
	shutdown_grace: float = 3.0
	# flight recorder (docs/recording.md): what every session records unless it asks itself; () = nothing
	record: tuple[str, ...] = ()
	recordings_ttl: float = 86400.0  # s a recording is kept after its session closed
	recording_size_cap: int = 50 * 1024 * 1024  # bytes of one recording; past it, it is truncated

	# browser
	isolation: str = 'context'  # what a named session is: 'browser' (a Chromium each) or 'context' (shared Chromiums)
	dialogs: str = 'accept'  # JavaScript dialogs: 'accept' (browser-use answers them at once) or 'hold' (browser_handle_dialog)
	contexts_per_browser: int = 16  # --isolation context: most sessions one shared Chromium hosts (measured: docs/performance.md)
	spread_browsers: int = 1  # --isolation context: shared Chromiums new sessions are spread over before one hosts two (measured: docs/performance.md)
	shared_browser_idle: float = 30.0  # s an empty shared Chromium waits for a new session before it is closed
	cdp_url: str | None = None  # attach to this browser: the default session drives it, named sessions get contexts
	grid_url: str | None = None  # a Selenium Grid 4: every session's browser is a Grid session (docs/grid.md)
	grid_capabilities: Mapping[str, Any] = field(default_factory=dict)  # merged into each new-session request
	grid_timeout: float = 30.0  # s to wait for a Grid browser slot before a create fails as "at capacity"
	grid_default_session: str = 'grid'  # with a Grid: where the default session's browser runs: grid | local
	executable_path: str | None = None
	headless: bool = True
	headless_shell: bool = True  # headless and no --chromium: Chromium's headless shell when installed
	browser_profile: Mapping[str, Any] = field(default_factory=dict)
	default_user_data_dir: Path = Path('~/.config/browseruse/profiles/default').expanduser()
	default_downloads_dir: Path = Path('~/Downloads/browser-use-mcp').expanduser()
	default_files_dir: Path = Path('~/.browser-use-mcp').expanduser()
	state_dir: Path = field(default_factory=default_state_dir)
	# patches (browser_use_mcp/patches): each one's off switch
	parallel_event_buses: bool = True
	bus_text: bool = True  # an event bus's text (bubus's debug lines, task names) made without walking its history
	quirks_viewport: bool = True  # a quirks-mode page's viewport is the body's, as browser-use reads the HTML element's
	fast_actions: bool = True  # clicks and go-back wait for the page, not for fixed sleeps
	lazy_cloud_client: bool = True  # sessions build no HTTP client for browser-use's cloud API until used
	profile_paths: bool = True  # a session's profile looks up browser-use's default profile directory once
	factory_signatures: bool = True  # pydantic reads a default factory's signature once, not per model built
	quiet_blank_tabs: bool = True  # no animation (and no CDN request) in about:blank tabs
	agent_keeps_browser: bool = True  # off: retry_with_browser_use_agent refuses to run
	orderly_http_shutdown: bool = True  # HTTP: the server, not uvicorn, handles SIGTERM/SIGINT
	cached_result_types: bool = True  # bubus builds one pydantic adapter per event result type, not one per event
	fast_dom_capture: bool = True  # browser-use reads the page's trees in one round of CDP requests
	local_cdp: bool = True  # browser-use's CDP connection to our own endpoint is made in process, not over a socket
	lean_cdp_calls: bool = True  # a CDP request is capped on its caller's task, not in a task of its own
	direct_state: bool = True  # browser_get_state asks the DOM watchdog directly when the session's bus is idle
	early_page_info: bool = True  # browser_get_state reads the page info while the page's trees are read
	offload_state: bool = True  # browser_get_state's tree build and serializer run in a worker process
	in_page_state: bool = True  # with offload_state: browser_get_state reads the page in one walk, not three CDP trees
	paint_order_index: bool = True  # browser-use's paint-order filter compares nearby rectangles only
	serializer_checks: bool = True  # browser-use's per-element checks with their constants made once
	build_ahead: bool = True  # after a page-changing call, the page's state is built while the agent thinks (ahead.py)
	dialog_gate: bool = True  # --dialogs hold can hold JavaScript dialogs (browser-use answers them itself otherwise)
	typing_keeps_focus: bool = True  # browser_type sends no synthetic blur after typing (autocompletes stay open)
	late_target_info: bool = True  # a new tab's URL changed while browser-use attached it is kept, not dropped
	navigation_wake: bool = True  # a navigation returns once its page is ready, not at the next 50 ms poll tick
	popup_resume: bool = True  # a tab a page opens is let run once attached (the headless shell holds it, and its opener)
	chromium_args: tuple[str, ...] = ()  # extra Chromium flags for every launch (e.g. a proxy)
	allow_browser_urls: tuple[str, ...] = ()  # browser-internal pages tools may open anyway, e.g. chrome://version
	parent_death_signal: bool = True  # Linux: each browser dies with the server, even on SIGKILL
	chromium_nice: int = 10  # Linux: the browsers' CPU priority below the server's (0 leaves it as the server's)
	busy_renderer_nice: int = 19  # Linux: a renderer that keeps a core busy yields to the others (0: off)
	# egress policy (browser_use_mcp/egress.py): may pages reach loopback, private and link-local addresses?
	block_private_networks: bool = False  # stdio: refuse them too (HTTP refuses them unless allowed)
	allow_private_networks: bool = False  # HTTP: allow them (stdio allows them unless blocked)
	watchdog: str = 'auto'  # sidecar that ends browsers and deletes the state dir if the server is killed: auto (= on) | off

	# which tool groups tools/list offers (browser_use_mcp.tools.GROUPS): core | interaction | all
	tools: tuple[str, ...] = ('core',)

	# llm
	llm: Mapping[str, Any] = field(default_factory=dict)

	# misc
	log_level: str = 'warning'
	log_format: str = 'text'  # text | json (one JSON object per line)
	telemetry: bool = True

	# Set when built without browser-use's config.json (to answer the MCP handshake without
	# importing browser-use): the environment and flags to build the complete config from.
	deferred: tuple[Mapping[str, str], Mapping[str, Any]] | None = field(default=None, compare=False, repr=False)

	@property
	def queue_wait(self) -> float:
		"""How long a new session or call waits for a slot: --queue-timeout, else 30 s over HTTP and
		none on stdio (refused at once, as before queues existed)."""
		if self.queue_timeout is not None:
			return self.queue_timeout
		return 30.0 if self.transport == 'http' else 0.0

	def with_overrides(self, **overrides: Any) -> ServerConfig:
		known = {f.name for f in fields(self)}
		return replace(self, **{k: v for k, v in overrides.items() if k in known and v is not None})


# name -> (env var, parser)
def _float(v: str) -> float:
	return float(v)


def _int(v: str) -> int:
	return int(v)


def parse_json_object(v: str) -> dict[str, Any]:
	try:
		value = json.loads(v)
	except json.JSONDecodeError as exc:
		raise ValueError(f'not JSON: {exc.msg} at character {exc.pos}') from None
	if not isinstance(value, dict):
		raise ValueError(f'a JSON object is needed, not {type(value).__name__}')
	return value


def scope_list(v: str) -> tuple[str, ...]:
	"""Scope names separated by commas and/or spaces."""
	return tuple(dict.fromkeys(s for s in v.replace(',', ' ').split() if s))


def _tokens(v: str) -> tuple[str, ...]:
	return tuple(t.strip() for t in v.split(',') if t.strip())


ENV_VARS: dict[str, tuple[str, Any]] = {
	'transport': (f'{ENV_PREFIX}TRANSPORT', str),
	'stdio_pipes': (f'{ENV_PREFIX}STDIO_PIPES', _truthy),
	'host': (f'{ENV_PREFIX}HOST', str),
	'port': (f'{ENV_PREFIX}PORT', _int),
	'auth_tokens': (f'{ENV_PREFIX}AUTH_TOKENS', _tokens),
	'auth_token_file': (f'{ENV_PREFIX}AUTH_TOKEN_FILE', lambda v: Path(v).expanduser()),
	'token_file_poll': (f'{ENV_PREFIX}TOKEN_FILE_POLL', _float),
	'allow_unauthenticated': (f'{ENV_PREFIX}ALLOW_UNAUTHENTICATED', _truthy),
	'auth': (f'{ENV_PREFIX}AUTH', str),
	'oauth_issuer': (f'{ENV_PREFIX}OAUTH_ISSUER', str),
	'oauth_audience': (f'{ENV_PREFIX}OAUTH_AUDIENCE', str),
	'oauth_required_scopes': (f'{ENV_PREFIX}OAUTH_REQUIRED_SCOPES', scope_list),
	'oauth_principal_claim': (f'{ENV_PREFIX}OAUTH_PRINCIPAL_CLAIM', str),
	'oauth_resource_url': (f'{ENV_PREFIX}OAUTH_RESOURCE_URL', str),
	'oauth_jwks_min_refresh': (f'{ENV_PREFIX}OAUTH_JWKS_MIN_REFRESH', _float),
	'dashboard_port': (f'{ENV_PREFIX}DASHBOARD_PORT', _int),
	'takeover_timeout': (f'{ENV_PREFIX}TAKEOVER_TIMEOUT', _float),
	'metrics_public': (f'{ENV_PREFIX}METRICS_PUBLIC', _truthy),
	'header_timeout': (f'{ENV_PREFIX}HEADER_TIMEOUT', _float),
	'keep_alive_timeout': (f'{ENV_PREFIX}KEEP_ALIVE_TIMEOUT', _float),
	'max_connections': (f'{ENV_PREFIX}MAX_CONNECTIONS', _int),
	'max_connections_per_client': (f'{ENV_PREFIX}MAX_CONNECTIONS_PER_CLIENT', _int),
	'max_request_body': (f'{ENV_PREFIX}MAX_REQUEST_BODY', _int),
	'max_transport_sessions': (f'{ENV_PREFIX}MAX_TRANSPORT_SESSIONS', _int),
	'transport_session_idle': (f'{ENV_PREFIX}TRANSPORT_SESSION_IDLE', _float),
	'idle_timeout': (f'{ENV_PREFIX}IDLE_TIMEOUT', _float),
	'max_session_duration': (f'{ENV_PREFIX}MAX_SESSION_DURATION', _float),
	'max_sessions': (f'{ENV_PREFIX}MAX_SESSIONS', _int),
	'max_sessions_per_principal': (f'{ENV_PREFIX}MAX_SESSIONS_PER_PRINCIPAL', _int),
	'max_calls_per_principal': (f'{ENV_PREFIX}MAX_CALLS_PER_PRINCIPAL', _int),
	'queue_timeout': (f'{ENV_PREFIX}QUEUE_TIMEOUT', _float),
	'prewarm': (f'{ENV_PREFIX}PREWARM', _int),
	'persist_sessions': (f'{ENV_PREFIX}PERSIST_SESSIONS', _truthy),
	'record': (f'{ENV_PREFIX}RECORD', _tokens),
	'recordings_ttl': (f'{ENV_PREFIX}RECORDINGS_TTL', _float),
	'recording_size_cap': (f'{ENV_PREFIX}RECORDING_SIZE_CAP', _int),
	'state_dir': (f'{ENV_PREFIX}STATE_DIR', lambda v: Path(v).expanduser()),
	'executable_path': (f'{ENV_PREFIX}CHROMIUM', str),
	'headless_shell': (f'{ENV_PREFIX}HEADLESS_SHELL', _truthy),
	'log_level': (f'{ENV_PREFIX}LOG_LEVEL', str),
	'log_format': (f'{ENV_PREFIX}LOG_FORMAT', str),
	'isolation': (f'{ENV_PREFIX}ISOLATION', str),
	'dialogs': (f'{ENV_PREFIX}DIALOGS', str),
	'contexts_per_browser': (f'{ENV_PREFIX}CONTEXTS_PER_BROWSER', _int),
	'spread_browsers': (f'{ENV_PREFIX}SPREAD_BROWSERS', _int),
	'shared_browser_idle': (f'{ENV_PREFIX}SHARED_BROWSER_IDLE', _float),
	'cdp_url': (f'{ENV_PREFIX}CDP_URL', str),
	'grid_url': (f'{ENV_PREFIX}GRID_URL', str),
	'grid_capabilities': (f'{ENV_PREFIX}GRID_CAPABILITIES', parse_json_object),
	'grid_timeout': (f'{ENV_PREFIX}GRID_TIMEOUT', _float),
	'grid_default_session': (f'{ENV_PREFIX}GRID_DEFAULT_SESSION', str),
	'parallel_event_buses': (f'{ENV_PREFIX}PARALLEL_EVENT_BUSES', _truthy),
	'bus_text': (f'{ENV_PREFIX}BUS_TEXT', _truthy),
	'quirks_viewport': (f'{ENV_PREFIX}QUIRKS_VIEWPORT', _truthy),
	'fast_actions': (f'{ENV_PREFIX}FAST_ACTIONS', _truthy),
	'lazy_cloud_client': (f'{ENV_PREFIX}LAZY_CLOUD_CLIENT', _truthy),
	'profile_paths': (f'{ENV_PREFIX}PROFILE_PATHS', _truthy),
	'factory_signatures': (f'{ENV_PREFIX}FACTORY_SIGNATURES', _truthy),
	'quiet_blank_tabs': (f'{ENV_PREFIX}QUIET_BLANK_TABS', _truthy),
	'agent_keeps_browser': (f'{ENV_PREFIX}AGENT_KEEPS_BROWSER', _truthy),
	'orderly_http_shutdown': (f'{ENV_PREFIX}ORDERLY_HTTP_SHUTDOWN', _truthy),
	'cached_result_types': (f'{ENV_PREFIX}CACHED_RESULT_TYPES', _truthy),
	'fast_dom_capture': (f'{ENV_PREFIX}FAST_DOM_CAPTURE', _truthy),
	'local_cdp': (f'{ENV_PREFIX}LOCAL_CDP', _truthy),
	'lean_cdp_calls': (f'{ENV_PREFIX}LEAN_CDP_CALLS', _truthy),
	'direct_state': (f'{ENV_PREFIX}DIRECT_STATE', _truthy),
	'early_page_info': (f'{ENV_PREFIX}EARLY_PAGE_INFO', _truthy),
	'offload_state': (f'{ENV_PREFIX}OFFLOAD_STATE', _truthy),
	'in_page_state': (f'{ENV_PREFIX}IN_PAGE_STATE', _truthy),
	'paint_order_index': (f'{ENV_PREFIX}PAINT_ORDER_INDEX', _truthy),
	'serializer_checks': (f'{ENV_PREFIX}SERIALIZER_CHECKS', _truthy),
	'build_ahead': (f'{ENV_PREFIX}BUILD_AHEAD', _truthy),
	'typing_keeps_focus': (f'{ENV_PREFIX}TYPING_KEEPS_FOCUS', _truthy),
	'late_target_info': (f'{ENV_PREFIX}LATE_TARGET_INFO', _truthy),
	'navigation_wake': (f'{ENV_PREFIX}NAVIGATION_WAKE', _truthy),
	'popup_resume': (f'{ENV_PREFIX}POPUP_RESUME', _truthy),
	'dialog_gate': (f'{ENV_PREFIX}DIALOG_GATE', _truthy),
	'chromium_args': (f'{ENV_PREFIX}CHROMIUM_ARGS', lambda v: tuple(shlex.split(v))),
	'allow_browser_urls': (f'{ENV_PREFIX}ALLOW_BROWSER_URLS', _tokens),
	'parent_death_signal': (f'{ENV_PREFIX}PARENT_DEATH_SIGNAL', _truthy),
	'chromium_nice': (f'{ENV_PREFIX}CHROMIUM_NICE', _int),
	'busy_renderer_nice': (f'{ENV_PREFIX}BUSY_RENDERER_NICE', _int),
	'watchdog': (f'{ENV_PREFIX}WATCHDOG', str),
	'tools': (f'{ENV_PREFIX}TOOLS', _tokens),
	'block_private_networks': (f'{ENV_PREFIX}BLOCK_PRIVATE_NETWORKS', _truthy),
	'allow_private_networks': (f'{ENV_PREFIX}ALLOW_PRIVATE_NETWORKS', _truthy),
}


def _browser_use_config() -> dict[str, Any]:
	"""browser-use's own config.json (with its env overrides), as upstream's server reads it."""
	from browser_use.config import get_default_llm, get_default_profile, load_browser_use_config

	try:
		raw = load_browser_use_config()
	except Exception:  # unreadable config.json must not stop the server
		return {'browser_profile': {}, 'llm': {}}
	return {'browser_profile': dict(get_default_profile(raw)), 'llm': dict(get_default_llm(raw))}


def with_bu_dirs(values: dict[str, Any]) -> None:
	"""Upstream's default profile lives in browser-use's config dir (BROWSER_USE_CONFIG_DIR aware)."""
	try:
		from browser_use.config import CONFIG

		values['default_user_data_dir'] = Path(CONFIG.BROWSER_USE_DEFAULT_USER_DATA_DIR)
	except Exception:
		pass
	values['default_downloads_dir'] = Path('~/Downloads/browser-use-mcp').expanduser()
	values['default_files_dir'] = Path('~/.browser-use-mcp').expanduser()


def load_config(environ: Mapping[str, str] | None = None, *, browser_use: bool = True, **cli: Any) -> ServerConfig:
	"""Build the effective configuration; ``cli`` holds flags the user actually passed.

	``browser_use=False`` leaves out browser-use's config.json (reading it imports browser-use):
	enough to answer the MCP handshake and list tools; ``complete`` adds it before any browser starts.
	"""
	env = os.environ if environ is None else environ
	bu = _browser_use_config() if browser_use else {'browser_profile': {}, 'llm': {}}
	profile: dict[str, Any] = bu['browser_profile']
	# config.json entries carry bookkeeping keys that are not BrowserProfile fields
	for key in ('id', 'default', 'created_at', 'name'):
		profile.pop(key, None)

	values: dict[str, Any] = {}
	if browser_use:
		with_bu_dirs(values)
	else:
		values['deferred'] = (dict(env), dict(cli))
	if profile.get('executable_path'):
		values['executable_path'] = str(profile['executable_path'])
	# attach to a running browser: config.json's cdp_url, then BROWSER_USE_CDP_URL (ours below wins)
	upstream_cdp_url = env.get('BROWSER_USE_CDP_URL', '').strip() or str(profile.get('cdp_url') or '').strip()
	if upstream_cdp_url:
		values['cdp_url'] = upstream_cdp_url
	if profile.get('user_data_dir'):
		values['default_user_data_dir'] = Path(str(profile['user_data_dir'])).expanduser()
	if profile.get('downloads_path'):
		values['default_downloads_dir'] = Path(str(profile['downloads_path'])).expanduser()
	if profile.get('file_system_path'):
		values['default_files_dir'] = Path(str(profile['file_system_path'])).expanduser()

	# Headless: explicit env wins; otherwise headed only when a display exists and
	# config.json asks for it (its generated default says headless=false, which would
	# make every navigate fail on a machine without a screen).
	headless_env = env.get('BROWSER_USE_HEADLESS')
	if headless_env is not None and headless_env.strip():
		values['headless'] = _truthy(headless_env)
	elif not display_available():
		values['headless'] = True
	else:
		values['headless'] = bool(profile.get('headless', False))

	for name, (var, parse) in ENV_VARS.items():
		raw = env.get(var)
		if raw is not None and raw.strip() != '':
			try:
				values[name] = parse(raw)
			except ValueError as exc:
				raise SystemExit(f'Invalid value for {var}: {raw!r} ({exc})') from None

	telemetry_env = env.get('ANONYMIZED_TELEMETRY')
	values['telemetry'] = True if telemetry_env is None else _truthy(telemetry_env)

	config = ServerConfig(browser_profile=profile, llm=bu['llm'], **values)
	config = config.with_overrides(**cli)
	if config.auth_tokens:  # the same token twice is one client, not two principals
		config = replace(config, auth_tokens=tuple(dict.fromkeys(config.auth_tokens)))
	validate(config)
	return config


def complete(config: ServerConfig) -> ServerConfig:
	"""The config with browser-use's config.json applied, for one built with ``browser_use=False``."""
	if config.deferred is None:
		return config
	environ, cli = config.deferred
	return load_config(environ, **cli)


def validate(config: ServerConfig) -> None:
	problems = []
	if config.transport not in ('stdio', 'http'):
		problems.append(f'transport must be stdio or http, not {config.transport!r}')
	if config.idle_timeout < 0:
		problems.append('idle timeout must be >= 0 (0 disables expiry)')
	if config.max_session_duration < 0:
		problems.append('max session duration must be >= 0 (0 means unlimited)')
	if config.max_sessions < 1:
		problems.append('max sessions must be >= 1')
	if config.max_sessions_per_principal is not None and config.max_sessions_per_principal < 1:
		problems.append('max sessions per principal must be >= 1 (leave it unset for no per-principal limit)')
	if config.max_calls_per_principal is not None and config.max_calls_per_principal < 1:
		problems.append('max calls per principal must be >= 1 (leave it unset for no limit)')
	if config.queue_timeout is not None and config.queue_timeout < 0:
		problems.append('queue timeout must be >= 0 seconds (0 refuses at once when a limit is reached)')
	if config.prewarm < 0:
		problems.append('prewarm must be >= 0')
	from browser_use_mcp.recorder import parse_kinds

	try:
		parse_kinds(list(config.record), '--record')
	except ValueError as exc:
		problems.append(str(exc))
	if config.recordings_ttl < 0:
		problems.append('recordings ttl must be >= 0 seconds')
	if config.recording_size_cap < 1024:
		problems.append('recording size cap must be >= 1024 bytes')
	if config.dialogs not in ('accept', 'hold'):
		problems.append(f'dialogs must be accept or hold, not {config.dialogs!r}')
	if config.isolation not in ('browser', 'context'):
		problems.append(f'isolation must be browser or context, not {config.isolation!r}')
	if not 0 <= config.chromium_nice <= 19:
		problems.append(
			f"chromium nice must be 0 to 19 (0 leaves the browsers at the server's priority), not {config.chromium_nice}"
		)
	if config.busy_renderer_nice != 0 and not config.chromium_nice < config.busy_renderer_nice <= 19:
		problems.append(
			f'busy renderer nice must be 0 (off) or above chromium nice ({config.chromium_nice}) and at most 19, '
			f'not {config.busy_renderer_nice}'
		)
	if config.shared_browser_idle < 0:
		problems.append('shared browser idle time must be >= 0')
	if config.contexts_per_browser < 1:
		problems.append('contexts per browser must be >= 1')
	if config.spread_browsers < 1:
		problems.append('spread browsers must be >= 1 (1: fill one shared Chromium before the next)')
	if config.cdp_url is not None and not config.cdp_url.startswith(('http://', 'https://', 'ws://', 'wss://')):
		problems.append(f'--cdp-url must be an http(s):// or ws(s):// URL, not {config.cdp_url!r}')
	if config.grid_url is not None:
		if not config.grid_url.startswith(('http://', 'https://')):
			problems.append(f'--grid-url must be the http(s):// address of a Selenium Grid, not {config.grid_url!r}')
		if config.cdp_url:
			problems.append('--grid-url and --cdp-url cannot be used together: choose where browsers come from')
	if config.grid_timeout <= 0:
		problems.append('grid timeout must be > 0 seconds')
	if config.grid_default_session not in ('grid', 'local'):
		problems.append(f'grid default session must be grid or local, not {config.grid_default_session!r}')
	from browser_use_mcp.urls import browser_url_problem

	problems.extend(p for p in (browser_url_problem(u) for u in config.allow_browser_urls) if p)
	if config.log_format not in ('text', 'json'):
		problems.append(f'log format must be text or json, not {config.log_format!r}')
	if config.watchdog not in ('auto', 'on', 'off'):
		problems.append(f'watchdog must be auto, on or off, not {config.watchdog!r}')
	if not 0 <= config.dashboard_port < 65536:
		problems.append(f'dashboard port {config.dashboard_port} is out of range (0 turns the dashboard off)')
	if config.takeover_timeout <= 0:
		problems.append('takeover timeout must be > 0 seconds')
	if config.auth not in ('token', 'oauth'):
		problems.append(f'auth must be token or oauth, not {config.auth!r}')
	elif config.auth == 'oauth':
		from browser_use_mcp.oauth import settings_problems

		if config.transport != 'http':
			problems.append('--auth oauth needs --transport http (stdio has no bearer tokens)')
		if config.auth_tokens or config.auth_token_file is not None:
			problems.append(
				'--auth oauth and static tokens (--auth-token, --auth-token-file) cannot be used together: choose one mode'
			)
		problems.extend(
			settings_problems(
				config.oauth_issuer,
				config.oauth_audience,
				config.oauth_principal_claim,
				config.oauth_required_scopes,
				config.oauth_resource_url,
			)
		)
		if config.oauth_jwks_min_refresh < 0:
			problems.append('JWKS minimum refresh interval must be >= 0 seconds')
	if config.token_file_poll < 0:
		problems.append('token file poll interval must be >= 0 seconds (0 reloads on SIGHUP only)')
	if config.header_timeout <= 0:
		problems.append('header timeout must be > 0 seconds')
	if config.keep_alive_timeout <= 0:
		problems.append('keep-alive timeout must be > 0 seconds')
	if config.max_connections < 1:
		problems.append('max connections must be >= 1')
	if config.max_connections_per_client < 0:
		problems.append('max connections per client must be >= 0 (0 means no per-address cap)')
	if config.max_request_body < 1024:
		problems.append('max request body must be >= 1024 bytes')
	if config.max_transport_sessions < 1:
		problems.append('max transport sessions must be >= 1')
	if config.transport_session_idle <= 0:
		problems.append('transport session idle time must be > 0 seconds')
	from browser_use_mcp.tools import group_names

	unknown_groups = [g for g in config.tools if g not in group_names()]
	if unknown_groups or not config.tools:
		problems.append(
			f'unknown tool group {", ".join(map(repr, unknown_groups)) or "(none given)"}: --tools takes a comma-separated '
			f'list of {", ".join(group_names())}'
		)
	if not 0 < config.port < 65536:
		problems.append(f'port {config.port} is out of range')
	if config.block_private_networks and config.allow_private_networks:
		problems.append('--block-private-networks and --allow-private-networks contradict each other: give one')
	if problems:
		raise SystemExit('Invalid configuration: ' + '; '.join(problems))
