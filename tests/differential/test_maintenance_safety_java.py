"""Paimon Java 0.9 on what the maintenance hardening adds or refuses.

- the expiry marker (``snapshot/EXPIRING-<uuid>``) is invisible to Java: it lists, reads, tags and
  expires a table that has one;
- Java lets ALTER change ``partition.default-name`` after null partitions exist, and then misreads
  them: the reason lake_assets refuses that ALTER.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import SchemaError
from tests.java.oracle import JavaError, PaimonJava

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.int64())])


def test_java_ignores_an_expiry_marker(java: PaimonJava, wh: str, lake: Catalog) -> None:
    t = lake.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    for i in range(4):
        t.write_arrow(pa.table({"k": [1, 2], "v": [i, i]}, schema=SCHEMA))
    # an expiration of snapshots below 3 that failed midway leaves its marker behind
    t.snapshot_manager.begin_expiry(3)
    assert sorted(s["id"] for s in java.snapshots(wh, "db.t")) == [1, 2, 3, 4]
    assert sorted(java.read(wh, "db.t").column("v").to_pylist()) == [3, 3]
    java.create_tag(wh, "db.t", "j", 4)
    assert java.expire_snapshots(wh, "db.t", {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"}) >= 1
    assert sorted(s["id"] for s in java.snapshots(wh, "db.t")) == [4]
    assert sorted(java.read(wh, "db.t", tag="j").column("v").to_pylist()) == [3, 3]
    fresh = lake.get_table("db.t")
    assert sorted(fresh.to_arrow().column("v").to_pylist()) == [3, 3]


def test_java_misreads_null_partitions_after_renaming_the_default_name(
    java: PaimonJava, wh: str, lake: Catalog
) -> None:
    schema = pa.schema([("k", pa.int64()), ("dt", pa.string())])
    java.create_table(wh, "db.p", schema, partition_keys=["dt"], options={"bucket": "-1"})
    java.write(wh, "db.p", pa.table({"k": [1, 2], "dt": [None, "a"]}, schema=schema))
    assert sorted(java.read(wh, "db.p").column("k").to_pylist()) == [1, 2]
    # lake_assets refuses the rename on a table with data ...
    with pytest.raises(SchemaError, match=r"partition\.default-name"):
        lake.get_table("db.p").update_schema().set_option("partition.default-name", "NULLS").commit()
    # ... Java allows it, and then cannot find the null partition's file any more
    java.alter_table(wh, "db.p", {"change": "set_option", "key": "partition.default-name", "value": "NULLS"})
    try:
        rows = sorted(java.read(wh, "db.p").column("k").to_pylist())
    except JavaError:
        rows = None  # the file is looked for under dt=NULLS: missing
    assert rows != [1, 2]
