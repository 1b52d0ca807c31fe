"""Snapshot expiration, tags, consumers, rollback and orphan removal."""

from __future__ import annotations

import os
import time
from datetime import datetime, timedelta

import pyarrow as pa
import pytest

from lake_assets import AlreadyExistsError, Catalog, SnapshotNotFoundError
from lake_assets.ops.expire import plan_expire

# a cut-off in the future: every snapshot counts as old enough, so only the counts decide
_EVERYTHING = datetime.now() + timedelta(days=1)


@pytest.fixture
def kv(catalog: Catalog):
    return catalog.create_table(
        "db.kv", pa.schema([("k", pa.int64()), ("v", pa.int64())]), primary_keys=["k"],
        options={"bucket": "2", "snapshot.time-retained": "1 ms", "write-only": "true"},
    )


def _write(t, ks, v):
    return t.write_arrow(pa.table({"k": ks, "v": [v] * len(ks)}, schema=t.arrow_schema))


def _all_files(t) -> set[str]:
    return {s.path for s in t.file_io.walk_files(t.paths.root)}


def _state(t, **kw) -> dict:
    return {r["k"]: r["v"] for r in t.to_arrow(**kw).to_pylist()}


def test_plan_expire_rules():
    times = {i: i * 1000 for i in range(1, 21)}
    # keep 5 newest of 20, everything old enough, limit 50
    p = plan_expire(earliest=1, latest=20, retain_min=5, retain_max=100, expire_limit=50, older_than_ms=10**9,
                    time_of=times)
    assert (p.begin, p.end) == (1, 16)
    # time bound: snapshot id expires only if the next one is older than the cut-off
    p = plan_expire(earliest=1, latest=20, retain_min=1, retain_max=100, expire_limit=50, older_than_ms=5500,
                    time_of=times)
    assert (p.begin, p.end) == (1, 5)
    # retain_max forces expiry regardless of time
    p = plan_expire(earliest=1, latest=20, retain_min=1, retain_max=3, expire_limit=50, older_than_ms=0,
                    time_of=times)
    assert (p.begin, p.end) == (1, 18)
    # limit and consumers
    p = plan_expire(earliest=1, latest=20, retain_min=1, retain_max=100, expire_limit=4, older_than_ms=10**9,
                    time_of=times)
    assert p.end == 5
    p = plan_expire(earliest=1, latest=20, retain_min=1, retain_max=100, expire_limit=50, older_than_ms=10**9,
                    time_of=times, consumer_min=7)
    assert p.end == 7
    assert not plan_expire(earliest=5, latest=5, retain_min=1, retain_max=9, expire_limit=50,
                           older_than_ms=10**9, time_of=times)


def test_expire_keeps_retained_snapshots_readable_and_deletes_dead_files(kv):
    states = {}
    for i in range(8):
        sid = _write(kv, [1, 2, 3], i)  # every write supersedes all keys
        states[sid] = _state(kv)
    files_before = _all_files(kv)
    dry = kv.expire_snapshots(retain_min=3, dry_run=True, older_than=_EVERYTHING)
    assert dry.expired_snapshots == [1, 2, 3, 4, 5] and _all_files(kv) == files_before
    res = kv.expire_snapshots(retain_min=3, older_than=_EVERYTHING)
    assert res.expired_snapshots == [1, 2, 3, 4, 5]
    assert [s.id for s in kv.snapshots()] == [6, 7, 8]
    assert kv.snapshot_manager.earliest_id() == 6
    for sid in (6, 7, 8):
        assert _state(kv, snapshot_id=sid) == states[sid]
    with pytest.raises(SnapshotNotFoundError):
        kv.to_arrow(snapshot_id=2)
    # data files only expired snapshots used are gone, and nothing retained is missing
    assert res.deleted_manifests
    for sp in kv.plan(snapshot_id=6):
        for f in sp.files:
            assert kv.file_io.exists(kv.store.data_file_path(sp.partition, sp.bucket, f))
    assert not any(p in _all_files(kv) for p in res.deleted_data_files)
    # nothing left that nobody references
    assert kv.remove_orphan_files(older_than=timedelta(0)).paths == []


def test_tags_protect_files_and_time_travel(kv):
    _write(kv, [1, 2], 1)
    tag = kv.create_tag("v1")
    assert tag.snapshot.id == 1
    with pytest.raises(AlreadyExistsError):
        kv.create_tag("v1")
    for i in range(2, 7):
        _write(kv, [1, 2], i)
    kv.expire_snapshots(retain_min=1, older_than=_EVERYTHING)
    assert [s.id for s in kv.snapshots()] == [6]
    assert _state(kv, tag="v1") == {1: 1, 2: 1}
    assert list(kv.tags()) == ["v1"]
    assert kv.remove_orphan_files(older_than=timedelta(0)).paths == []
    deleted = kv.delete_tag("v1")  # as Paimon: the files only the tag kept go with it
    assert deleted.deleted_manifests  # its lists
    assert not deleted.deleted_data_files  # write-only, never compacted: snapshot 6 still reads them
    assert kv.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True).paths == []
    assert _state(kv) == {1: 6, 2: 6}
    with pytest.raises(SnapshotNotFoundError):
        kv.to_arrow(tag="v1")


def test_consumer_protects_unread_snapshots(kv):
    for i in range(6):
        _write(kv, [i], i)
    kv.store.consumer_manager().record("reader-1", 3)
    time.sleep(0.01)
    kv.expire_snapshots(retain_min=1, older_than=_EVERYTHING)
    assert kv.snapshot_manager.earliest_id() == 3
    assert _state(kv, snapshot_id=3) == {0: 0, 1: 1, 2: 2}
    kv.store.consumer_manager().delete("reader-1")
    time.sleep(0.01)
    kv.expire_snapshots(retain_min=1, older_than=_EVERYTHING)
    assert kv.snapshot_manager.earliest_id() == 6


def test_consumer_expiration_time(catalog: Catalog):
    t = catalog.create_table("db.c", pa.schema([("k", pa.int64()), ("v", pa.int64())]), primary_keys=["k"],
                             options={"bucket": "1", "consumer.expiration-time": "1 h",
                                      "snapshot.time-retained": "1 ms", "write-only": "true"})
    for i in range(4):
        _write(t, [i], i)
    t.store.consumer_manager().record("abandoned", 1)
    path = t.paths.consumer_file("abandoned")
    old = time.time() - 7200
    os.utime(path, (old, old))
    time.sleep(0.01)  # let the newest snapshot age past snapshot.time-retained = 1 ms
    t.expire_snapshots(retain_min=1, older_than=_EVERYTHING)
    assert t.store.consumer_manager().consumers() == {}
    assert t.snapshot_manager.earliest_id() == 4


def test_time_retained_keeps_recent_snapshots(catalog: Catalog):
    t = catalog.create_table("db.tr", pa.schema([("k", pa.int64()), ("v", pa.int64())]), primary_keys=["k"],
                             options={"bucket": "1", "write-only": "true"})  # default 1 h retention
    for i in range(5):
        _write(t, [1], i)
    assert t.expire_snapshots(retain_min=1).expired_snapshots == []
    assert len(t.snapshots()) == 5


def test_time_travel_by_timestamp(kv):
    _write(kv, [1], 1)
    t1 = kv.latest_snapshot().time_millis
    time.sleep(0.01)
    _write(kv, [1], 2)
    assert _state(kv, timestamp=t1) == {1: 1}
    assert _state(kv, timestamp=kv.latest_snapshot().time_millis) == {1: 2}
    with pytest.raises(SnapshotNotFoundError):
        kv.to_arrow(timestamp=t1 - 10_000)


def test_rollback_to_snapshot_and_tag(kv):
    for i in range(1, 5):
        _write(kv, [1], i)
    kv.create_tag("two", 2)
    kv.rollback_to(snapshot_id=3)
    assert kv.latest_snapshot().id == 3 and _state(kv) == {1: 3}
    kv.expire_snapshots(retain_min=1, older_than=_EVERYTHING)
    kv.rollback_to(tag="two")
    assert kv.latest_snapshot().id == 2 and _state(kv) == {1: 2}
    # writing continues from the rolled-back state
    assert _write(kv, [2], 9) == 3
    assert _state(kv) == {1: 2, 2: 9}
    removed = kv.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    assert removed.paths
    assert _state(kv) == {1: 2, 2: 9}


def test_orphan_deletes_below_the_age_floor_need_allow_recent(kv):
    """A bound such as 10min could delete a running write's files (unreferenced until it commits):
    refused before anything is listed or deleted, unless allowed explicitly; a dry run may look."""
    from lake_assets.errors import InvalidArgumentError

    _write(kv, [1], 1)
    stray = os.path.join(kv.paths.root, "bucket-0", "data-in-flight-0.parquet")
    with open(stray, "wb") as f:
        f.write(b"x")
    old = time.time() - 1200  # 20 minutes: a write that has been running that long
    os.utime(stray, (old, old))
    with pytest.raises(InvalidArgumentError, match=r"below its floor of 1h.*allow_recent=True"):
        kv.remove_orphan_files(older_than=timedelta(minutes=10), dry_run=False)
    assert os.path.exists(stray)
    assert kv.remove_orphan_files(older_than=timedelta(minutes=10)).paths == [stray]  # a dry run
    assert kv.remove_orphan_files(older_than=timedelta(hours=1), dry_run=False).paths == []
    assert kv.remove_orphan_files(older_than=timedelta(minutes=10), dry_run=False, allow_recent=True).paths == [stray]
    assert not os.path.exists(stray) and _state(kv) == {1: 1}
