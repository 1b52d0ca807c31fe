"""The per-call parallel parts run on kept threads (`lake_assets.ops.kept_pool`), not on a
`ThreadPoolExecutor` started per call: a multi-manifest read, a compaction's units, a big batch of
a postpone table's fixed-bucket writer. The second call starts no thread, and the bound each had
(16 manifest reads, ``parallelism``) still holds.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops.kept_threads import forget_idle_kept_threads
from lake_assets.ops.postpone_fixed_bucket import write_fixed_buckets
from lake_assets.ops.route import PARALLEL_GATHER_ROWS
from tests.unit.thread_starts import counting_starts

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.int64())])


@pytest.fixture(autouse=True)
def fresh_threads() -> Iterator[None]:
    forget_idle_kept_threads()
    yield
    forget_idle_kept_threads()


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Names of the threads started (the whole-table read pool's, kept by `ops.read_pool`, left out)."""
    return counting_starts(monkeypatch, ignore=("lake-read",))


def _catalog(tmp_path: Path) -> Catalog:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat


def test_a_multi_manifest_read_starts_threads_once(tmp_path: Path, started: list[str]) -> None:
    t = _catalog(tmp_path).create_table("db.t", SCHEMA)
    for i in range(4):
        t.write_arrow(pa.table({"k": [i], "v": [i]}, schema=SCHEMA))
    mio = t.store.manifest_io()
    mio.file_io.parallel_reads_pay_off = True  # as S3: the manifests are read side by side
    snapshot = t.snapshot_manager.latest()
    assert snapshot is not None
    metas = mio.read_manifest_list(snapshot.base_manifest_list) + mio.read_manifest_list(snapshot.delta_manifest_list)
    assert len(metas) == 4
    threads: set[threading.Thread] = set()
    real_read = mio.read_manifest
    all_in_flight = threading.Barrier(4, timeout=30)  # each call reads the four side by side

    def read(name: str, expected_size: int | None = None) -> list:
        threads.add(threading.current_thread())
        all_in_flight.wait()
        return real_read(name, expected_size)

    mio.read_manifest = read  # type: ignore[method-assign]
    first = mio.read_manifests(metas)
    assert len(started) == 4 and len(threads) == 4 and threading.main_thread() not in threads
    assert mio.read_manifests(metas) == first and [len(e) for e in first] == [1] * 4
    assert len(started) == 4 and len(threads) == 4  # the second read borrowed the first's threads


def test_a_compaction_after_the_first_starts_no_thread(tmp_path: Path, started: list[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Four units, ``parallelism`` 2: at most two run at once, on kept threads (those the writes
    handed back, or new ones the first time); the second compaction starts none."""
    from lake_assets.ops.compact import unit_pool

    t = _catalog(tmp_path).create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "4"})
    names: set[str] = set()
    in_flight = [0, 0]  # now, most
    lock = threading.Lock()
    real_run = unit_pool._run_and_release

    def run(*args: Any) -> Any:
        with lock:
            names.add(threading.current_thread().name)
            in_flight[0] += 1
            in_flight[1] = max(in_flight)
        try:
            return real_run(*args)
        finally:
            with lock:
                in_flight[0] -= 1

    monkeypatch.setattr(unit_pool, "_run_and_release", run)
    per_compaction = []
    for round_ in range(2):
        t.write_arrow(pa.table({"k": np.arange(400), "v": np.full(400, round_)}, schema=SCHEMA))
        before = len(started)
        t.compact(full=True, parallelism=2)
        per_compaction.append(started[before:])
    assert len(per_compaction[0]) <= 2 and per_compaction[1] == [], per_compaction
    assert in_flight[1] <= 2 and names and all(n.startswith(unit_pool.COMPACT_THREAD_NAME) for n in names)
    assert t.to_arrow().column("v").to_pylist() == [1] * 400


def test_a_big_postpone_batch_after_the_first_starts_no_thread(tmp_path: Path, started: list[str]) -> None:
    t = _catalog(tmp_path).create_table("db.p", SCHEMA, primary_keys=["k"], options={"bucket": "-2"})
    rows = PARALLEL_GATHER_ROWS  # a batch this big is conformed and routed on a pool
    per_batch = []
    for round_ in range(2):
        before = len(started)
        write_fixed_buckets(t.store, pa.table({"k": np.arange(rows), "v": np.full(rows, round_)}, schema=SCHEMA))
        per_batch.append(started[before:])
    assert per_batch[0] and per_batch[1] == [], per_batch
    got = t.to_arrow()
    assert got.num_rows == rows and set(got.column("v").to_pylist()) == {1}
