"""Spark's streaming source from an old snapshot reads with that snapshot's fields, as Paimon's
(its table copy time-travels; `tests/differential/test_stream_time_travel_schema_java.py` has the
Java comparison): the columns Spark is told are the start snapshot's, and later files are read
by field id into them."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from lake_assets import Catalog

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("amount", pa.float64())])
EVOLVED = pa.schema([pa.field("id", pa.int64(), nullable=False), ("total", pa.float64()), ("note", pa.string())])


def _run(spark, warehouse: str, checkpoint: Path, **options: str) -> tuple[list[str], list[tuple]]:
    out = checkpoint.with_name(checkpoint.name + "-out")
    reader = spark.readStream.format("lake").option("warehouse", warehouse)
    for k, v in options.items():
        reader = reader.option(k, v)
    stream = reader.load("db.t")
    query = (stream.writeStream.format("parquet").option("path", str(out))
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    try:
        query.awaitTermination(120)
    finally:
        query.stop()
    rows = [tuple(r) for r in spark.read.schema(stream.schema).parquet(str(out)).collect()]
    return stream.schema.names, sorted(rows)


def test_a_spark_stream_from_an_old_snapshot_reads_with_its_fields(spark, catalog: Catalog, warehouse: str,
                                                                  tmp_path: Path) -> None:
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1], "amount": [1.5]}, schema=SCHEMA))
    t.write_arrow(pa.table({"id": [2], "amount": [2.5]}, schema=SCHEMA))
    t.update_schema().rename_column("amount", "total").add_column("note", pa.string()).commit()
    t.refresh()
    t.write_arrow(pa.table({"id": [1, 3], "total": [10.5, 3.5], "note": ["n1", "n3"]}, schema=EVOLVED))
    names, rows = _run(spark, warehouse, tmp_path / "ck", **{"scan.mode": "from-snapshot", "scan.snapshot-id": "2"})
    assert names == ["id", "amount"]  # before: the current schema's (id, total, note)
    assert rows == [(1, 10.5), (2, 2.5), (3, 3.5)]
    # from the latest state: the current schema
    names, rows = _run(spark, warehouse, tmp_path / "ck-latest", **{"scan.mode": "latest-full"})
    assert names == ["id", "total", "note"]
    assert rows == [(1, 10.5, "n1"), (2, 2.5, None), (3, 3.5, "n3")]
