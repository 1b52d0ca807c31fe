"""Paimon's commit conflict checks (its FileStoreCommitImpl's): whether a COMPACT or OVERWRITE delta still
applies on top of the latest snapshot. Pure reads; the commit loop in `lake_assets.ops.commit` runs
them before each attempt and gives the commit up on a conflict.
"""

from __future__ import annotations

import functools
import itertools
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from lake_assets.errors import CommitConflictError
from lake_assets.lsm.key_compare import compare_keys
from lake_assets.ops.row_tracking import data_evolution_enabled
from lake_assets.spec.binary_row import deserialize_row
from lake_assets.spec.data_types import DataType
from lake_assets.spec.manifest import FileKind, ManifestEntry
from lake_assets.spec.snapshot import CommitKind, Snapshot

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore

# One file's key range in the level-overlap check: (min key, max key, file name).
_KeyRange = tuple[tuple[Any, ...], tuple[Any, ...], str]


def check_conflicts(store: FileStore, latest: Snapshot | None, delta: list[ManifestEntry], kind: CommitKind) -> None:
    """Paimon's checks for COMPACT and OVERWRITE commits, against the latest snapshot: raise
    `CommitConflictError` when ``delta`` cannot apply on top of ``latest``."""
    name = store.name
    touched = {e.partition for e in delta}
    scan = store.file_store_scan()
    base: list[ManifestEntry] = []
    if latest is not None and touched:
        base = scan.live_entries(latest, partition_filter=None)
        base = [e for e in base if e.partition in touched]
    # 1. bucket count unchanged within a partition (not for OVERWRITE, which may rescale)
    if kind != CommitKind.OVERWRITE:
        totals: dict[bytes, set[int]] = defaultdict(set)
        for e in (*base, *delta):
            if e.total_buckets > 0:
                totals[e.partition].add(e.total_buckets)
        for part, ts in totals.items():
            if len(ts) > 1:
                raise CommitConflictError(
                    f"Cannot commit to {name}: total buckets of partition "
                    f"{scan.partition_values(part)} changed ({sorted(ts)}) without overwrite"
                )
    # 2+3. every deleted file must still be live; the delta alone must be consistent
    live = {e.identifier(): e for e in base}
    for e in delta:
        ident = e.identifier()
        if e.kind == FileKind.ADD:
            if ident in live:
                raise CommitConflictError(
                    f"Cannot commit to {name}: file {e.file.file_name} would be added twice"
                )
            live[ident] = e
        elif ident in live:
            del live[ident]
        else:
            raise CommitConflictError(
                f"Cannot commit to {name}: file {e.file.file_name} was already deleted "
                "by a concurrent commit (e.g. another compaction); giving up this commit"
            )
    # 4. data-evolution compactions: the files of overlapping row-id ranges still span one range
    # (a column update that landed meanwhile on rows the unit merged would no longer match its
    # output's range, which no reader can merge: HEAD's DataEvolutionConflictDetection)
    if kind == CommitKind.COMPACT and data_evolution_enabled(store.schema.options):
        _check_row_ranges(name, scan.partition_values, live.values(), touched)
    # 5. no overlapping key ranges within a level >= 1 of a bucket
    if not store.primary_keys:
        return
    key_types = store.schema.types(list(store.schema.trimmed_primary_keys))
    groups: dict[tuple[bytes, int, int], list[ManifestEntry]] = defaultdict(list)
    for e in live.values():
        if e.file.level > 0 and e.partition in touched:
            groups[(e.partition, e.bucket, e.file.level)].append(e)
    for (part, bucket, level), files in groups.items():
        if len(files) < 2:
            continue
        ranges = sorted(
            (
                (tuple(deserialize_row(e.file.min_key, key_types)),
                 tuple(deserialize_row(e.file.max_key, key_types)), e.file.file_name)
                for e in files
            ),
            key=functools.cmp_to_key(_by_min_key(key_types)),
        )
        for a, b in itertools.pairwise(ranges):
            if compare_keys(a[1], b[0], key_types) >= 0:
                raise CommitConflictError(
                    f"Cannot commit to {name}: level {level} of bucket {bucket} in partition "
                    f"{scan.partition_values(part)} would have overlapping files {a[2]} and {b[2]}"
                )


def _by_min_key(key_types: list[DataType]) -> Callable[[_KeyRange, _KeyRange], int]:
    """Three-way comparison of two (min key, max key, file name) ranges by their min keys."""

    def compare(x: _KeyRange, y: _KeyRange) -> int:
        return compare_keys(x[0], y[0], key_types)

    return compare


def _check_row_ranges(name: str, values: Callable[[bytes], Any], entries: Iterable[ManifestEntry],
                      touched: set[bytes]) -> None:
    """Raise `CommitConflictError` when two live files of a touched partition overlap in row ids
    without spanning the same range."""
    ranged: dict[bytes, list[tuple[int, int, str]]] = defaultdict(list)
    for e in entries:
        f = e.file
        if e.partition in touched and f.first_row_id is not None:
            ranged[e.partition].append((f.first_row_id, f.first_row_id + f.row_count - 1, f.file_name))
    for part, files in ranged.items():
        files.sort()
        for (lo, hi, a), (lo2, hi2, b) in itertools.pairwise(files):
            if lo2 <= hi and (lo, hi) != (lo2, hi2):
                raise CommitConflictError(
                    f"Cannot commit to {name}: files {a} [{lo}, {hi}] and {b} [{lo2}, {hi2}] of partition "
                    f"{values(part)} would overlap in row ids without spanning the same range (a column "
                    "update landed on rows this compaction merged); giving up this commit")
