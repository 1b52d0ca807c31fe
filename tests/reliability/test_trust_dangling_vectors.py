"""Trust boundary: a deletion vector filed under a bucket with no files (issue 14, session 18).

Another writer's index manifest may keep a deletion-vector entry for a bucket whose files are all
gone (or name files the bucket does not hold). Readers ignore it, as Paimon Java does (vectors
apply to the files a split reads); health reports it (`dangling_vector_files`, a row for the
empty bucket); compaction, orphan removal and expiry keep its index file while a retained
snapshot references it and delete it once none does; nothing beside the table is touched.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from pathlib import Path

import pyarrow as pa

from tests.reliability.test_trust_stored_numbers import SCHEMA, _craft, _fresh, _stream, _table


def test_vector_under_a_bucket_without_files_is_ignored_reported_and_cleaned(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    canary.write_bytes(b"precious")
    t = _table(tmp_path, "dv")  # an append table with vectors: rows 3..9 live, 0..2 deleted
    [entry] = t.store.index_entries(t.snapshot_manager.latest().index_manifest)
    index_file = Path(t.paths.index_file(entry.file_name))
    # the vector moved to bucket 1, which holds no file (one of the table's own, as a foreign writer filed it)
    _craft(t, index=lambda e: dataclasses.replace(e, bucket=1))
    _fresh()
    every_row = list(range(10))
    assert sorted(t.to_arrow()["k"].to_pylist()) == every_row  # bucket 0's files have no vector now
    assert t.to_arrow(filter=[("k", "=", 1)])["k"].to_pylist() == [1]
    _stream(t)
    health = {(r["bucket"]): r for r in t.health().to_pylist()}
    assert health[1]["file_count"] == 0 and health[1]["dangling_vector_files"] == 1, health
    assert health[0]["dangling_vector_files"] == 0 and health[0]["deletion_vector_rows"] == 0
    # maintenance while a snapshot references it: the index file stays
    t.compact(full=True)
    t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    t.expire_snapshots(retain_min=1, retain_max=1)
    _fresh()
    assert index_file.exists()
    assert sorted(t.to_arrow()["k"].to_pylist()) == every_row
    # a writer that replaces the table drops the entry with the bucket's index (as Java's overwrite)
    t.write_arrow(pa.table({"k": [100], "v": ["c"]}, schema=SCHEMA), overwrite=True)
    t.expire_snapshots(retain_min=1, retain_max=1)
    t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    _fresh()
    assert t.to_arrow()["k"].to_pylist() == [100]
    assert "dangling_vector_files" in t.health().column_names
    assert t.health()["dangling_vector_files"].to_pylist() == [0]
    assert not index_file.exists()
    assert canary.read_bytes() == b"precious"


def test_vector_of_a_file_its_bucket_does_not_hold_is_reported(tmp_path: Path) -> None:
    t = _table(tmp_path, "dv")
    _craft(t, index=lambda e: dataclasses.replace(
        e, dv_ranges=tuple(r._replace(data_file="data-gone.parquet") for r in e.dv_ranges or ())))
    _fresh()
    assert sorted(t.to_arrow()["k"].to_pylist()) == list(range(10))
    [row] = t.health().to_pylist()
    assert (row["file_count"], row["dangling_vector_files"], row["deletion_vector_rows"]) == (1, 1, 0)
    t.compact(full=True)
    assert sorted(t.refresh().to_arrow()["k"].to_pylist()) == list(range(10))
