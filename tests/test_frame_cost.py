"""benchmarks.frame_cost measures what it says, on a real Chromium: every way is sampled, the frames
arrive and are read, and the check for the next call's change sees a change that is there."""

from __future__ import annotations

import asyncio
import base64
import io

import psutil
import pytest
from PIL import Image

from benchmarks import frame_cost
from browser_use_mcp.browser import find_chromium


def _jpeg(color: tuple[int, int, int]) -> str:
	buffer = io.BytesIO()
	Image.new('RGB', (64, 40), color).save(buffer, 'JPEG', quality=60)
	return base64.b64encode(buffer.getvalue()).decode()


def test_the_change_is_told_from_the_page_as_left() -> None:
	assert frame_cost.shows_change(_jpeg((255, 0, 0)))
	assert not frame_cost.shows_change(_jpeg((255, 255, 255)))
	assert not frame_cost.shows_change(_jpeg((238, 238, 238)))


def test_every_way_is_measured_and_a_late_screenshot_shows_the_change() -> None:
	if find_chromium(headless_shell=True) is None:
		pytest.skip('no Chromium')
	before = {p.pid for p in psutil.Process().children(recursive=True)}
	out = asyncio.run(frame_cost.run(1, 2))
	assert set(out) == set(frame_cost.WAYS)
	for name, got in out.items():
		assert len(got['commands']) == 2 and all(ms > 0 for ms in got['commands']), name
		assert len(got['browser']) == len(got['renderer']) == 2, name
		if name == 'none':
			assert got['frame'] == [] and got['changed'] == []
		else:  # every ask got its frame, and the frame was read
			assert len(got['frame']) == len(got['changed']) == 2, name
	# a screenshot is taken at the next frame Chromium paints, after the change the third command made
	assert out['screenshot']['changed'] == [1.0, 1.0]
	assert '| cast 640 |' in frame_cost.show(out)
	assert {p.pid for p in psutil.Process().children(recursive=True)} <= before  # its Chromium is gone
