"""Reading and writing manifests and manifest lists of one table, with a cache.

Manifest files never change once written, so decoded entries are cached by file name.
"""

from __future__ import annotations

import functools
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from functools import cached_property
from typing import Any

from lake_assets.errors import CorruptMetadataError
from lake_assets.formats.manifest_codec import (
    avro_codec,
    decode_manifest_entries,
    decode_manifest_list,
    encode_manifest_entries,
    encode_manifest_list,
)
from lake_assets.io.file_io import FileIO
from lake_assets.lsm.key_compare import float_code
from lake_assets.ops.kept_pool import KeptThreadPool
from lake_assets.paths import TablePaths
from lake_assets.spec.binary_row import deserialize_row, serialize_row
from lake_assets.spec.data_types import DataType
from lake_assets.spec.manifest import FileKind, ManifestEntry, ManifestFileMeta, SimpleStats, summarize_entries

MANIFEST_READ_THREAD_NAME = "lake-manifest-read"  # a kept thread reading one of several manifests


class _Slot:
    """The decoded records of one manifest file, once read or written (the file never changes)."""

    __slots__ = ("records",)

    def __init__(self) -> None:
        self.records: list[Any] | None = None  # manifest-list metas or manifest entries, by path


# Shared across tables of a process: keys are full paths. The slot (not the records) is cached so
# that writes can fill it too; lru_cache bounds the slots kept, least recently used first out.
@functools.lru_cache(maxsize=2048)
def _cache_slot(path: str) -> _Slot:
    return _Slot()


def compare_values(a: object, b: object) -> int:
    """Three-way compare of two non-null stats values of the same type; floats as Java's
    ``Double.compare`` (NaN the greatest, -0.0 below 0.0), as Paimon's stats collectors order them
    (IEEE comparisons made a NaN partition's stats depend on the order partitions came in)."""
    if isinstance(a, float) and isinstance(b, float):
        a, b = float_code(a), float_code(b)
    return int((a > b) - (a < b))  # type: ignore[operator]  # callers pass two values of one stats type


def partition_stats(partitions: Iterable[bytes], types: Sequence[DataType]) -> SimpleStats:
    """Min, max and null count per partition field over the entries' partitions: as Paimon's
    ManifestFile, a null count counts entries (readers compare it with the manifest's entry count
    to find a field null in every entry), each distinct partition decoded once."""
    if not types:
        return SimpleStats.EMPTY
    n = len(types)
    mins: list[object] = [None] * n
    maxs: list[object] = [None] * n
    nulls = [0] * n
    for part, entries in Counter(partitions).items():
        values = deserialize_row(part, types)
        for i, v in enumerate(values):
            if v is None:
                nulls[i] += entries
                continue
            if mins[i] is None or compare_values(v, mins[i]) < 0:
                mins[i] = v
            if maxs[i] is None or compare_values(v, maxs[i]) > 0:
                maxs[i] = v
    return SimpleStats(serialize_row(mins, types), serialize_row(maxs, types), tuple(nulls))


class ManifestIO:
    """Reads and writes the manifest files of one table."""

    def __init__(
        self,
        file_io: FileIO,
        paths: TablePaths,
        partition_types: Sequence[DataType],
        *,
        compression: str | Callable[[], str] = "zstd",
        target_file_size: int = 8 * 1024 * 1024,
        table_name: str = "table",
    ) -> None:
        self.file_io = file_io
        self.paths = paths
        self.partition_types = list(partition_types)
        self._compression = compression
        self.target_file_size = target_file_size
        self.table_name = table_name
        self._prefix_uuid = uuid.uuid4()
        self._counter = 0
        self._lock = threading.Lock()

    @cached_property
    def codec(self) -> str:
        """The Avro codec manifests are written with; a ``compression`` given as a callable is read
        on the first write, so that a table whose manifest.compression does not parse is still
        read (writes are refused: `lake_assets.table_support`)."""
        c = self._compression
        return avro_codec(c() if callable(c) else c)

    def new_name(self, prefix: str) -> str:
        """A fresh file name ``<prefix><uuid>-<n>`` (manifests, lists, index manifests)."""
        return self._new_name(prefix)

    def _new_name(self, prefix: str) -> str:
        with self._lock:
            n = self._counter
            self._counter += 1
        return f"{prefix}{self._prefix_uuid}-{n}"

    # ----------------------------------------------------------------- reads
    def _read_bytes(self, kind: str, name: str) -> bytes:
        """The bytes of the ``kind`` ("manifest", "manifest list") file ``name``: a missing one is
        damaged metadata (a snapshot or list names it)."""
        try:
            return self.file_io.read_bytes(self.paths.manifest_file(name))
        except FileNotFoundError:
            raise CorruptMetadataError(f"Table {self.table_name}: {kind} {name} is missing") from None

    def read_manifest_list(self, name: str) -> list[ManifestFileMeta]:
        slot = _cache_slot(self.paths.manifest_file(name))
        if slot.records is not None:
            return slot.records
        metas = decode_manifest_list(self._read_bytes("manifest list", name), name)
        slot.records = metas
        return metas

    def read_manifest(self, name: str, expected_size: int | None = None) -> list[ManifestEntry]:
        slot = _cache_slot(self.paths.manifest_file(name))
        if slot.records is not None:
            return slot.records
        data = self._read_bytes("manifest", name)
        # Avro has no footer: a file cut at a block boundary would decode as a shorter valid file.
        if expected_size is not None and len(data) != expected_size:
            raise CorruptMetadataError(
                f"Table {self.table_name}: manifest {name} has {len(data)} bytes, the manifest list says "
                f"{expected_size} (truncated or replaced)"
            )
        entries = decode_manifest_entries(data, name)
        slot.records = entries
        return entries

    def read_manifests(self, metas: Sequence[ManifestFileMeta]) -> list[list[ManifestEntry]]:
        """Read several manifests, in parallel on remote storage, preserving order."""
        if len(metas) <= 1 or not self.file_io.parallel_reads_pay_off:
            return [self.read_manifest(m.file_name, m.file_size) for m in metas]
        # kept threads (`ops.kept_pool`): a pool per read started up to 16 threads on every read
        with KeptThreadPool(max_workers=min(16, len(metas)), thread_name=MANIFEST_READ_THREAD_NAME) as pool:
            return list(pool.map(lambda m: self.read_manifest(m.file_name, m.file_size), metas))

    # ---------------------------------------------------------------- writes
    def write_manifests(self, entries: Sequence[ManifestEntry]) -> list[ManifestFileMeta]:
        """Write entries into one or more manifest files rolled at the target size."""
        if not entries:
            return []
        # Roughly 300 bytes an entry compressed; roll by count to avoid re-encoding.
        per_file = max(1000, self.target_file_size // 300)
        metas = []
        for start in range(0, len(entries), per_file):
            chunk = list(entries[start : start + per_file])
            name = self._new_name("manifest-")
            data = encode_manifest_entries(chunk, self.codec)
            self.file_io.write_bytes(self.paths.manifest_file(name), data)
            _cache_slot(self.paths.manifest_file(name)).records = chunk
            summary = summarize_entries(chunk)
            metas.append(
                ManifestFileMeta(
                    file_name=name,
                    file_size=len(data),
                    num_added_files=summary["num_added_files"],
                    num_deleted_files=summary["num_deleted_files"],
                    partition_stats=partition_stats((e.partition for e in chunk), self.partition_types),
                    schema_id=summary["schema_id"],
                    min_bucket=summary["min_bucket"],
                    max_bucket=summary["max_bucket"],
                    min_level=summary["min_level"],
                    max_level=summary["max_level"],
                    min_row_id=summary["min_row_id"],
                    max_row_id=summary["max_row_id"],
                )
            )
        return metas

    def write_manifest_list(self, metas: Sequence[ManifestFileMeta]) -> tuple[str, int]:
        name = self._new_name("manifest-list-")
        data = encode_manifest_list(list(metas), self.codec)
        self.file_io.write_bytes(self.paths.manifest_file(name), data)
        _cache_slot(self.paths.manifest_file(name)).records = list(metas)
        return name, len(data)

    def delete(self, names: Iterable[str]) -> None:
        self.file_io.delete_many(self.paths.manifest_file(n) for n in names)

    # ----------------------------------------------------------------- merge
    def merge_manifests(
        self, metas: list[ManifestFileMeta], min_count: int
    ) -> tuple[list[ManifestFileMeta], list[str]]:
        """Keep base lists from growing without bound (Paimon's minor manifest compaction).

        Small manifests (under the target size) are merged once at least ``min_count`` of them
        have piled up: ADD and DELETE entries of the same file cancel out. Returns the new list
        and the names of manifests this call wrote (to delete if the commit fails).
        """
        small = [m for m in metas if m.file_size < self.target_file_size]
        if len(small) < min_count:
            return metas, []
        # Merge a prefix of the list: entries keep their relative order, so semantics hold.
        first_small = next(i for i, m in enumerate(metas) if m.file_size < self.target_file_size)
        group = metas[first_small:]
        live: dict[tuple[Any, ...], ManifestEntry] = {}
        pending_deletes: list[ManifestEntry] = []
        for entries in self.read_manifests(group):
            for e in entries:
                ident = e.identifier()
                if e.kind == FileKind.ADD:
                    live[ident] = e
                elif ident in live:
                    del live[ident]
                else:
                    pending_deletes.append(e)
        merged = pending_deletes + list(live.values())
        new_metas = self.write_manifests(merged)
        return metas[:first_small] + new_metas, [m.file_name for m in new_metas]
