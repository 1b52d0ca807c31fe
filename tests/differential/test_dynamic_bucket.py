"""Java's dynamic-bucket primary-key tables (``bucket = -1``): we read, compact and write on top of
what Java's hash-index writer produced, Java reads and writes on top (more in
test_dynamic_bucket_writes.py)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog
from tests.java.oracle import PaimonJava

from .helpers import assert_same_table, compare_every_snapshot

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string())])


def rows(ids: range | list[int], tag: str) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "dt": ["a" if i % 2 else "b" for i in ids],
                     "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def _java_dynamic_table(java: PaimonJava, wh: str, name: str, partitioned: bool) -> None:
    # A tiny target row count makes Java open several buckets.
    java.create_table(wh, name, SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"] if partitioned else [],
                      options={"bucket": "-1", "dynamic-bucket.target-row-num": "8"})
    java.write(wh, name, rows(range(40), "a"))
    java.write(wh, name, rows(range(30, 60), "b"))
    java.write(wh, name, rows([1, 2, 3], "x"), kinds=["-D"] * 3)
    assert len({s["bucket"] for s in java.splits(wh, name)}) > 1


PARTITIONED = pytest.mark.parametrize("partitioned", [False, True], ids=["unpartitioned", "partitioned"])


@PARTITIONED
def test_java_dynamic_bucket_table_we_read_and_write(
    java: PaimonJava, wh: str, lake: Catalog, partitioned: bool
) -> None:
    name = "db.dyn"
    _java_dynamic_table(java, wh, name, partitioned)
    t = lake.get_table(name)
    compare_every_snapshot(java, wh, name, t)
    t.refresh().write_arrow(rows([1000, 5, 6], "ours"))
    compare_every_snapshot(java, wh, name, t.refresh())
    assert java.read(wh, name).num_rows == 58


@PARTITIONED
def test_java_dynamic_bucket_table_we_compact(java: PaimonJava, wh: str, lake: Catalog, partitioned: bool) -> None:
    name = "db.dyn"
    _java_dynamic_table(java, wh, name, partitioned)
    t = lake.get_table(name)
    index_before = java.snapshots(wh, name)[-1]["indexManifest"]
    assert index_before
    t.compact(full=True)
    t = t.refresh()
    assert java.snapshots(wh, name)[-1]["commitKind"] == "COMPACT"
    assert java.snapshots(wh, name)[-1]["indexManifest"] == index_before
    assert_same_table(java.read(wh, name), t.to_arrow())
    # Java's assigner keeps using its hash index after our compaction (our COMPACT snapshot carries
    # the index manifest on): updates of keys 50..59 land in their buckets, not as duplicates.
    java.write(wh, name, rows(range(50, 70), "c"))
    java.compact(wh, name, full=True)
    compare_every_snapshot(java, wh, name, t.refresh())
    assert t.refresh().to_arrow().num_rows == 67
