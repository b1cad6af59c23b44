"""browser-use's paint-order filter asks only the rectangles near the one it checks.

Why: ``DOMTreeSerializer`` hides an element that is entirely covered by opaque elements painted
above it (``PaintOrderRemover.calculate_paint_order``, browser-use 0.13.14). The covering area is
a ``RectUnionPure``, a list of disjoint rectangles; ``contains`` and ``add`` subtract every one of
them from the rectangle they check, one Python call per pair. On the synthetic heavy page that
was ~40 % of the serializer's time in a profile (~2,000 checks against up to a few thousand
rectangles): ~1 M ``intersects``/``contains`` calls for one state.

``IndexedRectUnion`` is the same class with an index: every rectangle is also filed under the
horizontal bands (``BAND`` px high) it spans, and ``contains``/``add`` look only at the
rectangles filed under the bands the checked rectangle spans, in the order they were added. A
rectangle that does not intersect the checked one changes nothing in either method (the pieces
are all inside the checked rectangle, and a rectangle that does not intersect it neither contains
nor splits them), so the answers, the pieces added and their order are exactly the original's,
and with them the ``_MAX_RECTS`` cap (``tests/test_offload_state.py`` checks it on random
rectangles against the original).

It applies wherever browser-use serializes, in this process and in the page-state worker
(``offload_state`` applies the same patch there).
"""

from __future__ import annotations

import logging
from typing import Any

from browser_use_mcp.patches import Patch, Saved

logger = logging.getLogger(__name__)

BROWSER_USE_VERSION = '0.13.14'
_MODULE = 'browser_use.dom.serializer.paint_order'
BAND = 256.0  # px: a band's height
MAX_BANDS = 512  # a rectangle spanning more (131,072 px) is compared with every other one, as before

_saved = Saved()


def indexed(original: type) -> type:
	"""A subclass of browser-use's ``RectUnionPure`` with a band index (see the module docstring)."""

	class IndexedRectUnion(original):  # type: ignore[valid-type, misc]
		__slots__ = ('_bands', '_everywhere')

		def __init__(self) -> None:
			super().__init__()
			self._bands: dict[int, list[int]] = {}
			self._everywhere: list[int] = []  # pieces whose bands cannot be told: near every rectangle

		@staticmethod
		def _span(r: Any) -> range | None:
			"""The bands ``r`` spans; None when they cannot be told (not finite) or are too many."""
			try:
				first, last = int(r.y1 // BAND), int(r.y2 // BAND)
			except (OverflowError, ValueError):
				return None
			return range(first, last + 1) if last - first < MAX_BANDS else None

		def _near(self, r: Any) -> list[Any]:
			"""The rectangles that may intersect ``r``, in the order they were added."""
			rects = self._rects
			span = self._span(r)
			if span is None or len(span) > len(rects):  # looking up its bands would cost more than a scan
				return list(rects)
			found: set[int] = set(self._everywhere)
			bands = self._bands
			for band in span:
				filed = bands.get(band)
				if filed:
					found.update(filed)
			return [rects[i] for i in sorted(found)]

		def contains(self, r: Any) -> bool:
			if not self._rects:
				return False
			stack = [r]
			for s in self._near(r):
				new_stack = []
				for piece in stack:
					if s.contains(piece):
						continue
					if piece.intersects(s):
						new_stack.extend(self._split_diff(piece, s))
					else:
						new_stack.append(piece)
				if not new_stack:
					return True
				stack = new_stack
			return False

		def add(self, r: Any) -> bool:
			if len(self._rects) >= self._MAX_RECTS:
				return False
			if self.contains(r):
				return False
			pending = [r]
			for s in self._near(r):
				new_pending = []
				for piece in pending:
					if piece.intersects(s):
						new_pending.extend(self._split_diff(piece, s))
					else:
						new_pending.append(piece)
				pending = new_pending
			first = len(self._rects)
			self._rects.extend(pending)
			bands = self._bands
			for i, piece in enumerate(pending, first):
				span = self._span(piece)
				if span is None:
					self._everywhere.append(i)
					continue
				for band in span:
					bands.setdefault(band, []).append(i)
			return True

	IndexedRectUnion.__qualname__ = IndexedRectUnion.__name__ = 'IndexedRectUnion'
	return IndexedRectUnion


def _apply() -> None:
	from browser_use.dom.serializer import paint_order

	_saved.replace(paint_order, 'RectUnionPure', indexed(paint_order.RectUnionPure))


def _revert() -> None:
	_saved.restore()


PATCH = Patch(
	name='paint_order_index',
	title='paint-order filter with a spatial index',
	changes="the name ``RectUnionPure`` in browser-use's ``paint_order`` module becomes a subclass whose ``contains`` "
	'and ``add`` look only at the rectangles filed under the horizontal bands the checked rectangle spans (same '
	'answers, same pieces in the same order).',
	why="checking each element against every rectangle of the covering area was ~40 % of the serializer's time on a "
	'~5,000-element page (~1 M rectangle comparisons per state).',
	package='browser-use',
	versions=(BROWSER_USE_VERSION,),
	sources={
		f'{_MODULE}:RectUnionPure': '3402ba90acdbb52d',
		f'{_MODULE}:Rect': '6fdcc10f94bf384b',
		f'{_MODULE}:PaintOrderRemover.calculate_paint_order': '32598f5f091ff83a',
	},
	replaces=(f'{_MODULE}:RectUnionPure',),
	switch='paint_order_index',
	when_refused="browser-use's paint-order filter compares every pair: the serializer is slower on large pages",
	apply=_apply,
	revert=_revert,
	logger=logger.name,
	refused_message="browser-use's paint-order filter kept (slower on large pages)",
)
