"""The models of lake.yaml: the whole file, and each table with its ingest source."""

from __future__ import annotations

import string
from datetime import date, datetime
from functools import cached_property
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from lake_assets.catalog import build_schema
from lake_assets.catalog_names import parse_identifier
from lake_assets.defs.config.branches import BranchConfig
from lake_assets.defs.config.fields import Columns, arrow_field, parse_duration, stringify
from lake_assets.defs.config.policy import MaintenancePolicy
from lake_assets.defs.config.runtime import AutomationConfig, FreshnessConfig, SparkConfig
from lake_assets.defs.names import TableNames
from lake_assets.defs.resources.storage import Storage
from lake_assets.errors import LakeError
from lake_assets.ops.column_subset import subset_write_schema
from lake_assets.store.branch_table import BRANCH_SEPARATOR, split_branch

TEMPLATE_FIELDS = ("partition_key", "date", "value", "year", "month", "day")
# Days whose every field differs from the others' (day > 12 too): a partition_format must tell them apart.
_SAMPLE_DAYS = (date(2024, 1, 1), date(2024, 1, 2), date(2024, 2, 1), date(2025, 1, 1), date(2031, 12, 25))


def _day_round_trips(fmt: str, day: date) -> bool:
    """Whether ``day`` formatted with ``fmt`` reads back as ``day`` (a format naming the day uniquely)."""
    try:
        return datetime.strptime(day.strftime(fmt), fmt).date() == day
    except ValueError:
        return False


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class IngestConfig(_Strict):
    """Daily files landing under a path template, one Dagster partition per day."""

    source: str = Field(description="Path or glob template, e.g. data/landing/flights/{date}/*.parquet.")
    format: Literal["parquet", "csv", "json"]
    read_options: dict[str, str] = Field(default_factory=dict, description="Passed as --read-option k=v.")
    start_date: date
    end_date: date | None = None
    partition_column: str = Field(description="The partition key that receives the day.")
    partition_format: str = Field(default="%Y-%m-%d", description="strftime format of the column's value.")
    freshness: FreshnessConfig | None = Field(default=None, description="Freshness policy of the ingest asset.")
    write_columns: list[str] | None = Field(
        default=None, description="Data-evolution tables: the landing files hold only these columns (partition and "
        "NOT NULL ones included; the partition column may come from the day); each day's rows are replaced by "
        "rows of them, the other columns reading null. Passed as --write-columns.")

    @field_validator("source")
    @classmethod
    def _template(cls, v: str) -> str:
        names = [f for _, f, _, _ in string.Formatter().parse(v) if f is not None]
        unknown = [n for n in names if n not in TEMPLATE_FIELDS]
        if unknown:
            raise ValueError(f"unknown placeholders {unknown} in {v!r}; use {list(TEMPLATE_FIELDS)}")
        return v

    @field_validator("partition_format")
    @classmethod
    def _one_value_per_day(cls, v: str) -> str:
        # Each day's run overwrites the partition its value names: a format that gives two days one
        # value ('%Y-%m': a month) would make every day's run replace the days before it.
        if not all(_day_round_trips(v, day) for day in _SAMPLE_DAYS):
            raise ValueError(f"{v!r} does not give each day a value of its own (each day's run overwrites "
                             "the partition its value names): use the year, month and day, e.g. '%Y-%m-%d' "
                             "or '%Y%m%d'")
        return v

    @model_validator(mode="after")
    def _dates_in_order(self) -> IngestConfig:
        if self.end_date is not None and self.end_date < self.start_date:
            raise ValueError(f"end_date {self.end_date} is before start_date {self.start_date}: "
                             "the ingest would have no days")
        return self

    @field_validator("read_options", mode="before")
    @classmethod
    def _texts(cls, v: object) -> object:
        return stringify(v)


class TableConfig(_Strict):
    """One Paimon table: schema, keys, options, where its data comes from and how it is maintained."""

    identifier: str
    columns: Columns = Field(alias="schema", description="Column name → Paimon type text.")
    primary_keys: list[str] = Field(default_factory=list)
    partition_keys: list[str] = Field(default_factory=list)
    options: dict[str, str] = Field(default_factory=dict, description="Paimon table options.")
    ingest: IngestConfig | None = None
    maintenance: MaintenancePolicy = MaintenancePolicy()
    branches: list[BranchConfig] = Field(
        default_factory=list, description="Branches maintained besides the main branch: their names, or "
        "{name, maintenance} with the settings that differ from the table's.")

    @field_validator("identifier")
    @classmethod
    def _identifier(cls, v: str) -> str:
        try:
            parse_identifier(v)
        except LakeError as exc:
            raise ValueError(str(exc)) from None
        if v.count(".") != 1:
            raise ValueError(f"{v!r} must be database.table")
        if BRANCH_SEPARATOR in v:
            raise ValueError(f"{v!r} names a branch: declare the table and list the branch under its `branches`")
        return v

    @field_validator("branches")
    @classmethod
    def _distinct_branches(cls, v: list[BranchConfig]) -> list[BranchConfig]:
        names = [b.name for b in v]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"branches {twice} are listed more than once")
        return v

    @field_validator("options", mode="before")
    @classmethod
    def _texts(cls, v: object) -> object:
        return stringify(v)

    @model_validator(mode="after")
    def _consistent(self) -> TableConfig:
        if self.postpone and self.maintenance.compaction_max_units is not None:
            raise ValueError("maintenance.compaction_max_units does not apply to a postpone-bucket table "
                             "(bucket: -2): its compaction moves every postponed row of the partitions")
        try:
            schema = build_schema(self.identifier, self.arrow_schema, tuple(self.primary_keys),
                                  tuple(self.partition_keys), dict(self.options))
        except LakeError as exc:
            raise ValueError(str(exc)) from None
        if self.ingest and self.ingest.partition_column not in self.partition_keys:
            raise ValueError(f"ingest.partition_column {self.ingest.partition_column!r} is not one of "
                             f"partition_keys {self.partition_keys}")
        if self.ingest and self.ingest.write_columns is not None:
            # the job's --write-columns rules, checked against the declared table at load time
            if any("," in c for c in self.ingest.write_columns):
                raise ValueError("ingest.write_columns: a column name with a comma cannot be passed to the job's "
                                 "--write-columns")
            try:
                subset_write_schema(schema, self.ingest.write_columns, self.identifier)
            except LakeError as exc:
                raise ValueError(f"ingest.write_columns: {exc}") from None
        for branch in self.branches:
            try:
                policy = branch.maintenance.over(self.maintenance)
            except ValidationError as exc:  # e.g. retain_min above retain_max
                problems = "; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())
                raise ValueError(f"branches ({branch.name}).maintenance: {problems}") from None
            if self.postpone and policy.compaction_max_units is not None:
                raise ValueError(f"branches ({branch.name}).maintenance.compaction_max_units does not apply to a "
                                 "postpone-bucket table (bucket: -2): its compaction moves every postponed row")
        if self.maintenance.changelog_after_ingest and not self.has_changelog_producer:
            raise ValueError("maintenance.changelog_after_ingest needs the option changelog-producer "
                             "(input, lookup or full-compaction)")
        return self

    @cached_property
    def arrow_schema(self) -> pa.Schema:
        return pa.schema([arrow_field(n, t) for n, t in self.columns.items()])

    @property
    def postpone(self) -> bool:
        """Whether the table is declared in postpone bucket mode (``bucket: -2``, primary key): the
        mode for write-only ingest plus the dedicated compaction (docs/dagster.md)."""
        return bool(self.primary_keys) and self.options.get("bucket", "").strip() == "-2"

    @property
    def has_changelog_producer(self) -> bool:
        return self.options.get("changelog-producer", "none") != "none"

    @property
    def has_partition_expiry(self) -> bool:
        """Partitioned, with ``partition.expiration-time``: the table has a partition expiry asset."""
        return bool(self.partition_keys) and "partition.expiration-time" in self.options

    @property
    def branch(self) -> str | None:
        """The branch this entry maintains (`branch_specs`), None for the table itself (main)."""
        return split_branch(self.identifier.split(".", 1)[1])[1]

    @property
    def main_identifier(self) -> str:
        """``db.t``, also for the entry of a branch (``db.t$branch_dev``)."""
        return self.identifier.split(BRANCH_SEPARATOR, 1)[0]

    def branch_specs(self) -> list[TableConfig]:
        """One entry per listed branch, maintained as the table ``db.t$branch_<name>`` (the core's and
        the jobs' identifier of a branch): no ingest, the branch's maintenance policy, and a
        declaration of the table's keys only (a branch's options are its own, set by ALTER on it)."""
        return [self.model_copy(update={
            "identifier": f"{self.identifier}{BRANCH_SEPARATOR}{b.name}", "ingest": None, "options": {},
            "maintenance": b.maintenance.over(self.maintenance), "branches": []}) for b in self.branches]

    @property
    def maintenance_steps(self) -> list[str]:
        """The table's maintenance assets (steps), which schedules, sensors and automation conditions
        launch; each needs the table to be what lake.yaml declares (`WarehouseResource.declared_table`).
        A branch has compaction and expiry (orphan removal is the table's, run on main)."""
        if self.branch is not None:
            return ["compaction", "expiry"]
        return (["compaction", "expiry", "orphans"] + (["changelog"] if self.has_changelog_producer else [])
                + (["partition_expiry"] if self.has_partition_expiry else []))


class LakeConfig(_Strict):
    """The whole of lake.yaml."""

    warehouse: Storage
    spark: SparkConfig = SparkConfig()
    automation: AutomationConfig = AutomationConfig()
    timezone: str = Field(default="UTC", description="Time zone of schedules and daily partitions.")
    tables: list[TableConfig] = Field(min_length=1)

    @field_validator("timezone")
    @classmethod
    def _known_timezone(cls, v: str) -> str:
        try:
            ZoneInfo(v)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"{v!r} is not an IANA time zone (e.g. 'UTC', 'Europe/Berlin')") from None
        return v

    @model_validator(mode="after")
    def _unique(self) -> LakeConfig:
        seen: dict[str, str] = {}
        for t in self.tables:
            group = TableNames(t.identifier).group
            if group in seen:
                raise ValueError(f"tables {seen[group]} and {t.identifier} map to the same Dagster group {group}")
            seen[group] = t.identifier
        # A branch's assets are <db>/<table>_branch_<name>_<step>: a table so named, or two branch names
        # Dagster spells alike (dev-1, dev_1), would give two entries one asset.
        keys: dict[str, str] = {}
        for spec in self.maintained_tables:
            steps = (["ingest"] if spec.ingest else []) + spec.maintenance_steps
            for key in (TableNames(spec.identifier).key(step).to_user_string() for step in steps):
                if key in keys:
                    raise ValueError(f"{keys[key]} and {spec.identifier} both have the Dagster asset {key}")
                keys[key] = spec.identifier
        return self

    @property
    def maintained_tables(self) -> list[TableConfig]:
        """Every table entry, then every listed branch as its own entry (`TableConfig.branch_specs`)."""
        return [*self.tables, *(b for t in self.tables for b in t.branch_specs())]

    @model_validator(mode="after")
    def _orphans_outlive_writes(self) -> LakeConfig:
        # A Spark job Dagster launches writes for up to spark.timeout before it commits: an orphan bound
        # below that could delete the files of an ingest or compaction still running.
        timeout = parse_duration(self.spark.timeout)
        for t in self.tables:
            orphans = t.maintenance.orphans
            if not orphans.allow_recent and parse_duration(orphans.older_than) < timeout:
                raise ValueError(
                    f"{t.identifier}: maintenance.orphans.older_than ({orphans.older_than}) is below spark.timeout "
                    f"({self.spark.timeout}), the longest a Spark write of it runs before its commit: orphan removal "
                    "could delete the files of a write still in flight. Raise older_than (or set "
                    "orphans.allow_recent: true if nothing can be writing to the table meanwhile)"
                )
        return self

    def table(self, identifier: str) -> TableConfig:
        for t in self.tables:
            if t.identifier == identifier:
                return t
        raise KeyError(identifier)
