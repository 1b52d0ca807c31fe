"""`Table.health()` of unaware-bucket append tables (no primary key, ``bucket = -1``, with and
without deletion vectors, partitioned), each number checked against the live files, the table as
read, and what a real `compact()` then rewrites: no LSM numbers (append files, no levels), and
``compaction_would_trigger`` exactly where the compaction changes the files. (Fixed-bucket append
tables, which lake_assets neither writes nor compacts, are written by pypaimon in
tests/interop/test_append_health_interop.py.)"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog, Table
from lake_assets.lsm.compact_strategy import small_file_threshold
from lake_assets.spec.manifest import DataFileMeta

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.string())])
LSM = ("level0_file_count", "sorted_runs", "size_amplification_percent", "oldest_level0_age_ms")
# a file of a few rows is small (below 0.7 × 4 kb), one of BIG rows is not
BASE = {"target-file-size": "4 kb", "compaction.min.file-num": "2"}
BIG = 3000
UNAWARE = {**BASE, "bucket": "-1"}
DV = {**UNAWARE, "deletion-vectors.enabled": "true"}


def rows(ids: list[int] | range, p: str) -> pa.Table:
    return pa.table({"id": list(ids), "p": [p] * len(ids), "v": [f"value-{i:08d}" for i in ids]}, schema=SCHEMA)


def small_writes(t: Table) -> None:
    """a: three small files (a trigger); b: one (nothing to merge)."""
    for start in (0, 10, 20):
        t.write_arrow(rows(range(start, start + 3), "a"))
    t.write_arrow(rows([100], "b"))


def small_apart(t: Table) -> None:
    """a: small, large, small: the large file parts the small ones (each alone: no trigger, though
    a full compaction would rewrite the large file); b: two small files in a row (a trigger)."""
    t.write_arrow(rows([1], "a"))
    t.write_arrow(rows(range(1000, 1000 + BIG), "a"))
    t.write_arrow(rows([2], "a"))
    t.write_arrow(rows([3], "b"))
    t.write_arrow(rows([4], "b"))


def large_only(t: Table) -> None:
    """Only large files (and old ones): nothing a compaction rewrites."""
    t.write_arrow(rows(range(0, BIG), "a"))
    t.write_arrow(rows(range(BIG, 2 * BIG), "a"))


def deletes(t: Table) -> None:
    """a: a large file, a fifth of whose rows a vector hides (purged); b: one small file, one
    large file with a few rows deleted (kept: under compaction.delete-ratio-threshold)."""
    t.write_arrow(rows(range(0, BIG), "a"))
    t.write_arrow(rows([BIG * 10], "b"))
    t.write_arrow(rows(range(BIG * 20, BIG * 21), "b"))
    t.delete_where([("id", "<", BIG // 4)])
    t.delete_where([("id", "in", [BIG * 20, BIG * 20 + 1])])


def deletes_compacted(t: Table) -> None:
    """a: a small file with a vector is purged alone, the two others merged: two small files
    again (a trigger); b: its only file's rows all deleted, then one new file (nothing to merge)."""
    small_writes(t)
    t.delete_where([("id", "in", [1, 100])])  # small files with a vector: purged
    t.compact()
    t.write_arrow(rows([200], "b"))


CASES: dict[str, tuple[dict[str, str], Callable[[Table], None], set[str]]] = {
    # case: (options, writes, partitions a compaction rewrites)
    "unaware, small files": (UNAWARE, small_writes, {"p=a"}),
    "unaware, min-file-num over the files": ({**UNAWARE, "compaction.min.file-num": "4"}, small_writes, set()),
    # compaction.max.file-num files are merged whatever compaction.min.file-num says (Paimon 0.9-1.0)
    "unaware, max-file-num under min-file-num": (
        {**UNAWARE, "compaction.min.file-num": "4", "compaction.max.file-num": "3"}, small_writes, {"p=a"}),
    "unaware, fallback key of max-file-num": (
        {**UNAWARE, "compaction.min.file-num": "4", "compaction.early-max.file-num": "3"}, small_writes, {"p=a"}),
    "unaware, small files apart": (UNAWARE, small_apart, {"p=b"}),
    "unaware, large files only": (UNAWARE, large_only, set()),
    "unaware, deletion vectors, deletes": (DV, deletes, {"p=a"}),
    "unaware, deletion vectors, deleted, compacted, written": (DV, deletes_compacted, {"p=a"}),
}


def live(t: Table) -> list[tuple[tuple[str, int], DataFileMeta]]:
    return [((t.store.partition_path_of(e.partition), e.bucket), e.file)
            for e in t.store.file_store_scan().live_entries(t.latest_snapshot())]


@pytest.mark.parametrize("case", list(CASES))
def test_append_health_is_what_the_files_hold_and_compaction_does(tmp_path: Path, case: str) -> None:
    options, steps, rewritten = CASES[case]
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, partition_keys=["p"], options=options)
    steps(t)
    health = t.health().to_pylist()
    files = live(t)
    by_bucket = {(r["partition"], r["bucket"]): r for r in health}
    assert set(by_bucket) == {k for k, _ in files}
    threshold = small_file_threshold(t.store.schema.core_options.target_file_size, 0.7)
    read = Counter(f"p={p}" for p in t.to_arrow().column("p").to_pylist())
    for key, r in by_bucket.items():
        mine = [f for k, f in files if k == key]
        assert all(r[c] is None for c in LSM), r  # append files: no levels, however old
        assert r["file_count"] == len(mine)
        assert r["total_bytes"] == sum(f.file_size for f in mine)
        assert r["small_file_count"] == sum(1 for f in mine if f.file_size < threshold)
        assert r["delete_row_count"] == 0
        assert r["row_count"] == sum(f.row_count for f in mine) - r["deletion_vector_rows"]
    rows_read = Counter()
    for r in health:
        rows_read[r["partition"]] += r["row_count"]
    assert rows_read == read  # a read returns the rows health counts

    # the trigger is what a compaction does: it rewrites files exactly in the buckets it names
    triggered = {k for k, r in by_bucket.items() if r["compaction_would_trigger"]}
    before = {k: sorted(f.file_name for q, f in files if q == k) for k in by_bucket}
    t.compact()
    after = {k: sorted(f.file_name for q, f in live(t) if q == k) for k in by_bucket}
    assert {k for k in by_bucket if before[k] != after[k]} == triggered
    assert {p for p, _ in triggered} == rewritten
    assert Counter(f"p={p}" for p in t.to_arrow().column("p").to_pylist()) == read
