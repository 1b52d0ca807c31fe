"""``df.write.format("lake")`` on a primary-key table with any input partitioning.

Tasks of unrouted input write every bucket they hold rows of, with sequence numbers interleaved
by task (`lake_assets.spark.task_sequences`): the versions of a key never share a number, so the
core, Paimon Java 0.9 (reading, and compacting) and pypaimon keep the same version.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException

from lake_assets import Catalog
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.spark.task_sequences import TASK_SLOTS, BucketWriterConflictError, TaskFiles, check_sequences_disjoint
from lake_assets.spec.binary_row import serialize_row
from lake_assets.spec.manifest import DataFileMeta
from tests.java.oracle import PaimonJava

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string()), ("n", pa.int64())])
SPARK_SCHEMA = "id long, dt string, v string, n long"


def _save(df, warehouse: str, mode: str = "append") -> None:
    df.write.format("lake").option("warehouse", warehouse).mode(mode).save("db.t")


def _frame(spark, parts: list[list[tuple]]):
    """A DataFrame whose partition i holds exactly ``parts[i]``, in that order."""
    flat = [r for p in parts for r in p]
    rdd = spark.sparkContext.parallelize(range(len(parts)), len(parts)).flatMap(lambda i: parts[i])
    df = spark.createDataFrame(rdd, SPARK_SCHEMA)
    assert df.rdd.getNumPartitions() == len(parts) and len(flat) == df.count()
    return df


def _by_id(table: pa.Table) -> dict[int, tuple]:
    return {r["id"]: (r["dt"], r["v"], r["n"]) for r in table.to_pylist()}


def _levels(catalog: Catalog) -> list[tuple[int, int, int]]:
    """(bucket, min sequence number, max sequence number) of every live file."""
    table = catalog.get_table("db.t")
    return sorted((s.bucket, f.min_sequence_number, f.max_sequence_number) for s in table.plan() for f in s.files)


def test_unrouted_write_across_tasks_every_reader_agrees(spark, catalog: Catalog, warehouse: str,
                                                         java: PaimonJava) -> None:
    catalog.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "2"})
    days = ("2024-01-01", "2024-01-02")
    # 4 tasks, each with rows of every partition and bucket; ids 0-59 three times over (three
    # versions of each key in one write, spread over tasks), then a second write of half the keys
    parts = [[(i, days[i % 2], f"t{t}-r{r}", t) for r, i in enumerate(range(t * 15, t * 15 + 15))] for t in range(4)]
    parts += [[(i, days[i % 2], f"t{t}-dup{r}", t) for r, i in enumerate(range(59, -1, -1))] for t in range(4, 6)]
    _save(_frame(spark, parts), warehouse)
    table = catalog.get_table("db.t")
    ours = table.to_arrow()
    assert ours.num_rows == 60
    versions: dict[int, set[str]] = {}
    for rows in parts:
        for i, _, v, _ in rows:
            versions.setdefault(i, set()).add(v)
    assert all(v in versions[i] for i, (_, v, _) in _by_id(ours).items())  # one of its versions, once
    files = _levels(catalog)
    # level-0 files of each task in the (partition, bucket)s it had rows of, numbered in its slot
    assert len(files) > 2 * 2 and {lo % TASK_SLOTS for _, lo, _ in files} == set(range(6))
    assert all(lo % TASK_SLOTS == hi % TASK_SLOTS for _, lo, hi in files)
    assert java.read(warehouse, "db.t").sort_by("id").equals(ours.sort_by("id"))

    updates = [[(i, days[i % 2], f"u{t}", 100 + t) for i in range(t, 60, 4)] for t in range(4)]
    _save(_frame(spark, updates), warehouse)
    ours = catalog.get_table("db.t").to_arrow()
    assert {i: n for i, (_, _, n) in _by_id(ours).items()} == {i: 100 + i % 4 for i in range(60)}
    assert java.read(warehouse, "db.t").sort_by("id").equals(ours.sort_by("id"))

    # Java compacts the interleaved files; we and Java read the same again
    java.compact(warehouse, "db.t")
    after = catalog.get_table("db.t").to_arrow()
    assert after.sort_by("id").equals(ours.sort_by("id"))
    assert java.read(warehouse, "db.t").sort_by("id").equals(ours.sort_by("id"))


def test_later_rows_win_within_a_task_and_readers_agree_across_tasks(spark, catalog: Catalog, warehouse: str,
                                                            java: PaimonJava) -> None:
    catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    # one bucket, keys 2 and 3 in both partitions
    parts = [
        [(1, "d", "p0-first", 0), (2, "d", "p0", 0), (1, "d", "p0-later", 0), (3, "d", "p0-rank2", 0)],
        [(3, "d", "p1-rank0", 1), (2, "d", "p1", 1)],
    ]
    _save(_frame(spark, parts), warehouse)
    got = {i: v for i, (_, v, _) in _by_id(catalog.get_table("db.t").to_arrow()).items()}
    # key 1: only in p0, its later row; keys 2 and 3: one partition's version, the same for every reader
    assert got[1] == "p0-later" and got[2] in ("p0", "p1") and got[3] in ("p0-rank2", "p1-rank0")
    assert {r["id"]: r["v"] for r in java.read(warehouse, "db.t").to_pylist()} == got
    from tests.interop.paimon import Pypaimon

    driver = Pypaimon()
    if driver.available():  # pypaimon 2.1 keeps the same versions
        assert {r["id"]: r["v"] for r in driver.read(warehouse, "db.t").to_pylist()} == got
    seqs = _levels(catalog)
    assert sorted((lo % TASK_SLOTS, hi % TASK_SLOTS) for _, lo, hi in seqs) == [(0, 0), (1, 1)]


def test_deletes_and_partial_updates_across_tasks(spark, catalog: Catalog, warehouse: str,
                                                   java: PaimonJava) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("a", pa.string()), ("b", pa.string()),
                        ("op", pa.string())])
    catalog.create_table("db.t", schema, primary_keys=["id"],
                         options={"bucket": "2", "merge-engine": "partial-update", "rowkind.field": "op",
                                  "partial-update.remove-record-on-delete": "true"})
    spark_schema = "id long, a string, b string, op string"
    base = spark.createDataFrame([(i, f"a{i}", None, "+I") for i in range(20)], spark_schema).repartition(3)
    _save(base, warehouse)
    # b arrives for every key from other tasks than a did; a delete of key 0 in a third task
    rdd = spark.sparkContext.parallelize([[(i, None, f"b{i}", "+I") for i in range(1, 20)], [(0, None, None, "-D")]], 2)
    _save(spark.createDataFrame(rdd.flatMap(lambda rows: rows), spark_schema), warehouse)
    ours = catalog.get_table("db.t").to_arrow().select(["id", "a", "b"]).sort_by("id")
    assert ours.to_pylist() == [{"id": i, "a": f"a{i}", "b": f"b{i}"} for i in range(1, 20)]
    assert java.read(warehouse, "db.t").select(["id", "a", "b"]).sort_by("id").equals(ours)


def _file(name: str, lo: int, hi: int) -> DataFileMeta:
    return DataFileMeta(file_name=name, file_size=1, row_count=1, min_key=b"", max_key=b"", key_stats=None,  # type: ignore[arg-type]
                        value_stats=None, min_sequence_number=lo, max_sequence_number=hi,  # type: ignore[arg-type]
                        schema_id=0, level=0)


def _task(stride: int, *files: DataFileMeta) -> TaskFiles:
    return TaskFiles([CommitMessage(serialize_row([], []), 0, 1, new_files=tuple(files))], stride)


def test_check_refuses_tasks_that_share_sequence_numbers(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    s = TASK_SLOTS
    # slots 0 and 1 from one base: interleaved, never equal
    check_sequences_disjoint(table, [_task(s, _file("a", 10, 10 + 5 * s)), _task(s, _file("b", 11, 11 + 9 * s))])
    # dense tasks one after another are fine, overlapping ones are not
    check_sequences_disjoint(table, [_task(1, _file("a", 0, 9)), _task(1, _file("b", 10, 19))])
    with pytest.raises(BucketWriterConflictError, match=r"bucket 0 .* 2 Spark tasks"):
        check_sequences_disjoint(table, [_task(1, _file("a", 0, 9)), _task(1, _file("b", 5, 19))])
    # a base moved by a commit between the tasks' starts: slot 1 of base 10 is slot 0 of base 11
    with pytest.raises(BucketWriterConflictError):
        check_sequences_disjoint(table, [_task(s, _file("a", 11, 11 + s)), _task(s, _file("b", 11, 11 + 2 * s))])
    with pytest.raises(BucketWriterConflictError, match="off its stride"):
        check_sequences_disjoint(table, [_task(s, _file("a", 10, 11))])


def test_check_refuses_append_tasks_whose_files_share_a_first_number(catalog: Catalog) -> None:
    """A fixed-bucket append table: overlapping numbers are read in order (files by first number),
    but two files starting at one number are one to Java 0.9's compaction manager."""
    table = catalog.create_table("db.a", SCHEMA, options={"bucket": "1", "bucket-key": "id"})
    s = TASK_SLOTS
    check_sequences_disjoint(table, [_task(s, _file("a", 10, 10 + 5 * s)), _task(s, _file("b", 11, 11 + 9 * s))])
    with pytest.raises(BucketWriterConflictError, match=r"bucket 0 .* both start at sequence number 11"):
        check_sequences_disjoint(table, [_task(s, _file("a", 11, 11 + s)), _task(s, _file("b", 11, 11 + 2 * s))])
    # an unaware-bucket table's numbers order nothing
    unaware = catalog.create_table("db.u", SCHEMA, options={"bucket": "-1"})
    check_sequences_disjoint(unaware, [_task(1, _file("a", 0, 9)), _task(1, _file("b", 0, 9))])


def test_refused_commit_deletes_its_files(spark, catalog: Catalog, warehouse: str) -> None:
    """A commit the check refuses leaves no snapshot and no file (hook: the bucket column of
    routed input on rows that were not routed by bucket gives two dense writers one bucket)."""
    from lake_assets.spark.schema import BUCKET_COLUMN

    catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    df = _frame(spark, [[(i, "d", "x", 0) for i in range(5)], [(i, "d", "y", 1) for i in range(5)]])
    with pytest.raises((Py4JJavaError, PySparkException), match=r"BucketWriterConflictError|2 Spark tasks"):
        _save(df.withColumn(BUCKET_COLUMN, df.n.cast("int")), warehouse)
    table = catalog.get_table("db.t")
    assert table.latest_snapshot() is None
    assert not [p for p in Path(warehouse).rglob("*.parquet") if "bucket-" in str(p.parent)]
