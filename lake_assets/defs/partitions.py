"""Daily partitions of the ingest assets and their mapping onto table partitions and landing files."""

from __future__ import annotations

import glob
from datetime import date, timedelta

import dagster as dg
import pyarrow as pa

from lake_assets.defs.config import IngestConfig
from lake_assets.spec.arrow_types import to_arrow
from lake_assets.spec.partition import partition_value_text
from lake_assets.table import Table

DAY_FORMAT = "%Y-%m-%d"


def daily_partitions(ingest: IngestConfig, timezone: str = "UTC") -> dg.DailyPartitionsDefinition:
    """One Dagster partition per day from the table's start date (through end_date when set)."""
    end = None if ingest.end_date is None else (ingest.end_date + timedelta(days=1)).strftime(DAY_FORMAT)
    return dg.DailyPartitionsDefinition(
        start_date=ingest.start_date.strftime(DAY_FORMAT), end_date=end, timezone=timezone, fmt=DAY_FORMAT
    )


def day_of(partition_key: str) -> date:
    return date.fromisoformat(partition_key)


def column_value(ingest: IngestConfig, partition_key: str) -> str:
    """The table partition value of a day (``partition_format`` applied)."""
    return day_of(partition_key).strftime(ingest.partition_format)


def partition_spec(ingest: IngestConfig, partition_key: str) -> str:
    """``dt=2024-01-01``: the ``--partition`` argument that selects (and overwrites) the day."""
    return f"{ingest.partition_column}={column_value(ingest, partition_key)}"


def path_value(table: Table, column: str, value: str) -> str:
    """How the table's partition paths spell ``value`` of ``column``, to find a day among health rows
    (a DATE partition ``2024-01-01`` is the path value ``19723`` with Paimon's legacy partition names,
    ``2024-01-01`` with ``partition.legacy-name = false``)."""
    dtype = table.schema.types([column])[0]
    typed = pa.array([value], pa.string()).cast(to_arrow(dtype)).to_pylist()[0]
    opts = table.schema.core_options
    return partition_value_text(typed, dtype, opts.partition_default_name, legacy_name=opts.partition_legacy_name)


def source_glob(ingest: IngestConfig, partition_key: str) -> str:
    """The landing path of a day: the template with {date}, {partition_key}, {value}, {year}, ..."""
    day = day_of(partition_key)
    return ingest.source.format(
        partition_key=partition_key,
        date=partition_key,
        value=column_value(ingest, partition_key),
        year=f"{day.year:04d}",
        month=f"{day.month:02d}",
        day=f"{day.day:02d}",
    )


def missing_sources(ingest: IngestConfig, partition_keys: list[str]) -> list[str]:
    """Days whose local landing glob matches nothing (remote URLs are left to the job)."""
    out = []
    for key in partition_keys:
        pattern = source_glob(ingest, key)
        if "://" not in pattern and not glob.glob(pattern):
            out.append(f"{key}: {pattern}")
    return out
