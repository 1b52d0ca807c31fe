"""Append tables with deletion vectors (``bucket = -1``), both ways with Paimon Java 0.9.

Java deletes rows the way its Spark ``DELETE`` does on such a table (the oracle's
``append_dv_delete``: UnawareAppendDeletionFileMaintainer, a COMPACT snapshot in 0.9) and compacts
them the way its Spark compact procedure does (``append_compact``: every file with a vector
rewritten, whole index files at a time). We read, compact and delete on top, and Java reads the
same rows and finds, through its own ``DeletionVector.read``, the positions we marked.

Java 0.9 predates two 1.x behaviours we follow: a delete's snapshot is an OVERWRITE (0.9: COMPACT),
and compaction rewrites a file with a vector only when it is small or its vector hides more than
``compaction.delete-ratio-threshold`` of its rows (0.9: every such file).
"""

from __future__ import annotations

import pyarrow as pa

from lake_assets import Catalog
from lake_assets.ops.deletion_vectors import VectorLoader, snapshot_index
from lake_assets.spec.snapshot import CommitKind
from tests.differential.helpers import assert_same_rows

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.string())])
DV = {"bucket": "-1", "deletion-vectors.enabled": "true"}


def _rows(ids, dt: str, tag: str = "v") -> pa.Table:
    ids = list(ids)
    return pa.table({"id": ids, "dt": [dt] * len(ids), "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def _positions(table) -> dict[str, list[int]]:
    """Data file -> the positions our loader decodes, over the latest snapshot's index."""
    loader = VectorLoader(table.store)
    out: dict[str, list[int]] = {}
    for entries in snapshot_index(table.store, table.latest_snapshot()).values():
        out.update({name: list(v) for name, v in loader.vectors(entries).items()})
    return out


def _java_positions(java, wh: str) -> dict[str, list[int]]:
    return {f["name"]: f["deleted"] for s in java.deletion_vectors(wh, "db.t") for f in s["files"] if "deleted" in f}


def _check_same(java, wh: str) -> None:
    table = Catalog(wh).get_table("db.t")
    assert_same_rows(table.to_arrow(), java.read(wh, "db.t"))
    assert _positions(table) == _java_positions(java, wh)


def test_java_deletes_we_read_and_compact_java_reads_and_compacts(java, wh: str) -> None:
    # a tiny target size: no file is small, so the delete ratio alone decides (Paimon 1.x)
    java.create_table(wh, "db.t", SCHEMA, partition_keys=["dt"],
                      options={**DV, "target-file-size": "1 b", "compaction.min.file-num": "2"})
    java.write(wh, "db.t", pa.concat_tables([_rows(range(20), "d1"), _rows(range(10), "d2")]))
    java.write(wh, "db.t", _rows(range(20, 40), "d1"))
    java.write(wh, "db.t", _rows(range(40, 60), "d1"))
    # 10 of the first file's 20 rows, 1 of the second's, 3 of d2's 10; then one more row of the
    # first file (Java merges it into that file's vector and rewrites the index file)
    java.append_dv_delete(wh, "db.t", [[("id", "<", 10), ("dt", "=", "d1")], [("id", "=", 25)],
                                       [("id", "in", [1, 2, 3]), ("dt", "=", "d2")]])
    java.append_dv_delete(wh, "db.t", [("id", "=", 15)])
    table = Catalog(wh).get_table("db.t")
    assert [s.commit_kind for s in table.snapshots()][-2:] == [CommitKind.COMPACT] * 2  # Java 0.9's kind
    _check_same(java, wh)
    for flt in ([("v", ">=", "v3")], [("id", "<", 12)], [("dt", "=", "d2"), ("id", ">", 2)]):
        assert_same_rows(table.to_arrow(filter=flt, columns=["id", "v"]),
                         java.read(wh, "db.t", filter=flt, projection=["id", "v"]))
    marked = _positions(table)
    assert sorted(len(p) for p in marked.values()) == [1, 3, 11]

    result = table.compact()
    table = Catalog(wh).get_table("db.t")
    assert table.latest_snapshot().commit_kind == CommitKind.COMPACT
    # 11/20 and 3/10 are past the 0.2 threshold: rewritten without their rows; 1/20 is not: kept,
    # its vector moved into a new index file (its old one held the rewritten files' vectors too)
    assert result.files_in == 2 and result.rows_in - result.rows_out == 14
    left = _positions(table)
    assert list(left.values()) == [[5]]
    assert set(left) <= set(marked)
    _check_same(java, wh)
    # Java 0.9 compacts on top: it rewrites the last file with a vector, from our index file
    assert java.append_compact(wh, "db.t")["tasks"] >= 1
    _check_same(java, wh)
    assert _positions(Catalog(wh).get_table("db.t")) == {}
    ids = Catalog(wh).get_table("db.t").to_arrow(filter=[("dt", "=", "d1")]).column("id").to_pylist()
    assert sorted(ids) == [i for i in range(10, 60) if i not in (15, 25)]


def test_we_delete_java_reads_and_compacts(java, wh: str) -> None:
    java.create_table(wh, "db.t", SCHEMA, partition_keys=["dt"], options=DV)
    table = Catalog(wh).get_table("db.t")
    table.write_arrow(pa.concat_tables([_rows(range(30), "d1"), _rows(range(10), "d2")]))
    table.write_arrow(_rows(range(30, 50), "d1"))
    assert table.delete_where([("id", "=", 99)]).snapshot_id is None  # nothing matches: no snapshot
    first = table.delete_where([[("id", "<", 5)], [("v", "=", "v33")]])
    assert (first.rows_deleted, first.files_marked) == (11, 3)
    # a second delete adds to a file's vector (one already deleted row matched again counts once)
    second = table.delete_where([("id", "in", [4, 6, 7]), ("dt", "=", "d1")])
    assert second.rows_deleted == 2
    table = Catalog(wh).get_table("db.t")
    kinds = [s.commit_kind for s in table.snapshots()]
    assert kinds[-2:] == [CommitKind.OVERWRITE] * 2  # as Paimon 1.x commits vector changes
    _check_same(java, wh)
    gone = {(i, "d1") for i in (0, 1, 2, 3, 4, 6, 7, 33)} | {(i, "d2") for i in range(5)}
    expect = [(i, d) for d, n in (("d1", 50), ("d2", 10)) for i in range(n) if (i, d) not in gone]
    assert sorted(zip(*(table.to_arrow().column(c).to_pylist() for c in ("id", "dt")), strict=True)) == sorted(expect)
    # time travel: the snapshot before the deletes still has every row
    assert table.to_arrow(snapshot_id=kinds.index(CommitKind.OVERWRITE)).num_rows == 60
    # incremental reads across the deletes: Java 0.9 reads the files added in between and leaves
    # vector changes out (the second write's rows, deleted or not); so do we
    changes = table.read_changes(1, len(kinds))
    assert changes.num_rows == 20
    assert_same_rows(changes, java.read_changes(wh, "db.t", 1, len(kinds)))
    # Java deletes on top of our vectors, then compacts everything with one
    java.append_dv_delete(wh, "db.t", [("id", "=", 40)])
    _check_same(java, wh)
    java.append_compact(wh, "db.t")
    _check_same(java, wh)
    assert _positions(Catalog(wh).get_table("db.t")) == {}


def test_we_compact_our_deletes_java_reads(java, wh: str) -> None:
    java.create_table(wh, "db.t", SCHEMA, partition_keys=["dt"], options=DV)
    table = Catalog(wh).get_table("db.t")
    for start in range(0, 40, 10):
        table.write_arrow(pa.concat_tables([_rows(range(start, start + 10), "d1"), _rows([start], "d2")]))
    assert table.delete_where([("id", "in", [1, 12, 30, 31])]).rows_deleted == 5  # 30 of d2 too
    result = table.compact()
    # the marked files (small ones) are rewritten without their rows, the three of d1 into one
    # file; the plain ones wait for compaction.min.file-num (5) as in any append table
    assert (result.files_in, result.rows_in - result.rows_out) == (4, 5)
    table = Catalog(wh).get_table("db.t")
    assert _positions(table) == {}
    assert not snapshot_index(table.store, table.latest_snapshot())
    _check_same(java, wh)
    assert table.to_arrow().num_rows == 39


def _streamed_ours(table, snapshot_id: int) -> list[tuple[int, str]]:
    stream = table.stream(mode="from-snapshot", snapshot_id=snapshot_id)
    reader = stream.change_reader()
    return sorted((r["id"], r["_row_kind"]) for b in stream.poll(10) for s in b.splits
                  for r in reader.read(s).to_pylist())


def test_change_reads_over_snapshots_that_only_change_vectors(java, wh: str) -> None:
    """Snapshots that only change vectors (a delete: OVERWRITE in 1.x, COMPACT in 0.9) add no data
    file. Incremental reads of snapshot ids (auto / delta) and streams read the files APPEND
    snapshots added, as written (HEAD builds those splits without deletion files, 0.9 with the
    adding snapshot's, which had none), and skip the delete's snapshot (streaming-read-overwrite,
    which would look at it, is refused without a primary key). Between tags the two snapshots'
    files are diffed: the files only the end holds are read with its vectors applied, a file both
    hold is left out even when its vector changed (readIncrementalDiff, 0.9 and HEAD alike). See
    docs/format.md §7.3."""
    java.create_table(wh, "db.t", SCHEMA, partition_keys=["dt"], options=DV)
    table = Catalog(wh).get_table("db.t")
    table.write_arrow(_rows(range(5), "d1"))  # 1
    table.create_tag("start", 1)
    table.write_arrow(_rows(range(5, 10), "d1"))  # 2
    table.delete_where([("id", "in", [1, 6])])  # 3: a vector for each file
    table.write_arrow(_rows(range(10, 12), "d1"))  # 4
    table.create_tag("end", 4)
    table = Catalog(wh).get_table("db.t")
    assert table.latest_snapshot().commit_kind == CommitKind.APPEND
    delta = table.read_changes(1, 4)
    assert sorted(delta.column("id").to_pylist()) == [5, 6, 7, 8, 9, 10, 11]  # 6 stays: no vector applied
    # Java 0.9 cannot read (1, 4): it merges the two APPENDs' files of the bucket into one split
    # carrying one snapshot's deletion-file list (IndexOutOfBoundsException in DeletionFile.factory);
    # HEAD's IncrementalDeltaStartingScanner attaches none. Each APPEND in its own range it reads.
    for start, end in ((1, 3), (3, 4)):
        assert_same_rows(table.read_changes(start, end), java.read_changes(wh, "db.t", start, end))
    assert sorted(table.read_changes(1, 3).column("id").to_pylist()) == [5, 6, 7, 8, 9]
    diff = table.read_changes("start", "end")
    assert sorted(diff.column("id").to_pylist()) == [5, 7, 8, 9, 10, 11]  # 6 hidden, 1's file left out
    assert_same_rows(diff, java.read_changes(wh, "db.t", "start", "end"))
    ours = _streamed_ours(table, 2)
    stream = java.stream(wh, "db.t", {"scan.mode": "from-snapshot", "scan.snapshot-id": "2"})
    theirs = sorted((r["id"], r["_row_kind"]) for _ in range(6) for r in stream.next().to_pylist())
    stream.close()
    assert ours == theirs == [(i, "+I") for i in (5, 6, 7, 8, 9, 10, 11)]
