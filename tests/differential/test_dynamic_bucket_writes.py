"""Dynamic bucket writes (``bucket = -1`` on primary-key tables) against Paimon Java 0.9.

The assigner and the hash index are checked against Java's own (``DynamicBucketOps.java``): the key
and partition hashes, the hashes Java reads back from our index files, and the buckets Java's
``HashBucketAssigner`` gives rows when it loads our index. Then both directions of whole tables:
we write and Java reads and writes on top; Java writes and we write on top; Java reads again.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops.dynamic_bucket import assigner_for, key_hashes, partition_hash
from lake_assets.spec.binary_row import serialize_row
from tests.java.oracle import PaimonJava

from .helpers import assert_same_table, compare_every_snapshot

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string())])


def rows(ids: range | list[int], tag: str) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "dt": ["a" if i % 2 else "b" for i in ids],
                     "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


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
    assigner = assigner_for(table, table.snapshot_manager.latest())
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
    batch = assigner_for(table, table.snapshot_manager.latest())
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
