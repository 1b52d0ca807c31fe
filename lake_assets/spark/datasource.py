"""The ``lake`` Spark data source (PySpark's Python Data Source API, Spark 4.1+).

    lake_assets.spark.register(spark)
    spark.read.format("lake").option("warehouse", wh).load("db.orders")
    df.write.format("lake").option("warehouse", wh).mode("append").save("db.orders")
    spark.readStream.format("lake").option("warehouse", wh).load("db.orders")
    df.writeStream.format("lake").option("warehouse", wh).option("checkpointLocation", ck).start("db.orders")

Options: ``warehouse`` (fsspec URL) and ``storage.<name>`` (fsspec storage options; JSON objects,
arrays and booleans are decoded). Reads: ``snapshot-id`` | ``tag`` | ``timestamp`` (epoch ms or
ISO-8601) for time travel; ``incremental-between`` = "start,end" (ids or tags) with
``incremental-source`` = auto | delta | changelog for the changes in (start, end] with a
``_row_kind`` column; ``source.split.target-size``, ``source.split.open-file-cost`` and
``source.split.min-partitions`` size the partitions splits are packed into (docs/spark.md);
``filter`` (JSON
``[[col, op, value], ...]``, the core's filter convention) prunes partitions, buckets and files and
filters rows; ``filter-pushdown=true`` also takes Spark's own filters (see `LakePushdownReader` for
why that is opt-in on Spark 4.3). Spark 4.3 caches a DataFrame's planned read on its data
source, so later queries of one DataFrame may keep reading the snapshot it first planned: load
the table again to read newer commits. Writes:
``partitionOverwriteMode`` = static | dynamic with ``mode("overwrite")``. Streaming options are
listed on `LakeStreamReader`.

Every method runs in a separate Spark Python worker: nothing is shared but what the data source,
reader and writer carry in their (pickled) attributes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader
from pyspark.sql.types import StructType

from lake_assets.ops.not_null_history import read_arrow_schema
from lake_assets.spark.reader import LakePushdownReader, LakeReader
from lake_assets.spark.schema import spark_schema
from lake_assets.spark.source_options import FILTER_PUSHDOWN, SourceOptions
from lake_assets.spark.streaming import LakeStreamReader
from lake_assets.spark.writer import LakeBatchWriter, LakeStreamWriter

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SOURCE_NAME = "lake"


class LakeDataSource(DataSource):
    """Paimon tables of a lake_assets warehouse as a Spark source and sink."""

    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        self.source = SourceOptions.parse(options)
        # The schema Spark was told about (set by `schema`); reads use it even if the table's
        # schema changes between planning and reading. None when the user passed a schema.
        self.schema_id: int | None = None

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> StructType:
        table = self.source.table()
        schema = table.schema
        travel = self.source.time_travel()
        if travel and not self.source.is_incremental:
            # time travel reads with the schema the snapshot was committed under, as Paimon does -
            # a stream from a snapshot id or time too, for its whole run (its table copy travels:
            # `StreamEnumerator.read_schema`); incremental change reads use the current schema
            snap = table.resolve_snapshot(**travel)
            if snap is not None:
                schema = table.store.travel_schema(snap)  # its fields, the current options
        self.schema_id = schema.id
        # a column made NOT NULL after files with nulls were written reads as nullable (`read_arrow_schema`)
        return spark_schema(read_arrow_schema(table.store, schema), with_row_kind=self.source.with_row_kind)

    def reader(self, schema: StructType) -> DataSourceReader:
        if self.source.get_bool(FILTER_PUSHDOWN):
            return LakePushdownReader(self.source, schema, self.schema_id)
        return LakeReader(self.source, schema, self.schema_id)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return LakeStreamReader(self.source, schema, self.schema_id)

    def writer(self, schema: StructType, overwrite: bool) -> LakeBatchWriter:
        return LakeBatchWriter(self.source, overwrite, schema.fieldNames())

    def streamWriter(self, schema: StructType, overwrite: bool) -> LakeStreamWriter:
        return LakeStreamWriter(self.source, overwrite, schema.fieldNames())


def register(spark: SparkSession) -> None:
    """Make ``format("lake")`` available in ``spark`` (needed once per session)."""
    spark.dataSource.register(LakeDataSource)
