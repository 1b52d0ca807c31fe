"""Reporting to Dagster through Pipes when Dagster launched the job; Dagster is never required."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from lake_assets.spark.jobs.logs import log
from lake_assets.spark.jobs.summary import health_markdown, jsonable
from lake_assets.table import Table

if TYPE_CHECKING:
    from dagster_pipes import PipesContext


@contextlib.contextmanager
def pipes_context() -> Iterator[PipesContext | None]:
    """The Dagster Pipes context when Dagster started this process (and dagster_pipes is installed),
    else None."""
    if "DAGSTER_PIPES_CONTEXT" not in os.environ:
        yield None
        return
    try:
        from dagster_pipes import open_dagster_pipes
    except ImportError:
        log.warning("DAGSTER_PIPES_CONTEXT is set but dagster_pipes is not installed: not reporting to Dagster")
        yield None
        return
    context = open_dagster_pipes()
    try:
        yield context
    finally:
        context.close()


def pipes_metadata(summary: dict[str, Any], table: Table | None) -> dict[str, Any]:
    """The summary as Dagster metadata: numbers stay numbers, nested values become JSON."""
    meta: dict[str, Any] = {}
    for k, v in jsonable(summary).items():
        if v is None:
            continue
        if isinstance(v, (dict, list)):
            meta[k] = {"raw_value": v, "type": "json"}
        elif isinstance(v, bool):
            meta[k] = {"raw_value": v, "type": "bool"}
        elif isinstance(v, int):
            meta[k] = {"raw_value": v, "type": "int"}
        elif isinstance(v, float):
            meta[k] = {"raw_value": v, "type": "float"}
        else:
            meta[k] = {"raw_value": str(v), "type": "text"}
    if table is not None:
        meta["table_path"] = {"raw_value": table.file_io.uri(table.paths.root), "type": "path"}
        try:
            meta["health"] = {"raw_value": health_markdown(table), "type": "md"}
        except Exception as exc:  # metadata is best effort: never fail a finished job over it
            log.warning("could not compute health for Dagster metadata: %s", exc)
    return meta


def report_to_pipes(context: PipesContext, summary: dict[str, Any], table: Table | None) -> None:
    """Report a successful run as an asset materialization (or a custom message for op steps)."""
    try:
        metadata = pipes_metadata(summary, table)
        if not context.is_asset_step:
            context.report_custom_message(jsonable(summary))
            return
        keys = list(context.asset_keys)
        if len(keys) == 1:
            context.report_asset_materialization(metadata=metadata)
            return
        # A multi-asset step: report on the asset named after this table, if one is.
        name = (summary.get("table") or "").replace(".", "/")
        matching = [k for k in keys if k == name or k.endswith("/" + name) or k.endswith("/" + name.split("/")[-1])]
        if len(matching) == 1:
            context.report_asset_materialization(metadata=metadata, asset_key=matching[0])
        else:
            context.log.warning(f"no single asset of {keys} matches table {summary.get('table')}; not reported")
    except Exception as exc:
        log.warning("could not report to Dagster Pipes: %s", exc)
