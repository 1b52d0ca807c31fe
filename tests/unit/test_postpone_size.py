"""The size a batch into real buckets of a postpone table is measured by (ops/postpone_size.py):
Paimon HEAD decides a new partition's bucket count from its staged postpone files' stored size
(``SparkPostponeStagedCommitter`` -> ``PostponeUtils.decideFixedBucketNum``), not from Arrow's
in-memory size, which is about twice that here. Postponed files roll where HEAD's do: at
``target-file-size`` of written (compressed) bytes."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog, Table
from lake_assets.ops import postpone_size
from lake_assets.ops.postpone_fixed_bucket import staged_partitions, write_fixed_buckets
from lake_assets.ops.postpone_size import SAMPLE_ROWS, postpone_file_bytes
from lake_assets.ops.postpone_write import PostponeWriter
from lake_assets.table_support import Op

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string()), ("x", pa.float64())])


def batch(n: int, dt: str = "d1", start: int = 0) -> pa.Table:
    rng = np.random.default_rng(n)
    ks = np.arange(start, start + n)
    return pa.table({"k": ks, "dt": [dt] * n, "v": [f"value-{i % 977}-{i}" for i in ks], "x": rng.random(n)},
                    schema=SCHEMA)


def make(catalog: Catalog, name: str = "db.p", **options: str) -> Table:
    return catalog.create_table(name, SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                                options={"bucket": "-2", **options})


def postponed_sizes(t: Table, data: pa.Table) -> list[int]:
    """The stored sizes of the postpone files our writer (HEAD's layout) writes for ``data``."""
    w = PostponeWriter(t.store, "measure")
    w.write_arrow(data)
    messages = w.prepare_commit()
    try:
        return [f.file_size for m in messages for f in m.new_files]
    finally:
        w.abort(messages)


@pytest.mark.parametrize("compression", ["zstd", "uncompressed"])
def test_measure_is_the_postpone_file_size(catalog: Catalog, compression: str):
    t = make(catalog, **{"file.compression": compression})
    for n in (1, 1000, SAMPLE_ROWS):
        data = batch(n)
        assert postpone_file_bytes(t.store, data) == sum(postponed_sizes(t, data))
    assert data.nbytes > 1.5 * postpone_file_bytes(t.store, data)  # what the Arrow measure overstated


def test_a_big_batch_is_measured_on_a_sample_within_two_percent(catalog: Catalog):
    t = make(catalog, **{"target-file-size": "1 gb"})  # one file, as HEAD stages it
    data = batch(200_000)
    assert data.num_rows > 20 * postpone_size.SAMPLE_ROWS
    (real,) = postponed_sizes(t, data)
    assert abs(postpone_file_bytes(t.store, data) - real) <= 0.02 * real


def test_many_partitions_are_measured_by_one_sample(catalog: Catalog, monkeypatch):
    t = make(catalog, **{"target-file-size": "1 gb"})
    parts = [batch(n, dt, start) for n, dt, start in ((60_000, "d1", 0), (25_000, "d2", 10**6), (3_000, "d3", 0))]
    data = pa.concat_tables(parts)
    encoded: list[int] = []
    real_encode = postpone_size._encoded_size
    monkeypatch.setattr(postpone_size, "_encoded_size",
                        lambda w, d: encoded.append(0 if d is None else d.num_rows) or real_encode(w, d))
    staged = staged_partitions(t.store, data)
    assert sum(encoded) <= postpone_size.SAMPLE_ROWS  # one sample, whatever the partition count
    # one ratio for the batch: its total within 2%, a partition within 10% (its own compressibility)
    reals, measures = [], []
    for part in parts:
        (real,) = postponed_sizes(t, part)
        [measured] = [s.nbytes for s in staged.values() if s.rows == part.num_rows]
        assert abs(measured - real) <= 0.1 * real, (part.num_rows, measured, real)
        reals.append(real)
        measures.append(measured)
    assert abs(sum(measures) - sum(reals)) <= 0.02 * sum(reals)


def test_new_partition_count_is_decided_on_postpone_file_bytes(catalog: Catalog):
    """A target between the batch's postpone-file size and its Arrow size: HEAD needs 2 buckets
    (ceil(staged / target)); the Arrow size would have said 3 or more, rounded up to 4."""
    probe = make(catalog, "db.probe")
    data = batch(30_000)
    staged = sum(postponed_sizes(probe, data))
    target = int(staged * 0.6)  # ceil(staged / target) = 2
    assert -(-data.nbytes // target) >= 3
    t = make(catalog, **{"postpone.target-size-per-bucket": str(target)})
    assert abs(next(iter(staged_partitions(t.store, data).values())).nbytes - staged) <= 0.02 * staged
    write_fixed_buckets(t.store, data)
    scan = t.store.file_store_scan(Op.COMPACT)
    assert {e.total_buckets for e in scan.live_entries(t.refresh().store.snapshot_manager.latest())} == {2}
    assert t.refresh().to_arrow().num_rows == 30_000


def test_postponed_files_roll_at_the_target_of_written_bytes(catalog: Catalog):
    """HEAD's postpone writer rolls at ``target-file-size`` (a primary-key table's) of bytes written
    (``RollingFileWriter``: the file's length, looked at every 1,000 rows written); pypaimon 2.1's
    rolls at Arrow bytes instead."""
    target = 64 * 1024
    t = make(catalog, **{"target-file-size": str(target)})
    data = batch(40_000)
    w = PostponeWriter(t.store, "measure")
    w.write_arrow(data)
    messages = w.prepare_commit()
    files = [(f.row_count, f.file_size) for m in messages for f in m.new_files]
    w.abort(messages)
    sizes = [s for _, s in files]
    total = sum(sizes)
    assert sum(r for r, _ in files) == 40_000
    assert 2 <= len(sizes) <= total // target + 1  # by written bytes, not Arrow bytes
    assert len(sizes) < data.nbytes // target
    # every file but the last: Java's rolling point, the first multiple of 1,000 rows written at
    # which the file holds the target size (1,000 rows fewer would have been short of it)
    for rows, size in files[:-1]:
        assert rows % 1000 == 0
        assert size >= target
        assert size * (rows - 1000) / rows < target, (rows, size)
