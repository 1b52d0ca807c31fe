"""A postpone-bucket table (``bucket = -2``, Paimon 1.1+): what makes one, the keys of the options
that choose a new partition's bucket count, and the counts its partitions' files record.

Its writers (`lake_assets.ops.postpone_write`, `lake_assets.ops.postpone_fixed_bucket`), its batch
writes' counts (`lake_assets.ops.postpone_batch`), its change reads and its compaction
(`lake_assets.ops.postpone`) all ask these questions; they live here so that a write or a read
does not import the compaction to ask them (issue 17 §3).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lake_assets.errors import CorruptMetadataError
from lake_assets.table_support import POSTPONE_BUCKET, Op

if TYPE_CHECKING:
    from lake_assets.spec.manifest import ManifestEntry
    from lake_assets.store.file_store import FileStore

DEFAULT_BUCKET_NUM_KEY = "postpone.default-bucket-num"
TARGET_ROWS_KEY = "postpone.target-row-num-per-bucket"
TARGET_SIZE_KEY = "postpone.target-size-per-bucket"


def is_postpone_table(store: FileStore) -> bool:
    """Whether ``store`` is a primary-key table in postpone bucket mode."""
    return bool(store.schema.primary_keys) and store.schema.core_options.bucket == POSTPONE_BUCKET


def record_bucket_count(store: FileStore, counts: dict[bytes, int], e: ManifestEntry) -> None:
    """Record the ``totalBuckets`` of real-bucket entry ``e`` as its partition's count in ``counts``.

    A partition whose files record different counts raises `CorruptMetadataError` naming the
    table and partition, as Java's ``PostponeUtils.getKnownNumBuckets`` ("Partition ... has
    different totalBuckets") and pypaimon's planner do: writing or compacting it with either
    count would put keys in the wrong bucket for the other files. So does a bucket at or past its
    count."""
    if not 0 <= e.bucket < e.total_buckets:
        raise CorruptMetadataError(
            f"Cannot plan the buckets of {store.name}: file {e.file.file_name} is in bucket {e.bucket} (_BUCKET) "
            f"of {e.total_buckets} (_TOTAL_BUCKETS)")
    known = counts.setdefault(e.partition, e.total_buckets)
    if known != e.total_buckets:
        values = store.file_store_scan(Op.COMPACT).partition_values(e.partition)
        where = dict(zip(store.schema.partition_keys, values, strict=True))
        raise CorruptMetadataError(
            f"Cannot plan the buckets of {store.name}: partition {where} has files recording different "
            f"bucket counts (totalBuckets {known} and {e.total_buckets}, e.g. {e.file.file_name})"
        )
