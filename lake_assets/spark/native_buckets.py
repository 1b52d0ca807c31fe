"""Partitions a native write must not append to: their files keep an older bucket count.

After ``ALTER TABLE ... SET ('bucket' = 'N')`` a partition keeps the count its files were written
with until an overwrite rescales it (`lake_assets.ops.bucket_count`). The core's writer refuses to
append to such a partition when it opens one of its buckets, before writing it; so does Paimon
0.9. The native write cannot ask per row on the driver, so the driver lists these partitions
from the snapshot the write is planned on (`native_sequences.plan_write_base`, the same scan) and
the Spark plan checks every input row against them in its first stage, before the shuffle: a row
of such a partition fails the job with the core's own refusal before any task writes a file
(`guarded_bucket`), and the driver raises it as `UnsupportedFeatureError` (`refusal_in`). A last
check on the driver (`check_messages`) refuses the commit if a file of such a partition still got
through (e.g. a partition value Spark compares differently), so no partition ever mixes counts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lake_assets.errors import UnsupportedFeatureError
from lake_assets.ops.bucket_count import check_bucket_count
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.spec.binary_row import deserialize_row
from lake_assets.table import Table

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

_STALE_PREFIX = "__lake_stale_"
STALE_MESSAGE = "__lake_stale_refusal"


def stale_partitions(table: Table, bucket_counts: Mapping[bytes, int]) -> dict[bytes, str]:
    """Each partition whose recorded bucket count is not the table's, with the refusal the core's
    writer raises for an append to it."""
    schema = table.schema
    total = schema.core_options.bucket
    types = schema.types(list(schema.partition_keys))
    out: dict[bytes, str] = {}
    for partition, previous in bucket_counts.items():
        if previous == total:
            continue
        try:
            check_bucket_count(table.name, schema.partition_keys, deserialize_row(partition, types), previous, total)
        except UnsupportedFeatureError as exc:
            out[partition] = str(exc)
    return out


def join_refusals(frame: DataFrame, table: Table, stale: Mapping[bytes, str]) -> DataFrame:
    """``frame`` with a `STALE_MESSAGE` column: the refusal of the row's partition, or null (a
    broadcast left join on the partition keys, null-safe: a null key is a partition too)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    from lake_assets.spark.schema import spark_schema

    schema = table.schema
    keys = list(schema.partition_keys)
    types = schema.types(keys)
    spark_types = {f.name: f.dataType for f in spark_schema(table.arrow_schema).fields}
    names = [f"{_STALE_PREFIX}{i}" for i in range(len(keys))]
    struct = StructType([*(StructField(n, spark_types[k], True) for n, k in zip(names, keys, strict=True)),
                         StructField(STALE_MESSAGE, StringType(), False)])
    rows = [(*deserialize_row(p, types), message) for p, message in stale.items()]
    refusals = frame.sparkSession.createDataFrame(rows, struct)
    on = [_name(k).eqNullSafe(F.col(n)) for k, n in zip(keys, names, strict=True)]
    return frame.join(F.broadcast(refusals), on, "left").drop(*names)


def guarded_bucket(bucket: Column) -> Column:
    """``bucket``, or the row's refusal raised in the JVM (a column every later step needs, so
    the optimizer never prunes the check)."""
    from pyspark.sql import functions as F

    message = F.col(STALE_MESSAGE)
    return F.when(message.isNotNull(), F.raise_error(message)).otherwise(bucket)


def refusal_in(error: BaseException, stale: Mapping[bytes, str]) -> UnsupportedFeatureError | None:
    """The refusal a failed Spark job raised (its text is inside Spark's error), or None."""
    text = str(error)
    found = next((m for m in stale.values() if m in text), None)
    return None if found is None else UnsupportedFeatureError(found)


def check_messages(stale: Mapping[bytes, str], messages: Sequence[CommitMessage]) -> None:
    """Refuse the commit of files written into a partition of another bucket count."""
    for m in messages:
        if m.partition in stale and m.new_files:
            raise UnsupportedFeatureError(stale[m.partition])


def _name(name: str) -> Any:
    from pyspark.sql import functions as F

    return F.col("`" + name.replace("`", "``") + "`")
