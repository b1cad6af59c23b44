"""Spare CPU as the build ahead sees it (``browser_use_mcp.cpu``): the CPUs of the process's
affinity, and its cgroup's CPU quota where it has one (a container's limit).

The quota tests use a real cgroup v1 ``cpu`` hierarchy where this machine mounts one and lets us
make a group (root, as the test machines run); cgroup v2 (``cpu.max``, ``cpu.stat``) is read from
a directory laid out as the kernel lays it out, since a machine has one or the other mounted."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from browser_use_mcp import cpu

SPIN = 'while True: pass'


@contextlib.contextmanager
def spinner() -> Iterator[subprocess.Popen[bytes]]:
	proc = subprocess.Popen([sys.executable, '-c', SPIN])  # noqa: S603
	try:
		yield proc
	finally:
		proc.kill()
		proc.wait()


def test_a_sample_counts_the_cpus_of_the_process_s_affinity() -> None:
	mine = cpu.sample()
	assert mine is not None and mine.cpus == len(os.sched_getaffinity(0))
	with spinner() as proc:
		os.sched_setaffinity(proc.pid, {min(os.sched_getaffinity(0))})
		pinned = cpu.sample(proc.pid)
	assert pinned is not None and pinned.cpus == 1
	assert pinned.total < mine.total  # one CPU's ticks, not the machine's


def test_idle_cpus_is_the_lesser_of_the_cpus_and_the_quota(tmp_path: Path) -> None:
	quota = cpu.Quota(1.5, tmp_path / 'cpu.stat')
	before = cpu.Sample(at=10.0, idle=0, total=0, cpus=4, quota=quota, used=100.0)
	# over 2 s: 3 of 4 CPUs idle on the machine; the cgroup used 2.4 s of CPU, 1.2 of its 1.5 CPUs
	after = cpu.Sample(at=12.0, idle=600, total=800, cpus=4, quota=quota, used=102.4)
	assert cpu.idle_cpus(before, after) == pytest.approx(0.3)
	no_quota = cpu.Sample(at=12.0, idle=600, total=800, cpus=4, quota=None, used=None)
	assert cpu.idle_cpus(before, no_quota) == pytest.approx(3.0)
	over = cpu.Sample(at=12.0, idle=600, total=800, cpus=4, quota=quota, used=104.0)  # bursts past it
	assert cpu.idle_cpus(before, over) == 0.0
	assert cpu.idle_cpus(after, after) is None and cpu.idle_cpus(None, after) is None


def _fake_proc(tmp_path: Path, membership: str, mount: str) -> str:
	proc = tmp_path / 'proc'
	(proc / '7').mkdir(parents=True)
	(proc / '7' / 'cgroup').write_text(membership)
	(proc / '7' / 'mountinfo').write_text(
		'24 1 0:22 / /sys rw,nosuid - sysfs sysfs rw\n' + mount + '\n' + '31 23 0:28 / /dev/shm rw - tmpfs tmpfs rw\n'
	)
	return str(proc)


def test_a_cgroup_v2_quota_is_read_from_cpu_max_the_tightest_ancestor_s(tmp_path: Path) -> None:
	fs = tmp_path / 'cgroup'
	inner = fs / 'box' / 'inner'
	inner.mkdir(parents=True)
	(fs / 'cpu.max').write_text('max 100000\n')
	(fs / 'box' / 'cpu.max').write_text('150000 100000\n')
	(inner / 'cpu.max').write_text('max 100000\n')
	(fs / 'box' / 'cpu.stat').write_text('usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n')
	proc = _fake_proc(tmp_path, '0::/box/inner\n', f'35 24 0:30 / {fs} rw - cgroup2 cgroup2 rw')
	quota = cpu.find_quota(7, proc)
	assert quota == cpu.Quota(1.5, fs / 'box' / 'cpu.stat')
	assert quota.used() == 2.5
	# a container's own mount shows its cgroup at the mount's root
	(fs / 'cpu.max').write_text('50000 100000\n')
	(fs / 'cpu.stat').write_text('usage_usec 1000\n')
	proc = _fake_proc(tmp_path / 'ns', '0::/\n', f'35 24 0:30 / {fs} rw - cgroup2 cgroup2 rw')
	assert cpu.find_quota(7, proc) == cpu.Quota(0.5, fs / 'cpu.stat')
	proc = _fake_proc(tmp_path / 'docker', '0::/docker/abc\n', f'35 24 0:30 /docker/abc {fs} rw - cgroup2 cgroup2 rw')
	assert cpu.find_quota(7, proc) == cpu.Quota(0.5, fs / 'cpu.stat')
	(fs / 'cpu.max').write_text('max 100000\n')
	(fs / 'box' / 'cpu.max').write_text('max 100000\n')
	proc = _fake_proc(tmp_path / 'none', '0::/box/inner\n', f'35 24 0:30 / {fs} rw - cgroup2 cgroup2 rw')
	assert cpu.find_quota(7, proc) is None


def _v1_mounts() -> dict[str, Path]:
	found: dict[str, Path] = {}
	with contextlib.suppress(OSError):
		for line in Path('/proc/self/mountinfo').read_text().splitlines():
			fields = line.split()
			dash = fields.index('-')
			if fields[dash + 1] == 'cgroup' and fields[3] == '/':
				for controller in ('cpu', 'cpuacct'):
					if controller in fields[dash + 3].split(','):
						found[controller] = Path(fields[4])
	return found


@contextlib.contextmanager
def cgroup_v1(cpus: float) -> Iterator[list[Path]]:
	"""A cgroup with a quota of ``cpus`` in the cpu (and cpuacct) hierarchies; removed after."""
	mounts = _v1_mounts()
	if set(mounts) != {'cpu', 'cpuacct'}:
		pytest.skip('no cgroup v1 cpu and cpuacct hierarchies mounted here (the cgroup v2 reading has its own test)')
	name = f'browser-use-mcp-test-{uuid.uuid4().hex[:8]}'
	made: list[Path] = []
	try:
		for point in dict.fromkeys(mounts.values()):
			try:
				(point / name).mkdir()
			except OSError as exc:
				pytest.skip(f'cannot make a cgroup here ({exc}): the cgroup v2 reading has its own test')
			made.append(point / name)
		period = int((mounts['cpu'] / name / 'cpu.cfs_period_us').read_text())
		(mounts['cpu'] / name / 'cpu.cfs_quota_us').write_text(str(int(cpus * period)))
		yield made
	finally:
		for folder in made:
			for _ in range(50):  # a killed member leaves the group a moment later
				try:
					folder.rmdir()
					break
				except OSError:
					time.sleep(0.1)


def test_a_cgroup_quota_that_is_used_up_leaves_no_spare_cpu() -> None:
	"""A process limited to one CPU that spins on it has none spare, whatever the machine's other
	CPUs do; by the machine's /proc/stat alone it would have had them."""
	with cgroup_v1(1.0) as groups, spinner() as proc:
		for folder in groups:
			(folder / 'cgroup.procs').write_text(str(proc.pid))
		quota = cpu.find_quota(proc.pid)
		assert quota is not None and quota.cpus == 1.0, quota
		before = cpu.sample(proc.pid)
		time.sleep(0.6)
		after = cpu.sample(proc.pid)
		assert before is not None and after is not None and before.used is not None and after.used is not None
		used = (after.used - before.used) / (after.at - before.at)
		assert 0.6 < used <= 1.1, f'the spinner used {used:.2f} CPUs under a quota of one'
		spare = cpu.idle_cpus(before, after)
		assert spare is not None and spare < 0.4, f'{spare} CPUs spare under a used-up quota'
		host = (after.idle - before.idle) / (after.total - before.total) * after.cpus
		assert spare <= host
