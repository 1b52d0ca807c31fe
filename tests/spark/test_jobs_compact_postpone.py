"""The compact job on postpone-bucket tables (``bucket = -2``) written by pypaimon 2.1: one Spark
task per partition moves the postponed rows into real buckets, one COMPACT commit; pypaimon and
we then read the same rows; a re-run is a no-op and a lost race is a conflict."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.spark.jobs import compact
from lake_assets.spark.jobs import compact_postpone as job_postpone
from lake_assets.spark.jobs.errors import EXIT_CONFIG, EXIT_CONFLICT, EXIT_OK
from tests.interop.paimon import Pypaimon, canonical, missing
from tests.spark.test_jobs_common import run_job_main

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                    ("v", pa.string())])


@pytest.fixture(scope="module")
def pypaimon() -> Pypaimon:
    driver = Pypaimon()
    if not driver.available():
        missing(f"pypaimon venv not found ({driver.python}); create it with `make venv-paimon`")
    return driver


def data(dt: str, ids: range, tag: str) -> pa.Table:
    return pa.table({"dt": [dt] * len(ids), "id": list(ids), "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def postpone_table(pypaimon: Pypaimon, wh: Path) -> list[dict]:
    """Partitions a and b in bucket-postpone (3 files, the second commit updates keys 5..9 of a);
    the rows a Paimon reader sees once they are compacted."""
    pypaimon.create_table(wh, "db.p", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                          options={"bucket": "-2", "file.format": "parquet", "postpone.default-bucket-num": "2"})
    pypaimon.write(wh, "db.p", pa.concat_tables([data("a", range(10), "x"), data("b", range(8), "x")]))
    pypaimon.write(wh, "db.p", data("a", range(5, 15), "y"))
    return ([{"dt": "a", "id": i, "v": f"{'x' if i < 5 else 'y'}{i}"} for i in range(15)]
            + [{"dt": "b", "id": i, "v": f"x{i}"} for i in range(8)])


def test_postpone_table_moves_into_real_buckets(capsys, spark, tmp_path, pypaimon):
    wh = tmp_path / "warehouse"
    expected = postpone_table(pypaimon, wh)
    table = Catalog(str(wh)).get_table("db.p")
    assert table.to_arrow().num_rows == 0  # batch readers skip bucket-postpone
    before = table.latest_snapshot().id
    code, out = run_job_main(capsys, compact.main, "--warehouse", str(wh), "--table", "db.p")
    assert code == EXIT_OK, out
    assert out["commit_kind"] == "COMPACT" and out["snapshot_id"] == before + 1 == table.latest_snapshot().id
    assert out["spark_tasks"] == 2 and out["tasks"] == 2  # one per partition
    assert out["postponed_files"] == out["files_in"] == 3 and out["postponed_rows"] == out["rows_in"] == 28
    assert sorted((p["partition"], p["buckets"], p["files"], p["rows"]) for p in out["postpone_partitions"]) == [
        ("dt=a", 2, 2, 20), ("dt=b", 2, 1, 8)]
    assert out["health_before"]["postponed_files"] == 3 and out["health_after"]["postponed_files"] == 0
    assert canonical(table.to_arrow(), ["dt", "id"]) == expected
    assert canonical(pypaimon.read(wh, "db.p").select(["dt", "id", "v"]), ["dt", "id"]) == expected
    entries = table.store.file_store_scan().live_entries(table.store.snapshot_manager.latest())
    assert {(e.bucket, e.total_buckets) for e in entries} == {(0, 2), (1, 2)}
    # a re-run after a success finds nothing postponed: no snapshot
    code, out = run_job_main(capsys, compact.main, "--warehouse", str(wh), "--table", "db.p")
    assert code == EXIT_OK and out["snapshot_id"] is None and out["postponed_files"] == 0, out
    assert table.latest_snapshot().id == before + 1
    # newer rows land in bucket-postpone again and go into the 2 buckets the partition has
    pypaimon.write(wh, "db.p", data("b", range(4), "z"))
    code, out = run_job_main(capsys, compact.main, "--warehouse", str(wh), "--table", "db.p",
                             "--partition", "dt=b")
    assert code == EXIT_OK and out["postpone_partitions"] == [
        {"partition": "dt=b", "buckets": 2, "files": 1, "rows": 4}], out
    expected = [r if r["dt"] == "a" or r["id"] >= 4 else r | {"v": f"z{r['id']}"} for r in expected]
    assert canonical(pypaimon.read(wh, "db.p").select(["dt", "id", "v"]), ["dt", "id"]) == expected
    # dt=b's buckets now hold two runs each (the first compaction's, and level 0 lifted by the
    # second): --full compacts every real bucket into one top-level file, nothing postponed moves
    code, out = run_job_main(capsys, compact.main, "--warehouse", str(wh), "--table", "db.p", "--full")
    assert code == EXIT_OK and out["full"] and out["commit_kind"] == "COMPACT" and out["postponed_files"] == 0, out
    entries = table.store.file_store_scan().live_entries(table.store.snapshot_manager.latest())
    top = table.store.schema.core_options.num_levels - 1
    per_bucket = [(e.partition, e.bucket) for e in entries]
    assert len(per_bucket) == len(set(per_bucket)) and all(e.file.level == top for e in entries)
    assert canonical(pypaimon.read(wh, "db.p").select(["dt", "id", "v"]), ["dt", "id"]) == expected
    # a unit limit has no meaning here: refused, nothing written
    latest = table.latest_snapshot().id
    code, out = run_job_main(capsys, compact.main, "--warehouse", str(wh), "--table", "db.p", "--max-units", "1")
    assert code == EXIT_CONFIG and "postpone" in out["error"], out
    assert table.latest_snapshot().id == latest


def test_concurrent_postpone_compaction_is_a_conflict(capsys, spark, tmp_path, pypaimon, monkeypatch):
    wh = tmp_path / "warehouse"
    expected = postpone_table(pypaimon, wh)
    table = Catalog(str(wh)).get_table("db.p")
    run_units = job_postpone.SparkPostponeUnits.__call__

    def lose_the_race(self, store, units):
        Catalog(str(wh)).get_table("db.p").compact()  # another compaction moves the planned files first
        return run_units(self, store, units)

    monkeypatch.setattr(job_postpone.SparkPostponeUnits, "__call__", lose_the_race)
    latest = table.latest_snapshot().id
    code, out = run_job_main(capsys, compact.main, "--warehouse", str(wh), "--table", "db.p")
    assert code == EXIT_CONFLICT, out
    assert "CommitConflictError" in out["error"]
    assert table.latest_snapshot().id == latest + 1  # only the other compaction committed
    assert canonical(table.to_arrow(), ["dt", "id"]) == expected
    assert table.remove_orphan_files(older_than=timedelta(0), dry_run=True).paths == []


def test_a_failed_partition_commits_nothing_and_leaves_no_files(capsys, spark, tmp_path, pypaimon):
    """Partition a's postpone file predates a column change (not compactable: an error on its
    executor), partition b's is compacted on another: the driver deletes b's output, commits
    nothing and exits 2 (a refusal: UnsupportedFeatureError, also when an executor meets it)."""
    wh = tmp_path / "warehouse"
    pypaimon.create_table(wh, "db.p", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                          options={"bucket": "-2", "file.format": "parquet"})
    pypaimon.write(wh, "db.p", data("a", range(5), "x"))
    Catalog(str(wh)).get_table("db.p").update_schema().add_column("w", pa.int64()).commit()
    pypaimon.write(wh, "db.p", data("b", range(5), "x").append_column("w", pa.array(range(5), pa.int64())))
    table = Catalog(str(wh)).get_table("db.p")
    latest = table.latest_snapshot().id
    code, out = run_job_main(capsys, compact.main, "--warehouse", str(wh), "--table", "db.p")
    assert code == EXIT_CONFIG and "UnsupportedFeatureError" in out["error"] and "schema" in out["error"], out
    assert table.latest_snapshot().id == latest
    assert table.remove_orphan_files(older_than=timedelta(0), dry_run=True).paths == []


def test_changelog_job_on_full_compaction_producer_runs_the_full_postpone_compaction(capsys, spark, tmp_path,
                                                                                     pypaimon):
    """``changelog-producer = full-compaction`` on a postpone-bucket table: the changelog job asks for
    the full compaction (postponed rows moved, then every real bucket compacted into one top-level
    file), not the plain postpone one, which would leave the second run's files beside the first's."""
    from lake_assets.spark.jobs import changelog

    wh = tmp_path / "warehouse"
    pypaimon.create_table(wh, "db.p", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                          options={"bucket": "-2", "file.format": "parquet", "postpone.default-bucket-num": "2",
                                   "changelog-producer": "full-compaction"})
    table = Catalog(str(wh)).get_table("db.p")
    args = ("--warehouse", str(wh), "--table", "db.p")
    for tag in ("x", "y"):
        pypaimon.write(wh, "db.p", data("a", range(10), tag))
        code, out = run_job_main(capsys, changelog.main, *args)
        assert code == EXIT_OK and out["compaction"] == "full" and out["commit_kind"] == "COMPACT", out
        assert out["postponed_files"] == 1, out
    entries = table.store.file_store_scan().live_entries(table.store.snapshot_manager.latest())
    top = table.store.schema.core_options.num_levels - 1
    assert sorted((e.bucket, e.file.level) for e in entries) == [(0, top), (1, top)]
    assert canonical(table.to_arrow(), ["dt", "id"]) == [{"dt": "a", "id": i, "v": f"y{i}"} for i in range(10)]


def test_compact_job_merges_postponed_rows_into_a_rescaled_partition(capsys, spark, tmp_path, pypaimon):
    """A partition rescaled by a batch that outgrew it (ops/rescale.py: 1 bucket to 64) and rows
    pypaimon postponed before: the compact job writes them into the 64 buckets after the rescaled
    rows, so they win, and pypaimon reads what we read."""
    from lake_assets.ops.postpone_fixed_bucket import write_fixed_buckets

    wh = tmp_path / "warehouse"
    pypaimon.create_table(wh, "db.p", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                          options={"bucket": "-2", "file.format": "parquet", "postpone.default-bucket-num": "1",
                                   "postpone.target-row-num-per-bucket": "1"})
    table = Catalog(str(wh)).get_table("db.p")
    write_fixed_buckets(table.store, data("a", range(4), "x"))
    pypaimon.write(wh, "db.p", data("a", range(2, 6), "p"))                     # postponed
    write_fixed_buckets(table.refresh().store, data("a", range(10, 50), "y"))  # rescales a to 64
    table = table.refresh()
    assert {e.total_buckets for e in table.store.file_store_scan().live_entries(table.latest_snapshot())
            if e.bucket >= 0} == {64}
    code, out = run_job_main(capsys, compact.main, "--warehouse", str(wh), "--table", "db.p")
    assert code == EXIT_OK, out
    table = table.refresh()
    expected = ([{"dt": "a", "id": i, "v": f"{'x' if i < 2 else 'p'}{i}"} for i in range(6)]
                + [{"dt": "a", "id": i, "v": f"y{i}"} for i in range(10, 50)])
    assert canonical(table.to_arrow(), ["dt", "id"]) == expected
    assert canonical(pypaimon.read(wh, "db.p").select(SCHEMA.names), ["dt", "id"]) == expected
    live = table.store.file_store_scan().live_entries(table.latest_snapshot())
    assert {e.total_buckets for e in live} == {64}
