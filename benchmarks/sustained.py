"""Sustained load: ``python -m benchmarks.sustained [--agents N] [--seconds S] [--no-peers] [--corpus]``.

``--agents`` agents at once (16 by default) each loop *read the page, click a button that does not
navigate* for ``--seconds`` (20) against one server: ours (contexts of shared Chromiums,
``browser_get_state`` + ``browser_click``) and, when ``scripts/peers.sh`` installed them, the peers
(``@playwright/mcp``: a connection per agent, ``browser_snapshot`` + ``browser_click``;
``chrome-devtools-mcp``: an isolated context per agent, ``take_snapshot`` + ``click``), all on the
system Chromium, every page on 127.0.0.1. Every agent's connection is open and its page loaded before
the clock starts. Prints pairs per second for the whole server and the p50/p99 of each call. With
``--corpus`` the same for ours on a corpus page (Bootstrap's cheatsheet, installed by ``python -m
benchmarks.corpus --setup``), clicking its first button. With ``--think S`` (and ``--corpus``), on that
page each agent instead loops *read, change the page (``browser_evaluate`` sets an attribute every
walk sees), think S s*, as an agent does, against a server that builds the state ahead while it
thinks and one that does not (``BROWSER_USE_MCP_BUILD_AHEAD=0``): the reads' p50/p99 side by side.
With ``--off PATCH[,PATCH]`` (``--rounds N``), ours on the test site also runs with those patches
switched off, alternating with the server as shipped. Figures only: nothing passes or fails.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any

from benchmarks.common import Server, percentile, run_in_scratch_home, server, table

BUTTON = 'Press me'  # the test site's home page: a button that changes the page's text, no navigation
CORPUS_PAGE = 'bootstrap cheatsheet'


@dataclass
class Run:
	who: str
	page: str
	agents: int
	seconds: float
	pairs: int = 0
	reads: list[float] = field(default_factory=list)
	clicks: list[float] = field(default_factory=list)

	def row(self) -> list[Any]:
		def q(values: list[float], p: float) -> float:
			return round(percentile(values, p) * 1000, 1)

		return [
			self.who,
			self.page,
			self.agents,
			round(self.pairs / self.seconds, 1),
			q(self.reads, 0.5),
			q(self.reads, 0.99),
			q(self.clicks, 0.5),
			q(self.clicks, 0.99),
		]


def _button(state_text: str, label: str | None) -> int:
	"""The index of the button labelled ``label`` (the first button when None)."""
	for element in json.loads(state_text)['interactive_elements']:
		if element.get('tag') == 'button' and (label is None or element.get('text') == label):
			return element['index']
	raise RuntimeError(f'no button {label!r} in the page state')


async def _ours_agent(srv: Server, sid: str, label: str | None, until: float, run: Run) -> None:
	while time.monotonic() < until:
		text, read = await srv.ok('browser_get_state', session_id=sid)
		_, click = await srv.ok('browser_click', session_id=sid, index=_button(text, label))
		run.reads.append(read)
		run.clicks.append(click)
		run.pairs += 1


# a change every walk sees (an attribute of the root element): the next state must be built
CHANGE_PAGE = 'document.documentElement.dataset.benchmarkTick = String(Date.now() + Math.random())'


async def _thinking_agent(srv: Server, sid: str, think: float, until: float, run: Run) -> None:
	"""read, change the page, think: the change counts as the pair's "click"."""
	while time.monotonic() < until:
		_, read = await srv.ok('browser_get_state', session_id=sid)
		_, change = await srv.ok('browser_evaluate', session_id=sid, expression=CHANGE_PAGE)
		run.reads.append(read)
		run.clicks.append(change)
		run.pairs += 1
		await asyncio.sleep(think)


async def ours(
	agents: int,
	seconds: float,
	url: str,
	page: str,
	label: str | None,
	think: float | None = None,
	ahead: bool = True,
	off: str | None = None,
) -> Run:
	who = 'ours (contexts)' if think is None else f'ours, think {think:g} s, {"built ahead" if ahead else "not built ahead"}'
	if off:
		who += f', without {off}'
	run = Run(who, page, agents, seconds)
	env = None if ahead else {'BROWSER_USE_MCP_BUILD_AHEAD': '0'}
	if off:
		from benchmarks.browser_cpu import patches_off

		env = {**(env or {}), **patches_off(off)}
	async with server('ours', '--isolation', 'context', '--max-sessions', str(agents + 4), env_extra=env) as srv:
		ids = [f'sustained-{i}' for i in range(agents)]
		await asyncio.gather(*(srv.ok('browser_navigate', session_id=sid, url=url) for sid in ids))
		until = time.monotonic() + seconds
		if think is None:
			await asyncio.gather(*(_ours_agent(srv, sid, label, until, run) for sid in ids))
		else:
			await asyncio.gather(*(_thinking_agent(srv, sid, think, until, run) for sid in ids))
	return run


async def peer(kind: str, agents: int, seconds: float, url: str) -> Run:
	from benchmarks.peers import peer as running_peer

	run = Run(kind, 'test site home', agents, seconds)

	async def loop(agent: Any, until: float) -> None:
		while time.monotonic() < until:
			text, read = await agent.snapshot()
			_, click = await agent.click(agent.ref(text, BUTTON))
			run.reads.append(read)
			run.clicks.append(click)
			run.pairs += 1

	async with running_peer(kind) as srv, srv.agents(agents, prefix='sustained') as crowd:
		await asyncio.gather(*(a.navigate(url) for a in crowd))
		until = time.monotonic() + seconds
		await asyncio.gather(*(loop(a, until) for a in crowd))
	return run


async def bench(
	agents: int, seconds: float, peers: bool, corpus: bool, think: float | None = None, off: str | None = None, rounds: int = 1
) -> tuple[list[Run], list[str]]:
	from benchmarks.peers import KINDS, peer_available
	from harness.pages import PageServer

	runs: list[Run] = []
	notes: list[str] = []
	with PageServer() as site:
		for i in range(rounds):  # with --off: as shipped and without the patches, alternating
			pair = (None, off) if i % 2 == 0 else (off, None)
			for without in pair if off else (None,):
				runs.append(await ours(agents, seconds, f'{site.url}/', 'test site home', BUTTON, off=without))
		for kind in KINDS if peers else ():
			why = await peer_available(kind)
			if why is not None:
				notes.append(f'{kind} skipped: {why}')
				continue
			runs.append(await peer(kind, agents, seconds, f'{site.url}/'))
	if corpus:
		from benchmarks.corpus import PAGES, CorpusServer, available

		page = next(p for p in PAGES if p.name == CORPUS_PAGE)
		if not available(page):
			notes.append(f'{page.name} skipped: not installed (python -m benchmarks.corpus --setup)')
		else:
			with CorpusServer() as server_:
				runs.append(await ours(agents, seconds, f'{server_.url}{page.path}', page.name, None))
				if think is not None:
					notes.append(
						f'think runs: each agent reads, changes the page, thinks {think:g} s; their "click" is that change '
						'(browser_evaluate), their pairs/s include the thinking'
					)
					for ahead in (True, False):
						runs.append(await ours(agents, seconds, f'{server_.url}{page.path}', page.name, None, think, ahead))
	return runs, notes


def show(runs: list[Run], notes: list[str]) -> str:
	header = ['server', 'page', 'agents', 'pairs/s', 'read p50 ms', 'read p99 ms', 'click p50 ms', 'click p99 ms']
	seconds = runs[0].seconds if runs else 0
	text = table(f'Sustained: each agent loops read + click for {seconds:g} s', header, [r.row() for r in runs])
	return text + ''.join(f'\n{note}' for note in notes)


def main() -> None:
	parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
	parser.add_argument('--agents', type=int, default=16)
	parser.add_argument('--seconds', type=float, default=20.0)
	parser.add_argument('--no-peers', action='store_true', help='ours only')
	parser.add_argument('--corpus', action='store_true', help='also ours on a corpus page')
	parser.add_argument(
		'--think',
		type=float,
		help='with --corpus: also read, change, think this many s on the corpus page, built ahead and not',
	)
	parser.add_argument(
		'--off',
		metavar='PATCH[,PATCH]',
		help='ours on the test site also with these patches switched off (their environment switches), alternating',
	)
	parser.add_argument('--rounds', type=int, default=1, help='with --off: runs of each (default 1)')
	args = parser.parse_args()
	if args.off:
		from benchmarks.browser_cpu import patches_off

		patches_off(args.off)  # an unknown name stops here, before any server starts

	async def run() -> None:
		runs, notes = await bench(args.agents, args.seconds, not args.no_peers, args.corpus, args.think, args.off, args.rounds)
		print(show(runs, notes))

	run_in_scratch_home('bench-sustained-', run)


if __name__ == '__main__':
	main()
