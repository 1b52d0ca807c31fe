"""lake.yaml → one `Definitions`: resources, per-table assets, checks, jobs, schedules and sensors."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import dagster as dg

from lake_assets.defs.assets import build_table_assets
from lake_assets.defs.assets.compaction import STEP_IO_MANAGER
from lake_assets.defs.automation import automate_table, build_automation_sensors
from lake_assets.defs.checks import build_table_checks
from lake_assets.defs.config import LakeConfig, parse_duration
from lake_assets.defs.io_manager import LakeIOManager
from lake_assets.defs.jobs import build_table_jobs
from lake_assets.defs.observations import build_health_sensor
from lake_assets.defs.resources import SparkJobResource, WarehouseResource
from lake_assets.defs.schedules import build_table_schedules
from lake_assets.defs.sensors import build_small_file_sensor

if TYPE_CHECKING:
    from lake_assets.defs.jobs import AssetJob


def build_resources(
    config: LakeConfig,
) -> dict[str, dg.ConfigurableResource | dg.ConfigurableIOManager | dg.ConfigurableIOManagerFactory]:
    spark = config.spark
    return {
        STEP_IO_MANAGER: dg.FilesystemIOManager(),  # the compaction plan between its two steps
        "warehouse": WarehouseResource(storage=config.warehouse),
        "lake_io_manager": LakeIOManager(warehouse=WarehouseResource(storage=config.warehouse)),
        "spark": SparkJobResource(
            master=spark.master,
            conf=dict(spark.conf),
            launcher=spark.launcher,
            spark_submit=spark.spark_submit,
            jobs_dir=spark.jobs_dir,
            jobs_module=spark.jobs_module,
            timeout_seconds=parse_duration(spark.timeout).total_seconds(),
            env=dict(spark.env),
        ),
    }


def build_definitions(config: LakeConfig) -> dg.Definitions:
    """All Dagster objects of the tables in ``config``."""
    # The Dagster features chosen here on purpose (code references, single-run backfills) are beta:
    # Dagster warns at every load of the code location, i.e. in every step's process, some 200 lines
    # per run that tell a lake.yaml user nothing they can act on.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)
        return _build_definitions(config)


def _build_definitions(config: LakeConfig) -> dg.Definitions:
    assets: list[dg.AssetsDefinition] = []
    checks: list[dg.AssetChecksDefinition] = []
    jobs: list[AssetJob] = []
    compaction_jobs: list[AssetJob] = []
    schedules: list[dg.ScheduleDefinition] = []
    sensors: list[dg.SensorDefinition] = []
    for spec in config.maintained_tables:  # the tables, then each branch lake.yaml lists (its own assets)
        assets += automate_table(spec, config.timezone, build_table_assets(spec, config.timezone))
        checks += build_table_checks(spec)
        table_jobs = build_table_jobs(spec)
        jobs += table_jobs.values()
        compaction_jobs.append(table_jobs["compaction"])
        schedules += build_table_schedules(config, spec, table_jobs)
    sensors += [build_small_file_sensor(config, compaction_jobs), *build_automation_sensors(config),
                build_health_sensor(config)]
    return dg.Definitions(
        assets=list(dg.with_source_code_references(assets)),  # code references: each asset's builder
        asset_checks=checks,
        jobs=jobs,
        schedules=schedules,
        sensors=sensors,
        resources=build_resources(config),
    )
