"""What one screenshot costs the commands sent beside it, in Chromium alone (no server).

``python -m benchmarks.frame_cost [--rounds N]``: one headless shell (the server's browser) with a
light page; each sample first changes the page (as an action does), waits 150 ms, then asks for a
frame the way the flight recorder can, and at once sends three commands the tab's renderer answers
(``Page.getFrameTree``, then two ``Runtime.evaluate``, the last of which changes the page), one after
another, as a click's first steps read the page and then change it. Prints, per way of asking, the
p50 time of those three commands, when the frame arrived, how many frames show that change (a frame
that does is not the page as the last call left it), and the CPU the browser and renderer processes
spent per sample (from ``/proc``, in 10 ms ticks, so a mean over many samples). Ways alternate
within each round, so a busy machine hurts all alike.

- ``none``: no frame, the three commands alone;
- ``cast 640`` / ``cast 320``: ``Page.startScreencast`` (JPEG, at most that many px wide), the
  frame the recorder takes; the cast is stopped once its first frame came;
- ``screenshot``: ``Page.captureScreenshot`` of the viewport scaled to 640 px (JPEG).

This is the floor of what a frame taken on a call's path costs that call: in the server, the same
commands also wait for the server's own Python, and the machine's two cores are shared with it.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import io
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
from cdp_use import CDPClient
from PIL import Image

from browser_use_mcp.browser import find_chromium
from harness.servers import user_chromium

ARGS = ['--disable-gpu', '--no-zygote']  # user_chromium adds --no-sandbox and a dead proxy
PAGE = 'data:text/html,' + (
	'<!doctype html><title>shop</title><h1>Shop</h1>'
	+ ''.join(f'<p>Paragraph {i} with <a href="%23{i}">link {i}</a> and some text.</p>' for i in range(30))
	+ '<form><input name=q><button type=button>Go</button></form>'
)
LEAVE = "document.body.style.background = 'white'"  # the page as a call leaves it
CHANGE = "document.body.style.background = 'red'"  # the next call's change
WAYS: dict[str, tuple[str, dict[str, Any]] | None] = {
	'none': None,
	'cast 640': ('Page.startScreencast', {'format': 'jpeg', 'quality': 60, 'maxWidth': 640, 'maxHeight': 400}),
	'cast 320': ('Page.startScreencast', {'format': 'jpeg', 'quality': 60, 'maxWidth': 320, 'maxHeight': 200}),
	'screenshot': (
		'Page.captureScreenshot',
		{'format': 'jpeg', 'quality': 60, 'clip': {'x': 0, 'y': 0, 'width': 1280, 'height': 800, 'scale': 0.5}},
	),
}


def cpu_ms(process: psutil.Process) -> float:
	"""user + system CPU of one process, all its threads, in ms (counted in the kernel's 10 ms ticks)."""
	times = process.cpu_times()
	return (times.user + times.system) * 1000


def renderer_of(browser: psutil.Process) -> psutil.Process:
	for child in browser.children():
		if '--type=renderer' in child.cmdline():
			return child
	raise RuntimeError('the browser has no renderer process')


def shows_change(data: str) -> bool:
	"""Whether a frame shows the red the next call painted (the top left corner: the body's margin)."""
	image = Image.open(io.BytesIO(base64.b64decode(data))).convert('RGB')
	red, green, _ = image.getpixel((2, 2))
	return red > 150 and green < 100


async def sample(
	client: CDPClient, sid: str, way: tuple[str, dict[str, Any]] | None, frames: list[tuple[float, str]]
) -> tuple[float, float | None, bool | None]:
	"""The three commands' time and the frame's arrival, in ms from the ask, and whether the frame
	shows the change the last command made."""
	await client.send_raw('Runtime.evaluate', {'expression': LEAVE}, sid)
	await asyncio.sleep(0.15)
	frames.clear()
	started = time.monotonic()
	asked = asyncio.ensure_future(client.send_raw(way[0], way[1], sid)) if way else None
	await client.send_raw('Page.getFrameTree', {}, sid)
	await client.send_raw('Runtime.evaluate', {'expression': '1'}, sid)
	await client.send_raw('Runtime.evaluate', {'expression': CHANGE}, sid)
	commands = (time.monotonic() - started) * 1000
	frame: float | None = None
	data: str | None = None
	if way is not None and way[0] == 'Page.startScreencast':
		deadline = started + 2
		while not frames and time.monotonic() < deadline:
			await asyncio.sleep(0.002)
		if frames:
			frame, data = (frames[0][0] - started) * 1000, frames[0][1]
		await client.send_raw('Page.stopScreencast', {}, sid)
	elif asked is not None:
		data = (await asked)['data']
		frame = (time.monotonic() - started) * 1000
	if asked is not None:
		await asked
	await asyncio.sleep(0.1)  # the frame's last work (encoding, the answer) lands in this sample's CPU
	return commands, frame, shows_change(data) if data is not None else None


async def run(rounds: int, per_round: int) -> dict[str, dict[str, list[float]]]:
	executable = find_chromium(headless_shell=True)
	if executable is None:
		raise SystemExit('no Chromium found: run ./scripts/setup.sh')
	out: dict[str, dict[str, list[float]]] = {
		w: {'commands': [], 'frame': [], 'changed': [], 'browser': [], 'renderer': []} for w in WAYS
	}
	with tempfile.TemporaryDirectory(prefix='frame-cost-') as home:
		profile = Path(home) / 'profile'
		with user_chromium(profile, *ARGS, executable=executable) as (address, proc):
			path = (profile / 'DevToolsActivePort').read_text().split()[1]
			client = CDPClient(address.replace('http://', 'ws://', 1) + path)
			await client.start()
			try:
				frames: list[tuple[float, str]] = []

				def on_frame(params: Any, session_id: str | None = None) -> None:
					frames.append((time.monotonic(), params['data']))
					asyncio.ensure_future(
						client.send_raw('Page.screencastFrameAck', {'sessionId': params['sessionId']}, session_id)
					)

				client.register.Page.screencastFrame(on_frame)
				targets = await client.send_raw('Target.getTargets', {})
				target = next(t['targetId'] for t in targets['targetInfos'] if t['type'] == 'page')
				sid = (await client.send_raw('Target.attachToTarget', {'targetId': target, 'flatten': True}))['sessionId']
				await client.send_raw('Page.enable', {}, sid)
				size = {'width': 1280, 'height': 800, 'deviceScaleFactor': 1, 'mobile': False}
				await client.send_raw('Emulation.setDeviceMetricsOverride', size, sid)
				await client.send_raw('Page.navigate', {'url': PAGE}, sid)
				await asyncio.sleep(1.0)
				browser = psutil.Process(proc.pid)
				renderer = renderer_of(browser)
				for _ in range(rounds):
					for name, way in WAYS.items():
						for _ in range(per_round):
							browser_before, renderer_before = cpu_ms(browser), cpu_ms(renderer)
							commands, frame, changed = await sample(client, sid, way, frames)
							out[name]['commands'].append(commands)
							if frame is not None:
								out[name]['frame'].append(frame)
							if changed is not None:
								out[name]['changed'].append(float(changed))
							out[name]['browser'].append(cpu_ms(browser) - browser_before)
							out[name]['renderer'].append(cpu_ms(renderer) - renderer_before)
			finally:
				await client.stop()
	return out


def show(out: dict[str, dict[str, list[float]]]) -> str:
	lines = [
		'### One frame beside three renderer commands (Chromium alone, p50; CPU a mean per sample)',
		'',
		'| way | 3 commands ms | frame came at ms | frames showing the change | browser CPU ms | renderer CPU ms |',
		'|---|---|---|---|---|---|',
	]
	for name, got in out.items():
		frame = f'{statistics.median(got["frame"]):.1f}' if got['frame'] else '-'
		changed = f'{sum(got["changed"]):.0f} of {len(got["changed"])}' if got['changed'] else '-'
		lines.append(
			f'| {name} | {statistics.median(got["commands"]):.1f} | {frame} | {changed} | '
			f'{statistics.fmean(got["browser"]):.1f} | {statistics.fmean(got["renderer"]):.1f} |'
		)
	return '\n'.join(lines)


def main() -> None:
	parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
	parser.add_argument('--rounds', type=int, default=4, help='rounds; each takes every way in turn (default 4)')
	parser.add_argument('--per-round', type=int, default=15, help='samples of each way per round (default 15)')
	args = parser.parse_args()
	print(show(asyncio.run(run(args.rounds, args.per_round))))


if __name__ == '__main__':
	main()
