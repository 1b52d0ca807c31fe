"""``visibility-callback.enabled`` (Paimon HEAD's VisibilityWaitCallback, ops/visibility_wait.py):
a batch commit to a postpone-bucket table, or to a deletion-vector table at level 0, returns only
once another job's compaction has removed the files it added from the latest snapshot; on
timeout `CommitNotVisibleError` says the commit landed."""

from __future__ import annotations

import threading
import time

import pyarrow as pa
import pytest

from lake_assets import Catalog, CommitNotVisibleError, LakeError, Table
from lake_assets.ops import visibility_wait
from lake_assets.ops.visibility_wait import invisible_entries, wait_for_visibility
from lake_assets.spec.manifest import FileKind
from lake_assets.table_support import POSTPONE_BUCKET

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string())])
WAIT = {"visibility-callback.enabled": "true", "visibility-callback.check-interval": "50 ms",
        "visibility-callback.timeout": "60 s"}


def rows(ks: list[int], v: str = "a") -> pa.Table:
    return pa.table({"k": ks, "dt": ["d1"] * len(ks), "v": [f"{v}{k}" for k in ks]}, schema=SCHEMA)


def postpone_table(catalog: Catalog, **options: str) -> Table:
    return catalog.create_table("db.t", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                                options={"bucket": "-2", **options})


def _added_by(table: Table, snapshot_id: int) -> list[str]:
    snap = table.snapshot_manager.snapshot(snapshot_id)
    return [e.file.file_name for e in table.store.file_store_scan().delta_entries(snap) if e.kind is FileKind.ADD]


class Writer(threading.Thread):
    """A batch write on its own thread (the job that waits), recording its outcome."""

    def __init__(self, table: Table, data: pa.Table) -> None:
        super().__init__(daemon=True)
        self.table, self.data = table, data
        self.error: BaseException | None = None
        self.finished_at: float | None = None

    def run(self) -> None:
        try:
            self.table.write_arrow(self.data)
        except BaseException as exc:  # reported by the test
            self.error = exc
        self.finished_at = time.monotonic()


def _await_snapshot(table: Table, sid: int, writer: Writer) -> None:
    deadline = time.monotonic() + 60
    while (table.snapshot_manager.latest_id() or 0) < sid:
        assert writer.is_alive() and time.monotonic() < deadline, writer.error
        time.sleep(0.02)


def test_postpone_write_waits_for_another_jobs_compaction(catalog: Catalog):
    t = postpone_table(catalog, **WAIT)
    writer = Writer(catalog.get_table("db.t"), rows([1, 2, 3]))
    writer.start()
    _await_snapshot(t, 1, writer)
    time.sleep(0.3)  # several checks: the writer is still waiting, its rows invisible
    assert writer.is_alive() and writer.error is None
    assert t.refresh().to_arrow().num_rows == 0
    assert all("bucket-postpone" not in n for n in _added_by(t, 1))  # names only; the entries are postponed
    compacted_at = time.monotonic()
    t.refresh().compact()  # the other job: moves the postponed rows into real buckets
    writer.join(30)
    assert not writer.is_alive() and writer.error is None
    assert writer.finished_at is not None and writer.finished_at >= compacted_at
    assert sorted(t.refresh().to_arrow().column("k").to_pylist()) == [1, 2, 3]
    assert t.snapshot_manager.latest_id() == 2  # the write's APPEND, the compaction's COMPACT


def test_timeout_says_the_commit_landed_and_leaves_it(catalog: Catalog):
    t = postpone_table(catalog, **{**WAIT, "visibility-callback.timeout": "300 ms"})
    with pytest.raises(CommitNotVisibleError, match=r"db\.t landed as snapshot 1.*1 of its 1 file.*bucket-postpone"
                       r".*visibility-callback\.timeout \(0\.3 s") as info:
        t.write_arrow(rows([1, 2]))
    assert isinstance(info.value, LakeError)
    assert info.value.snapshot_ids == (1,) and info.value.pending == 1 and info.value.table == "db.t"
    # the commit stands: its files are live, a compaction makes the rows visible
    assert t.refresh().snapshot_manager.latest_id() == 1
    t.compact()
    assert sorted(t.refresh().to_arrow().column("k").to_pylist()) == [1, 2]


def test_without_the_option_or_with_real_buckets_nothing_waits(catalog: Catalog):
    t = postpone_table(catalog)
    t.write_arrow(rows([1]))  # postponed, returns at once
    assert t.refresh().to_arrow().num_rows == 0
    fixed = catalog.create_table("db.f", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                                 options={"bucket": "2", **WAIT, "visibility-callback.timeout": "1 ms"})
    fixed.write_arrow(rows([1, 2]))  # a fixed-bucket table without deletion vectors: visible at once
    assert fixed.refresh().to_arrow().num_rows == 2


def test_deletion_vector_level0_waits_unless_the_commit_compacted_them(catalog: Catalog):
    opts = {"bucket": "1", "deletion-vectors.enabled": "true", **WAIT}
    inline = catalog.create_table("db.inline", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"], options=opts)
    inline.write_arrow(rows([1, 2]))  # its own commit compacts level 0 (lookup): nothing left to wait for
    assert inline.refresh().to_arrow().num_rows == 2
    t = catalog.create_table("db.wo", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                             options={**opts, "write-only": "true"})
    writer = Writer(catalog.get_table("db.wo"), rows([1, 2]))
    writer.start()
    _await_snapshot(t, 1, writer)
    time.sleep(0.3)
    assert writer.is_alive() and writer.error is None
    t.refresh().compact(full=True)
    writer.join(30)
    assert not writer.is_alive() and writer.error is None
    assert t.refresh().to_arrow().num_rows == 2


def test_a_check_reads_only_new_deltas_and_falls_back_when_they_expired(catalog: Catalog, monkeypatch):
    t = postpone_table(catalog)  # written without waiting; the wait is driven directly below
    t.write_arrow(rows([1]))  # snapshot 1: the commit of interest
    store = t.store
    pending = invisible_entries(store, store.file_store_scan().delta_entries(store.snapshot_manager.snapshot(1)), [])
    assert len(pending) == 1 and next(iter(pending)).bucket == POSTPONE_BUCKET
    t.refresh().compact()  # snapshot 2 deletes it
    scan_type = type(store.file_store_scan())
    read: list[int] = []
    real_delta = scan_type.delta_entries

    def counting(self, snapshot):  # type: ignore[no-untyped-def]
        read.append(snapshot.id)
        return real_delta(self, snapshot)

    monkeypatch.setattr(scan_type, "delta_entries", counting)
    assert wait_for_visibility(store, [1], pending, sleep=lambda s: None) == 2
    assert read == [2]  # only the snapshot after the commit, not its own or the base
    # snapshot 2 expired: the check reads the latest snapshot's files instead of the deltas
    t.refresh().write_arrow(rows([9]))  # snapshot 3
    store.file_io.delete(store.paths.snapshot_file(2))
    read.clear()
    assert wait_for_visibility(store, [1], pending, sleep=lambda s: None) == 3
    assert read == []
    # still listed in the latest snapshot (nothing compacted it): waits, then times out
    t.refresh().write_arrow(rows([5]))  # snapshot 4, its postponed file pending
    pending4 = invisible_entries(store, store.file_store_scan().delta_entries(store.snapshot_manager.snapshot(4)), [])
    slept: list[float] = []
    monkeypatch.setattr(visibility_wait.time, "monotonic", iter([0.0, 0.0, 5.0, 2000.0]).__next__)
    with pytest.raises(CommitNotVisibleError, match=r"snapshot 4.*1800 s"):
        wait_for_visibility(store, [4], pending4, sleep=slept.append)
    assert slept == [10.0, 10.0]  # visibility-callback.check-interval's default (10 s), checked until 1800 s


def test_no_pending_files_returns_at_once(catalog: Catalog, monkeypatch):
    t = postpone_table(catalog, **{**WAIT, "visibility-callback.timeout": "0 ms"})
    monkeypatch.setattr(visibility_wait.time, "sleep", lambda s: pytest.fail("slept"))
    assert wait_for_visibility(t.store, [7], set()) == 7
