"""Which domains one agent run may visit: a run's allowed_domains, narrowed against the server's.

browser-use's SecurityWatchdog matches each navigation against the profile's list: "*" allows
all, "*.d" allows http(s) on d and its subdomains, "scheme://..." is a URL prefix, anything else
an exact host (plus "www." for a root domain like example.com). A list of 100+ becomes a set of
exact hosts, each also matching its www./non-www. twin. An empty list allows everything.

``run_domains`` is the policy (GHSA-vfcm-843v-w6v3: a run can only narrow, never widen); the
rest is the pattern arithmetic it needs, conservative wherever it is unsure.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from browser_use_mcp.errors import InvalidArgument

DOMAIN_SET_THRESHOLD = 100  # browser-use's BrowserProfile turns a list this long into a set
MAX_PATTERNS = DOMAIN_SET_THRESHOLD - 1  # patterns one allowed_domains may list
# characters in one pattern: a host name is at most 253, plus room for a scheme, "*." and a port
MAX_PATTERN_LENGTH = 300

Kind = Literal['any', 'host', 'sub', 'url', 'glob']


@dataclass(frozen=True)
class Pattern:
	text: str
	kind: Kind
	host: str = ''  # the host (host, url) or the domain (sub)
	scheme: str = ''  # url only

	@property
	def fixed_host(self) -> bool:
		"""A URL prefix that pins the host: something after the authority, or "x@evil.com" slips through."""
		return self.kind == 'url' and '/' in self.text.split('://', 1)[1]


def check_patterns(patterns: list[str]) -> list[str]:
	"""A requested allowed_domains list within its bounds, or ValueError saying which (found by fuzzing: a
	100,000-character pattern was taken, and every navigation of the session matched against it)."""
	if len(patterns) > MAX_PATTERNS:
		raise ValueError(
			f'at most {MAX_PATTERNS} patterns, not {len(patterns):,} (browser-use reads a list of {DOMAIN_SET_THRESHOLD} '
			'or more as exact hosts only); cover many hosts of one site with "*.example.com"'
		)
	for pattern in patterns:
		if len(pattern) > MAX_PATTERN_LENGTH:
			raise ValueError(
				f'a pattern is at most {MAX_PATTERN_LENGTH} characters (a host name is at most 253), not '
				f'{len(pattern):,}: {pattern[:60]!r}...; give a host ("example.com"), "*.example.com" or a URL prefix'
			)
	return patterns


def parse_pattern(text: str) -> Pattern:
	text = text.strip()
	if text == '*':
		return Pattern(text, 'any')
	if text.startswith('*.') and '*' not in text[2:] and '://' not in text:
		return Pattern(text, 'sub', text[2:].lower())
	if '*' in text:
		return Pattern(text, 'glob')
	if '://' in text:
		with contextlib.suppress(ValueError):
			parts = urlsplit(text)
			return Pattern(text, 'url', (parts.hostname or '').lower(), parts.scheme.lower())
		return Pattern(text, 'glob')
	return Pattern(text, 'host', text.lower())


def harden(text: str) -> str:
	"""A requested URL prefix with its host pinned and lower-cased (https://a.com -> https://a.com/)."""
	pattern = parse_pattern(text)
	if pattern.kind != 'url':
		return pattern.text
	scheme, rest = pattern.text.split('://', 1)
	authority, slash, path = rest.partition('/')
	return f'{scheme.lower()}://{authority.lower()}/{path}'


def _root(host: str) -> bool:
	return host.count('.') == 1


def _under(host: str, domain: str) -> bool:
	return host == domain or host.endswith('.' + domain)


def covers(outer: Pattern, inner: Pattern) -> bool:
	"""True only if every URL ``inner`` allows, ``outer`` allows too (conservative: unsure is False)."""
	if outer.kind == 'any':
		return True
	if outer.kind == inner.kind and outer.kind in ('host', 'sub') and outer.host == inner.host:
		return True
	if outer.text == inner.text:
		return True
	if inner.kind == 'url':
		if outer.kind == 'url':
			return inner.text.startswith(outer.text)
		if not inner.fixed_host:
			return False
		if outer.kind == 'host':
			return inner.host == outer.host or (_root(outer.host) and inner.host == 'www.' + outer.host)
		return outer.kind == 'sub' and inner.scheme in ('http', 'https') and _under(inner.host, outer.host)
	if inner.kind == 'host' and outer.kind == 'host':
		return _root(outer.host) and inner.host == 'www.' + outer.host
	if inner.kind == 'sub' and outer.kind == 'sub':
		return _under(inner.host, outer.host)
	return False


def _twin(host: str) -> str:
	return host[4:] if host.startswith('www.') else 'www.' + host


@dataclass(frozen=True)
class Hosts:
	"""The hosts a pattern can match: an exact set, or every host under one domain."""

	exact: frozenset[str] = frozenset()
	under: str | None = None


def _hosts(p: Pattern) -> Hosts | None:
	"""None when the pattern's hosts are unknown (globs, unpinned URL prefixes)."""
	if p.kind == 'host':
		return Hosts(frozenset({p.host, f'www.{p.host}'} if _root(p.host) else {p.host}))
	if p.fixed_host:
		return Hosts(frozenset({p.host}))
	if p.kind == 'sub':
		return Hosts(under=p.host)
	return None


def disjoint(a: Pattern, b: Pattern) -> bool:
	"""True only if no URL can match both patterns (conservative: unsure is False)."""
	x, y = _hosts(a), _hosts(b)
	if x is None or y is None:
		return False
	if x.under is not None and y.under is not None:
		return not (_under(x.under, y.under) or _under(y.under, x.under))
	if x.under is not None:
		x, y = y, x
	if y.under is not None:
		return not any(_under(h, y.under) for h in x.exact)
	return x.exact.isdisjoint(y.exact)


def _as_patterns(domains: Iterable[str], exact: bool) -> list[Pattern]:
	"""A profile's list as patterns; a set (browser-use's fast path) holds exact hosts and their www. twins."""
	if not exact:
		return [parse_pattern(d) for d in domains]
	return [Pattern(h, 'host', h.lower()) for d in domains for h in (d, _twin(d))]


def run_domains(
	configured: Iterable[str] | None, requested: list[str] | None, prohibited: Iterable[str] | None = None
) -> list[str] | None:
	"""The allow-list for one agent run, or None to leave the configured one untouched.

	GHSA-vfcm-843v-w6v3: an omitted or empty list never widens anything (the watchdog reads an
	empty list as "no restriction"). A non-empty one narrows: with a configured list the run gets
	only what both allow - each requested pattern that a configured one covers, each configured
	pattern that a requested one covers, and for a bare host inside a "*.d" the host over http(s)
	only. Without one it is used as given, minus any pattern that might reach a prohibited domain
	(browser-use ignores prohibited_domains once an allow-list is set). When unsure a pattern is
	dropped; nothing left is an error rather than a run that can go nowhere.
	"""
	wanted = [parse_pattern(harden(d)) for d in requested or [] if isinstance(d, str) and d.strip()]
	if not wanted:
		return None
	if configured:
		kept = _overlap(configured, wanted, requested or [])
	else:
		banned = _as_patterns(prohibited or [], isinstance(prohibited, set))
		kept = [p.text for p in wanted if all(disjoint(p, q) for q in banned)]
		if not kept:
			raise InvalidArgument(
				f'Every domain in allowed_domains {requested} may reach a domain this server prohibits; a run can only '
				'be narrowed, never widened. Pass domains clear of the prohibited list, or omit allowed_domains.'
			)
	if len(kept) >= DOMAIN_SET_THRESHOLD:
		# browser-use turns such a list into a set of exact hosts that also match their www. twins
		raise InvalidArgument(
			f'allowed_domains narrows to {len(kept)} patterns; keep it under {DOMAIN_SET_THRESHOLD} (use "*.domain" patterns).'
		)
	return kept


def _overlap(configured: Iterable[str], wanted: list[Pattern], requested: list[str]) -> list[str]:
	exact = isinstance(configured, set)
	allowed = [Pattern(d, 'host', d.lower()) if exact else parse_pattern(d) for d in configured]
	kept: list[str] = []

	def keep(text: str) -> None:
		if text not in kept:
			kept.append(text)

	def keep_web(host: str) -> None:
		# a bare host allows every scheme, "*.d" only http(s): their overlap is the host over http(s)
		keep(f'http://{host}/')
		keep(f'https://{host}/')

	for p in wanted:
		if any(covers(q, p) for q in allowed):
			keep(p.text)
		elif p.kind == 'host' and any(q.kind == 'sub' and _under(p.host, q.host) for q in allowed):
			keep_web(p.host)
	for q in allowed:
		twins = [q, Pattern(_twin(q.host), 'host', _twin(q.host))] if exact else [q]
		if all(any(covers(p, t) for p in wanted) for t in twins):
			keep(q.text)
		elif not exact and q.kind == 'host' and any(p.kind == 'sub' and _under(q.host, p.host) for p in wanted):
			keep_web(q.host)
	if not kept:
		shown = sorted(configured)[:20] if exact else list(configured)
		more = ' ...' if len(shown) < len(list(configured)) else ''
		raise InvalidArgument(
			f'None of allowed_domains {requested} is within the allow-list this server is configured with '
			f'({", ".join(shown)}{more}); a run can only be narrowed, never widened. Pass domains inside that list, '
			'or omit allowed_domains to use the list as it is.'
		)
	return kept
