"""Ingest files (Parquet, CSV, JSON) or a Spark table into a lake table, in batch or streaming.

Input columns are matched to the table's columns by name and cast to their types; an unknown or
missing column is a configuration error (exit 2) reported before anything is written. CSV and
JSON are parsed with the table's types (CSV headers give the column order).

``--partition dt=2024-01-01`` says the data belongs to that partition: a missing partition column
is filled with the value, a row with another value fails the write (exit 3). With ``--overwrite``
that partition is replaced, so re-running one day's ingest replaces the day instead of
duplicating it; ``--overwrite`` alone replaces the partitions the input has rows in.

``--partition-source dt=2024-01-01 PATH`` (repeatable) ingests several partitions in one Spark
application, one commit per partition in the order given: a range backfill pays for the JVM and
session start once instead of once per day. With ``--overwrite`` each commit replaces its
partition, so a retried range replaces every day again instead of duplicating any.

``--mode stream`` follows a landing directory with Spark's file source and the data source's
exactly-once streaming sink (the checkpoint keeps the source and sink positions).

``--write-columns id,dt,score`` (data-evolution tables only) declares that the input holds just
those columns: each run writes new rows of them (`lake_assets.spark.column_subset`), the others
reading null (or their default) until a column update sets them. The declaration is checked
against the table before any input is read (a table without data evolution, an unknown column, a
partition or NOT NULL column left out: exit 2), and the input must then have exactly those
columns (a ``--partition`` column may come from the flag). With ``--overwrite`` a partition's rows
are replaced whole, as Paimon's ``INSERT OVERWRITE`` of a column list is: the columns left out
read null afterwards, also where a column update had set them.

Here are the job's arguments, its batch writes and its summary; the input's reading and column
matching are in `ingest_input`, the streaming query in `ingest_stream`.
"""

from __future__ import annotations

import argparse
import inspect
import threading
import time
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql import Observation
from pyspark.sql import functions as F

from lake_assets.errors import LakeError
from lake_assets.ops.mark_done import marker_report
from lake_assets.spark.column_subset import declared_write_columns
from lake_assets.spark.jobs.args import base_parser, key_value, partition_arg, partition_spec, typed_partition
from lake_assets.spark.jobs.context import JobContext
from lake_assets.spark.jobs.errors import UsageError
from lake_assets.spark.jobs.ingest_input import (
    DEFAULT_READ_OPTIONS,
    FORMATS,
    conform_columns,
    input_size,
    read_input,
)
from lake_assets.spark.jobs.ingest_stream import stream_trigger, write_stream
from lake_assets.spark.jobs.runner import main_entry, run_job
from lake_assets.spark.jobs.summary import delta_stats, snapshot_fields
from lake_assets.table import Table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

JOB = "ingest"


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser(JOB, "Write files or a Spark table into a lake table (batch or streaming).")
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--source", default=None, metavar="PATH_OR_GLOB",
                     help="input files or directory (a landing directory with --mode stream)")
    src.add_argument("--source-table", default=None, metavar="NAME", help="a Spark table or view")
    src.add_argument("--partition-source", dest="partition_sources", action="append", nargs=2, default=None,
                     metavar=("K=V[,K=V]", "PATH_OR_GLOB"),
                     help="a partition and its input files (repeatable): one commit per partition, in order")
    parser.add_argument("--format", choices=FORMATS, default=None, help="format of --source files")
    parser.add_argument("--read-option", dest="read_options", action="append", type=key_value, default=[],
                        metavar="K=V", help="Spark reader option (repeatable), e.g. header=false, samplingRatio=0.1")
    parser.add_argument("--write-option", dest="write_options", action="append", type=key_value, default=[],
                        metavar="K=V", help="option of this write over the table's (repeatable; postpone-bucket "
                        "tables: postpone.batch-write-fixed-bucket and the postpone.* count options, as a "
                        "Spark write option in Paimon); spark.paimon.<key> conf works too")
    partition_arg(parser, "the data belongs to this partition (repeatable for several keys); "
                  "with --overwrite it is replaced")
    parser.add_argument("--write-columns", default=None, type=column_list, metavar="COL[,COL...]",
                        help="data-evolution tables: the input holds only these columns (partition and "
                        "NOT NULL ones included); the others read null until a column update sets them")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace the --partition, or without it the partitions present in the input")
    parser.add_argument("--mode", choices=("batch", "stream"), default="batch",
                        help="batch (default) or stream: follow --source as a landing directory")
    parser.add_argument("--trigger", default="availableNow",
                        help="stream trigger: availableNow (default) or processingTime=<interval>")
    parser.add_argument("--checkpoint", default=None, metavar="DIR", help="stream checkpoint directory")
    return parser


# ------------------------------------------------------------------ writing
def _observed_rows(observation: Observation, timeout_s: float = 30.0) -> int | None:
    """The input row count the write observed (Spark collects it with the write, no extra pass).

    ``Observation.get`` blocks until the metrics arrive; a thread bounds the wait in case a plan
    ever drops them, so a summary is never lost to it.
    """
    result: dict[str, Any] = {}
    waiter = threading.Thread(target=lambda: result.update(observation.get), daemon=True)
    waiter.start()
    waiter.join(timeout_s)
    rows = result.get("rows")
    return int(rows) if rows is not None else None


def _partition_overwrite_supported() -> bool:
    """Whether `write_table` replaces a given partition itself (``overwrite_partitions=``)."""
    from lake_assets.spark import write_table

    return "overwrite_partitions" in inspect.signature(write_table).parameters


def column_list(text: str) -> list[str]:
    """``--write-columns``: comma-separated column names, none empty."""
    names = [n.strip() for n in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"expected comma-separated column names, got {text!r}")
    return names


def _write_columns(table: Table, columns: list[str] | None) -> tuple[str, ...] | None:
    """The declared ``--write-columns``, checked against the table before any input is read."""
    try:
        return declared_write_columns(table, columns)
    except LakeError as exc:
        raise UsageError(f"--write-columns: {exc}") from None


def _check_overwrite(table: Table, spec: dict[str, Any], overwrite: bool) -> None:
    if overwrite and spec and set(spec) != set(table.partition_keys) and not _partition_overwrite_supported():
        raise UsageError(
            f"--overwrite with --partition {sorted(spec)} replaces only the sub-partitions the input has rows "
            f"in with this version of lake_assets.spark.write_table; name every partition key "
            f"{list(table.partition_keys)}"
        )


def _write_batch(ctx: JobContext, df: DataFrame, spec: dict[str, Any]) -> int | None:
    """Write through `write_table`; the number of input rows."""
    from lake_assets.spark import write_table

    args = ctx.args
    kwargs: dict[str, Any] = {"mode": "overwrite" if args.overwrite else "append",
                              "storage_options": ctx.ref.storage}
    if args.write_options:
        kwargs["options"] = dict(args.write_options)
    static_fallback = False
    if args.overwrite:  # one commit replaces exactly ``spec`` (or the partitions rows fall in)
        if _partition_overwrite_supported():
            kwargs["overwrite_partitions"] = spec or None
            kwargs["dynamic"] = not spec
        else:
            # Every row is checked to lie inside --partition (which names every key, see
            # _check_overwrite), so replacing the partitions rows fall in replaces exactly it.
            kwargs["partition_overwrite_mode"] = "dynamic"
            static_fallback = bool(spec)
    observation = Observation(f"lake_ingest_{uuid.uuid4().hex}")
    write_table(df.observe(observation, F.count(F.lit(1)).alias("rows")), ctx.ref.warehouse, ctx.ref.identifier,
                **kwargs)
    rows = _observed_rows(observation)
    if static_fallback and rows == 0:
        # An empty delivery of the partition still replaces it: commit the partition's removal.
        ctx.table.write_arrow(ctx.table.arrow_schema.empty_table(), overwrite=spec)
    return rows



PartitionInput = tuple[dict[str, Any], str, "DataFrame", "DataFrame"]
"""(partition, source, raw input, conformed input) of one ``--partition-source``."""


def _partition_inputs(ctx: JobContext, table_schema: StructType,
                      write_columns: tuple[str, ...] | None) -> list[PartitionInput]:
    """(partition, source, raw input, conformed input) of every ``--partition-source``, all checked before
    anything is written: a bad partition value or column in day 20 of a range fails the job with
    nothing committed."""
    args = ctx.args
    table = ctx.table
    if args.partitions:
        raise UsageError("--partition-source names its partition; --partition applies to --source/--source-table")
    seen: dict[tuple[tuple[str, Any], ...], str] = {}
    out = []
    for text, source in args.partition_sources:
        spec = typed_partition(table, partition_spec(text))
        if not spec:
            raise UsageError(f"--partition-source {text!r} names no partition")
        ident = tuple(sorted(spec.items()))
        if ident in seen:
            raise UsageError(f"--partition-source {text} is given twice (also as {seen[ident]})")
        seen[ident] = text
        _check_overwrite(table, spec, args.overwrite)
        raw = read_input(ctx, table_schema, spec, source, write_columns)
        out.append((spec, source, raw, conform_columns(raw, table, table_schema, spec, write_columns)))
    return out


def _write_partitions(ctx: JobContext, inputs: list[PartitionInput]) -> dict[str, Any]:
    """One commit per partition, in order; per partition its rows in and what its commit wrote."""
    table = ctx.table
    per_partition: list[dict[str, Any]] = []
    for i, (spec, source, raw, df) in enumerate(inputs, 1):
        text = ",".join(f"{k}={v}" for k, v in spec.items())
        ctx.describe(f"[{i}/{len(inputs)}] write {source} into {text}" + (" (overwrite)" if ctx.args.overwrite else ""))
        before = table.snapshot_manager.latest_id()
        started = time.perf_counter()
        rows_in = _write_batch(ctx, df, spec)
        entry: dict[str, Any] = {"partition": text, "source": source, "rows_in": rows_in}
        entry["files_in"], entry["bytes_in"] = input_size(raw)
        entry.update(snapshot_fields(table, before))
        entry.update(delta_stats(table, before))
        entry["duration_s"] = round(time.perf_counter() - started, 3)
        per_partition.append(entry)
    totals = {}
    for key in ("rows_in", "files_in", "bytes_in"):
        values = [p[key] for p in per_partition]
        totals[key] = sum(values) if all(v is not None for v in values) else None
    return {**totals, "partitions": per_partition}


def body(ctx: JobContext) -> dict[str, Any]:
    from lake_assets.spark.schema import spark_schema

    args = ctx.args
    if (args.source or args.partition_sources) and not args.format:
        raise UsageError("--source and --partition-source need --format (parquet, csv or json)")
    if args.source_table and (args.format or args.read_options):
        raise UsageError("--format and --read-option apply to --source files, not to --source-table")
    trigger = None
    if args.mode == "stream":
        if not args.checkpoint:
            raise UsageError("--mode stream needs --checkpoint DIR")
        if args.overwrite:
            raise UsageError("--overwrite is not supported with --mode stream")
        if args.partition_sources:
            raise UsageError("--partition-source is not supported with --mode stream")
        if args.write_options:
            raise UsageError("--write-option applies to batch writes (streaming writes of a postpone table "
                             "always postpone)")
        trigger = stream_trigger(args.trigger)
    elif args.checkpoint:
        raise UsageError("--checkpoint applies to --mode stream only")
    table = ctx.table
    write_columns = _write_columns(table, args.write_columns)
    table_schema = spark_schema(table.arrow_schema)
    declared = {"write_columns": list(write_columns)} if write_columns is not None else {}
    if args.partition_sources:
        inputs = _partition_inputs(ctx, table_schema, write_columns)
        ctx.start_run()
        before = table.snapshot_manager.latest_id()
        started_ms = int(time.time() * 1000)
        out: dict[str, Any] = {"mode": args.mode, "overwrite": args.overwrite, "partition": None, **declared}
        out.update(_write_partitions(ctx, inputs))
        out.update(snapshot_fields(table, before))
        out.update(delta_stats(table, before))
        out.update(marker_report(table.store, before, started_ms))  # partition.end-input-to-done
        return out
    spec = typed_partition(table, [pair for group in args.partitions for pair in group])
    _check_overwrite(table, spec, args.overwrite)
    raw = read_input(ctx, table_schema, spec, write_columns=write_columns)
    df = conform_columns(raw, table, table_schema, spec, write_columns)
    ctx.start_run()
    before = table.snapshot_manager.latest_id()
    started_ms = int(time.time() * 1000)
    out = {"mode": args.mode, "overwrite": args.overwrite, "partition": spec or None, **declared}
    if args.mode == "stream":
        ctx.describe(f"stream {args.source or args.source_table}")
        out.update(write_stream(ctx, df, trigger or {}))
    else:
        out["files_in"], out["bytes_in"] = input_size(raw)
        ctx.describe(f"write {args.source or args.source_table}" + (" (overwrite)" if args.overwrite else ""))
        out["rows_in"] = _write_batch(ctx, df, spec)
        out.update(marker_report(table.store, before, started_ms))  # partition.end-input-to-done
    out.update(snapshot_fields(table, before))
    out.update(delta_stats(table, before))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ingest job; returns the exit code (see `lake_assets.spark.jobs`)."""
    return run_job(JOB, argv, build_parser(), body)


__all__ = ["DEFAULT_READ_OPTIONS", "FORMATS", "JOB", "PartitionInput", "body", "build_parser", "conform_columns",
           "main", "read_input"]


if __name__ == "__main__":
    main_entry(main)

