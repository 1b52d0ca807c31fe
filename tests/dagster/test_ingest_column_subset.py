"""lake.yaml's ``ingest.write_columns`` on a data-evolution table: the ingest asset (the real ingest
job, ``--write-columns``) loads landing files of those columns as new rows of them, the others
reading null; a bad declaration fails lake.yaml's load naming the entry and the column, and one
the existing table does not take fails the run before Spark starts. The job runs in the test
process (tests/dagster/in_process_jobs.py): its launcher is tested by test_ingest.py."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from lake_assets import Catalog
from lake_assets.defs.config import LakeConfigError, load_config, parse_config
from lake_assets.defs.factory import build_definitions
from tests.dagster.helpers import DAYS, ONE_TABLE_SPARK, materialization_metadata

TABLE = """
tables:
  - identifier: db.scores
    schema: {id: BIGINT NOT NULL, dt: STRING, name: STRING, score: DOUBLE}
    partition_keys: [dt]
    options: {row-tracking.enabled: true, data-evolution.enabled: true, bucket: -1}
    ingest: {source: "landing/{date}/*.parquet", format: parquet, start_date: 2024-01-01, partition_column: dt,
             write_columns: [id, dt, score]}
    maintenance: {compaction_cron: null, expiry_cron: null}
"""


@pytest.mark.parametrize(("change", "message"), [
    ({"ingest": {"write_columns": ["id", "dt", "nope"]}}, r"unknown columns \['nope'\]"),
    ({"ingest": {"write_columns": ["dt", "score"]}}, r"NOT NULL columns \['id'\] are left out"),
    ({"ingest": {"write_columns": ["id", "score"]}}, r"partition columns \['dt'\] are left out"),
    ({"ingest": {"write_columns": ["id", "dt,x"]}}, r"a column name with a comma"),
    ({"options": {"bucket": -1}}, r"needs a data-evolution table"),
])
def test_bad_write_columns_fail_the_load(tmp_path: Path, change: dict, message: str) -> None:
    data = yaml.safe_load(ONE_TABLE_SPARK + TABLE)
    entry = data["tables"][0]
    for key, value in change.items():
        entry[key] = {**entry[key], **value} if key == "ingest" else value
    where = r"tables\[0\] \(db.scores\): ingest.write_columns: [\s\S]*"
    with pytest.raises(LakeConfigError, match=where + message):
        parse_config(data, base_dir=tmp_path, source="lake.yaml")


def test_write_columns_reach_the_job_parser(tmp_path: Path) -> None:
    """`ingest_args` passes the declaration as the job's own parser reads it (no Spark started)."""
    from lake_assets.defs.assets.ingest import ingest_args
    from lake_assets.spark.jobs.ingest import build_parser

    spec = parse_config(yaml.safe_load(ONE_TABLE_SPARK + TABLE), base_dir=tmp_path).table("db.scores")
    ns = build_parser().parse_args(["--warehouse", "/wh", "--table", "db.scores", *ingest_args(spec, DAYS[0])])
    assert ns.write_columns == ["id", "dt", "score"] and ns.overwrite
    assert [day for day, _ in ns.partition_sources] == [f"dt={DAYS[0]}"]


def test_row_counts_of_a_data_evolution_table_count_rows_not_update_files(tmp_path: Path) -> None:
    """The ingest asset's ``dagster/partition_row_count`` and ``dagster/row_count`` of a table whose
    rows were updated by column: an update's files cover rows counted already (core-written, no Spark)."""
    from lake_assets.defs.assets.metadata import partition_row_counts, table_state_metadata

    spec = parse_config(yaml.safe_load(ONE_TABLE_SPARK + TABLE), base_dir=tmp_path).table("db.scores")
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    table = cat.create_table("db.scores", spec.arrow_schema, partition_keys=["dt"], options=dict(spec.options))
    table.write_arrow(pa.table({"id": [1, 2, 3], "dt": ["a", "a", "b"], "score": [1.0, 2.0, 3.0]}),
                      write_columns=["id", "dt", "score"])
    table.update_columns(pa.table({"_ROW_ID": pa.array([0, 1, 2], pa.int64()), "name": ["x", "y", "z"]}))
    table.write_arrow(pa.table({"id": [4], "dt": ["a"], "score": [4.0]}), write_columns=["id", "dt", "score"])
    table.update_columns(pa.table({"_ROW_ID": pa.array([1, 3], pa.int64()), "name": ["Y", "w"]}))
    assert table.latest_snapshot().total_record_count >= 9  # records in files: 4 rows and updated values
    assert partition_row_counts(table) == {"dt=a": 3, "dt=b": 1}
    md = table_state_metadata(table, spec, dg.MetadataValue.path(str(tmp_path)))
    assert md["dagster/row_count"].value == table.to_arrow().num_rows == 4


def test_ingest_asset_writes_the_declared_columns(tmp_path: Path, in_process_jobs: list[str]) -> None:
    """The real ingest job, in-process (its launcher run: test_ingest.py's ``ingested``)."""
    landing = tmp_path / "landing" / DAYS[0]
    landing.mkdir(parents=True)
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64()), "score": [0.5, 1.5]}), landing / "a.parquet")
    (tmp_path / "lake.yaml").write_text(ONE_TABLE_SPARK + TABLE)
    config = load_config(tmp_path / "lake.yaml")
    defs = build_definitions(config)
    job = defs.resolve_job_def("db_scores_ingest_job")
    with dg.instance_for_test() as instance:
        result = job.execute_in_process(partition_key=DAYS[0], instance=instance)
        assert result.success
        assert materialization_metadata(result)["job.write_columns"] == ["id", "dt", "score"]
        table = defs.resources["warehouse"].table("db.scores")
        assert {f.write_cols for s in table.plan() for f in s.files} == {("id", "dt", "score")}
        rows = table.to_arrow(columns=["id", "dt", "name", "score", "_ROW_ID"]).sort_by("id").to_pylist()
        assert [tuple(r.values()) for r in rows] == [(1, DAYS[0], None, 0.5, 0), (2, DAYS[0], None, 1.5, 1)]

        # the table as it is does not take the declaration (score renamed since): the run fails
        # before the job starts, naming the column, and writes nothing
        Catalog(str(tmp_path / "warehouse")).get_table("db.scores").update_schema() \
            .rename_column("score", "points").commit()
        latest = table.latest_snapshot().id
        failed = job.execute_in_process(partition_key=DAYS[0], instance=instance, raise_on_error=False)
        assert not failed.success
        [failure] = [e for e in failed.all_events if e.is_step_failure]
        assert "unknown columns ['score']" in failure.step_failure_data.error.message
        assert defs.resources["warehouse"].table("db.scores").latest_snapshot().id == latest
    assert in_process_jobs == ["ingest"]  # the failed run started no job
