"""Fixtures of the Dagster tests.

A two-table lake.yaml in a temp folder (with landing files), and a Dagster instance made from the
repo's dagster.yaml in a temp DAGSTER_HOME. A real Spark job through a launcher takes 15-60 s here, so
the tables the jobs write are session fixtures shared by the tests that need them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg
import pyarrow as pa
import pytest

from lake_assets.defs.config import LakeConfig, load_config
from lake_assets.defs.factory import build_definitions
from lake_assets.defs.sensors import SMALL_FILE_SENSOR
from tests.dagster.helpers import DAYS, REPO, write_lake
from tests.dagster.in_process_jobs import patch_run_job

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def lake_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The lake.yaml the Spark-backed tests share (python launcher, local[1])."""
    return write_lake(tmp_path_factory.mktemp("lake"))


@pytest.fixture(scope="session")
def lake_config(lake_path: Path) -> LakeConfig:
    return load_config(lake_path)


@pytest.fixture(scope="session")
def lake_defs(lake_config: LakeConfig) -> dg.Definitions:
    return build_definitions(lake_config)


@pytest.fixture
def core_lake(tmp_path: Path) -> tuple[LakeConfig, dg.Definitions]:
    """A fresh lake of the same shape for tests that write with the core (no Spark)."""
    config = load_config(write_lake(tmp_path))
    return config, build_definitions(config)


@pytest.fixture(scope="session")
def dagster_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A DAGSTER_HOME holding the repo's dagster.yaml (set in the environment for the session)."""
    home = tmp_path_factory.mktemp("dagster_home")
    shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")
    previous = os.environ.get("DAGSTER_HOME")
    os.environ["DAGSTER_HOME"] = str(home)
    yield home
    if previous is None:
        os.environ.pop("DAGSTER_HOME", None)
    else:
        os.environ["DAGSTER_HOME"] = previous


@pytest.fixture(scope="session")
def instance(dagster_home: Path) -> Iterator[dg.DagsterInstance]:
    """The instance dagster.yaml describes (SQLite, queued run coordinator, pools)."""
    with dg.DagsterInstance.get() as inst:
        yield inst


@pytest.fixture(scope="session")
def ingested(lake_defs: dg.Definitions, instance: dg.DagsterInstance) -> dg.ExecuteInProcessResult:
    """db.orders with day 2024-01-01 ingested by the real ingest job (python launcher)."""
    job = lake_defs.resolve_job_def("db_orders_ingest_job")
    result = job.execute_in_process(partition_key=DAYS[0], instance=instance)
    assert result.success
    return result


def _append(table, start: int) -> None:
    """A write-only commit of updates to dt=2024-01-01 (one more level-0 file per bucket). The keys
    overlap the ingested ones: the core's compaction merges overlapping files only (see the report)."""
    writer = table.new_writer("test-compaction", write_only=True)
    ids = list(range(start, start + 10))
    writer.write_arrow(pa.table({"id": pa.array(ids, pa.int64()), "dt": ["2024-01-01"] * 10,
                                 "name": ["late"] * 10, "amount": [0.5] * 10}))
    table.new_committer("test-compaction").commit(writer.prepare_commit(), start + 1)
    writer.close()


@pytest.fixture(scope="session")
def compacted(ingested, lake_config: LakeConfig, lake_defs: dg.Definitions, instance: dg.DagsterInstance,
              spark: SparkSession):
    """db.orders after the sensor-requested compaction; returns (run request, run result).

    The compact job runs in the test process (tests/dagster/in_process_jobs.py) on the Pipes launcher's
    definitions; its run through spark-submit under Pipes is the demo's step 3 (tests/dagster/test_demo.py
    checks that run's materialization)."""
    table = lake_defs.resources["warehouse"].table("db.orders")
    for i in range(3):  # with the ingest's file: 4 sorted runs per bucket > level0_runs 3
        _append(table, 5 * i)
    sensor = lake_defs.resolve_sensor_def(SMALL_FILE_SENSOR)
    with dg.build_sensor_context(instance=instance, resources=lake_defs.resources) as context:
        tick = sensor.evaluate_tick(context)  # a context manager: a resource is a generator
    [request] = tick.run_requests
    pipes = lake_config.model_copy(update={"spark": lake_config.spark.model_copy(update={"launcher": "pipes"})})
    job = build_definitions(pipes).resolve_job_def(request.job_name)
    with pytest.MonkeyPatch.context() as patch:
        ran = patch_run_job(patch)
        result = job.execute_in_process(run_config=request.run_config, tags=request.tags, instance=instance)
    assert result.success
    assert ran == ["compact"]
    return request, result
