"""What a session can be made with: ``browser_create_session``'s options, validated once.

Every option is optional and holds for its session only. ``SessionOptions`` travels from the tool
through ``SessionRegistry.create`` to the provider (``BrowserProvider.open(dirs, options)``): the
provider turns it into BrowserProfile fields (viewport, scale, proxy, permissions, domains) and
``emulation`` into per-tab CDP overrides (user agent, locale, timezone, geolocation, headers).
One more option is one more field here plus the line that applies it.

Secrets (the proxy's credentials, and the values of ``extra_http_headers``: Authorization, API
keys) never leave this module in a listing: ``public()`` is what the tools and the dashboard show
(header names, values redacted), and the models' repr hides them from logs and tracebacks.
"""

from __future__ import annotations

import os
import re
import urllib.parse
import zoneinfo
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from browser_use_mcp.domains import MAX_PATTERN_LENGTH, MAX_PATTERNS, check_patterns
from browser_use_mcp.errors import InvalidArgument

VIEWPORT_MIN = 100
VIEWPORT_MAX = 8192
SCALE_MAX = 5.0
MAX_HEADERS = 64
MAX_TEXT = 2048
PROXY_SCHEMES = ('http', 'https', 'socks4', 'socks5')
# the keys of a listing that stand for a secret
REDACTED = 'redacted'

_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")  # an HTTP header name (RFC 9110 token)
_LOCALE = re.compile(r'^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$')  # a BCP 47 tag, as Chromium takes it


def _no_controls(value: str, what: str) -> str:
	if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
		raise ValueError(f'{what} must not contain control characters (CR, LF, NUL...)')
	return value


class OptionModel(BaseModel):
	"""An option given as an object: strict types, and an unknown key refused naming the valid ones."""

	model_config = ConfigDict(strict=True, extra='forbid', hide_input_in_errors=True)

	@model_validator(mode='before')
	@classmethod
	def _known_keys(cls, data: Any) -> Any:
		if isinstance(data, dict):
			unknown = sorted(str(k) for k in data if k not in cls.model_fields)
			if unknown:
				raise ValueError(f'unknown key(s) {", ".join(unknown)}; valid keys: {", ".join(cls.model_fields)}')
		return data


class Viewport(OptionModel):
	width: int = Field(ge=VIEWPORT_MIN, le=VIEWPORT_MAX, description=f'CSS pixels, {VIEWPORT_MIN}-{VIEWPORT_MAX}.')
	height: int = Field(ge=VIEWPORT_MIN, le=VIEWPORT_MAX, description=f'CSS pixels, {VIEWPORT_MIN}-{VIEWPORT_MAX}.')


class Geolocation(OptionModel):
	latitude: float = Field(ge=-90, le=90, description='Degrees, -90 to 90.')
	longitude: float = Field(ge=-180, le=180, description='Degrees, -180 to 180.')
	accuracy: float = Field(0, ge=0, le=1_000_000, description='Metres (default 0).')


def _proxy_server(value: str) -> str:
	_no_controls(value, 'server')
	parts = urllib.parse.urlsplit(value)
	if parts.scheme.lower() not in PROXY_SCHEMES:
		raise ValueError(f'must be a URL whose scheme is one of {", ".join(PROXY_SCHEMES)}, e.g. http://proxy.example:8080')
	try:
		port = parts.port
	except ValueError:
		port = None
	if not parts.hostname or port is None or port == 0:
		raise ValueError('must name a host and a port (1-65535), e.g. http://proxy.example:8080')
	if parts.username is not None or parts.password is not None:
		raise ValueError('must not carry credentials; pass them as proxy.username and proxy.password')
	if parts.path not in ('', '/') or parts.query or parts.fragment:
		raise ValueError('must be scheme://host:port only, without a path, query or fragment')
	return f'{parts.scheme.lower()}://{parts.netloc}'


class Proxy(OptionModel):
	server: Annotated[str, AfterValidator(_proxy_server)] = Field(
		description=f'scheme://host:port; scheme one of {", ".join(PROXY_SCHEMES)}.'
	)
	bypass: str | None = Field(
		None, max_length=MAX_TEXT, description='Comma-separated hosts that skip the proxy, e.g. "*.internal,10.0.0.1".'
	)
	username: str | None = Field(None, max_length=MAX_TEXT, repr=False, description='Proxy login; never shown back.')
	password: str | None = Field(None, max_length=MAX_TEXT, repr=False, description='Proxy password; never shown back.')

	@model_validator(mode='after')
	def _consistent(self) -> Proxy:
		if self.bypass is not None:
			_no_controls(self.bypass, 'bypass')
		for name in ('username', 'password'):
			value = getattr(self, name)
			if value is not None:
				if value == '':
					raise ValueError(f'{name} must not be empty; omit it for a proxy without login')
				_no_controls(value, name)
		if (self.username is None) != (self.password is None):
			raise ValueError('username and password go together: give both or neither')
		if self.username is not None and self.server.startswith(('socks4', 'socks5')):
			raise ValueError('Chromium cannot log in to a SOCKS proxy; use an http(s) proxy for username/password')
		return self

	def public(self) -> dict[str, Any]:
		out: dict[str, Any] = {'server': self.server}
		if self.bypass:
			out['bypass'] = self.bypass
		if self.username is not None:
			out['credentials'] = REDACTED
		return out


def _text(value: str) -> str:
	return _no_controls(value, 'the value')


def _locale(value: str) -> str:
	if not _LOCALE.match(value):
		raise ValueError('must be a BCP 47 language tag such as de-DE, en-US or fr')
	return value


def _timezone(value: str) -> str:
	try:
		zoneinfo.ZoneInfo(value)
	except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a directory ("America"), too long
		raise ValueError('is not a known IANA time zone; use a name such as Europe/Berlin, America/New_York or UTC') from None
	return value


# Headers the browser's network stack sets itself (framing, the connection, the host): given as extra
# headers, Chromium fails every request of the session with net::ERR_INVALID_ARGUMENT
BROWSER_HEADERS = frozenset(
	{
		'host',
		'content-length',
		'transfer-encoding',
		'connection',
		'keep-alive',
		'upgrade',
		'te',
		'trailer',
		'expect',
		'proxy-connection',
	}
)


def _headers(value: dict[str, str]) -> dict[str, str]:
	if len(value) > MAX_HEADERS:
		raise ValueError(f'at most {MAX_HEADERS} headers')
	for name, text in value.items():
		if not _TOKEN.match(name):
			raise ValueError(f'header name {name[:60]!r} is not a valid HTTP header name')
		if name.lower() in BROWSER_HEADERS:
			raise ValueError(
				f'header {name!r} is set by the browser itself for each request and cannot be given (every request of '
				'the session would fail); leave it out'
			)
		if any(ord(ch) < 32 and ch != '\t' or ord(ch) == 127 for ch in text) or len(text) > MAX_TEXT:
			raise ValueError(f'header {name!r}: the value must not contain CR, LF or other control characters')
	return value


def _domains(value: list[str]) -> list[str]:
	if not value:
		raise ValueError('must list at least one pattern; omit allowed_domains to keep the server list')
	check_patterns(value)
	for pattern in value:
		if not pattern.strip():
			raise ValueError('patterns must not be empty')
		_no_controls(pattern, 'a pattern')
	return value


def _record(value: str | list[str]) -> list[str]:
	from browser_use_mcp.recorder import parse_kinds

	return list(parse_kinds(value, ''))


Text = Annotated[str, Field(min_length=1, max_length=MAX_TEXT), AfterValidator(_text)]


class SessionOptions(BaseModel):
	"""A new session's options; None (or an empty instance) means the server's defaults."""

	model_config = ConfigDict(strict=True, extra='forbid', hide_input_in_errors=True)

	viewport: Viewport | None = Field(
		None,
		description=f'The page size in CSS pixels, e.g. {{"width": 390, "height": 844}}; each {VIEWPORT_MIN}-{VIEWPORT_MAX}.',
	)
	device_scale_factor: float | None = Field(
		None, gt=0, le=SCALE_MAX, description='devicePixelRatio, above 0 (e.g. 3 for a phone).'
	)
	user_agent: Text | None = Field(None, description='The User-Agent header and navigator.userAgent.')
	locale: Annotated[str, AfterValidator(_locale)] | None = Field(
		None, description='A BCP 47 tag, e.g. de-DE: navigator.language, Accept-Language and Intl formatting.'
	)
	timezone: Annotated[str, AfterValidator(_timezone)] | None = Field(
		None, description='An IANA time zone, e.g. America/New_York.'
	)
	geolocation: Geolocation | None = Field(
		None, description='The position navigator.geolocation reports; the permission is granted to this session.'
	)
	proxy: Proxy | None = Field(
		None,
		description='Send this session\'s traffic through a proxy: {"server": "http://host:port", "bypass"?, "username"?, '
		'"password"?}. Credentials are never shown back. Refused when the server has a proxy of its own.',
	)
	extra_http_headers: Annotated[dict[str, str], AfterValidator(_headers)] | None = Field(
		None,
		repr=False,
		description='Headers sent with every request of this session, e.g. {"X-Test": "1"}. Their values are never '
		'shown back (listings show the names).',
	)
	allowed_domains: Annotated[list[str], AfterValidator(_domains)] | None = Field(
		None,
		description='Only these sites may be visited (patterns like "example.com", "*.example.com", '
		f'"https://example.com/app"; at most {MAX_PATTERNS}, each at most {MAX_PATTERN_LENGTH} characters). Can only '
		'narrow what the server allows, never widen it.',
	)

	record: Annotated[str | list[str], AfterValidator(_record)] | None = Field(
		None,
		description='Record this session (docs/recording.md): a kind or a list of kinds. "trace" keeps every call with its '
		'arguments (secrets redacted), result, page before and after and a screenshot after page-changing calls; "har" '
		'a HAR 1.2 file of its traffic (bodies up to 512 KB); "video" a WebM video of its focused tab. Read them with '
		'browser_get_recording.',
	)

	dialogs: Literal['accept', 'hold'] | None = Field(
		None,
		description='JavaScript dialogs (alert, confirm, prompt, leave-page) of this session: "accept" answers them at '
		'once (prompts cancelled), "hold" keeps each one open for browser_handle_dialog. Default: the server\'s --dialogs.',
	)

	# what needs a CDP command on every tab (the rest goes into the BrowserProfile)
	PER_TAB: ClassVar[tuple[str, ...]] = ('user_agent', 'locale', 'timezone', 'geolocation', 'extra_http_headers')
	# what this server does around the browser, not in it: a prewarmed browser (--prewarm) serves
	NOT_IN_BROWSER: ClassVar[tuple[str, ...]] = ('record', 'dialogs')

	@property
	def given(self) -> list[str]:
		return [name for name in type(self).model_fields if getattr(self, name) is not None]

	@property
	def empty(self) -> bool:
		return not self.given

	@property
	def shapes_browser(self) -> bool:
		"""Whether the browser itself must be made for these options (a prewarmed one will not do)."""
		return any(name not in self.NOT_IN_BROWSER for name in self.given)

	@property
	def per_tab(self) -> bool:
		return any(getattr(self, name) is not None for name in self.PER_TAB)

	def public(self) -> dict[str, Any]:
		"""The options as tools show them: what was given, the proxy's credentials and the headers'
		values redacted."""
		out: dict[str, Any] = {}
		for name in self.given:
			value = getattr(self, name)
			if name == 'extra_http_headers':
				out[name] = dict.fromkeys(value, REDACTED)
			elif isinstance(value, Proxy):
				out[name] = value.public()
			elif isinstance(value, BaseModel):
				out[name] = value.model_dump()
			else:
				out[name] = value
		return out


OPTION_NAMES = tuple(SessionOptions.model_fields)


def operator_proxy(chromium_args: tuple[str, ...], profile_base: dict[str, Any]) -> str | None:
	"""Where the operator routes the browsers' traffic (None if nowhere): a proxy flag among the
	configured Chromium args, browser-use's profile proxy, or the proxy environment Chromium reads."""
	for arg in chromium_args:
		if arg.startswith(('--proxy-server', '--proxy-pac-url', '--proxy-auto-detect')):
			return f'the Chromium flag {arg.split("=", 1)[0]}'
	proxy = profile_base.get('proxy')
	server = proxy.get('server') if isinstance(proxy, dict) else getattr(proxy, 'server', None)
	if server:
		return "the browser profile's proxy"
	for name in ('all_proxy', 'http_proxy', 'https_proxy'):
		if os.environ.get(name) or os.environ.get(name.upper()):
			return f'the {name.upper()} environment variable'
	return None


def refuse_proxy_under(operator: str) -> InvalidArgument:
	return InvalidArgument(
		f"proxy: this server's operator routes all browser traffic through their own proxy ({operator}), which stays in "
		'force for every session; a session cannot use another one. Omit proxy.'
	)
