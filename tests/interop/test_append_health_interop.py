"""Health of fixed-bucket append tables (no primary key, ``bucket = 2``, partitioned), written by
pypaimon 2.1: Paimon's ``BucketedAppendCompactManager`` keeps every file of a bucket at level 0 in
sequence order and merges small neighbours, no levels, so health shows no LSM numbers (however
many, however old the files), and its files, bytes, small files and rows are the bucket's. A
compaction triggers as Paimon's would (`lsm.bucketed_append`): not with three small files below
``compaction.max.file-num`` (5) and far from ``target-file-size``, so ``compact()`` changes nothing;
``compact(full=True)`` merges each bucket's small files, which pypaimon then reads."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.lsm.compact_strategy import small_file_threshold
from tests.interop.paimon import Pypaimon

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("p", pa.string()), ("v", pa.string())])
LSM = ("level0_file_count", "sorted_runs", "size_amplification_percent", "oldest_level0_age_ms")


def batch(ids: range, p: str) -> pa.Table:
    return pa.table({"id": list(ids), "p": [p] * len(ids), "v": [f"v{i}" for i in ids]}, schema=SCHEMA)


def test_fixed_bucket_append_table_health(tmp_path: Path, pypaimon: Pypaimon) -> None:
    wh = tmp_path / "wh"
    pypaimon.create_table(wh, "db.t", SCHEMA, partition_keys=["p"],
                          options={"bucket": "2", "bucket-key": "id", "compaction.min.file-num": "2"})
    for start in (0, 10, 20):  # three commits: up to three small files per (partition, bucket)
        pypaimon.write(wh, "db.t", pa.concat_tables([batch(range(start, start + 4), "a"),
                                                      batch(range(start + 100, start + 102), "b")]))
    t = Catalog(str(wh)).get_table("db.t")
    files = [((t.store.partition_path_of(e.partition), e.bucket), e.file)
             for e in t.store.file_store_scan().live_entries(t.latest_snapshot())]
    health = t.health().to_pylist()
    by_bucket = {(r["partition"], r["bucket"]): r for r in health}
    assert set(by_bucket) == {k for k, _ in files} and {b for _, b in by_bucket} == {0, 1}
    opts = t.store.schema.core_options
    threshold = small_file_threshold(opts.target_file_size, opts.small_file_ratio)
    for key, r in by_bucket.items():
        mine = [f for k, f in files if k == key]
        assert all(r[c] is None for c in LSM), r  # all at level 0: no runs, no level-0 backlog
        assert r["file_count"] == len(mine) and r["small_file_count"] == len(mine)  # all small
        assert r["total_bytes"] == sum(f.file_size for f in mine)
        assert r["small_file_count"] == sum(1 for f in mine if f.file_size < threshold)
        assert r["row_count"] == sum(f.row_count for f in mine)
        # Paimon's pick: 3 files or fewer, below compaction.max.file-num and the target size
        assert r["compaction_would_trigger"] is False
    assert max(r["file_count"] for r in health) >= 2  # small files Paimon's compaction would merge
    read = Counter(f"p={p}" for p in pypaimon.read(wh, "db.t").column("p").to_pylist())
    counted: Counter[str] = Counter()
    for r in health:
        counted[r["partition"]] += r["row_count"]
    assert counted == read == {"p=a": 12, "p=b": 6}

    t.compact()  # nothing to do: no snapshot, the same files
    assert sorted(e.file.file_name for e in t.store.file_store_scan().live_entries(t.latest_snapshot())) == \
        sorted(f.file_name for _, f in files)
    t.compact(full=True)
    after = {(r["partition"], r["bucket"]): r for r in t.refresh().health().to_pylist()}
    assert {k: r["file_count"] for k, r in after.items()} == {
        k: 1 if r["file_count"] >= 3 else r["file_count"] for k, r in by_bucket.items()}
    assert {k: r["row_count"] for k, r in after.items()} == {k: r["row_count"] for k, r in by_bucket.items()}
    assert sorted(pypaimon.read(wh, "db.t").column("id").to_pylist()) == sorted(
        t.refresh().to_arrow().column("id").to_pylist())
