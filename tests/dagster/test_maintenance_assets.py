"""Changelog export, expiry and orphan assets run their real Spark jobs and report what they did.

They run in order on db.orders after the sensor-driven compaction (session fixtures): the changelog
asset exports the lookup changelog through its consumer, expiry trims history to ``retain_max`` (5)
while the consumer's position stays readable, and the orphan asset (disabled in lake.yaml) only
reports. The orphan job runs through the python launcher (its one launcher run in the suite); the
changelog and expire jobs run in the test process (tests/dagster/in_process_jobs.py): their
launcher runs are the demo's (tests/dagster/test_demo.py, spark-submit through Pipes).
"""

from __future__ import annotations

import dagster as dg
import pyarrow as pa
import pytest

from tests.dagster.helpers import materialization_metadata
from tests.dagster.in_process_jobs import patch_run_job


@pytest.fixture(scope="module")
def maintained(compacted, lake_defs: dg.Definitions, instance: dg.DagsterInstance, spark) -> dict[str, dict]:
    table = lake_defs.resources["warehouse"].table("db.orders")
    for i in range(4):  # more history than retain_max
        writer = table.new_writer("test-maintenance", write_only=True)
        writer.write_arrow(pa.table({"id": pa.array([100 + i], pa.int64()), "dt": ["2024-01-02"],
                                     "name": ["more"], "amount": [1.0]}))
        table.new_committer("test-maintenance").commit(writer.prepare_commit(), i + 1)
        writer.close()
    out = {"snapshots_before": len(table.snapshots())}
    for step, in_process in (("changelog", ["changelog"]), ("expiry", ["expire"]), ("orphans", None)):
        with pytest.MonkeyPatch.context() as patch:
            ran = patch_run_job(patch) if in_process else None
            result = lake_defs.resolve_job_def(f"db_orders_{step}_job").execute_in_process(instance=instance)
        assert result.success, step
        assert ran == in_process, step
        out[step] = materialization_metadata(result)
        out[f"{step}_checks"] = {e.check_name: e for e in result.get_asset_check_evaluations()}
    return out


def test_changelog_asset_exports_through_its_consumer(maintained) -> None:
    md = maintained["changelog"]
    assert md["consumer_id"] == "dagster-db-orders"
    _each_fact_once(md)
    assert md["destination"].endswith("export/orders")
    # the lookup compaction turned at least the 4 new rows into changelog (other tests of the session
    # may have written more); the export holds every change up to that compaction
    assert md["commit_kind"] == "COMPACT" and md["job.changelog_rows"] >= 4
    export = md["job.export"]
    assert export["to_snapshot"] == md["snapshot_id"] and export["rows"] == sum(export["rows_by_kind"].values())
    assert export["rows_by_kind"]["+I"] >= 24  # the 20 ingested rows and the 4 new ones
    assert md["job.consumer_position"] == md["snapshot_id"] + 1  # everything read
    assert md["table_path"].endswith("db.db/orders")


def test_expiry_asset_trims_history_to_the_policy(maintained, lake_defs: dg.Definitions) -> None:
    md = maintained["expiry"]
    assert md["snapshots_before"] == maintained["snapshots_before"] + 1 > 5  # + the changelog compaction
    assert md["snapshots_after"] == 5 and md["dry_run"] is False
    _each_fact_once(md)
    assert "job.earliest" not in md  # shown as earliest_snapshot_id
    assert "commit_kind" not in md  # an expiry commits nothing: no 'none' text
    assert md["job.expired_snapshots"] == md["snapshots_before"] - 5
    assert md["job.deleted_files"] == md["job.files_to_delete"] > 0
    table = lake_defs.resources["warehouse"].table("db.orders")
    assert table.snapshots()[0].id == md["earliest_snapshot_id"]
    table.to_arrow()  # the latest state still reads
    # the expire job's own check: every file the retained snapshots name is there
    check = maintained["expiry_checks"]["retained_snapshots_readable"]
    assert check.passed and check.severity == dg.AssetCheckSeverity.ERROR
    md = {k: v.value for k, v in check.metadata.items()}
    assert md["retained_snapshots"] == 5 and md["missing_files"] == 0
    expiry = maintained["expiry"]
    assert md["snapshots_read"] == f"{expiry['earliest_snapshot_id']}, {expiry['snapshot_id']}"
    assert md["files_looked_up"] > 5 * 2  # the lists of five snapshots, and two snapshots' manifests and files


def test_disabled_orphan_asset_only_reports(maintained) -> None:
    md = maintained["orphans"]
    assert md["dry_run"] is True and md["job.deleted_files"] == 0
    assert md["orphan_files"] >= 0 and isinstance(md["orphan_bytes"], int)
    _each_fact_once(md)
    assert "commit_kind" not in md  # orphan removal commits nothing: no 'none' text
    # the job's own check, through the real Pipes launcher: what it would delete is older than the bound
    check = maintained["orphans_checks"]["orphans_older_than_bound"]
    assert check.passed and check.severity == dg.AssetCheckSeverity.ERROR
    checked = {k: v.value for k, v in check.metadata.items()}
    assert checked["files"] == md["orphan_files"] and checked["younger_files"] == 0
    assert checked["bound_age_s"] == 86400  # lake.yaml's default older_than: 1d


def _each_fact_once(md: dict) -> None:
    """No job key is shown again under ``job.``: each fact appears once."""
    assert not [k for k in md if f"job.{k}" in md], sorted(md)
    assert "none" not in [v for v in md.values() if isinstance(v, str)]
