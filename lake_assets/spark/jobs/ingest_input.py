"""The ingest job's input: the files or Spark table it reads, and their columns matched to the table's.

Input columns are matched to the table's columns by name and cast to their types; an unknown or
missing column is a `SchemaError` (the job's exit 2) raised before anything is written. CSV and
JSON are parsed with the table's types (CSV headers give the column order); a ``--partition``
column the input lacks is filled with its value, and a row with another value fails the write.
With ``--write-columns`` (a data-evolution table's declared subset) the input's columns are
matched to those instead: a table column outside them is an unknown column of the input.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from lake_assets.errors import SchemaError
from lake_assets.ops.conform import listed_columns
from lake_assets.spark.jobs.context import JobContext
from lake_assets.table import Table

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import StructType

FORMATS = ("parquet", "csv", "json")
# Bad records fail the job instead of becoming nulls (Spark's default is PERMISSIVE).
DEFAULT_READ_OPTIONS = {"csv": {"header": "true", "mode": "FAILFAST", "enforceSchema": "false"},
                        "json": {"mode": "FAILFAST"}, "parquet": {}}


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
                 spec: dict[str, Any], write_columns: Sequence[str] | None) -> StructType:
    """The reader schema: the table's type for each input column, in the input's order."""
    from pyspark.sql.types import StructType

    by_name = {f.name: f for f in table_schema.fields}
    if columns is None:  # no files to look at: the columns written, less those --partition supplies
        return StructType([by_name[n] for n in _written(table_schema, write_columns) if n not in spec])
    _check_columns(table, columns, table_schema, spec, write_columns)
    return StructType([by_name[c] for c in columns])


def _written(table_schema: StructType, write_columns: Sequence[str] | None) -> list[str]:
    """The columns the job writes, in the table's order: all, or the declared ``--write-columns``."""
    names = [f.name for f in table_schema.fields]
    return names if write_columns is None else [n for n in names if n in write_columns]


def _check_columns(table: Table, columns: Sequence[str], table_schema: StructType, spec: dict[str, Any],
                   write_columns: Sequence[str] | None) -> None:
    names = _written(table_schema, write_columns)
    unknown = [c for c in columns if c not in names]
    missing = [n for n in names if n not in columns and n not in spec]
    if problems := listed_columns(("unknown", unknown), ("missing", missing)):
        expected = (f"table columns: {names}" if write_columns is None
                    else f"--write-columns: {names}; table columns: {[f.name for f in table_schema.fields]}")
        raise SchemaError(f"Cannot ingest into {table.name}: the input has {problems} ({expected})")


def read_input(ctx: JobContext, table_schema: StructType, spec: dict[str, Any], source: str | None = None,
               write_columns: Sequence[str] | None = None) -> DataFrame:
    """The input as a DataFrame, parsed with the table's types where the format allows (``source``:
    files other than ``--source``, as each ``--partition-source`` has its own; ``write_columns``:
    the declared subset the input holds, checked by `declared_write_columns` already)."""
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
        # no header: the declared --write-columns' order, else the table's
        columns: list[str] | None = (list(write_columns) if write_columns is not None
                                     else [f.name for f in table_schema.fields])
    else:
        columns = _input_columns(ctx, fmt, options, source)
    schema = _file_schema(ctx.table, table_schema, columns, spec, write_columns)
    if args.mode == "stream":
        return spark.readStream.schema(schema).options(**options).format(fmt).load(source)
    return spark.read.schema(schema).options(**options).format(fmt).load(source)


def conform_columns(df: DataFrame, table: Table, table_schema: StructType, spec: dict[str, Any],
                    write_columns: Sequence[str] | None = None) -> DataFrame:
    """Select the table's columns (or the declared ``write_columns``) by name, cast to its types,
    fill and check ``--partition`` columns."""
    _check_columns(table, df.columns, table_schema, spec, write_columns)
    written = set(_written(table_schema, write_columns))
    cols: list[Column] = []
    for f in table_schema.fields:
        if f.name not in written:
            continue  # a data-evolution table's column outside the declared subset: not written
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


def input_size(df: DataFrame) -> tuple[int | None, int | None]:
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
