"""The changelog job: compaction that produces the changelog, export to Parquet or a table, positions."""

from __future__ import annotations

import os
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_assets import Catalog, Table
from lake_assets.spark.jobs import changelog
from lake_assets.spark.jobs.errors import EXIT_CONFIG, EXIT_OK
from tests.spark.test_jobs_common import run_job_main

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("op", pa.string())])


def _source(wh: str, producer: str = "lookup") -> Table:
    cat = Catalog(wh)
    cat.create_database("db")
    return cat.create_table("db.src", SCHEMA, primary_keys=["id"],
                            options={"bucket": "2", "changelog-producer": producer, "rowkind.field": "op"})


def _write(table: Table, rows: list[tuple[int, str, str]]) -> None:
    """One write-only commit: level-0 files for the job's compaction to turn into changelog."""
    writer = table.new_writer("src-writer", write_only=True)
    writer.write_arrow(pa.table({"id": [r[0] for r in rows], "v": [r[1] for r in rows], "op": [r[2] for r in rows]},
                                schema=SCHEMA))
    table.new_committer("src-writer").commit(writer.prepare_commit(), table.snapshot_manager.latest_id() or 0)


def _state(table: Table) -> list[tuple]:
    return sorted((r["id"], r["v"]) for r in table.to_arrow().to_pylist())


def _parquet_rows(directory: str) -> list[dict]:
    rows = []
    for name in sorted(os.listdir(directory)):
        rows += pq.read_table(os.path.join(directory, name)).to_pylist()
    return rows


def test_lookup_changelog_exported_to_parquet_with_consumer(capsys, spark, tmp_path):
    wh, out_dir = str(tmp_path / "wh"), str(tmp_path / "export")
    src = _source(wh)
    args = ["--warehouse", wh, "--table", "db.src", "--export-path", out_dir, "--consumer-id", "to-parquet"]
    _write(src, [(1, "a", "+I"), (2, "b", "+I"), (3, "c", "+I")])
    code, out = run_job_main(capsys, changelog.main, *args)
    assert code == EXIT_OK, out
    assert out["compaction"] == "lookup" and out["commit_kind"] == "COMPACT" and out["changelog_rows"] == 3
    assert out["export"]["rows_by_kind"] == {"+I": 3} and out["consumer_position"] == 3
    assert os.listdir(out_dir) == ["changelog-000000000001-000000000002.parquet"]
    _write(src, [(1, "a2", "+U"), (2, "b", "-D")])
    code, out = run_job_main(capsys, changelog.main, *args)
    assert code == EXIT_OK, out
    assert out["export"]["from_snapshot"] == 3 and out["export"]["to_snapshot"] == 4
    assert out["export"]["rows_by_kind"] == {"-U": 1, "+U": 1, "-D": 1}
    # nothing new: no compaction, no file, same position
    code, out = run_job_main(capsys, changelog.main, *args)
    assert code == EXIT_OK and out["snapshot_id"] is None and out["export"]["rows"] == 0, out
    assert out["consumer_position"] == 5 and len(os.listdir(out_dir)) == 2
    rows = [(r["id"], r["v"], r["_row_kind"]) for r in _parquet_rows(out_dir)]
    assert sorted(rows[:3]) == [(1, "a", "+I"), (2, "b", "+I"), (3, "c", "+I")]
    assert sorted(rows[3:]) == sorted([(1, "a", "-U"), (1, "a2", "+U"), (2, "b", "-D")])
    assert rows.index((1, "a", "-U")) < rows.index((1, "a2", "+U"))  # a key's changes keep their order
    assert list(pq.read_schema(os.path.join(out_dir, sorted(os.listdir(out_dir))[0])).names) == [
        "id", "v", "op", "_row_kind"]


def test_export_to_tables_replays_changes_and_resumes_without_duplicates(capsys, spark, tmp_path):
    wh = str(tmp_path / "wh")
    src = _source(wh)
    cat = Catalog(wh)
    mirror = cat.create_table("db.mirror", SCHEMA, primary_keys=["id"], options={"bucket": "1", "rowkind.field": "op"})
    audit = cat.create_table("db.audit", SCHEMA.append(pa.field("_row_kind", pa.string())))  # append table
    base = ["--warehouse", wh, "--table", "db.src"]
    to_mirror = [*base, "--export-table", "db.mirror", "--consumer-id", "mirror"]
    to_audit = [*base, "--no-compact", "--export-table", "db.audit", "--consumer-id", "audit"]
    _write(src, [(1, "a", "+I"), (2, "b", "+I")])
    assert run_job_main(capsys, changelog.main, *to_mirror)[0] == EXIT_OK
    _write(src, [(1, "a2", "+I"), (2, "b", "-D"), (3, "c", "+I")])
    code, out = run_job_main(capsys, changelog.main, *to_mirror)
    assert code == EXIT_OK, out
    assert out["export"]["target_snapshot_id"] == mirror.latest_snapshot().id
    assert _state(mirror) == _state(src) == [(1, "a2"), (3, "c")]
    code, out = run_job_main(capsys, changelog.main, *to_audit)
    assert code == EXIT_OK and out["compaction"] == "skipped" and out["export"]["rows"] == 6, out
    kinds = Counter(r["_row_kind"] for r in audit.to_arrow().to_pylist())
    assert kinds == Counter({"+I": 3, "-U": 1, "+U": 1, "-D": 1})
    # a crash after the export committed but before the position was saved: the re-run skips it
    src.store.consumer_manager().record("audit", 1)
    code, out = run_job_main(capsys, changelog.main, *to_audit)
    assert code == EXIT_OK and out["export"]["rows"] == 0 and out["consumer_position"] == 5, out
    assert audit.to_arrow().num_rows == 6


def test_target_with_other_columns_exit_2(capsys, spark, tmp_path):
    wh = str(tmp_path / "wh")
    _source(wh)
    Catalog(wh).create_table("db.bad", pa.schema([("id", pa.int64()), ("w", pa.string())]), primary_keys=["id"],
                             options={"bucket": "1"})
    code, out = run_job_main(capsys, changelog.main, "--warehouse", wh, "--table", "db.src", "--export-table", "db.bad")
    assert code == EXIT_CONFIG and "columns differ" in out["error"], out


def test_full_compaction_producer_exports_a_range(capsys, spark, tmp_path):
    wh, out_dir = str(tmp_path / "wh"), str(tmp_path / "export")
    src = _source(wh, "full-compaction")
    _write(src, [(1, "a", "+I"), (2, "b", "+I")])
    code, out = run_job_main(capsys, changelog.main, "--warehouse", wh, "--table", "db.src",
                             "--export-path", out_dir, "--start-snapshot", "1")
    assert code == EXIT_OK, out
    assert out["compaction"] == "full" and out["changelog_rows"] == 2 and out["consumer_position"] is None
    assert sorted((r["id"], r["_row_kind"]) for r in _parquet_rows(out_dir)) == [(1, "+I"), (2, "+I")]


def test_table_without_changelog_producer_exit_2(capsys, spark, tmp_path):
    wh = str(tmp_path / "wh")
    cat = Catalog(wh)
    cat.create_database("db")
    cat.create_table("db.plain", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    code, out = run_job_main(capsys, changelog.main, "--warehouse", wh, "--table", "db.plain")
    assert code == EXIT_CONFIG and "changelog-producer" in out["error"], out
