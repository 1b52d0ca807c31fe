"""The process-wide pool of whole-table reads (`ops.read_pool`): its workers serve read after read,
reads inside a task and reads from several threads at once neither deadlock nor mix rows, a forked
child reads with a pool of its own, and a changed CPU budget gets a pool of that size."""

from __future__ import annotations

import gc
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops.read import SplitReader
from lake_assets.ops.read_pool import in_reader_pool, reader_pool, reader_pool_workers
from lake_assets.parallelism import CPUS_ENV

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])


@pytest.fixture
def table(tmp_path: Path):
    """A deletion-vector table of 4 buckets compacted into files on two levels: a read of several tasks."""
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k"],
                         options={"bucket": "4", "deletion-vectors.enabled": "true"})
    t.write_arrow(pa.table({"k": list(range(2_000)), "v": [f"a{k % 5}" for k in range(2_000)]}, schema=SCHEMA))
    t.write_arrow(pa.table({"k": list(range(0, 2_000, 7)), "v": ["b"] * 286}, schema=SCHEMA))
    return t


def serial(table) -> pa.Table:
    reader = SplitReader(table.store, table.schema)
    return pa.concat_tables([part for split in table.plan() for part in reader.read_split(split)])


def pool_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("lake-read")}


def test_reads_reuse_the_same_workers(table) -> None:
    want = serial(table)
    assert table.to_arrow().equals(want)
    workers = pool_threads()
    assert 0 < len(workers) <= reader_pool_workers()
    for _ in range(3):
        assert table.to_arrow().equals(want)
    assert pool_threads() == workers  # no thread started or lost per read
    assert not in_reader_pool()


def test_a_read_inside_a_task_reads_on_its_worker(table) -> None:
    want = serial(table)
    pool = reader_pool()
    # every worker busy with a read of its own: one that queued its tasks behind them would
    # wait for ever, with every worker waiting on it
    futures = [pool.submit(lambda: (in_reader_pool(), table.to_arrow())) for _ in range(reader_pool_workers())]
    for future in futures:
        inside, got = future.result(timeout=300)
        assert inside and got.equals(want)


def test_reads_from_several_threads_share_the_pool_and_keep_their_rows(table, tmp_path: Path) -> None:
    other = Catalog(str(tmp_path / "wh")).create_table(
        "db.u", SCHEMA, primary_keys=["k"], options={"bucket": "3", "deletion-vectors.enabled": "true"})
    other.write_arrow(pa.table({"k": list(range(500)), "v": ["u"] * 500}, schema=SCHEMA))
    other.write_arrow(pa.table({"k": list(range(0, 500, 3)), "v": ["w"] * 167}, schema=SCHEMA))
    wants = [serial(table), serial(other)]
    with ThreadPoolExecutor(max_workers=4) as callers:
        results = list(callers.map(lambda i: ([table, other][i % 2].to_arrow(), i % 2), range(12)))
    for got, which in results:
        assert got.equals(wants[which])


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX")
def test_a_forked_child_reads_with_a_pool_of_its_own(table) -> None:
    want = serial(table)
    assert table.to_arrow().equals(want)  # the parent's pool exists, its workers started
    parent_pool = reader_pool()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the inherited pool has no threads; a read must not wait on them
        code = 1
        try:
            os.close(read_end)
            ok = reader_pool() is not parent_pool and table.to_arrow().equals(want)
            code = 0 if ok else 2
        finally:
            os.write(write_end, bytes([code]))
            os._exit(code)
    os.close(write_end)
    _, status = os.waitpid(pid, 0)
    got = os.read(read_end, 1)
    os.close(read_end)
    assert got == b"\x00" and os.waitstatus_to_exitcode(status) == 0


def test_a_changed_cpu_budget_gets_a_pool_of_that_size(table, monkeypatch: pytest.MonkeyPatch) -> None:
    want = serial(table)
    monkeypatch.setenv(CPUS_ENV, "3")
    assert reader_pool_workers() == 3
    pool = reader_pool()
    assert pool._max_workers == 3 and reader_pool() is pool
    assert table.to_arrow().equals(want)
    monkeypatch.setenv(CPUS_ENV, "2")
    assert reader_pool()._max_workers == 2
    assert table.to_arrow().equals(want)


def test_a_resized_pool_still_serves_the_reads_holding_it_then_its_threads_exit(
    table, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(CPUS_ENV, "3")
    old = reader_pool()
    assert old.submit(lambda: 1).result(timeout=60) == 1  # its worker thread started
    old_threads = set(old._threads)
    monkeypatch.setenv(CPUS_ENV, "2")
    new = reader_pool()
    assert new is not old
    # a read on another thread that took the old pool a moment before may still submit to it
    assert old.submit(lambda: 2).result(timeout=60) == 2
    assert table.to_arrow().equals(serial(table))
    del old
    gc.collect()
    for thread in old_threads:
        thread.join(timeout=60)
        assert not thread.is_alive()  # the pool let go: its idle threads left once it was collected
