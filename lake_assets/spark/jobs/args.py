"""The jobs' command line: the parser every job starts from and the argparse types they share.

Argument errors raise `UsageError` (exit code 2) instead of exiting, so the runner can still print
the JSON summary. Values that need the table (partition values typed like their columns) are
converted once the table is open, by `typed_partition`.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

import pyarrow as pa

from lake_assets.errors import OptionError, SchemaError
from lake_assets.options import parse_duration_ms
from lake_assets.spark import source_options
from lake_assets.spark.jobs.errors import UsageError
from lake_assets.spec.arrow_types import to_arrow
from lake_assets.table import Table

PartitionSpec = tuple[tuple[str, str], ...]


class JobParser(argparse.ArgumentParser):
    """An argument parser that raises `UsageError` instead of exiting, so the job can still print
    its JSON summary and choose the exit code."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


def key_value(text: str) -> tuple[str, str]:
    """``k=v`` → (k, v); an argparse type."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value


def duration_ms(text: str) -> int:
    """``1h``, ``30 min``, ``1d``, ``500 ms`` → milliseconds; an argparse type."""
    try:
        return parse_duration_ms(text, "duration")
    except OptionError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration (e.g. 1h, 30min, 1d)") from None


def non_negative_int(text: str) -> int:
    """An integer ≥ 0; an argparse type."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An integer ≥ 1; an argparse type."""
    value = non_negative_int(text)
    if value == 0:
        raise argparse.ArgumentTypeError("expected a positive integer, got 0")
    return value


def program_name(job: str, argv0: str | None = None) -> str:
    """How the user started ``job``, for ``usage:`` and argument errors: the script's path under
    ``spark-submit jobs/<job>.py`` (as argparse would name it), ``python -m lake_assets.spark.jobs.<job>``
    when run as a module, and the module's name when called in-process (``main(argv)``)."""
    module = f"lake_assets.spark.jobs.{job}"
    script = sys.argv[0] if argv0 is None and sys.argv else (argv0 or "")
    if os.path.basename(script) != f"{job}.py":
        return module  # in-process: the running program (pytest, a notebook) is not the job
    if os.path.dirname(os.path.abspath(script)) == os.path.dirname(os.path.abspath(__file__)):
        return f"python -m {module}"  # `python -m` sets argv[0] to the module's own file
    return script


def base_parser(job: str, description: str) -> JobParser:
    """A parser with the arguments every job takes; ``job`` is the job's module name."""
    parser = JobParser(prog=program_name(job), description=description)
    parser.add_argument("--warehouse", required=True, help="warehouse URL (path, file://, s3://bucket/path)")
    parser.add_argument("--table", required=True, help="table identifier db.table")
    parser.add_argument("--branch", default=None, metavar="NAME",
                        help="run on this branch of the table (as --table db.table$branch_NAME); what the "
                        "table refuses on a branch fails naming it")
    parser.add_argument("--master", default="local[*]",
                        help="Spark master (default local[*]); ignored under spark-submit, which sets its own")
    parser.add_argument("--storage-option", dest="storage_options", action="append", type=key_value, default=[],
                        metavar="K=V", help="fsspec storage option (repeatable); JSON values such as "
                        "client_kwargs={...} and true/false are decoded")
    parser.add_argument("--conf", dest="spark_conf", action="append", type=key_value, default=[],
                        metavar="K=V", help="Spark configuration (repeatable)")
    return parser


def table_identifier(args: argparse.Namespace) -> str:
    """``--table`` on ``--branch``: Paimon's ``db.t$branch_<name>`` (the main branch, or no
    ``--branch``, leaves it as it is); a branch in both that disagrees is a usage error."""
    try:
        return source_options.with_branch(args.table, args.branch)
    except OptionError as exc:
        raise UsageError(f"--branch: {exc}") from None


def partition_spec(text: str) -> PartitionSpec:
    """``dt=2024-01-01,hour=3`` → ((dt, 2024-01-01), (hour, 3)); an argparse type."""
    return tuple(key_value(part) for part in text.split(","))


def partition_arg(parser: argparse.ArgumentParser, help_text: str) -> None:
    """Add the repeatable ``--partition K=V[,K=V]`` argument (into ``args.partitions``)."""
    parser.add_argument("--partition", dest="partitions", action="append", type=partition_spec, default=[],
                        metavar="K=V[,K=V]", help=help_text)


def storage_value(text: str) -> Any:
    """A ``--storage-option`` value, decoded as the ``lake`` data source decodes its ``storage.*``
    options (JSON objects, arrays and booleans; anything else stays text)."""
    try:
        return source_options.storage_value(text)
    except OptionError as exc:
        raise UsageError(str(exc)) from None


def typed_partition(table: Table, pairs: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """``--partition`` pairs → {key: value typed like the partition column}; SchemaError if not a key."""
    keys = list(table.partition_keys)
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k not in keys:
            raise SchemaError(f"Table {table.name}: {k!r} is not a partition key (partition keys: {keys})")
        if k in out:
            raise UsageError(f"--partition {k} is given twice")
        t = to_arrow(table.schema.field(k).type)
        try:
            out[k] = pa.scalar(v).cast(t).as_py()
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise SchemaError(f"Table {table.name}: partition value {k}={v!r} is not a {t}: {exc}") from None
    return out
