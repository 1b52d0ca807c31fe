"""Fixed-bucket append tables (no primary key, ``bucket = N``, ``bucket-key``) in the core: Paimon
0.9's BucketedAppendCompactManager pick against hand-computed cases, and writes, inline and
dedicated compaction, overwrites, streams and the checks on such tables (Java 0.9 both ways:
tests/differential/test_fixed_bucket_append_java.py)."""

from __future__ import annotations

import itertools
from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import OptionError, UnsupportedFeatureError
from lake_assets.lsm.bucket import assign_buckets
from lake_assets.lsm.bucketed_append import pick_bucketed_append, pick_bucketed_append_full
from lake_assets.ops.read import SplitReader
from lake_assets.spec.manifest import DataFileMeta, SimpleStats
from lake_assets.spec.types import BigIntType

_names = itertools.count()


def meta(size: int, seq: int, rows: int = 1) -> DataFileMeta:
    return DataFileMeta(
        file_name=f"data-{next(_names)}.parquet", file_size=size, row_count=rows, min_key=b"", max_key=b"",
        key_stats=SimpleStats.EMPTY, value_stats=SimpleStats.EMPTY, min_sequence_number=seq,
        max_sequence_number=seq + rows - 1, schema_id=0, level=0,
    )


# ------------------------------------------------------------------------------------- the pick
def test_best_effort_pick_slides_a_window_in_sequence_order() -> None:
    # target 100, min 3 files, max 5: given out of order, picked in sequence order
    a, b, c, d = meta(60, 0), meta(60, 1), meta(10, 2), meta(10, 3)
    # a + b reach 100 bytes in 2 < 3 files: a leaves; b + c + d hold 80 bytes: nothing yet
    assert pick_bucketed_append([d, c, b, a], 100, 3, 5) == []
    e = meta(20, 4)
    assert pick_bucketed_append([e, d, c, b, a], 100, 3, 5) == [b, c, d, e]  # 100 bytes in 4 files
    # a file at the target on its own leaves the window (fewer than min files), the rest goes on
    big, small = meta(200, 0), [meta(10, i) for i in range(1, 5)]
    assert pick_bucketed_append([big, *small[:3]], 100, 3, 5) == []  # 3 x 10 < 100, 3 < 5 files
    assert pick_bucketed_append([big, *small], 100, 3, 4) == small  # 4 = compaction.max.file-num
    # the target reached in enough files
    three = [meta(50, 0), meta(30, 1), meta(30, 2)]
    assert pick_bucketed_append(three, 100, 3, 5) == three


def test_best_effort_pick_takes_max_file_num_files_whatever_their_size() -> None:
    files = [meta(1, i) for i in range(7)]
    assert pick_bucketed_append(files, 1 << 30, 5, 5) == files[:5]
    assert pick_bucketed_append(files, 1 << 30, 5, 8) == []
    assert pick_bucketed_append(files[:4], 1 << 30, 5, 5) == []


def test_full_pick_skips_leading_large_files_and_needs_more_small_than_large() -> None:
    large, small = meta(100, 0), [meta(1, i) for i in range(1, 4)]
    assert pick_bucketed_append_full([large, *small], 100) == small
    assert pick_bucketed_append_full([large, *small[:2]], 100) == []  # fewer than 3 files
    assert pick_bucketed_append_full([small[0], meta(100, 5), meta(100, 6)], 100) == []  # 1 small, 2 large


# ----------------------------------------------------------------------------------- the table
SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.int64())])


def _table(catalog: Catalog, **options: str) -> Any:
    return catalog.create_table("db.t", SCHEMA, partition_keys=["dt"],
                                options={"bucket": "2", "bucket-key": "id", **options})


def _rows(start: int, n: int = 6, dt: str = "a") -> pa.Table:
    return pa.table({"id": pa.array([i % 4 for i in range(start, start + n)], pa.int64()), "dt": [dt] * n,
                     "v": pa.array(range(start, start + n), pa.int64())}, schema=SCHEMA)


def _files(t: Any) -> dict[int, list[DataFileMeta]]:
    t = t.refresh()
    out: dict[int, list[DataFileMeta]] = {}
    for e in t.store.file_store_scan().live_entries(t.latest_snapshot()):
        assert e.total_buckets == 2
        out.setdefault(e.bucket, []).append(e.file)
    return {b: sorted(fs, key=lambda f: f.min_sequence_number) for b, fs in out.items()}


def _by_bucket(rows: pa.Table) -> dict[int, list[int]]:
    """``v`` per bucket of ``id`` (2 buckets), in ``rows``' order."""
    out: dict[int, list[int]] = {}
    buckets = assign_buckets([rows.column("id")], [BigIntType()], 2)
    for b, v in zip(buckets.tolist(), rows.column("v").to_pylist(), strict=True):
        out.setdefault(b, []).append(v)
    return out


def test_writes_route_by_bucket_key_in_input_order_and_compact_inline(catalog: Catalog) -> None:
    t = _table(catalog)
    written = [_rows(6 * i) for i in range(6)]
    for rows in written:
        t.refresh().write_arrow(rows)
    files = _files(t)
    # the fifth file of each bucket made the writer compact (compaction.max.file-num 5): one file
    # of its rows, numbered on from the first, then the sixth commit's file
    assert {b: [(f.min_sequence_number, f.max_sequence_number, f.row_count) for f in fs]
            for b, fs in files.items()} == {b: [(0, 14, 15), (15, 17, 3)] for b in (0, 1)}
    assert [s.commit_kind.name for s in t.snapshots()].count("COMPACT") == 1
    expected = _by_bucket(pa.concat_tables(written))
    assert _by_bucket(t.to_arrow()) == expected  # each bucket in write order
    reader = SplitReader(t.store, t.schema, None, None)
    for split in t.refresh().plan():  # and each row in its hash bucket
        rows = pa.concat_tables(list(reader.read_split(split)))
        assert split.total_buckets == 2 and set(_by_bucket(rows)) == {split.bucket}
    stream = t.stream(mode="latest-full")
    changes = t.change_reader()
    streamed = pa.concat_tables([changes.read(s) for batch in stream.poll(max_snapshots=10) for s in batch.splits])
    assert _by_bucket(streamed) == expected  # streams give each bucket in sequence order too
    t.refresh().write_arrow(_rows(100))
    streamed = pa.concat_tables([changes.read(s) for batch in stream.poll(max_snapshots=10) for s in batch.splits])
    assert _by_bucket(streamed) == _by_bucket(_rows(100))


def test_write_only_full_compaction_and_delta_commits(catalog: Catalog) -> None:
    t = _table(catalog, **{"write-only": "true"})
    for i in range(6):
        t.refresh().write_arrow(_rows(6 * i))
    assert {b: len(fs) for b, fs in _files(t).items()} == {0: 6, 1: 6}  # write-only: no compaction
    t.refresh().compact()  # best effort: the first five files
    assert {b: [f.row_count for f in fs] for b, fs in _files(t).items()} == {0: [15, 3], 1: [15, 3]}
    t.refresh().compact(full=True)  # 2 files: fewer than 3, nothing
    assert {b: len(fs) for b, fs in _files(t).items()} == {0: 2, 1: 2}
    t.refresh().write_arrow(_rows(36))
    t.refresh().compact(full=True)  # the 15-row file is small too: all three
    assert {b: [f.row_count for f in fs] for b, fs in _files(t).items()} == {0: [21], 1: [21]}

    catalog.drop_table("db.t")
    t = _table(catalog, **{"full-compaction.delta-commits": "2", "compaction.max.file-num": "50"})
    for i in range(3):
        t.refresh().write_arrow(_rows(6 * i))
    # from the second commit on the writer compacts fully (delta 2, counted since the last COMPACT
    # snapshot): 2 files are too few for Paimon's full pick, the third commit's 3 files are not
    assert {b: [f.row_count for f in fs] for b, fs in _files(t).items()} == {0: [9], 1: [9]}
    assert [s.commit_kind.name for s in t.snapshots()] == ["APPEND", "APPEND", "APPEND", "COMPACT"]


def test_overwrite_and_bucket_count_checks(catalog: Catalog) -> None:
    t = _table(catalog)
    t.write_arrow(pa.concat_tables([_rows(0), _rows(0, dt="b")]))
    t.refresh().write_arrow(_rows(50), overwrite={"dt": "a"})
    got = t.refresh().to_arrow()
    assert sorted(got.filter(pa.compute.equal(got.column("dt"), "a")).column("v").to_pylist()) == list(range(50, 56))
    # an ALTER of bucket: the partitions written with 2 buckets refuse writes and compaction
    t.update_schema().set_option("bucket", "3").commit()
    with pytest.raises(UnsupportedFeatureError, match="bucket"):
        t.refresh().write_arrow(_rows(60))
    with pytest.raises(UnsupportedFeatureError, match="bucket"):
        t.refresh().compact(full=True)


def test_tables_refused_at_create_and_at_write(catalog: Catalog) -> None:
    with pytest.raises(OptionError, match="define a 'bucket-key' for bucketed append mode"):
        catalog.create_table("db.x", SCHEMA, options={"bucket": "2"})
    nested = pa.schema([("id", pa.list_(pa.int64())), ("v", pa.int64())])
    with pytest.raises(OptionError, match="nested type can not be in bucket-key"):
        catalog.create_table("db.x", nested, options={"bucket": "2", "bucket-key": "id"})
    with pytest.raises(OptionError, match="not partition keys"):
        catalog.create_table("db.x", SCHEMA, partition_keys=["dt"], options={"bucket": "2", "bucket-key": "dt"})
    t = catalog.create_table("db.rk", SCHEMA, options={"bucket": "2", "bucket-key": "id"})
    with pytest.raises(UnsupportedFeatureError, match="append tables only take"):
        t.new_writer("u").write_arrow(_rows(0), kinds=pa.array([3] * 6, pa.int8()).to_numpy())


def test_files_with_the_same_first_number_keep_their_manifest_order() -> None:
    # pypaimon 2.1 numbers every file 0/0: the picks keep such files in the order given (the
    # manifests'), as readers do, whatever their names
    tied = [meta(1, 0) for _ in range(5)]  # names ascending: reversed, the given order is not theirs
    for order in (tied, tied[::-1]):
        assert pick_bucketed_append(order, 1 << 30, 5, 5) == order
        assert pick_bucketed_append_full(order, 1 << 30) == order
