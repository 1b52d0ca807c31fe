"""Resources: job command lines for both launchers, storage arguments, and failing jobs."""

import sys
from pathlib import Path

import dagster as dg
import pytest

from lake_assets.defs.resources import LocalStorage, S3Storage, SparkJobResource, WarehouseResource
from lake_assets.defs.resources.spark import parse_summary
from tests.dagster.helpers import REPO


def test_pipes_launcher_runs_spark_submit() -> None:
    spark = SparkJobResource(master="local[2]", conf={"spark.ui.enabled": "false"}, jobs_dir=str(REPO / "jobs"))
    cmd = spark.command("compact", ["--warehouse", "w", "--table", "db.t", "--full"])
    assert Path(cmd[0]).name == "spark-submit"
    assert cmd[1:] == ["--master", "local[2]", "--conf", "spark.ui.enabled=false", str(REPO / "jobs" / "compact.py"),
                       "--warehouse", "w", "--table", "db.t", "--full"]


def test_python_launcher_runs_the_module() -> None:
    spark = SparkJobResource(launcher="python", master="local[1]", conf={"spark.ui.enabled": "false"})
    cmd = spark.command("expire", ["--warehouse", "w"])
    assert cmd == [sys.executable, "-m", "lake_assets.spark.jobs.expire", "--master", "local[1]",
                   "--warehouse", "w", "--conf", "spark.ui.enabled=false"]


def test_warehouse_job_arguments_keep_secrets_in_the_environment() -> None:
    s3 = WarehouseResource(storage=S3Storage(url="s3://b/wh", endpoint_url="http://minio:9000", key="AK",
                                             secret="SK", region="eu-west-1"))
    args = s3.job_args("db.t")
    assert args[:4] == ["--warehouse", "s3://b/wh", "--table", "db.t"]
    assert "--storage-option" in args and "endpoint_url=http://minio:9000" in args
    assert not any("SK" in a or "AK" in a for a in args)
    # the job passes the variables LAKE_ASSETS_EXECUTOR_ENV names on to its executors (on a cluster
    # they do not inherit the driver's environment; tests/spark/test_jobs_cluster.py runs it there)
    assert s3.job_env() == {"AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK",
                            "AWS_DEFAULT_REGION": "eu-west-1",
                            "LAKE_ASSETS_EXECUTOR_ENV": "AWS_ACCESS_KEY_ID,AWS_DEFAULT_REGION,AWS_SECRET_ACCESS_KEY"}
    from lake_assets.spark.jobs.session import EXECUTOR_ENV_VAR, executor_env_conf

    assert EXECUTOR_ENV_VAR == "LAKE_ASSETS_EXECUTOR_ENV"  # the Dagster layer spells it without importing it
    # an explicit --conf spark.executorEnv.X wins; a named variable that is not set is not invented
    conf = executor_env_conf({**s3.job_env(), "LAKE_ASSETS_EXECUTOR_ENV": "AWS_ACCESS_KEY_ID,AWS_SECRET_ACCESS_KEY,"
                              "AWS_SESSION_TOKEN"}, {"spark.executorEnv.AWS_SECRET_ACCESS_KEY": "other"})
    assert conf == {"spark.executorEnv.AWS_ACCESS_KEY_ID": "AK"}
    local = WarehouseResource(storage=LocalStorage(path="/data/wh"))
    assert local.job_args("db.t") == ["--warehouse", "/data/wh", "--table", "db.t"] and local.job_env() == {}


def test_summary_is_the_last_json_line() -> None:
    out = 'log line\n{"job": "x", "status": "ok"}\n{not json\n'
    assert parse_summary(out) == {"job": "x", "status": "ok"}
    assert parse_summary("no json at all") == {}


def test_a_failing_job_raises_failure_with_its_error_json(tmp_path: Path) -> None:
    """A real job run (python launcher) on a table that does not exist: exit 2 before Spark starts."""
    spark = SparkJobResource(launcher="python", master="local[1]")
    warehouse = WarehouseResource(storage=LocalStorage(path=str(tmp_path / "wh")))

    @dg.asset
    def expire_missing(context: dg.AssetExecutionContext, spark: SparkJobResource,
                       warehouse: WarehouseResource) -> dg.MaterializeResult:
        spark.run_job(context, "expire", warehouse.job_args("db.missing"))
        return dg.MaterializeResult()

    result = dg.materialize([expire_missing], resources={"spark": spark, "warehouse": warehouse},
                            raise_on_error=False)
    assert not result.success
    failure = result.get_step_failure_events()[0].step_failure_data
    assert "Spark job expire failed, exit code 2 (bad arguments or config)" in failure.error.message
    assert "NoSuchTableError" in failure.error.message
    assert "What to do: fix the job's arguments, lake.yaml or the table" in failure.error.message
    metadata = failure.user_failure_data.metadata
    assert metadata["exit_code"].value == 2
    assert metadata["error_json"].value["status"] == "error"
    assert metadata["error_json"].value["job"] == "expire"


def test_a_job_over_its_timeout_is_stopped(tmp_path: Path) -> None:
    """The launcher stops a job that outlives timeout_seconds (here a sleeping stand-in module)."""
    pkg = tmp_path / "slowjobs"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "sleepy.py").write_text("import time\ntime.sleep(60)\n")
    spark = SparkJobResource(launcher="python", jobs_module="slowjobs", timeout_seconds=2,
                             env={"PYTHONPATH": str(tmp_path)})

    @dg.asset
    def sleepy(context: dg.AssetExecutionContext, spark: SparkJobResource) -> dg.MaterializeResult:
        spark.run_job(context, "sleepy", [])
        return dg.MaterializeResult()

    result = dg.materialize([sleepy], resources={"spark": spark}, raise_on_error=False)
    assert not result.success
    message = result.get_step_failure_events()[0].step_failure_data.error.message
    assert "Spark job sleepy failed, timed out" in message
    assert "What to do: raise spark.timeout in lake.yaml" in message


@pytest.mark.parametrize("launcher", ["pipes", "python"])
def test_launchers_resolve(launcher: str) -> None:
    cmd = SparkJobResource(launcher=launcher, jobs_dir=str(REPO / "jobs")).command("ingest", [])
    assert Path(cmd[0]).exists()


def test_maintenance_on_a_missing_table_fails_without_retries(tmp_path) -> None:
    warehouse = WarehouseResource(storage=LocalStorage(path=str(tmp_path / "wh")))
    with pytest.raises(dg.Failure, match=r"db\.nope does not exist yet: ingest first") as info:
        warehouse.existing_table("db.nope")
    assert info.value.allow_retries is False


def test_a_declared_table_without_ingest_that_is_missing_is_named_with_what_is_there(tmp_path) -> None:
    """A table another engine writes, declared for maintenance only (no `ingest`) with a typo in its
    name: "ingest first" named an asset that does not exist; the failure says what the warehouse holds."""
    import pyarrow as pa

    from lake_assets import Catalog
    from lake_assets.defs.config import parse_config

    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    catalog.create_table("db.orders", pa.schema([("id", pa.int64())]))
    config = parse_config({"warehouse": {"kind": "local", "path": "wh"},
                           "tables": [{"identifier": "db.order", "schema": {"id": "BIGINT"}},
                                      {"identifier": "shop.orders", "schema": {"id": "BIGINT"}}]},
                          base_dir=tmp_path)
    warehouse = WarehouseResource(storage=config.warehouse)
    with pytest.raises(dg.Failure) as info:
        warehouse.declared_table(config.table("db.order"))
    assert info.value.description == (
        f"db.order does not exist in {tmp_path / 'wh'} (database db holds db.orders). lake.yaml declares it "
        "without `ingest`, so lake_assets does not create it: check its identifier and the warehouse")
    assert info.value.allow_retries is False
    with pytest.raises(dg.Failure, match=r"\(it has no database shop \(databases: db\)\)"):
        warehouse.declared_table(config.table("shop.orders"))


def test_ingest_into_an_existing_table_declared_otherwise_fails_before_its_job(tmp_path) -> None:
    """ensure_table (the ingest asset's first step) creates a missing table, and refuses one that
    exists with other options than lake.yaml declares, instead of writing into it as it is."""
    import pyarrow as pa

    from lake_assets import Catalog
    from lake_assets.defs.config import parse_config

    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("dt", pa.string())])
    catalog.create_table("db.orders", schema, primary_keys=["id", "dt"], options={"bucket": "2"})
    ingest = {"source": "landing/{date}.csv", "format": "csv", "start_date": "2024-01-01", "partition_column": "dt"}
    table = {"identifier": "db.orders", "schema": {"id": "BIGINT NOT NULL", "dt": "STRING"},
             "primary_keys": ["id", "dt"], "partition_keys": ["dt"], "options": {"bucket": 2}, "ingest": ingest}
    config = parse_config({"warehouse": {"kind": "local", "path": "wh"},
                           "tables": [table, {**table, "identifier": "db.fresh"}]}, base_dir=tmp_path)
    warehouse = WarehouseResource(storage=config.warehouse)
    with pytest.raises(dg.Failure) as info:
        warehouse.ensure_table(config.table("db.orders"))
    assert "partition_keys: lake.yaml declares ['dt'], the table has []" in (info.value.description or "")
    assert warehouse.ensure_table(config.table("db.fresh")).partition_keys == ("dt",)  # created
    assert warehouse.ensure_table(config.table("db.fresh")).partition_keys == ("dt",)  # then kept


def test_the_pipes_launcher_finds_the_shipped_jobs_from_any_working_directory(tmp_path, monkeypatch) -> None:
    """Without spark.jobs_dir the scripts are lake_assets' own jobs/, not ./jobs of wherever the
    code location happens to run (a lake.yaml outside the repository failed at its first ingest)."""
    monkeypatch.chdir(tmp_path)
    cmd = SparkJobResource(launcher="pipes").command("ingest", ["--table", "db.t"])
    script = Path(cmd[cmd.index("--table") - 1])
    assert script.is_absolute() and script == REPO / "jobs" / "ingest.py" and script.is_file()
