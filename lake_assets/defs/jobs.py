"""One asset job per table and step, tagged so the run queue can limit compactions per table."""

from __future__ import annotations

from typing import TYPE_CHECKING

import dagster as dg

from lake_assets.defs.config import TableConfig
from lake_assets.defs.names import TableNames

if TYPE_CHECKING:
    # What define_asset_job returns. Dagster exports no public name for it (1.13: neither `dagster`
    # nor `dagster.components`); imported for type checking only, never at run time.
    from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition as AssetJob

# Asset step → the Spark job it runs (the ``lake/job`` tag value).
STEP_JOBS = {"ingest": "ingest", "compaction": "compact", "expiry": "expire", "orphans": "remove_orphans",
             "changelog": "changelog", "partition_expiry": "expire_partitions"}


def table_steps(spec: TableConfig) -> list[str]:
    """The asset steps a table (or a branch's entry) has."""
    return (["ingest"] if spec.ingest else []) + spec.maintenance_steps


def build_table_jobs(spec: TableConfig) -> dict[str, AssetJob]:
    """step → job materializing that step's asset (and running its checks)."""
    names = TableNames(spec.identifier)
    return {
        step: dg.define_asset_job(
            names.job(step),
            selection=dg.AssetSelection.assets(names.key(step)),
            tags=names.tags(STEP_JOBS[step]),
            description=f"{step} of {spec.identifier}",
        )
        for step in table_steps(spec)
    }
