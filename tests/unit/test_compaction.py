"""Compaction: universal and full for primary-key tables, small files for append tables, conflicts."""

from __future__ import annotations

import contextlib
import itertools
import threading
import time

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog, CommitConflictError, CommitKind
from lake_assets.lsm.key_compare import compare_keys
from lake_assets.ops.compact import plan_compaction, run_compaction_task
from lake_assets.spec.binary_row import deserialize_row


def _pk(catalog: Catalog, name: str = "db.t", **opts: str):
    options = {"bucket": "2", "rowkind.field": "op", "write-only": "true", **opts}
    return catalog.create_table(
        name, pa.schema([("k", pa.int64()), ("v", pa.int64()), ("op", pa.string())]), primary_keys=["k"],
        options=options,
    )


def _write_random(t, rng, model, i, n=400, keys=2000):
    ks = rng.integers(0, keys, size=n)
    ops = rng.choice(["+I", "+U", "-D"], size=n, p=[0.6, 0.25, 0.15])
    t.write_arrow(pa.table({"k": ks, "v": np.full(n, i), "op": ops}, schema=t.arrow_schema))
    for k, o in zip(ks.tolist(), ops.tolist(), strict=True):
        if o == "-D":
            model.pop(k, None)
        else:
            model[k] = i


def _state(t, **kw):
    return {r["k"]: r["v"] for r in t.to_arrow(**kw).to_pylist()}


def _assert_levels_disjoint(t):
    key_types = t.schema.types(["k"])
    for sp in t.plan():
        by_level: dict[int, list] = {}
        for f in sp.files:
            if f.level > 0:
                by_level.setdefault(f.level, []).append(
                    (deserialize_row(f.min_key, key_types), deserialize_row(f.max_key, key_types)))
        for ranges in by_level.values():
            ranges.sort()
            for a, b in itertools.pairwise(ranges):
                assert compare_keys(a[1], b[0]) < 0


def test_universal_compaction_triggers_at_five_runs_and_keeps_content(catalog):
    t = _pk(catalog)
    rng = np.random.default_rng(7)
    model: dict[int, int] = {}
    for i in range(4):
        _write_random(t, rng, model, i)
    assert t.compact().snapshot_id is None  # 4 runs < num-sorted-run.compaction-trigger
    _write_random(t, rng, model, 4)
    health = t.health().to_pylist()
    assert all(r["sorted_runs"] == 5 and r["compaction_would_trigger"] for r in health)
    res = t.compact()
    assert res.snapshot_id is not None and res.files_in == 10
    assert t.latest_snapshot().commit_kind == CommitKind.COMPACT
    assert _state(t) == model
    assert all(r["level0_file_count"] == 0 for r in t.health().to_pylist())
    _assert_levels_disjoint(t)


def test_full_compaction_drops_retracts_and_delete_counts(catalog):
    t = _pk(catalog)
    rng = np.random.default_rng(3)
    model: dict[int, int] = {}
    for i in range(3):
        _write_random(t, rng, model, i)
    res = t.compact(full=True)
    assert res.rows_out == len(model)
    files = [f for sp in t.plan() for f in sp.files]
    assert all(f.level == 5 and f.delete_row_count == 0 for f in files)
    assert _state(t) == model
    assert t.compact(full=True).snapshot_id is None  # nothing left to do


def test_compaction_with_small_chunks_bounds_memory_and_rolls_files(catalog):
    t = _pk(catalog, "db.small", **{"target-file-size": "16 kb", "bucket": "1"})
    rng = np.random.default_rng(11)
    model: dict[int, int] = {}
    for i in range(6):
        _write_random(t, rng, model, i, n=3000, keys=20000)
    plan = plan_compaction(t.store, full=True)
    msgs = [run_compaction_task(t.store, task, chunk_rows=500) for task in plan.tasks]
    assert sum(len(m.compact_after) for m in msgs) > 3
    t.new_committer("c").commit(msgs)
    assert _state(t) == model
    _assert_levels_disjoint(t)


def test_inline_compaction_in_writers_without_write_only(catalog):
    t = _pk(catalog, "db.inline", **{"write-only": "false", "bucket": "1"})
    rng = np.random.default_rng(5)
    model: dict[int, int] = {}
    for i in range(12):
        _write_random(t, rng, model, i, n=50, keys=200)
    kinds = [s.commit_kind for s in t.snapshots()]
    assert CommitKind.COMPACT in kinds
    assert max(r["sorted_runs"] for r in t.health().to_pylist()) <= 5
    assert _state(t) == model


def test_append_small_file_compaction(catalog):
    t = catalog.create_table("db.app", pa.schema([("x", pa.int64())]), options={"compaction.min.file-num": "3"})
    for i in range(6):
        t.write_arrow(pa.table({"x": np.arange(i * 10, i * 10 + 10)}))
    res = t.compact()
    assert res.files_in == 6 and res.files_out == 1
    assert sorted(t.to_arrow().column("x").to_pylist()) == list(range(60))
    files = [f for sp in t.plan() for f in sp.files]
    assert (files[0].min_sequence_number, files[0].max_sequence_number) == (0, 59)


def test_second_compaction_of_same_files_conflicts_and_cleans_up(catalog):
    t = _pk(catalog, "db.conflict")
    rng = np.random.default_rng(1)
    model: dict[int, int] = {}
    for i in range(5):
        _write_random(t, rng, model, i)
    plan_a = plan_compaction(t.store, full=True)
    plan_b = plan_compaction(t.store, full=True)
    msgs_a = [run_compaction_task(t.store, task) for task in plan_a.tasks]
    msgs_b = [run_compaction_task(t.store, task) for task in plan_b.tasks]
    t.new_committer("a").commit(msgs_a)
    before = t.latest_snapshot().id
    with pytest.raises(CommitConflictError, match="already deleted"):
        t.new_committer("b").commit(msgs_b)
    assert t.latest_snapshot().id == before
    assert not any(t.file_io.exists(t.store.data_file_path(m.partition, m.bucket, f)) for m in msgs_b
                   for f in m.compact_after)
    assert _state(t) == model


def test_append_during_compaction_does_not_conflict(catalog):
    t = _pk(catalog, "db.race")
    rng = np.random.default_rng(2)
    model: dict[int, int] = {}
    for i in range(5):
        _write_random(t, rng, model, i)
    plan = plan_compaction(t.store, full=True)
    msgs = [run_compaction_task(t.store, task) for task in plan.tasks]
    _write_random(t, rng, model, 99)  # lands between planning and committing
    assert t.new_committer("compactor").commit(msgs)
    assert _state(t) == model


def test_writer_and_compactor_loop_concurrently(catalog):
    """A write-only writer and a compactor run together for a bounded time; nothing is lost."""
    t = _pk(catalog, "db.loop", **{"bucket": "2"})
    model: dict[int, int] = {}
    stop = threading.Event()
    errors: list[BaseException] = []
    acknowledged: list[int] = []

    def writer() -> None:
        rng = np.random.default_rng(9)
        i = 0
        try:
            while not stop.is_set() and i < 60:
                _write_random(t, rng, model, i, n=100, keys=500)
                acknowledged.append(i)
                i += 1
        except BaseException as exc:
            errors.append(exc)

    def compactor() -> None:
        try:
            while not stop.is_set():
                # a conflict means another compaction won the same files; the next loop retries
                with contextlib.suppress(CommitConflictError):
                    t.compact(full=bool(np.random.default_rng().integers(0, 2)))
                time.sleep(0.005)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer), threading.Thread(target=compactor)]
    for th in threads:
        th.start()
    threads[0].join(timeout=60)
    stop.set()
    threads[1].join(timeout=60)
    assert not errors, errors
    assert _state(t) == model
    kinds = {s.commit_kind for s in t.snapshots()}
    assert CommitKind.COMPACT in kinds
    for s in t.snapshots():
        t.to_arrow(snapshot_id=s.id)  # every snapshot on the way reads
    _assert_levels_disjoint(t)
