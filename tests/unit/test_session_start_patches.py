"""The two patches that cut the server's CPU per session start: ``profile_paths`` (browser-use's
default profile directory looked up once per environment) and ``factory_signatures`` (pydantic's
default-factory signature check made once per factory). Each test checks the cost is gone and the
answers are the dependency's own; the counts without the patch show what the test measures."""

from __future__ import annotations

import contextlib
import functools
import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, PrivateAttr

from browser_use_mcp import patches
from browser_use_mcp.patches import factory_signatures, profile_paths
from tests.fixtures import patches_active, patches_reverted


@pytest.fixture
def toggled() -> Iterator[Any]:
	"""``toggled(patch, on)``: the patch on (``patches_active``) or off (``patches_reverted``) for the
	test; afterwards as it was."""
	with contextlib.ExitStack() as stack:
		yield lambda patch, on: stack.enter_context(patches_active(patch) if on else patches_reverted(patch))


# -- profile_paths -------------------------------------------------------------------------------


@pytest.fixture
def counted_reads(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[int]:
	"""Each evaluation of browser-use's ``BROWSER_USE_DEFAULT_USER_DATA_DIR``, with its config
	directory in the test's own temp dir."""
	from browser_use.config import OldConfig

	monkeypatch.setenv('BROWSER_USE_CONFIG_DIR', str(tmp_path / 'config'))
	original = OldConfig.__dict__[profile_paths.CACHED]
	reads: list[int] = []

	def counting(self: Any) -> Any:
		reads.append(1)
		return original.fget(self)

	monkeypatch.setattr(OldConfig, profile_paths.CACHED, property(counting))
	return reads


def _profiles(tmp_path: Path, count: int = 3) -> list[Any]:
	from browser_use.browser import BrowserProfile

	return [
		BrowserProfile(headless=True, user_data_dir=tmp_path / f'user-{i}', downloads_path=tmp_path / 'dl') for i in range(count)
	]


@pytest.mark.parametrize('on', [True, False])
def test_a_profile_reads_the_default_profile_dir_once_per_environment(
	on: bool, toggled: Any, counted_reads: list[int], tmp_path: Path
) -> None:
	toggled(profile_paths.PATCH, on)
	_profiles(tmp_path)
	if on:
		assert 1 <= len(counted_reads) <= 2  # the first read for this environment (browser-use evaluates it twice)
	else:
		assert len(counted_reads) >= 20  # browser-use's own: twice per validation, a validation per field set


def test_the_answer_is_browser_uses_and_follows_the_environment(
	toggled: Any, counted_reads: list[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
	from browser_use import config
	from browser_use.browser import profile

	toggled(profile_paths.PATCH, True)
	assert isinstance(profile.CONFIG, profile_paths.ProfileConfig)
	assert profile.CONFIG.BROWSER_USE_DEFAULT_USER_DATA_DIR == config.CONFIG.BROWSER_USE_DEFAULT_USER_DATA_DIR
	assert profile.CONFIG.BROWSER_USE_DEFAULT_USER_DATA_DIR == (tmp_path / 'config' / 'profiles' / 'default').resolve()
	assert profile.CONFIG.IN_DOCKER == config.CONFIG.IN_DOCKER  # every other name read through
	monkeypatch.setenv('BROWSER_USE_CONFIG_DIR', str(tmp_path / 'other'))
	assert profile.CONFIG.BROWSER_USE_DEFAULT_USER_DATA_DIR == (tmp_path / 'other' / 'profiles' / 'default').resolve()
	assert (tmp_path / 'other' / 'profiles').is_dir()  # made on the first read, as browser-use makes it


def test_the_default_dir_with_another_chromium_is_still_moved_aside(
	toggled: Any, counted_reads: list[int], tmp_path: Path
) -> None:
	"""browser-use's validator keeps working through the proxy: its default profile directory used
	with a Chromium it did not install is renamed so the two never share it."""
	from browser_use.browser import BrowserProfile
	from browser_use.config import CONFIG

	toggled(profile_paths.PATCH, True)
	default = CONFIG.BROWSER_USE_DEFAULT_USER_DATA_DIR
	made = BrowserProfile(headless=True, user_data_dir=default, executable_path='/usr/bin/chromium', downloads_path=tmp_path)
	assert Path(made.user_data_dir).parent == default.parent
	assert Path(made.user_data_dir).name == 'default-chromium'


# -- factory_signatures --------------------------------------------------------------------------


def _takes_data(data: dict[str, Any]) -> dict[str, Any]:
	return {'seen': sorted(data)}


def _keyword_only(*, data: dict[str, Any]) -> int:
	return 0


class _FromData:
	def __init__(self, data: dict[str, Any]) -> None:
		self.data = data


FACTORIES: list[Any] = [dict, list, set, lambda: 1, _takes_data, _keyword_only, _FromData, functools.partial(_takes_data)]


@pytest.mark.parametrize('factory', FACTORIES, ids=lambda f: getattr(f, '__name__', type(f).__name__))
def test_the_answer_is_pydantics(factory: Any) -> None:
	from pydantic._internal import _fields

	original = patches.resolve('pydantic._internal._fields:takes_validated_data_argument')
	original = getattr(original, '__wrapped__', original)
	remember = factory_signatures.remembering(original)
	assert remember(factory) == original(factory)
	assert remember(default_factory=factory) == original(factory)  # resolve_default_value passes it by name
	assert _fields.takes_validated_data_argument(factory) == original(factory)


def test_a_function_or_class_is_asked_once_and_anything_else_every_time() -> None:
	asked: list[Any] = []

	def counting(factory: Any) -> bool:
		asked.append(factory)
		return False

	remember = factory_signatures.remembering(counting)
	partial = functools.partial(_takes_data)
	for _ in range(3):
		remember(_takes_data)
		remember(dict)
		remember(partial)
	assert asked.count(_takes_data) == 1
	assert asked.count(dict) == 1
	assert asked.count(partial) == 3


def test_a_factory_that_goes_away_takes_its_answer_with_it() -> None:
	remember = factory_signatures.remembering(lambda factory: False)

	def make() -> Any:
		return lambda: 1

	factory = make()
	remember(factory)
	assert len(remember.known) == 1  # type: ignore[attr-defined]
	del factory
	gc.collect()
	assert len(remember.known) == 0  # type: ignore[attr-defined]


class _Private(BaseModel):
	_plain: dict[str, int] = PrivateAttr(default_factory=dict)
	_items: list[int] = PrivateAttr(default_factory=list)
	_built: int = PrivateAttr(default_factory=lambda: 7)


@pytest.mark.parametrize('on', [True, False])
def test_models_read_each_factorys_signature_once(on: bool, toggled: Any, monkeypatch: pytest.MonkeyPatch) -> None:
	from pydantic._internal import _typing_extra

	toggled(factory_signatures.PATCH, on)
	reads: list[Any] = []
	original = _typing_extra.signature_no_eval

	def counting(f: Any, *a: Any, **k: Any) -> Any:
		reads.append(f)
		return original(f, *a, **k)

	monkeypatch.setattr(_typing_extra, 'signature_no_eval', counting)
	models = [_Private() for _ in range(5)]
	assert all(m._plain == {} and m._items == [] and m._built == 7 for m in models)
	assert models[0]._plain is not models[1]._plain  # each model its own default
	if on:
		assert len(reads) <= 3  # at most once per factory (an earlier test may have asked already)
	else:
		assert len(reads) >= 5 * 3  # pydantic's own: each factory at least once per model built


# -- bus_text --------------------------------------------------------------------------------------


class _Unwalkable(dict):
	"""An event history that fails when walked, as ``events_pending`` and the others walk it."""

	def values(self) -> Any:
		raise AssertionError('the event history was walked')


@pytest.mark.parametrize('on', [True, False])
async def test_a_bus_text_does_not_walk_its_event_history(on: bool, toggled: Any) -> None:
	from bubus import BaseEvent, EventBus

	from browser_use_mcp.patches import bus_text

	toggled(bus_text.PATCH, on)

	class Ping(BaseEvent[None]):
		pass

	bus = EventBus(name='TextBus')
	bus.on(Ping, lambda event: None)
	try:
		await bus.dispatch(Ping())
		assert len(bus.event_history) == 1
		if on:
			assert str(bus) == repr(bus) == 'TextBus🟢(➡️ 1 👂)'
		else:
			assert str(bus).startswith('TextBus🟢(⏳ 0 | ▶️ 0 | ✅ 1 ➡️ 1 👂)')  # bubus's own, counts and all
		history, bus.event_history = bus.event_history, _Unwalkable(bus.event_history)
		try:
			if on:
				assert 'TextBus' in str(bus) and 'TextBus' in f'{bus}'
			else:
				with pytest.raises(AssertionError, match='walked'):
					str(bus)
		finally:
			bus.event_history = history
	finally:
		await bus.stop(clear=True)
