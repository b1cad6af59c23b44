"""Starting the real server as a subprocess and talking to it with the real MCP client."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
from mcp import Client, StdioServerParameters

from browser_use_mcp.browser import OWNER_ENV, OWNER_SWITCH

REPO = Path(__file__).resolve().parent.parent


def server_env(home: Path, **extra: str) -> dict[str, str]:
	"""An environment that keeps the server's every file inside ``home``."""
	env = {k: v for k, v in os.environ.items() if not k.startswith(('BROWSER_USE', 'OPENAI', 'ANTHROPIC', 'GOOGLE_API'))}
	env.update(
		HOME=str(home),
		XDG_CONFIG_HOME=str(home / '.config'),
		XDG_RUNTIME_DIR='',
		BROWSER_USE_CONFIG_DIR=str(home / '.config' / 'browseruse'),
		BROWSER_USE_MCP_STATE_DIR=str(home / 'state'),
		BROWSER_USE_HEADLESS='true',
		ANONYMIZED_TELEMETRY='false',
		BROWSER_USE_MCP_LOG_LEVEL='info',
		PYTHONPATH=str(REPO),
	)
	env.update(extra)
	return env


@dataclass
class Result:
	raw: Any
	text: str
	is_error: bool
	images: list[Any] = field(default_factory=list)
	texts: list[str] = field(default_factory=list)

	def json(self) -> Any:
		return json.loads(self.text)

	@property
	def structured(self) -> Any:
		return self.raw.structured_content


class Mcp:
	"""A connected client plus the server process behind it."""

	def __init__(self, client: Client, pid: int, home: Path) -> None:
		self.client = client
		self.pid = pid
		self.home = home

	async def call(self, name: str, timeout: float = 60, **arguments: Any) -> Result:
		raw = await self.client.call_tool(name, arguments, read_timeout_seconds=timeout)
		texts = [c.text for c in raw.content if getattr(c, 'type', None) == 'text']
		images = [c for c in raw.content if getattr(c, 'type', None) == 'image']
		return Result(raw, texts[0] if texts else '', bool(raw.is_error), images, texts)

	async def ok(self, name: str, **arguments: Any) -> Result:
		result = await self.call(name, **arguments)
		assert not result.is_error, f'{name}({arguments}) failed: {result.text}'
		return result

	def browsers(self) -> set[int]:
		return owned_processes(self.pid)


def _marker_pid(proc: psutil.Process) -> int | None:
	try:
		for arg in proc.cmdline():
			if arg.startswith(OWNER_SWITCH + '='):
				return int(arg.split('=', 1)[1].split(':')[0])
		token = proc.environ().get(OWNER_ENV)
	except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError, ValueError):
		return None
	if token:
		with contextlib.suppress(ValueError):
			return int(token.split(':')[0])
	return None


def _alive(proc: psutil.Process) -> bool:
	try:
		return proc.status() != psutil.STATUS_ZOMBIE
	except (psutil.NoSuchProcess, psutil.AccessDenied):
		return False


def owned_processes(server_pid: int) -> set[int]:
	"""PIDs of live browser processes launched by the server with this PID (found by marker or
	as descendants), whether or not the server is still alive."""
	pids: set[int] = set()
	with contextlib.suppress(psutil.NoSuchProcess):
		for child in psutil.Process(server_pid).children(recursive=True):
			if _alive(child):
				pids.add(child.pid)
	for proc in psutil.process_iter():
		if proc.pid in pids or not _alive(proc):
			continue
		if _marker_pid(proc) == server_pid:
			pids.add(proc.pid)
	return pids


def chromium_pids(pids: set[int]) -> set[int]:
	out = set()
	for pid in pids:
		with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
			if 'chrom' in psutil.Process(pid).name().lower():
				out.add(pid)
	return out


def wait_until(predicate: Any, timeout: float = 10.0, interval: float = 0.05) -> bool:
	deadline = time.monotonic() + timeout
	while time.monotonic() < deadline:
		if predicate():
			return True
		time.sleep(interval)
	return bool(predicate())


def _find_server_pid(before: set[int]) -> int:
	me = psutil.Process()
	for _ in range(200):
		for child in me.children(recursive=False):
			if child.pid in before:
				continue
			with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
				if 'browser_use_mcp' in ' '.join(child.cmdline()):
					return child.pid
		time.sleep(0.01)
	raise RuntimeError('server process not found')


@contextlib.asynccontextmanager
async def running_server(home: Path, *args: str, env: dict[str, str] | None = None) -> AsyncIterator[Mcp]:
	"""Start ``python -m browser_use_mcp`` over stdio; on exit make sure it and its browsers are gone."""
	home.mkdir(parents=True, exist_ok=True)
	params = StdioServerParameters(command=sys.executable, args=['-m', 'browser_use_mcp', *args], env=env or server_env(home))
	before = {c.pid for c in psutil.Process().children()}
	client = Client(params, mode='legacy', read_timeout_seconds=120)
	pid = None
	try:
		async with client:
			pid = _find_server_pid(before)
			yield Mcp(client, pid, home)
	finally:
		if pid is not None:
			leftovers = owned_processes(pid)
			with contextlib.suppress(psutil.NoSuchProcess):
				proc = psutil.Process(pid)
				with contextlib.suppress(psutil.TimeoutExpired):
					proc.wait(10)
				if proc.is_running():
					proc.kill()
			for leftover in leftovers:
				with contextlib.suppress(psutil.NoSuchProcess):
					psutil.Process(leftover).kill()


class Background:
	"""Hold an async context open in its own task, so fixtures can set up and tear down from
	different tasks (anyio cancel scopes must exit in the task that entered them)."""

	def __init__(self, cm: Any) -> None:
		self._cm = cm
		self._stop = None
		self._task = None

	async def __aenter__(self) -> Any:
		import asyncio

		ready: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
		self._stop = asyncio.Event()

		async def hold() -> None:
			try:
				async with self._cm as value:
					ready.set_result(value)
					await self._stop.wait()
			except BaseException as exc:
				if not ready.done():
					ready.set_exception(exc)
				else:
					raise

		self._task = asyncio.create_task(hold())
		return await ready

	async def __aexit__(self, *exc: object) -> None:
		self._stop.set()
		await self._task
