"""How the code location runs: the Spark job launcher and the sensors' and schedules' settings."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from lake_assets.defs.config.fields import Duration, stringify


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SparkConfig(_Strict):
    """How jobs are launched: ``pipes`` runs spark-submit jobs/<name>.py, ``python`` runs python -m."""

    master: str = "local[*]"
    launcher: Literal["pipes", "python"] = "pipes"
    conf: dict[str, str] = Field(default_factory=dict, description="Spark conf passed as --conf k=v.")
    spark_submit: str = Field(default="spark-submit", description="spark-submit executable (pipes launcher).")
    jobs_dir: str = Field(default="jobs", description="Folder of the job scripts (pipes launcher).")
    jobs_module: str = Field(default="lake_assets.spark.jobs", description="Package of the jobs (python launcher).")
    timeout: Duration = Field(default="2h", description="A job running longer is stopped and fails.")
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment of the job processes.")

    @field_validator("conf", "env", mode="before")
    @classmethod
    def _texts(cls, v: object) -> object:
        return stringify(v)


class AutomationConfig(_Strict):
    """Sensors and schedules."""

    small_file_sensor_interval_seconds: int = Field(default=60, ge=1, description="Small-file sensor period.")
    changelog_sensor_interval_seconds: int = Field(default=30, ge=1, description="Changelog sensor period.")
    default_status: Literal["running", "stopped"] = Field(
        default="running", description="Whether sensors and schedules start on when the code location loads."
    )
