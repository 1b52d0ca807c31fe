"""Dynamic bucket writes (``bucket = -1`` on primary-key tables) against Paimon Java 0.9.

The assigner and the hash index are checked against Java's own (``DynamicBucketOps.java``): the key
and partition hashes, the hashes Java reads back from our index files, and the buckets Java's
``HashBucketAssigner`` gives rows when it loads our index. Then both directions of whole tables:
we write and Java reads and writes on top; Java writes and we write on top; Java reads again.
"""

from __future__ import annotations

import datetime as dt
from datetime import timedelta
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog, Table
from lake_assets.ops.dynamic_bucket import assigner_for, key_hashes, partition_hash
from lake_assets.spec.binary_row import serialize_row
from tests.java.oracle import PaimonJava

from .helpers import compare_every_snapshot, rows_by_bucket

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string())])


def rows(ids: range | list[int], tag: str) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "dt": ["a" if i % 2 else "b" for i in ids],
                     "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def with_op(data: pa.Table, op: str = "+I") -> pa.Table:
    return data.append_column("op", pa.array([op] * data.num_rows, pa.string()))


PARTITIONED = pytest.mark.parametrize("partitioned", [False, True], ids=["unpartitioned", "partitioned"])


def _java_table(java: PaimonJava, wh: str, name: str, partitioned: bool, **options: str) -> None:
    java.create_table(wh, name, SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"] if partitioned else [],
                      options={"bucket": "-1", **options})


def test_key_and_partition_hashes_are_javas(java: PaimonJava, wh: str, lake: Catalog) -> None:
    schema = pa.schema([pa.field("k1", pa.string(), nullable=False), pa.field("k2", pa.decimal128(20, 3),
                        nullable=False), pa.field("k3", pa.date32(), nullable=False),
                        pa.field("p", pa.int32(), nullable=False), ("v", pa.float64())])
    java.create_table(wh, "db.h", schema, primary_keys=["k1", "k2", "k3", "p"], partition_keys=["p"],
                      options={"bucket": "-1"})
    n = 200
    data = pa.table({
        "k1": [("x" * (i % 13)) + str(i) for i in range(n)],
        "k2": [Decimal(i * 7919 - 500_000) / 1000 for i in range(n)],
        "k3": [dt.date(2020, 1, 1) + dt.timedelta(days=i * 37) for i in range(n)],
        "p": pa.array([i % 5 - 2 for i in range(n)], pa.int32()),
        "v": [float(i) for i in range(n)],
    }, schema=schema)
    expected = java.dynamic_bucket(wh, "db.h", "key_hashes", data)
    table = lake.get_table("db.h")
    types = table.schema.types(list(table.schema.trimmed_primary_keys))
    ours = key_hashes([data.column(k) for k in table.schema.trimmed_primary_keys], types)
    assert ours.tolist() == [e["key_hash"] for e in expected]
    ptypes = table.schema.types(["p"])
    assert [partition_hash(serialize_row([p], ptypes)) for p in data.column("p").to_pylist()] == [
        e["partition_hash"] for e in expected]


@pytest.mark.parametrize("assigners", [1, 3])
@PARTITIONED
def test_we_assign_buckets_as_javas_assigner(
    java: PaimonJava, wh: str, lake: Catalog, partitioned: bool, assigners: int
) -> None:
    """Loaded from the same index (Java's), our assigner gives old and new keys Java's buckets,
    with one assigner and with several (``dynamic-bucket.initial-buckets``)."""
    _java_table(java, wh, "db.d", partitioned, **{"dynamic-bucket.target-row-num": "7"})
    java.write(wh, "db.d", rows(range(0, 60, 2), "a"))
    java.write(wh, "db.d", rows(range(1, 45, 3), "b"))
    if assigners > 1:
        java.alter_table(wh, "db.d", {"change": "set_option", "key": "dynamic-bucket.initial-buckets",
                                      "value": str(assigners)})
    probe = rows(list(range(100, 40, -1)) + list(range(0, 100, 5)), "p")
    expected = java.dynamic_bucket(wh, "db.d", "assign", probe, num_assigners=assigners)
    table = lake.get_table("db.d")
    assigner = assigner_for(table.store, table.snapshot_manager.latest())
    assert assigner.num_assigners == assigners
    ours: list[int] = []
    types = table.schema.types(["dt"] if partitioned else [])
    for i in range(probe.num_rows):  # row by row: Java's order of first appearance across partitions
        one = probe.slice(i, 1)
        part = serialize_row([one.column("dt")[0].as_py()] if partitioned else [], types)
        hashes = key_hashes([one.column(k) for k in table.schema.trimmed_primary_keys],
                            table.schema.types(list(table.schema.trimmed_primary_keys)))
        ours += assigner.assign(part, hashes).tolist()
    assert ours == expected
    # and all at once (vectorized, per partition) gives the same buckets
    batch = assigner_for(table.store, table.snapshot_manager.latest())
    got = np.zeros(probe.num_rows, dtype=np.int32)
    dts = probe.column("dt").to_pylist()
    for value in dict.fromkeys(dts):
        mask = np.array([d == value for d in dts]) if partitioned else np.ones(probe.num_rows, dtype=bool)
        sub = probe.filter(pa.array(mask))
        part = serialize_row([value] if partitioned else [], types)
        got[mask] = batch.assign(part, key_hashes([sub.column(k) for k in table.schema.trimmed_primary_keys],
                                                  table.schema.types(list(table.schema.trimmed_primary_keys))))
        if not partitioned:
            break
    assert got.tolist() == expected


def _index_of(java: PaimonJava, wh: str, name: str) -> dict[tuple, set[int]]:
    """Java's view of the latest hash index: (partition values, bucket) -> hashes."""
    return {(tuple(e["partition"]), e["bucket"]): set(e["hashes"])
            for e in java.dynamic_bucket(wh, name, "hash_index")}


def _assert_index_matches_data(java: PaimonJava, wh: str, name: str, table: Table) -> None:
    """Every key Java reads sits in the bucket whose hash index (read by Java) holds its hash."""
    index = _index_of(java, wh, name)
    keys = list(table.schema.trimmed_primary_keys)
    for part_bucket, data in _rows_per_bucket(table).items():
        hashes = key_hashes([data.column(k) for k in keys], table.schema.types(keys), data.num_rows)
        assert set(hashes.tolist()) <= index[part_bucket], part_bucket
    # and no hash is in two buckets of a partition
    seen: dict[tuple, set[int]] = {}
    for (part, _), hashes in index.items():
        assert not hashes & seen.get(part, set()), part
        seen.setdefault(part, set()).update(hashes)


def _rows_per_bucket(table: Table) -> dict[tuple, pa.Table]:
    return {k: v for k, v in rows_by_bucket(table).items() if v.num_rows}


@PARTITIONED
def test_we_write_java_reads_and_writes_on_top(java: PaimonJava, wh: str, lake: Catalog, partitioned: bool) -> None:
    name = "db.ours"
    t = lake.create_table(name, SCHEMA.append(pa.field("op", pa.string())), primary_keys=["id", "dt"],
                          partition_keys=["dt"] if partitioned else [],
                          options={"bucket": "-1", "dynamic-bucket.target-row-num": "8", "rowkind.field": "op"})
    t.write_arrow(with_op(rows(range(40), "a")))
    t.write_arrow(with_op(rows(range(30, 60), "b")))
    t.write_arrow(with_op(rows([1, 2, 3, 200], "x"), "-D"))  # 200: a retraction of a key never written
    t = t.refresh()
    assert len({s.bucket for s in t.plan()}) > 1
    compare_every_snapshot(java, wh, name, t)
    _assert_index_matches_data(java, wh, name, t)
    # Java's own assigner, loaded from our index, keeps our keys where we put them
    java.write(wh, name, with_op(rows(range(50, 70), "c")))
    java.write(wh, name, with_op(rows(range(0, 70, 7), "d")))
    t = t.refresh()
    compare_every_snapshot(java, wh, name, t)
    got = t.to_arrow()
    assert sorted(got.column("id").to_pylist()) == [i for i in range(70) if i not in (1, 2, 3)]
    _assert_index_matches_data(java, wh, name, t)
    # and compaction by either engine keeps the index
    t.compact(full=True)
    java.compact(wh, name, full=True)
    compare_every_snapshot(java, wh, name, t.refresh())
    # so do our expiry and orphan removal: Java's assigner still finds every key afterwards
    t = t.refresh()
    t.expire_snapshots(retain_min=1, retain_max=1)
    t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    java.write(wh, name, with_op(rows(range(60, 75), "e")))
    t = t.refresh()
    compare_every_snapshot(java, wh, name, t)
    assert sorted(java.read(wh, name).column("id").to_pylist()) == [i for i in range(75) if i not in (1, 2, 3)]
    _assert_index_matches_data(java, wh, name, t)


@PARTITIONED
def test_java_writes_we_write_on_top(java: PaimonJava, wh: str, lake: Catalog, partitioned: bool) -> None:
    name = "db.theirs"
    _java_table(java, wh, name, partitioned, **{"dynamic-bucket.target-row-num": "8"})
    java.write(wh, name, rows(range(40), "a"))
    java.write(wh, name, rows(range(30, 60), "b"))
    t = lake.get_table(name)
    t.write_arrow(rows(range(20, 80), "ours"))  # updates of Java's keys and new keys
    t.write_arrow(rows(range(75, 90), "again"))
    t = t.refresh()
    compare_every_snapshot(java, wh, name, t)
    got = java.read(wh, name)
    assert sorted(got.column("id").to_pylist()) == list(range(90))
    assert dict(zip(got.column("id").to_pylist(), got.column("v").to_pylist(), strict=True))[25] == "ours25"
    _assert_index_matches_data(java, wh, name, t)
    java.write(wh, name, rows(range(85, 95), "java"))
    compare_every_snapshot(java, wh, name, t.refresh())
    assert sorted(java.read(wh, name).column("id").to_pylist()) == list(range(95))


def test_initial_buckets_as_javas_assigners(java: PaimonJava, wh: str, lake: Catalog) -> None:
    """With dynamic-bucket.initial-buckets our writer's buckets are the ones Java's assigners pick."""
    name = "db.init"
    opts = {"bucket": "-1", "dynamic-bucket.target-row-num": "5", "dynamic-bucket.initial-buckets": "3"}
    t = lake.create_table(name, SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options=opts)
    first = rows(range(30), "a")
    expected = java.dynamic_bucket(wh, name, "assign", first, num_assigners=3)
    t.write_arrow(first)
    t = t.refresh()
    by_key = {}
    for (part, bucket), data in _rows_per_bucket(t).items():
        for i in data.column("id").to_pylist():
            by_key[(i, part[0])] = bucket
    assert [by_key[(i, d)] for i, d in zip(first.column("id").to_pylist(), first.column("dt").to_pylist(),
                                            strict=True)] == expected
    assert len({s.bucket for s in t.plan()}) >= 3
    compare_every_snapshot(java, wh, name, t)


def test_overwrite_replaces_the_partitions_index(java: PaimonJava, wh: str, lake: Catalog) -> None:
    name = "db.ow"
    t = lake.create_table(name, SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                          options={"bucket": "-1", "dynamic-bucket.target-row-num": "4"})
    t.write_arrow(rows(range(40), "a"))
    t.write_arrow(rows([1, 3, 101, 103], "new"), overwrite={"dt": "a"})
    t = t.refresh()
    compare_every_snapshot(java, wh, name, t)
    index = _index_of(java, wh, name)
    in_a = set().union(*(h for (p, _), h in index.items() if p == ("a",)))
    keys = list(t.schema.trimmed_primary_keys)
    a_rows = t.to_arrow(filter=[("dt", "=", "a")])
    assert in_a == set(key_hashes([a_rows.column(k) for k in keys], t.schema.types(keys)).tolist())
    # Java writes the overwritten partition again: its keys stay unique
    java.write(wh, name, rows([1, 3, 5, 101], "java"))
    compare_every_snapshot(java, wh, name, t.refresh())
    assert sorted(t.refresh().to_arrow(filter=[("dt", "=", "a")]).column("id").to_pylist()) == [1, 3, 5, 101, 103]


def test_dynamic_buckets_with_deletion_vectors(java: PaimonJava, wh: str, lake: Catalog) -> None:
    """A dynamic-bucket table with deletion vectors: a write's HASH files land with its data, its
    compaction's vectors with the COMPACT snapshot; Java reads every snapshot alike and writes on top."""
    name = "db.dvdyn"
    t = lake.create_table(name, SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                          options={"bucket": "-1", "dynamic-bucket.target-row-num": "6",
                                   "deletion-vectors.enabled": "true"})
    t.write_arrow(rows(range(20), "a"))
    t.write_arrow(rows(range(10, 30), "b"))
    t.write_arrow(rows(range(0, 30, 3), "c"))
    t = t.refresh()
    types = {e.index_type for e in t.store.index_entries(t.snapshot_manager.latest().index_manifest)}
    assert types == {"HASH", "DELETION_VECTORS"}
    compare_every_snapshot(java, wh, name, t)
    _assert_index_matches_data(java, wh, name, t)
    java.write(wh, name, rows(range(25, 35), "java"))
    java.compact(wh, name, full=True)
    t = t.refresh()
    compare_every_snapshot(java, wh, name, t)
    assert sorted(java.read(wh, name).column("id").to_pylist()) == list(range(35))
