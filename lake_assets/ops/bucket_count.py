"""Which bucket count a partition's files were written with, and the writes that must match it.

``ALTER TABLE ... SET ('bucket' = 'N')`` changes the count for new partitions and for partitions
an INSERT OVERWRITE rewrites (the overwrite rescales them); every other partition keeps its files
and the count each manifest entry records (``_TOTAL_BUCKETS``). Reads select buckets per entry's
own count (`lake_assets.ops.plan.BucketSelector`). A writer or compaction with the table's count
would put a key of such a partition into another bucket than its older versions, so that no
merge sees both: Paimon 0.9 refuses it (``AbstractFileStoreScan`` with ``checkNumOfBuckets``,
the scan every writer restores its buckets with - compactions included), and so do we, before
anything is written.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from lake_assets.errors import UnsupportedFeatureError
from lake_assets.spec.manifest import ManifestEntry


def partition_bucket_counts(entries: Iterable[ManifestEntry]) -> dict[bytes, int]:
    """A partition's recorded bucket count per partition, from live entries of real buckets
    (a partition has one: a commit changing it without an overwrite is refused)."""
    return {e.partition: e.total_buckets for e in entries if e.bucket >= 0 and e.total_buckets > 0}


def check_bucket_count(
    table: str, partition_keys: Sequence[str], partition_values: Sequence[Any], previous: int | None, num_buckets: int
) -> None:
    """Refuse to write (or compact) a partition whose files were written with ``previous``
    buckets into ``num_buckets``; None (no files, or an overwrite that ignores them) passes."""
    if previous is None or num_buckets <= 0 or previous == num_buckets:
        return
    where = (
        "partition " + ", ".join(f"{k}={v}" for k, v in zip(partition_keys, partition_values, strict=True))
        if partition_keys else "the table"
    )
    raise UnsupportedFeatureError(
        f"Cannot write {where} of {table} with a new bucket num {num_buckets}, but the previous bucket num is "
        f"{previous}: overwrite the partition (write_arrow(..., overwrite=...)) to rescale its data first"
    )
