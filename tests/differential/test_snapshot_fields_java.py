"""Snapshot fields Java's commits carry forward - ``logOffsets`` and ``statistics`` - after our
commits, and empty static overwrites, against Paimon Java 0.9.

Twin tables ``db.j`` and ``db.l`` get the same history from Java (an ANALYZE's statistics file,
then a Flink-style commit with log offsets: 0.9's ``commitStatistics`` completes its empty
offsets with ``putIfAbsent`` on an immutable map, so an ANALYZE on top of offsets fails in Java
itself). Then Java makes the next commit on ``db.j`` and we make the same on ``db.l``: the fields
must come out as Java's, Java must read ours, and a Java commit after ours must keep them.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog
from tests.java.oracle import PaimonJava

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False)])
OFFSETS = {0: 42, 3: 7}
OPS = ["append", "compact", "overwrite", "empty_overwrite", "after_alter"]
# Our ``overwrite={partition: value}`` is a static overwrite (Spark's INSERT OVERWRITE ... PARTITION,
# which sets this on the table it writes); Java's core API overwrites dynamically without it.
STATIC = {"dynamic-partition-overwrite": "false"}


def _with_v(ids: list[int]) -> pa.Table:
    """Rows for the table after ``ALTER TABLE ADD COLUMN v INT``."""
    return pa.table({"id": ids, "dt": ["a"] * len(ids), "v": pa.nulls(len(ids), pa.int32())},
                    schema=SCHEMA.append(pa.field("v", pa.int32())))


def _prepare(java: PaimonJava, wh: str, name: str) -> str:
    """Java's history: rows, ANALYZE (a statistics file), a commit with log offsets; the file name."""
    java.create_table(wh, name, SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "1"})
    java.write(wh, name, pa.table({"id": [1, 2], "dt": ["a", "b"]}, schema=SCHEMA))
    stats = java.analyze(wh, name, merged_record_count=2, merged_record_size=100)["statistics"]
    java.commit_watermark(wh, name, [[3, "a"]], commit_identifier=1, watermark=None, log_offsets=OFFSETS)
    latest = java.snapshots(wh, name)[-1]
    assert (latest["statistics"], latest["logOffsets"]) == (stats, {str(b): o for b, o in OFFSETS.items()})
    return str(stats)


def _java_op(java: PaimonJava, wh: str, op: str) -> None:
    if op == "append":
        java.write(wh, "db.j", pa.table({"id": [9], "dt": ["a"]}, schema=SCHEMA))
    elif op == "compact":
        java.compact(wh, "db.j", ["a"], 0)
    elif op == "overwrite":
        java.write(wh, "db.j", pa.table({"id": [9], "dt": ["a"]}, schema=SCHEMA), overwrite={"dt": "a"},
                   options=STATIC)
    elif op == "empty_overwrite":
        java.write(wh, "db.j", pa.table({"id": [], "dt": []}, schema=SCHEMA), overwrite={"dt": "zz"},
                   options=STATIC)
    else:
        java.alter_table(wh, "db.j", {"change": "add_column", "name": "v", "type": pa.int32()})
        java.write(wh, "db.j", pa.table({"id": [9], "dt": ["a"]}, schema=SCHEMA))


def _lake_op(lake: Catalog, wh: str, java: PaimonJava, op: str) -> None:
    table = lake.get_table("db.l")
    if op == "append":
        table.write_arrow(pa.table({"id": [9], "dt": ["a"]}, schema=SCHEMA))
    elif op == "compact":
        table.compact(full=True)
    elif op == "overwrite":
        table.write_arrow(pa.table({"id": [9], "dt": ["a"]}, schema=SCHEMA), overwrite={"dt": "a"})
    elif op == "empty_overwrite":
        table.write_arrow(pa.table({"id": [], "dt": []}, schema=SCHEMA), overwrite={"dt": "zz"})
    else:
        java.alter_table(wh, "db.l", {"change": "add_column", "name": "v", "type": pa.int32()})
        lake.get_table("db.l").write_arrow(_with_v([9]))


def _fields(snap: dict[str, Any], stats: str) -> tuple[Any, ...]:
    named = snap.get("statistics")
    return (snap["commitKind"], snap.get("logOffsets"), None if named is None else named == stats,
            snap["deltaRecordCount"])


@pytest.mark.parametrize("op", OPS)
def test_commit_carries_log_offsets_and_statistics_as_java(java: PaimonJava, lake: Catalog, wh: str,
                                                          op: str) -> None:
    stats_j = _prepare(java, wh, "db.j")
    stats_l = _prepare(java, wh, "db.l")
    before = len(java.snapshots(wh, "db.l"))
    _java_op(java, wh, op)
    _lake_op(lake, wh, java, op)
    theirs, ours = java.snapshots(wh, "db.j")[-1], java.snapshots(wh, "db.l")[-1]  # Java parses ours
    assert ours["id"] == before + 1 and ours["commitKind"] == theirs["commitKind"]
    assert _fields(ours, stats_l) == _fields(theirs, stats_j)
    # the rule itself, not only agreement: offsets always kept, statistics only for the same schema
    assert ours["logOffsets"] == {str(b): o for b, o in OFFSETS.items()}
    assert ("statistics" in ours) == (op != "after_alter")
    # and Java's next commit on top of ours keeps what ours kept
    row = [10, "b"] + ([None] if op == "after_alter" else [])
    java.commit_watermark(wh, "db.l", [row], commit_identifier=2, watermark=None)
    after = java.snapshots(wh, "db.l")[-1]
    assert (after.get("statistics"), after["logOffsets"]) == (ours.get("statistics"), ours["logOffsets"])


def test_empty_static_overwrite_is_an_empty_overwrite_snapshot_as_java(java: PaimonJava, lake: Catalog,
                                                                      wh: str) -> None:
    """Java's static overwrite always commits: a partition with no files, no new rows, is an
    OVERWRITE snapshot of no changes; ours too, and Java reads the table the same after it."""
    for name in ("db.j", "db.l"):
        java.create_table(wh, name, SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "1"})
        java.write(wh, name, pa.table({"id": [1], "dt": ["a"]}, schema=SCHEMA))
    _java_op(java, wh, "empty_overwrite")
    _lake_op(lake, wh, java, "empty_overwrite")
    theirs, ours = java.snapshots(wh, "db.j"), java.snapshots(wh, "db.l")
    assert [(s["commitKind"], s["deltaRecordCount"], s["totalRecordCount"]) for s in ours] == [
        (s["commitKind"], s["deltaRecordCount"], s["totalRecordCount"]) for s in theirs] == [
        ("APPEND", 1, 1), ("OVERWRITE", 0, 1)]
    assert java.read(wh, "db.l").to_pylist() == java.read(wh, "db.j").to_pylist() == [{"id": 1, "dt": "a"}]
    # a dynamic overwrite (Java's default for a partitioned table) of no rows commits nothing, in both
    java.write(wh, "db.j", pa.table({"id": [], "dt": []}, schema=SCHEMA), overwrite={"dt": "zz"})
    assert lake.get_table("db.l").write_arrow(pa.table({"id": [], "dt": []}, schema=SCHEMA), overwrite=True) is None
    assert len(java.snapshots(wh, "db.j")) == len(java.snapshots(wh, "db.l")) == 2


def test_expiry_deletes_statistics_files_as_java(java: PaimonJava, lake: Catalog, wh: str) -> None:
    """Twin histories (Java's ANALYZE, three commits carrying its file, an ALTER, one commit that
    drops the name), then Java expires ``db.j`` and we ``db.l`` to one snapshot: the statistics
    file goes in both; expiring while the first retained snapshot names it keeps it in both."""
    retain_one = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"}
    paths = {}
    for name in ("db.j", "db.l"):
        stats = _prepare(java, wh, name)
        paths[name] = Path(wh) / "db.db" / name[3:] / "statistics" / stats
        java.write(wh, name, pa.table({"id": [20], "dt": ["a"]}, schema=SCHEMA))
    java.expire_snapshots(wh, "db.j", retain_one)
    assert lake.get_table("db.l").expire_snapshots(retain_min=1, retain_max=1).deleted_statistics_files == []
    assert paths["db.j"].exists() and paths["db.l"].exists()
    for name in ("db.j", "db.l"):
        java.alter_table(wh, name, {"change": "add_column", "name": "v", "type": pa.int32()})
        java.write(wh, name, _with_v([30]))
    java.expire_snapshots(wh, "db.j", retain_one)
    result = lake.get_table("db.l").expire_snapshots(retain_min=1, retain_max=1)
    assert result.deleted_statistics_files == [str(paths["db.l"])]
    assert not paths["db.j"].exists() and not paths["db.l"].exists()
    assert java.read(wh, "db.l").num_rows == java.read(wh, "db.j").num_rows == 5


def test_expiry_and_orphans_keep_a_named_statistics_file(java: PaimonJava, lake: Catalog, wh: str) -> None:
    """Our expiry deletes a statistics file only when no retained snapshot or tag names it (as
    Java's SnapshotDeletion); orphan removal, ours and Java's, keeps every named one."""
    stats = _prepare(java, wh, "db.l")
    table = lake.get_table("db.l")
    for i in range(3):  # our commits carry the file forward
        table.write_arrow(pa.table({"id": [20 + i], "dt": ["a"]}, schema=SCHEMA))
    stats_path = Path(wh) / "db.db" / "l" / "statistics" / stats
    result = table.expire_snapshots(retain_min=1, retain_max=1)
    assert result.expired_snapshots and result.deleted_statistics_files == []
    assert stats_path.exists()
    assert lake.get_table("db.l").remove_orphan_files(
        older_than=timedelta(0), dry_run=False, allow_recent=True) == [] or \
        stats_path.exists()
    assert stats_path.exists()
    java.remove_orphan_files(wh, "db.l", older_than_ms=2**62)
    assert stats_path.exists()
    # once a schema change drops the name, expiring the snapshots that named it deletes it
    java.alter_table(wh, "db.l", {"change": "add_column", "name": "v", "type": pa.int32()})
    lake.get_table("db.l").write_arrow(_with_v([30]))
    assert "statistics" not in java.snapshots(wh, "db.l")[-1]
    result = lake.get_table("db.l").expire_snapshots(retain_min=1, retain_max=1)
    assert result.deleted_statistics_files == [str(stats_path)]
    assert not stats_path.exists()
    assert java.read(wh, "db.l").num_rows == 7

