"""Which URLs a tool may open: never the browser's own pages, unless the operator named them.

chrome://, devtools:// and the like are the browser's control surface, not the web: some crash or
hang the browser (chrome://gpucrash, chrome://inducebrowsercrashforrealz), which with shared
browsers is every tenant's, others show the profile, the other contexts' downloads or flags.
Pages cannot navigate to them by themselves (Chromium refuses), but CDP's Page.navigate can.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

# Schemes whose pages belong to the browser itself (Chromium's and its forks' names for them).
BROWSER_SCHEMES = frozenset(
	{
		'chrome',
		'chrome-untrusted',
		'chrome-error',
		'chrome-extension',
		'chrome-search',
		'chrome-native',
		'devtools',
		'edge',
		'brave',
		'opera',
		'vivaldi',
	}
)
ABOUT_ALLOWED = frozenset({'blank', 'srcdoc'})
# Schemes that read the server's own disk (file://localhost/etc/passwd as well as file:///…), or show
# such a page's source: never opened, whatever the host part says.
LOCAL_SCHEMES = frozenset({'file', 'filesystem', 'view-source'})
# The operator's --allow-browser-urls, for the CDP endpoints (set once at start-up; tools read the config).
ALLOWED: tuple[str, ...] = ()


def configure(allowed: Iterable[str]) -> None:
	global ALLOWED
	ALLOWED = tuple(allowed)


def refused_command(message: dict[str, Any]) -> str | None:
	"""Why a CDP command from browser-use may not run: it opens a browser page (the agent's own
	navigations, and anything else browser-use does, pass through our endpoint)."""
	if message.get('method') not in ('Page.navigate', 'Target.createTarget'):
		return None
	params = message.get('params')
	url = params.get('url') if isinstance(params, dict) else None
	return refusal(url, ALLOWED) if isinstance(url, str) else None


def browser_page(url: str) -> str | None:
	"""The browser page ``url`` opens, as ``scheme://host`` or ``about:name``; None for the web
	(and about:blank). Parsed as Chromium does: case, surrounding blanks and tabs do not matter."""
	parts = urlsplit(url.strip())
	scheme = parts.scheme.lower()
	if scheme == 'about':
		name = parts.path.lower().strip('/')
		return None if name in ABOUT_ALLOWED else f'about:{name}'
	if scheme in BROWSER_SCHEMES:
		return f'{scheme}://{(parts.hostname or parts.path.lstrip("/").split("/", 1)[0]).lower()}'
	return None


def local_file(url: str) -> bool:
	"""Whether ``url`` would open something of the server's own disk (or a page's source), read as
	Chromium reads it: case, surrounding blanks, tabs and newlines do not matter, nor does the host."""
	return urlsplit(url.strip()).scheme.lower() in LOCAL_SCHEMES


def refusal(url: str, allowed: Iterable[str] = ()) -> str | None:
	"""Why ``url`` may not be opened by a tool, or None when it may."""
	if local_file(url):
		return (
			f"{url[:200]!r} would open a file of the server's own disk (or a page's source), which no session may "
			'read. Open an http(s) URL; to give the page a file of yours, use browser_upload_file.'
		)
	page = browser_page(url)
	if page is None:
		return None
	if page in {browser_page(a) for a in allowed}:
		return None
	return (
		f'{url[:200]!r} is a page of the browser itself ({page}), not a web page; this server does not open those '
		'(some crash or reveal the browser every session shares). Open an http(s) URL instead; the operator can '
		'allow named ones with --allow-browser-urls.'
	)


def browser_url_problem(entry: str) -> str | None:
	"""A configuration problem with one --allow-browser-urls entry, or None."""
	if browser_page(entry) is None:
		return f'--allow-browser-urls entries must be browser pages such as chrome://version or about:version, not {entry!r}'
	return None
