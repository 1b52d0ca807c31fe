"""Commit identifiers, tags, rollback, consumers and schema evolution across both engines."""

from __future__ import annotations

import decimal
from datetime import timedelta

import pyarrow as pa
import pytest

from lake_assets import Catalog
from tests.java.oracle import PaimonJava

from .helpers import assert_same_table, compare_every_snapshot

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("n", pa.int32())])


def rows(ids: range | list[int], tag: str) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"{tag}{i}" for i in ids],
                     "n": pa.array([i % 7 for i in ids], pa.int32())}, schema=SCHEMA)


@pytest.fixture
def pk(java: PaimonJava, wh: str, lake: Catalog):
    """A primary-key table with 2 buckets created by Java; returns our handle on it."""
    java.create_table(wh, "db.t", SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    return lake.get_table("db.t")


# ------------------------------------------------------------------------- commit identifiers


def test_java_stream_commits_then_our_committer_skips_committed_identifiers(java: PaimonJava, wh: str, pk) -> None:
    user = "flink-job-1"
    for ident in (1, 2, 3):
        java.write(wh, "db.t", rows(range(ident * 10, ident * 10 + 5), "j"), commit_identifier=ident, commit_user=user)
    snaps = java.snapshots(wh, "db.t")
    assert [(s["commitUser"], s["commitIdentifier"]) for s in snaps] == [(user, 1), (user, 2), (user, 3)]

    t = pk.refresh()
    committer = t.new_committer(user)
    assert committer.last_committed_identifier() == 3
    for ident, expect_new in ((2, False), (3, False), (4, True)):
        writer = t.new_writer(user)
        writer.write_arrow(rows([100 + ident], "ours"))
        messages = writer.prepare_commit()
        writer.close()
        ids = committer.commit(messages, ident)
        assert bool(ids) == expect_new, ident
    last = java.snapshots(wh, "db.t")[-1]
    assert (last["commitUser"], last["commitIdentifier"]) == (user, 4)
    assert 102 not in java.read(wh, "db.t").column("id").to_pylist()
    assert 104 in java.read(wh, "db.t").column("id").to_pylist()


def test_our_commits_then_java_filter_and_commit_skips_them(java: PaimonJava, wh: str, pk) -> None:
    user = "ingest-7"
    t = pk.refresh()
    committer = t.new_committer(user)
    for ident in (5, 6):
        writer = t.new_writer(user)
        writer.write_arrow(rows([ident], "ours"))
        committer.commit(writer.prepare_commit(), ident)
        writer.close()
    before = len(java.snapshots(wh, "db.t"))
    # Flink's recovery path: identifiers <= the user's latest committed one are skipped.
    res = java.write(wh, "db.t", rows([60], "replay"), commit_identifier=6, commit_user=user, filter_committed=True)
    assert res["committed"] == 0
    assert len(java.snapshots(wh, "db.t")) == before
    res = java.write(wh, "db.t", rows([70], "next"), commit_identifier=7, commit_user=user, filter_committed=True)
    assert res["committed"] == 1
    # A running Java job commits without looking (only recovery filters): it lands again.
    res = java.write(wh, "db.t", rows([50], "again"), commit_identifier=5, commit_user=user)
    assert res["committed"] == 1
    assert [s.commit_identifier for s in t.refresh().snapshots()] == [5, 6, 7, 5]
    # Both engines now take the user's LATEST snapshot (identifier 5) as its position: Java's
    # filterAndCommit commits 6 again, and our committer does the same.
    fresh = t.refresh().new_committer(user)
    assert fresh.last_committed_identifier() == 5
    res = java.write(wh, "db.t", rows([61], "six-again"), commit_identifier=6, commit_user=user, filter_committed=True)
    assert res["committed"] == 1
    assert fresh.last_committed_identifier() == 6
    compare_every_snapshot(java, wh, "db.t", t.refresh())


def test_java_writer_across_commits_with_compaction(java: PaimonJava, wh: str, pk) -> None:
    with java.open_writer(wh, "db.t", commit_user="job") as w:
        for ident in range(1, 5):
            w.write(rows(range(ident * 3, ident * 3 + 6), f"c{ident}"))
            if ident == 3:
                w.compact(bucket=0, full=True)
                w.compact(bucket=1, full=True)
            w.commit(ident)
    kinds = [s["commitKind"] for s in java.snapshots(wh, "db.t")]
    assert "COMPACT" in kinds
    compare_every_snapshot(java, wh, "db.t", pk.refresh())


# ------------------------------------------------------------------------- tags and rollback


def test_tags_both_directions_survive_expiry(java: PaimonJava, wh: str, pk) -> None:
    for k in range(4):
        java.write(wh, "db.t", rows(range(k * 5, k * 5 + 8), f"w{k}"))
    java.create_tag(wh, "db.t", "java-tag", snapshot_id=1)
    t = pk.refresh()
    assert {n: s.id for n, s in t.tags().items()} == {"java-tag": 1}
    assert_same_table(t.to_arrow(tag="java-tag"), java.read(wh, "db.t", tag="java-tag"))
    t.create_tag("our-tag", snapshot_id=2)
    assert java.tags(wh, "db.t") == {"java-tag": 1, "our-tag": 2}
    assert_same_table(java.read(wh, "db.t", tag="our-tag"), t.to_arrow(tag="our-tag"))

    java.expire_snapshots(wh, "db.t", options={"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    t = t.refresh()
    t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    for tag in ("java-tag", "our-tag"):
        assert_same_table(t.to_arrow(tag=tag), java.read(wh, "db.t", tag=tag))
    t.compact(full=True)
    t.expire_snapshots(retain_min=1, retain_max=1, older_than=timedelta(0))
    t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    for tag in ("java-tag", "our-tag"):
        assert_same_table(t.to_arrow(tag=tag), java.read(wh, "db.t", tag=tag))

    java.delete_tag(wh, "db.t", "java-tag")
    assert set(t.refresh().tags()) == {"our-tag"}
    t.delete_tag("our-tag")
    t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    assert java.tags(wh, "db.t") == {}
    compare_every_snapshot(java, wh, "db.t", t.refresh())


def test_rollback_both_directions(java: PaimonJava, wh: str, pk) -> None:
    for k in range(4):
        java.write(wh, "db.t", rows(range(k * 5, k * 5 + 8), f"w{k}"))
    snapshot_2 = java.read(wh, "db.t", snapshot_id=2)
    t = pk.refresh()
    t.rollback_to(snapshot_id=2)
    assert [s["id"] for s in java.snapshots(wh, "db.t")] == [1, 2]
    assert_same_table(java.read(wh, "db.t"), snapshot_2)
    java.write(wh, "db.t", rows([500], "after-rollback"))
    t = t.refresh()
    compare_every_snapshot(java, wh, "db.t", t)

    t.create_tag("keep", snapshot_id=3)
    t.write_arrow(rows([600, 601], "ours"))
    kept = t.to_arrow(tag="keep")
    java.rollback(wh, "db.t", tag="keep")
    t = t.refresh()
    assert [s.id for s in t.snapshots()] == [1, 2, 3]
    assert_same_table(t.to_arrow(), kept)
    t.write_arrow(rows([700], "ours-after-java-rollback"))
    compare_every_snapshot(java, wh, "db.t", t.refresh())


# ------------------------------------------------------------------------- consumers


def test_consumers_both_directions_hold_back_expiry(java: PaimonJava, wh: str, pk) -> None:
    for k in range(6):
        java.write(wh, "db.t", rows(range(k * 5, k * 5 + 8), f"w{k}"))
    java.reset_consumer(wh, "db.t", "java-reader", 3)
    t = pk.refresh()
    assert {c: v.next_snapshot for c, v in t.store.consumer_manager().consumers().items()} == {"java-reader": 3}
    latest = t.latest_snapshot().id  # Java's writer may have added a COMPACT snapshot
    t.expire_snapshots(retain_min=1, retain_max=1, older_than=timedelta(0))
    assert [s["id"] for s in java.snapshots(wh, "db.t")] == list(range(3, latest + 1))
    assert_same_table(java.read(wh, "db.t", snapshot_id=3), t.to_arrow(snapshot_id=3))

    t.store.consumer_manager().record("lake-reader", 5)
    java.delete_consumer(wh, "db.t", "java-reader")
    assert java.consumers(wh, "db.t") == {"lake-reader": 5}
    java.expire_snapshots(wh, "db.t", options={"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    assert [s.id for s in t.refresh().snapshots()] == list(range(5, latest + 1))


def test_java_stream_consumer_position_is_ours_to_resume(java: PaimonJava, wh: str, pk) -> None:
    java.write(wh, "db.t", rows(range(5), "a"))
    stream = java.stream(wh, "db.t", options={"consumer-id": "shared", "scan.mode": "latest-full"})
    first = stream.next()
    assert sorted(first.column("id").to_pylist()) == list(range(5))
    stream.notify_checkpoint_complete()
    stream.close()
    t = pk.refresh()
    assert t.store.consumer_manager().get("shared").next_snapshot == 2
    java.write(wh, "db.t", rows([2, 9], "b"))
    # We resume where Java's consumer stopped: only snapshot 2's changes.
    enum = t.refresh().stream(consumer_id="shared")
    reader = t.change_reader()
    batches = enum.poll(max_snapshots=10)
    got = [reader.read(s) for b in batches for s in b.splits]
    ids = sorted(i for tbl in got for i in tbl.column("id").to_pylist())
    assert ids == [2, 9]


# ------------------------------------------------------------------------- schema evolution


def test_java_evolves_schema_we_read_every_version(java: PaimonJava, wh: str, pk) -> None:
    java.write(wh, "db.t", rows(range(6), "v0"))
    java.alter_table(wh, "db.t", {"change": "add_column", "name": "extra", "type": "DOUBLE"})
    java.write(wh, "db.t", pa.table({"id": pa.array([1, 10], pa.int64()), "v": ["x1", "x10"],
                                     "n": pa.array([1, 2], pa.int32()), "extra": [0.5, None]}))
    java.alter_table(wh, "db.t", {"change": "rename_column", "name": "v", "new_name": "label"})
    java.alter_table(wh, "db.t", {"change": "update_column_type", "name": "n", "type": "BIGINT"})
    java.write(wh, "db.t", pa.table({"id": pa.array([2, 11], pa.int64()), "label": ["y2", "y11"],
                                     "n": pa.array([2**40, -1], pa.int64()), "extra": [1.5, 2.5]}))
    java.alter_table(wh, "db.t", {"change": "drop_column", "name": "extra"},
                     {"change": "add_column", "name": "first_col", "type": "STRING", "first": True})
    java.write(wh, "db.t", pa.table({"first_col": ["f"], "id": pa.array([3], pa.int64())}))
    t = pk.refresh()
    compare_every_snapshot(java, wh, "db.t", t)
    t.compact(full=True)
    compare_every_snapshot(java, wh, "db.t", t.refresh())


def test_we_evolve_schema_java_reads_and_writes(java: PaimonJava, wh: str, lake: Catalog) -> None:
    t = lake.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    t.write_arrow(rows(range(6), "v0"))
    t.update_schema().add_column("extra", pa.float64()).rename_column("v", "label").commit()
    t = t.refresh()
    t.write_arrow(pa.table({"id": pa.array([1, 10], pa.int64()), "label": ["x1", "x10"],
                            "n": pa.array([1, 2], pa.int32()), "extra": [0.5, None]}))
    t.update_schema().update_column_type("n", pa.int64()).drop_column("extra").commit()
    t = t.refresh()
    t.write_arrow(pa.table({"id": pa.array([2], pa.int64()), "label": ["y2"], "n": pa.array([2**40], pa.int64())}))
    assert [f["name"] for f in java.schema(wh, "db.t")["fields"]] == ["id", "label", "n"]
    compare_every_snapshot(java, wh, "db.t", t)
    java.write(wh, "db.t", pa.table({"id": pa.array([3, 1], pa.int64()), "label": ["j3", "j1"],
                                     "n": pa.array([-5, 2**50], pa.int64())}))
    java.compact(wh, "db.t", full=True)
    compare_every_snapshot(java, wh, "db.t", t.refresh())


TYPE_CHANGES = [
    ("INT", "BIGINT", pa.int32(), [1, -5, None]),
    ("INT", "DOUBLE", pa.int32(), [1, -5, None]),
    ("FLOAT", "DOUBLE", pa.float32(), [1.5, None, 0.1]),
    ("DECIMAL(10, 2)", "DECIMAL(20, 4)", pa.decimal128(10, 2),
     [decimal.Decimal("1.25"), None, decimal.Decimal("-3.10")]),
    ("INT", "STRING", pa.int32(), [1, -5, None]),
    ("STRING", "INT", pa.string(), ["1", "-5", None]),
    ("DATE", "TIMESTAMP(3)", pa.date32(), [0, 19000, None]),
    ("BIGINT", "INT", pa.int64(), [1, 2, None]),
    ("TINYINT", "SMALLINT", pa.int8(), [1, -1, None]),
    ("TIMESTAMP(3)", "TIMESTAMP(6)", pa.timestamp("ms"), [0, 10**12, None]),
]


@pytest.mark.parametrize(("old", "new", "arrow_type", "values"), TYPE_CHANGES,
                         ids=[f"{o}->{n}" for o, n, _, _ in TYPE_CHANGES])
def test_java_column_type_changes_read_alike(java: PaimonJava, wh: str, lake: Catalog, old: str, new: str,
                                             arrow_type: pa.DataType, values: list) -> None:
    """Java's casts of old files to a changed column type (also narrowing and string casts) match ours."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("c", arrow_type)])
    java.create_table(wh, "db.c", schema, primary_keys=["id"], options={"bucket": "1"})
    java.write(wh, "db.c", pa.table({"id": pa.array([1, 2, 3], pa.int64()), "c": pa.array(values, arrow_type)}))
    java.alter_table(wh, "db.c", {"change": "update_column_type", "name": "c", "type": new})
    t = lake.get_table("db.c")
    assert_same_table(t.to_arrow(), java.read(wh, "db.c"))
    # Old snapshot: both read it with the schema it was written with.
    assert_same_table(t.to_arrow(snapshot_id=1), java.read(wh, "db.c", snapshot_id=1))


@pytest.mark.parametrize("who_rolls_back", ["java", "lake"])
def test_rollback_to_a_tag_whose_snapshot_expired(java: PaimonJava, wh: str, pk, who_rolls_back: str) -> None:
    for k in range(4):
        java.write(wh, "db.t", rows(range(k * 5, k * 5 + 8), f"w{k}"), options={"write-only": "true"})
    tagged = java.read(wh, "db.t", snapshot_id=2)
    java.create_tag(wh, "db.t", "old", snapshot_id=2)
    java.expire_snapshots(wh, "db.t", options={"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    assert [s["id"] for s in java.snapshots(wh, "db.t")] == [4]
    t = pk.refresh()
    if who_rolls_back == "java":
        java.rollback(wh, "db.t", tag="old")
    else:
        t.rollback_to(tag="old")
    t = t.refresh()
    assert_same_table(t.to_arrow(), tagged)
    assert_same_table(java.read(wh, "db.t"), tagged)
    assert [s["id"] for s in java.snapshots(wh, "db.t")] == [s.id for s in t.snapshots()]
    # Both carry on writing on top of the restored snapshot.
    java.write(wh, "db.t", rows([900], "j"))
    t.refresh().write_arrow(rows([901], "l"))
    compare_every_snapshot(java, wh, "db.t", t.refresh())
