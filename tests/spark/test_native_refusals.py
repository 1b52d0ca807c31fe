"""What the native write leaves to the Python path, and its sequence-base check (no Spark session).

Every table property the native write cannot honour is refused by name (`native_refusals`), so
`write_table_native` writes such a table through `write_table` unchanged; a commit landing while a
native write ran is refused when it numbered a bucket at or above the write's numbers.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.spark.native_eligibility import native_refusals
from lake_assets.spark.native_sequences import check_sequence_bases, sequence_base
from lake_assets.spark.task_sequences import BucketWriterConflictError
from lake_assets.spec.manifest import DataFileMeta

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string()), ("x", pa.float64())])


def _table(catalog: Catalog, options: dict[str, str], schema: pa.Schema = SCHEMA, keys: list[str] | None = None,
           partitions: list[str] | None = None):
    return catalog.create_table("db.t", schema, primary_keys=["id", "dt"] if keys is None else keys,
                                partition_keys=["dt"] if partitions is None else partitions, options=options)


def test_a_plain_deduplicate_table_qualifies(catalog: Catalog) -> None:
    table = _table(catalog, {"bucket": "4", "file.compression": "zstd", "snapshot.num-retained.max": "50",
                             "metadata.stats-mode": "full", "fields.v.stats-mode": "none", "write-only": "true"})
    assert native_refusals(table) == []


@pytest.mark.parametrize(("options", "named"), [
    ({"merge-engine": "partial-update"}, "merge-engine = partial-update"),
    ({"merge-engine": "aggregation"}, "merge-engine = aggregation"),
    ({"merge-engine": "first-row"}, "merge-engine = first-row"),
    ({"changelog-producer": "input"}, "changelog-producer = input"),
    ({"changelog-producer": "lookup"}, "changelog-producer = lookup"),
    ({"deletion-vectors.enabled": "true"}, "deletion-vectors.enabled"),
    ({"sequence.field": "v"}, "option sequence.field"),
    ({"rowkind.field": "v"}, "option rowkind.field"),
    ({"file.format": "orc"}, "file.format = orc"),
    ({"file.compression": "lz4"}, "file.compression = lz4"),
    ({"parquet.enable.dictionary": "false"}, "option parquet.enable.dictionary"),
    ({"file.format.per.level": "0:avro"}, "option file.format.per.level"),
    ({"target-file-row-num": "100"}, "option target-file-row-num"),
    ({"target-file-size": "64 mb"}, "option target-file-size"),
])
def test_options_the_native_write_cannot_honour_are_named(catalog: Catalog, options: dict[str, str],
                                                          named: str) -> None:
    table = _table(catalog, {"bucket": "4", **options})
    assert any(named in r for r in native_refusals(table)), native_refusals(table)


def test_kinds_and_types_the_native_write_leaves_alone(catalog: Catalog, tmp_path) -> None:
    assert any("bucket = -1" in r for r in native_refusals(_table(catalog, {"bucket": "-1"})))
    other = Catalog(str(tmp_path / "b"))
    other.create_database("db")
    assert any("bucket = -2" in r for r in native_refusals(_table(other, {"bucket": "-2"})))
    append = Catalog(str(tmp_path / "c"))
    append.create_database("db")
    assert "an append table (no primary key)" in native_refusals(_table(append, {"bucket": "-1"}, keys=[]))
    floats = Catalog(str(tmp_path / "d"))
    floats.create_database("db")
    schema = pa.schema([pa.field("k", pa.float64(), nullable=False), pa.field("ts", pa.timestamp("ms"))])
    got = native_refusals(_table(floats, {"bucket": "2"}, schema, keys=["k"], partitions=[]))
    assert any("key column 'k'" in r for r in got) and any("precision 3" in r for r in got)


def test_input_columns_must_have_the_tables_spark_types(catalog: Catalog) -> None:
    from pyspark.sql.types import DoubleType, LongType, StringType

    table = _table(catalog, {"bucket": "2"})
    good = {"id": LongType(), "dt": StringType(), "v": StringType(), "x": DoubleType()}
    assert native_refusals(table, good) == []
    assert native_refusals(table, {**good, "id": StringType()}) == [
        "input column 'id' is StringType(), the table's type is LongType()"]
    assert "not the table's" in native_refusals(table, {**good, "extra": LongType()})[0]


def test_a_commit_landing_meanwhile_with_higher_numbers_refuses(catalog: Catalog) -> None:
    table = _table(catalog, {"bucket": "1"})
    table.write_arrow(pa.table({"id": [1, 2], "dt": ["a", "a"], "v": ["x", "y"], "x": [1.0, 2.0]}, schema=SCHEMA))
    planned, base = sequence_base(table.store)
    assert (planned, base) == (1, 2)  # sequence numbers 0 and 1 exist
    split = table.plan()[0]
    ours = CommitMessage(split.partition, 0, 1, (_shifted(split.files[0], base),))
    check_sequence_bases(table.store, planned, [ours])  # nothing landed meanwhile
    # another writer commits to the same bucket: its numbers (2, 3) reach this write's base
    table.write_arrow(pa.table({"id": [3, 4], "dt": ["a", "a"], "v": ["x", "y"], "x": [1.0, 2.0]}, schema=SCHEMA))
    with pytest.raises(BucketWriterConflictError, match="a commit landed while the native write ran"):
        check_sequence_bases(table.store, planned, [ours])
    # a write planned after it is above it again
    planned, base = sequence_base(table.store)
    check_sequence_bases(table.store, planned - 1, [CommitMessage(split.partition, 0, 1,
                                                                  (_shifted(split.files[0], base),))])


def _shifted(f: DataFileMeta, base: int) -> DataFileMeta:
    import dataclasses

    return dataclasses.replace(f, file_name="data-new-0.parquet", min_sequence_number=base,
                               max_sequence_number=base + 1)


def test_partitions_of_an_older_bucket_count_are_listed_and_their_files_refused(catalog: Catalog) -> None:
    from lake_assets.errors import UnsupportedFeatureError
    from lake_assets.spark.native_buckets import check_messages, stale_partitions
    from lake_assets.spark.native_sequences import plan_write_base

    table = _table(catalog, {"bucket": "2"})
    table.write_arrow(pa.table({"id": [1, 2], "dt": ["a", "b"], "v": ["x", "y"], "x": [1.0, 2.0]}, schema=SCHEMA))
    table.update_schema().set_option("bucket", "3").commit()
    table = catalog.get_table("db.t")
    table.write_arrow(pa.table({"id": [3], "dt": ["c"], "v": ["z"], "x": [3.0]}, schema=SCHEMA))
    base = plan_write_base(table.store)
    splits = {s.partition_values: s for s in table.plan()}
    assert base.bucket_counts == {splits[(d,)].partition: n for d, n in (("a", 2), ("b", 2), ("c", 3))}
    stale = stale_partitions(table, base.bucket_counts)
    assert sorted(stale) == sorted([splits[("a",)].partition, splits[("b",)].partition])
    assert "Cannot write partition dt=a of db.t with a new bucket num 3, but the previous bucket num is 2" in \
        stale[splits[("a",)].partition]
    # the driver's last check: a file of such a partition never reaches a commit
    into_c = CommitMessage(splits[("c",)].partition, 0, 3, (_shifted(splits[("c",)].files[0], base.first_sequence),))
    check_messages(stale, [into_c])
    into_a = CommitMessage(splits[("a",)].partition, 0, 3, (_shifted(splits[("a",)].files[0], base.first_sequence),))
    with pytest.raises(UnsupportedFeatureError, match=r"dt=a .*previous bucket num is 2"):
        check_messages(stale, [into_c, into_a])
