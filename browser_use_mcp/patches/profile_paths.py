"""Profiles that look up browser-use's default profile directory once, not on every field set.

Why: ``BrowserProfile`` validates every assignment, and each validation runs its after-validators
again, among them ``warn_user_data_dir_non_default_version``, which compares the profile's
``user_data_dir`` with ``CONFIG.BROWSER_USE_DEFAULT_USER_DATA_DIR``. browser-use's ``CONFIG``
builds a fresh configuration object for every attribute read and evaluates the property twice
(``hasattr`` then ``getattr``); each evaluation resolves four paths (an ``lstat`` per path
component) and makes the config directories again. Building one session's profile sets about
25 fields: ~870 system calls and 3-6 ms of the server's CPU per session, on the event loop.

The patch swaps the name ``CONFIG`` in ``browser_use.browser.profile`` for ``ProfileConfig``, which
answers ``BROWSER_USE_DEFAULT_USER_DATA_DIR`` from what browser-use's ``CONFIG`` answered for the
same environment (``BROWSER_USE_CONFIG_DIR``, ``XDG_CONFIG_HOME``, ``HOME``) and working directory,
and passes every other read through to browser-use's ``CONFIG`` unchanged.

What is lost: browser-use made its config directories again on each read; with the patch they are
made on the first read for an environment, so a directory deleted while the server runs is not
made again by the next profile (the server never uses browser-use's default profile directory:
each session has directories of its own).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from browser_use_mcp.patches import Patch, Saved

logger = logging.getLogger(__name__)

BROWSER_USE_VERSION = '0.13.14'
_PROFILE = 'browser_use.browser.profile'
_CONFIG = 'browser_use.config'
CACHED = 'BROWSER_USE_DEFAULT_USER_DATA_DIR'
ENVIRONMENT = ('BROWSER_USE_CONFIG_DIR', 'XDG_CONFIG_HOME', 'HOME')  # what browser-use's answer depends on
_MOST_KEPT = 16  # environments remembered at most (a server has one)

_saved = Saved()


class ProfileConfig:
	"""browser-use's ``CONFIG`` as ``browser_use.browser.profile`` reads it: the default profile
	directory remembered per environment, everything else read from ``CONFIG`` itself."""

	def __init__(self, real: Any) -> None:
		self._real = real
		self._known: dict[tuple[str | None, ...], Path] = {}

	def __getattr__(self, name: str) -> Any:
		if name != CACHED:
			return getattr(self._real, name)
		try:
			key = (*(os.environ.get(k) for k in ENVIRONMENT), os.getcwd())
		except OSError:  # the working directory is gone: browser-use's own answer, every time
			return getattr(self._real, name)
		path = self._known.get(key)
		if path is None:
			path = getattr(self._real, name)
			if len(self._known) >= _MOST_KEPT:
				self._known.clear()
			self._known[key] = path
		return path


def _checks() -> list[str]:
	from browser_use import config
	from browser_use.browser import profile

	problems = []
	current = vars(profile).get('CONFIG')
	if isinstance(current, ProfileConfig):  # applied already: what it stands in for
		current = current._real
	if not isinstance(current, config.Config):
		problems.append(f"{_PROFILE}.CONFIG is no longer browser-use's Config")
	if not isinstance(getattr(config.OldConfig, CACHED, None), property):
		problems.append(f'OldConfig.{CACHED} is no longer a property')
	return problems


def _apply() -> None:
	from browser_use.browser import profile

	_saved.replace(profile, 'CONFIG', ProfileConfig(profile.CONFIG))


def _revert() -> None:
	_saved.restore()


PATCH = Patch(
	name='profile_paths',
	title='the default profile directory looked up once',
	changes='the name ``CONFIG`` in ``browser_use.browser.profile`` becomes a proxy that remembers '
	'``BROWSER_USE_DEFAULT_USER_DATA_DIR`` per environment and working directory and reads everything else '
	"from browser-use's ``CONFIG``.",
	why="a profile's validators compare its user_data_dir with that directory after every field set, and browser-use "
	'resolves four paths and makes its config directories for each read: ~870 system calls and 3-6 ms of CPU per '
	'session.',
	package='browser-use',
	versions=(BROWSER_USE_VERSION,),
	sources={
		f'{_PROFILE}:BrowserProfile.warn_user_data_dir_non_default_version': '533958b0b0df289d',
		f'{_CONFIG}:Config.__getattr__': '3e17c4d94cf531e9',
		f'{_CONFIG}:OldConfig': '0afe05fd81d23789',  # its path properties (inspect cannot read a property alone)
	},
	replaces=(f'{_PROFILE}:CONFIG',),
	switch='profile_paths',
	when_refused="browser-use's own lookups: the config directories' paths resolved, and made, about 25 times per "
	'session (3-6 ms of CPU)',
	apply=_apply,
	revert=_revert,
	checks=_checks,
	logger=logger.name,
	active_message=f"profile paths looked up once (browser-use {BROWSER_USE_VERSION}): a session's profile no longer "
	'resolves the config directories on every field set',
	refused_message="profile paths looked up once disabled, keeping browser-use's lookups (3-6 ms more CPU per session)",
)
