"""The distributed compact job: units on executors, one COMPACT commit, conflicts exit 4."""

from __future__ import annotations

from datetime import timedelta

import pyarrow as pa
import pytest
from pyroaring import BitMap, BitMap64

from lake_assets import Catalog
from lake_assets.ops.deletion_vectors import snapshot_index
from lake_assets.spark.jobs import compact
from lake_assets.spark.jobs.errors import EXIT_CONFLICT, EXIT_OK
from lake_assets.spec.deletion_vector import read_vector
from tests.java.oracle import PaimonJava
from tests.spark.test_jobs_common import make_pk_table, run_job_main, sorted_rows, write_batches

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_universal_compaction_commits_once(capsys, spark, tmp_path):
    wh = str(tmp_path)
    table = make_pk_table(wh)
    write_batches(table, 6)
    expected = sorted_rows(table)
    before = table.latest_snapshot().id
    code, out = run_job_main(capsys, compact.main, "--warehouse", wh, "--table", "db.t")
    assert code == EXIT_OK, out
    assert out["status"] == "ok" and out["commit_kind"] == "COMPACT"
    assert out["snapshot_id"] == before + 1 == table.latest_snapshot().id  # exactly one commit
    assert out["tasks"] == 4  # 2 partitions x 2 buckets
    assert out["files_in"] == 24 and out["rows_in"] == 240
    assert out["rows_out"] == 40 and out["files_out"] == 4  # 40 distinct keys
    assert out["health_before"]["level0_files"] == 24 and out["health_after"]["level0_files"] == 0
    assert out["health_after"]["files"] < out["health_before"]["files"]
    assert sorted_rows(table) == expected
    # nothing left to do: no snapshot
    code, out = run_job_main(capsys, compact.main, "--warehouse", wh, "--table", "db.t")
    assert code == EXIT_OK and out["snapshot_id"] is None and out["tasks"] == 0


def test_full_compaction_of_one_partition_and_max_units(capsys, spark, tmp_path):
    wh = str(tmp_path)
    table = make_pk_table(wh)
    write_batches(table, 2)
    expected = sorted_rows(table)
    code, out = run_job_main(capsys, compact.main, "--warehouse", wh, "--table", "db.t", "--full",
                             "--partition", "dt=2024-01-01", "--max-units", "1")
    assert code == EXIT_OK, out
    assert out["tasks"] == 1 and out["full"] is True and out["commit_kind"] == "COMPACT"
    health = {(r["partition"], r["bucket"]): r for r in table.health().to_pylist()}
    compacted = [k for k, r in health.items() if r["level0_file_count"] == 0]
    assert len(compacted) == 1 and compacted[0][0] == "dt=2024-01-01"
    code, out = run_job_main(capsys, compact.main, "--warehouse", wh, "--table", "db.t", "--full")
    assert code == EXIT_OK and out["tasks"] == 3
    assert all(r["level0_file_count"] == 0 and r["sorted_runs"] == 1 for r in table.health().to_pylist())
    assert sorted_rows(table) == expected


def test_append_table_small_files(capsys, spark, tmp_path):
    wh = str(tmp_path)
    cat = Catalog(wh)
    cat.create_database("db")
    table = cat.create_table("db.log", pa.schema([("k", pa.int64()), ("s", pa.string())]))
    for i in range(6):
        writer = table.new_writer("w", write_only=True)
        writer.write_arrow(pa.table({"k": [i, i + 100], "s": ["x", "y"]}))
        table.new_committer("w").commit(writer.prepare_commit(), i)
    code, out = run_job_main(capsys, compact.main, "--warehouse", wh, "--table", "db.log")
    assert code == EXIT_OK and out["commit_kind"] == "COMPACT", out
    assert out["files_in"] == 6 and out["files_out"] == 1 and out["rows_out"] == 12
    assert table.to_arrow().num_rows == 12


def test_concurrent_compaction_is_a_conflict(capsys, spark, tmp_path, monkeypatch):
    wh = str(tmp_path)
    table = make_pk_table(wh)
    write_batches(table, 6)
    expected = sorted_rows(table)
    run_units = compact.SparkUnits.__call__

    def lose_the_race(self, store, plan):
        Catalog(wh).get_table("db.t").compact(full=True)  # another job rewrites the planned files first
        return run_units(self, store, plan)

    monkeypatch.setattr(compact.SparkUnits, "__call__", lose_the_race)
    latest = table.latest_snapshot().id
    code, out = run_job_main(capsys, compact.main, "--warehouse", wh, "--table", "db.t")
    assert code == EXIT_CONFLICT, out
    assert out["status"] == "error" and "CommitConflictError" in out["error"]
    assert table.latest_snapshot().id == latest + 1  # only the other compaction committed
    assert sorted_rows(table) == expected
    # the loser's output files were removed: nothing unreferenced but what the winner replaced
    assert table.remove_orphan_files(older_than=timedelta(0), dry_run=True).paths == []


def test_full_compaction_combines_small_non_overlapping_files(tmp_path):
    table = make_pk_table(str(tmp_path), partitioned=False)
    for i in range(6):
        table.write_arrow(pa.table({"id": list(range(i * 10, i * 10 + 10)), "dt": ["d"] * 10,
                                    "v": [float(i)] * 10}))
    files_before = sum(r["file_count"] for r in table.health().to_pylist())
    table.compact(full=True)
    health = table.health().to_pylist()
    files_after = sum(r["file_count"] for r in health)
    assert files_after == len(health) < files_before  # small key-disjoint files combine: one per bucket


@pytest.mark.parametrize("bitmap64", ["false", "true"])
def test_deletion_vectors_from_the_dedicated_job(capsys, spark, tmp_path, bitmap64):
    """Write-only writers leave level 0 (invisible in a deletion-vector table); the job compacts it
    on executors, the vectors (32- or 64-bit, as the table says) travel back in the commit
    messages, one COMPACT commit swaps them in."""
    wh = str(tmp_path)
    cat = Catalog(wh)
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    table = cat.create_table("db.dv", schema, primary_keys=["id"],
                             options={"bucket": "2", "deletion-vectors.enabled": "true", "write-only": "true",
                                      "deletion-vectors.bitmap64": bitmap64})
    table.write_arrow(pa.table({"id": range(100), "v": ["a"] * 100}, schema=schema))
    code, out = run_job_main(capsys, compact.main, "--warehouse", wh, "--table", "db.dv")
    assert code == EXIT_OK and out["commit_kind"] == "COMPACT", out
    table.write_arrow(pa.table({"id": range(0, 100, 4), "v": ["b"] * 25}, schema=schema))
    assert table.to_arrow().column("v").to_pylist().count("b") == 0  # still in level 0
    code, out = run_job_main(capsys, compact.main, "--warehouse", wh, "--table", "db.dv")
    assert code == EXIT_OK and out["commit_kind"] == "COMPACT", out
    rows = {r["id"]: r["v"] for r in table.to_arrow().to_pylist()}
    assert rows == {i: "b" if i % 4 == 0 else "a" for i in range(100)}
    assert sum(r["deletion_vector_rows"] for r in table.health().to_pylist()) == 25
    written = [read_vector(table.store.file_io.read_bytes(table.store.paths.index_file(e.file_name)), r, e.file_name)
               for es in snapshot_index(table.store, table.latest_snapshot()).values() for e in es
               for r in e.dv_ranges or ()]
    assert written and {type(v) for v in written} == {BitMap64 if bitmap64 == "true" else BitMap}
    assert table.remove_orphan_files(older_than=timedelta(0), dry_run=True).paths == []


def test_append_table_with_deletion_vectors_deleted_as_docs_spark_md_says(capsys, spark, tmp_path, request):
    """docs/spark.md's delete runs as written (the warehouse a local directory here) and the job
    compacts on executors: the marked file is rewritten without its deleted rows, its vector
    leaves the index, the other files and their rows stay."""
    import re

    from tests.unit.test_readme import REPO

    here = str(tmp_path / "wh")
    cat = Catalog(here)
    cat.create_database("shop")
    schema = pa.schema([("user_id", pa.int64()), ("dt", pa.string()), ("n", pa.int64())])
    table = cat.create_table("shop.events", schema, partition_keys=["dt"],
                             options={"bucket": "-1", "deletion-vectors.enabled": "true"})
    for start in (0, 50):
        for day in ("2024-01-01", "2024-01-02"):
            table.write_arrow(pa.table({"user_id": range(start, start + 50), "dt": [day] * 50,
                                        "n": range(50)}, schema=schema))
    section = (REPO / "docs" / "spark.md").read_text().split("#### Deleting rows", 1)[1]
    [block] = re.findall(r"^```python\n(.*?)^```", section.split("\n### ", 1)[0], flags=re.S | re.M)
    assert '"s3://lake/wh"' in block
    namespace: dict[str, object] = {}
    exec(compile(block.replace('"s3://lake/wh"', repr(here)), "docs/spark.md", "exec"), namespace)
    result = namespace["result"]
    assert (result.rows_deleted, result.files_marked) == (2, 1)  # users 17 and 42 of 2024-01-01's first file
    expected = sorted((r["user_id"], r["dt"]) for r in table.to_arrow().to_pylist())
    assert len(expected) == 198
    assert [r["vector_purge_files"] for r in table.health().to_pylist()] == [1, 0]
    # the executors import this checkout (PYTHONPATH), as the driver does
    import lake_assets

    where = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("lake_assets").__file__).collect()
    assert where == [lake_assets.__file__]

    code, out = run_job_main(capsys, compact.main, "--warehouse", here, "--table", "shop.events")
    assert code == EXIT_OK and out["commit_kind"] == "COMPACT", out
    assert (out["files_in"], out["rows_in"], out["rows_out"]) == (1, 50, 48)
    table = Catalog(here).get_table("shop.events")
    assert sorted((r["user_id"], r["dt"]) for r in table.to_arrow().to_pylist()) == expected
    assert all(not (e.dv_ranges or ()) for es in snapshot_index(table.store, table.latest_snapshot()).values()
               for e in es)  # the vector went with its file
    health = table.health().to_pylist()
    assert [(r["deletion_vector_rows"], r["vector_purge_files"], r["file_count"]) for r in health] == [(0, 0, 2),
                                                                                                        (0, 0, 2)]
    code, out = run_job_main(capsys, compact.main, "--warehouse", here, "--table", "shop.events")
    assert code == EXIT_OK and out["tasks"] == 0  # nothing left to purge
    # the session's oracle, asked for only now: without Java the Spark part above still ran
    _java_reads_the_same(request.getfixturevalue("java"), here, "shop.events", table.to_arrow())


def _java_reads_the_same(java: PaimonJava, warehouse: str, name: str, ours: pa.Table) -> None:
    """Paimon Java 0.9 reads ``ours`` from the table and sees no deletion vector (the session's
    oracle, ``java`` of tests/conftest.py: unavailable, skipped as there, failed under CI)."""
    from tests.differential.helpers import assert_same_rows

    assert_same_rows(ours, java.read(warehouse, name))
    assert not [f for s in java.deletion_vectors(warehouse, name) for f in s["files"] if "deleted" in f]
