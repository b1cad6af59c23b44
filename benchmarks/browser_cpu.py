"""Where the CPU goes while agents work, by browser binary: ``python -m benchmarks.browser_cpu [--agents N] [--rounds R]``.

Context isolation, a fresh server per run (real MCP client over stdio, pages on 127.0.0.1): ``--agents``
agents (16) at once run the 5-step workflow of ``benchmarks.run`` (navigate, get_state, click a link,
get_state, go back). Around it, the CPU time (user + system) of every process of the
server's tree is read, and summed by kind: the server (Python), the Chromiums' browser processes
(and of them the main thread, ``CrBrowserMain`` in Chromium's traces, through which every DevTools
message passes), their renderers, the rest. Each binary is run in turn, round after round, so both
see the same machine load: by default the full Chromium (``--no-headless-shell``) and Chromium's
headless shell (the server's default when it is installed); ``--chromium PATH`` (repeatable) names others.
``--off PATCH[,PATCH]`` (repeatable) instead runs the default browser as shipped and with those patches
switched off (their environment switches set to ``false``), e.g. ``--off profile_paths,factory_signatures``.

Prints each run, then medians side by side, with the wall time and PSS per agent. Figures only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import time
from typing import Any

import psutil

from benchmarks.common import mb, memory_of, run_in_scratch_home, server, table
from benchmarks.run import workflow

KINDS = ('server', 'browser process', 'of it: main thread', 'renderers', 'other')


def cpu_by_kind(tree: list[psutil.Process]) -> dict[tuple[int, str], float]:
	"""(pid, kind) -> CPU seconds so far; the browser main thread is its own row (its tid is its pid)."""
	out: dict[tuple[int, str], float] = {}
	server_pid = tree[0].pid if tree else -1
	for proc in tree:
		with contextlib.suppress(psutil.Error, StopIteration):
			cmdline = proc.cmdline()
			if proc.pid == server_pid:
				kind = 'server'
			elif 'chrom' not in proc.name().lower():
				kind = 'other'
			elif not any(a.startswith('--type=') for a in cmdline):
				kind = 'browser process'
				main = next(t for t in proc.threads() if t.id == proc.pid)  # the main thread's id is the pid
				out[(proc.pid, 'of it: main thread')] = main.user_time + main.system_time
			elif '--type=renderer' in cmdline:
				kind = 'renderers'
			else:
				kind = 'other'
			times = proc.cpu_times()
			out[(proc.pid, kind)] = times.user + times.system
	return out


async def one_run(site: str, agents: int, args: tuple[str, ...], env: dict[str, str] | None = None) -> dict[str, Any]:
	args = ('--isolation', 'context', '--max-sessions', str(agents + 4), *args)
	async with server('ours', *args, env_extra=env) as srv:
		await srv.ok('browser_navigate', session_id='warm', url=f'{site}/')  # both shared Chromiums up
		await srv.ok('browser_navigate', session_id='warm-2', url=f'{site}/')
		before = cpu_by_kind(srv.tree())
		started = time.perf_counter()
		await asyncio.gather(*(workflow(srv, site, f'agent-{i}') for i in range(agents)))
		wall = time.perf_counter() - started
		tree = srv.tree()
		after = cpu_by_kind(tree)
		binary = next((p.exe() for p in tree[1:] if 'chrom' in p.name().lower()), '?')
		pss = mb(memory_of(tree).pss) / agents
	cpu = dict.fromkeys(KINDS, 0.0)
	for key, value in after.items():
		cpu[key[1]] += value - before.get(key, 0.0)
	return {'wall': wall, 'pss': pss, 'cpu': cpu, 'binary': binary}


Variant = tuple[str, tuple[str, ...], dict[str, str]]  # label, server arguments, environment


async def bench(agents: int, rounds: int, binaries: list[Variant]) -> str:
	from harness.pages import PageServer

	runs: dict[str, list[dict[str, Any]]] = {label: [] for label, _, _ in binaries}
	with PageServer() as site:
		for r in range(rounds):
			for label, args, env in binaries:
				run = await one_run(site.url, agents, args, env)
				runs[label].append(run)
				split = ', '.join(f'{k} {v:.2f} s' for k, v in run['cpu'].items())
				print(f'round {r + 1}, {label} ({run["binary"]}): wall {run["wall"]:.2f} s; CPU {split}', flush=True)

	def med(label: str, pick: Any) -> float:
		return statistics.median(pick(run) for run in runs[label])

	rows = []
	for label, _, _ in binaries:
		total = med(label, lambda run: sum(v for k, v in run['cpu'].items() if k != 'of it: main thread'))
		rows.append(
			[
				label,
				f'{med(label, lambda run: run["wall"]):.2f}',
				f'{med(label, lambda run: run["pss"]):.1f}',
				*(f'{med(label, lambda run, k=k: run["cpu"][k]):.2f}' for k in KINDS),
				f'{total:.2f}',
			]
		)
	header = ['browser', f'{agents} agents wall s', 'PSS / agent MB', *(f'CPU s: {k}' for k in KINDS), 'CPU s: all']
	return table(f'CPU by process while {agents} agents work, context mode, median of {rounds}', header, rows)


def patches_off(names: str) -> dict[str, str]:
	"""The environment that switches off each patch named (comma-separated)."""
	from browser_use_mcp import patches

	by_name = {p.name: p for p in patches.all_patches()}
	unknown = [n for n in names.split(',') if n not in by_name]
	if unknown:
		raise SystemExit(f'--off: unknown patch {", ".join(unknown)}; patches: {", ".join(by_name)}')
	return {by_name[n].env_var: 'false' for n in names.split(',')}


def main() -> None:
	parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
	parser.add_argument('--agents', type=int, default=16)
	parser.add_argument('--rounds', type=int, default=3)
	parser.add_argument('--chromium', action='append', default=[], help='a browser binary to run (repeatable)')
	parser.add_argument('--off', action='append', default=[], help='patches to switch off, comma-separated (repeatable)')
	args = parser.parse_args()
	binaries: list[Variant] = [(path, ('--chromium', path), {}) for path in args.chromium] or [
		('full Chromium', ('--no-headless-shell',), {}),
		('headless shell (default)', (), {}),
	]
	if args.off:
		binaries = [('as shipped', (), {})] + [(f'without {names}', (), patches_off(names)) for names in args.off]

	async def run() -> None:
		print(await bench(args.agents, args.rounds, binaries))

	run_in_scratch_home('bench-browser-cpu-', run)


if __name__ == '__main__':
	main()
