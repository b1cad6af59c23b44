"""pydantic's check of a default factory's signature made once per factory, not once per instance.

Why: each time a pydantic model is built, every private attribute with a ``default_factory``
(browser-use's ``BrowserSession`` and its watchdogs have ~50 of them a session) asks
``takes_validated_data_argument`` whether its factory takes the validated data, twice, and the
answer is ``inspect.signature`` of the factory every time (for a builtin such as ``dict``, parsed
from its text signature). That is ~100 signature reads and 2-3 ms of the server's CPU per session,
on the event loop.

The patch swaps ``pydantic._internal._fields.takes_validated_data_argument`` (called through the
module's global by ``resolve_default_value`` and through ``_fields.`` by ``FieldInfo`` and
``ModelPrivateAttr``) for a function that keeps pydantic's answer per factory: for functions and
classes, weakly (a factory that goes away takes its answer with it); anything else (a bound
method, a ``functools.partial``) is asked every time, as before. A function's signature does not
change after it is made, so the answers are the ones pydantic gives. Schemas built before the patch
(pydantic's ``_generate_schema`` imported the function by name) keep calling the original.
"""

from __future__ import annotations

import inspect
import logging
import weakref
from collections.abc import Callable
from typing import Any

from browser_use_mcp.patches import Patch, Saved

logger = logging.getLogger(__name__)

PYDANTIC_VERSION = '2.13.5'
_FIELDS = 'pydantic._internal._fields'

_saved = Saved()


def remembering(original: Callable[[Any], bool]) -> Callable[..., bool]:
	"""``original`` with its answer kept per function or class (weakly)."""
	known: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()

	def takes_validated_data_argument(default_factory: Any) -> bool:
		if not (inspect.isfunction(default_factory) or isinstance(default_factory, type)):
			return original(default_factory)
		try:
			return known[default_factory]
		except KeyError:
			pass
		except TypeError:  # not hashable (a class with __eq__ and no __hash__ as its metaclass's)
			return original(default_factory)
		answer = original(default_factory)
		try:
			known[default_factory] = answer
		except TypeError:
			pass
		return answer

	takes_validated_data_argument.__wrapped__ = original  # type: ignore[attr-defined]
	takes_validated_data_argument.known = known  # type: ignore[attr-defined]  # (tests)
	return takes_validated_data_argument


def _apply() -> None:
	from pydantic._internal import _fields

	_saved.replace(_fields, 'takes_validated_data_argument', remembering(_fields.takes_validated_data_argument))


def _revert() -> None:
	_saved.restore()


PATCH = Patch(
	name='factory_signatures',
	title="a default factory's signature read once",
	changes='``pydantic._internal._fields.takes_validated_data_argument`` becomes a function that keeps its answer per '
	'factory function or class (weakly) and asks pydantic for anything else.',
	why="every model built reads the signature of each private attribute's default factory twice: ~100 "
	'``inspect.signature`` calls and 2-3 ms of CPU per session start, for answers that never change.',
	package='pydantic',
	versions=(PYDANTIC_VERSION,),
	sources={
		f'{_FIELDS}:takes_validated_data_argument': '7269cb52448ab144',
		f'{_FIELDS}:resolve_default_value': 'de32e6d187ca5460',
		'pydantic.fields:ModelPrivateAttr': '403c5c21d396da12',  # asks it through ``_fields.`` (a property: pinned whole)
		'pydantic._internal._model_construction:init_private_attributes': '868effa3fc042739',
	},
	replaces=(f'{_FIELDS}:takes_validated_data_argument',),
	switch='factory_signatures',
	when_refused="pydantic's own check: a default factory's signature read every time a model is built (2-3 ms of "
	'CPU per session start)',
	apply=_apply,
	revert=_revert,
	logger=logger.name,
	active_message=f'default factory signatures read once (pydantic {PYDANTIC_VERSION})',
	refused_message="default factory signatures read once disabled, keeping pydantic's check (2-3 ms more CPU per session start)",
)
