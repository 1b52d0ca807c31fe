"""Tables Paimon Java 0.9 writes with properties lake_assets does not implement are refused per
operation before anything on storage changes; what stays allowed agrees with Java's own reads."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog, UnsupportedFeatureError
from lake_assets.table_support import index_refusals
from tests.java.oracle import PaimonJava, paimon_fields

from .helpers import assert_same_rows

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def rows(ids: range, tag: str) -> pa.Table:
    return pa.table({"id": list(ids), "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def refused_everywhere(lake: Catalog, wh: str, name: str, calls: dict, match: str) -> None:
    """Each call raises naming the property; the table's files are byte-identical afterwards."""
    table_dir = Path(wh) / "db.db" / name
    before = tree(table_dir)
    t = lake.get_table(f"db.{name}")
    for what, call in calls.items():
        with pytest.raises(UnsupportedFeatureError, match=match):
            call(t)
        assert tree(table_dir) == before, f"{what} changed db.{name}"


DATA_CALLS = {
    "read": lambda t: t.to_arrow(),
    "read_changes": lambda t: t.read_changes(1),
    "compact": lambda t: t.compact(full=True),
    "write": lambda t: t.write_arrow(rows(range(100, 102), "c")),
}


def test_java_09_without_file_format_writes_parquet(java: PaimonJava, wh: str, lake: Catalog) -> None:
    """Paimon Java 0.9.0 (the oracle's jar) writes schema version 3 and Parquet when file.format is
    unset: such a table is ours to read and maintain (ORC is only implied for schema versions <= 2)."""
    # the oracle's create_table pins Parquet: ask the JVM directly, with no file.format at all
    java.call("create_table", warehouse=wh, table="db.nofmt", fields=paimon_fields(SCHEMA), primary_keys=["id"],
              partition_keys=[], table_options={"bucket": "2"}, ignore_if_exists=False)
    java.write(wh, "db.nofmt", rows(range(20), "a"))
    java.write(wh, "db.nofmt", rows(range(10, 30), "b"))
    schema = java.schema(wh, "db.nofmt")
    assert schema["version"] == 3 and "file.format" not in schema["options"]
    table_dir = Path(wh) / "db.db" / "nofmt"
    assert list(table_dir.rglob("*.parquet")) and not list(table_dir.rglob("*.orc"))
    t = lake.get_table("db.nofmt")
    assert_same_rows(t.to_arrow(), java.read(wh, "db.nofmt"))
    assert t.compact(full=True).snapshot_id is not None
    assert_same_rows(java.read(wh, "db.nofmt"), t.to_arrow())


def test_java_deletion_vectors_are_read_not_refused(java: PaimonJava, wh: str, lake: Catalog) -> None:
    """Java compacts a deletion-vector table into level-1 files plus DELETION_VECTORS index files:
    reads apply the vectors and compaction maintains them (tests/differential/test_deletion_vectors_java.py);
    neither the option nor the index files refuse anything."""
    java.create_table(wh, "db.dv", SCHEMA, primary_keys=["id"],
                      options={"bucket": "1", "deletion-vectors.enabled": "true"})
    java.write(wh, "db.dv", rows(range(20), "a"))
    java.compact(wh, "db.dv")
    java.write(wh, "db.dv", rows(range(5), "b"), kinds=["-D"] * 5)
    java.compact(wh, "db.dv", full=False)
    expected = java.read(wh, "db.dv")
    assert expected.num_rows == 15
    t = lake.get_table("db.dv")
    assert_same_rows(t.to_arrow(), expected)
    assert t.read_changes(1).num_rows > 0
    snap = t.latest_snapshot()
    kinds = {e.index_type for e in t.store.index_entries(snap.index_manifest)}
    assert "DELETION_VECTORS" in kinds
    assert not index_refusals(t.store.index_entries(snap.index_manifest), t.schema)


def test_java_table_with_an_option_we_do_not_know_is_not_maintained(java: PaimonJava, wh: str,
                                                                     lake: Catalog) -> None:
    java.create_table(wh, "db.fut", SCHEMA, primary_keys=["id"],
                      options={"bucket": "2", "paimon.future-feature": "on", "snapshot.num-retained.min": "1"})
    for i in range(3):
        java.write(wh, "db.fut", rows(range(i * 10, i * 10 + 15), f"r{i}"))
    calls = {
        "compact": lambda t: t.compact(full=True),
        "expire": lambda t: t.expire_snapshots(retain_min=1, older_than=timedelta(0)),
        "orphans": lambda t: t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True),
        "rollback": lambda t: t.rollback_to(snapshot_id=1),
        "write": DATA_CALLS["write"],
    }
    refused_everywhere(lake, wh, "fut", calls, r"option paimon\.future-feature = 'on' is not supported")
    assert java.read(wh, "db.fut").num_rows == 35
