"""Routing rows so that each bucket of a primary-key table has one writer, and `write_table`.

Rows get their bucket (Paimon's hash) in a helper column and are repartitioned by (partition
keys, bucket): every (partition, bucket) then lands in exactly one Spark task. The writer drops
the helper column.

The bucket is computed in the JVM when Spark expressions can spell the bucket key's BinaryRow
(`bucket_column`: integer, boolean, date, compact decimal, string and binary keys): no Python
round trip. Other key types use a scalar Arrow UDF of the bucket-key columns: only those columns
travel to Python and one int column comes back, while the other columns stay in the JVM. (A
``mapInArrow`` over whole rows sent every column through Python and back, which cost about as
much as the write.)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import functions as F
from pyspark.sql.functions import arrow_udf
from pyspark.sql.types import IntegerType

from lake_assets import arguments as args
from lake_assets.catalog import Catalog
from lake_assets.errors import InvalidArgumentError, OptionError
from lake_assets.lsm.bucket import assign_buckets
from lake_assets.ops.postpone_batch import BatchBucketOptions, fixed_bucket_batch_writes
from lake_assets.ops.postpone_table import is_postpone_table
from lake_assets.spark.bucket_column import bucket_column
from lake_assets.spark.postpone_routing import (
    PLAN_OPTION,
    plan_dataframe,
    route_by_planned_bucket,
    session_write_options,
)
from lake_assets.spark.schema import BUCKET_COLUMN
from lake_assets.spark.sink_distribution import sink_strategy
from lake_assets.spark.source_options import STORAGE_PREFIX, storage_option_text, with_branch
from lake_assets.spec.arrow_types import to_arrow
from lake_assets.spec.data_types import DataType
from lake_assets.table import Table
from lake_assets.table_support import POSTPONE_BUCKET, Op

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

PARTITION_OVERWRITE_CONF = "spark.sql.sources.partitionOverwriteMode"


class _BucketAssigner:
    """The bucket of key arrays, as a scalar Arrow UDF (`bucket` carries the type hints Spark reads)."""

    def __init__(self, types: list[DataType], num_buckets: int, function: str = "default") -> None:
        self.types = types
        self.num_buckets = num_buckets
        self.function = function  # the table's bucket-function.type

    def bucket(self, *keys: pa.Array) -> pa.Array:
        # hash the key as the table types it (an int column hashes differently from a bigint)
        cols = [pc.cast(k, to_arrow(t)) for k, t in zip(keys, self.types, strict=True)]
        return pa.array(assign_buckets(cols, self.types, self.num_buckets, self.function), type=pa.int32())


def cluster_by_partition(df: DataFrame, table: Table) -> DataFrame:
    """``df`` hash-partitioned by the table's partition keys when its ``partition.sink-strategy``
    is not ``none`` (a partitioned append or postpone table), so each task writes as few
    partitions as possible: Paimon's Spark write requirement (``PaimonWriteRequirement``: a
    clustered distribution by the partition fields for any strategy but ``none``; Flink's
    ``partition_dynamic`` balancing is Flink's own). Else ``df`` unchanged."""
    keys = list(table.schema.partition_keys)
    if not keys or sink_strategy(table.store) == "none":
        return df
    return df.repartition(*[F.col(k) for k in keys])


def repartition_by_bucket(
    df: DataFrame,
    table: Table | str,
    *,
    warehouse: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
    num_partitions: int | None = None,
) -> DataFrame:
    """``df`` with a bucket column, repartitioned so that each (partition, bucket) is in one task.

    Works on batch and streaming DataFrames. ``table`` is a `Table` or an identifier (then pass
    ``warehouse``). Append tables need no routing and are returned unchanged. Without
    ``num_partitions``, a partitioned table's rows are hash-partitioned into
    ``spark.sql.shuffle.partitions``, which adaptive execution coalesces for small inputs (a
    small commit then runs one writer task, not one per shuffle partition; coalescing joins whole
    shuffle partitions, so a bucket still has one writer); an unpartitioned table uses at most
    one partition per bucket. A dynamic-bucket table (``bucket = -1``) has one writer: its rows go
    to one task, whose writer assigns their buckets (``num_partitions`` does not apply).
    """
    args.integer("num_partitions", num_partitions, minimum=1)
    args.mapping("storage_options", storage_options)
    if isinstance(table, str):
        if warehouse is None:
            raise OptionError("repartition_by_bucket needs warehouse= when the table is given by name")
        table = Catalog(warehouse, **dict(storage_options or {})).get_table(table)
    schema = table.schema
    if (not schema.primary_keys and schema.core_options.bucket == -1) or schema.core_options.bucket == POSTPONE_BUCKET:
        # unaware-bucket append tables and postpone bucket mode: every task writes its own files, no routing (a
        # batch write into real buckets is routed by write_table, spark/postpone_routing.py),
        # unless partition.sink-strategy clusters the rows by partition
        return cluster_by_partition(df, table)
    if schema.core_options.bucket == -1:
        # dynamic bucket mode: one assigner decides every key's bucket from the table's hash index,
        # so all rows go to one task, whose writer runs it (Paimon's one writer per table)
        return df.repartition(1)
    table.store.require(Op.WRITE)  # e.g. a bucket key the table's bucket function cannot place
    keys = list(schema.bucket_keys)
    types = schema.types(keys)
    function = schema.core_options.bucket_function
    bucket = bucket_column([F.col(k) for k in keys], types, schema.core_options.bucket, function)
    if bucket is None:  # a key type the JVM expression cannot spell: hash in Python
        assigner = _BucketAssigner(types, schema.core_options.bucket, function)
        # pyspark's stubs know only the forms with functionType; at run time it is inferred from the
        # hints (passing it warns), so the typed form is not spelled out.
        bucket_of = arrow_udf(assigner.bucket, returnType=IntegerType())  # type: ignore[call-overload]
        bucket = bucket_of(*[F.col(k) for k in keys])
    routed = df.withColumn(BUCKET_COLUMN, bucket)
    if num_partitions is None and not schema.partition_keys:
        shuffle = int(df.sparkSession.conf.get("spark.sql.shuffle.partitions") or "200")
        num_partitions = min(shuffle, schema.core_options.bucket)
    if num_partitions is None:
        return routed.repartition(*schema.partition_keys, BUCKET_COLUMN)
    return routed.repartition(num_partitions, *schema.partition_keys, BUCKET_COLUMN)


def single_task_input(df: DataFrame) -> bool:
    """Whether ``df`` is known, without running anything, to be computed by one Spark task.

    Then every bucket already has one writer and routing would only add a shuffle job (about
    0.2 s, most of a small commit). Only plans without an exchange or subquery are asked for
    their partition count: for those, building the RDD plans file splits but runs no job.
    """
    if df.isStreaming:
        return False
    try:
        execution = df._jdf.queryExecution()  # classic PySpark; Spark Connect has no _jdf
        plan = execution.executedPlan().toString()
        if any(word in plan for word in ("Exchange", "Subquery", "AdaptiveSparkPlan")):
            return False
        return int(execution.toRdd().getNumPartitions()) == 1
    except AttributeError:
        return False


def write_table(
    df: DataFrame,
    warehouse: str,
    identifier: str,
    *,
    mode: str = "append",
    storage_options: Mapping[str, Any] | None = None,
    overwrite_partitions: Mapping[str, Any] | None = None,
    dynamic: bool | None = None,
    partition_overwrite_mode: str | None = None,
    num_partitions: int | None = None,
    options: Mapping[str, str] | None = None,
    branch: str | None = None,
) -> None:
    """Write ``df`` into a table in one snapshot, routing each bucket of a primary-key table to one task.

    An input computed by a single task (a small file, a local DataFrame) is written as it is.
    ``branch`` (or an identifier ``db.t$branch_<name>``) writes to that branch's own snapshots,
    for the tables the core writes on a branch (`lake_assets.store.branch_table`).

    ``mode`` is "append" or "overwrite". An overwrite replaces, in this order of precedence:
    the partitions matching ``overwrite_partitions`` (e.g. ``{"dt": "2024-01-01"}``; also when
    ``df`` is empty; rows outside fail the write), the partitions ``df`` has rows in when
    ``dynamic`` is true, or the whole table. ``dynamic=None`` follows ``partition_overwrite_mode``,
    else the session's ``spark.sql.sources.partitionOverwriteMode``.

    ``options`` are the write's options, as ``df.write.option``: the postpone options
    (``postpone.batch-write-fixed-bucket`` and the count options) override the table's for this
    write, over the session's ``spark.paimon.<catalog>.<db>.<table>.<key>`` conf (catalog ``lake``
    or ``*``), over its ``spark.paimon.<key>`` conf, as in Paimon's Spark connector.
    """
    if mode not in ("append", "overwrite"):
        raise OptionError(f"write_table mode must be 'append' or 'overwrite', got {mode!r}")
    # Checked before Spark runs anything: "yes" would be a true `dynamic`, a str a bad mapping.
    args.text("warehouse", warehouse, optional=False)
    args.mapping("storage_options", storage_options)
    args.mapping("overwrite_partitions", overwrite_partitions)
    if dynamic is not None:
        args.flag("dynamic", dynamic)
    if partition_overwrite_mode is not None:
        args.one_of("partition_overwrite_mode", str(partition_overwrite_mode).strip().lower()
                    if isinstance(partition_overwrite_mode, str) else partition_overwrite_mode,
                    ("static", "dynamic"))
    args.integer("num_partitions", num_partitions, minimum=1)
    args.mapping("options", options)
    if mode == "append" and (overwrite_partitions or dynamic):
        raise OptionError("overwrite_partitions and dynamic need mode='overwrite'")
    if overwrite_partitions and dynamic:
        raise OptionError("Pass either overwrite_partitions (static) or dynamic=True, not both")
    storage = dict(storage_options or {})
    identifier = with_branch(identifier, branch)
    table = Catalog(warehouse, **storage).get_table(identifier)
    # refused tables fail here, before Spark plans or runs a job (a branch: what the core refuses on it)
    table.store.require(Op.WRITE)
    # a postpone table's batch write goes into real buckets of planned counts (postpone_routing)
    postpone_options: dict[str, str] = {}
    if is_postpone_table(table.store):
        postpone_options = session_write_options(df.sparkSession, options, table.name)
    elif options:
        raise InvalidArgumentError(f"options {sorted(options)}: {table.name} is not a postpone-bucket table "
                                   "(bucket = -2), the only tables whose writes take options")
    plan = None
    if fixed_bucket_batch_writes(table.store, postpone_options):
        plan = plan_dataframe(df, table, BatchBucketOptions.of(table.store, postpone_options),
                              overwrite=mode == "overwrite")
    hashed = bool(table.primary_keys) or table.schema.core_options.bucket > 0  # fixed-bucket append too
    if num_partitions is None and hashed and single_task_input(df):
        routed = df  # one task writes every bucket (an append bucket in input order): nothing to route
    elif plan is not None:
        routed = route_by_planned_bucket(df, table, plan, num_partitions)
    else:
        routed = repartition_by_bucket(df, table, num_partitions=num_partitions)
    writer = routed.write.format("lake").mode(mode).option("warehouse", warehouse)
    if plan is not None:
        writer = writer.option(PLAN_OPTION, plan.to_json())
    for k, v in postpone_options.items():
        writer = writer.option(k, v)
    for k, v in storage.items():
        writer = writer.option(STORAGE_PREFIX + k, storage_option_text(v))
    if mode == "overwrite":
        if overwrite_partitions:
            # values as text (dates, decimals): the writer parses them as the keys' types
            writer = writer.option("overwrite-partition", json.dumps(dict(overwrite_partitions), default=str))
        else:
            if dynamic is None:
                conf = partition_overwrite_mode or df.sparkSession.conf.get(PARTITION_OVERWRITE_CONF) or "static"
                dynamic = conf.strip().lower() == "dynamic"
            writer = writer.option("partitionOverwriteMode", "dynamic" if dynamic else "static")
    writer.save(identifier)
