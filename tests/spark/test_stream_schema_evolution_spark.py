"""A running Spark stream keeps the schema it declared when the table evolves, as Paimon's streams
keep the table they were built with (`tests/differential/test_stream_schema_java.py` compares the
core with Java 0.9): later files are read by field id into the declared columns; a later value
the declared type cannot hold stops the query with an error that says to restart the stream; a
restart from the consumer's position reads with the schema the table has then."""

from __future__ import annotations

import uuid

import pyarrow as pa
import pytest
from pyspark.errors import StreamingQueryException

import lake_assets
from lake_assets import Catalog

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("qty", pa.int32()), ("amount", pa.float64())])
EVOLVED = pa.schema([pa.field("id", pa.int64(), nullable=False), ("qty", pa.int64()), ("total", pa.float64()),
                     ("note", pa.string())])


def _start(spark, warehouse: str, name: str, consumer: str):
    stream = (spark.readStream.format("lake").option("warehouse", warehouse).option("scan.mode", "latest")
              .option("consumer-id", consumer).load("db.t"))
    return stream, stream.writeStream.format("memory").queryName(name).start()


def _rows(spark, name: str) -> list[tuple]:
    return sorted(tuple(r) for r in spark.table(name).collect())


def test_a_running_spark_stream_reads_later_schemas_into_its_declared_columns(
    spark, catalog: Catalog, warehouse: str
) -> None:
    # the Python workers import this checkout (PYTHONPATH), not another one's lake_assets
    here = lake_assets.__file__
    assert spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("lake_assets").__file__).collect() == [here]
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1], "qty": [1], "amount": [1.5]}, schema=SCHEMA))
    consumer, name = f"c{uuid.uuid4().hex[:8]}", f"q{uuid.uuid4().hex[:8]}"
    stream, query = _start(spark, warehouse, name, consumer)
    try:
        assert stream.schema.names == ["id", "qty", "amount"]
        query.processAllAvailable()  # the start offset is taken: the stream reads what comes next
        t.write_arrow(pa.table({"id": [2], "qty": [2], "amount": [2.5]}, schema=SCHEMA))
        query.processAllAvailable()
        # the table evolves while the query runs: amount renamed, qty widened, note added
        (t.update_schema().rename_column("amount", "total").update_column_type("qty", pa.int64())
         .add_column("note", pa.string()).commit())
        t.refresh()
        t.write_arrow(pa.table({"id": [3], "qty": [3], "total": [3.5], "note": ["n3"]}, schema=EVOLVED))
        query.processAllAvailable()
        assert spark.table(name).columns == ["id", "qty", "amount"]
        assert _rows(spark, name) == [(2, 2, 2.5), (3, 3, 3.5)]
        # a value the declared INT cannot hold: the query stops, saying how to read it
        t.write_arrow(pa.table({"id": [4], "qty": [2**40], "total": [4.5], "note": ["n4"]}, schema=EVOLVED))
        with pytest.raises(StreamingQueryException, match="restart the stream from its consumer position"):
            query.processAllAvailable()
    finally:
        query.stop()
    # restarted from the consumer's position: the schema the table has now, as a restarted Paimon
    # source loads the table again
    name2 = f"q{uuid.uuid4().hex[:8]}"
    stream, query = _start(spark, warehouse, name2, consumer)
    try:
        assert stream.schema.names == ["id", "qty", "total", "note"]
        query.processAllAvailable()
        assert (4, 2**40, 4.5, "n4") in _rows(spark, name2)
    finally:
        query.stop()
