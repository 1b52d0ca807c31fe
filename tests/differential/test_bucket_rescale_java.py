"""Reads after ``ALTER TABLE ... SET ('bucket' = 'N')`` and an overwrite of some partitions only,
against Paimon Java 0.9.

Each manifest entry records the bucket count its file was written with (``_TOTAL_BUCKETS``); a
partition not overwritten keeps the old count. Java's scan selects buckets per entry's count
(``ScanBucketSelector.select(bucket, totalBuckets)``), so an equality filter on the bucket key
finds its row in both partitions. Pruning every entry with the new count drops rows of the old
partition whose key hashes to another bucket there.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import LakeError
from tests.java.oracle import JavaError, PaimonJava

from .helpers import assert_same_table

SCHEMA = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.int64())])
KEYS = list(range(12))


def _rows(dt: str, v: int) -> pa.Table:
    return pa.table({"k": KEYS, "dt": [dt] * len(KEYS), "v": [v + k for k in KEYS]}, schema=SCHEMA)


def _filters() -> list[list[tuple[str, str, object]]]:
    out: list[list[tuple[str, str, object]]] = [[("k", "=", k)] for k in KEYS]
    out += [[("k", "=", k), ("dt", "=", "a")] for k in (1, 5)] + [[("k", "in", [2, 7, 11])]]
    return out


def test_java_rescales_one_partition_we_read_with_key_filters(java: PaimonJava, wh: str, lake: Catalog) -> None:
    java.create_table(wh, "db.t", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                      options={"bucket": "2", "bucket-key": "k"})
    java.write(wh, "db.t", pa.concat_tables([_rows("a", 0), _rows("b", 100)]))
    java.alter_table(wh, "db.t", {"change": "set_option", "key": "bucket", "value": "4"})
    java.write(wh, "db.t", _rows("b", 200), overwrite={"dt": "b"})
    t = lake.get_table("db.t")
    assert t.to_arrow().num_rows == 2 * len(KEYS)
    for f in _filters():
        expected = java.read(wh, "db.t", filter=f)
        assert expected.num_rows > 0
        assert_same_table(t.to_arrow(filter=f), expected)
        assert_same_table(t.to_arrow(snapshot_id=2, filter=f), java.read(wh, "db.t", snapshot_id=2, filter=f))


def test_we_rescale_one_partition_java_reads_with_key_filters(java: PaimonJava, wh: str, lake: Catalog) -> None:
    t = lake.create_table("db.t", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                          options={"bucket": "2", "bucket-key": "k"})
    t.write_arrow(pa.concat_tables([_rows("a", 0), _rows("b", 100)]))
    t.update_schema().set_option("bucket", "4").commit()
    t.write_arrow(_rows("b", 200), overwrite={"dt": "b"})
    totals = {(s.partition_values, s.total_buckets) for s in t.store.file_store_scan().splits(
        t.store.file_store_scan().live_entries(t.latest_snapshot()))}
    assert totals == {(("a",), 2), (("b",), 4)}
    for f in _filters():
        expected = java.read(wh, "db.t", filter=f)
        assert expected.num_rows > 0
        assert_same_table(t.to_arrow(filter=f), expected)


def test_a_write_into_a_partition_still_in_the_old_count_is_refused_as_java(
    java: PaimonJava, wh: str, lake: Catalog
) -> None:
    """Java 0.9's writer refuses a partition whose files have another bucket count ("Try to write
    partition ... with a new bucket num 4, but the previous bucket num is 2 ... perform INSERT
    OVERWRITE to rescale"), for writes and compactions alike; so do we, before writing a file."""
    java.create_table(wh, "db.t", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                      options={"bucket": "2", "bucket-key": "k"})
    java.write(wh, "db.t", pa.concat_tables([_rows("a", 0), _rows("b", 100)]))
    java.alter_table(wh, "db.t", {"change": "set_option", "key": "bucket", "value": "4"})
    with pytest.raises(JavaError) as err:
        java.write(wh, "db.t", _rows("a", 300).slice(0, 1))
    assert err.value.mentions("previous bucket num is 2")
    t = lake.get_table("db.t")
    before = t.latest_snapshot().id
    with pytest.raises(LakeError, match="previous bucket num is 2"):
        t.write_arrow(_rows("a", 300).slice(0, 1))
    with pytest.raises(LakeError, match="previous bucket num is 2"):
        t.compact(full=True)
    assert t.latest_snapshot().id == before
    t.write_arrow(_rows("b", 400), overwrite={"dt": "b"})  # the overwrite rescales
    t.write_arrow(_rows("b", 500).slice(0, 3))               # now in the new count
    for f in _filters():
        assert_same_table(t.to_arrow(filter=f), java.read(wh, "db.t", filter=f))
