"""`write_table_native`: Spark's own Parquet writer writes a primary-key table's files.

The natively written table must be the table the Python path (`write_table`) writes from the
same input - the same rows for every reader (the core, Paimon Java 0.9, pypaimon 2.1), the same
file layout and the same manifest statistics per (partition, bucket) - and every table or input
the native path cannot honour must go through the Python path unchanged.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_assets import Catalog
from lake_assets.errors import UnsupportedFeatureError
from lake_assets.spark import write_table
from lake_assets.spark.native_write import STAGING_PREFIX, write_table_native
from lake_assets.spark.schema import spark_schema
from tests.java.oracle import PaimonJava

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

# a long and a string key, a string partition, nulls, a timestamp, a float and a decimal
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("code", pa.string(), nullable=False),
                    pa.field("dt", pa.string(), nullable=False), ("name", pa.string()), ("qty", pa.int32()),
                    ("price", pa.float64()), ("amount", pa.decimal128(12, 2)), ("ts", pa.timestamp("us"))])
KEYS = ["id", "code", "dt"]
DAYS = ("2024-01-01", "2024-01-02", "2024-01-03")


def _rows(ids: range, version: int) -> list[tuple]:
    from decimal import Decimal

    # name: nulls, and one value longer than parquet-java keeps in a footer's statistics (4 KiB)
    return [(i, f"c{i % 5}-{'x' * (i % 3)}", DAYS[i % 3],
             None if i % 4 == 0 else f"name-{i}-v{version}" + ("z" * 5000 if i == 7 else ""),
             None if i % 6 == 0 else i * version, float(i) / 3 + version, Decimal(f"{i}.{version:02d}"),
             dt.datetime(2024, 1, 1) + dt.timedelta(seconds=i * 7 + version, microseconds=i))
            for i in ids]


def _create(catalog: Catalog, name: str, options: dict[str, str] | None = None):
    return catalog.create_table(name, SCHEMA, primary_keys=KEYS, partition_keys=["dt"],
                                options={"bucket": "3", **(options or {})})


def _frame(spark, table, rows: list[tuple], partitions: int = 1):
    return spark.createDataFrame(rows, spark_schema(table.arrow_schema)).repartition(partitions) \
        if partitions > 1 else spark.createDataFrame(rows, spark_schema(table.arrow_schema)).coalesce(1)


def _files(table) -> dict[tuple[tuple, int], list]:
    return {(tuple(s.partition_values), s.bucket): sorted(s.files, key=lambda f: f.min_sequence_number)
            for s in table.plan()}


def _sorted(t: pa.Table) -> pa.Table:
    return t.sort_by([(k, "ascending") for k in KEYS])


def test_native_write_equals_python_path_for_every_reader(spark, catalog: Catalog, warehouse: str,
                                                          java: PaimonJava) -> None:
    from tests.interop.paimon import Pypaimon, canonical

    native = _create(catalog, "db.native")
    python = _create(catalog, "db.python")
    # one input partition holding every key twice (the later version must win), then a second
    # write onto the existing table: an update of a third of the keys and new keys
    first = _rows(range(90), 1) + _rows(range(0, 90, 2), 2)
    second = _rows(range(0, 120, 3), 3)
    for rows in (first, second):
        df = _frame(spark, native, rows)
        assert write_table_native(df, warehouse, "db.native", require_native=True).native
        write_table(df, warehouse, "db.python")
    native, python = catalog.get_table("db.native"), catalog.get_table("db.python")
    ours = _sorted(native.to_arrow())
    assert ours.num_rows == 100
    assert ours.equals(_sorted(python.to_arrow()))
    assert _sorted(java.read(warehouse, "db.native")).equals(ours)
    driver = Pypaimon()
    if driver.available():
        assert canonical(driver.read(warehouse, "db.native"), KEYS) == canonical(ours, KEYS)
    # the second write (every third key: one partition) numbers above the first in its buckets
    files = _files(native)
    assert sum(len(fs) == 2 for fs in files.values()) == 3 and all(len(fs) <= 2 for fs in files.values())
    assert all(fs[0].max_sequence_number < fs[-1].min_sequence_number for fs in files.values() if len(fs) == 2)
    # per (partition, bucket): the manifest says of our files what the core says of its own
    py_files = _files(python)
    assert files.keys() == py_files.keys()
    for k, fs in files.items():
        for ours_f, core_f in zip(fs, py_files[k], strict=True):
            assert (ours_f.row_count, ours_f.min_key, ours_f.max_key, ours_f.level, ours_f.delete_row_count) == \
                   (core_f.row_count, core_f.min_key, core_f.max_key, core_f.level, core_f.delete_row_count)
            assert ours_f.key_stats == core_f.key_stats
            assert ours_f.value_stats == core_f.value_stats
    # the file layout of the core's files: columns, physical and logical types, repetition, field ids
    part = native.plan()[0]
    ours_path = native.store.data_file_path(part.partition, part.bucket, part.files[0])
    core_split = next(s for s in python.plan() if s.partition == part.partition and s.bucket == part.bucket)
    core_path = python.store.data_file_path(core_split.partition, core_split.bucket, core_split.files[0])
    assert _layout(ours_path) == _layout(core_path)
    # ... and of Java's files of the same rows (column for column; Java 0.9 writes no field ids)
    java.create_table(warehouse, "db.java", SCHEMA, KEYS, ["dt"], {"bucket": "3"})
    java.write(warehouse, "db.java", ours)
    java_table = catalog.get_table("db.java")
    java_split = java_table.plan()[0]
    java_path = java_table.store.data_file_path(java_split.partition, java_split.bucket, java_split.files[0])
    assert _layout(ours_path)[:-1] == _layout(java_path)[:-1]
    assert pq.ParquetFile(ours_path).metadata.row_group(0).column(0).compression == "ZSTD"
    # Java compacts the natively written buckets and still reads the same rows
    java.compact(warehouse, "db.native")
    assert _sorted(java.read(warehouse, "db.native")).equals(ours)
    assert not [n for n in os.listdir(native.store.paths.root) if n.startswith(STAGING_PREFIX)]


def _layout(path: str) -> list[tuple]:
    schema = pq.ParquetFile(path).schema
    out = []
    for i in range(len(schema)):
        c = schema.column(i)
        out.append((c.name, c.physical_type, str(c.logical_type), c.max_definition_level))
    arrow = pq.ParquetFile(path).schema_arrow
    out.append(tuple((f.name, (f.metadata or {}).get(b"PARQUET:field_id")) for f in arrow))
    return out


def test_native_write_many_input_partitions_and_overwrite(spark, catalog: Catalog, warehouse: str) -> None:
    table = _create(catalog, "db.t")
    # keys spread over 4 input partitions, each key once: every bucket's rows come from several tasks
    df = _frame(spark, table, _rows(range(200), 1), partitions=4)
    assert write_table_native(df, warehouse, "db.t", require_native=True).native
    table = catalog.get_table("db.t")
    assert table.to_arrow().num_rows == 200
    assert all(len(fs) == 1 for fs in _files(table).values())  # one file per (partition, bucket)
    # overwrite one partition: the other two stay
    day = _frame(spark, table, [r for r in _rows(range(0, 30), 5) if r[2] == DAYS[0]])
    result = write_table_native(day, warehouse, "db.t", mode="overwrite", overwrite_partitions={"dt": DAYS[0]})
    assert result.native and len(result.snapshot_ids) == 1
    got = catalog.get_table("db.t").to_arrow()
    assert got.num_rows == 10 + sum(1 for i in range(200) if i % 3 != 0)
    assert set(got.filter(pa.compute.equal(got["dt"], DAYS[0]))["qty"].to_pylist()) <= {None, *range(0, 150, 5)}
    # an empty delivery of a partition replaces it too (one OVERWRITE snapshot); an empty append commits nothing
    empty = _frame(spark, table, [])
    assert write_table_native(empty, warehouse, "db.t", require_native=True).snapshot_ids == ()
    result = write_table_native(empty, warehouse, "db.t", mode="overwrite", overwrite_partitions={"dt": DAYS[1]})
    assert result.native and len(result.snapshot_ids) == 1
    assert DAYS[1] not in catalog.get_table("db.t").to_arrow()["dt"].to_pylist()


def test_null_key_fails_and_leaves_nothing(spark, catalog: Catalog, warehouse: str) -> None:
    table = _create(catalog, "db.t")
    rows = _rows(range(10), 1)
    schema = spark_schema(table.arrow_schema)
    loose = schema.__class__([f.__class__(f.name, f.dataType, True) for f in schema.fields])
    df = spark.createDataFrame([*rows, (None, "c", DAYS[0], None, None, None, None, None)], loose).coalesce(1)
    with pytest.raises(Exception, match="primary key column 'id' is NOT NULL"):
        write_table_native(df, warehouse, "db.t", require_native=True)
    root = Path(catalog.get_table("db.t").store.paths.root)
    assert catalog.get_table("db.t").latest_snapshot() is None
    assert not [p for p in root.rglob("*") if p.is_file() and "schema" not in p.parts]


def test_refused_table_falls_back_to_python_path(spark, catalog: Catalog, warehouse: str) -> None:
    table = _create(catalog, "db.t", {"merge-engine": "partial-update"})
    df = _frame(spark, table, _rows(range(20), 1))
    with pytest.raises(UnsupportedFeatureError, match="merge-engine = partial-update"):
        write_table_native(df, warehouse, "db.t", require_native=True)
    result = write_table_native(df, warehouse, "db.t")
    assert not result.native and "merge-engine = partial-update" in result.refusals[0]
    assert catalog.get_table("db.t").to_arrow().num_rows == 20
    # an input whose types are not the table's: the Python path checks and casts it
    plain = _create(catalog, "db.u")
    cast = _frame(spark, plain, _rows(range(5), 1)).withColumn("qty", pa_long("qty"))
    result = write_table_native(cast, warehouse, "db.u")
    assert not result.native and "input column 'qty'" in result.refusals[0]
    assert catalog.get_table("db.u").to_arrow().num_rows == 5


def pa_long(name: str):
    from pyspark.sql import functions as F

    return F.col(name).cast("long")


def test_unknown_commit_outcome_is_resolved_by_looking(spark, catalog: Catalog, warehouse: str) -> None:
    from lake_assets.spark.native_write import _write

    _create(catalog, "db.t")
    table = catalog.get_table("db.t")
    df = _frame(spark, table, _rows(range(30), 1))
    lost: list[str] = []

    def lose_the_answer(step: str) -> None:  # the snapshot landed, its answer did not arrive
        if step == "commit.after_snapshot" and not lost:
            lost.append(step)
            raise OSError("connection reset after the snapshot put")

    table.store.fault_hook = lose_the_answer
    _write(df, table, "append", None, False, None)  # retried with the same user: found committed
    fresh = catalog.get_table("db.t")
    assert lost and [s.id for s in fresh.snapshots()] == [1]
    assert fresh.to_arrow().num_rows == 30  # its files were kept


def test_failed_commit_removes_its_files(spark, catalog: Catalog, warehouse: str) -> None:
    from lake_assets.spark.native_write import _write

    _create(catalog, "db.t")
    table = catalog.get_table("db.t")
    df = _frame(spark, table, _rows(range(30), 1))

    def fail_before_the_snapshot(step: str) -> None:
        if step == "commit.before_snapshot":
            raise OSError("disk full")

    table.store.fault_hook = fail_before_the_snapshot
    with pytest.raises(OSError, match="disk full"):
        _write(df, table, "append", None, False, None)
    root = Path(table.store.paths.root)
    assert catalog.get_table("db.t").latest_snapshot() is None
    assert not [p for p in root.rglob("*") if p.is_file() and "schema" not in p.parts]


def test_append_into_a_partition_of_an_older_bucket_count_is_refused_before_spark_writes(
        spark, catalog: Catalog, warehouse: str) -> None:
    """ALTER bucket leaves old partitions at their count: appending natively into one is refused
    with the core writer's refusal before Spark writes a file; other partitions still go natively,
    and an overwrite of the old partition rescales it (as write_table)."""
    table = _create(catalog, "db.t", {"bucket": "2"})
    write_table_native(_frame(spark, table, _rows(range(30), 1)), warehouse, "db.t", require_native=True)
    table.update_schema().set_option("bucket", "3").commit()
    table = catalog.get_table("db.t")
    before = sorted(p for p in Path(table.store.paths.root).rglob("*") if p.is_file())
    into_old = [r for r in _rows(range(30, 40), 2) if r[2] == DAYS[0]]
    new_day = [(*r[:2], "2024-02-01", *r[3:]) for r in _rows(range(40, 50), 2)]
    written: list[str] = []
    from lake_assets.spark import native_write

    real = native_write._spark_write

    def spy(frame, t, staging):  # records what Spark left in the staging directory
        try:
            real(frame, t, staging)
        finally:
            written.extend(str(p) for p in Path(staging).rglob("*.parquet"))

    native_write._spark_write = spy  # type: ignore[assignment]
    try:
        with pytest.raises(UnsupportedFeatureError,
                           match=rf"partition dt={DAYS[0]} of db.t with a new bucket num 3, but the previous "
                                 r"bucket num is 2"):
            write_table_native(_frame(spark, table, [*new_day, *into_old], partitions=2), warehouse, "db.t",
                               require_native=True)
    finally:
        native_write._spark_write = real  # type: ignore[assignment]
    assert written == []  # refused before Spark wrote any file
    assert len(list(catalog.get_table("db.t").snapshots())) == 1  # nothing committed
    assert sorted(p for p in Path(table.store.paths.root).rglob("*") if p.is_file()
                  and "schema" not in p.parts) == [p for p in before if "schema" not in p.parts]
    # a new partition takes the new count natively; the old one is rescaled by an overwrite
    assert write_table_native(_frame(spark, table, new_day), warehouse, "db.t", require_native=True).native
    done = write_table_native(_frame(spark, table, into_old), warehouse, "db.t", mode="overwrite",
                              overwrite_partitions={"dt": DAYS[0]}, require_native=True)
    assert done.native
    counts = {(tuple(s.partition_values), s.total_buckets) for s in catalog.get_table("db.t").plan()}
    assert counts == {((DAYS[0],), 3), ((DAYS[1],), 2), ((DAYS[2],), 2), (("2024-02-01",), 3)}
