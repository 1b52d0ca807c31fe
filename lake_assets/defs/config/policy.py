"""Per-table maintenance policy: when to compact, how many snapshots to keep, orphan cleanup."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from lake_assets.defs.config.fields import Cron, Duration, parse_duration
from lake_assets.durations import duration_text
from lake_assets.ops.orphans import ORPHAN_AGE_FLOOR, check_orphan_age


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ChangelogPolicy(_Strict):
    """Where the changelog job sends changes; with neither target it only produces the changelog
    (the compaction of a ``lookup`` / ``full-compaction`` table) and keeps no consumer."""

    export_path: str | None = Field(default=None, description="Directory the changes are exported to.")
    export_table: str | None = Field(default=None, description="db.table the changes are appended to.")
    consumer_id: str | None = Field(default=None,
                                    description="Consumer id of the export (default: dagster-<db>-<table>).")

    @model_validator(mode="after")
    def _one_target(self) -> ChangelogPolicy:
        if self.export_path and self.export_table:
            raise ValueError("set at most one of export_path and export_table")
        return self


class OrphanPolicy(_Strict):
    """Orphan-file cleanup: a dry run (reported only) unless enabled."""

    enabled: bool = Field(default=False, description="Delete orphans; false reports a dry run.")
    cron: Cron | None = Field(default="0 5 * * 0", description="When the cleanup runs (null: never).")
    older_than: Duration = Field(
        default="1d", description="Only files older than this are orphans (at least "
        f"{duration_text(ORPHAN_AGE_FLOOR)} and spark.timeout, the longest a Spark write runs, unless allow_recent)."
    )
    allow_recent: bool = Field(
        default=False, description="Allow older_than below the floor: only if nothing can be writing to the table "
        "meanwhile (younger files may be a write's in flight)."
    )
    max_orphan_bytes: int = Field(default=0, ge=0, description="Check fails above this many orphan bytes.")

    @model_validator(mode="after")
    def _old_enough(self) -> OrphanPolicy:
        # whether enabled or not: run config can turn a dry run into a delete (`OrphansConfig.dry_run`)
        check_orphan_age(parse_duration(self.older_than), allow_recent=self.allow_recent)
        return self


class MaintenancePolicy(_Strict):
    """Thresholds the small-file sensor and the checks apply per (partition, bucket), and cron times."""

    small_file_threshold: int = Field(default=10, ge=1, description="More small files per bucket trigger a compaction.")
    small_file_bytes: int | None = Field(
        default=None, ge=1, description="Files below this size are small (default: Paimon's target size rule)."
    )
    level0_runs: int = Field(
        default=5, ge=1, description="More sorted runs per bucket (each level-0 file is one) trigger a compaction."
    )
    size_amplification_percent: float = Field(default=200.0, gt=0, description="More amplification triggers one.")
    max_level0_age: Duration = Field(default="6h", description="Check: the oldest level-0 file is younger.")
    compaction_cron: Cron | None = Field(default="0 2 * * *", description="Full compaction schedule (null: none).")
    compaction_max_units: int | None = Field(default=None, ge=1, description="--max-units of sensor compactions.")
    expiry_cron: Cron | None = Field(default="0 3 * * *", description="Snapshot expiry schedule (null: none).")
    retain_min: int = Field(default=10, ge=1, description="Snapshots always kept.")
    retain_max: int = Field(default=100, ge=1, description="Snapshots kept at most; the retention check's bound.")
    time_retained: Duration | None = Field(default="1h", description="Snapshots younger than this are kept.")
    expire_limit: int | None = Field(default=None, ge=1, description="At most this many snapshots per expiry.")
    partition_expiry_cron: Cron | None = Field(
        default="0 4 * * *", description="Partition expiry schedule of tables with partition.expiration-time "
        "(null: only at commit time, per partition.expiration-check-interval)."
    )
    changelog_after_ingest: bool = Field(default=False, description="Produce the changelog after every ingest.")
    changelog: ChangelogPolicy = ChangelogPolicy()
    orphans: OrphanPolicy = OrphanPolicy()

    @model_validator(mode="after")
    def _retention(self) -> MaintenancePolicy:
        if self.retain_min > self.retain_max:
            raise ValueError(f"retain_min ({self.retain_min}) must not exceed retain_max ({self.retain_max})")
        return self
