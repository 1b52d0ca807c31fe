"""The bucket counts of a batch write into real buckets of a postpone-bucket table.

With ``postpone.batch-write-fixed-bucket`` (Paimon 1.2+, default true) Paimon's Flink and Spark
*batch* sinks do not write a postpone table's rows into ``bucket-postpone``: they write them as a
fixed-bucket table would, into real buckets, so readers see them at once. Each partition needs a
bucket count for that, chosen as Paimon's ``PostponeUtils`` / ``FixedBucketDecision`` do:

* a partition that already has real buckets keeps the count its files record (``totalBuckets``
  of its manifest entries), so its keys stay in their buckets;
* a new partition gets ``postpone.default-bucket-num``, or a count estimated on the staged batch
  (`lake_assets.ops.postpone.estimate_bucket_num`: rows over
  ``postpone.target-row-num-per-bucket``, else bytes over ``postpone.target-size-per-bucket``).

This module is that decision only (no writing): `plan_batch_buckets` takes what the batch holds
per partition and what the table records, and returns the count of each partition. The
estimate follows pypaimon 2.1's ``PostponeBucketPlanner`` (``new_postpone_fixed_bucket_write_builder``);
the staged bytes are the caller's measure of the uncompressed rows (pypaimon estimates binary-row
sizes; Arrow's in-memory size is the close measure a caller here has).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from lake_assets.errors import OptionError
from lake_assets.ops.postpone import DEFAULT_BUCKET_NUM_KEY, estimate_bucket_num, record_bucket_count
from lake_assets.store.file_store import FileStore
from lake_assets.table_support import POSTPONE_BUCKET, Op

BATCH_WRITE_FIXED_BUCKET_KEY = "postpone.batch-write-fixed-bucket"
MAX_PARALLELISM_KEY = "postpone.batch-write-fixed-bucket.max-parallelism"


@dataclass(frozen=True)
class StagedPartition:
    """What a batch holds for one partition: its rows and their (Arrow) bytes."""

    rows: int
    nbytes: int


@dataclass(frozen=True)
class BucketMetadata:
    """What the latest snapshot records per partition (serialized partition row): the real bucket
    count (``totalBuckets`` of its real-bucket files) and the rows still waiting in
    ``bucket-postpone``."""

    bucket_counts: Mapping[bytes, int]
    postponed_rows: Mapping[bytes, int]


def bucket_metadata(store: FileStore) -> BucketMetadata:
    """The `BucketMetadata` of the latest snapshot; reads manifests only."""
    counts: dict[bytes, int] = {}
    postponed: dict[bytes, int] = {}
    snap = store.snapshot_manager.latest()
    if snap is not None:
        for e in store.file_store_scan(Op.COMPACT).live_entries(snap):
            if e.bucket == POSTPONE_BUCKET:
                postponed[e.partition] = postponed.get(e.partition, 0) + e.file.row_count
            elif e.bucket >= 0 and e.total_buckets > 0:
                record_bucket_count(store, counts, e)
    return BucketMetadata(counts, postponed)


def max_bucket_num(store: FileStore) -> int:
    """``postpone.batch-write-fixed-bucket.max-parallelism``: the cap of an estimated count."""
    raw = store.schema.options.get(MAX_PARALLELISM_KEY, "2048")
    try:
        n = int(str(raw).strip())
    except ValueError:
        n = 0
    if n <= 0:
        raise OptionError(f"Cannot write to {store.name}: {MAX_PARALLELISM_KEY} = {raw!r} must be a positive number")
    return n


def plan_batch_buckets(
    store: FileStore, staged: Mapping[bytes, StagedPartition], metadata: BucketMetadata | None = None
) -> dict[bytes, int]:
    """The bucket count each staged partition (serialized partition row) is written with.

    A partition with real buckets keeps its recorded count. A new one gets
    ``postpone.default-bucket-num`` when set; else, as pypaimon's ``PostponeBucketPlanner``, an
    estimate over the staged rows plus the rows already postponed in the partition (they join
    the same buckets at the next compaction): ceil(rows / ``postpone.target-row-num-per-bucket``),
    or ceil(bytes / ``postpone.target-size-per-bucket``) with the staged bytes scaled up by the
    postponed rows; an estimate is capped at ``postpone.batch-write-fixed-bucket.max-parallelism``.
    ``metadata`` defaults to `bucket_metadata` of the latest snapshot."""
    meta = bucket_metadata(store) if metadata is None else metadata
    exact = DEFAULT_BUCKET_NUM_KEY in store.schema.options
    cap = None if exact else max_bucket_num(store)
    plan: dict[bytes, int] = {}
    for p, s in staged.items():
        known = meta.bucket_counts.get(p)
        if known:
            plan[p] = known
            continue
        waiting = meta.postponed_rows.get(p, 0)
        rows = s.rows + waiting
        nbytes = s.nbytes if not (waiting and s.rows) else -(-s.nbytes * rows // s.rows)
        n = estimate_bucket_num(store, rows, nbytes)
        plan[p] = n if cap is None else min(n, cap)
    return plan


def batch_write_fixed_bucket(store: FileStore) -> bool:
    """Whether batch writes of ``store`` (a postpone table) go to real buckets (Paimon's default)."""
    raw = store.schema.options.get(BATCH_WRITE_FIXED_BUCKET_KEY, "true")
    return str(raw).strip().lower() == "true"


def fixed_bucket_batch_writes(store: FileStore) -> bool:
    """Whether a batch write of ``store`` (Spark's ``df.write``, the ingest job) goes into real
    buckets: a postpone-bucket table whose ``postpone.batch-write-fixed-bucket`` is true or unset
    (Paimon's default, as its Flink and Spark batch sinks do). Streaming sinks and the core's
    `write_arrow` postpone whatever it says (Paimon's streaming sinks and pypaimon's default
    batch writer do too)."""
    if store.schema.core_options.bucket != POSTPONE_BUCKET or not store.schema.primary_keys:
        return False
    return batch_write_fixed_bucket(store)
