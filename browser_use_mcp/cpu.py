"""Spare CPU: how many of the CPUs this server may use were idle over an interval.

The build ahead (``ahead``) runs only when at least one CPU was idle over its quiet time. The
machine's ``/proc/stat`` tells how idle the machine's CPUs were, but a server in a container may
use fewer of them than the machine has:

- a cpuset (the CPUs it may run on: its affinity), and
- a CPU quota (cgroup v2 ``cpu.max``, v1 ``cpu.cfs_quota_us`` over ``cpu.cfs_period_us``).

On a 64-CPU host, a container limited to two CPUs that uses both sees ~62 idle CPUs in the host's
``/proc/stat``. So a ``Sample`` holds the idle and total ticks of only the CPUs in the process's
affinity (``/proc/stat``'s per-CPU lines) and, where a quota applies, the CPU time its cgroup has
used (v2 ``cpu.stat``'s ``usage_usec``, v1 ``cpuacct.usage``); ``idle_cpus`` takes the lesser of
the two readings. The cgroup is found once per process from ``/proc/PID/cgroup`` and
``/proc/PID/mountinfo`` (a container's own mount of its cgroup is followed); a quota set on an
ancestor counts, and the tightest one is used.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import time
from collections.abc import Callable
from pathlib import Path


@dataclasses.dataclass(frozen=True)
class Quota:
	"""A CPU quota on this process's cgroup (or an ancestor's): ``cpus`` CPUs' worth of time, and
	the file that says how much CPU time that cgroup has used."""

	cpus: float
	usage: Path  # v2: cpu.stat (usage_usec); v1: cpuacct.usage (ns)

	def used(self) -> float | None:
		"""CPU time the cgroup has used, in seconds; None when unreadable."""
		try:
			text = self.usage.read_text()
		except OSError:
			return None
		try:
			if self.usage.name == 'cpu.stat':
				for line in text.splitlines():
					key, _, value = line.partition(' ')
					if key == 'usage_usec':
						return int(value) / 1e6
				return None
			return int(text.strip()) / 1e9
		except ValueError:
			return None


@dataclasses.dataclass(frozen=True)
class Sample:
	at: float  # time.monotonic()
	idle: float  # idle + iowait ticks of the CPUs this process may run on
	total: float  # all ticks of those CPUs
	cpus: int  # how many CPUs that is
	quota: Quota | None
	used: float | None  # the quota's cgroup's CPU time, s


def sample(pid: int | None = None, proc: str = '/proc') -> Sample | None:
	"""A reading of the CPUs ``pid`` (this process by default) may use; None where ``/proc/stat`` is
	unreadable (not Linux)."""
	allowed = _affinity(pid)
	try:
		with open(f'{proc}/stat', 'rb') as f:
			text = f.read()
	except OSError:
		return None
	idle = total = 0.0
	counted = 0
	for line in text.splitlines():
		if not line.startswith(b'cpu') or line.startswith(b'cpu '):
			continue
		name, *fields = line.split()
		try:
			cpu = int(name[3:])
			ticks = [int(v) for v in fields[:8]]
		except ValueError:
			continue
		if allowed is not None and cpu not in allowed:
			continue
		idle += ticks[3] + ticks[4]
		total += sum(ticks)
		counted += 1
	if not counted:
		return None
	quota = find_quota(pid or os.getpid(), proc)
	return Sample(time.monotonic(), idle, total, counted, quota, quota.used() if quota is not None else None)


def idle_cpus(before: Sample | None, after: Sample | None) -> float | None:
	"""How many of the CPUs this server may use were idle on average between two samples: the
	lesser of its CPUs' idle share and, under a quota, the quota less what its cgroup used. None
	when unknown."""
	if before is None or after is None or after.total <= before.total:
		return None
	idle = (after.idle - before.idle) / (after.total - before.total) * after.cpus
	if after.quota is not None and before.used is not None and after.used is not None and after.at > before.at:
		used = (after.used - before.used) / (after.at - before.at)
		idle = min(idle, max(0.0, after.quota.cpus - used))
	return idle


def _affinity(pid: int | None) -> set[int] | None:
	try:
		return os.sched_getaffinity(pid or 0)
	except (AttributeError, OSError):  # not Linux, or the process is gone
		return None


@functools.cache
def find_quota(pid: int, proc: str = '/proc') -> Quota | None:
	"""The tightest CPU quota over ``pid``'s cgroup and its ancestors, with the usage file of the
	cgroup it is set on; None when there is none (or no cgroup file system to read)."""
	try:
		memberships = Path(f'{proc}/{pid}/cgroup').read_text().splitlines()
		mounts = Path(f'{proc}/{pid}/mountinfo').read_text().splitlines()
	except OSError:
		return None
	v2_path: str | None = None
	v1: dict[str, str] = {}  # controller -> path
	for line in memberships:
		hierarchy, _, rest = line.partition(':')
		controllers, _, path = rest.partition(':')
		if hierarchy == '0' and not controllers:
			v2_path = path
		for controller in controllers.split(','):
			if controller in ('cpu', 'cpuacct'):
				v1[controller] = path
	v2_mount, v1_mounts = None, {}
	for line in mounts:
		fields = line.split()
		try:
			dash = fields.index('-')
			kind, options = fields[dash + 1], fields[dash + 3].split(',')
		except (ValueError, IndexError):
			continue
		root, point = fields[3], fields[4]
		if kind == 'cgroup2':
			v2_mount = (root, point)
		elif kind == 'cgroup':
			for controller in ('cpu', 'cpuacct'):
				if controller in options:
					v1_mounts[controller] = (root, point)
	if 'cpu' in v1 and 'cpu' in v1_mounts:
		found = _tightest(_dirs(v1_mounts['cpu'], v1['cpu']), _v1_quota)
		if found is not None:
			cpus, where = found
			acct = v1_mounts.get('cpuacct')
			if acct is not None and acct != v1_mounts['cpu']:  # cpuacct mounted on its own: the same place in it
				where = _dirs(acct, v1.get('cpuacct', v1['cpu']))[0]
			return Quota(cpus, where / 'cpuacct.usage')
	if v2_path is not None and v2_mount is not None:
		found = _tightest(_dirs(v2_mount, v2_path), _v2_quota)
		if found is not None:
			return Quota(found[0], found[1] / 'cpu.stat')
	return None


def _dirs(mount: tuple[str, str], path: str) -> list[Path]:
	"""The cgroup's directory under a mount and each ancestor's up to the mount's root, nearest
	first. A container's mount shows its own cgroup at its root: a path outside it maps to the root."""
	root, point = mount
	relative = path[len(root) :] if root != '/' and (path == root or path.startswith(root + '/')) else path
	here = Path(point) / relative.lstrip('/')
	if not here.is_dir():
		here = Path(point)
	dirs = [here]
	while dirs[-1] != Path(point) and Path(point) in dirs[-1].parents:
		dirs.append(dirs[-1].parent)
	return dirs


def _tightest(dirs: list[Path], read: Callable[[Path], float | None]) -> tuple[float, Path] | None:
	best: tuple[float, Path] | None = None
	for folder in dirs:
		cpus = read(folder)
		if cpus is not None and (best is None or cpus < best[0]):
			best = (cpus, folder)
	return best


def _v2_quota(folder: Path) -> float | None:
	try:
		quota, _, period = (folder / 'cpu.max').read_text().strip().partition(' ')
		return int(quota) / int(period) if quota != 'max' and int(period) > 0 else None
	except (OSError, ValueError):
		return None


def _v1_quota(folder: Path) -> float | None:
	try:
		quota = int((folder / 'cpu.cfs_quota_us').read_text())
		period = int((folder / 'cpu.cfs_period_us').read_text())
	except (OSError, ValueError):
		return None
	return quota / period if quota > 0 and period > 0 else None
