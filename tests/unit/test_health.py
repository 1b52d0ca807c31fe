"""Bucket health numbers on hand-built buckets."""

from __future__ import annotations

import itertools

from lake_assets.ops.health import BucketHealth, bucket_health, health_rows_to_pylist
from lake_assets.options import CoreOptions
from lake_assets.spec.binary_row import serialize_row
from lake_assets.spec.manifest import DataFileMeta, SimpleStats
from lake_assets.spec.types import BigIntType

KEY_TYPES = [BigIntType(nullable=False)]
OPTIONS = CoreOptions({"target-file-size": "100 b"})  # small below 70 bytes (ratio 0.7)
_names = itertools.count()


def meta(
    size: int, *, level: int = 0, seq: int = 0, deletes: int | None = 0, created: int | None = None
) -> DataFileMeta:
    return DataFileMeta(
        file_name=f"data-{next(_names)}.parquet",
        file_size=size,
        row_count=10,
        min_key=serialize_row([0], KEY_TYPES),
        max_key=serialize_row([10], KEY_TYPES),
        key_stats=SimpleStats.EMPTY,
        value_stats=SimpleStats.EMPTY,
        min_sequence_number=seq,
        max_sequence_number=seq,
        schema_id=0,
        level=level,
        creation_time_ms=created,
        delete_row_count=deletes,
    )


def test_hand_built_bucket() -> None:
    files = [
        meta(10, seq=10, created=1_000),
        meta(20, seq=11, created=2_000, deletes=2),
        meta(60, level=3),
        meta(200, level=5, deletes=None),
        meta(100, level=5),
    ]
    (row,) = bucket_health({(("2024-01-01",), 0): files}, num_levels=6, options=OPTIONS, now_ms=5_000)
    assert row == BucketHealth(
        partition=("2024-01-01",),
        bucket=0,
        file_count=5,
        level0_file_count=2,
        sorted_runs=4,  # two level-0 files, level 3, level 5
        total_bytes=390,
        avg_file_bytes=78.0,
        small_file_count=3,  # 10, 20, 60 < 70
        size_amplification_percent=30.0,  # 100 × (10 + 20 + 60) / 300
        oldest_level0_age_ms=4_000,
        delete_row_count=2,
        compaction_would_trigger=False,  # 4 runs < trigger 5
        row_count=None,  # a primary-key bucket of 4 runs with retracts: not its key count
    )


def test_trigger_threshold_and_edge_values() -> None:
    busy = [meta(10, seq=i, created=100 * i) for i in range(6)]  # 6 runs > trigger 5
    settled = [meta(500, level=5)]
    rows = bucket_health(
        {("p", 1): busy, ("p", 2): settled},
        num_levels=6,
        options=OPTIONS,
        now_ms=1_000,
        small_file_threshold=5,
    )
    assert [r.bucket for r in rows] == [1, 2]
    assert rows[0].compaction_would_trigger
    assert rows[0].small_file_count == 0  # custom threshold: nothing below 5 bytes
    assert rows[0].oldest_level0_age_ms == 1_000
    assert rows[0].size_amplification_percent == 500.0
    assert not rows[1].compaction_would_trigger
    assert rows[1].size_amplification_percent == 0.0
    assert rows[1].oldest_level0_age_ms is None


def test_append_table_uses_small_file_picking() -> None:
    options = CoreOptions({"target-file-size": "100 b", "compaction.min.file-num": "3"}, has_primary_key=False)
    rows = bucket_health(
        {((), 0): [meta(10, seq=i) for i in range(3)], ((), 1): [meta(10, seq=i) for i in range(2)]},
        num_levels=6,
        options=options,
        now_ms=0,
    )
    assert [r.compaction_would_trigger for r in rows] == [True, False]


def test_rows_to_pylist() -> None:
    rows = bucket_health({(("a",), 0): [meta(10)]}, num_levels=6, options=OPTIONS, now_ms=0)
    (d,) = health_rows_to_pylist(rows)
    assert d["partition"] == ("a",)
    assert d["file_count"] == 1
    assert list(d) == [
        "partition",
        "bucket",
        "file_count",
        "level0_file_count",
        "sorted_runs",
        "total_bytes",
        "avg_file_bytes",
        "small_file_count",
        "size_amplification_percent",
        "oldest_level0_age_ms",
        "delete_row_count",
        "compaction_would_trigger",
        "row_count",
    ]
