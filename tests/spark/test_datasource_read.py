"""Spark batch reads of tables the core wrote: exact rows and types, pruning, time travel, changes."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest
from pyroaring import BitMap, BitMap64
from pyspark.sql import functions as F

from lake_assets import Catalog
from lake_assets.ops.deletion_vectors import VectorLoader, snapshot_index
from lake_assets.spark.reader import LakeReader, SplitPartition, plan_read
from lake_assets.spark.schema import spark_arrow_schema
from lake_assets.spark.source_options import SourceOptions

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

UTC = dt.UTC
ALL_TYPES = pa.schema([
    ("id", pa.int64()),
    ("dt", pa.string()),
    ("i8", pa.int8()),
    ("i32", pa.int32()),
    ("f", pa.float32()),
    ("flag", pa.bool_()),
    ("ts_ms", pa.timestamp("ms")),
    ("ts_ltz", pa.timestamp("us", tz="UTC")),
    ("day", pa.date32()),
    ("amount", pa.decimal128(12, 3)),
    ("raw", pa.binary()),
    ("tags", pa.list_(pa.string())),
    ("attrs", pa.map_(pa.string(), pa.int64())),
    ("point", pa.struct([("x", pa.int32()), ("y", pa.float64())])),
])


def _all_types_rows(n: int, offset: int = 0) -> dict:
    ids = list(range(offset, offset + n))
    return {
        "id": ids,
        "dt": ["2024-01-01" if i % 2 else "2024-01-02" for i in ids],
        "i8": [i % 100 for i in ids],
        "i32": [None if i % 5 == 0 else i * 7 for i in ids],
        "f": [i / 4 for i in ids],
        "flag": [i % 3 == 0 for i in ids],
        "ts_ms": [dt.datetime(2024, 1, 1, 12) + dt.timedelta(milliseconds=1001 * i) for i in ids],
        "ts_ltz": [dt.datetime(1969, 12, 31, 23, 59, tzinfo=UTC) + dt.timedelta(microseconds=37 * i) for i in ids],
        "day": [dt.date(2023, 12, 30) + dt.timedelta(days=i) for i in ids],
        "amount": [decimal.Decimal(i).scaleb(-3) for i in ids],
        "raw": [bytes([i % 256, 0, 255]) for i in ids],
        "tags": [[f"t{i}", None] if i % 4 else [] for i in ids],
        "attrs": [[("k", i)] for i in ids],
        "point": [{"x": i, "y": None if i % 2 else 0.5} for i in ids],
    }


def _load(spark, warehouse: str, identifier: str, **options: str):
    reader = spark.read.format("lake").option("warehouse", warehouse)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load(identifier)


def _spark_rows(df) -> pa.Table:
    """Collect through Arrow (exact types, no pandas round trip)."""
    return df.toArrow()


def _sorted(table: pa.Table, *keys: str) -> list[dict]:
    return table.sort_by([(k, "ascending") for k in keys]).to_pylist()


@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "pk"])
def test_spark_reads_what_the_core_wrote(spark, catalog: Catalog, warehouse: str, primary_key: bool) -> None:
    pk = {"primary_keys": ["id", "dt"], "options": {"bucket": "3"}} if primary_key else {}
    table = catalog.create_table("db.t", ALL_TYPES, partition_keys=["dt"], **pk)
    table.write_arrow(pa.table(_all_types_rows(40), schema=table.arrow_schema))
    table.write_arrow(pa.table(_all_types_rows(20, offset=30), schema=table.arrow_schema))  # updates for pk

    df = _load(spark, warehouse, "db.t")
    got = _spark_rows(df)
    expected = table.to_arrow()
    assert got.num_rows == expected.num_rows == (50 if primary_key else 60)
    # Spark has microsecond timestamps only; everything else is the table's own type
    assert got.schema == spark_arrow_schema(df.schema)
    assert _sorted(got, "id", "ts_ms") == _sorted(expected.cast(got.schema), "id", "ts_ms")
    assert df.schema["id"].nullable is not primary_key  # PK columns are NOT NULL, and Spark is told


def test_every_type_survives_a_spark_round_trip(spark, catalog: Catalog, warehouse: str) -> None:
    """core writes → Spark reads → Spark writes another table → the core reads the same rows."""
    source = catalog.create_table("db.src", ALL_TYPES, partition_keys=["dt"])
    source.write_arrow(pa.table(_all_types_rows(30), schema=source.arrow_schema))
    target = catalog.create_table("db.dst", ALL_TYPES, partition_keys=["dt"])
    df = _load(spark, warehouse, "db.src")
    df.write.format("lake").option("warehouse", warehouse).mode("append").save("db.dst")
    assert _sorted(target.to_arrow(), "id") == _sorted(source.to_arrow(), "id")


def _four_commits(catalog: Catalog):
    table = catalog.create_table("db.t", ALL_TYPES, partition_keys=["dt"])
    for offset in range(0, 40, 10):  # four commits of ids offset..offset+9, two partitions: 8 files
        table.write_arrow(pa.table(_all_types_rows(10, offset), schema=table.arrow_schema))
    return table


def test_filter_option_prunes_partitions_and_files(spark, catalog: Catalog, warehouse: str) -> None:
    _four_commits(catalog)
    assert sum(len(p.splits) for p in plan_read(catalog.get_table("db.t"), SourceOptions.parse(
        {"path": "db.t", "warehouse": warehouse}))) == 2  # a split per table partition

    one_day = _load(spark, warehouse, "db.t", filter='[["dt", "=", "2024-01-01"]]')
    assert one_day.rdd.getNumPartitions() == 1
    assert sorted(r.id for r in one_day.collect()) == list(range(1, 40, 2))

    # value stats skip the three older commits' files; rows are filtered exactly
    narrow = '[["id", ">=", 32], ["dt", "=", "2024-01-02"], ["day", "<", "2024-02-05"]]'
    opts = SourceOptions.parse({"path": "db.t", "warehouse": warehouse, "filter": narrow})
    reader = LakeReader(opts, _load(spark, warehouse, "db.t").schema, None)
    planned = reader.partitions()
    assert [len(s.files) for p in planned if isinstance(p, SplitPartition) for s in p.splits] == [1]
    assert sorted(r.id for r in _load(spark, warehouse, "db.t", filter=narrow).collect()) == [32, 34, 36]

    # OR of ANDs; a reused DataFrame keeps its filter (it is an option, not a query's filter)
    either = _load(spark, warehouse, "db.t", filter='[[["id", "<", 2]], [["id", "in", [38, 39]]]]')
    assert sorted(r.id for r in either.collect()) == [0, 1, 38, 39]
    assert either.filter("id > 1").count() == 2
    assert either.count() == 4


def test_pushed_filters_are_exact_and_claimed(spark, catalog: Catalog, warehouse: str) -> None:
    _four_commits(catalog)

    def pushed():  # a fresh DataFrame per query: see LakePushdownReader
        return _load(spark, warehouse, "db.t", **{"filter-pushdown": "true"})

    assert pushed().filter("dt = '2024-01-01'").rdd.getNumPartitions() == 1
    assert pushed().filter("id >= 32 and dt = '2024-01-02'").count() == 4

    # filters of each column type give exactly Spark's own answer (the semantics are tested in
    # depth without Spark in test_datasource_filters.py; this checks the literals Spark sends)
    queries = [
        "i32 in (7, 14, null) or i32 is null", "i32 not in (7, 14)", "not flag",
        "day < date'2024-01-05'", "amount >= 0.010", "ts_ms > timestamp_ntz'2024-01-01 12:00:05.005'",
        "ts_ltz <= timestamp'1969-12-31 23:59:00.000300 UTC'", "raw = X'0500FF'", "f > 2.5",
        "dt like '2024-01-0%' and i8 <=> 3",
    ]
    # Spark's answers for all queries in one job over an in-memory copy
    baseline = spark.createDataFrame(_load(spark, warehouse, "db.t").toArrow())
    flags = baseline.select("id", *[F.expr(q).alias(f"q{i}") for i, q in enumerate(queries)]).collect()
    for i, q in enumerate(queries):
        expected = sorted(r.id for r in flags if r[f"q{i}"])
        assert sorted(r.id for r in pushed().filter(q).collect()) == expected, q

    # exact filters are claimed: Spark plans no Filter of its own above the scan
    claimed = pushed().filter("dt = '2024-01-01' and i32 in (7, 21) and ts_ms > timestamp_ntz'2024-01-01 12:00:00'")
    assert " Filter (" not in claimed._jdf.queryExecution().executedPlan().toString()
    assert " Filter (" in pushed().filter("f > 1")._jdf.queryExecution().executedPlan().toString()


def test_default_reader_is_safe_for_reused_dataframes(spark, catalog: Catalog, warehouse: str) -> None:
    _four_commits(catalog)
    df = _load(spark, warehouse, "db.t")
    assert df.filter("id < 3").count() == 3
    assert df.count() == 40


@pytest.mark.xfail(strict=True, reason=(
    "Spark 4.3 bug: PythonScanBuilder.pushFilters stores the pushed-down read info on the "
    "DataFrame's provider (PythonDataSourceV2.setReadInfo) and later scans without filters reuse "
    "it (getOrCreateReadInfo). Fixed upstream by keeping read info in the scan (PythonScanBuilder "
    "of SPARK-58551). When this passes, make filter-pushdown the default."))
def test_pushdown_does_not_leak_into_later_queries_of_a_dataframe(spark, catalog: Catalog, warehouse: str) -> None:
    _four_commits(catalog)
    df = _load(spark, warehouse, "db.t", **{"filter-pushdown": "true"})
    assert df.filter("id < 3").count() == 3
    assert df.count() == 40


def test_big_append_bucket_is_split_by_size(spark, catalog: Catalog, warehouse: str) -> None:
    table = catalog.create_table("db.t", pa.schema([("id", pa.int64()), ("s", pa.string())]))
    for i in range(6):
        table.write_arrow(pa.table({"id": range(i * 100, i * 100 + 100), "s": ["x" * 50] * 100}))
    one_file = table.plan()[0].files[0].file_size
    df = _load(spark, warehouse, "db.t", **{"source.split.target-size": str(one_file * 2 + 1)})
    assert df.rdd.getNumPartitions() == 3
    assert sorted(r.id for r in df.collect()) == list(range(600))


def test_big_pk_bucket_is_split_by_sections(catalog: Catalog, warehouse: str) -> None:
    table = catalog.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.string())]),
                                 primary_keys=["id"], options={"bucket": "1", "write-only": "true"})
    for i in range(4):  # disjoint key ranges: four sections (write-only: no inline compaction)
        table.write_arrow(pa.table({"id": range(i * 100, i * 100 + 100), "v": ["a"] * 100}))
    table.write_arrow(pa.table({"id": [5, 150], "v": ["b", "b"]}))  # overlaps sections 0 and 1
    size = max(f.file_size for f in table.plan()[0].files)
    opts = SourceOptions.parse({"path": "db.t", "warehouse": warehouse, "source.split.target-size": str(size),
                                "source.split.open-file-cost": "0"})
    parts = plan_read(table, opts)
    assert sorted(len(s.files) for p in parts for s in p.splits) == [1, 1, 3]  # {0, 1, update}; 2; 3
    from lake_assets.ops.read import SplitReader

    reader = SplitReader(table.store, table.schema)
    got = pa.concat_tables(t for p in parts for s in p.splits for t in reader.read_split(s))
    assert _sorted(got, "id") == _sorted(table.to_arrow(), "id")


def test_empty_table_and_user_schema(spark, catalog: Catalog, warehouse: str) -> None:
    table = catalog.create_table("db.t", pa.schema([("id", pa.int64()), ("s", pa.string()), ("x", pa.int32())]))
    assert _load(spark, warehouse, "db.t").count() == 0
    table.write_arrow(pa.table({"id": [1, 2], "s": ["a", "b"], "x": [10, 20]}))
    # a user-given schema reads only its columns
    df = spark.read.format("lake").schema("x int, id long").option("warehouse", warehouse).load("db.t")
    assert sorted(tuple(r) for r in df.collect()) == [(10, 1), (20, 2)]


def test_time_travel(spark, catalog: Catalog, warehouse: str) -> None:
    table = catalog.create_table("db.t", pa.schema([("id", pa.int64())]))
    table.write_arrow(pa.table({"id": [1]}))
    table.create_tag("first")
    table.write_arrow(pa.table({"id": [2]}))
    second = table.latest_snapshot()
    table.write_arrow(pa.table({"id": [3]}), overwrite=True)

    def ids(**opts: str) -> list[int]:
        return sorted(r.id for r in _load(spark, warehouse, "db.t", **opts).collect())

    assert ids() == [3]
    assert ids(**{"snapshot-id": "2"}) == [1, 2]
    assert ids(tag="first") == [1]
    assert ids(timestamp=str(second.time_millis)) == [1, 2]
    iso = dt.datetime.fromtimestamp(second.time_millis / 1000, UTC).isoformat()
    assert ids(timestamp=iso) == [1, 2]
    assert ids(**{"scan.snapshot-id": "1"}) == [1]


def test_schema_evolution_and_time_travel(spark, catalog: Catalog, warehouse: str) -> None:
    table = catalog.create_table("db.t", pa.schema([("id", pa.int64()), ("name", pa.string())]))
    table.write_arrow(pa.table({"id": [1], "name": ["a"]}))
    table.update_schema().add_column("score", pa.int32()).rename_column("name", "label").commit()
    table.refresh().write_arrow(pa.table({"id": [2], "label": ["b"], "score": [7]}))

    latest = _load(spark, warehouse, "db.t")
    assert latest.columns == ["id", "label", "score"]
    assert sorted(tuple(r) for r in latest.collect()) == [(1, "a", None), (2, "b", 7)]
    # as of snapshot 1: that snapshot's schema, as Paimon (and the core) read it
    old = _load(spark, warehouse, "db.t", **{"snapshot-id": "1"})
    assert old.columns == ["id", "name"]
    assert [tuple(r) for r in old.collect()] == [(1, "a")]
    assert _spark_rows(old).to_pylist() == table.to_arrow(snapshot_id=1).to_pylist()


def test_incremental_between(spark, catalog: Catalog, warehouse: str) -> None:
    table = catalog.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.string()), ("op", pa.string())]),
                                 primary_keys=["id"], options={"bucket": "2", "rowkind.field": "op"})
    table.write_arrow(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"], "op": ["+I"] * 3}))
    table.create_tag("start")
    table.write_arrow(pa.table({"id": [2], "v": ["b2"], "op": ["+U"]}))
    table.write_arrow(pa.table({"id": [3], "v": ["c"], "op": ["-D"]}))

    df = _load(spark, warehouse, "db.t", **{"incremental-between": "start,3", "incremental-source": "delta"})
    assert df.schema.names == ["id", "v", "op", "_row_kind"]
    got = sorted((r.id, r.v, r._row_kind) for r in df.collect())
    expected = table.read_changes("start", 3, source="delta")
    assert got == sorted((r["id"], r["v"], r["_row_kind"]) for r in expected.to_pylist())
    assert got == [(2, "b2", "+U"), (3, "c", "-D")]
    # by ids, and filters are left to Spark
    df = _load(spark, warehouse, "db.t", **{"incremental-between": "1,2"}).filter("id > 1")
    assert [(r.id, r._row_kind) for r in df.collect()] == [(2, "+U")]


def test_incremental_between_reads_long_lived_changelogs(spark, catalog: Catalog, warehouse: str) -> None:
    """Snapshots 1-3 expired, but changelog retention keeps their changes readable through Spark too."""
    table = catalog.create_table("db.cl", pa.schema([("id", pa.int64()), ("v", pa.string()), ("op", pa.string())]),
                                 primary_keys=["id"],
                                 options={"bucket": "1", "rowkind.field": "op", "write-only": "true",
                                          "changelog-producer": "input", "changelog.num-retained.min": "20"})
    for i, (ids, op) in enumerate([([1, 2], "+I"), ([2], "+U"), ([1], "-D"), ([3], "+I")]):
        table.write_arrow(pa.table({"id": ids, "v": [f"v{i}"] * len(ids), "op": [op] * len(ids)}))
    expected = sorted((r["id"], r["v"], r["_row_kind"]) for r in table.read_changes(0, 4).to_pylist())
    table.expire_snapshots(retain_min=1, older_than=dt.timedelta(0))
    assert [s.id for s in table.snapshots()] == [4] and table.store.changelog_manager().ids() == [1, 2, 3]
    df = _load(spark, warehouse, "db.cl", **{"incremental-between": "0,4"})
    assert sorted((r.id, r.v, r._row_kind) for r in df.collect()) == expected


@pytest.mark.parametrize("bitmap64", ["false", "true"])
def test_deletion_vector_bucket_is_split_per_file_and_read_without_deleted_rows(
    spark, catalog: Catalog, warehouse: str, bitmap64: str
) -> None:
    """A compacted deletion-vector bucket has one live row per key: every file is its own Spark
    task, each dropping the rows its vector deletes (32- or 64-bit vectors), and a value filter
    needs no merge first."""
    table = catalog.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.string())]),
                                 primary_keys=["id"], options={"bucket": "1", "deletion-vectors.enabled": "true",
                                                               "deletion-vectors.bitmap64": bitmap64})
    table.write_arrow(pa.table({"id": range(400), "v": ["a"] * 400}))
    for i in range(3):  # each commit compacts its level 0 above and marks the rows it replaced
        table.write_arrow(pa.table({"id": range(i * 50, i * 50 + 120), "v": [f"u{i}"] * 120}))
    files = table.plan()[0].files
    assert len(files) > 1 and all(f.level > 0 for f in files)
    loader = VectorLoader(table.store)
    forms = {type(v) for es in snapshot_index(table.store, table.latest_snapshot()).values()
             for v in loader.vectors(es).values()}
    assert forms == {BitMap64 if bitmap64 == "true" else BitMap}
    size = max(f.file_size for f in files)
    df = _load(spark, warehouse, "db.t", **{"source.split.target-size": str(size),
                                            "source.split.open-file-cost": "0"})
    assert df.rdd.getNumPartitions() == len(files)
    expected = table.to_arrow()
    assert expected.num_rows == 400
    assert _sorted(_spark_rows(df), "id") == _sorted(expected, "id")
    got = _spark_rows(df.filter("v = 'u1'"))
    assert sorted(got.column("id").to_pylist()) == list(range(50, 100))
