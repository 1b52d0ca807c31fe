"""`lake_assets.store.read_once`: within one operation each snapshot file is read from storage once;
nothing is remembered outside an operation, across operations, in other threads, or of a file the
operation deleted, and an absence is never remembered."""

from __future__ import annotations

import threading
import uuid
from collections import Counter

import pyarrow as pa

from lake_assets import Catalog
from lake_assets.io.memory import MemoryFileIO
from lake_assets.store.read_once import operation_reads, reads_once
from lake_assets.store.snapshot_manager import SnapshotManager


class CountingIO(MemoryFileIO):
    """The memory store, counting the reads that reach it."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: Counter[str] = Counter()

    def read_bytes(self, path: str) -> bytes:
        self.reads[path.rsplit("/", 1)[-1]] += 1
        return super().read_bytes(path)


def _table(snapshots: int):
    cat = Catalog(f"memory://read-once-{uuid.uuid4().hex}")
    cat.create_database("db")
    t = cat.create_table("db.t", pa.schema([("k", pa.int64())]), options={"bucket": "-1"})
    for i in range(snapshots):
        t.write_arrow(pa.table({"k": [i]}))
    io = CountingIO()
    return t, io, SnapshotManager(io, t.store.paths, "db.t")


def test_outside_an_operation_every_read_reaches_storage():
    _, io, sm = _table(1)
    assert sm.snapshot(1) == sm.snapshot(1)
    assert io.reads["snapshot-1"] == 2


def test_within_an_operation_a_snapshot_is_read_once_and_the_cache_ends_with_it():
    _, io, sm = _table(2)
    with operation_reads():
        first = sm.snapshot(1)
        with operation_reads():  # a nested operation shares the outer one's reads
            assert sm.try_snapshot(1) is first
        assert [s.id for s in sm.snapshots()] == [1, 2]
        assert (io.reads["snapshot-1"], io.reads["snapshot-2"]) == (1, 1)
    sm.snapshot(1)
    assert io.reads["snapshot-1"] == 2  # the next operation reads it again


def test_an_absence_is_not_remembered():
    t, io, sm = _table(1)

    @reads_once
    def look_twice() -> tuple[object, object]:
        before = sm.try_snapshot(2)
        t.write_arrow(pa.table({"k": [9]}))  # committed meanwhile by another writer
        return before, sm.try_snapshot(2)

    before, after = look_twice()
    assert before is None and after is not None and after.id == 2
    assert io.reads["snapshot-2"] == 2  # looked for again, not answered from the first miss


def test_a_snapshot_the_operation_deletes_is_forgotten():
    # a rollback deletes snapshot 2; the next commit takes the id 2 again with other content
    t, io, sm = _table(2)
    with operation_reads():
        old = sm.snapshot(2)
        t.rollback_to(snapshot_id=1)  # nested in this operation: its deletes are forgotten here
        t.write_arrow(pa.table({"k": [7]}))
        new = sm.snapshot(2)
    assert new.id == 2 and new != old and io.reads["snapshot-2"] == 2


def test_other_threads_read_for_themselves():
    _, io, sm = _table(1)
    with operation_reads():
        sm.snapshot(1)
        worker = threading.Thread(target=sm.snapshot, args=(1,))
        worker.start()
        worker.join()
        sm.snapshot(1)
    assert io.reads["snapshot-1"] == 2  # this thread's once, the worker's once
