"""The native write: Spark's own Parquet writer writes a primary-key table's data files, the driver
commits them (issue 17 §3).

`write_table` sends every row through a Python worker (Arrow batches, the core's pyarrow writer);
`write_table_native` keeps the rows in the JVM. The Spark plan, with one shuffle:

1. the input's columns in the table's order; NOT NULL columns checked in the JVM (a null fails
   the write naming the column, as the core's ``conform`` does) and declared non-nullable, so
   Spark writes them ``required`` as Java does;
2. the input order (``monotonically_increasing_id``, taken before the shuffle) and the bucket
   (Paimon's hash, `bucket_column`: in the JVM for most key types); an append's row of a
   partition whose files keep an older bucket count fails the job here, before any file is
   written, with the core writer's refusal (`native_buckets`);
3. a shuffle by (partition, bucket): each (partition, bucket) in one task;
4. one row per primary key, the last by input order (``row_number`` over the key, newest
   first): what a ``deduplicate`` writer keeps of a key written twice in one batch. The window's
   sort, by (partition, bucket, key), is also the order Paimon's level-0 files have and the
   order Spark's ``partitionBy`` writer needs - no second sort;
5. the file layout (`lake_assets.formats.file_layout`): ``_KEY_<k>``, ``_SEQUENCE_NUMBER``,
   ``_VALUE_KIND`` (+I), the table's columns, with Parquet field ids; sequence numbers start
   above the highest one the table holds and increase along each task's rows;
6. ``partitionBy`` copies of the partition columns and the bucket (Spark drops partition
   columns from files, Paimon keeps them) into a staging directory inside the table.

The driver then moves each file to its bucket (`native_files`) and commits the files as one
APPEND or OVERWRITE snapshot through the core's committer: an unknown outcome is retried with the
same commit user and identifier (the committer looks before it acts) and otherwise raises
`CommitStateUnknownError` with every file left in place; a write that failed before its commit
removes its files through directories opened one at a time below the table, refusing every link
out of it (a directory swapped for such a link meanwhile: nothing behind it is removed). The
staging directory is removed in any case (a crashed driver leaves it to orphan removal, which
walks the whole table directory).

Only tables `native_eligibility.native_refusals` finds nothing against are written natively;
the others (and inputs whose columns are not already of the table's types) go through
`write_table`, unchanged. Warehouses on a local file system only: the move is a rename.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lake_assets import arguments as args
from lake_assets.catalog import Catalog
from lake_assets.errors import CommitStateUnknownError, OptionError, UnsupportedFeatureError
from lake_assets.formats.file_layout import (
    KEY_FIELD_ID_START,
    KEY_PREFIX,
    SEQUENCE_FIELD_ID,
    SEQUENCE_NUMBER,
    VALUE_KIND,
    VALUE_KIND_FIELD_ID,
)
from lake_assets.io.local import LocalFileIO
from lake_assets.io.nofollow_dirs import unlink_below
from lake_assets.ops.commit import Overwrite
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.ops.mark_done import mark_done_after_commit
from lake_assets.ops.overwrite import check_inside_partition, dynamic_overwrite
from lake_assets.ops.overwrite import overwrite_spec as partition_overwrite
from lake_assets.spark.native_buckets import (
    check_messages,
    guarded_bucket,
    join_refusals,
    refusal_in,
    stale_partitions,
)
from lake_assets.spark.native_eligibility import SPARK_CODECS, native_refusals
from lake_assets.spark.native_files import (
    BUCKET_DIR_COLUMN,
    PARTITION_COPY_PREFIX,
    move_into_table,
    staged_files,
)
from lake_assets.spark.native_sequences import check_sequence_bases, plan_write_base
from lake_assets.spark.shuffle import PARTITION_OVERWRITE_CONF, write_table
from lake_assets.spark.source_options import with_branch
from lake_assets.spark.write_commit import commit_with_retry
from lake_assets.spec.snapshot import BATCH_COMMIT_IDENTIFIER
from lake_assets.table import Table
from lake_assets.table_support import Op

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import DataType as SparkType

STAGING_PREFIX = "_spark-staging-"
_ORDER = "__lake_order"
_RANK = "__lake_rank"
_FIELD_ID = "parquet.field.id"  # Spark's column metadata key for the Parquet field id
# Session settings of the write: INT64 microsecond timestamps as Java writes them (Spark's default
# for TIMESTAMP is INT96), field ids on, the standard (non-legacy) Parquet layout.
_SESSION_CONF = {
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.parquet.fieldId.write.enabled": "true",
    "spark.sql.parquet.writeLegacyFormat": "false",
}


@dataclass(frozen=True)
class NativeWriteResult:
    """How `write_table_native` wrote: natively (with the new snapshots) or through `write_table`
    (with the reasons the native path refused)."""

    native: bool
    refusals: tuple[str, ...] = ()
    snapshot_ids: tuple[int, ...] = ()


def _col(name: str) -> Column:
    from pyspark.sql import functions as F

    return F.col("`" + name.replace("`", "``") + "`")


def _filler(dtype: SparkType) -> Column:
    """A non-null literal of ``dtype`` (only ever used to make a checked column non-nullable)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType, DateType, StringType, TimestampNTZType, TimestampType

    if isinstance(dtype, StringType):
        return F.lit("")
    if isinstance(dtype, BinaryType):
        return F.lit("").cast("binary")
    if isinstance(dtype, (DateType, TimestampType, TimestampNTZType)):
        return F.lit("1970-01-01").cast(dtype)
    return F.lit(0).cast(dtype)


def _checked(df: DataFrame, table: Table, name: str) -> Column:
    """Column ``name`` of ``df``; when the table's column is NOT NULL, a null fails the write and
    the column is declared non-nullable (the coalesce's filler is never reached)."""
    from pyspark.sql import functions as F

    col = _col(name)
    field = table.schema.field(name)
    spark_field = df.schema[name]
    if field.type.nullable or not spark_field.nullable:
        return col.alias(name)
    role = "primary key " if name in table.schema.primary_keys else ""
    message = f"Cannot write to {table.name}: {role}column {name!r} is NOT NULL but an input row is null"
    checked = F.when(col.isNull(), F.raise_error(F.lit(message))).otherwise(col)
    return F.coalesce(checked, _filler(spark_field.dataType)).alias(name)


def _bucket(table: Table) -> Column:
    """Paimon's bucket of each row (in the JVM where `bucket_column` spells the key)."""
    from pyspark.sql.functions import arrow_udf
    from pyspark.sql.types import IntegerType

    from lake_assets.spark.bucket_column import bucket_column
    from lake_assets.spark.shuffle import _BucketAssigner

    schema = table.schema
    keys = list(schema.bucket_keys)
    types = schema.types(keys)
    function = schema.core_options.bucket_function
    column = bucket_column([_col(k) for k in keys], types, schema.core_options.bucket, function)
    if column is not None:
        return column
    assigner = _BucketAssigner(types, schema.core_options.bucket, function)
    bucket_of = arrow_udf(assigner.bucket, returnType=IntegerType())  # type: ignore[call-overload]
    return bucket_of(*[_col(k) for k in keys])


def native_frame(df: DataFrame, table: Table, base: int, num_partitions: int | None,
                 refused: Mapping[bytes, str] | None = None) -> DataFrame:
    """The rows of ``df`` as the table's level-0 files hold them, plus the ``partitionBy``
    columns (copies of the partition keys, the bucket); see the module docstring. A row of a
    partition in ``refused`` fails the job with its refusal before the shuffle (`native_buckets`)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    schema = table.schema
    conformed = df.select(*[_checked(df, table, f.name) for f in schema.fields])
    copies = [f"{PARTITION_COPY_PREFIX}{i}" for i in range(len(schema.partition_keys))]
    ordered = conformed.select(
        "*",
        F.monotonically_increasing_id().alias(_ORDER),  # input order: before the shuffle
        *[_col(k).alias(c) for k, c in zip(schema.partition_keys, copies, strict=True)],
    )
    bucket = _bucket(table)
    if refused:
        ordered = join_refusals(ordered, table, refused)
        bucket = guarded_bucket(bucket)
    routed = ordered.select(*[_col(c) for c in conformed.columns], _ORDER, *copies, bucket.alias(BUCKET_DIR_COLUMN))
    spark = df.sparkSession
    if num_partitions is None and not schema.partition_keys:
        num_partitions = min(int(spark.conf.get("spark.sql.shuffle.partitions") or "200"), schema.core_options.bucket)
    if num_partitions is None:
        slots = int(spark.conf.get("spark.sql.shuffle.partitions") or "200")  # AQE only coalesces below it
        routed = routed.repartition(*copies, BUCKET_DIR_COLUMN)
    else:
        slots = num_partitions
        routed = routed.repartition(num_partitions, *copies, BUCKET_DIR_COLUMN)
    newest_first = Window.partitionBy(
        *copies, BUCKET_DIR_COLUMN, *[_col(k) for k in schema.trimmed_primary_keys]
    ).orderBy(F.col(_ORDER).desc())
    deduped = routed.withColumn(_RANK, F.row_number().over(newest_first)).where(F.col(_RANK) == 1)
    # Each task numbers its rows (in file order) row * slots + task: unique across tasks, above
    # every existing number of the table, increasing within each file.
    task = F.spark_partition_id().cast("long")
    row = F.monotonically_increasing_id() - F.shiftleft(task, 33)
    sequence = F.lit(base) + row * F.lit(slots) + task
    keys = [_col(k).alias(KEY_PREFIX + k, metadata={_FIELD_ID: KEY_FIELD_ID_START + schema.field(k).id})
            for k in schema.trimmed_primary_keys]
    values = [_col(f.name).alias(f.name, metadata={_FIELD_ID: f.id}) for f in schema.fields]
    return deduped.select(
        *keys,
        sequence.alias(SEQUENCE_NUMBER, metadata={_FIELD_ID: SEQUENCE_FIELD_ID}),
        F.lit(0).cast("byte").alias(VALUE_KIND, metadata={_FIELD_ID: VALUE_KIND_FIELD_ID}),  # +I
        *values,
        *copies,
        BUCKET_DIR_COLUMN,
    )


@contextlib.contextmanager
def _session_conf(spark: SparkSession, conf: Mapping[str, str]) -> Iterator[None]:
    """Set session settings for the duration of the write, then restore them."""
    before = {k: spark.conf.get(k, None) for k in conf}
    for k, v in conf.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, old in before.items():
            if old is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, old)


def _spark_write(frame: DataFrame, table: Table, staging: str) -> None:
    opts = table.schema.core_options
    writer = (frame.write.mode("errorifexists")
              .partitionBy(*[c for c in frame.columns if c.startswith(PARTITION_COPY_PREFIX)], BUCKET_DIR_COLUMN)
              .option("compression", SPARK_CODECS[opts.file_compression])
              .option("parquet.compression.codec.zstd.level", str(opts.zstd_level))
              .option("mapreduce.fileoutputcommitter.marksuccessfuljobs", "false"))
    with _session_conf(frame.sparkSession, _SESSION_CONF):
        writer.parquet("file://" + os.path.abspath(staging))


def _overwrite(table: Table, messages: list[CommitMessage], mode: str, spec: Mapping[str, Any] | None,
               dynamic: bool) -> Overwrite | None:
    if mode != "overwrite":
        return None
    if spec:
        # values as text, parsed as the keys' types: as write_table's overwrite-partition option
        ow = partition_overwrite(table.store, json.loads(json.dumps(dict(spec), default=str)))
        check_inside_partition(table.store, messages, ow)
        return ow
    if dynamic:
        return dynamic_overwrite(table.store, messages)
    return Overwrite(None)


def _delete(root: str, paths: list[str]) -> None:
    """Remove the moved files, each through directories opened below the table ``root`` (a
    directory swapped for a link out of the table since the move removes nothing behind it)."""
    for p in paths:
        unlink_below(root, p)


def _write(df: DataFrame, table: Table, mode: str, spec: Mapping[str, Any] | None, dynamic: bool,
           num_partitions: int | None) -> tuple[int, ...]:
    store = table.store
    base = plan_write_base(store)
    # appends must not reach a partition of an older bucket count; overwrites rescale what they replace
    refused = stale_partitions(table, base.bucket_counts) if mode == "append" else {}
    staging = os.path.join(store.paths.root, STAGING_PREFIX + str(uuid.uuid4()))
    store.paths.ensure_inside([staging])
    user = str(uuid.uuid4())
    committer = table.new_committer(user)
    moved: list[str] = []
    try:
        try:
            _spark_write(native_frame(df, table, base.first_sequence, num_partitions, refused), table, staging)
        except Exception as exc:
            refusal = refusal_in(exc, refused)
            if refusal is None:
                raise
            raise refusal from None  # the core's refusal, raised in a Spark task before any file was written
        messages = move_into_table(store, staged_files(staging, len(store.schema.partition_keys)),
                                   store.schema.core_options.data_file_prefix, moved)
        check_messages(refused, messages)
        check_sequence_bases(store, base.snapshot_id, messages)
        ow = _overwrite(table, messages, mode, spec, dynamic)
        if mode == "overwrite" and dynamic and ow is None:
            return ()  # a dynamic overwrite of no rows replaces nothing
        ids = tuple(commit_with_retry(committer, messages, BATCH_COMMIT_IDENTIFIER, ow, check_committed=False))
        mark_done_after_commit(store, messages)  # partition.end-input-to-done, as Paimon's Spark writes
        return ids
    except CommitStateUnknownError:
        raise  # a snapshot may reference the files: never delete them
    except BaseException:
        if not committer.may_have_landed:
            _delete(store.paths.root, moved)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def write_table_native(
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
    require_native: bool = False,
    branch: str | None = None,
) -> NativeWriteResult:
    """`write_table` with Spark's own Parquet writer writing the files, when the table qualifies.

    Same arguments and result in the table as `write_table` (one snapshot; ``mode``,
    ``overwrite_partitions``, ``dynamic``, ``partition_overwrite_mode``, ``branch`` as there). The table
    qualifies when `native_eligibility.native_refusals` finds nothing against it and the input
    (a batch DataFrame with exactly the table's columns and Spark types) and the warehouse is on
    a local file system; otherwise the write goes through `write_table` unchanged, or, with
    ``require_native``, fails with `UnsupportedFeatureError` naming every reason.
    """
    if mode not in ("append", "overwrite"):
        raise OptionError(f"write_table_native mode must be 'append' or 'overwrite', got {mode!r}")
    args.text("warehouse", warehouse, optional=False)
    args.mapping("storage_options", storage_options)
    args.mapping("overwrite_partitions", overwrite_partitions)
    args.flag("require_native", require_native)
    if dynamic is not None:
        args.flag("dynamic", dynamic)
    if partition_overwrite_mode is not None:
        args.one_of("partition_overwrite_mode", str(partition_overwrite_mode).strip().lower()
                    if isinstance(partition_overwrite_mode, str) else partition_overwrite_mode,
                    ("static", "dynamic"))
    args.integer("num_partitions", num_partitions, minimum=1)
    identifier = with_branch(identifier, branch)
    table = Catalog(warehouse, **dict(storage_options or {})).get_table(identifier)
    refusals = native_refusals(table, {f.name: f.dataType for f in df.schema.fields})
    if df.isStreaming:
        refusals.append("a streaming DataFrame")
    if not isinstance(table.store.file_io, LocalFileIO):
        refusals.append("a warehouse that is not on a local file system")
    if refusals:
        if require_native:
            raise UnsupportedFeatureError(f"Cannot write {table.name} natively: {'; '.join(refusals)}")
        write_table(df, warehouse, identifier, mode=mode, storage_options=storage_options,
                    overwrite_partitions=overwrite_partitions, dynamic=dynamic,
                    partition_overwrite_mode=partition_overwrite_mode, num_partitions=num_partitions)
        return NativeWriteResult(False, tuple(refusals))
    if mode == "append" and (overwrite_partitions or dynamic):
        raise OptionError("overwrite_partitions and dynamic need mode='overwrite'")
    if overwrite_partitions and dynamic:
        raise OptionError("Pass either overwrite_partitions (static) or dynamic=True, not both")
    table.store.require(Op.WRITE)  # a branch: what the core refuses on it
    if mode == "overwrite" and not overwrite_partitions and dynamic is None:
        conf = partition_overwrite_mode or df.sparkSession.conf.get(PARTITION_OVERWRITE_CONF) or "static"
        dynamic = str(conf).strip().lower() == "dynamic"
    ids = _write(df, table, mode, overwrite_partitions, bool(dynamic), num_partitions)
    return NativeWriteResult(True, (), ids)
