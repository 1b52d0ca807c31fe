"""How a Spark read is cut into partitions: filter pruning to the matching buckets, and packing of
small splits into few Spark tasks (each task of a Python source has a fixed cost of tens of ms)."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pytest
from pyspark.sql import functions as F
from pyspark.sql.datasource import EqualTo, GreaterThanOrEqual, LessThan

from lake_assets import Catalog
from lake_assets.errors import OptionError
from lake_assets.spark.reader import LakePushdownReader, LakeReader, SplitPartition, pack_splits, plan_read
from lake_assets.spark.source_options import SourceOptions

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

MONTHS = [f"2024-{m:02d}" for m in range(1, 13)]
BUCKETS = 4
ONE_SPLIT_PER_PARTITION = {"source.split.target-size": "1"}  # every split is heavier than 1 byte


def _months_table(catalog: Catalog):
    """12 partitions × 4 buckets, two commits: 48 splits of 2 files each."""
    table = catalog.create_table(
        "db.t", pa.schema([("id", pa.int64()), ("m", pa.string()), ("v", pa.int64())]),
        primary_keys=["id", "m"], partition_keys=["m"], options={"bucket": str(BUCKETS), "write-only": "true"},
    )
    ids = list(range(1200))
    rows = {"id": ids, "m": [MONTHS[i % 12] for i in ids], "v": ids}
    table.write_arrow(pa.table(rows, schema=table.arrow_schema))
    changed = [i for i in ids if i % 5]  # 960 rows: every month and bucket gets a second file
    update = {"id": changed, "m": [MONTHS[i % 12] for i in changed], "v": [-i for i in changed]}
    table.write_arrow(pa.table(update, schema=table.arrow_schema))
    return table


def _options(warehouse: str, **extra: str) -> SourceOptions:
    return SourceOptions.parse({"path": "db.t", "warehouse": warehouse, **extra})


def _split_keys(parts) -> Counter:
    return Counter((s.partition, s.bucket) for p in parts for s in p.splits)


def _load(spark, warehouse: str, **options: str):
    reader = spark.read.format("lake").option("warehouse", warehouse)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load("db.t")


def test_small_splits_are_packed_and_each_is_read_once(catalog: Catalog, warehouse: str) -> None:
    table = _months_table(catalog)
    splits = table.plan()
    assert len(splits) == 12 * BUCKETS
    expected = Counter((s.partition, s.bucket) for s in splits)

    packed = plan_read(table, _options(warehouse, **{"source.split.min-partitions": "3"}))
    assert all(isinstance(p, SplitPartition) for p in packed)
    # small table: about as many partitions as asked for (at least that many: no partition is
    # heavier than the total / 3; next-fit may leave a remainder), not one per bucket
    assert 3 <= len(packed) <= 4
    assert _split_keys(packed) == expected

    one = plan_read(table, _options(warehouse, **{"source.split.min-partitions": "1"}))
    assert len(one) == 1 and _split_keys(one) == expected

    apart = plan_read(table, _options(warehouse, **ONE_SPLIT_PER_PARTITION))
    assert len(apart) == 12 * BUCKETS and _split_keys(apart) == expected


def test_pack_splits_sizes_partitions_like_spark_file_sources(catalog: Catalog, warehouse: str) -> None:
    splits = _months_table(catalog).plan()
    assert pack_splits([], 100, 10, 4) == []
    assert all(len(s.files) == 2 for s in splits) and max(f.file_size for s in splits for f in s.files) < 2**20
    # files smaller than the open cost weigh the open cost: 2 files × 1 MiB per split, target 4 MiB
    groups = pack_splits(splits, target_size=4 * 2**20, open_file_cost=2**20, min_parts=1)
    assert len(groups) == 24 and all(len(g) == 2 for g in groups)
    # a split heavier than the target is alone, never cut (it is a merge unit)
    alone = pack_splits(splits[:3], target_size=2**20, open_file_cost=2**20, min_parts=1)
    assert [len(g) for g in alone] == [1, 1, 1]


def test_min_partitions_option_is_checked(catalog: Catalog, warehouse: str) -> None:
    table = _months_table(catalog)
    with pytest.raises(OptionError, match="min-partitions"):
        plan_read(table, _options(warehouse, **{"source.split.min-partitions": "0"}))


def test_filter_option_plans_only_the_months_buckets(spark, catalog: Catalog, warehouse: str) -> None:
    _months_table(catalog)
    opts = {**ONE_SPLIT_PER_PARTITION, "filter": '[["m", "=", "2024-03"], ["id", ">=", 100], ["id", "<", 700]]'}
    full = _load(spark, warehouse, **ONE_SPLIT_PER_PARTITION)
    assert full.rdd.getNumPartitions() == 12 * BUCKETS

    reader = LakeReader(_options(warehouse, **opts), full.schema, None)
    planned = reader.partitions()
    assert len(_split_keys(planned)) == BUCKETS  # the month's buckets only
    filtered = _load(spark, warehouse, **opts)
    assert filtered.rdd.getNumPartitions() == len(planned) == BUCKETS

    cond = (F.col("m") == "2024-03") & (F.col("id") >= 100) & (F.col("id") < 700)
    expected = sorted(tuple(r) for r in full.filter(cond).collect())
    assert expected and sorted(tuple(r) for r in filtered.collect()) == expected


def test_pushed_filters_plan_only_the_months_buckets(spark, catalog: Catalog, warehouse: str) -> None:
    _months_table(catalog)
    opts = {**ONE_SPLIT_PER_PARTITION, "filter-pushdown": "true"}
    full = _load(spark, warehouse, **ONE_SPLIT_PER_PARTITION)

    # what Spark hands the reader for the query below, planned without Spark
    reader = LakePushdownReader(_options(warehouse, **opts), full.schema, None)
    rejected = list(reader.pushFilters([EqualTo(("m",), "2024-03"), GreaterThanOrEqual(("id",), 100),
                                        LessThan(("id",), 700)]))
    assert rejected == []
    assert len(_split_keys(reader.partitions())) == BUCKETS

    cond = (F.col("m") == "2024-03") & (F.col("id") >= 100) & (F.col("id") < 700)
    assert _load(spark, warehouse, **opts).filter(cond).rdd.getNumPartitions() == BUCKETS  # fresh DataFrame
    expected = sorted(tuple(r) for r in full.filter(cond).collect())  # no pushdown: Spark filters
    got = sorted(tuple(r) for r in _load(spark, warehouse, **opts).filter(cond).collect())
    assert expected and got == expected


def test_packed_read_equals_the_core_read(spark, catalog: Catalog, warehouse: str) -> None:
    table = _months_table(catalog)
    df = _load(spark, warehouse, **{"source.split.min-partitions": "2"})
    assert df.rdd.getNumPartitions() == 2
    got = df.toArrow().sort_by([("id", "ascending")])
    assert got.to_pylist() == table.to_arrow().sort_by([("id", "ascending")]).to_pylist()
