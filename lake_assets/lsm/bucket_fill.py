"""Which buckets new keys of a dynamic-bucket partition take (pure).

Paimon's ``BucketAssigner.assignBucket`` / ``PartitionIndex``: the keys one assigner owns fill its
buckets that are below ``dynamic-bucket.target-row-num`` in ascending order, then its lowest unused
bucket ids (``assigner``, ``assigner + n``, ...), each to the target. Shared by the dynamic-bucket
writer (`ops/dynamic_bucket.py`) and the cross-partition upsert router (`ops/cross_partition.py`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from lake_assets.errors import OptionError

# Paimon's PartitionIndex opens buckets below Short.MAX_VALUE only (bucket ids are shorts there).
MAX_BUCKETS = 32767


def too_many_buckets(table_name: str, target: int) -> OptionError:
    """The error of a partition that would need a bucket id Paimon cannot open."""
    return OptionError(
        f"Cannot write to {table_name}: a partition would need more than {MAX_BUCKETS} "
        f"buckets of {target} keys (dynamic-bucket.target-row-num); raise the target")


def fill_assigner_buckets(counts: Mapping[int, int], assigner: int, num_assigners: int, target: int, k: int,
                          table_name: str) -> np.ndarray:
    """Buckets (int32, in arrival order) for ``k`` new keys of ``assigner`` in a partition whose
    buckets hold ``counts`` keys. ``counts`` is not changed: the caller adds the result."""
    n = num_assigners
    ids: list[int] = []
    caps: list[int] = []
    for b in sorted(counts):
        if b % n == assigner and counts[b] < target:
            ids.append(b)
            caps.append(target - counts[b])
    missing = k - sum(caps)
    candidate = assigner
    while missing > 0:
        if candidate >= MAX_BUCKETS:
            raise too_many_buckets(table_name, target)
        if candidate not in counts:
            ids.append(candidate)
            caps.append(target)
            missing -= target
        candidate += n
    slot = np.searchsorted(np.cumsum(caps), np.arange(k), side="right")
    return np.asarray(ids, dtype=np.int32)[slot]
