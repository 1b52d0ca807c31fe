"""Fixed-bucket append tables with deletion vectors (``bucket = N``, ``deletion-vectors.enabled``)
against Paimon Java 0.9, both ways.

Java deletes rows as its Spark ``DELETE`` does on such a table (the oracle's ``append_dv_delete``
with a per-bucket ``BucketedAppendDeletionFileMaintainer``: one index file per bucket, replaced
whole) and compacts as its writer's ``BucketedAppendCompactManager`` with a
``DeletionVectorsMaintainer`` (vectors applied, the rewritten files' vectors dropped, a full
compaction rewriting every file from the first small one or one with a vector on). We read,
compact and delete on top; Java reads the same rows and finds, through its own reader, the
positions we marked; and the same commits make the same files (rows and sequence ranges).

Java 0.9 predates one 1.x behaviour we follow: a delete's snapshot is an OVERWRITE (0.9: COMPACT).
Java 0.9's writer fails its own commit ("File deletion conflicts") when one best-effort
compaction of a bucket with vectors chains into another before the commit (``compaction.max.file-num``
2 over four files), so the best-effort case compacts once (3 of 4 files).
Java 0.9 writes an empty index file when a compaction drops a bucket's last vector; we drop the
bucket's index file (both read as no vectors).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from lake_assets import Catalog
from lake_assets.ops.deletion_vectors import VectorLoader, snapshot_index
from tests.differential.helpers import assert_same_rows
from tests.java.oracle import PaimonJava

from .test_fixed_bucket_append_java import assert_ordered_streams, java_files, ours_per_bucket

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()),
                    pa.field("dt", pa.string(), nullable=False)])
OPTIONS = {"bucket": "2", "bucket-key": "id", "deletion-vectors.enabled": "true"}


def _rows(start: int, n: int = 8) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({"id": ids, "v": [f"v{i}" for i in ids], "dt": ["a" if i % 3 else "b" for i in ids]},
                    schema=SCHEMA)


def _positions(table: Any) -> dict[str, list[int]]:
    loader = VectorLoader(table.store)
    out: dict[str, list[int]] = {}
    for entries in snapshot_index(table.store, table.latest_snapshot()).values():
        out.update({name: sorted(v) for name, v in loader.vectors(entries).items()})
    return out


def _java_positions(java: PaimonJava, wh: str) -> dict[str, list[int]]:
    return {f["name"]: f["deleted"] for s in java.deletion_vectors(wh, "db.t") for f in s["files"] if "deleted" in f}


def _index_files_per_bucket(table: Any) -> list[int]:
    return sorted(len(es) for es in snapshot_index(table.store, table.latest_snapshot()).values())


def _check_same(java: PaimonJava, wh: str) -> Any:
    """Java and we read the same rows, each bucket in the same order, and the same marks."""
    table = Catalog(wh).get_table("db.t")
    theirs = java.read(wh, "db.t")
    assert_same_rows(table.to_arrow(), theirs)
    for place, ids in ours_per_bucket(table).items():
        assert [i for i in theirs.column("id").to_pylist() if i in set(ids)] == ids, place
    assert _positions(table) == _java_positions(java, wh)
    return table


def test_java_deletes_we_compact_as_java_compacts(java: PaimonJava, wh: str) -> None:
    """Twin tables: Java writes and deletes both; Java compacts one, we compact the other, and the
    files (rows, sequence ranges per bucket) are the same, first best effort, then full."""
    theirs, ours = f"{wh}/java", f"{wh}/lake"
    for w in (theirs, ours):
        java.create_table(w, "db.t", SCHEMA, partition_keys=["dt"],
                          options={**OPTIONS, "compaction.max.file-num": "3", "write-only": "true"})
        for start in (0, 8, 16, 24):
            java.write(w, "db.t", _rows(start))
        java.append_dv_delete(w, "db.t", [("id", "in", [1, 4, 9, 10, 26])])
        java.append_dv_delete(w, "db.t", [("id", "in", [2, 17])])  # merged into the bucket's vectors
    table = _check_same(java, ours)
    assert _index_files_per_bucket(table) == [1, 1]  # one index file per (partition, bucket) with marks
    assert sum(len(p) for p in _positions(table).values()) == 7
    # best effort (compaction.max.file-num 3): the first three files of each bucket, vectors applied
    java.compact(theirs, "db.t", full=False, options={"write-only": "false"})
    table.compact()
    assert java_files(java, ours, "db.t") == java_files(java, theirs, "db.t")
    table = _check_same(java, ours)
    # full: every file from the first small one (all are small) or one with a vector on
    java.compact(theirs, "db.t", full=True, options={"write-only": "false"})
    table.compact(full=True)
    files = java_files(java, ours, "db.t")
    assert files == java_files(java, theirs, "db.t")
    assert_ordered_streams(files)
    table = _check_same(java, ours)
    assert _positions(table) == {} and table.to_arrow().num_rows == 32 - 7
    # Java deletes again on our compacted table and reads; we read it too
    java.append_dv_delete(ours, "db.t", [("id", "=", 30)])
    assert sorted(_check_same(java, ours).to_arrow().column("id").to_pylist()) == [
        i for i in range(32) if i not in (1, 2, 4, 9, 10, 17, 26, 30)]


def test_we_delete_java_reads_compacts_and_deletes(java: PaimonJava, wh: str, lake: Catalog) -> None:
    t = lake.create_table("db.t", SCHEMA, partition_keys=["dt"], options={**OPTIONS, "write-only": "true"})
    for start in (0, 8, 16):
        t.refresh().write_arrow(_rows(start))
    java.write(wh, "db.t", _rows(24))
    assert t.refresh().delete_where([("id", "in", [0, 5, 13, 25])]).rows_deleted == 4
    java.append_dv_delete(wh, "db.t", [("id", "=", 7)])  # Java merges into our bucket file
    assert t.refresh().delete_where([("v", "=", "v20")]).rows_deleted == 1
    table = _check_same(java, wh)
    assert set(_index_files_per_bucket(table)) == {1}
    # Java compacts our vectors away, row order kept; we read and delete on top
    java.compact(wh, "db.t", full=True, options={"write-only": "false"})
    table = _check_same(java, wh)
    assert_ordered_streams(java_files(java, wh, "db.t"))
    assert _positions(table) == {}
    table.delete_where([("id", "<", 3)])
    table = _check_same(java, wh)
    assert sorted(table.to_arrow().column("id").to_pylist()) == [
        i for i in range(32) if i not in (0, 1, 2, 5, 7, 13, 20, 25)]
