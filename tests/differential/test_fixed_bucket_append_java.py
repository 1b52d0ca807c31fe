"""Fixed-bucket append tables (no primary key, ``bucket = N`` with a ``bucket-key``) against Paimon
Java 0.9, both ways: every row in Java's bucket, each bucket's rows in write order (an append
bucket is an ordered stream: Java's readers order its files by sequence number), and the same
files as Java's writer and BucketedAppendCompactManager make them (rows, sequence ranges)."""

from __future__ import annotations

import datetime as dt
import itertools
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog
from tests.java.oracle import PaimonJava

from .helpers import rows_by_bucket

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),   # the row's place in the input: its order
    ("i", pa.int32()), ("s", pa.string()), ("d", pa.date32()), ("m", pa.decimal128(12, 2)),
    pa.field("dt", pa.string(), nullable=False),
])

# (partition keys, bucket count, bucket-key): Paimon's default hash of several key types, composite
# and single, partitioned and not
TABLES = {
    "composite-partitioned": (["dt"], "3", "i,s,d,m"),
    "bigint": ([], "4", "id"),
}


def batch(start: int, n: int = 9) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({
        "id": pa.array(ids, pa.int64()), "i": pa.array([k % 7 for k in ids], pa.int32()),
        "s": [f"s{k % 5}" for k in ids], "d": [dt.date(2024, 1, 1 + k % 11) for k in ids],
        "m": pa.array([Decimal(k % 13) / 4 for k in ids], pa.decimal128(12, 2)),
        "dt": ["a" if k % 3 else "b" for k in ids],
    }, schema=SCHEMA)


def _key(partition: list[Any] | tuple[Any, ...], bucket: int) -> tuple[tuple[str, ...], int]:
    return tuple(str(v) for v in partition), bucket


def per_bucket(java: PaimonJava, wh: str, name: str, rows: pa.Table) -> dict[tuple[tuple[str, ...], int], list[int]]:
    """The ids of ``rows`` per (partition, bucket) Java's writer places them in, in ``rows``' order."""
    out: dict[tuple[tuple[str, ...], int], list[int]] = {}
    for place, row_id in zip(java.bucket_of(wh, name, rows), rows.column("id").to_pylist(), strict=True):
        out.setdefault(_key(place["partition"], place["bucket"]), []).append(row_id)
    return out


def ours_per_bucket(table: Any) -> dict[tuple[tuple[str, ...], int], list[int]]:
    """The ids lake_assets reads per (partition, bucket) it holds them in, in read order."""
    return {_key(p, b): rows.column("id").to_pylist() for (p, b), rows in rows_by_bucket(table.refresh()).items()
            if rows.num_rows}


def java_files(java: PaimonJava, wh: str, name: str) -> dict[tuple[tuple[str, ...], int], list[tuple[int, int, int]]]:
    """Java's plan: per (partition, bucket) its files' (min, max sequence number, rows) in read order."""
    out: dict[tuple[tuple[str, ...], int], list[tuple[int, int, int]]] = {}
    for split in java.splits(wh, name):
        out.setdefault(_key(split["partition"], split["bucket"]), []).extend(
            (f["min_sequence_number"], f["max_sequence_number"], f["row_count"]) for f in split["files"])
    return out


def assert_ordered_streams(files: dict[tuple[tuple[str, ...], int], list[tuple[int, int, int]]]) -> None:
    """Each bucket's files hold disjoint, ascending sequence ranges, one number per row."""
    for place, ranges in files.items():
        for (lo, hi, _), (next_lo, _, _) in itertools.pairwise(ranges):
            assert lo <= hi < next_lo, (place, ranges)
        assert all(hi - lo + 1 == n for lo, hi, n in ranges), (place, ranges)


def check(java: PaimonJava, wh: str, name: str, table: Any, written: list[pa.Table]) -> None:
    """Java and lake_assets read every row in Java's bucket, each bucket in write order."""
    expected = per_bucket(java, wh, name, pa.concat_tables(written))
    java_rows = java.read(wh, name)
    assert per_bucket(java, wh, name, java_rows) == expected
    assert ours_per_bucket(table) == expected
    assert table.refresh().to_arrow().num_rows == sum(t.num_rows for t in written)
    assert_ordered_streams(java_files(java, wh, name))


def _create_java(java: PaimonJava, wh: str, kind: str, **extra: str) -> None:
    partitions, buckets, key = TABLES[kind]
    java.create_table(wh, "db.t", SCHEMA, partition_keys=partitions,
                      options={"bucket": buckets, "bucket-key": key, **extra})


@pytest.mark.parametrize("kind", list(TABLES))
def test_java_writes_we_append_and_compact(java: PaimonJava, wh: str, lake: Catalog, kind: str) -> None:
    _create_java(java, wh, kind)
    written = [batch(0), batch(9), batch(18)]
    for b in written:
        java.write(wh, "db.t", b)
    t = lake.get_table("db.t")
    for start in (27, 36, 45):  # the fifth file of a bucket makes our writer compact it inline
        written.append(batch(start))
        t.refresh().write_arrow(written[-1])
    check(java, wh, "db.t", t, written)
    written.append(batch(54))
    java.write(wh, "db.t", written[-1])
    t.refresh().compact()
    t.refresh().compact(full=True)
    assert java.snapshots(wh, "db.t")[-1]["commitKind"] == "COMPACT"
    check(java, wh, "db.t", t, written)
    # Java appends after our compaction and compacts our files
    written.append(batch(63))
    java.write(wh, "db.t", written[-1])
    java.compact(wh, "db.t", full=True)
    check(java, wh, "db.t", t, written)


@pytest.mark.parametrize("kind", list(TABLES))
def test_same_writes_make_the_same_files(java: PaimonJava, wh: str, kind: str) -> None:
    """Seven commits, then a best-effort and a full compaction: our writer and compaction make the
    files Java's make (per bucket: rows and sequence ranges, in order). ``compaction.max.file-num``
    4 moves Java's pick off its default; the files stay far below ``target-file-size``, which the
    engines' Parquet writers would reach at other rows."""
    options = {"compaction.max.file-num": "4"}
    theirs, ours = f"{wh}/java", f"{wh}/lake"
    _create_java(java, theirs, kind, **options)
    partitions, buckets, key = TABLES[kind]
    catalog = Catalog(ours)
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, partition_keys=partitions,
                             options={"bucket": buckets, "bucket-key": key, **options})
    for start in range(0, 7 * 9, 9):
        java.write(theirs, "db.t", batch(start))
        t.refresh().write_arrow(batch(start))
        assert java_files(java, ours, "db.t") == java_files(java, theirs, "db.t"), start
    java.compact(theirs, "db.t", full=False)
    t.refresh().compact()
    assert java_files(java, ours, "db.t") == java_files(java, theirs, "db.t")
    java.compact(theirs, "db.t", full=True)
    t.refresh().compact(full=True)
    files = java_files(java, ours, "db.t")
    assert files == java_files(java, theirs, "db.t")
    assert_ordered_streams(files)


def test_we_write_java_appends_compacts_and_overwrites(java: PaimonJava, wh: str, lake: Catalog) -> None:
    partitions, buckets, key = TABLES["composite-partitioned"]
    t = lake.create_table("db.t", SCHEMA, partition_keys=partitions, options={"bucket": buckets, "bucket-key": key})
    written = [batch(0), batch(9), batch(18)]
    for b in written:
        t.refresh().write_arrow(b)
    for start in (27, 36):
        written.append(batch(start))
        java.write(wh, "db.t", written[-1])
    java.compact(wh, "db.t", full=False)
    check(java, wh, "db.t", t, written)
    java.compact(wh, "db.t", full=True)
    check(java, wh, "db.t", t, written)
    # our overwrite of partition b; then Java's of partition a
    new_b = batch(100).filter(pa.compute.equal(batch(100).column("dt"), "b"))
    t.refresh().write_arrow(new_b, overwrite={"dt": "b"})
    written = [w.filter(pa.compute.equal(w.column("dt"), "a")) for w in written] + [new_b]
    check(java, wh, "db.t", t, written)
    new_a = batch(200).filter(pa.compute.equal(batch(200).column("dt"), "a"))
    java.write(wh, "db.t", new_a, overwrite={"dt": "a"})
    written = [new_b, new_a]
    check(java, wh, "db.t", t, written)


def test_two_writers_of_one_bucket_commit_together(java: PaimonJava, wh: str, lake: Catalog) -> None:
    """Two writers of one bucket in one commit (Spark tasks of unrouted input): Java 0.9's commit
    checks an APPEND commit of level-0 append files for deleted files only, so both land; each
    writer's rows stay in its order, and the files never share a first sequence number (Java's
    compaction manager keeps a bucket's files in a set ordered by it)."""
    t = lake.create_table("db.t", SCHEMA, options={"bucket": "1", "bucket-key": "id"})
    t.write_arrow(batch(0))
    writers = [t.new_writer("job", write_only=True) for _ in range(2)]
    for slot, (w, start) in enumerate(zip(writers, (100, 200), strict=True)):
        w.interleave_sequences(slot, 2)
        w.write_arrow(batch(start))
    messages = [m for w in writers for m in w.prepare_commit()]
    t.new_committer("job").commit(messages, commit_identifier=1)
    for w in writers:
        w.close()
    rows = java.read(wh, "db.t").column("id").to_pylist()
    assert rows[:9] == list(range(9))
    assert [i for i in rows if 100 <= i < 200] == list(range(100, 109))
    assert [i for i in rows if i >= 200] == list(range(200, 209))
    firsts = [f[0] for f in java_files(java, wh, "db.t")[(), 0]]
    assert len(set(firsts)) == len(firsts) == 3
    # Java's compaction takes all three (none is lost from its ordered set), in sequence order
    java.compact(wh, "db.t", full=True)
    assert sorted(java.read(wh, "db.t").column("id").to_pylist()) == sorted(rows)
    assert ours_per_bucket(t)[((), 0)] == java.read(wh, "db.t").column("id").to_pylist()


def test_files_sharing_a_first_number_java_09_leaves_one_out(java: PaimonJava, wh: str, lake: Catalog) -> None:
    """Two writers of one bucket from one snapshot, committed apart, both start at number 0. Java
    0.9's compaction manager (a ``TreeSet`` by first number) keeps the first of them in manifest
    order and never compacts the second; its full compaction then numbers its output from 0 too,
    and readers (Java's and ours alike) read the left-out file first: its rows move before the
    other writer's. Paimon 1.4 (#6741) compacts both; lake_assets does, keeping the order
    (Java 0.9 predates that behaviour)."""
    import shutil

    t = lake.create_table("db.t", SCHEMA, options={"bucket": "1", "bucket-key": "id", "write-only": "true"})
    w1, w2 = t.new_writer("a"), t.new_writer("b")
    w1.write_arrow(batch(100, 4))
    w2.write_arrow(batch(200, 2))
    t.new_committer("a").commit(w1.prepare_commit(), commit_identifier=1)
    t.new_committer("b").commit(w2.prepare_commit(), commit_identifier=1)
    w1.close()
    w2.close()
    for start in (300, 400):
        t.refresh().write_arrow(batch(start, 3))
    order = [*range(100, 104), 200, 201, *range(300, 303), *range(400, 403)]
    assert java.read(wh, "db.t").column("id").to_pylist() == order
    twin = f"{wh}-twin"
    shutil.copytree(wh, twin)
    java.compact(wh, "db.t", full=True, options={"write-only": "false"})
    # Java rewrote the first writer's file and the later ones, not the second writer's
    ranges = java_files(java, wh, "db.t")[((), 0)]
    assert ranges == [(0, 1, 2), (0, 9, 10)]
    assert java.read(wh, "db.t").column("id").to_pylist() == [200, 201, *range(100, 104), *range(300, 303),
                                                              *range(400, 403)]
    # ours takes all four files in, and every reader keeps the order
    Catalog(twin).get_table("db.t").compact(full=True)
    assert java_files(java, twin, "db.t")[((), 0)] == [(0, 11, 12)]
    assert java.read(twin, "db.t").column("id").to_pylist() == order
