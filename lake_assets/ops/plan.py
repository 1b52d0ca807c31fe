"""Batch read planning: which snapshot a read sees, and its splits pruned by a predicate.

Partition filters prune manifests and partitions, equality on the whole bucket key prunes buckets,
key ranges prune files of primary-key tables and value ranges files of append tables, and bloom-filter
file indexes files of append tables for = / in.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import pendulum
import pyarrow as pa

from lake_assets import arguments as args
from lake_assets.errors import CorruptMetadataError, InvalidArgumentError, MissingDataFileError, SnapshotNotFoundError
from lake_assets.lsm.bucket import assign_buckets
from lake_assets.lsm.bucket_function import function_problem
from lake_assets.ops import deletion_vectors
from lake_assets.ops.default_values import prunable
from lake_assets.ops.file_index_prune import index_may_match, prunes_by_index
from lake_assets.ops.row_range_prune import prune_ranges, row_ids_may_match
from lake_assets.ops.row_tracking import ROW_ID, SEQUENCE_NUMBER, data_evolution_enabled
from lake_assets.ops.scan import Split
from lake_assets.predicate import Predicate
from lake_assets.spec.arrow_types import to_arrow
from lake_assets.spec.binary_row import deserialize_row
from lake_assets.spec.data_types import BigIntType, BinaryType, DataType, DoubleType, FloatType, VarBinaryType
from lake_assets.spec.manifest import DataFileMeta
from lake_assets.spec.schema import TableSchema
from lake_assets.spec.snapshot import Snapshot
from lake_assets.store.file_store import FileStore
from lake_assets.store.read_once import reads_once
from lake_assets.table_support import Op


def resolve_snapshot(
    store: FileStore,
    snapshot_id: int | None = None,
    *,
    tag: str | None = None,
    timestamp_ms: int | None = None,
    timestamp_label: object = None,
) -> Snapshot | None:
    """The snapshot a read sees: by id, by tag, one committed at or before ``timestamp_ms``
    (`SnapshotManager.earlier_or_equal_time`, Paimon's search)
    (``timestamp_label`` is how the caller gave it, for the message), or the latest."""
    if tag is not None:
        return store.tag_manager().get(tag).snapshot
    if timestamp_ms is not None:
        snap = store.snapshot_manager.earlier_or_equal_time(timestamp_ms)
        if snap is None:
            label = timestamp_ms if timestamp_label is None else timestamp_label
            raise SnapshotNotFoundError(f"Table {store.name} has no snapshot committed at or before {label}")
        return snap
    if snapshot_id is None:
        latest = store.snapshot_manager.latest()
        if latest is None:
            store.require_exists()  # a dropped table is no empty table
        return latest
    return store.snapshot_manager.snapshot(snapshot_id)


@reads_once
def plan_splits(
    store: FileStore, snap: Snapshot, pred: Predicate | None, op: Op = Op.READ, *, schema: TableSchema | None = None
) -> list[Split]:
    """The splits (one per partition and bucket) of ``snap`` that may hold rows ``pred`` accepts;
    the table and the files planned are checked for ``op`` (`lake_assets.table_support`).

    ``schema`` is the schema the read works with, the one ``pred`` names columns in (a time-travel
    read's is its snapshot's); unset, the handle's schema as of ``snap`` (`FileStore.schema_at`).
    Each file's stats are evolved from the schema that wrote it into ``schema`` by field id
    (`file_may_match`), never read through the handle's current names."""
    moved = store.schema_at(snap)  # a snapshot committed under a newer schema is planned with it
    schema = schema if schema is not None else moved
    # a term on a column with a default value prunes nothing: its nulls read as the default
    pred = prunable(schema, pred)
    scan = store.file_store_scan(op)
    pkeys = list(schema.partition_keys)
    partition_filter = None
    partition_range = None
    bucket_filter: BucketSelector | None = None
    if pred is not None and pred.clauses:
        if pkeys and set(pkeys) & pred.columns:
            def partition_filter(values: tuple[Any, ...]) -> bool:
                return pred.test_values(dict(zip(pkeys, values, strict=True)))

            def partition_range(lo: Sequence[Any], hi: Sequence[Any], nulls: Sequence[int | None], rows: int) -> bool:
                return pred.test_ranges(dict(zip(pkeys, lo, strict=True)), dict(zip(pkeys, hi, strict=True)),
                                        dict(zip(pkeys, nulls, strict=True)), rows)
        bucket_keys = list(schema.bucket_keys)
        # any fixed count: the table's now, or the one a partition not rescaled since still has
        if schema.primary_keys and schema.core_options.bucket > 0 and bucket_keys:
            combos = pred.equality_values(bucket_keys)
            if combos:
                bucket_filter = BucketSelector.of(schema, combos, bucket_keys)
    entries = scan.live_entries(
        snap, partition_filter=partition_filter, partition_range=partition_range, bucket_filter=bucket_filter
    )
    if pred is not None and pred.clauses and data_evolution_enabled(schema.options):
        # a data-evolution file's stats cover its own columns: whole row-id ranges are pruned,
        # by stats merged across their files (ops/row_range_prune.py)
        entries = prune_ranges(store, entries, pred, schema)
    elif pred is not None and pred.clauses:
        if ROW_ID in pred.columns or SEQUENCE_NUMBER in pred.columns:  # a row-tracking table's system columns
            entries = [e for e in entries if row_ids_may_match(store, pred, [e.file])]
        entries = [e for e in entries if file_may_match(store, e.file, pred, schema)]
        if op is Op.READ and prunes_by_index(schema, pred):
            # bloom-filter and bitmap file indexes of append tables (ops/file_index_prune.py)
            try:
                entries = [e for e in entries if index_may_match(store, e, pred, schema)]
            except MissingDataFileError as exc:  # a .index file gone: expiry raced the plan, or a lost file
                from lake_assets.ops.read import missing_file_error  # the read path imports this module

                raise missing_file_error(store, exc, snap.id) from None
    return deletion_vectors.attach(store, snap, scan.splits(entries))


class BucketSelector:
    """The buckets rows with given bucket-key values hash to, per bucket count: Paimon's
    total-aware bucket filter (0.9's ``ScanBucketSelector.select(bucket, totalBuckets)``).

    After ``ALTER TABLE ... SET ('bucket' = 'N')`` only overwritten partitions are rewritten in
    the new count; the others keep their files and the count recorded with each manifest entry
    (``_TOTAL_BUCKETS``). A key's bucket is the same hash modulo the entry's own count, never the
    schema's: pruning with the schema's count would drop rows of the partitions not rescaled."""

    def __init__(self, columns: list[pa.Array], types: list[DataType], function: str = "default") -> None:
        self._columns = columns
        self._types = types
        self._function = function
        self._by_total: dict[int, frozenset[int]] = {}

    @classmethod
    def of(cls, schema: TableSchema, combos: list[dict[str, Any]], keys: list[str]) -> BucketSelector | None:
        """The selector for these bucket-key value combinations, by the table's bucket function;
        None when they cannot name buckets (a NaN, a literal the column's type cannot hold, or a
        key the function cannot place, `function_problem`): no pruning then."""
        function = schema.core_options.bucket_function
        types = list(schema.types(keys))
        if function_problem(function, types) is not None:
            return None
        if any(isinstance(v, float) and v != v for c in combos for v in c.values()):
            # NaN equals every NaN (Double.compare) but NaNs differ in bits, so in bucket hash:
            # a NaN literal cannot name one bucket.
            return None
        try:
            cols = [pa.array([c[k] for c in combos], to_arrow(schema.field(k).type)) for k in keys]
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            return None
        return cls(cols, types, function)

    def __call__(self, bucket: int, total_buckets: int) -> bool:
        if total_buckets <= 0:  # not a fixed count (postpone, dynamic): nothing to select by
            return True
        chosen = self._by_total.get(total_buckets)
        if chosen is None:
            buckets = assign_buckets(self._columns, self._types, total_buckets, self._function)
            chosen = self._by_total[total_buckets] = frozenset(int(b) for b in buckets)
        return bucket in chosen


# The type of the stored system columns (_ROW_ID, _SEQUENCE_NUMBER) a file's stats may cover.
_SYSTEM_STAT_TYPE = BigIntType(nullable=False)

def file_may_match(
    store: FileStore, meta: DataFileMeta, pred: Predicate, schema: TableSchema, *, by_values: bool = False
) -> bool:
    """Prune by file stats: key stats for PK tables (values may be superseded), value stats otherwise.

    ``pred`` names columns as ``schema`` (the read's) does. The stats are the file's, per the
    schema that wrote it (its ``schema_id``): each column is matched to ``schema`` by field id, as
    Paimon's ``SimpleStatsEvolutions`` does - a renamed column keeps its stats, a dropped one (or
    one dropped and added again under a new id) has none, and bounds of a widened column are cast
    to the read type, the type the rows are filtered in. ``by_values``: value stats of a PK
    table's file, for files read on their own (a deletion-vector bucket read without a merge: no
    row of another file depends on this one's rows)."""
    file_schema = store.schema_by_id(meta.schema_id)
    if schema.primary_keys and not by_values:
        names = list(file_schema.trimmed_primary_keys)
        stats = meta.key_stats
    else:
        # the stats' columns: value_stats_cols, else the file's _WRITE_COLS (a row-tracking
        # compaction's output adds _ROW_ID and _SEQUENCE_NUMBER, as SimpleStatsEvolutions reads
        # them), else every column of its schema
        names = list(meta.value_stats_cols if meta.value_stats_cols is not None else
                     meta.write_cols if meta.write_cols is not None else file_schema.field_names)
        stats = meta.value_stats
    read_fields = [schema.field_by_id(file_schema.field(n).id) if file_schema.has_field(n) else None
                   for n in names]
    if not any(f is not None and f.name in pred.columns for f in read_fields):
        return True
    types = [file_schema.field(n).type if file_schema.has_field(n) else _SYSTEM_STAT_TYPE for n in names]
    try:
        lo = deserialize_row(stats.min_values, types)
        hi = deserialize_row(stats.max_values, types)
    except CorruptMetadataError:
        return True
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    # null counts: None where a column's stats mode ("none") records none, or the file predates them
    counts = stats.null_counts or ()
    null_counts: dict[str, int | None] = {}
    for i, (f, a, b) in enumerate(zip(read_fields, lo, hi, strict=True)):
        if f is None:
            continue
        null_counts[f.name] = counts[i] if i < len(counts) else None
        # Binary bounds are never trusted: Java writes none, and older lake_assets files carry
        # some whose order another reader may not share (signed vs unsigned bytes).
        if not isinstance(f.type, (BinaryType, VarBinaryType)):
            mins[f.name] = _as_read_type(a, f.type)
            maxs[f.name] = _as_read_type(b, f.type)
    return pred.test_ranges(mins, maxs, null_counts, meta.row_count)


def _as_read_type(value: Any, read_type: DataType) -> Any:
    """A stats bound of a file's column in the column's read type. Every widening keeps the value
    (schema_apply allows lossless ones only) and Python compares ints, Decimals and times exactly
    across widths; an integer read as FLOAT/DOUBLE must become a float, though: filters compare
    floats as ``Double.compare`` does (0.0 > -0.0), which an int bound would not."""
    if isinstance(read_type, (FloatType, DoubleType)) and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def to_epoch_ms(value: datetime | int | str) -> int:
    """A time-travel timestamp (epoch ms, datetime - naive is local time - or ISO-8601 text) in
    epoch milliseconds; `InvalidArgumentError` for anything else."""
    if isinstance(value, bool):
        raise InvalidArgumentError("timestamp must be epoch milliseconds, a datetime or ISO-8601 text")
    if isinstance(value, int):
        return args.integer("timestamp", value)  # type: ignore[return-value]
    if isinstance(value, str):
        try:
            value = pendulum.parse(value)  # type: ignore[assignment]
        except (ValueError, OverflowError) as exc:  # pendulum's ParserError is a ValueError
            raise InvalidArgumentError(f"timestamp {value!r} is not ISO-8601 text: {exc}") from None
    if isinstance(value, datetime):
        try:
            if value.tzinfo is None:
                value = value.astimezone()  # naive = the machine's local time, as users mean it
            return int(value.timestamp() * 1000)
        except (ValueError, OverflowError, OSError) as exc:  # year 1 or 9999 near the platform's limits
            raise InvalidArgumentError(f"timestamp {value!r} is out of range: {exc}") from None
    raise InvalidArgumentError(f"timestamp must be epoch milliseconds, a datetime or ISO-8601 text, got {value!r}")
