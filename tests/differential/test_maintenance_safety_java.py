"""Paimon Java 0.9 on what the maintenance hardening adds or refuses.

- the expiry marker (``expiring/EXPIRING-<uuid>``, with a twin ``snapshot/EXPIRING-<uuid>`` for
  older lake_assets) is invisible to Java: it lists, reads, tags and expires a table that has one;
- Java's orphan clean (0.9 ``OrphanFilesClean``; HEAD's ``cleanBranchSnapshotDir`` alike) deletes
  every old file of ``snapshot/`` that is not ``snapshot-<id>`` / ``EARLIEST`` / ``LATEST`` - the
  twin too - but never looks at ``expiring/``: the handshake holds with a Java clean beside it;
- Java lets ALTER change ``partition.default-name`` after null partitions exist, and then misreads
  them: the reason lake_assets refuses that ALTER.
"""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import SchemaError, SnapshotNotFoundError
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


def _age(root: Path, name_part: str, days: float) -> list[Path]:
    """Make every file of the table whose name holds ``name_part`` ``days`` old; returns them."""
    old = time.time() - days * 86400
    found = [p for p in root.rglob("*") if p.is_file() and name_part in p.name]
    for p in found:
        os.utime(p, (old, old))
    return found


def test_a_failed_expirys_marker_survives_javas_orphan_clean(java: PaimonJava, wh: str, lake: Catalog) -> None:
    t = lake.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    for i in range(4):
        t.write_arrow(pa.table({"k": [1, 2], "v": [i, i]}, schema=SCHEMA))
    # an expiration of snapshots below 3 failed midway two days ago: snapshots 1 and 2 may have
    # lost files, and tagging them must stay refused
    t.snapshot_manager.begin_expiry(3)
    root = Path(t.store.paths.root)
    markers = _age(root, "EXPIRING-", 2)
    assert len(markers) == 2  # the guard and its twin for older lake_assets
    removed = java.remove_orphan_files(wh, "db.t", older_than_ms=int((time.time() - 3600) * 1000))
    # Java deletes the twin in snapshot/ (a non-snapshot file, old enough) ...
    assert removed == [str(root / "snapshot" / markers[0].name)]
    # ... the guard stays, and tagging a snapshot below the marker is still refused
    assert [p for p in markers if p.exists()] == [root / "expiring" / markers[0].name]
    fresh = lake.get_table("db.t")
    with pytest.raises(SnapshotNotFoundError, match="below 3 is in progress or failed midway"):
        fresh.create_tag("t1", snapshot_id=1)
    assert "t1" not in fresh.tags()
    fresh.create_tag("t3", snapshot_id=3)  # at the marker's end: whole
    # a completed expiry withdraws it
    fresh.expire_snapshots(retain_min=1, retain_max=2, older_than=timedelta(0))
    assert sorted(s.id for s in fresh.snapshots()) == [4]
    assert sorted(java.read(wh, "db.t", tag="t3").column("v").to_pylist()) == [2, 2]
    assert not [p for p in root.rglob("*") if "EXPIRING-" in p.name]


def test_a_running_expiry_keeps_its_marker_through_a_java_orphan_clean(java: PaimonJava, wh: str,
                                                                       lake: Catalog) -> None:
    """A long expiry's marker grows older than a Java clean's bound while the expiry deletes: the
    clean runs right then (forced at the expiry's step after its data files went), and a tagger
    that publishes afterwards still sees the marker and withdraws."""
    t = lake.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    for i in range(5):
        t.write_arrow(pa.table({"k": [1, 2], "v": [i, i]}, schema=SCHEMA))
    root = Path(t.store.paths.root)
    seen: list[str] = []

    def clean_and_tag(step: str) -> None:
        if step != "expire.after_data" or seen:
            return
        _age(root, "EXPIRING-", 2)
        seen.extend(java.remove_orphan_files(wh, "db.t", older_than_ms=int((time.time() - 3600) * 1000)))
        with pytest.raises(SnapshotNotFoundError, match="is being expired"):
            lake.get_table("db.t").create_tag("late", snapshot_id=2)
        seen.append("refused")

    t.store.fault_hook = clean_and_tag
    t.expire_snapshots(retain_min=2, retain_max=2, older_than=timedelta(0))
    assert seen[-1] == "refused" and any("/snapshot/EXPIRING-" in p for p in seen[:-1])
    fresh = lake.get_table("db.t")
    assert "late" not in fresh.tags()
    latest = fresh.latest_snapshot().id
    assert sorted(s.id for s in fresh.snapshots()) == [latest - 1, latest]
    assert sorted(java.read(wh, "db.t").column("v").to_pylist()) == [4, 4]
