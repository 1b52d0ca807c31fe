"""How many CPUs this process's thread pools should use.

Every pool of lake_assets (the writer's routing and flush threads, read-ahead, compaction units,
streaming splits) is sized by `usable_cpus`, never by ``os.cpu_count()``: the node's core count
is the wrong budget wherever the process shares the node. On a Spark executor each task slot runs
its own Python worker, and Spark sets ``OMP_NUM_THREADS`` to ``spark.task.cpus`` for them (unless
``spark.executorEnv.OMP_NUM_THREADS`` is set; SPARK-42613); sizing by the node's cores started
as many threads per task as the node has cores (64 tasks x 64 threads on a 64-core executor).

The answer is the least of:

- the CPUs the process may run on (its affinity mask, as ``taskset`` or a cpuset cgroup set it);
- the CPU quota of its cgroup (v2 ``cpu.max`` or v1 ``cpu.cfs_quota_us``), rounded up, when the
  container's view of the cgroup files says there is one;
- pyarrow's CPU count (`pyarrow.cpu_count`), which follows ``OMP_NUM_THREADS`` /
  ``OMP_THREAD_LIMIT`` at pyarrow's import and `pyarrow.set_cpu_count` after it: pyarrow's own
  pool and ours then agree.

The environment variable ``LAKE_ASSETS_CPUS`` (a positive integer) replaces all of that (docs/spark.md,
*Threads per task*). Paimon has no matching table option: its writers' threads are the engine's
task slots, and a table option would follow the table from one machine to another.
"""

from __future__ import annotations

import functools
import math
import os
from pathlib import Path

import pyarrow as pa

from lake_assets.errors import InvalidArgumentError

CPUS_ENV = "LAKE_ASSETS_CPUS"

# cgroup files as a container sees its own cgroup (cgroup namespaces put it at the root).
CGROUP_V2_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")
CGROUP_V1_QUOTA = Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us")
CGROUP_V1_PERIOD = Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us")


def usable_cpus() -> int:
    """The CPUs this process's thread pools should use, at least 1 (see the module docstring):
    ``LAKE_ASSETS_CPUS`` if set, else the least of the affinity mask, the cgroup's CPU quota and
    pyarrow's CPU count (``OMP_NUM_THREADS``, which Spark sets to ``spark.task.cpus``).

    Raises `InvalidArgumentError` when ``LAKE_ASSETS_CPUS`` is not a positive integer."""
    override = cpus_override()
    if override is not None:
        return override
    counts = [affinity_cpus(), pa.cpu_count()]
    quota = cgroup_cpu_quota()
    if quota is not None:
        counts.append(quota)
    return max(1, min(counts))


def validate_cpus_setting() -> None:
    """Raise `InvalidArgumentError` now when ``LAKE_ASSETS_CPUS`` is set but not a positive integer.

    Every operation that reads or writes data files calls it as it starts (`FileStore.require`):
    the pools are sized lazily, so a bad value was otherwise found only when the first pool was,
    after some files were written (a write then aborted), or never (a read of one split, a write
    to one bucket: they run without a pool)."""
    cpus_override()


def cpus_override() -> int | None:
    """``LAKE_ASSETS_CPUS`` as a positive integer, None when unset or empty."""
    text = os.environ.get(CPUS_ENV, "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise InvalidArgumentError(f"Environment variable {CPUS_ENV} must be a positive integer, got {text!r}")
    return value


def affinity_cpus() -> int:
    """The CPUs the process may run on: its affinity mask where the platform has one, else the
    machine's count."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


@functools.cache
def cgroup_cpu_quota() -> int | None:
    """The cgroup's CPU quota in whole CPUs (rounded up), None without one. Read once per process:
    a container's quota does not change under a running worker, and the pools ask often."""
    try:
        return _quota_of_v2(CGROUP_V2_CPU_MAX.read_text())
    except OSError:
        pass
    try:
        return _quota_of_v1(CGROUP_V1_QUOTA.read_text(), CGROUP_V1_PERIOD.read_text())
    except OSError:
        return None


def _quota_of_v2(text: str) -> int | None:
    """``cpu.max``: "<quota> <period>" in microseconds, quota "max" for none."""
    parts = text.split()
    if len(parts) != 2 or parts[0] == "max":
        return None
    return _whole_cpus(parts[0], parts[1])


def _quota_of_v1(quota: str, period: str) -> int | None:
    """``cpu.cfs_quota_us`` (-1 for none) over ``cpu.cfs_period_us``."""
    return _whole_cpus(quota.strip(), period.strip())


def _whole_cpus(quota: str, period: str) -> int | None:
    try:
        q, p = int(quota), int(period)
    except ValueError:
        return None  # a file we do not understand limits nothing
    if q <= 0 or p <= 0:
        return None
    return max(1, math.ceil(q / p))
