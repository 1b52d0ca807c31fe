"""The bucket counts of a batch write into real buckets of a postpone-bucket table.

With ``postpone.batch-write-fixed-bucket`` (Paimon 1.2+, default true) Paimon's Flink and Spark
*batch* sinks do not write a postpone table's rows into ``bucket-postpone``: they write them as a
fixed-bucket table would, into real buckets, so readers see them at once. Each partition needs a
bucket count for that, chosen as Paimon HEAD's Spark writer does (``PostponeUtils
.decideFixedBucketNum``, called by ``SparkPostponeStagedCommitter.commit``; `decide_bucket_num`):

* a partition that already has real buckets keeps the count its files record (``totalBuckets``
  of its manifest entries), so its keys stay in their buckets - unless the batch needs more than
  ``postpone.batch-write-fixed-bucket.rescale-load-factor`` times that many buckets: then, as
  HEAD, the partition's real buckets are first rewritten into the larger count in an OVERWRITE
  commit (`lake_assets.ops.rescale.rescale_partitions`) and the batch is written after it;
* a new partition, and every partition an overwrite replaces (HEAD ignores the replaced layout),
  gets ``postpone.default-bucket-num`` exactly, else an estimate on the batch alone (rows already
  waiting in ``bucket-postpone`` are excluded): ceil(rows / ``postpone.target-row-num-per-bucket``),
  else ceil(bytes / ``postpone.target-size-per-bucket``), at least 1, rounded up to a power of two
  and capped at ``postpone.batch-write-fixed-bucket.max-parallelism``.

The options are the table's, overridden per write by dynamic options (`BatchBucketOptions.of`):
Paimon's Spark connector copies the table with the ``spark.paimon.<key>`` SQL conf and the write's
own options (``OptionUtils.copyWithSQLConf``, ``SparkSource.loadTable``), so a write may switch
``postpone.batch-write-fixed-bucket`` or a count option for itself.

This module is that decision only (no writing): `plan_batch_buckets` takes what the batch holds
per partition and what the table records, and returns the count of each partition. The staged
bytes are what the rows take as the table's postpone files, HEAD's measure (the stored size of its
staged postpone files; `lake_assets.ops.postpone_size`, see docs/format.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from lake_assets.errors import UnsupportedFeatureError
from lake_assets.ops.postpone_table import DEFAULT_BUCKET_NUM_KEY, TARGET_ROWS_KEY, TARGET_SIZE_KEY, record_bucket_count
from lake_assets.option_types import parse_value
from lake_assets.options import rule_for
from lake_assets.store.file_store import FileStore
from lake_assets.table_support import POSTPONE_BUCKET, Op

BATCH_WRITE_FIXED_BUCKET_KEY = "postpone.batch-write-fixed-bucket"
MAX_PARALLELISM_KEY = "postpone.batch-write-fixed-bucket.max-parallelism"
RESCALE_LOAD_FACTOR_KEY = "postpone.batch-write-fixed-bucket.rescale-load-factor"
# the options a batch write of a postpone table reads, which a write may override (dynamic options)
BATCH_OPTION_KEYS = (BATCH_WRITE_FIXED_BUCKET_KEY, MAX_PARALLELISM_KEY, RESCALE_LOAD_FACTOR_KEY,
                     DEFAULT_BUCKET_NUM_KEY, TARGET_ROWS_KEY, TARGET_SIZE_KEY)


class RescaleRefusedError(UnsupportedFeatureError):
    """A batch needs so many more buckets than a partition has that Paimon HEAD would rescale the
    partition's real buckets first, and the caller asked not to (`plan_batch_buckets` with
    ``rescale=False``)."""


@dataclass(frozen=True)
class BatchBucketOptions:
    """The options a batch write into real buckets reads, as the write sees them (HEAD's
    ``CoreOptions`` accessors of the copied table)."""

    fixed_bucket: bool = True
    default_bucket_num: int | None = None
    target_rows: int | None = None
    target_size: int = 1024 * 1024 * 1024
    max_parallelism: int = 2048
    rescale_load_factor: int = 32

    @classmethod
    def of(cls, store: FileStore, dynamic: Mapping[str, str] | None = None) -> BatchBucketOptions:
        """The table's options overridden by ``dynamic`` (a write's options and ``spark.paimon.*``
        conf, keys in lower case; keys other than `BATCH_OPTION_KEYS` are not looked at). Every
        value is parsed by its registry row: a bad one raises `OptionError` naming the key."""
        raw = {k: v for k, v in store.schema.options.items() if k in BATCH_OPTION_KEYS}
        raw.update({k: v for k, v in (dynamic or {}).items() if k in BATCH_OPTION_KEYS})
        values: dict[str, object] = {}
        for key in BATCH_OPTION_KEYS:
            rule = rule_for(key)
            assert rule is not None  # every key is a row of the registry
            values[key] = parse_value(rule, raw[key]) if key in raw else rule.default
        return cls(
            fixed_bucket=bool(values[BATCH_WRITE_FIXED_BUCKET_KEY]),
            default_bucket_num=_int_or_none(values[DEFAULT_BUCKET_NUM_KEY]),
            target_rows=_int_or_none(values[TARGET_ROWS_KEY]),
            target_size=int(str(values[TARGET_SIZE_KEY])),
            max_parallelism=int(str(values[MAX_PARALLELISM_KEY])),
            rescale_load_factor=int(str(values[RESCALE_LOAD_FACTOR_KEY])),
        )


def _int_or_none(v: object) -> int | None:
    return None if v is None else int(str(v))


@dataclass(frozen=True)
class StagedPartition:
    """What a batch holds for one partition: its rows, and their bytes as the table's postpone files
    would store them (HEAD's staged size; `lake_assets.ops.postpone_size`)."""

    rows: int
    nbytes: int


@dataclass(frozen=True)
class BucketDecision:
    """HEAD's ``FixedBucketDecision``: the partition's count, and whether reaching it needs the
    partition's existing real buckets rewritten (a rescale)."""

    buckets: int
    requires_rescale: bool = False


def _power_of_two_at_least(n: int, cap: int) -> int:
    """HEAD's ``roundUpToPowerOfTwo`` (PostponeUtils.java:355): ``n`` capped at ``cap``, rounded up
    to a power of two, capped again (a cap that is no power of two is reachable)."""
    n = min(n, cap)
    return 1 if n <= 1 else min(1 << (n - 1).bit_length(), cap)


def decide_bucket_num(staged: StagedPartition, existing: int | None, opts: BatchBucketOptions) -> BucketDecision:
    """The count of one partition a batch write puts ``staged`` into, with ``existing`` its
    recorded count (None: a new partition, or one an overwrite replaces); HEAD's
    ``PostponeUtils.decideFixedBucketNum`` (PostponeUtils.java:281-345):

    * no existing count and ``postpone.default-bucket-num`` set: that count, exactly (uncapped);
    * required = max(1, ceil(rows / target rows)) when ``postpone.target-row-num-per-bucket`` is
      set, else max(1, ceil(bytes / ``postpone.target-size-per-bucket``));
      suggested = required rounded up to a power of two within ``max-parallelism``;
    * no existing count: suggested; an existing count: kept, unless required > existing *
      ``rescale-load-factor`` and suggested > existing (then suggested, with a rescale)."""
    if existing is None and opts.default_bucket_num is not None:
        return BucketDecision(opts.default_bucket_num)
    if opts.target_rows is not None:
        value, target = staged.rows, opts.target_rows
    else:
        value, target = staged.nbytes, opts.target_size
    required = max(1, -(-value // target) if value > 0 else 0)
    suggested = _power_of_two_at_least(required, opts.max_parallelism)
    if existing is None:
        return BucketDecision(suggested)
    if required > existing * opts.rescale_load_factor and suggested > existing:
        return BucketDecision(suggested, requires_rescale=True)
    return BucketDecision(existing)


@dataclass(frozen=True)
class BucketMetadata:
    """What the latest snapshot records per partition (serialized partition row): the real bucket
    count (``totalBuckets`` of its real-bucket files)."""

    bucket_counts: Mapping[bytes, int]
    # the snapshot the counts are read from (None: unknown), the base a rescale reads; not part
    # of what the metadata says
    snapshot_id: int | None = field(default=None, compare=False)


def bucket_metadata(store: FileStore) -> BucketMetadata:
    """The `BucketMetadata` of the latest snapshot; reads manifests only."""
    counts: dict[bytes, int] = {}
    snap = store.snapshot_manager.latest()
    if snap is not None:
        for e in store.file_store_scan(Op.COMPACT).live_entries(snap):
            if e.bucket >= 0:  # a count of 0 or less raises (record_bucket_count)
                record_bucket_count(store, counts, e)
    return BucketMetadata(counts, None if snap is None else snap.id)


def plan_batch_buckets(
    store: FileStore,
    staged: Mapping[bytes, StagedPartition],
    metadata: BucketMetadata | None = None,
    *,
    options: BatchBucketOptions | None = None,
    overwrite: bool = False,
    rescale: bool = True,
    commit_user: str | None = None,
) -> dict[bytes, int]:
    """The bucket count each staged partition (serialized partition row) is written with
    (`decide_bucket_num`; the module doc). ``overwrite``: the partitions are replaced, so their
    recorded counts do not bind (HEAD's ``SparkPostponeStagedCommitter``: "Overwrite removes the
    previous partition contents, so its bucket layout must not constrain the replacement data").

    A partition HEAD would rescale is rescaled now, before anything of the batch is written
    (`lake_assets.ops.rescale.rescale_partitions` as ``commit_user``, from the snapshot
    ``metadata`` was read on: one OVERWRITE snapshot for all of them), and gets the new count;
    with ``rescale=False`` it raises `RescaleRefusedError` instead (nothing changed).
    ``metadata`` defaults to `bucket_metadata` of the latest snapshot, ``options`` to the
    table's."""
    opts = BatchBucketOptions.of(store) if options is None else options
    meta = BucketMetadata({}) if overwrite else (bucket_metadata(store) if metadata is None else metadata)
    known = meta.bucket_counts
    decisions = {p: decide_bucket_num(s, known.get(p), opts) for p, s in staged.items()}
    rescales = {p: (known[p], d.buckets, s) for p, s in staged.items() if (d := decisions[p]).requires_rescale}
    if rescales and not rescale:
        refuse_rescales(store, rescales, opts)
    if rescales:
        from lake_assets.ops.rescale import rescale_partitions  # it writes through this module's users

        base = None if meta.snapshot_id is None else store.snapshot_manager.snapshot(meta.snapshot_id)
        rescale_partitions(store, {p: new for p, (_, new, _) in rescales.items()}, base=base,
                           commit_user=commit_user)
    return {p: d.buckets for p, d in decisions.items()}


def refuse_rescales(store: FileStore, rescales: Mapping[bytes, tuple[int, int, StagedPartition]],
                    opts: BatchBucketOptions) -> None:
    """Raise `RescaleRefusedError` naming every partition (existing count, count HEAD would
    rescale to, the batch's rows and bytes) of ``rescales``; nothing when it is empty."""
    if not rescales:
        return
    scan = store.file_store_scan(Op.COMPACT)
    keys = list(store.schema.partition_keys)
    what = "; ".join(
        f"partition {dict(zip(keys, scan.partition_values(p), strict=True))}: {old} buckets, the batch "
        f"({s.rows} rows, {s.nbytes} bytes) needs {new}" for p, (old, new, s) in rescales.items())
    raise RescaleRefusedError(
        f"Cannot write to {store.name} into real buckets: {what}, more than {RESCALE_LOAD_FACTOR_KEY} = "
        f"{opts.rescale_load_factor} times the existing count, so Paimon would first rescale the partition's "
        "real buckets, and this plan was made without rescaling; rescale the partition "
        "(lake_assets.ops.rescale.rescale_partitions), raise that option, or write with "
        f"{BATCH_WRITE_FIXED_BUCKET_KEY} = false (postponed, then compacted)"
    )


def batch_write_fixed_bucket(store: FileStore, dynamic: Mapping[str, str] | None = None) -> bool:
    """``postpone.batch-write-fixed-bucket`` of ``store`` as a write with ``dynamic`` options sees
    it (default true, as Paimon's)."""
    return BatchBucketOptions.of(store, dynamic).fixed_bucket


def fixed_bucket_batch_writes(store: FileStore, dynamic: Mapping[str, str] | None = None) -> bool:
    """Whether a batch write of ``store`` (Spark's ``df.write``, `write_table`, the ingest job)
    goes into real buckets: a postpone-bucket table whose ``postpone.batch-write-fixed-bucket``,
    as the write sees it (the table's, overridden by the write's ``dynamic`` options), is true
    or unset (Paimon's default, as its Flink and Spark batch sinks do). Streaming sinks and the
    core's `write_arrow` postpone whatever it says (Paimon's streaming sinks and pypaimon's
    default batch writer do too)."""
    if store.schema.core_options.bucket != POSTPONE_BUCKET or not store.schema.primary_keys:
        return False
    return batch_write_fixed_bucket(store, dynamic)
