"""The bootstrap of a cross-partition upsert writer's key index (`ops/cross_partition.py`):
where every key of the table lives, read from its data, as Paimon's ``IndexBootstrap`` does.

Cross-partition tables have no HASH index files, so a writer reads every bucket's keys (a merge
read of the key columns, every level) once when it starts; ``cross-partition-upsert.index-ttl``
skips the buckets none of whose files were created within the TTL. Each bucket's live key count
goes to the router's bucket statistics (Paimon's ``BucketAssigner`` starts from them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from lake_assets.formats.data_file import local_now_ms
from lake_assets.ops.key_index import ENTRY_SCHEMA, KeyIndex, encode_keys
from lake_assets.ops.read import SplitReader
from lake_assets.table_support import Op

if TYPE_CHECKING:
    from lake_assets.ops.scan import Split
    from lake_assets.spec.data_types import DataType
    from lake_assets.spec.snapshot import Snapshot
    from lake_assets.store.file_store import FileStore

# Rows per batch of the bootstrap's merge read of one bucket's keys.
BOOTSTRAP_BATCH_ROWS = 65536


def index_ttl_ms(store: FileStore) -> int | None:
    """``cross-partition-upsert.index-ttl`` in milliseconds (None: unset, keys never forgotten)."""
    return store.schema.core_options.cross_partition_index_ttl_ms


def split_in_ttl(split: Split, ttl_ms: int, now_ms: int) -> bool:
    """Paimon's ``IndexBootstrap.filterSplit``: a split is bootstrapped when one of its files was
    created within the TTL (creation times are the writers' local wall clocks, read as UTC here
    and in the writers of lake_assets alike)."""
    return any(f.creation_time_ms is not None and now_ms <= f.creation_time_ms + ttl_ms for f in split.files)


def bootstrap_splits(store: FileStore, snapshot: Snapshot) -> list[Split]:
    """The buckets a bootstrap reads: all of the snapshot's, less those the TTL forgets."""
    from lake_assets.ops.plan import plan_splits  # plan imports the read path, which imports the router

    splits = plan_splits(store, snapshot, None, Op.WRITE, schema=store.schema)
    ttl = index_ttl_ms(store)
    if ttl is not None:
        # on the clock of the files' creation times (local wall clock as if UTC), as Java
        # compares System.currentTimeMillis with them read in the system zone: time.time()
        # forgot keys hours early west of UTC (and kept them late east of it)
        now = local_now_ms()
        splits = [s for s in splits if split_in_ttl(s, ttl, now)]
    return splits


def bootstrap_entries(store: FileStore, index: KeyIndex, snapshot: Snapshot, splits: list[Split],
                      key_names: list[str], key_types: list[DataType],
                      add_count: Callable[[int, int, int], None]) -> Iterator[pa.Table]:
    """The key index entries of ``splits`` (keys, hashes, partition ids, buckets), read as they
    are consumed; each bucket's live key count goes to ``add_count(partition id, bucket, n)``."""
    reader = SplitReader(store, store.schema, key_names)
    reader.snapshot_id = snapshot.id
    reader.all_levels = True  # keys only in level 0 (write-only DV / first-row writes) exist too
    for split in splits:
        part = index.part_id(split.partition)
        live = 0
        for keys in reader.stream_split(split, BOOTSTRAP_BATCH_ROWS):
            if keys.num_rows == 0:
                continue
            live += keys.num_rows
            encoded, hashes = encode_keys(list(keys.columns), key_types, keys.num_rows)
            n = keys.num_rows
            yield pa.table([encoded, pa.array(hashes), pa.array(np.full(n, part, dtype=np.int32)),
                            pa.array(np.full(n, split.bucket, dtype=np.int32))], schema=ENTRY_SCHEMA)
        if live:
            add_count(part, split.bucket, live)


__all__ = ["BOOTSTRAP_BATCH_ROWS", "bootstrap_entries", "bootstrap_splits", "index_ttl_ms", "split_in_ttl"]
