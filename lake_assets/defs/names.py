"""Names of one table's Dagster objects: asset keys, group, jobs, sensors, schedules, checks, tags."""

from __future__ import annotations

import re
from dataclasses import dataclass

import dagster as dg

from lake_assets.store.branch_table import BRANCH_SEPARATOR

# Run tags. The instance's run queue allows one run per value of COMPACTION_TABLE_TAG (dagster.yaml).
COMPACTION_TABLE_TAG = "lake/compaction-table"
JOB_TAG = "lake/job"
TABLE_TAG = "lake/table"
PARTITIONS_TAG = "lake/partitions"

# Concurrency pool shared by the steps that run a Spark maintenance job (compaction, expiry, orphan
# removal, changelog, partition expiry): its limit is the global cap (`dagster instance concurrency
# set lake_maintenance N`; unset: dagster.yaml's pools.default_limit).
MAINTENANCE_POOL = "lake_maintenance"

_UNSAFE = re.compile(r"[^A-Za-z0-9_]")


def safe_name(text: str) -> str:
    """Dagster names allow letters, digits and '_' only."""
    return _UNSAFE.sub("_", text)


@dataclass(frozen=True)
class TableNames:
    """Everything named after ``db.table``: asset ``db/table_ingest``, group ``db_table``, ...

    A branch's entry ``db.table$branch_dev`` names its own assets, jobs and schedules
    ``db/table_branch_dev_compaction``, ``db_table_branch_dev_compaction_job``, ... in the table's group."""

    identifier: str

    @property
    def database(self) -> str:
        return safe_name(self.identifier.split(".", 1)[0])

    @property
    def table(self) -> str:
        return safe_name(self.identifier.split(".", 1)[1])

    @property
    def group(self) -> str:
        """The table's group, which holds its branches' assets too."""
        return f"{self.database}_{safe_name(self.identifier.split('.', 1)[1].split(BRANCH_SEPARATOR, 1)[0])}"

    @property
    def prefix(self) -> str:
        """What the entry's jobs, schedules, sensors and pools are named after (the group, for main)."""
        return f"{self.database}_{self.table}"

    def key(self, step: str) -> dg.AssetKey:
        """``ingest``, ``compaction``, ``expiry``, ``changelog`` or ``orphans``."""
        return dg.AssetKey([self.database, f"{self.table}_{step}"])

    def op(self, step: str) -> str:
        """The op name Dagster gives the asset (run config goes under ``ops.<name>``)."""
        return "__".join(self.key(step).path)

    def job(self, step: str) -> str:
        return f"{self.prefix}_{step}_job"

    def schedule(self, step: str) -> str:
        return f"{self.prefix}_{step}_schedule"

    def sensor(self, what: str) -> str:
        return f"{self.prefix}_{what}_sensor"

    @property
    def compaction_pool(self) -> str:
        """Concurrency pool of the table's compaction plan step: one compaction of the table at a time
        (dagster.yaml: pools.default_limit 1, run granularity)."""
        return f"lake_compaction_{self.prefix}"

    def tags(self, job: str) -> dict[str, str]:
        """Run tags of the table's ``job`` (compactions carry the per-table queue tag)."""
        tags = {TABLE_TAG: self.identifier, JOB_TAG: job}
        if job == "compact":
            tags[COMPACTION_TABLE_TAG] = self.identifier
        return tags
