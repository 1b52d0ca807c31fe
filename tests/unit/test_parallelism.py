"""`lake_assets.parallelism.usable_cpus`: the CPUs a process's thread pools use, not the node's cores."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import parallelism
from lake_assets.errors import InvalidArgumentError
from lake_assets.ops.write_spill import bucket_flush_threads
from lake_assets.parallelism import CPUS_ENV, cgroup_cpu_quota, usable_cpus

REPO = Path(__file__).resolve().parents[2]
needs_affinity = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no sched_setaffinity here")


def _run(code: str, **env: str) -> str:
    """``code`` in a fresh interpreter (pyarrow reads OMP_NUM_THREADS once, at its import)."""
    clean = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OMP_THREAD_LIMIT", CPUS_ENV)}
    clean["PYTHONPATH"] = str(REPO)
    done = subprocess.run([sys.executable, "-c", code], env={**clean, **env}, capture_output=True, text=True,
                          timeout=120, check=True)
    return done.stdout.strip()


@pytest.fixture
def no_cgroup_quota(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """Points the cgroup files at an empty directory (no quota) and forgets the cached quota."""
    monkeypatch.setattr(parallelism, "CGROUP_V2_CPU_MAX", tmp_path / "cpu.max")
    monkeypatch.setattr(parallelism, "CGROUP_V1_QUOTA", tmp_path / "cpu.cfs_quota_us")
    monkeypatch.setattr(parallelism, "CGROUP_V1_PERIOD", tmp_path / "cpu.cfs_period_us")
    cgroup_cpu_quota.cache_clear()
    yield tmp_path
    cgroup_cpu_quota.cache_clear()


def test_override_env_replaces_every_other_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CPUS_ENV, "3")
    assert usable_cpus() == 3
    assert bucket_flush_threads() == 3  # the writer's pool follows it
    monkeypatch.setenv(CPUS_ENV, " ")
    assert usable_cpus() >= 1


@pytest.mark.parametrize("value", ["0", "-2", "two", "1.5"])
def test_bad_override_is_refused_by_name(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(CPUS_ENV, value)
    with pytest.raises(InvalidArgumentError, match=f"{CPUS_ENV} must be a positive integer, got '{re.escape(value)}'"):
        usable_cpus()


def test_follows_pyarrow_count_and_so_omp_num_threads() -> None:
    """Spark sets OMP_NUM_THREADS to the task's CPUs for its Python workers; pyarrow's pool and ours follow it."""
    code = "from lake_assets.parallelism import usable_cpus; import pyarrow as pa; print(usable_cpus(), pa.cpu_count())"
    assert _run(code, OMP_NUM_THREADS="1") == "1 1"
    assert _run(code, OMP_NUM_THREADS="1,4") == "1 1"  # OpenMP's nested list: the outer level


def test_follows_pyarrow_set_cpu_count(monkeypatch: pytest.MonkeyPatch, no_cgroup_quota: Path) -> None:
    monkeypatch.delenv(CPUS_ENV, raising=False)
    before = pa.cpu_count()
    try:
        pa.set_cpu_count(1)
        assert usable_cpus() == 1
    finally:
        pa.set_cpu_count(before)


@needs_affinity
def test_follows_the_affinity_mask() -> None:
    """A process pinned to one CPU (taskset, a cpuset cgroup) uses one thread, whatever the node has."""
    code = ("import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); "
            "from lake_assets.parallelism import usable_cpus; "
            "from lake_assets.ops.write_spill import bucket_flush_threads; "
            "print(usable_cpus(), bucket_flush_threads(), os.cpu_count())")
    ours, flush, node = _run(code).split()
    assert (ours, flush) == ("1", "1")
    assert int(node) >= 1


@needs_affinity
def test_override_wins_over_the_affinity_mask() -> None:
    code = ("import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); "
            "from lake_assets.parallelism import usable_cpus; print(usable_cpus())")
    assert _run(code, **{CPUS_ENV: "4"}) == "4"


def test_cgroup_v2_quota_rounds_up(monkeypatch: pytest.MonkeyPatch, no_cgroup_quota: Path) -> None:
    monkeypatch.delenv(CPUS_ENV, raising=False)
    monkeypatch.setattr(parallelism, "affinity_cpus", lambda: 64)
    monkeypatch.setattr(pa, "cpu_count", lambda: 64)
    (no_cgroup_quota / "cpu.max").write_text("150000 100000\n")
    assert cgroup_cpu_quota() == 2
    assert usable_cpus() == 2


def test_cgroup_v2_without_quota(no_cgroup_quota: Path) -> None:
    (no_cgroup_quota / "cpu.max").write_text("max 100000\n")
    assert cgroup_cpu_quota() is None


def test_cgroup_v1_quota(monkeypatch: pytest.MonkeyPatch, no_cgroup_quota: Path) -> None:
    (no_cgroup_quota / "cpu.cfs_quota_us").write_text("300000\n")
    (no_cgroup_quota / "cpu.cfs_period_us").write_text("100000\n")
    assert cgroup_cpu_quota() == 3
    cgroup_cpu_quota.cache_clear()
    (no_cgroup_quota / "cpu.cfs_quota_us").write_text("-1\n")
    assert cgroup_cpu_quota() is None


def test_no_pool_is_sized_by_the_node_cores() -> None:
    """Every pool goes through `usable_cpus`: a pool sized by ``os.cpu_count()`` starts as many
    threads per Spark task as the executor's node has cores."""
    offenders = []
    for path in sorted((REPO / "lake_assets").rglob("*.py")):
        if path.name == "parallelism.py":
            continue
        text = path.read_text()
        offenders += [f"{path.relative_to(REPO)}: {m.group(0)}"
                      for m in re.finditer(r"(cpu_count|sched_getaffinity|process_cpu_count)\(", text)]
    assert offenders == []
