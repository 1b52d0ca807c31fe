"""The global key index of a cross-partition upsert table: every live key -> (partition, bucket).

A primary-key table with ``bucket = -1`` whose primary key lacks a partition field is in Paimon's
cross-partition upsert mode (docs/format.md §6.4): a key lives in one (partition, bucket) of the
whole table, so a writer must know where each key lives before it routes a row. Paimon's writers
keep that in a RocksDB state filled at start-up by ``IndexBootstrap``: a batch read of the latest
snapshot projected on the primary key, each split's rows tagged with its partition and bucket,
skipping splits of which no file was created within ``cross-partition-upsert.index-ttl``.

`KeyIndex.bootstrap` does the same read here: each bucket's keys come out of the table's own
merge read (`SplitReader.stream_split` projected on the trimmed primary key, deletion vectors
and retractions applied) of every level, also level 0 that batch reads of deletion-vector and
``first-row`` tables skip (Paimon 1.4+'s ``withLevelFilter(level -> true)``, apache/paimon #6630;
0.9 skipped it and placed a key still in level 0 a second time), in batches, and become entries
(key BinaryRow bytes, key hash, partition id, bucket). Keys are matched by their BinaryRow
bytes, as Paimon's index matches its serialized keys; lookups binary-search the entries sorted by
the key's murmur hash and compare bytes on equal hashes, so a lookup costs the batch's keys times
log of the index, vectorized.

Memory: the entries held in memory are bounded by half of ``write-buffer-size`` (Java's bootstrap
buffers take half of it as well). Past that the index spills: entries go to hash-range shard files
(Arrow IPC) under the writer's spill directory, as many as make each about half the bound (sized
from the table's row count; at most 4096), and a lookup loads the shards its keys fall into one at
a time; a shard is also rewritten one at a time (sorted by hash, one entry per key). The entries
a writer adds (keys it placed or moved) are held in memory until they pass a quarter of the bound,
then merged into the shards: every changed shard is written to a new file first and the files
replace the old ones only once all are written, so a failure (a full disk) leaves the index as it
was. A routed batch whose rows were not buffered is taken back with `KeyIndex.restore`: its keys'
earlier locations as added entries, a key that was not in the index as a tombstone (partition -1,
dropped when merged into its shard).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.errors import InvalidDataError
from lake_assets.lsm.bucket import murmur_hash_words
from lake_assets.spec.binary_row_vectorized import encode_rows
from lake_assets.spec.data_types import DataType

# Entry columns: the key's BinaryRow bytes, its murmur hash, the partition's id and the bucket.
ENTRY_SCHEMA = pa.schema([("key", pa.binary()), ("hash", pa.int32()), ("part", pa.int32()), ("bucket", pa.int32())])
# bytes of an entry beyond its key bytes (hash, partition, bucket and the binary offset)
_ENTRY_OVERHEAD = 16


def encode_keys(
    columns: list[pa.ChunkedArray | pa.Array], types: list[DataType], num_rows: int
) -> tuple[pa.Array, np.ndarray]:
    """(BinaryRow bytes as a binary array, murmur hash as int32) of each row's trimmed primary key."""
    data, offsets = encode_rows(columns, types, num_rows)
    hashes = murmur_hash_words(data, offsets)
    if offsets[-1] >= 2**31:
        keys = pa.Array.from_buffers(pa.large_binary(), num_rows, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
        return keys.cast(pa.binary()), hashes  # raises on overflow, as a binary array must
    keys = pa.Array.from_buffers(pa.binary(), num_rows,
                                 [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)])
    return keys, hashes


@dataclass
class Locations:
    """Where each looked-up key lives: ``found`` mask, and its partition id and bucket where found."""

    found: np.ndarray
    parts: np.ndarray
    buckets: np.ndarray


def _sorted_entries(table: pa.Table) -> pa.Table:
    """Entries sorted by hash (stable: of equal keys the later entry stays last)."""
    if table.num_rows == 0:
        return table
    order = np.argsort(table.column("hash").to_numpy(), kind="stable")
    return table.take(pa.array(order))


def _last_per_key(table: pa.Table, what: str) -> pa.Table:
    """Of entries sorted by hash (stable), the last entry of each key."""
    if table.num_rows < 2:
        return table
    keys = table.column("key").combine_chunks()
    hashes = table.column("hash").to_numpy()
    same_hash = hashes[1:] == hashes[:-1]
    if not same_hash.any():
        return table
    # equal keys have equal hashes: within a run of equal hashes, compare every later entry with
    # each earlier one is quadratic; sort each run by key bytes instead (runs are tiny)
    order = np.asarray(pc.sort_indices(pa.table({"h": hashes, "k": keys, "i": np.arange(len(hashes))}),
                                       sort_keys=[("h", "ascending"), ("k", "ascending"), ("i", "ascending")]))
    table = table.take(pa.array(order))
    keys = table.column("key").combine_chunks()
    last = np.ones(table.num_rows, dtype=bool)
    last[:-1] = ~np.asarray(pc.equal(keys.slice(0, len(keys) - 1), keys.slice(1)).fill_null(False))
    if what and not last.all():
        raise InvalidDataError(what)
    return table.filter(pa.array(last))


def _search(entries: pa.Table, keys: pa.Array, hashes: np.ndarray) -> Locations:
    """Look ``keys`` (distinct) up in ``entries`` (sorted by hash, one entry per key)."""
    n = len(keys)
    out = Locations(np.zeros(n, dtype=bool), np.full(n, -1, dtype=np.int32), np.full(n, -1, dtype=np.int32))
    if entries.num_rows == 0 or n == 0:
        return out
    index_hashes = entries.column("hash").to_numpy()
    lo = np.searchsorted(index_hashes, hashes, side="left")
    hi = np.searchsorted(index_hashes, hashes, side="right")
    counts = hi - lo
    if not counts.any():
        return out
    # candidate pairs (query, entry) with equal hashes; equal bytes make a match
    query = np.repeat(np.arange(n), counts)
    starts = np.repeat(lo - np.cumsum(counts) + counts, counts)
    entry = starts + np.arange(len(query))
    index_keys = entries.column("key").combine_chunks()
    equal = np.asarray(pc.equal(keys.take(pa.array(query)), index_keys.take(pa.array(entry))))
    query, entry = query[equal], entry[equal]
    out.found[query] = True  # a tombstone too (partition -1): `KeyIndex.lookup` tells them apart
    out.parts[query] = entries.column("part").to_numpy()[entry]
    out.buckets[query] = entries.column("bucket").to_numpy()[entry]
    return out


class KeyIndex:
    """A writer's global key index (see the module doc). ``memory_bytes`` bounds the entries held
    in memory; ``spill_dir`` is where shard files go past it (None: the system temp directory)."""

    def __init__(self, table_name: str, memory_bytes: int, spill_dir: str | None) -> None:
        self.table_name = table_name
        self.memory_bytes = max(1, memory_bytes)
        self._spill_dir = spill_dir
        self.partitions: list[bytes] = []
        self._part_ids: dict[bytes, int] = {}
        self._entries = pa.Table.from_batches([], ENTRY_SCHEMA)  # in memory, sorted (unspilled)
        self._added: list[pa.Table] = []  # the writer's entries since the last merge, in order
        self._added_bytes = 0
        self._dir: str | None = None  # shard files, once spilled
        self._shards = 0
        self.spilled_bytes = 0

    def part_id(self, partition: bytes) -> int:
        """The id of a serialized partition (ids are the writer's own)."""
        got = self._part_ids.get(partition)
        if got is None:
            got = self._part_ids[partition] = len(self.partitions)
            self.partitions.append(partition)
        return got

    # ------------------------------------------------------------------ build
    def bootstrap(self, pieces: Iterable[pa.Table], expected_entries: int = 0) -> None:
        """Fill the index from ``pieces`` of entries (`ENTRY_SCHEMA`): each key once in the
        table. A key found in two places is refused, as Paimon's bulk load refuses it.
        ``expected_entries`` (the table's row count, an upper bound) sizes the shards if it spills."""
        held: list[pa.Table] = []
        held_bytes = 0
        held_rows = 0
        writers: list[pa.ipc.RecordBatchStreamWriter] = []
        for piece in pieces:
            if self._dir is None:
                held.append(piece)
                held_bytes += piece.nbytes
                held_rows += piece.num_rows
                if held_bytes <= self.memory_bytes:
                    continue
                writers = self._open_shards(max(held_bytes, expected_entries * held_bytes // max(1, held_rows)))
                piece = pa.concat_tables(held)
                held = []
            self._write_to_shards(piece, writers)
        duplicate = (f"Cannot write to {self.table_name}: a primary key lives in two places of the table "
                     "(two partitions or buckets); Paimon's cross-partition index refuses such a table too "
                     "(a second writer, or keys forgotten by cross-partition-upsert.index-ttl and written again)")
        if self._dir is None:
            self._entries = _last_per_key(_sorted_entries(pa.concat_tables([self._entries, *held])), duplicate)
            return
        for w in writers:
            w.close()
        for s in range(self._shards):  # each shard's runs become one sorted file
            self._rewrite_shard(s, [], duplicate)

    def _shard_path(self, shard: int) -> str:
        assert self._dir is not None
        return os.path.join(self._dir, f"shard-{shard}.arrow")

    def _open_shards(self, nbytes: int) -> list[pa.ipc.RecordBatchStreamWriter]:
        """Switch to shard files: enough shards that each of the ``nbytes`` expected holds about
        half the memory bound (at most 4096 shards: beyond, a shard outgrows the bound)."""
        self._dir = tempfile.mkdtemp(prefix="lake-key-index-", dir=self._spill_dir)
        self._shards = max(2, min(4096, -(-2 * nbytes // self.memory_bytes)))
        return [pa.ipc.new_stream(self._shard_path(s), ENTRY_SCHEMA) for s in range(self._shards)]

    def _shard_of(self, hashes: np.ndarray) -> np.ndarray:
        """Shard of each hash: a range of the unsigned hash, so a shard's hashes sort within it."""
        return ((hashes.astype(np.int64) + 2**31) * self._shards >> 32).astype(np.int64)

    def _write_to_shards(self, piece: pa.Table, writers: list[pa.ipc.RecordBatchStreamWriter]) -> None:
        if piece.num_rows == 0:
            return
        shard = self._shard_of(piece.column("hash").to_numpy())
        order = np.argsort(shard, kind="stable")
        bounds = np.searchsorted(shard[order], np.arange(self._shards + 1))
        for s in np.flatnonzero(np.diff(bounds)).tolist():
            part = piece.take(pa.array(order[bounds[s]:bounds[s + 1]]))
            writers[s].write_table(part)
            self.spilled_bytes += part.nbytes

    def _read_shard(self, shard: int) -> pa.Table:
        with pa.memory_map(self._shard_path(shard)) as source:
            return pa.ipc.open_stream(source).read_all()

    def _rewrite_shard(self, shard: int, added: list[pa.Table], duplicate: str = "", suffix: str = "") -> None:
        """Write shard ``shard`` merged with ``added`` (tombstones dropped) to its file, or with
        ``suffix`` to a new file beside it (`_merge_added` moves it over the shard)."""
        entries = _last_per_key(_sorted_entries(pa.concat_tables([self._read_shard(shard), *added])), duplicate)
        if added:
            entries = entries.filter(pc.greater_equal(entries.column("part"), 0))
        with pa.ipc.new_stream(self._shard_path(shard) + suffix, ENTRY_SCHEMA) as w:
            w.write_table(entries)

    def _merge_added(self) -> None:
        """Merge the added entries into their shards: all new shard files are written before any
        replaces its shard, so a failure leaves every shard and the added entries as they were."""
        added = self._added_entries()
        shard = self._shard_of(added.column("hash").to_numpy())
        changed = np.unique(shard).tolist()
        try:
            for s in changed:
                self._rewrite_shard(s, [added.filter(pa.array(shard == s))], suffix=".new")
        except BaseException:
            for s in changed:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(self._shard_path(s) + ".new")
            raise
        for s in changed:
            os.replace(self._shard_path(s) + ".new", self._shard_path(s))
        self._added, self._added_bytes = [], 0

    # ----------------------------------------------------------------- lookup
    def lookup(self, keys: pa.Array, hashes: np.ndarray) -> Locations:
        """Where each of ``keys`` (distinct BinaryRow bytes, with their hashes) lives."""
        if self._dir is None:
            found = _search(self._entries, keys, hashes)
        else:
            found = Locations(np.zeros(len(keys), dtype=bool), np.full(len(keys), -1, dtype=np.int32),
                              np.full(len(keys), -1, dtype=np.int32))
            shard = self._shard_of(hashes)
            for s in np.unique(shard).tolist():
                rows = np.flatnonzero(shard == s)
                got = _search(self._read_shard(s), keys.take(pa.array(rows)), hashes[rows])
                found.found[rows], found.parts[rows], found.buckets[rows] = got.found, got.parts, got.buckets
        if self._added:  # the writer's own entries win, tombstones too
            mine = _search(self._added_entries(), keys, hashes)
            found.parts = np.where(mine.found, mine.parts, found.parts)
            found.buckets = np.where(mine.found, mine.buckets, found.buckets)
            found.found = (found.found | mine.found) & (found.parts >= 0)
        return found

    def _added_entries(self) -> pa.Table:
        if len(self._added) > 1:
            self._added = [_last_per_key(_sorted_entries(pa.concat_tables(self._added)), "")]
        return self._added[0]

    def put(self, keys: pa.Array, hashes: np.ndarray, parts: np.ndarray, buckets: np.ndarray) -> None:
        """Record where ``keys`` (distinct) live now (partition -1: nowhere). All or nothing: a
        failure while the index spills (a full disk) leaves it as it was."""
        if not len(keys):
            return
        table = self._entries_of(keys, hashes, parts, buckets)
        added, added_bytes = list(self._added), self._added_bytes
        self._added.append(table)
        self._added_bytes += table.nbytes
        try:
            if self._dir is None:
                if self._added_bytes + self._entries.nbytes <= self.memory_bytes:
                    return
                self._spill_entries()
            if self._added_bytes > self.memory_bytes // 4:
                self._merge_added()
        except BaseException:
            self._added, self._added_bytes = added, added_bytes
            raise

    def restore(self, keys: pa.Array, hashes: np.ndarray, before: Locations) -> None:
        """Take placements back: ``keys`` (distinct) live where ``before`` (a `lookup` of them)
        says again, those not found there in no place. Held in memory (no file written, so it
        cannot fail on a full disk); merged into the shards with the next `put` that spills."""
        if not len(keys):
            return
        parts = np.where(before.found, before.parts, -1)
        table = self._entries_of(keys, hashes, parts, before.buckets)
        self._added.append(table)
        self._added_bytes += table.nbytes

    @staticmethod
    def _entries_of(keys: pa.Array, hashes: np.ndarray, parts: np.ndarray, buckets: np.ndarray) -> pa.Table:
        return _sorted_entries(pa.table([keys, pa.array(hashes, pa.int32()), pa.array(parts, pa.int32()),
                                         pa.array(buckets, pa.int32())], schema=ENTRY_SCHEMA))

    def _spill_entries(self) -> None:
        """Move the in-memory entries to shard files; on a failure remove them (still in memory)."""
        try:
            writers = self._open_shards(self._entries.nbytes + self._added_bytes)
            try:
                self._write_to_shards(self._entries, writers)
            finally:
                for w in writers:
                    w.close()
            for s in range(self._shards):  # each shard sorted again (one run per shard)
                self._rewrite_shard(s, [])
        except BaseException:
            self.close()  # back to the entries in memory
            self._shards = 0
            raise
        self._entries = pa.Table.from_batches([], ENTRY_SCHEMA)

    # --------------------------------------------------------------- handoff
    def save(self, directory: str) -> int:
        """Move the entries into ``directory`` (an empty local directory) for another process
        (`load`): the shard files, or the in-memory entries and the added ones as two files (not
        merged: a sort of every entry would cost more than the files); returns the shard count
        (0: the two files). The index is empty afterwards."""
        if self._dir is None:
            added = self._added_entries() if self._added else pa.Table.from_batches([], ENTRY_SCHEMA)
            for name, table in (("entries", self._entries), ("added", added)):
                with pa.ipc.new_stream(os.path.join(directory, f"{name}.arrow"), ENTRY_SCHEMA) as w:
                    w.write_table(table)
            shards = 0
        else:
            if self._added:
                self._merge_added()
            shards = self._shards
            for s in range(shards):
                shutil.move(self._shard_path(s), os.path.join(directory, f"shard-{s}.arrow"))
        self.close()
        self._entries = pa.Table.from_batches([], ENTRY_SCHEMA)
        self._added, self._added_bytes = [], 0
        return shards

    def load(self, directory: str, shards: int, partitions: list[bytes]) -> None:
        """Take the entries `save` left in ``directory`` (moved away from it) and the partitions of
        their ids, into this empty index."""
        if shards < 0:
            raise ValueError(f"a key index of {shards} shards")
        self.partitions = list(partitions)
        self._part_ids = {p: i for i, p in enumerate(self.partitions)}
        if shards == 0:
            with pa.OSFile(os.path.join(directory, "entries.arrow")) as source:
                entries = pa.ipc.open_stream(source).read_all()
            with pa.OSFile(os.path.join(directory, "added.arrow")) as source:
                added = pa.ipc.open_stream(source).read_all()
            for table in (entries, added):  # another process wrote them: ids must name these partitions
                _check_entries(table, len(self.partitions))
            self._entries = entries
            if added.num_rows:
                self._added, self._added_bytes = [added], added.nbytes
            return
        self._dir = tempfile.mkdtemp(prefix="lake-key-index-", dir=self._spill_dir)
        self._shards = shards
        for s in range(shards):
            shutil.move(os.path.join(directory, f"shard-{s}.arrow"), self._shard_path(s))

    @property
    def spilled(self) -> bool:
        """Whether the index lives in shard files (it outgrew its memory bound)."""
        return self._dir is not None

    def close(self) -> None:
        """Remove the shard files."""
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None


def _check_entries(entries: pa.Table, partitions: int) -> None:
    """Raise ValueError unless ``entries`` has `ENTRY_SCHEMA` and partition ids below ``partitions``
    (-1 marks a removed key) and non-negative buckets."""
    if not entries.schema.equals(ENTRY_SCHEMA):
        raise ValueError(f"key index entries of schema {entries.schema}")
    if entries.num_rows:
        lo, hi = pc.min_max(entries.column("part")).values()
        if lo.as_py() < -1 or hi.as_py() >= partitions or pc.min(entries.column("bucket")).as_py() < 0:
            raise ValueError(f"key index entries name partitions {lo}..{hi} of {partitions} or a negative bucket")
