"""The table operations on a real S3 API (moto's server on loopback) through s3fs."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

import pyarrow as pa

from lake_assets import Catalog
from lake_assets.io.file_io import FileIO


def test_put_if_absent_is_a_conditional_put(s3_warehouse):
    wh, opts = s3_warehouse
    fio, root = FileIO.for_url(wh, **opts)
    path = f"{root}/snapshot/snapshot-1"
    results = []
    barrier = threading.Barrier(8)

    def race(i: int) -> None:
        barrier.wait()
        results.append(fio.try_create(path, f"writer-{i}".encode()))

    threads = [threading.Thread(target=race, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count(True) == 1  # exactly one writer gets snapshot 1
    winner = results.index(True)
    del winner
    assert fio.read_bytes(path).startswith(b"writer-")


def test_table_lifecycle_on_s3(s3_warehouse):
    wh, opts = s3_warehouse
    cat = Catalog(wh, **opts)
    cat.create_database("db")
    assert cat.list_databases() == ["db"]
    t = cat.create_table("db.t", pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.string())]),
                         primary_keys=["k", "dt"], partition_keys=["dt"],
                         options={"bucket": "2", "write-only": "true"})
    assert cat.list_tables("db") == ["t"]
    t.write_arrow(pa.table({"k": [1, 2, 3], "dt": ["a", "a", "b"], "v": ["x", "y", "z"]}, schema=t.arrow_schema))
    t.write_arrow(pa.table({"k": [2], "dt": ["a"], "v": ["y2"]}, schema=t.arrow_schema))
    t.create_tag("v2")
    t.write_arrow(pa.table({"k": [9], "dt": ["a"], "v": ["n"]}, schema=t.arrow_schema), overwrite={"dt": "a"})
    t2 = Catalog(wh, **opts).get_table("db.t")  # a fresh process's view
    assert sorted(t2.to_arrow().column("k").to_pylist()) == [3, 9]
    assert sorted(t2.to_arrow(tag="v2").column("v").to_pylist()) == ["x", "y2", "z"]
    assert t2.compact(full=True).snapshot_id is not None
    t2.expire_snapshots(retain_min=1, older_than=datetime.now() + timedelta(days=1))
    assert len(t2.snapshots()) == 1
    assert sorted(t2.to_arrow(tag="v2").column("v").to_pylist()) == ["x", "y2", "z"]
    deleted = t2.delete_tag("v2")  # the overwritten partition's files only the tag kept go with it
    assert deleted.deleted_data_files and deleted.deleted_manifests
    assert not any(t2.file_io.exists(p) for p in deleted.deleted_data_files)
    assert t2.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True).paths == []
    assert sorted(t2.to_arrow().column("k").to_pylist()) == [3, 9]
    health = t2.health()
    assert health.num_rows == 2
    cat.drop_table("db.t")
    assert cat.list_tables("db") == []
