"""The spilling writer's counts (`SpillStats`), the bound of its commit-time merges, and the
release of each pool task's freed allocator pages (issue 17 §2, round 4)."""

from __future__ import annotations

import tempfile
import threading

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops import spill as spill_mod
from lake_assets.ops import write_spill

SCHEMA = pa.schema([("k", pa.int64()), ("p", pa.string()), ("v", pa.int64()), ("s", pa.string())])


@pytest.fixture(autouse=True)
def private_tmp(tmp_path, monkeypatch):
    root = tmp_path / "spill-root"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))


def _table(tmp_path, **opts: str):
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat.create_table("db.t", SCHEMA, primary_keys=["k", "p"], partition_keys=["p"],
                            options={"bucket": "2", "write-only": "true", "write-buffer-size": "64 kb", **opts})


def _batches(n: int, rows: int, keys: int) -> list[pa.Table]:
    rng = np.random.default_rng(7)
    out = []
    for _ in range(n):
        k = rng.integers(0, keys, rows)
        s = np.array([f"s{x:05d}" for x in rng.integers(0, 50_000, rows)], dtype=object)
        out.append(pa.table({"k": k, "p": np.array(["a", "b"], dtype=object)[k % 2],
                             "v": rng.integers(0, 1000, rows), "s": s}, schema=SCHEMA))
    return out


def _write(t, batches: list[pa.Table]):
    w = t.new_writer("u")
    try:
        for b in batches:
            w.write_arrow(b)
        t.new_committer("u").commit(w.prepare_commit(), 1)
        return w.spill_stats
    finally:
        w.close()


def test_spill_stats_count_runs_rows_and_the_largest_merge_fan_in(tmp_path, monkeypatch):
    """Every run written is counted with its rows; every merge of runs with its inputs, which
    local-sort.max-num-file-handles bounds (a bucket at the limit folds its runs first)."""
    written: list[int] = []
    fan_ins: list[int] = []
    original_write = spill_mod.SpillDirectory.write_run
    original_merged = write_spill.WriteBufferSpill.merged

    def write_run(self, chunks, schema, key_names):
        run = original_write(self, chunks, schema, key_names)
        written.append(run.rows)
        return run

    def merged(self, inputs, merge):
        fan_ins.append(len(inputs))
        return original_merged(self, inputs, merge)

    monkeypatch.setattr(spill_mod.SpillDirectory, "write_run", write_run)
    monkeypatch.setattr(write_spill.WriteBufferSpill, "merged", merged)
    t = _table(tmp_path, **{"local-sort.max-num-file-handles": "4"})
    batches = _batches(20, 2000, 30_000)
    stats = _write(t, batches)
    assert stats is not None
    assert len(written) > 8  # runs per bucket beyond the limit: folds happened
    assert (stats.runs, stats.rows) == (len(written), sum(written))
    assert stats.merges == len(fan_ins) and stats.max_fan_in == max(fan_ins)
    assert stats.max_fan_in == 4  # a fold merges exactly the limit; a commit merges at most that
    assert t.to_arrow().num_rows == len({(k, k % 2) for b in batches for k in b["k"].to_pylist()})


def test_a_writer_that_does_not_spill_has_no_spill_stats(tmp_path):
    t = _table(tmp_path, **{"write-buffer-spillable": "false"})
    assert _write(t, _batches(2, 500, 1000)) is None


def test_spill_merge_bound_is_batch_times_handles_times_buckets_at_once(monkeypatch):
    monkeypatch.setattr(write_spill, "bucket_flush_threads", lambda: 2)
    batch = spill_mod.spill_batch_bytes(64 * 2**20, 128)
    assert batch == 512 * 1024
    assert write_spill.spill_merge_bound_bytes(64 * 2**20, 128) == 2 * 64 * 2**20
    # the batch floor makes the bound larger than a buffer for tiny buffers; still options only
    assert write_spill.spill_merge_bound_bytes(2**20, 128) == 2 * 128 * spill_mod.MIN_SPILL_BATCH_BYTES


def test_each_round_of_bucket_tasks_ends_with_one_release_on_each_thread(tmp_path, monkeypatch):
    """The allocator keeps a thread's freed pages in that thread's heap; after each round of
    per-bucket tasks (a spill of every bucket, the commit-time merges) every thread that ran them
    gives them back once - not after every task, which cost a load about 6% CPU in page faults."""
    from lake_assets.ops import allocator
    from lake_assets.ops.level0_flush import Level0Flush
    from lake_assets.ops.write import TableWriter

    events: list[tuple[str, str]] = []  # list.append is atomic: threads may interleave
    original_each = TableWriter._each
    original_spill = write_spill.WriteBufferSpill.spill
    original_merge = Level0Flush._merge_runs

    def each(self, fn, bufs, **kwargs):
        events.append(("round", str(len(bufs))))
        original_each(self, fn, bufs, **kwargs)

    def spill_task(self, buf):
        original_spill(self, buf)
        events.append(("task", threading.current_thread().name))

    def merge_task(self, buf):
        original_merge(self, buf)
        events.append(("task", threading.current_thread().name))

    monkeypatch.setattr(allocator, "release_thread_memory",
                        lambda: events.append(("release", threading.current_thread().name)))
    monkeypatch.setattr(TableWriter, "_each", each)
    monkeypatch.setattr(write_spill.WriteBufferSpill, "spill", spill_task)
    monkeypatch.setattr(Level0Flush, "_merge_runs", merge_task)
    stats = _write(_table(tmp_path), _batches(6, 2000, 30_000))
    assert stats is not None and stats.runs > 2
    rounds: list[tuple[int, list[tuple[str, str]]]] = []
    for kind, detail in events:
        if kind == "round":
            rounds.append((int(detail), []))
        else:
            rounds[-1][1].append((kind, detail))
    assert len(rounds) >= 2  # spills, then the commit-time merges
    for buckets, round_ in rounds:
        kinds = [kind for kind, _ in round_]
        releases = [name for kind, name in round_ if kind == "release"]
        assert buckets == 4 and kinds.count("task") == buckets  # 2 partitions x 2 buckets
        assert kinds == ["task"] * buckets + ["release"] * len(releases)  # after the round, not per task
        # once on each of the writer's threads
        assert len(releases) == len(set(releases)) == min(buckets, write_spill.bucket_flush_threads())
        assert all(name.startswith("lake-writer") for name in releases)


def test_the_writer_keeps_one_set_of_threads_for_all_its_spills_and_hands_them_back_at_close(tmp_path, monkeypatch):
    """Routing, spills and flushes run on the writer's own threads for its whole life (a thread
    that ends leaves its freed allocator pages behind, so a fresh pool per flush grew the
    resident memory with the number of flushes); `close` hands them back, idle, and the next
    writer's spills run on the same threads (`ops.kept_pool`)."""
    from lake_assets.ops import kept_threads

    kept_threads.forget_idle_kept_threads()
    existing: list[set[threading.Thread]] = []
    threads: list[set[threading.Thread]] = []
    original_spill = write_spill.WriteBufferSpill.spill

    def spill_task(self, buf):
        threads[-1].add(threading.current_thread())
        original_spill(self, buf)

    monkeypatch.setattr(write_spill.WriteBufferSpill, "spill", spill_task)
    t = _table(tmp_path)
    for _ in range(2):
        threads.append(set())
        existing.append(set(threading.enumerate()))
        w = t.new_writer("u")
        try:
            for b in _batches(8, 2000, 30_000):
                w.write_arrow(b)
            stats = w.spill_stats
            assert stats is not None and stats.runs >= 3 * 2  # several flushes of both buckets
            assert 1 <= len(threads[-1]) <= write_spill.bucket_flush_threads()
            t.new_committer("u").commit(w.prepare_commit(), 1)
        finally:
            w.close()
        assert all(th.is_alive() and th.name.startswith(kept_threads.IDLE_NAME) for th in threads[-1])
        assert kept_threads.idle_kept_threads() >= len(threads[-1])
    assert threads[1] <= existing[1]  # the second writer started none


def test_an_executor_that_runs_tasks_inline_releases_on_the_calling_thread(monkeypatch):
    """`bench.cpu_breakdown` swaps the writer's pools for an inline executor: the per-thread
    release must not hold its tasks at a barrier there (they would wait for each other)."""
    from concurrent.futures import Executor, Future

    from lake_assets.ops import allocator

    class Inline(Executor):
        def submit(self, fn, /, *args, **kwargs):
            future: Future = Future()
            future.set_result(fn(*args, **kwargs))
            return future

    calls: list[str] = []
    monkeypatch.setattr(allocator, "release_thread_memory", lambda: calls.append(threading.current_thread().name))
    monkeypatch.setattr(allocator, "_RELEASE_MEET_S", 60.0)  # a barrier here would hang the test
    allocator.release_pool_threads(Inline(), 2)
    assert calls == [threading.current_thread().name]


def test_a_commit_of_a_small_buffer_releases_nothing(tmp_path, monkeypatch):
    """A round that neither spills nor merges spilled runs (an upsert that fits the write buffer)
    frees little, and a release would only make the next round fault its pages in again."""
    from lake_assets.ops import allocator

    releases: list[str] = []
    monkeypatch.setattr(allocator, "release_thread_memory",
                        lambda: releases.append(threading.current_thread().name))
    t = _table(tmp_path, **{"write-buffer-size": "64 mb"})
    stats = _write(t, _batches(2, 2000, 30_000))  # four buckets flushed in one round
    assert stats is None or stats.runs == 0  # no spill
    assert releases == []
    assert t.to_arrow().num_rows > 0
