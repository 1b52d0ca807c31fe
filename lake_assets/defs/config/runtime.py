"""How the code location runs: the Spark job launcher and the sensors' and schedules' settings."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from lake_assets.defs.config.fields import Duration, parse_duration, stringify


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SparkConfig(_Strict):
    """How jobs are launched: ``pipes`` runs spark-submit jobs/<name>.py, ``python`` runs python -m."""

    master: str = "local[*]"
    launcher: Literal["pipes", "python"] = "pipes"
    conf: dict[str, str] = Field(default_factory=dict, description="Spark conf passed as --conf k=v.")
    spark_submit: str = Field(default="spark-submit", description="spark-submit executable (pipes launcher).")
    jobs_dir: str | None = Field(
        default=None, description="Folder of the job scripts (pipes launcher); default: lake_assets's jobs/."
    )
    jobs_module: str = Field(default="lake_assets.spark.jobs", description="Package of the jobs (python launcher).")
    timeout: Duration = Field(default="2h", description="A job running longer is stopped and fails.")
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment of the job processes.")

    @field_validator("conf", "env", mode="before")
    @classmethod
    def _texts(cls, v: object) -> object:
        return stringify(v)


class AutomationConfig(_Strict):
    """Sensors, schedules and automation conditions."""

    small_file_sensor_interval_seconds: int = Field(default=60, ge=1, description="Small-file sensor period.")
    automation_sensor_interval_seconds: int = Field(
        default=30, ge=1, description="Period of the sensors evaluating the assets' automation conditions."
    )
    health_sensor_interval_seconds: int = Field(
        default=300, ge=1, description="Period of the health sensor's observations (what Dagster plots over time)."
    )
    default_status: Literal["running", "stopped"] = Field(
        default="running", description="Whether sensors and schedules start on when the code location loads."
    )


class FreshnessConfig(_Strict):
    """Ingest's freshness policy: how long after the last landed partition the asset is stale."""

    fail_after: Duration = Field(description="No ingest for this long fails freshness, e.g. 26h.")
    warn_after: Duration | None = Field(default=None, description="No ingest for this long warns.")

    @model_validator(mode="after")
    def _ordered(self) -> FreshnessConfig:
        if self.warn_after and parse_duration(self.warn_after) >= parse_duration(self.fail_after):
            raise ValueError(f"warn_after ({self.warn_after}) must be shorter than fail_after ({self.fail_after})")
        return self
