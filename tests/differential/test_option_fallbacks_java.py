"""Tables Paimon Java 0.9 created with the old spellings of options (fallback keys): lake_assets reads
them as Java does (``Options.get``: the option's key, else its first fallback key set) instead of
refusing them as unknown keys (docs/format.md §13)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog, UnsupportedFeatureError
from tests.java.oracle import PaimonJava

from .helpers import assert_same_rows

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def rows(ids: range, tag: str) -> pa.Table:
    return pa.table({"id": list(ids), "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def test_write_compaction_skip_makes_both_engines_write_only(java: PaimonJava, wh: str, lake: Catalog) -> None:
    ident = "db.skip"
    java.create_table(wh, ident, SCHEMA, primary_keys=["id"],
                      options={"bucket": "1", "write.compaction-skip": "true",
                               "snapshot.expire.clean-empty-directories": "true"})
    for i in range(3):
        java.write(wh, ident, rows(range(i * 5, i * 5 + 10), f"j{i}"))
    t = lake.get_table(ident)
    assert t.schema.core_options.write_only and t.schema.core_options.clean_empty_directories
    # Java's writer skipped compaction: one level-0 file per commit, and so does ours
    assert {e.file.level for e in t.store.file_store_scan().live_entries(t.latest_snapshot())} == {0}
    t.write_arrow(rows(range(3, 8), "l"))
    t = t.refresh()
    entries = t.store.file_store_scan().live_entries(t.latest_snapshot())
    assert len(entries) == 4 and {e.file.level for e in entries} == {0}
    assert_same_rows(t.to_arrow(), java.read(wh, ident))
    # a dedicated compaction still compacts; Java reads what we read, and writes on without compacting
    t.compact(full=True)
    assert_same_rows(java.read(wh, ident), t.refresh().to_arrow())
    java.write(wh, ident, rows(range(2), "j9"))
    t = t.refresh()
    levels = sorted(e.file.level for e in t.store.file_store_scan().live_entries(t.latest_snapshot()))
    assert levels[0] == 0 and levels[-1] > 0
    assert_same_rows(t.to_arrow(), java.read(wh, ident))


def test_log_scan_timestamp_is_a_start_position_as_scan_timestamp(java: PaimonJava, wh: str, lake: Catalog) -> None:
    """Java 0.9 reads a table carrying log.scan.timestamp-millis from that time (its fallback of
    scan.timestamp-millis), so lake_assets' reads, which read the latest snapshot, are refused
    naming the key; writes and maintenance go on, and the key's own spelling wins when both are set."""
    ident = "db.logscan"
    java.create_table(wh, ident, SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    java.write(wh, ident, rows(range(5), "a"))
    first = java.snapshots(wh, ident)[0]["timeMillis"]
    java.write(wh, ident, rows(range(3, 9), "b"))
    java.alter_table(wh, ident, {"change": "set_option", "key": "log.scan.timestamp-millis", "value": str(first)})
    assert_same_rows(java.read(wh, ident), rows(range(5), "a"))  # Java reads snapshot 1
    t = lake.get_table(ident)
    with pytest.raises(UnsupportedFeatureError, match=r"option log\.scan\.timestamp-millis = '\d+'.*Paimon "
                       r"readers start from this stored position"):
        t.to_arrow()
    t.write_arrow(rows(range(8, 10), "c"))
    t.compact(full=True)
    assert t.refresh().latest_snapshot().id == 4
    # with the option's own key set, Java reads from it and never reads the fallback key; nor do we
    java.alter_table(wh, ident, {"change": "remove_option", "key": "log.scan.timestamp-millis"},
                     {"change": "set_option", "key": "scan.mode", "value": "latest-full"},
                     {"change": "set_option", "key": "log.scan", "value": "from-snapshot"})
    got = java.read(wh, ident)
    assert sorted(got.column("id").to_pylist()) == list(range(10))
    assert_same_rows(lake.get_table(ident).to_arrow(), got)
    # the fallback key alone: Java 0.9 starts from a snapshot id it requires (scan.snapshot-id);
    # lake_assets refuses reads naming log.scan
    java.alter_table(wh, ident, {"change": "remove_option", "key": "scan.mode"},
                     {"change": "set_option", "key": "scan.snapshot-id", "value": "1"})
    assert_same_rows(java.read(wh, ident), rows(range(5), "a"))
    with pytest.raises(UnsupportedFeatureError, match=r"option log\.scan = 'from-snapshot'"):
        lake.get_table(ident).to_arrow()
