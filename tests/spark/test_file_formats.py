"""The Spark data source on ORC and Avro tables: reads of the core's files, writes in the table's
format (bucket-routed for primary-key tables), and a table holding files of every format."""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.spark import read_table, write_table

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

UTC = dt.UTC
SCHEMA = pa.schema([
    ("id", pa.int64()),
    ("dt", pa.string()),
    ("qty", pa.int32()),
    ("price", pa.decimal128(10, 2)),
    ("at", pa.timestamp("us", tz="UTC")),
    ("tags", pa.list_(pa.string())),
    ("attrs", pa.map_(pa.string(), pa.int64())),
    ("point", pa.struct([("x", pa.int32()), ("y", pa.float64())])),
])


def _rows(ids: range, tag: str = "a") -> pa.Table:
    return pa.table({
        "id": list(ids),
        "dt": [f"2024-01-0{i % 2 + 1}" for i in ids],
        "qty": [None if i % 5 == 0 else i for i in ids],
        "price": [decimal.Decimal(i).scaleb(-2) for i in ids],
        "at": [dt.datetime(2024, 1, 1, 8, tzinfo=UTC) + dt.timedelta(microseconds=1_000_037 * i) for i in ids],
        "tags": [[tag, None] if i % 3 else None for i in ids],
        "attrs": [[(tag, i)] if i % 4 else [] for i in ids],
        "point": [None if i % 7 == 0 else {"x": i, "y": None if i % 2 else 0.5} for i in ids],
    }, schema=SCHEMA)


def _sorted(table: pa.Table) -> list[dict]:
    return table.sort_by("id").to_pylist()


def _extensions(warehouse: str, name: str) -> set[str]:
    return {p.suffix for p in (Path(warehouse) / "db.db" / name).rglob("data-*")}


@pytest.mark.parametrize("fmt", ["orc", "avro"])
def test_spark_reads_and_writes_orc_and_avro_tables(spark, catalog: Catalog, warehouse: str, fmt: str) -> None:
    pk = catalog.create_table("db.pk", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                              options={"bucket": "2", "file.format": fmt})
    pk.write_arrow(_rows(range(40)))
    df = spark.read.format("lake").option("warehouse", warehouse).load("db.pk")
    got = df.toArrow()
    assert _sorted(got) == _sorted(pk.to_arrow().cast(got.schema))

    # Spark's bucket-routed writer updates half the keys; the core reads the merged rows
    updates = spark.createDataFrame(_rows(range(20, 60), "b").to_pylist(maps_as_pydicts="strict"), schema=df.schema)
    write_table(updates, warehouse, "db.pk")
    merged = pk.refresh().to_arrow()
    expected = pa.concat_tables([_rows(range(20)), _rows(range(20, 60), "b")])
    assert _sorted(merged) == _sorted(expected.cast(merged.schema))
    assert _extensions(warehouse, "pk") == {f".{fmt}"}

    # a plain append through the data source writes the table's format too (``df`` reads the
    # snapshot it was loaded at)
    catalog.create_table("db.log", SCHEMA, options={"file.format": fmt})
    df.write.format("lake").option("warehouse", warehouse).mode("append").save("db.log")
    log = catalog.get_table("db.log").to_arrow()
    assert _sorted(log) == _sorted(pk.to_arrow(snapshot_id=1).cast(log.schema))
    assert _extensions(warehouse, "log") == {f".{fmt}"}


def test_spark_reads_a_table_holding_every_format(spark, catalog: Catalog, warehouse: str) -> None:
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "2", "write-only": "true"})
    for i, fmt in enumerate(["parquet", "orc", "avro"]):
        t.update_schema().set_option("file.format", fmt).commit()
        t = t.refresh()
        t.write_arrow(_rows(range(i * 10, i * 10 + 20), fmt))
    t.compact()  # level-0 files of every format merge into one sorted run per bucket
    t = t.refresh()
    assert _extensions(warehouse, "t") == {".parquet", ".orc", ".avro"}
    got = spark.read.format("lake").option("warehouse", warehouse).load("db.t").toArrow()
    assert got.num_rows == 40
    assert _sorted(got) == _sorted(t.to_arrow().cast(got.schema))


def test_read_table_leaves_orc_and_avro_files_to_the_source(spark, catalog: Catalog, warehouse: str) -> None:
    """`read_table` hands Spark's Parquet reader the files that need no merge: only Parquet ones;
    a table whose file.format changed has ORC and Avro files too, which the source reads."""
    flat = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = catalog.create_table("db.flat", flat)
    for i, fmt in enumerate(["parquet", "orc", "avro"]):
        t.update_schema().set_option("file.format", fmt).commit()
        t = t.refresh()
        t.write_arrow(pa.table({"id": list(range(i * 10, i * 10 + 10)), "v": [fmt] * 10}, schema=flat))
    assert _extensions(warehouse, "flat") == {".parquet", ".orc", ".avro"}
    got = read_table(spark, warehouse, "db.flat").toArrow()
    assert _sorted(got) == _sorted(t.to_arrow().cast(got.schema))
