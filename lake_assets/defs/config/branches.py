"""A table's branches in lake.yaml: which ones Dagster maintains, and their own maintenance settings.

A branch (``branch/branch-<name>``, Paimon's ``db.t$branch_<name>``) has its own snapshots, so it
needs its own compaction and snapshot expiry: the main branch's expiry keeps every file a branch
names but never expires the branch's snapshots. Each listed branch gets a compaction and an expiry
asset, the health checks and observations, and a place in the small-file sensor; its settings are
the table's ``maintenance`` with what the branch entry overrides.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from lake_assets.defs.config.fields import Cron, Duration
from lake_assets.defs.config.policy import MaintenancePolicy
from lake_assets.errors import LakeError
from lake_assets.store.branch_table import BRANCH_SEPARATOR, MAIN_BRANCH, split_branch


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# Settings of the table's `maintenance` that a branch entry cannot set, and why.
TABLE_ONLY = {
    "orphans": "orphan removal is a whole-table operation, run on main, which keeps every branch's files",
    "changelog": "the changelog asset reads main's changes",
    "changelog_after_ingest": "the ingest writes main",
    "partition_expiry_cron": "the partition expiry asset is main's (a branch's commits expire its partitions)",
}


class BranchMaintenance(_Strict):
    """What a branch sets apart from its table's ``maintenance`` (unset: the table's value). Orphan
    removal and the changelog are the table's (a whole-table operation, and main's stream), so they
    have no place here."""

    small_file_threshold: int | None = Field(default=None, ge=1)
    small_file_bytes: int | None = Field(default=None, ge=1)
    level0_runs: int | None = Field(default=None, ge=1)
    size_amplification_percent: float | None = Field(default=None, gt=0)
    max_level0_age: Duration | None = None
    compaction_cron: Cron | None = None
    compaction_max_units: int | None = Field(default=None, ge=1)
    expiry_cron: Cron | None = None
    retain_min: int | None = Field(default=None, ge=1)
    retain_max: int | None = Field(default=None, ge=1)
    time_retained: Duration | None = None
    expire_limit: int | None = Field(default=None, ge=1)

    @model_validator(mode="before")
    @classmethod
    def _table_only(cls, data: Any) -> Any:
        given = sorted(set(data) & set(TABLE_ONLY)) if isinstance(data, dict) else []
        if given:
            raise ValueError("; ".join(f"{k} is the table's, not a branch's: {TABLE_ONLY[k]}" for k in given))
        return data

    def over(self, table_policy: MaintenancePolicy) -> MaintenancePolicy:
        """The table's policy with the settings this branch gives (a ``null`` given counts: no cron)."""
        merged = {**table_policy.model_dump(), **{k: getattr(self, k) for k in self.model_fields_set}}
        return MaintenancePolicy.model_validate(merged)


class BranchConfig(_Strict):
    """One branch to maintain: ``dev``, or ``{name: dev, maintenance: {retain_max: 20}}``."""

    name: str = Field(description="The branch's name (its directory is branch/branch-<name>).")
    maintenance: BranchMaintenance = BranchMaintenance()

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        return {"name": data} if isinstance(data, str) else data

    @field_validator("name")
    @classmethod
    def _branch_name(cls, v: str) -> str:
        if v == MAIN_BRANCH:
            raise ValueError("'main' is the table itself: its maintenance is the table's `maintenance`")
        try:
            split_branch(f"t{BRANCH_SEPARATOR}{v}")  # Paimon's rules for a branch name
        except LakeError as exc:
            raise ValueError(f"branch {v!r}: {exc}") from None
        return v
