"""Validated scalar fields of lake.yaml: durations, cron strings, Paimon column types."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

import dagster as dg
import pyarrow as pa
from pydantic import AfterValidator

from lake_assets import durations
from lake_assets.errors import LakeError
from lake_assets.spec.arrow_types import to_arrow
from lake_assets.spec.type_parser import parse_type


def parse_duration(text: str) -> timedelta:
    """``"90s"``, ``"15 min"``, ``"1h"``, ``"7d"`` → timedelta: Paimon's duration grammar, the one
    table options and the jobs' ``--older-than`` use (`lake_assets.durations`).

    One difference: a bare number is refused here. Paimon reads it as milliseconds, which in a
    config file (``timeout: 7200``) is almost never what its author meant.
    """
    bare = str(text).strip()
    if bare.isdigit():
        raise ValueError(f"{bare!r} has no unit: write e.g. '{bare}s' or '{bare}min'")
    try:
        return durations.parse_duration(text)
    except LakeError as exc:
        # pydantic turns ValueError (not LakeError) into a validation error naming the field
        raise ValueError(str(exc)) from None


def _check_duration(text: str) -> str:
    parse_duration(text)
    return text.strip()


def is_valid_cron(text: str) -> bool:
    """Dagster's own cron check: whether a `ScheduleDefinition` accepts ``text`` (public API only)."""
    try:
        dg.ScheduleDefinition(name="lake_cron_check", cron_schedule=text, target=dg.AssetSelection.all())
    except dg.DagsterInvalidDefinitionError:
        return False
    return True


def _check_cron(text: str) -> str:
    if not is_valid_cron(text):
        raise ValueError(f"{text!r} is not a valid cron schedule (five fields, e.g. '0 3 * * *')")
    return text


def arrow_field(name: str, type_text: str) -> pa.Field:
    """A column from its Paimon type text (``BIGINT``, ``STRING NOT NULL``, ``TIMESTAMP(3)``)."""
    try:
        dt = parse_type(type_text)
    except LakeError as exc:
        raise ValueError(f"column {name!r}: {exc}") from None
    return pa.field(name, to_arrow(dt), nullable=dt.nullable)


def _check_columns(columns: dict[str, str]) -> dict[str, str]:
    if not columns:
        raise ValueError("a table needs at least one column")
    for name, type_text in columns.items():
        if not isinstance(type_text, str):
            raise ValueError(f"column {name!r}: the type must be text such as BIGINT, got {type_text!r}")
        arrow_field(name, type_text)
    return columns


Duration = Annotated[str, AfterValidator(_check_duration)]
Cron = Annotated[str, AfterValidator(_check_cron)]
Columns = Annotated[dict[str, str], AfterValidator(_check_columns)]


def stringify(v: object) -> object:
    """YAML scalars → the text Paimon options, Spark conf and read options expect."""
    if not isinstance(v, dict):
        return v
    return {str(k): ("true" if x is True else "false" if x is False else str(x)) for k, x in v.items()}
