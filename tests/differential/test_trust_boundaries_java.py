"""Trust boundaries against Paimon Java 0.9: what Java writes that we refuse to create (tag and
consumer names with a newline, tags whose name holds '/') is still read or stops maintenance
safely, and commits that go through our message validation (compactions of Java-written tables
of each bucket mode) are ones Java reads back."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog, CorruptMetadataError, InvalidIdentifierError
from tests.java.oracle import PaimonJava

from .helpers import assert_same_rows

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("dt", pa.string()), ("v", pa.string())])


def _batch(keys: list[int], v: str) -> pa.Table:
    return pa.table({"k": keys, "dt": ["d1"] * len(keys), "v": [v] * len(keys)}, schema=SCHEMA)


def _pk_table(java: PaimonJava, wh: str, name: str = "db.t") -> None:
    java.create_table(wh, name, SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"], options={"bucket": "2"})
    java.write(wh, name, _batch([1, 2, 3], "a"))


def test_java_tags_we_would_not_create_still_protect_their_files(java: PaimonJava, wh: str, lake: Catalog) -> None:
    _pk_table(java, wh)
    java.create_tag(wh, "db.t", "release\n")  # Java 0.9 accepts a final newline ...
    java.create_tag(wh, "db.t", "v1.0")       # ... and dots
    t = lake.get_table("db.t")
    with pytest.raises(InvalidIdentifierError):
        t.create_tag("release\n")  # we do not create such names
    assert set(t.tags()) == {"release\n", "v1.0"}
    tagged = [Path(t.store.data_file_path(e.partition, e.bucket, e.file))
              for e in t.store.file_store_scan().live_entries(t.snapshot(1))]
    java.write(wh, "db.t", _batch([1, 2, 3], "b"))
    java.compact(wh, "db.t")  # snapshot 1's files are now deleted by later snapshots
    t.expire_snapshots(retain_min=1, retain_max=1)
    assert t.snapshot_manager.earliest_id() > 1
    assert all(p.exists() for p in tagged)
    assert_same_rows(java.read(wh, "db.t", tag="v1.0"), _batch([1, 2, 3], "a"))


def test_java_tag_with_a_slash_stops_our_expiry(java: PaimonJava, wh: str, lake: Catalog) -> None:
    _pk_table(java, wh)
    java.create_tag(wh, "db.t", "a/b")  # Java 0.9 writes tag/tag-a/b: a directory where a tag file belongs
    java.write(wh, "db.t", _batch([1, 2, 3], "b"))
    java.compact(wh, "db.t")
    t = lake.get_table("db.t")
    with pytest.raises(CorruptMetadataError, match="is a directory"):
        t.expire_snapshots(retain_min=1, retain_max=1)
    assert t.snapshot_manager.earliest_id() == 1


def test_java_consumer_with_a_newline_holds_its_snapshots(java: PaimonJava, wh: str, lake: Catalog) -> None:
    _pk_table(java, wh)
    java.reset_consumer(wh, "db.t", "reader\n", 1)
    java.write(wh, "db.t", _batch([1, 2, 3], "b"))
    t = lake.get_table("db.t")
    assert t.store.consumer_manager().consumers()["reader\n"].next_snapshot == 1
    t.expire_snapshots(retain_min=1, retain_max=1)
    assert t.snapshot_manager.earliest_id() == 1


@pytest.mark.parametrize("bucket", ["2", "-1"])
def test_our_validated_compaction_of_a_java_table_reads_back_in_java(
    java: PaimonJava, wh: str, lake: Catalog, bucket: str
) -> None:
    """Compaction messages carry Java's buckets, totals, levels and sequence numbers: validation
    must accept every one of them (fixed buckets, and bucket = -1 append tables)."""
    pks = ["k", "dt"] if bucket != "-1" else []
    java.create_table(wh, "db.c", SCHEMA, primary_keys=pks, partition_keys=["dt"],
                      options={"bucket": bucket, "compaction.min.file-num": "2"})
    for i in range(3):
        java.write(wh, "db.c", _batch([1, 2, 3, 4], f"v{i}"))
    t = lake.get_table("db.c")
    before = t.to_arrow()
    res = t.compact(full=True)
    assert res.snapshot_id is not None  # a COMPACT snapshot was committed through the committer
    assert_same_rows(java.read(wh, "db.c"), before)
    assert_same_rows(t.to_arrow(), before)
