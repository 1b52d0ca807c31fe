"""Spark batch writes of postpone-bucket tables into real buckets (``postpone.batch-write-fixed-bucket``).

Paimon's Spark and Flink batch sinks write a postpone table (``bucket = -2``) as a fixed-bucket
table whose count is per partition (`lake_assets.ops.postpone_fixed_bucket`). Here:

* the driver plans the counts (`plan_dataframe`, with the write's options: `session_write_options`
  over the table's, as Paimon's connector): the partitions' recorded counts (none for an
  overwrite) and ``postpone.default-bucket-num`` need no look at the data; only when a partition's
  count must be estimated does one aggregate over the input measure each partition's rows and
  bytes for `plan_batch_buckets` (Java's Spark writer stages the rows and measures the staged
  files); a measured partition with a recorded count that the batch outgrows is rescaled by the
  driver before the write job, as HEAD (`lake_assets.ops.rescale`, an OVERWRITE snapshot), and
  written into the new count. Partitions written into their recorded counts unmeasured (a
  default count set, or ``df.write`` of unrouted input) are measured at the commit, on what was
  written: a partition HEAD would rescale is rescaled there and the written rows replayed into
  the new count (`lake_assets.ops.rescale.rescale_written`);
* `route_by_planned_bucket` gives each row its bucket under its partition's count (the JVM
  bucket expression with a per-row count column, else a scalar Arrow UDF) and repartitions by
  (partition, bucket), so each bucket has one writer, as for fixed-bucket tables;
* the plan travels to the writer tasks as the ``postpone-bucket-plan`` option (`BucketPlan`);
  rows of a partition it lacks (``df.write`` of unrouted input, which no driver step measured)
  are staged in uncommitted bucket-postpone files and written into real buckets at the commit
  (`lake_assets.ops.postpone_fixed_bucket.resolve_staged`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import functions as F
from pyspark.sql.functions import arrow_udf
from pyspark.sql.types import IntegerType

from lake_assets.errors import InvalidArgumentError, OptionError
from lake_assets.lsm.bucket import assign_buckets
from lake_assets.ops import postpone_size
from lake_assets.ops.conform import conform
from lake_assets.ops.postpone_batch import (
    BATCH_OPTION_KEYS,
    BatchBucketOptions,
    StagedPartition,
    bucket_metadata,
    plan_batch_buckets,
)
from lake_assets.spark.bucket_column import bucket_column
from lake_assets.spark.schema import BUCKET_COLUMN
from lake_assets.spec.arrow_types import to_arrow
from lake_assets.spec.binary_row import deserialize_row, serialize_row
from lake_assets.spec.data_types import (
    BigIntType,
    BinaryType,
    BooleanType,
    CharType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    LocalZonedTimestampType,
    SmallIntType,
    TimestampType,
    TimeType,
    TinyIntType,
    VarBinaryType,
    VarCharType,
)
from lake_assets.table import Table

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

PLAN_OPTION = "postpone-bucket-plan"
# Paimon's Spark connector takes every SQL conf key with this prefix as a dynamic table option
# (OptionUtils.scala:39, mergeSQLConf), below the write's own options
SPARK_CONF_PREFIX = "spark.paimon."
# The catalog segment of table-scoped conf keys, spark.paimon.<catalog>.<db>.<table>.<key>
# (OptionUtils.mergeSQLConfWithIdentifier): our tables are written through the "lake" source
CATALOG_NAME = "lake"

# Raw bytes per value of fixed-width types: `plan_dataframe` sums them per partition and scales the
# sums by what a sample encodes to as postpone files (`postpone_bytes_per_value_byte`)
_FIXED_WIDTH: dict[type[DataType], int] = {
    BooleanType: 1, TinyIntType: 1, SmallIntType: 2, IntType: 4, DateType: 4, TimeType: 4, FloatType: 4,
    BigIntType: 8, DoubleType: 8, TimestampType: 8, LocalZonedTimestampType: 8, DecimalType: 16,
}
_BYTES = (CharType, VarCharType, BinaryType, VarBinaryType)


@dataclass(frozen=True)
class BucketPlan:
    """The bucket count per serialized partition, and the count of partitions not listed
    (``postpone.default-bucket-num``; None: such rows are staged and planned at the commit).
    ``measured``: every listed count was decided on the batch's measured rows and bytes, so no
    partition needs the commit's rescale check (`lake_assets.ops.rescale.rescale_written`)."""

    counts: dict[bytes, int] = field(default_factory=dict)
    default: int | None = None
    measured: bool = False

    def to_json(self) -> str:
        return json.dumps({"counts": {k.hex(): v for k, v in self.counts.items()}, "default": self.default,
                           "measured": self.measured})

    @staticmethod
    def from_json(text: str) -> BucketPlan:
        try:
            raw = json.loads(text)
            counts = {bytes.fromhex(k): int(v) for k, v in raw["counts"].items()}
            default = raw.get("default")
            plan = BucketPlan(counts, None if default is None else int(default), raw.get("measured") is True)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise OptionError(f"Option '{PLAN_OPTION}' is not a bucket plan: {exc}") from None
        if any(n <= 0 for n in counts.values()) or (plan.default is not None and plan.default <= 0):
            raise OptionError(f"Option '{PLAN_OPTION}' holds a bucket count that is not positive")
        return plan


def write_options(options: Mapping[str, str]) -> dict[str, str]:
    """The postpone options among a write's options (`BATCH_OPTION_KEYS`, matched in lower case
    as Spark hands them to a data source): the dynamic options of `BatchBucketOptions.of`."""
    lowered = {str(k).strip().lower(): str(v) for k, v in options.items()}
    return {k: lowered[k] for k in BATCH_OPTION_KEYS if k in lowered}


def session_write_options(spark: SparkSession, options: Mapping[str, str] | None = None,
                          identifier: str | None = None) -> dict[str, str]:
    """The dynamic postpone options of a write from the driver to table ``identifier``
    (``db.table``): the session's ``spark.paimon.*`` conf (`conf_write_options`), overridden by
    the write's own ``options`` (Paimon's order: the write's options win,
    ``OptionUtils.mergeSQLConf``). A Python data source cannot see the session's conf, so
    `write_table` passes these on as write options. An explicit option that is not one of
    `BATCH_OPTION_KEYS` raises `InvalidArgumentError` (it would otherwise be ignored)."""
    unknown = sorted(k for k in (options or {}) if str(k).strip().lower() not in BATCH_OPTION_KEYS)
    if unknown:
        raise InvalidArgumentError(f"options: {unknown} are not write options of a postpone table; "
                                   f"the options a write may override are {list(BATCH_OPTION_KEYS)}")
    conf = {str(k): str(v) for k, v in spark.conf.getAll.items() if str(k).startswith(SPARK_CONF_PREFIX)}
    return {**conf_write_options(conf, identifier), **write_options(options or {})}


def conf_write_options(conf: Mapping[str, str], identifier: str | None = None) -> dict[str, str]:
    """The `BATCH_OPTION_KEYS` a session's ``spark.paimon.*`` ``conf`` sets for a write to table
    ``identifier`` (``db.table``), as Paimon HEAD's ``OptionUtils.mergeSQLConfWithIdentifier``
    (``OptionsUtils.convertToDynamicTableProperties``) reads them:

    * ``spark.paimon.<key>`` sets ``key`` for every table;
    * ``spark.paimon.<catalog>.<db>.<table>.<key>`` sets it for one table, over the global form;
      each of the three may be ``*``. Our data source has no catalog: the catalog segment is
      `CATALOG_NAME` (``lake``, the source's name) or ``*``. Where two table-scoped keys match (a
      name and a ``*``), HEAD takes whichever its hash map yields last; here the more specific one
      wins (catalog, then database, then table named over ``*``).

    Keys are matched in lower case, as Paimon names databases and tables."""
    db, _, name = (identifier or "").lower().partition(".")
    global_opts: dict[str, str] = {}
    scoped: dict[str, tuple[tuple[bool, bool, bool], str]] = {}
    for raw, value in conf.items():
        if not raw.startswith(SPARK_CONF_PREFIX):
            continue
        rest = raw[len(SPARK_CONF_PREFIX):]
        parts = rest.split(".", 3)
        if (identifier and len(parts) == 4 and parts[0].lower() in (CATALOG_NAME, "*")
                and parts[1].lower() in (db, "*") and parts[2].lower() in (name, "*")):
            key = parts[3].strip().lower()
            rank = (parts[0] != "*", parts[1] != "*", parts[2] != "*")
            if key not in scoped or rank > scoped[key][0]:
                scoped[key] = (rank, value)
        else:
            global_opts[rest.strip().lower()] = value
    global_opts.update({k: v for k, (_, v) in scoped.items()})
    return {k: global_opts[k] for k in BATCH_OPTION_KEYS if k in global_opts}


def base_plan(table: Table, options: BatchBucketOptions | None = None, *, overwrite: bool = False) -> BucketPlan:
    """What the table alone decides: the recorded count of every partition with real buckets
    (none for an overwrite, which replaces them: HEAD's SparkPostponeStagedCommitter), and
    ``postpone.default-bucket-num`` for the others when it is set."""
    opts = BatchBucketOptions.of(table.store) if options is None else options
    counts = {} if overwrite else dict(bucket_metadata(table.store).bucket_counts)
    return BucketPlan(counts, opts.default_bucket_num)


def _value_bytes(column: Column, t: DataType) -> Column:
    width = _FIXED_WIDTH.get(type(t))
    if width is not None:
        return F.lit(width)
    if isinstance(t, _BYTES):
        # the bytes themselves and a 4-byte offset; a null string costs its offset only
        value = column.cast("string" if isinstance(t, CharType | VarCharType) else "binary")
        return F.coalesce(F.octet_length(value), F.lit(0)) + F.lit(4)
    # nested values: their JSON text is a close enough measure of their size
    return F.coalesce(F.octet_length(F.to_json(F.struct(column))), F.lit(0))


def _row_bytes(table: Table) -> Column:
    total: Column = F.lit(0).cast("bigint")
    for f in table.schema.fields:
        total = total + _value_bytes(F.col(f.name), f.type).cast("bigint")
    return total


def postpone_bytes_per_value_byte(df: DataFrame, table: Table) -> float:
    """How many bytes of the table's postpone files (HEAD's staged size, `postpone_file_bytes`) one
    byte of `_row_bytes` is: measured on the first `postpone_size.SAMPLE_ROWS` rows of ``df``,
    encoded as the postpone writer encodes them (codec included). The aggregate over the whole
    input sums the raw value widths per partition; this scales them to stored bytes."""
    names = list(table.schema.field_names)
    sample = df.select(*[F.col(n) for n in names], _row_bytes(table).alias("__width")) \
        .limit(postpone_size.SAMPLE_ROWS).toArrow()
    width = int(pc.sum(sample.column("__width")).as_py() or 0)
    if width == 0:
        return 1.0
    data = conform(sample.select(names), table.schema, table.store.name)
    return postpone_size.postpone_file_bytes(table.store, data) / width


def plan_dataframe(df: DataFrame, table: Table, options: BatchBucketOptions | None = None, *,
                   overwrite: bool = False) -> BucketPlan:
    """The bucket plan of writing ``df`` into postpone table ``table`` (see the module doc) with
    the write's ``options``; ``overwrite``: the partitions written are replaced."""
    store = table.store
    opts = BatchBucketOptions.of(store) if options is None else options
    plan = base_plan(table, opts, overwrite=overwrite)
    pkeys = list(table.partition_keys)
    if plan.default is not None or (not pkeys and plan.counts):
        # nothing to estimate: no statistics stage (the commit measures what was written into
        # recorded counts and rescales there where HEAD would, `rescale_written`)
        return plan
    by_rows = opts.target_rows is not None
    stats = df.groupBy(*[F.col(k) for k in pkeys]).agg(
        F.count(F.lit(1)).alias("__rows"),
        (F.lit(0).cast("bigint") if by_rows else F.sum(_row_bytes(table))).alias("__bytes"))
    result = stats.toArrow()
    types = table.schema.types(pkeys)
    columns = [pc.cast(result.column(k), to_arrow(t)).to_pylist() for k, t in zip(pkeys, types, strict=True)]
    rows = result.column("__rows").to_pylist()
    ratio = 0.0 if by_rows else postpone_bytes_per_value_byte(df, table)
    nbytes = [int(-(-int(b or 0) * ratio // 1)) for b in result.column("__bytes").to_pylist()]
    staged = {serialize_row([c[i] for c in columns], types): StagedPartition(int(rows[i]), nbytes[i])
              for i in range(result.num_rows)}
    planned = plan_batch_buckets(store, staged, bucket_metadata(store), options=opts, overwrite=overwrite)
    return BucketPlan({**plan.counts, **planned}, None, measured=True)


def _count_column(table: Table, plan: BucketPlan) -> Column:
    """Each row's bucket count: its partition's, else the plan's default (null: none planned)."""
    pkeys = list(table.partition_keys)
    types = table.schema.types(pkeys)
    default = F.lit(plan.default).cast("int")
    if not pkeys:
        return F.lit(plan.counts.get(serialize_row([], []), plan.default)).cast("int")
    # one flat CASE WHEN (a backfill plans hundreds of partitions; nested ones would grow deep)
    case: Column | None = None
    for partition, n in plan.counts.items():
        values = deserialize_row(partition, types)
        match: Column | None = None
        for k, t, v in zip(pkeys, types, values, strict=True):
            term = F.col(k).cast(_spark_type(t)).eqNullSafe(F.lit(v).cast(_spark_type(t)))
            match = term if match is None else match & term
        assert match is not None
        case = F.when(match, F.lit(n)) if case is None else case.when(match, F.lit(n))
    return default if case is None else case.otherwise(default).cast("int")


def _spark_type(t: DataType) -> str:
    from pyspark.sql.pandas.types import from_arrow_type

    return str(from_arrow_type(to_arrow(t)).simpleString())


class _CountedBucketAssigner:
    """The bucket of key arrays under each row's count, as a scalar Arrow UDF (the last argument
    is the count; a null count gives a null bucket)."""

    def __init__(self, types: list[DataType], function: str = "default") -> None:
        self.types = types
        self.function = function  # the table's bucket-function.type

    def bucket(self, *columns: pa.Array) -> pa.Array:
        *keys, counts = columns
        cols = [pc.cast(k, to_arrow(t)) for k, t in zip(keys, self.types, strict=True)]
        n = np.asarray(counts.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
        out = np.zeros(len(n), dtype=np.int32)
        for count in np.unique(n[n > 0]):
            rows = np.flatnonzero(n == count)
            out[rows] = assign_buckets([c.take(pa.array(rows)) for c in cols], self.types, int(count),
                                       self.function)
        return pa.array(out, type=pa.int32(), mask=n <= 0)


def route_by_planned_bucket(df: DataFrame, table: Table, plan: BucketPlan,
                            num_partitions: int | None = None) -> DataFrame:
    """``df`` with each row's bucket under its partition's planned count, repartitioned so that
    each (partition, bucket) is in one task (rows of unplanned partitions: a null bucket)."""
    keys = list(table.schema.bucket_keys)
    types = table.schema.types(keys)
    count = _count_column(table, plan)
    function = table.schema.core_options.bucket_function
    bucket = bucket_column([F.col(k) for k in keys], types, count, function)
    if bucket is None:
        assigner = _CountedBucketAssigner(types, function)
        # as in shuffle.py: pyspark infers the UDF kind from the hints at run time
        bucket_of = arrow_udf(assigner.bucket, returnType=IntegerType())  # type: ignore[call-overload]
        bucket = bucket_of(*[F.col(k) for k in keys], count)
    routed = df.withColumn(BUCKET_COLUMN, bucket)
    cols = [*table.schema.partition_keys, BUCKET_COLUMN]
    return routed.repartition(num_partitions, *cols) if num_partitions else routed.repartition(*cols)
