"""Spark's writes, the streaming sink and the jobs on a branch (``db.t$branch_b1``), against Paimon Java 0.9.

Java builds the table once: a partitioned fixed-bucket primary-key table, a write to the main
branch, a tag ``t1`` and a branch ``b1`` made from it. Spark writes to the branch (``write_table``,
``write_table_native``, ``df.write.format("lake")`` with the ``branch`` option, the streaming sink
across a failed commit and a restart, the ingest, compact and expire jobs with ``--branch``): the
snapshots land in ``branch/branch-b1``, Java 0.9 reads the branch as we do and the main branch is
unchanged. What the core refuses on a branch, Spark refuses with the core's message, before a job runs.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.errors import StreamingQueryException

from lake_assets import Catalog
from lake_assets.errors import UnsupportedFeatureError
from tests.java.oracle import PaimonJava
from tests.spark.test_jobs_common import run_job_main

from .helpers import assert_same_rows

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string())])
IDENT = "db.t"
B1 = f"{IDENT}$branch_b1"
DDL = "id long, dt string, v string"


def rows(ids: range, dt: str, tag: str) -> pa.Table:
    return pa.table({"id": list(ids), "dt": [dt] * len(ids), "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


@pytest.fixture(scope="module")
def base(java: PaimonJava, tmp_path_factory: pytest.TempPathFactory) -> Path:
    wh = tmp_path_factory.mktemp("branch_spark") / "wh"
    w = str(wh)
    java.create_table(w, IDENT, SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "2"})
    java.write(w, IDENT, rows(range(0, 6), "d1", "a"))  # 1
    java.create_tag(w, IDENT, "t1")
    java.create_branch(w, IDENT, "b1", tag="t1")
    return wh


def _copy(base: Path, tmp_path: Path) -> str:
    wh = tmp_path / "wh"
    shutil.copytree(base, wh)
    return str(wh)


def _main_unchanged(java: PaimonJava, w: str) -> None:
    assert [s["id"] for s in java.snapshots(w, IDENT)] == [1]
    assert_same_rows(java.read(w, IDENT), rows(range(0, 6), "d1", "a"))


def test_spark_batch_writes_to_a_branch_are_read_by_java(java: PaimonJava, base: Path, tmp_path: Path, spark) -> None:  # type: ignore[no-untyped-def]
    from lake_assets.spark import register, write_table, write_table_native

    register(spark)  # the source's own write below
    w = _copy(base, tmp_path)
    frame = lambda t: spark.createDataFrame(t.to_pylist(), DDL)  # noqa: E731
    write_table(frame(rows(range(4, 8), "d1", "b")), w, IDENT, branch="b1")  # b1's 2
    (frame(rows(range(0, 3), "d2", "c")).write.format("lake").option("warehouse", w).option("branch", "b1")
     .mode("append").save(IDENT))  # b1's 3
    result = write_table_native(frame(rows(range(1, 3), "d1", "n")), w, B1)  # b1's 4
    assert result.native, result.refusals  # Spark's own Parquet writer, committed to the branch
    # an overwrite of one partition on the branch (b1's 5)
    write_table(frame(rows(range(7, 9), "d2", "o")), w, B1, mode="overwrite", overwrite_partitions={"dt": "d2"})
    branch = Catalog(w).get_table(B1)
    expected = pa.concat_tables([rows(range(0, 1), "d1", "a"), rows(range(1, 3), "d1", "n"),
                                 rows(range(3, 4), "d1", "a"), rows(range(4, 8), "d1", "b"),
                                 rows(range(7, 9), "d2", "o")])
    assert_same_rows(branch.to_arrow(), expected)
    assert [s["id"] for s in java.snapshots(w, B1)] == [1, 2, 3, 4, 5]
    assert_same_rows(java.read(w, B1), expected)
    for sid in (2, 3, 4):
        assert_same_rows(java.read(w, B1, snapshot_id=sid), branch.to_arrow(snapshot_id=sid))
    _main_unchanged(java, w)
    # Java writes to the branch after Spark, and Spark again after Java
    java.write(w, B1, rows(range(20, 22), "d2", "j"))
    write_table(frame(rows(range(21, 23), "d2", "s")), w, IDENT, branch="b1")
    after = Catalog(w).get_table(B1)
    assert_same_rows(after.to_arrow(), java.read(w, B1))
    assert after.to_arrow().num_rows == expected.num_rows + 3


def test_the_streaming_sink_on_a_branch_is_exactly_once(java: PaimonJava, base: Path, tmp_path: Path, spark) -> None:  # type: ignore[no-untyped-def]
    from lake_assets.spark import register

    register(spark)
    w = _copy(base, tmp_path)
    landing, checkpoint, marker = tmp_path / "landing", tmp_path / "checkpoint", tmp_path / "fail-once"
    landing.mkdir()
    pq.write_table(rows(range(10, 14), "d3", "s"), landing / "part-00000.parquet")

    def run(**options: str) -> None:
        df = spark.readStream.schema(DDL).option("maxFilesPerTrigger", 1).parquet(str(landing))
        writer = (df.writeStream.format("lake").option("warehouse", w).option("branch", "b1")
                  .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True))
        for k, v in options.items():
            writer = writer.option(k, v)
        query = writer.start(IDENT)
        try:
            query.awaitTermination(120)
        finally:
            query.stop()

    # batch 0 commits to the branch, then the commit call fails: the restart replays it, commits nothing
    marker.touch()
    with pytest.raises(StreamingQueryException, match="injected commit failure"):
        run(**{"test.fail-commit": "after", "test.fail-commit-marker": str(marker)})
    branch = Catalog(w).get_table(B1)
    assert [s.commit_identifier for s in branch.snapshots()][1:] == [0]
    pq.write_table(rows(range(14, 16), "d3", "s"), landing / "part-00001.parquet")
    run()
    assert [s.commit_identifier for s in branch.snapshots()][1:] == [0, 1]
    expected = pa.concat_tables([rows(range(0, 6), "d1", "a"), rows(range(10, 16), "d3", "s")])
    assert_same_rows(branch.to_arrow(), expected)
    assert_same_rows(java.read(w, B1), expected)
    _main_unchanged(java, w)


def test_the_jobs_run_on_a_branch(java: PaimonJava, base: Path, tmp_path: Path, capsys, spark) -> None:  # type: ignore[no-untyped-def]
    from lake_assets.spark.jobs import compact, expire, ingest, remove_orphans
    from lake_assets.spark.jobs.errors import EXIT_CONFIG, EXIT_OK

    w = _copy(base, tmp_path)
    src = tmp_path / "src"
    src.mkdir()
    pq.write_table(rows(range(3, 9), "d1", "i").drop(["dt"]), src / "in.parquet")
    common = ["--warehouse", w, "--table", IDENT, "--branch", "b1"]
    for n in range(2):  # b1's 2 and 3: two level-0 runs for the compaction
        code, out = run_job_main(capsys, ingest.main, *common, "--source", str(src), "--format", "parquet",
                                 "--partition", "dt=d1")
        assert code == EXIT_OK, out
        assert out["table"] == B1 and out["snapshot_id"] == 2 + n
    code, out = run_job_main(capsys, compact.main, *common, "--full")
    assert code == EXIT_OK, out
    assert out["commit_kind"] == "COMPACT" and out["snapshot_id"] == 4
    code, out = run_job_main(capsys, expire.main, *common, "--retain-min", "1", "--retain-max", "1")
    assert code == EXIT_OK, out
    assert out["expired_snapshots"] == 3
    branch = Catalog(w).get_table(B1)
    assert [s.id for s in branch.snapshots()] == [4]
    expected = pa.concat_tables([rows(range(0, 3), "d1", "a"), rows(range(3, 9), "d1", "i")])
    assert_same_rows(branch.to_arrow(), expected)
    assert_same_rows(java.read(w, B1), expected)
    _main_unchanged(java, w)
    assert_same_rows(java.read(w, IDENT, tag="t1"), rows(range(0, 6), "d1", "a"))  # the branch's base tag
    # what the core refuses on a branch fails naming it, before anything runs
    code, out = run_job_main(capsys, remove_orphans.main, *common)
    assert code == EXIT_CONFIG, out  # a refusal: running it again as it is fails the same way
    assert "UnsupportedFeatureError: Cannot remove orphan files of db.t$branch_b1" in out["error"]
    assert "What you can do: run it on the main branch" in out["error"]
    code, out = run_job_main(capsys, compact.main, "--warehouse", w, "--table", B1, "--branch", "other")
    assert code == EXIT_CONFIG and "contradicts" in out["error"]


def test_what_the_core_refuses_on_a_branch_spark_refuses(base: Path, tmp_path: Path, spark) -> None:  # type: ignore[no-untyped-def]
    """Spark's writes go through the core's branch table: its refusal, with its message, before Spark runs."""
    from lake_assets.spark import write_table, write_table_native

    w = _copy(base, tmp_path)
    Catalog(w).get_table(IDENT).update_schema().set_option("tag.default-time-retained", "1 d").commit()
    Catalog(w).get_table(IDENT).delete_branch("b1")
    Catalog(w).get_table(IDENT).create_branch("b1")  # carries the option from main's latest schema
    before = sorted(p for p in Path(w).rglob("*") if p.is_file())
    with pytest.raises(UnsupportedFeatureError) as core:
        Catalog(w).get_table(B1).write_arrow(rows(range(1), "d1", "x"))
    assert "tag.default-time-retained" in str(core.value)
    df = spark.createDataFrame([(1, "d1", "z")], DDL)
    for write in (write_table, write_table_native):
        with pytest.raises(UnsupportedFeatureError) as spark_error:
            write(df, w, B1)
        assert str(spark_error.value) == str(core.value)
    assert sorted(p for p in Path(w).rglob("*") if p.is_file()) == before
