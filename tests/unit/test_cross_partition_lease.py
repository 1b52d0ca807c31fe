"""A long-lived cross-partition writer's lease on the snapshots from its key-index base on
(ops/writer_lease.py, issue 14 round 4): expiry keeps them while the writer lives and renews it,
and not after it closed or its lease ran out (a crashed writer pins nothing forever)."""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog, Table
from lake_assets.errors import CorruptMetadataError
from lake_assets.ops.expire import expire_snapshots
from lake_assets.ops.writer_lease import LEASE_PREFIX

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), ("name", pa.string()),
                    pa.field("dt", pa.string(), nullable=False)])
HOUR_MS = 3_600_000


def _table(tmp_path: Path, **options: str) -> Table:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat.create_table("db.t", SCHEMA, primary_keys=["id"], partition_keys=["dt"],
                            options={"dynamic-bucket.target-row-num": "10", **options})


def _rows(ids: list[int], dt: str) -> pa.Table:
    return pa.table({"id": ids, "name": [f"n{i}" for i in ids], "dt": [dt] * len(ids)}, schema=SCHEMA)


def _leases(t: Table) -> dict[str, tuple[int, int | None]]:
    consumers = t.refresh().store.consumer_manager().consumers()
    return {cid: (c.next_snapshot, c.lease_until_ms) for cid, c in consumers.items() if cid.startswith(LEASE_PREFIX)}


def _expire(t: Table, now_ms: int | None = None) -> None:
    """Everything but the latest snapshot, at ``now_ms`` (the wall clock by default)."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    expire_snapshots(t.refresh().store, retain_min=1, retain_max=1, older_than_ms=now_ms + HOUR_MS, now_ms=now_ms)


def test_a_writer_holds_its_base_until_it_closes(tmp_path: Path) -> None:
    """Another user's appends stop the writer's base moving; expiry keeps the base and what
    follows while the writer is open (its commit checks them), and drops the lease with it."""
    t = _table(tmp_path)
    for i in range(3):
        t.refresh().write_arrow(_rows([i], "a"))
    before = int(time.time() * 1000)  # whole ms, as the lease stores its end
    with t.refresh().new_writer("w") as w:
        w.write_arrow(_rows([0], "b"))  # key 0 moves a -> b
        (lease,) = _leases(t).values()
        assert lease[0] == 3  # the snapshot its index was read from
        assert lease[1] is not None and before + HOUR_MS <= lease[1] <= time.time() * 1000 + HOUR_MS
        messages = w.prepare_commit()
        for i in (5, 6):
            t.refresh().write_arrow(_rows([i], "c"))
        _expire(t)
        assert t.refresh().snapshot_manager.earliest_id() == 3
        t.new_committer("w").commit(messages, 1)
        w.write_arrow(_rows([7], "a"))  # the base cannot move past the other user's snapshot 4
        assert [v[0] for v in _leases(t).values()] == [3]
    assert _leases(t) == {}
    _expire(t)
    assert t.refresh().snapshot_manager.earliest_id() == t.refresh().latest_snapshot().id  # type: ignore[union-attr]
    assert sorted((r["id"], r["dt"]) for r in t.refresh().to_arrow().to_pylist()) == [
        (0, "b"), (1, "a"), (2, "a"), (5, "c"), (6, "c")]


def test_the_lease_follows_the_base_over_the_writers_own_commits(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.write_arrow(_rows([1, 2], "a"))
    with t.refresh().new_writer("w") as w:
        for r, dt in enumerate(["b", "c", "a"]):
            w.write_arrow(_rows([1], dt))
            t.new_committer("w").commit(w.prepare_commit(), r)
        # moved at the prepare over the two commits before, then at the next write over the last
        assert [v[0] for v in _leases(t).values()] == [3]
        w.write_arrow(_rows([2], "b"))
        assert [v[0] for v in _leases(t).values()] == [4]
        _expire(t)
        assert t.refresh().snapshot_manager.earliest_id() == 4


def test_a_crashed_writers_lease_runs_out(tmp_path: Path) -> None:
    """A writer that never closes (its process died) pins the snapshots until its lease ends
    (``consumer.expiration-time`` here, else ``snapshot.time-retained``): an expiry after that
    leaves it out and deletes it; a new writer starting deletes such leases too."""
    t = _table(tmp_path, **{"consumer.expiration-time": "10 min"})
    t.write_arrow(_rows([1], "a"))
    crashed = t.refresh().new_writer("crashed")
    crashed.write_arrow(_rows([1], "b"))  # holds snapshot 1; never closed
    (lease,) = _leases(t).values()
    assert lease[1] is not None and lease[1] - time.time() * 1000 <= 600_000
    for i in (2, 3):
        t.refresh().write_arrow(_rows([i], "a"))
    _expire(t)
    assert t.refresh().snapshot_manager.earliest_id() == 1
    _expire(t, now_ms=lease[1] + 1)
    assert t.refresh().snapshot_manager.earliest_id() == 3
    assert _leases(t) == {}
    # a lease that ran out is removed by the next writer to start, a reader's position is not
    consumers = t.refresh().store.consumer_manager()
    consumers.record(LEASE_PREFIX + "dead", 3, int(time.time() * 1000) - 1)
    consumers.record("reader", 3)
    with t.refresh().new_writer("w") as w:
        w.write_arrow(_rows([9], "a"))
        assert [cid for cid in consumers.consumers() if cid.startswith(LEASE_PREFIX + "dead")] == []
        assert consumers.get("reader") is not None
    crashed.close()


def test_without_consumer_expiration_the_lease_is_the_snapshot_retention(tmp_path: Path) -> None:
    t = _table(tmp_path, **{"snapshot.time-retained": "2 h"})
    with t.refresh().new_writer("w") as w:
        w.write_arrow(_rows([1], "a"))  # an empty table: held from snapshot 1 on
        ((first, until),) = _leases(t).values()
        assert first == 1 and until is not None and until - time.time() * 1000 > HOUR_MS
        t.new_committer("w").commit(w.prepare_commit(), 1)
    t.refresh().expire_snapshots(retain_min=1, older_than=datetime.now() + timedelta(days=1))
    assert _leases(t) == {}


def test_a_corrupt_consumer_file_fails_expiry_not_a_write(tmp_path: Path) -> None:
    """A writer's sweep of lapsed leases is housekeeping: a consumer file it cannot read is left
    to the table's expiry, which refuses it by name (it cannot tell which snapshots it keeps)."""
    t = _table(tmp_path)
    store = t.store
    store.file_io.write_bytes(store.paths.consumer_file("broken"), b"not json")
    t.write_arrow(_rows([1], "a"))
    t.refresh().write_arrow(_rows([1], "b"))
    assert [(r["id"], r["dt"]) for r in t.refresh().to_arrow().to_pylist()] == [(1, "b")]
    with pytest.raises(CorruptMetadataError, match="consumer-broken"):
        _expire(t)
