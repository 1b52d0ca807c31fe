"""Routing of a cross-partition upsert table's rows (``bucket = -1``, a primary key without every
partition field): Paimon's ``GlobalIndexAssigner`` and ``ExistingProcessor``s, vectorized.

The writer's `KeyIndex` (ops/key_index.py) says where every key lives. A row whose key

* is new (or was forgotten by ``cross-partition-upsert.index-ttl``) goes to a bucket of its own
  partition: the lowest bucket of its assigner holding fewer than ``dynamic-bucket.target-row-num``
  keys, else the lowest unused one (Paimon's ``crosspartition.BucketAssigner``, whose key counts
  come from the bootstrap: live keys per bucket), and the index records it there;
* lives in the row's partition goes to the key's bucket;
* lives in another partition is handled per merge engine (``ExistingProcessor.create``):
  ``deduplicate`` retracts the key in its old (partition, bucket) with a ``-D`` row (the new row
  with the old partition's values) and places the row as a new key of its own partition;
  ``partial-update`` and ``aggregation`` send the row to the old partition and bucket, its
  partition fields set to the old partition's values; ``first-row`` drops the row.

Java takes the rows one by one; here a batch is taken at once with the same result: rows are
ordered by (key, arrival), and each key's rows are compared with the key's location before them
(the index's, or the previous row's). Buckets are Java's: in a partition that both loses keys
(``deduplicate`` moves free their old slots) and receives keys in one batch, the placements and
the moves are taken in arrival order (`lsm/bucket_events.py`, vectorized). Keys go to assigners
by their hash (``abs(hash % n)`` with n the assigners of `CoreOptions.dynamic_bucket_assigners`),
as Paimon's Flink sink shuffles them, all assigners running in this one writer.

Cross-partition tables have no HASH index files (Java's ``KeyValueFileStore.newWrite`` keeps them
for ``HASH_DYNAMIC`` only): every writer bootstraps from the data, so a writer also reads every
bucket's keys once when it starts (Java's bootstrap does the same). While it lives, the writer
holds the snapshots its index needs with a lease (ops/writer_lease.py). The bootstrap's reads are
`ops/cross_partition_bootstrap.py`.

A batch is placed whole or not at all: where routing fails part way (a partition out of bucket
ids, a full disk while the index spills) or the routed rows do not reach the write buffer, the
batch's placements and bucket counts are taken back (`undo_route`), so the index never says a key
lives where its row was never written.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from lake_assets.errors import InvalidDataError, OptionError
from lake_assets.lsm.bucket_events import place_in_arrival_order
from lake_assets.lsm.bucket_fill import fill_assigner_buckets
from lake_assets.lsm.merge import is_retract
from lake_assets.lsm.merge_engine.names import DEDUPLICATE, FIRST_ROW
from lake_assets.ops.cross_partition_bootstrap import bootstrap_entries, bootstrap_splits
from lake_assets.ops.key_index import KeyIndex, Locations, encode_keys
from lake_assets.ops.key_index_race import advance_base, holds_exactly_the_table, snapshot_identity
from lake_assets.ops.route import partition_groups
from lake_assets.ops.writer_lease import WriterLease
from lake_assets.spec.binary_row import deserialize_row, serialize_row
from lake_assets.spec.row_kind import RowKind

if TYPE_CHECKING:
    from lake_assets.ops.commit_message import CommitMessage
    from lake_assets.spec.snapshot import Snapshot
    from lake_assets.store.file_store import FileStore

@dataclasses.dataclass
class RouteUndo:
    """What a routed batch changed: its distinct keys with their locations before it, and the
    bucket counts of the partitions it touched as they were (by partition id)."""

    keys: pa.Array
    hashes: np.ndarray
    before: Locations
    counts: dict[int, dict[int, int]]


class CrossPartitionRouter:
    """Places the rows of one writer of a cross-partition upsert table (see the module doc)."""

    def __init__(self, store: FileStore, snapshot: Snapshot | None, spill_dir: str | None, *,
                 lease: WriterLease | None = None) -> None:
        # ``lease``: the lease of an index handed over (ops/key_index_handoff.py), else a new one
        self.store = store
        schema = store.schema
        opts = schema.core_options
        self.engine = opts.merge_engine
        self.target = opts.dynamic_bucket_target_row_num
        if self.target < 1:
            raise OptionError(f"Table {store.name}: dynamic-bucket.target-row-num must be >= 1, got {self.target}")
        self.num_assigners = opts.dynamic_bucket_assigners
        self.partition_keys = list(schema.partition_keys)
        self.partition_types = schema.types(self.partition_keys)
        self.key_names = list(schema.trimmed_primary_keys)
        self.key_types = schema.types(self.key_names)
        # the snapshot the index was bootstrapped from (0: an empty table) and its identity, which
        # commits check (ops/key_index_race.py); moved on over the writer's own commits
        self.base_snapshot = snapshot.id if snapshot is not None else 0
        self.base_identity = snapshot_identity(snapshot) if snapshot is not None else ""
        self.advance_due = False  # after a prepare_commit: the next write moves the base on
        # one new file of each prepared round with rows whose landing the base has not passed
        # (`CommitMessage.key_index_pending`): its placements are in the index, maybe not the table
        self.pending: tuple[str, ...] = ()
        self.index = KeyIndex(store.name, opts.write_buffer_size // 2, spill_dir)
        # live keys per bucket of each partition id, Paimon's BucketAssigner statistics
        self.counts: dict[int, dict[int, int]] = {}
        # the batch being routed, then the last one routed until it is buffered (`confirm_route`)
        self._undo: RouteUndo | None = None
        self.lease = lease or WriterLease(store)
        if lease is None:
            self.lease.start(self.base_snapshot)  # before the snapshot is read
        try:
            if snapshot is not None:
                splits = bootstrap_splits(store, snapshot)
                entries = bootstrap_entries(store, self.index, snapshot, splits, self.key_names, self.key_types,
                                            self._add_count)
                self.index.bootstrap(entries, sum(s.row_count for s in splits))
        except BaseException:
            self.close()
            raise

    def advance_base(self, commit_user: str) -> None:
        """Move the base over the writer's own commits and compactions since (a long-lived
        writer keeps its index across commits; `key_index_race.advance_base`)."""
        self.advance_due = False
        self.base_snapshot, self.base_identity, self.pending = advance_base(
            self.store, self.base_snapshot, self.base_identity, commit_user, self.pending)
        self.lease.renew(self.base_snapshot)

    def resume(self, store: FileStore, commit_user: str) -> bool:
        """Whether this index may route for another writer of ``commit_user`` on ``store`` (the
        next micro-batch of a streaming write): the same table and schema, and the table holds
        exactly what the index says (`key_index_race.holds_exactly_the_table`: since its base only
        compactions and its own rounds, all landed); the base then moves to the latest snapshot.
        Else the new writer reads its index from the table."""
        if store.paths.meta_root != self.store.paths.meta_root or store.schema.id != self.store.schema.id:
            return False
        checked = holds_exactly_the_table(store, self.base_snapshot, self.base_identity, commit_user, self.pending)
        if checked is None:
            return False
        self.advance_base(commit_user)
        return not self.pending and self.base_snapshot == checked

    def stamp(self, messages: list[CommitMessage]) -> list[CommitMessage]:
        """A round's ``messages`` carrying the writer's base and its earlier rounds not seen landed,
        which the commit checks (ops/key_index_race.py); the round is pending from now on."""
        stamped = [dataclasses.replace(m, key_index_base=self.base_snapshot,
                                       key_index_base_identity=self.base_identity,
                                       key_index_pending=self.pending) for m in messages]
        names = [f.file_name for m in messages for f in m.new_files]
        if names:  # a round without rows placed nothing
            self.pending = (*self.pending, min(names))
        return stamped

    # ---------------------------------------------------------------- routing
    def route(self, data: pa.Table, kinds: np.ndarray) -> tuple[pa.Table, np.ndarray, np.ndarray]:
        """(rows, kinds, buckets) to write for conformed ``data`` with its ``kinds``: the rows
        with partition fields rewritten where the engine keeps the old partition, ``-D`` rows
        of ``deduplicate`` moves inserted just before the row that moves the key, and rows
        ``first-row`` skips dropped. Records where each key lives now, to be taken back with
        `undo_route` unless the caller buffers the rows and calls `confirm_route`."""
        self.lease.renew(self.base_snapshot)
        n = data.num_rows
        group, values = partition_groups(data, self.partition_keys)
        group_part = np.array([self.index.part_id(serialize_row(list(v), self.partition_types)) for v in values],
                              dtype=np.int32)
        row_part = group_part[group]
        encoded, hashes = encode_keys([data.column(k) for k in self.key_names], self.key_types, n)
        dictionary = pa.chunked_array([encoded]).combine_chunks().dictionary_encode()
        code = np.asarray(dictionary.indices, dtype=np.int64)
        keys = dictionary.dictionary
        first = np.full(len(keys), n, dtype=np.int64)
        np.minimum.at(first, code, np.arange(n))
        key_hashes = hashes[first]
        where = self.index.lookup(keys, key_hashes)
        self._undo = RouteUndo(keys, key_hashes, where, {})
        try:
            if self.engine != DEDUPLICATE:
                return self._route_keep_old(data, kinds, row_part, code, first, keys, key_hashes, where)
            order = np.lexsort((np.arange(n), code))  # by key, then arrival
            sorted_code = code[order]
            key_start = np.ones(n, dtype=bool)
            key_start[1:] = sorted_code[1:] != sorted_code[:-1]
            return self._route_deduplicate(data, kinds, order, key_start, row_part[order], sorted_code, keys,
                                           key_hashes, where)
        except BaseException:
            self.undo_route()
            raise

    def confirm_route(self) -> None:
        """The last routed batch is in the write buffer: its placements stay."""
        self._undo = None

    def undo_route(self) -> None:
        """Take the placements and count changes of the last routed batch back (its rows were not
        buffered): its keys' locations as they were (`KeyIndex.restore`), its partitions' counts."""
        undo, self._undo = self._undo, None
        if undo is None:
            return
        self.counts.update(undo.counts)
        self.index.restore(undo.keys, undo.hashes, undo.before)

    def _counts_of(self, part: int) -> dict[int, int]:
        """The bucket counts of a partition, to change: the routed batch's undo keeps them as they were."""
        counts = self.counts.setdefault(part, {})
        if self._undo is not None and part not in self._undo.counts:
            self._undo.counts[part] = dict(counts)
        return counts

    def _route_deduplicate(self, data: pa.Table, kinds: np.ndarray, order: np.ndarray, key_start: np.ndarray,
                           part_sorted: np.ndarray, sorted_code: np.ndarray, keys: pa.Array, key_hashes: np.ndarray,
                           where: Locations) -> tuple[pa.Table, np.ndarray, np.ndarray]:
        n = len(order)
        # the location before each row (rows by key, then arrival): the previous row's, else the index's
        prev_part = np.empty(n, dtype=np.int32)
        prev_part[1:] = part_sorted[:-1]
        prev_part[key_start] = where.parts[sorted_code[key_start]]  # -1 where not found
        change = part_sorted != prev_part  # a new placement: a new key, or a move
        starts = change | key_start
        run = np.cumsum(starts) - 1  # runs of a key's rows sharing one location
        run_start = np.flatnonzero(starts)
        run_bucket = np.empty(len(run_start), dtype=np.int32)
        kept = ~change[run_start]  # a key's first run in its indexed partition keeps its bucket
        run_bucket[kept] = where.buckets[sorted_code[run_start[kept]]]
        moves = change & (prev_part >= 0)
        self._place_runs(change, moves, order, run, key_start, part_sorted, prev_part, sorted_code, key_hashes,
                         where, run_bucket)
        prev_bucket = np.where(key_start, where.buckets[sorted_code], run_bucket[np.maximum(run - 1, 0)])
        row_bucket = run_bucket[run]
        # the -D rows of moves: the moving row with the old partition's values, just before it
        mv = np.flatnonzero(moves)
        retract = self._with_partitions(data.take(pa.array(order[mv])), prev_part[mv])
        out = pa.concat_tables([data.take(pa.array(order)), retract])
        out_kinds = np.concatenate([kinds[order], np.full(len(mv), RowKind.DELETE, dtype=kinds.dtype)])
        out_buckets = np.concatenate([row_bucket, prev_bucket[mv]]).astype(np.int64)
        final = np.argsort(np.concatenate([2 * order + 1, 2 * order[mv]]), kind="stable")  # arrival, -D first
        # where each key lives now: its last run's location
        last = np.ones(n, dtype=bool)
        last[:-1] = key_start[1:]
        self.index.put(keys.take(pa.array(sorted_code[last])), key_hashes[sorted_code[last]], part_sorted[last],
                       row_bucket[last])
        return out.take(pa.array(final)), out_kinds[final], out_buckets[final]

    def _route_keep_old(self, data: pa.Table, kinds: np.ndarray, row_part: np.ndarray, code: np.ndarray,
                        first: np.ndarray, keys: pa.Array, key_hashes: np.ndarray,
                        where: Locations) -> tuple[pa.Table, np.ndarray, np.ndarray]:
        # partial-update and aggregation (UseOldExistingProcessor) and first-row
        # (SkipNewExistingProcessor): a key has one home, the index's, else its first row's
        # partition with a new bucket; a row of another partition goes home (first-row: dropped)
        home_part = where.parts.copy()
        home_bucket = where.buckets.copy()
        new = np.flatnonzero(~where.found)
        new = new[np.argsort(first[new], kind="stable")]  # placed in arrival order
        home_part[new] = row_part[first[new]]
        row_home = home_part[code]
        away = row_home != row_part
        if self.engine != FIRST_ROW:
            # refused before anything is placed: a refused batch leaves the index and the bucket
            # counts as they were, for the writer's next batch
            self._refuse_away_retractions(data, kinds, away, row_home)
        home_bucket[new] = self._place(home_part[new], key_hashes[new])
        self.index.put(keys.take(pa.array(new)), key_hashes[new], home_part[new], home_bucket[new])
        buckets = home_bucket[code].astype(np.int64)
        if not away.any():
            return data, kinds, buckets
        if self.engine == FIRST_ROW:
            keep = ~away
            return data.filter(pa.array(keep)), kinds[keep], buckets[keep]
        moved = np.flatnonzero(away)
        rewritten = self._with_partitions(data.take(pa.array(moved)), row_home[moved])
        out = pa.concat_tables([data.filter(pa.array(~away)), rewritten])
        final = np.argsort(np.concatenate([np.flatnonzero(~away), moved]), kind="stable")
        return (out.take(pa.array(final)), np.concatenate([kinds[~away], kinds[moved]])[final],
                np.concatenate([buckets[~away], buckets[moved]])[final])

    def _refuse_away_retractions(self, data: pa.Table, kinds: np.ndarray, away: np.ndarray,
                                 row_home: np.ndarray) -> None:
        retracting = away & is_retract(kinds)
        if not retracting.any():
            return
        # Java routes it to the old partition as an insert (ProjectToRowFunction builds a new
        # row and drops the row kind, 0.9 to HEAD): never written here, as no silent coercion
        i = int(np.flatnonzero(retracting)[0])
        key = {k: data.column(k)[i].as_py() for k in self.key_names}
        old = dict(zip(self.partition_keys, deserialize_row(self.index.partitions[int(row_home[i])],
                                                            self.partition_types), strict=True))
        raise InvalidDataError(
            f"Cannot write to {self.store.name}: {int(retracting.sum())} retraction(s) (-D/-U) of keys living "
            f"in another partition, e.g. key {key} lives in {old}; a {self.engine} cross-partition table "
            "applies a row to the key's partition, where Paimon would write the retraction as an insert; "
            "give retractions the partition of their key")

    # ------------------------------------------------------------- placement
    def _place_runs(self, change: np.ndarray, moves: np.ndarray, order: np.ndarray, run: np.ndarray,
                    key_start: np.ndarray, part_sorted: np.ndarray, prev_part: np.ndarray, sorted_code: np.ndarray,
                    key_hashes: np.ndarray, where: Locations, run_bucket: np.ndarray) -> None:
        """Buckets of the runs a ``deduplicate`` batch places (``change`` rows), with the
        decrements of its moves, in arrival order as Java takes them: a move frees its old slot
        before the next placement into that partition. A partition without decrements is filled
        at once (`_place`); a partition both losing and receiving keys in the batch is taken in
        arrival order (`_place_in_order`), its events being the moves out of it and the
        placements into it."""
        placed = np.flatnonzero(change)
        placed = placed[np.argsort(order[placed], kind="stable")]
        moved = np.flatnonzero(moves)
        moved = moved[np.argsort(order[moved], kind="stable")]
        losing = np.unique(prev_part[moved])
        into_losing = np.isin(part_sorted[placed], losing)
        plain = placed[~into_losing]
        run_bucket[run[plain]] = self._place(part_sorted[plain], key_hashes[sorted_code[plain]])
        # moves out of partitions receiving nothing: their slots are freed, no placement sees it
        receiving = np.unique(part_sorted[placed[into_losing]])
        quiet = moved[~np.isin(prev_part[moved], receiving)]
        from_index = quiet[key_start[quiet]]
        for p, b in zip(prev_part[from_index].tolist(), where.buckets[sorted_code[from_index]].tolist(), strict=True):
            self._add_count(p, b, -1)
        within = quiet[~key_start[quiet]]  # placed earlier in this batch (into a partition not receiving later)
        for p, b in zip(prev_part[within].tolist(), run_bucket[run[within] - 1].tolist(), strict=True):
            self._add_count(p, b, -1)
        for part in receiving.tolist():
            mine = placed[part_sorted[placed] == part]
            out = moved[prev_part[moved] == part]
            self._place_in_order(part, mine, out, order, run, key_start, sorted_code, key_hashes, where, run_bucket)

    def _place_in_order(self, part: int, placements: np.ndarray, decrements: np.ndarray, order: np.ndarray,
                        run: np.ndarray, key_start: np.ndarray, sorted_code: np.ndarray, key_hashes: np.ndarray,
                        where: Locations, run_bucket: np.ndarray) -> None:
        """Java's BucketAssigner over one partition's events in arrival order: a decrement (a
        move out) frees a slot, a placement takes the lowest bucket of its assigner below the
        target, else the lowest unused one (`bucket_events.place_in_arrival_order`, vectorized).
        A decrement's bucket is the index's, that of the key's kept first run, or that of the
        key's placement into this partition earlier in the batch (known once it is placed)."""
        n = self.num_assigners
        owners = np.abs(np.fmod(key_hashes[sorted_code[placements]].astype(np.int64), n))
        placement_of_run = np.full(int(run[-1]) + 1 if len(run) else 0, -1, dtype=np.int64)
        placement_of_run[run[placements]] = np.arange(len(placements))
        previous = run[decrements] - 1
        from_index = key_start[decrements]
        sources = np.where(from_index, -1, placement_of_run[np.maximum(previous, 0)])
        buckets = np.where(from_index, where.buckets[sorted_code[decrements]],
                           np.where(sources >= 0, -1, run_bucket[np.maximum(previous, 0)])).astype(np.int64)
        chosen = place_in_arrival_order(self._counts_of(part), n, self.target, owners,
                                        order[placements], order[decrements], buckets, sources, self.store.name)
        run_bucket[run[placements]] = chosen

    def _add_count(self, part: int, bucket: int, delta: int) -> None:
        counts = self._counts_of(part)
        counts[bucket] = counts.get(bucket, 0) + delta

    def _place(self, parts: np.ndarray, hashes: np.ndarray) -> np.ndarray:
        """Buckets for new placements (in arrival order) of keys with ``hashes`` into ``parts``:
        per partition and assigner, its buckets below the target in ascending order, then its
        lowest unused ones, each filled to the target (Paimon's BucketAssigner.assignBucket)."""
        out = np.empty(len(parts), dtype=np.int32)
        if not len(parts):
            return out
        n = self.num_assigners
        owner = np.abs(np.fmod(hashes.astype(np.int64), n))
        group = parts.astype(np.int64) * n + owner
        for g in np.unique(group).tolist():
            sel = np.flatnonzero(group == g)  # arrival order kept
            out[sel] = self._fill(int(g // n), int(g % n), len(sel))
        return out

    def _fill(self, part: int, assigner: int, k: int) -> np.ndarray:
        counts = self._counts_of(part)
        chosen = fill_assigner_buckets(counts, assigner, self.num_assigners, self.target, k, self.store.name)
        for b, c in zip(*np.unique(chosen, return_counts=True), strict=True):
            self._add_count(part, int(b), int(c))
        return chosen

    # ------------------------------------------------------------- partitions
    def _with_partitions(self, rows: pa.Table, parts: np.ndarray) -> pa.Table:
        """``rows`` with their partition fields set to the values of partitions ``parts`` (ids)."""
        if rows.num_rows == 0:
            return rows
        uniq, inverse = np.unique(parts, return_inverse=True)
        values = [deserialize_row(self.index.partitions[int(p)], self.partition_types) for p in uniq.tolist()]
        for i, name in enumerate(self.partition_keys):
            at = rows.schema.get_field_index(name)
            field = rows.schema.field(at)
            column = pa.array([v[i] for v in values], field.type).take(pa.array(inverse))
            rows = rows.set_column(at, field, column)
        return rows

    def close(self) -> None:
        """Remove the index's spill files and release the writer's lease."""
        self.index.close()
        self.lease.release()
