"""The models of lake.yaml: the warehouse, how Spark jobs are launched, and the tables."""

from __future__ import annotations

import string
from datetime import date
from functools import cached_property
from typing import Literal

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from lake_assets.catalog import build_schema
from lake_assets.catalog_names import parse_identifier
from lake_assets.defs.config.fields import Columns, Duration, arrow_field
from lake_assets.defs.config.policy import MaintenancePolicy
from lake_assets.defs.names import TableNames
from lake_assets.defs.resources.storage import Storage
from lake_assets.errors import LakeError

TEMPLATE_FIELDS = ("partition_key", "date", "value", "year", "month", "day")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


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
        return _stringify(v)


class IngestConfig(_Strict):
    """Daily files landing under a path template, one Dagster partition per day."""

    source: str = Field(description="Path or glob template, e.g. data/landing/flights/{date}/*.parquet.")
    format: Literal["parquet", "csv", "json"]
    read_options: dict[str, str] = Field(default_factory=dict, description="Passed as --read-option k=v.")
    start_date: date
    end_date: date | None = None
    partition_column: str = Field(description="The partition key that receives the day.")
    partition_format: str = Field(default="%Y-%m-%d", description="strftime format of the column's value.")

    @field_validator("source")
    @classmethod
    def _template(cls, v: str) -> str:
        names = [f for _, f, _, _ in string.Formatter().parse(v) if f is not None]
        unknown = [n for n in names if n not in TEMPLATE_FIELDS]
        if unknown:
            raise ValueError(f"unknown placeholders {unknown} in {v!r}; use {list(TEMPLATE_FIELDS)}")
        return v

    @field_validator("read_options", mode="before")
    @classmethod
    def _texts(cls, v: object) -> object:
        return _stringify(v)


class TableConfig(_Strict):
    """One Paimon table: schema, keys, options, where its data comes from and how it is maintained."""

    identifier: str
    columns: Columns = Field(alias="schema", description="Column name → Paimon type text.")
    primary_keys: list[str] = Field(default_factory=list)
    partition_keys: list[str] = Field(default_factory=list)
    options: dict[str, str] = Field(default_factory=dict, description="Paimon table options.")
    ingest: IngestConfig | None = None
    maintenance: MaintenancePolicy = MaintenancePolicy()

    @field_validator("identifier")
    @classmethod
    def _identifier(cls, v: str) -> str:
        try:
            parse_identifier(v)
        except LakeError as exc:
            raise ValueError(str(exc)) from None
        if v.count(".") != 1:
            raise ValueError(f"{v!r} must be database.table")
        return v

    @field_validator("options", mode="before")
    @classmethod
    def _texts(cls, v: object) -> object:
        return _stringify(v)

    @model_validator(mode="after")
    def _consistent(self) -> TableConfig:
        try:
            build_schema(self.identifier, self.arrow_schema, tuple(self.primary_keys),
                         tuple(self.partition_keys), dict(self.options))
        except LakeError as exc:
            raise ValueError(str(exc)) from None
        if self.ingest and self.ingest.partition_column not in self.partition_keys:
            raise ValueError(f"ingest.partition_column {self.ingest.partition_column!r} is not one of "
                             f"partition_keys {self.partition_keys}")
        if self.maintenance.changelog_after_ingest and not self.has_changelog_producer:
            raise ValueError("maintenance.changelog_after_ingest needs the option changelog-producer "
                             "(input, lookup or full-compaction)")
        return self

    @cached_property
    def arrow_schema(self) -> pa.Schema:
        return pa.schema([arrow_field(n, t) for n, t in self.columns.items()])

    @property
    def has_changelog_producer(self) -> bool:
        return self.options.get("changelog-producer", "none") != "none"


class SensorConfig(_Strict):
    """The small-file sensor."""

    interval_seconds: int = Field(default=60, ge=1, description="Seconds between evaluations.")


class LakeConfig(_Strict):
    """The whole of lake.yaml."""

    warehouse: Storage
    spark: SparkConfig = SparkConfig()
    sensor: SensorConfig = SensorConfig()
    timezone: str = Field(default="UTC", description="Time zone of schedules and daily partitions.")
    tables: list[TableConfig] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> LakeConfig:
        seen: dict[str, str] = {}
        for t in self.tables:
            group = TableNames(t.identifier).group
            if group in seen:
                raise ValueError(f"tables {seen[group]} and {t.identifier} map to the same Dagster group {group}")
            seen[group] = t.identifier
        return self

    def table(self, identifier: str) -> TableConfig:
        for t in self.tables:
            if t.identifier == identifier:
                return t
        raise KeyError(identifier)


def _stringify(v: object) -> object:
    """YAML scalars → the text Paimon options, Spark conf and read options expect."""
    if not isinstance(v, dict):
        return v
    return {str(k): ("true" if x is True else "false" if x is False else str(x)) for k, x in v.items()}
