"""Planning a read: which data files are live in a snapshot, pruned by partition, bucket and key.

The scan reads only manifests (never data files). Manifests are pruned by their partition stats
and bucket range, entries by partition value, bucket and key range.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lake_assets.errors import CorruptMetadataError
from lake_assets.spec.binary_row import deserialize_row
from lake_assets.spec.data_types import DataType
from lake_assets.spec.manifest import DataFileMeta, FileKind, IndexManifestEntry, ManifestEntry, ManifestFileMeta
from lake_assets.spec.snapshot import Snapshot
from lake_assets.store.manifest_io import ManifestIO

# A predicate over decoded partition values (one tuple per partition), True = may match.
PartitionPredicate = Callable[[tuple[Any, ...]], bool]
# A predicate over the stats of a set of rows: per column its min, its max and its null count
# (None: unknown), then the row count; True = may match.
RangePredicate = Callable[[Sequence[object], Sequence[object], Sequence[int | None], int], bool]
# A predicate over an entry's (bucket, total buckets), True = may match.
BucketFilter = Callable[[int, int], bool]
# Told every list of entries a scan returns, with their snapshot, before the caller sees them: it
# raises to refuse an operation whose files it cannot handle (see lake_assets/table_support.py).
ScanGuard = Callable[[Snapshot, Sequence[ManifestEntry]], None]


@dataclass
class Split:
    """All live files of one (partition, bucket): the unit a reader merges."""

    partition: bytes
    partition_values: tuple[Any, ...]
    bucket: int
    total_buckets: int
    files: list[DataFileMeta] = field(default_factory=list)
    # the bucket's deletion-vector index files, for tables with deletion vectors (ops/deletion_vectors.py)
    dv_entries: tuple[IndexManifestEntry, ...] = ()

    @property
    def row_count(self) -> int:
        return sum(f.row_count for f in self.files)

    @property
    def size_bytes(self) -> int:
        return sum(f.file_size for f in self.files)


def merge_entries(entry_lists: Sequence[Sequence[ManifestEntry]], table_name: str = "table") -> list[ManifestEntry]:
    """Apply ADD and DELETE entries in order: the live ADD entries that remain."""
    live: dict[tuple[Any, ...], ManifestEntry] = {}
    deleted: set[tuple[Any, ...]] = set()
    for entries in entry_lists:
        for e in entries:
            ident = e.identifier()
            if e.kind == FileKind.ADD:
                if ident in live:
                    raise CorruptMetadataError(
                        f"Table {table_name}: file {e.file.file_name} is added twice without a delete"
                    )
                if ident in deleted:
                    deleted.discard(ident)
                live[ident] = e
            elif ident in live:
                del live[ident]
            else:
                deleted.add(ident)
    return list(live.values())


class FileStoreScan:
    """Lists the live files of a snapshot through its manifests."""

    def __init__(
        self,
        manifest_io: ManifestIO,
        partition_types: Sequence[DataType],
        table_name: str = "table",
        *,
        guard: ScanGuard | None = None,
        real_buckets_only: bool = False,
    ) -> None:
        self.manifest_io = manifest_io
        self.partition_types = list(partition_types)
        self.table_name = table_name
        self.guard = guard
        # Batch reads of postpone-bucket tables skip bucket -2 files, as Paimon readers do: their
        # rows are not visible until a compaction assigns them a bucket. As Paimon's bucket filter,
        # it applies to every manifest the scan reads: live, delta and changelog entries.
        self.real_buckets_only = real_buckets_only
        self._partition_cache: dict[bytes, tuple[Any, ...]] = {}

    def partition_values(self, partition: bytes) -> tuple[Any, ...]:
        v = self._partition_cache.get(partition)
        if v is None:
            v = tuple(deserialize_row(partition, self.partition_types))
            self._partition_cache[partition] = v
        return v

    def data_manifests(self, snapshot: Snapshot) -> list[ManifestFileMeta]:
        return self.manifest_io.read_manifest_list(snapshot.base_manifest_list) + (
            self.manifest_io.read_manifest_list(snapshot.delta_manifest_list)
        )

    def _keep_manifest(
        self, meta: ManifestFileMeta, partition_range: RangePredicate | None, buckets: set[int] | None
    ) -> bool:
        if (
            buckets is not None
            and meta.min_bucket is not None
            and meta.max_bucket is not None
            and not any(meta.min_bucket <= b <= meta.max_bucket for b in buckets)
        ):
            return False
        if partition_range is not None and self.partition_types:
            stats = meta.partition_stats
            lo = deserialize_row(stats.min_values, self.partition_types)
            hi = deserialize_row(stats.max_values, self.partition_types)
            # Paimon's manifest filter: the "rows" are the manifest's entries, ADD and DELETE, and a
            # field's null count is how many of them have a null partition value there (0.9's
            # ManifestFile collects every entry's partition; pypaimon counts the same).
            if not partition_range(lo, hi, self._null_counts(meta), meta.num_added_files + meta.num_deleted_files):
                return False
        return True

    def _null_counts(self, meta: ManifestFileMeta) -> list[int | None]:
        """Per partition field, the manifest's count of entries with a null value there; None
        where it records none or one out of range (nothing is pruned by an unknown count)."""
        counts = meta.partition_stats.null_counts
        entries = meta.num_added_files + meta.num_deleted_files
        if counts is None or len(counts) != len(self.partition_types):
            return [None] * len(self.partition_types)
        return [c if c is not None and 0 <= c <= entries else None for c in counts]

    def live_entries(
        self,
        snapshot: Snapshot,
        *,
        partition_filter: PartitionPredicate | None = None,
        partition_range: RangePredicate | None = None,
        buckets: set[int] | None = None,
        bucket_filter: BucketFilter | None = None,
    ) -> list[ManifestEntry]:
        """Live ADD entries of ``snapshot`` that may match the filters.

        ``buckets``: these buckets only, whatever count wrote them. ``bucket_filter(bucket,
        total_buckets)``: a selection per entry's own bucket count (Paimon's total-aware bucket
        filter), for buckets computed from a key: after a bucket-count change, partitions not
        rescaled keep the old count, so no one set of buckets (nor a manifest's bucket range)
        holds for all entries."""
        metas = [m for m in self.data_manifests(snapshot) if self._keep_manifest(m, partition_range, buckets)]
        entry_lists = self.manifest_io.read_manifests(metas)
        if partition_filter is not None or buckets is not None or bucket_filter is not None:
            entry_lists = [
                [
                    e
                    for e in entries
                    if (buckets is None or e.bucket in buckets)
                    and (bucket_filter is None or bucket_filter(e.bucket, e.total_buckets))
                    and (partition_filter is None or partition_filter(self.partition_values(e.partition)))
                ]
                for entries in entry_lists
            ]
        live = merge_entries(entry_lists, self.table_name)
        return self._guarded(snapshot, live)

    def _guarded(self, snapshot: Snapshot, entries: list[ManifestEntry]) -> list[ManifestEntry]:
        if self.real_buckets_only:
            entries = [e for e in entries if e.bucket >= 0]
        if self.guard is not None:
            self.guard(snapshot, entries)
        return entries

    def splits(self, entries: Sequence[ManifestEntry]) -> list[Split]:
        """Group entries by (partition, bucket), ordered by partition values then bucket."""
        groups: dict[tuple[bytes, int], Split] = {}
        for e in entries:
            key = (e.partition, e.bucket)
            sp = groups.get(key)
            if sp is None:
                sp = groups[key] = Split(e.partition, self.partition_values(e.partition), e.bucket, e.total_buckets)
            sp.files.append(e.file)
        return sorted(groups.values(), key=lambda s: (_sort_key(s.partition_values), s.bucket))

    def delta_entries(self, snapshot: Snapshot) -> list[ManifestEntry]:
        """The entries a snapshot added or removed (its delta manifest list), unmerged."""
        metas = self.manifest_io.read_manifest_list(snapshot.delta_manifest_list)
        return self._guarded(snapshot, [e for entries in self.manifest_io.read_manifests(metas) for e in entries])

    def changelog_entries(self, snapshot: Snapshot) -> list[ManifestEntry]:
        if not snapshot.changelog_manifest_list:
            return []
        metas = self.manifest_io.read_manifest_list(snapshot.changelog_manifest_list)
        return self._guarded(snapshot, [e for entries in self.manifest_io.read_manifests(metas) for e in entries])

    def max_sequence_numbers(self, snapshot: Snapshot | None) -> dict[tuple[bytes, int], int]:
        """Per (partition, bucket), the highest sequence number of its live files."""
        out: dict[tuple[bytes, int], int] = defaultdict(lambda: -1)
        if snapshot is None:
            return out
        for e in self.live_entries(snapshot):
            k = (e.partition, e.bucket)
            if e.file.max_sequence_number > out[k]:
                out[k] = e.file.max_sequence_number
        return out


def _sort_key(values: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple((v is None, v if v is not None else 0) for v in values)
