"""The focused tab's screencast: the frames a recording's screenshots and video are made of.

Chromium pushes a JPEG (``Page.screencastFrame``) each time it paints the tab, already scaled
down to ``FRAME_WIDTH`` px wide (no image work in the server: a frame's base64 is decoded only
when it is kept). The recorder takes its screenshots from here: after a page-changing call it asks
for the first frame painted from then on and never waits for it on the call's path (without a
video the cast is started for that one frame, and stopped once it came). With the ``video`` kind
the cast runs all along and its frames are piped to an
ffmpeg process (the binary of the ``imageio-ffmpeg`` wheel) that encodes them to WebM (VP8,
realtime) in its own process: at most ``VIDEO_FPS`` frames a second, its file capped with
ffmpeg's ``-fs``, frames dropped while ffmpeg is behind (its pipe holds ``PIPE_CAP`` bytes at
most). A frame's time is when it arrived (``-use_wallclock_as_timestamps``), so a still page
costs nothing and plays as long as it was shown.

The cast follows the session's focused tab: each recorded call checks which tab that is (no
round trip when it did not change) and moves the cast when it did.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from browser_use_mcp.patches import internals

logger = logging.getLogger('browser_use_mcp.screencast')

FRAME_WIDTH = 640  # px: frames are scaled down by Chromium to this width at most
FRAME_HEIGHT = 480  # px: and this height
FRAME_QUALITY = 60  # JPEG quality
VIDEO_FPS = 10  # frames a second written to the video at most
VIDEO_BITRATE = '600k'
PIPE_CAP = 4 * 1024 * 1024  # bytes waiting for ffmpeg; past it frames are dropped
STEP_BOUND = 2.0  # s a CDP command of the cast may take
CLOSE_BOUND = 10.0  # s ffmpeg may take to finish the file once its input ended

FrameListener = Callable[[str], None]


def ffmpeg_exe() -> str:
	"""The ffmpeg binary of the imageio-ffmpeg wheel (or $IMAGEIO_FFMPEG_EXE)."""
	import imageio_ffmpeg

	return imageio_ffmpeg.get_ffmpeg_exe()


class Screencast:
	"""One session's cast of its focused tab, and its video when asked."""

	def __init__(self, video: Path | None = None, video_cap: int = 0) -> None:
		self.video = video
		self.video_cap = video_cap
		self.root: Any = None  # the root CDP client hooked
		self.target: str | None = None  # CDP session of the tab cast
		self.frame: str | None = None  # the latest frame, base64 JPEG
		self.frames = 0  # frames received
		self.listeners: list[tuple[float, FrameListener]] = []  # (since, listener): called once with a frame painted after since
		self.continuous = video is not None  # a video needs every frame; screenshots only one after a call
		self.running = False  # Chromium is sending frames
		self.proc: asyncio.subprocess.Process | None = None
		self.video_frames = 0
		self.video_dropped = 0
		self.video_error: str | None = None  # why the video stopped early
		self._fed = 0.0
		self._stopped = False
		self._tasks: set[asyncio.Task[Any]] = set()

	@property
	def casting(self) -> bool:
		return self.target is not None and not self._stopped

	async def follow(self, state: Any) -> bool:
		"""Cast the session's focused tab (start, or move the cast after a tab switch); True when casting.
		Never raises; a round trip only when the focused tab changed."""
		if self._stopped:
			return False
		try:
			root = internals.root_cdp_client(state.browser_session)
			if root is None:
				return False
			if root is not self.root:  # a new connection (or the first call): hook its frames
				internals.hook_cdp_event(root, 'Page.screencastFrame', self._on_frame)
				self.root, self.target = root, None
			from browser_use_mcp.tools.common import cdp_page

			cdp = await asyncio.wait_for(cdp_page(state), STEP_BOUND)
			if cdp.session_id == self.target:
				return True
			old, self.target = self.target, cdp.session_id
			if old is not None and self.running:
				self._spawn(root.send_raw('Page.stopScreencast', {}, old))
				self.running = False
			if self.continuous:
				await asyncio.wait_for(root.send_raw('Page.startScreencast', self.params(), cdp.session_id), STEP_BOUND)
				self.running = True
				if self.proc is None and self.video_error is None:
					await self._start_video()
			elif self.listeners:  # waiting for a frame of the tab left: ask the new one
				self._ask()
			return True
		except (Exception, TimeoutError) as exc:
			logger.info('the screencast could not follow the focused tab: %s', str(exc)[:200] or type(exc).__name__)
			self.target = None
			return False

	@staticmethod
	def params() -> dict[str, Any]:
		return {
			'format': 'jpeg',
			'quality': FRAME_QUALITY,
			'maxWidth': FRAME_WIDTH,
			'maxHeight': FRAME_HEIGHT,
			'everyNthFrame': 1,
		}

	def next_frame(self, listener: FrameListener) -> None:
		"""Call ``listener`` with the first frame painted from now on. Without a video the cast runs
		only until that frame came: started here without waiting for Chromium's answer."""
		self.listeners.append((time.time(), listener))
		if not self.running:
			self._ask()

	def _ask(self) -> None:
		if self.root is not None and self.target is not None and not self._stopped:
			self.running = True
			self._spawn(self.root.send_raw('Page.startScreencast', self.params(), self.target))

	def _spawn(self, coro: Any) -> None:
		task = asyncio.get_running_loop().create_task(coro)
		self._tasks.add(task)
		task.add_done_callback(self._done)

	def _done(self, task: asyncio.Task[Any]) -> None:
		self._tasks.discard(task)
		if not task.cancelled() and task.exception() is not None:
			logger.debug('screencast command failed: %s', task.exception())

	def _on_frame(self, params: Any, session_id: str | None = None) -> None:
		"""A painted frame (runs inside cdp-use's dispatch: never raises, never blocks)."""
		try:
			if not isinstance(params, dict) or self._stopped or self.root is None:
				return
			self._spawn(self.root.send_raw('Page.screencastFrameAck', {'sessionId': params.get('sessionId')}, session_id))
			if session_id != self.target or not isinstance(params.get('data'), str):
				return  # a tab the cast has left
			self.frame = params['data']
			self.frames += 1
			painted = (params.get('metadata') or {}).get('timestamp')
			now = time.time()
			painted = painted if isinstance(painted, int | float) and abs(painted - now) < 2 else now
			ready = [f for since, f in self.listeners if painted >= since - 0.005]  # painted after the call ended
			self.listeners = [(since, f) for since, f in self.listeners if painted < since - 0.005]
			for listener in ready:
				listener(self.frame)
			if self.proc is not None:
				self._feed(self.frame)
			if not self.continuous and not self.listeners and self.running:  # the frame asked for came: stop
				self.running = False
				self._spawn(self.root.send_raw('Page.stopScreencast', {}, self.target))
		except Exception:
			logger.exception('screencast frame failed')

	# -- video --

	async def _start_video(self) -> None:
		assert self.video is not None
		try:
			exe = await asyncio.to_thread(ffmpeg_exe)
			w, h = FRAME_WIDTH, FRAME_HEIGHT
			log = await asyncio.to_thread(open, self.video.with_suffix('.log'), 'ab')
			try:
				self.proc = await asyncio.create_subprocess_exec(
					exe,
					'-hide_banner',
					'-loglevel',
					'error',
					'-use_wallclock_as_timestamps',
					'1',
					'-f',
					'mjpeg',
					'-i',
					'pipe:0',
					'-vf',
					f'scale={w}:{h}:force_original_aspect_ratio=decrease,pad={w}:{h}:(ow-iw)/2:(oh-ih)/2,format=yuv420p',
					'-c:v',
					'libvpx',
					'-deadline',
					'realtime',
					'-cpu-used',
					'8',
					'-b:v',
					VIDEO_BITRATE,
					'-threads',
					'1',
					'-fps_mode',
					'vfr',
					'-fs',
					str(max(1024, self.video_cap)),
					'-y',
					str(self.video),
					stdin=asyncio.subprocess.PIPE,
					stdout=asyncio.subprocess.DEVNULL,
					stderr=log,
				)
			finally:
				log.close()
			with contextlib.suppress(OSError):  # yield the CPU to the browsers and the server (no preexec_fn: threads)
				os.setpriority(os.PRIO_PROCESS, self.proc.pid, 10)
		except (Exception, TimeoutError) as exc:
			self.video_error = f'could not start ffmpeg: {str(exc)[:200] or type(exc).__name__}'
			logger.warning('video not recorded: %s', self.video_error)

	def _feed(self, frame: str) -> None:
		proc = self.proc
		assert proc is not None and proc.stdin is not None
		now = time.monotonic()
		if now - self._fed < 1 / VIDEO_FPS:
			return  # the frame-rate cap: the next painted frame will show it
		if proc.returncode is not None or proc.stdin.is_closing():
			self._video_ended()
			return
		if proc.stdin.transport.get_write_buffer_size() > PIPE_CAP:
			self.video_dropped += 1
			return
		self._fed = now
		try:
			proc.stdin.write(base64.b64decode(frame))
			self.video_frames += 1
		except (OSError, RuntimeError) as exc:
			self.video_error = f'ffmpeg stopped: {exc}'
			self._video_ended()

	def _video_ended(self) -> None:
		"""ffmpeg exited: its size cap (-fs) reached, or the disk full."""
		if self.video_error is None:
			self.video_error = 'ffmpeg stopped early (its size cap, or the disk full)'
		proc, self.proc = self.proc, None
		if proc is not None and proc.stdin is not None:
			proc.stdin.close()
			self._spawn(proc.wait())

	async def stop(self) -> None:
		"""Stop casting and finish the video file (bounded; ffmpeg is killed past CLOSE_BOUND)."""
		if self._stopped:
			return
		self._stopped = True
		self.listeners.clear()
		if self.root is not None and self.target is not None and self.running:
			self.running = False
			with contextlib.suppress(Exception, TimeoutError):
				await asyncio.wait_for(self.root.send_raw('Page.stopScreencast', {}, self.target), STEP_BOUND)
		proc, self.proc = self.proc, None
		if proc is not None:
			if proc.stdin is not None:
				proc.stdin.close()
			try:
				await asyncio.wait_for(proc.wait(), CLOSE_BOUND)
			except TimeoutError:
				proc.kill()
				await proc.wait()
				self.video_error = self.video_error or f'ffmpeg did not finish within {CLOSE_BOUND:g} s'
			if proc.returncode not in (0, None) and self.video_error is None:
				self.video_error = f'ffmpeg exited with {proc.returncode}'
		if self.video is not None and self.video_cap:
			try:
				size = (await asyncio.to_thread(self.video.stat)).st_size
			except OSError:
				size = 0
			if size >= self.video_cap * 0.9:  # ffmpeg's -fs ended the file early (it exits 0 then)
				self.video_error = f'video stopped at its size cap of {self.video_cap} bytes (half the recording size cap)'
		for task in list(self._tasks):
			task.cancel()
