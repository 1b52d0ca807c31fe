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
"""

from __future__ import annotations

import argparse
import inspect
import signal
import threading
import time
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql import Observation
from pyspark.sql import functions as F

from lake_assets.errors import SchemaError
from lake_assets.ops.mark_done import marker_report
from lake_assets.spark.jobs.args import base_parser, key_value, partition_arg, partition_spec, typed_partition
from lake_assets.spark.jobs.context import JobContext
from lake_assets.spark.jobs.errors import UsageError
from lake_assets.spark.jobs.logs import log
from lake_assets.spark.jobs.runner import main_entry, run_job
from lake_assets.spark.jobs.summary import delta_stats, snapshot_fields
from lake_assets.table import Table

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import StructType

JOB = "ingest"
FORMATS = ("parquet", "csv", "json")
# Bad records fail the job instead of becoming nulls (Spark's default is PERMISSIVE).
DEFAULT_READ_OPTIONS = {"csv": {"header": "true", "mode": "FAILFAST", "enforceSchema": "false"},
                        "json": {"mode": "FAILFAST"}, "parquet": {}}


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
    parser.add_argument("--overwrite", action="store_true",
                        help="replace the --partition, or without it the partitions present in the input")
    parser.add_argument("--mode", choices=("batch", "stream"), default="batch",
                        help="batch (default) or stream: follow --source as a landing directory")
    parser.add_argument("--trigger", default="availableNow",
                        help="stream trigger: availableNow (default) or processingTime=<interval>")
    parser.add_argument("--checkpoint", default=None, metavar="DIR", help="stream checkpoint directory")
    return parser


# ------------------------------------------------------------------ reading
def _read_options(args: argparse.Namespace) -> dict[str, str]:
    return {**DEFAULT_READ_OPTIONS.get(args.format or "", {}), **dict(args.read_options)}


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _input_columns(ctx: JobContext, fmt: str, options: dict[str, str], source: str) -> list[str] | None:
    """Column names the input files have (Parquet footers, CSV header, JSON inference), None if
    there are no files yet (a stream's landing directory may start empty)."""
    reader = ctx.spark.read.options(**{k: v for k, v in options.items() if k != "enforceSchema"})
    streaming = ctx.args.mode == "stream"
    try:
        columns = reader.format(fmt).load(source).columns
    except Exception as exc:
        if streaming and "UNABLE_TO_INFER_SCHEMA" in str(exc):
            return None
        raise
    return columns if columns or not streaming else None


def _file_schema(table: Table, table_schema: StructType, columns: list[str] | None,
                 spec: dict[str, Any]) -> StructType:
    """The reader schema: the table's type for each input column, in the input's order."""
    from pyspark.sql.types import StructType

    by_name = {f.name: f for f in table_schema.fields}
    if columns is None:  # no files to look at: the table's columns, less those --partition supplies
        return StructType([f for f in table_schema.fields if f.name not in spec])
    _check_columns(table, columns, table_schema, spec)
    return StructType([by_name[c] for c in columns])


def _check_columns(table: Table, columns: Sequence[str], table_schema: StructType, spec: dict[str, Any]) -> None:
    names = [f.name for f in table_schema.fields]
    unknown = [c for c in columns if c not in names]
    missing = [n for n in names if n not in columns and n not in spec]
    if unknown or missing:
        parts = []
        if unknown:
            parts.append(f"unknown columns {unknown}")
        if missing:
            parts.append(f"missing columns {missing}")
        raise SchemaError(f"Cannot ingest into {table.name}: the input has {' and '.join(parts)} "
                          f"(table columns: {names})")


def read_input(ctx: JobContext, table_schema: StructType, spec: dict[str, Any], source: str | None = None) -> DataFrame:
    """The input as a DataFrame, parsed with the table's types where the format allows (``source``:
    files other than ``--source``, as each ``--partition-source`` has its own)."""
    args = ctx.args
    spark = ctx.spark
    source = source or args.source
    if args.source_table:
        return spark.readStream.table(args.source_table) if args.mode == "stream" else spark.table(args.source_table)
    fmt = args.format
    options = _read_options(args)
    if fmt == "parquet" and args.mode == "batch":
        return spark.read.options(**options).parquet(source)  # typed already: cast by name below
    if fmt == "csv" and options.get("header", "true").lower() == "false":
        columns: list[str] | None = [f.name for f in table_schema.fields]  # no header: the table's order
    else:
        columns = _input_columns(ctx, fmt, options, source)
    schema = _file_schema(ctx.table, table_schema, columns, spec)
    if args.mode == "stream":
        return spark.readStream.schema(schema).options(**options).format(fmt).load(source)
    return spark.read.schema(schema).options(**options).format(fmt).load(source)


def conform_columns(df: DataFrame, table: Table, table_schema: StructType, spec: dict[str, Any]) -> DataFrame:
    """Select the table's columns by name, cast to its types, fill and check ``--partition`` columns."""
    _check_columns(table, df.columns, table_schema, spec)
    cols: list[Column] = []
    for f in table_schema.fields:
        if f.name in df.columns:
            col = F.col(_quoted(f.name))
            if df.schema[f.name].dataType != f.dataType:
                col = col.cast(f.dataType)
            if f.name in spec:
                expected = F.lit(spec[f.name]).cast(f.dataType)
                message = F.concat(
                    F.lit(f"ingest into {table.name}: a row has {f.name}="),
                    F.coalesce(col.cast("string"), F.lit("null")),
                    F.lit(f", outside --partition {f.name}={spec[f.name]}"),
                )
                col = F.when(col == expected, col).otherwise(F.raise_error(message))
        else:
            col = F.lit(spec[f.name]).cast(f.dataType)
        cols.append(col.alias(f.name))
    return df.select(*cols)


def _input_size(df: DataFrame) -> tuple[int | None, int | None]:
    """(files, bytes) of a file-based input, from Spark's file index (no extra reads)."""
    try:
        files = len(df.inputFiles())
    except Exception:
        files = None
    try:
        size = int(str(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
    except Exception:
        size = None
    return (files or None), (size if files else None)


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


def _trigger(text: str) -> dict[str, Any]:
    t = text.strip()
    if t.lower() in ("availablenow", "available-now"):
        return {"availableNow": True}
    key, sep, value = t.partition("=")
    if sep and key.strip().lower() in ("processingtime", "processing-time") and value.strip():
        return {"processingTime": value.strip()}
    raise UsageError(f"--trigger must be availableNow or processingTime=<interval>, got {text!r}")


def _write_stream(ctx: JobContext, df: DataFrame, trigger: dict[str, Any]) -> dict[str, Any]:
    from lake_assets.spark import repartition_by_bucket
    from lake_assets.spark.source_options import STORAGE_PREFIX, storage_option_text

    routed = repartition_by_bucket(df, ctx.table)
    writer = (routed.writeStream.format("lake").outputMode("append")
              .option("warehouse", ctx.ref.warehouse).option("checkpointLocation", ctx.args.checkpoint)
              .queryName(f"lake_ingest_{ctx.table.name.replace('.', '_')}").trigger(**trigger))
    for k, v in ctx.ref.storage.items():
        writer = writer.option(STORAGE_PREFIX + k, storage_option_text(v))
    query = writer.start(ctx.ref.identifier)
    log.info("streaming into %s (query %s, trigger %s)", ctx.table.name, query.id, trigger)
    stop_requested = threading.Event()
    previous = None
    if threading.current_thread() is threading.main_thread():
        # spark-submit and Dagster stop a stream with SIGTERM. The handler only sets a flag: stopping
        # the query from inside it would break the py4j call the main thread is waiting in.
        def request_stop(signum: int, frame: Any) -> None:
            stop_requested.set()

        previous = signal.signal(signal.SIGTERM, request_stop)
    try:
        while not query.awaitTermination(1):  # raises if the query failed
            if stop_requested.is_set():
                log.info("SIGTERM: stopping the stream (a batch it interrupts is redone by the next run)")
                query.stop()
                break
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    progress = [p for p in query.recentProgress if p is not None]
    return {
        "query_id": str(query.id),
        "stopped_by_signal": stop_requested.is_set(),
        "batches": sum(1 for p in progress if (p.numInputRows or 0) > 0),
        "rows_in": sum(int(p.numInputRows or 0) for p in progress),
    }


PartitionInput = tuple[dict[str, Any], str, "DataFrame", "DataFrame"]
"""(partition, source, raw input, conformed input) of one ``--partition-source``."""


def _partition_inputs(ctx: JobContext, table_schema: StructType) -> list[PartitionInput]:
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
        raw = read_input(ctx, table_schema, spec, source)
        out.append((spec, source, raw, conform_columns(raw, table, table_schema, spec)))
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
        entry["files_in"], entry["bytes_in"] = _input_size(raw)
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
        trigger = _trigger(args.trigger)
    elif args.checkpoint:
        raise UsageError("--checkpoint applies to --mode stream only")
    table = ctx.table
    table_schema = spark_schema(table.arrow_schema)
    if args.partition_sources:
        inputs = _partition_inputs(ctx, table_schema)
        ctx.start_run()
        before = table.snapshot_manager.latest_id()
        started_ms = int(time.time() * 1000)
        out: dict[str, Any] = {"mode": args.mode, "overwrite": args.overwrite, "partition": None}
        out.update(_write_partitions(ctx, inputs))
        out.update(snapshot_fields(table, before))
        out.update(delta_stats(table, before))
        out.update(marker_report(table.store, before, started_ms))  # partition.end-input-to-done
        return out
    spec = typed_partition(table, [pair for group in args.partitions for pair in group])
    _check_overwrite(table, spec, args.overwrite)
    raw = read_input(ctx, table_schema, spec)
    df = conform_columns(raw, table, table_schema, spec)
    ctx.start_run()
    before = table.snapshot_manager.latest_id()
    started_ms = int(time.time() * 1000)
    out = {"mode": args.mode, "overwrite": args.overwrite, "partition": spec or None}
    if args.mode == "stream":
        ctx.describe(f"stream {args.source or args.source_table}")
        out.update(_write_stream(ctx, df, trigger or {}))
    else:
        out["files_in"], out["bytes_in"] = _input_size(raw)
        ctx.describe(f"write {args.source or args.source_table}" + (" (overwrite)" if args.overwrite else ""))
        out["rows_in"] = _write_batch(ctx, df, spec)
        out.update(marker_report(table.store, before, started_ms))  # partition.end-input-to-done
    out.update(snapshot_fields(table, before))
    out.update(delta_stats(table, before))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ingest job; returns the exit code (see `lake_assets.spark.jobs`)."""
    return run_job(JOB, argv, build_parser(), body)


if __name__ == "__main__":
    main_entry(main)
