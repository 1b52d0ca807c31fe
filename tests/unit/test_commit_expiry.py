"""Expiry after each commit (`lake_assets.ops.commit_lifecycle.expire_after_commit`), as Paimon's
committer runs it: ``snapshot.expire.limit`` per commit, consumers past ``consumer.expiration-time``,
none of it for a write-only table's writers, and a failure that leaves the landed commit standing.
The same snapshots as Java 0.9's commits: tests/differential/test_commit_expiry_java.py."""

from __future__ import annotations

import logging
import os
import time

import pyarrow as pa
import pytest

from lake_assets import Catalog

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
RETENTION = {"bucket": "-1", "snapshot.num-retained.min": "1", "snapshot.time-retained": "1 ms"}


def _write(catalog: Catalog, i: int) -> int:
    return catalog.get_table("db.t").write_arrow(pa.table({"id": [i], "v": [f"v{i}"]}, schema=SCHEMA))


def _ids(catalog: Catalog) -> list[int]:
    return [s.id for s in catalog.get_table("db.t").snapshots()]


def _table(catalog: Catalog, **options: str) -> None:
    catalog.create_table("db.t", SCHEMA, options={**RETENTION, **options})


def test_each_commit_expires_at_most_the_limit(catalog: Catalog) -> None:
    _table(catalog, **{"write-only": "true", "snapshot.expire.limit": "2"})
    for i in range(5):
        _write(catalog, i)
    assert _ids(catalog) == [1, 2, 3, 4, 5]  # a write-only table's writers expire nothing
    catalog.alter_table_options("db.t", set={"write-only": "false"})
    _write(catalog, 5)
    assert _ids(catalog) == [3, 4, 5, 6]  # 1 and 2: the limit, though only 6 is retained by min
    _write(catalog, 6)
    assert _ids(catalog) == [5, 6, 7]
    _write(catalog, 7)
    assert _ids(catalog) == [7, 8]  # min(8 - 1 + 1, 5 + 2)
    assert sorted(catalog.get_table("db.t").to_arrow().column("v").to_pylist()) == [f"v{i}" for i in range(8)]


def test_consumers_expire_at_commit_unless_write_only(catalog: Catalog) -> None:
    _table(catalog, **{"consumer.expiration-time": "1 h", "snapshot.num-retained.min": "10"})
    _write(catalog, 0)
    store = catalog.get_table("db.t").store
    for cid in ("old", "fresh"):
        store.consumer_manager().record(cid, 1)
    old = store.paths.consumer_file("old")
    os.utime(old, (time.time() - 7200, time.time() - 7200))  # untouched for two hours (a local warehouse)
    catalog.alter_table_options("db.t", set={"write-only": "true"})
    _write(catalog, 1)
    assert sorted(store.consumer_manager().consumers()) == ["fresh", "old"]  # Paimon HEAD: none for write-only
    catalog.alter_table_options("db.t", set={"write-only": "false"})
    _write(catalog, 2)
    assert sorted(store.consumer_manager().consumers()) == ["fresh"]
    assert _ids(catalog) == [1, 2, 3]  # the fresh consumer holds snapshot 1


def test_a_failed_expiry_is_logged_and_the_commit_stands(catalog: Catalog,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    # min 2: the newest snapshot expired would hinge on its successor being 1 ms old (wall clock)
    _table(catalog, **{"write-only": "true", "snapshot.num-retained.min": "2"})
    for i in range(3):
        _write(catalog, i)
    store = catalog.get_table("db.t").store
    damaged = store.paths.snapshot_file(2)
    good = store.file_io.read_bytes(damaged)
    store.file_io.write_bytes(damaged, b"{not json")
    catalog.alter_table_options("db.t", set={"write-only": "false"})
    with caplog.at_level(logging.WARNING, logger="lake_assets.ops.commit"):
        assert _write(catalog, 3) == 4 and _write(catalog, 4) == 5  # neither this commit nor the next fails
    warnings = [r.getMessage() for r in caplog.records if "expiring its old snapshots failed" in r.getMessage()]
    assert len(warnings) == 2 and "db.t" in warnings[0] and "snapshot-2" in warnings[0]
    # expiry stopped on the damaged snapshot before deleting anything
    assert all(store.snapshot_manager.exists(sid) for sid in range(1, 6))
    store.file_io.write_bytes(damaged, good)  # repaired: the next commit expires
    assert _write(catalog, 5) == 6
    assert _ids(catalog) == [5, 6]
    assert sorted(catalog.get_table("db.t").to_arrow().column("v").to_pylist()) == [f"v{i}" for i in range(6)]
