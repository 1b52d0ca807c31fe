"""Tables Paimon Java 0.9 created with the options Flink's and Spark's connectors leave in a schema
(sink.parallelism, lookup.cache, write.merge-schema...): lake_assets reads, writes, compacts, expires
and orphan-cleans them, and Java reads exactly what lake_assets reads after each step. The few
connector keys that matter (a stored partition filter of Flink's reads, Flink's partition mark-done)
refuse only the operations they affect, naming the option, and change nothing on storage."""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog, UnsupportedFeatureError
from tests.java.oracle import PaimonJava

from .helpers import assert_same_rows

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string())])
# What a Flink SQL job and a Spark session typically leave in a table's options (values Paimon 0.9's
# CoreOptions parses where the key is one of its own: continuous.discovery-interval, lookup.*).
FLINK_OPTIONS = {
    "sink.parallelism": "4", "scan.parallelism": "2", "scan.infer-parallelism": "false",
    "sink.use-managed-memory-allocator": "true", "sink.managed.writer-buffer-memory": "256 mb",
    "lookup.cache": "full", "lookup.async": "true", "lookup.cache-max-memory-size": "64 mb",
    "changelog-producer.lookup-wait": "false", "continuous.discovery-interval": "5 s",
    "scan.split-enumerator.mode": "preemptive", "source.checkpoint-align.enabled": "false",
    "sink.savepoint.auto-tag": "true", "partition.time-interval": "1 d", "local-merge-buffer-size": "64 mb",
    "log.system": "none",
}
SPARK_OPTIONS = {
    "write.merge-schema": "true", "write.merge-schema.explicit-cast": "false", "read.changelog": "false",
    "read.stream.maxFilesPerTrigger": "10", "requiredSparkConfsCheck.enabled": "false",
}


def rows(ids: range, tag: str, day: str = "2024-01-01") -> pa.Table:
    return pa.table({"id": list(ids), "dt": [day] * len(ids), "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def plant_old_file(path: Path) -> Path:
    """A file no snapshot references, older than any bound (a crashed writer's leftover)."""
    path.write_bytes(b"leftover")
    old = time.time() - 3 * 86400
    os.utime(path, (old, old))
    return path


@pytest.mark.parametrize("pk", [True, False], ids=["primary-key", "append"])
def test_java_table_with_engine_options_is_read_written_and_maintained(java: PaimonJava, wh: str, lake: Catalog,
                                                                        pk: bool) -> None:
    ident = "db.engines"
    options = {"bucket": "2" if pk else "-1", **FLINK_OPTIONS, **SPARK_OPTIONS}
    java.create_table(wh, ident, SCHEMA, primary_keys=["id", "dt"] if pk else [], partition_keys=["dt"],
                      options=options)
    java.write(wh, ident, rows(range(20), "a"))
    java.write(wh, ident, rows(range(10, 30), "b", "2024-01-02"))
    stored = java.schema(wh, ident)["options"]
    assert {k: stored[k] for k in FLINK_OPTIONS} == FLINK_OPTIONS
    t = lake.get_table(ident)
    assert_same_rows(t.to_arrow(), java.read(wh, ident))
    assert t.read_changes(1).num_rows > 0
    t.write_arrow(rows(range(5, 15), "c"))
    assert_same_rows(java.read(wh, ident), t.refresh().to_arrow())
    t.compact(full=True)
    assert_same_rows(java.read(wh, ident), t.refresh().to_arrow())
    java.write(wh, ident, rows(range(25, 35), "d", "2024-01-02"))
    t = t.refresh()
    expected = java.read(wh, ident)
    orphan = plant_old_file(Path(wh) / "db.db" / "engines" / "dt=2024-01-01" / "bucket-0" / "data-orphan-0.parquet")
    expired = t.expire_snapshots(retain_min=1, retain_max=1, older_than=timedelta(0))
    assert expired.expired_snapshots
    removed = t.remove_orphan_files(older_than=timedelta(hours=1), dry_run=False)
    assert removed.paths == [str(orphan)] and not orphan.exists()
    t = t.refresh()
    assert [s["id"] for s in java.snapshots(wh, ident)] == [t.latest_snapshot().id]
    assert_same_rows(t.to_arrow(), expected)
    assert_same_rows(java.read(wh, ident), expected)
    # Java goes on writing (and compacting: its table API compacts buckets, not bucket-unaware
    # append tables) the table lake_assets maintained
    java.write(wh, ident, rows(range(3), "e"))
    if pk:
        java.compact(wh, ident, full=True)
    assert_same_rows(t.refresh().to_arrow(), java.read(wh, ident))


def test_connector_keys_that_matter_refuse_only_what_they_affect(java: PaimonJava, wh: str, lake: Catalog) -> None:
    """scan.partitions (Flink's reads read only those partitions) refuses reads and streams;
    partition.idle-time-to-done (Flink writes _SUCCESS files into partition directories) refuses
    nothing: orphan removal, like Paimon's, never looks at files beside the bucket directories."""
    ident = "db.marks"
    java.create_table(wh, ident, SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                      options={"bucket": "1", "scan.partitions": "dt=2024-01-02", "partition.idle-time-to-done": "1 h",
                               "sink.parallelism": "2"})
    java.write(wh, ident, rows(range(10), "a"))
    java.write(wh, ident, rows(range(10), "b", "2024-01-02"))
    table_dir = Path(wh) / "db.db" / "marks"
    success = plant_old_file(table_dir / "dt=2024-01-01" / "_SUCCESS")
    before = tree(table_dir)
    t = lake.get_table(ident)
    for call in (lambda: t.to_arrow(), lambda: t.read_changes(1)):
        with pytest.raises(UnsupportedFeatureError, match=r"option scan\.partitions = 'dt=2024-01-02' is not "
                           r"supported; Flink's batch and lookup reads of a table carrying it read only these"):
            call()
    assert tree(table_dir) == before
    # writes, compaction, expiry and orphan removal do not depend on either key
    t.write_arrow(rows(range(5), "c"))
    t.compact(full=True)
    assert t.refresh().expire_snapshots(retain_min=1, retain_max=1, older_than=timedelta(0)).expired_snapshots
    stray = plant_old_file(table_dir / "dt=2024-01-01" / "bucket-0" / "data-stray-0.parquet")
    assert t.refresh().remove_orphan_files(older_than=timedelta(hours=1), dry_run=False).paths == [str(stray)]
    assert success.exists() and success.read_bytes() == b"leftover"
    # Java's core reader does not read scan.partitions: it returns both days, with our writes
    got = java.read(wh, ident)
    assert sorted(set(got.column("dt").to_pylist())) == ["2024-01-01", "2024-01-02"]
    assert sorted(got.filter(pa.compute.equal(got.column("dt"), "2024-01-01")).column("v").to_pylist()) == sorted(
        [f"c{i}" for i in range(5)] + [f"a{i}" for i in range(5, 10)])
