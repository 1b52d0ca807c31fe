"""Drive pypaimon-rust (Rust Paimon with Python bindings) from ``.venv-paimon`` for interop tests.

Runs under ``.venv-paimon/bin/python`` only: it imports ``pypaimon_rust``, never ``lake_assets``.

Subcommands::

    sql   --warehouse W --statement SQL [--statement SQL ...]   (DDL/DML through its SQLContext;
          the catalog is registered as ``paimon``)
    read  --warehouse W --table db.t        (a batch read of every split, printed as JSON rows)
    query --warehouse W --statement SQL     (a SELECT through its SQLContext, printed as JSON rows)
    write --warehouse W --table db.t --data batch.arrow
          (one commit through the table's batch write builder)
    write-fixed-bucket --warehouse W --table db.t --data batch.arrow
          (one commit through the postpone table's real-bucket writer, into bucket-<n> directories
          as ``postpone.default-bucket-num`` says, not into bucket-postpone)

Errors go to stderr with exit code 1 (2 for bad arguments).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from typing import Any

import pyarrow as pa


def context(warehouse: str) -> Any:
    """A SQL context with the filesystem catalog ``paimon`` over ``warehouse``."""
    from pypaimon_rust.datafusion import SQLContext

    ctx = SQLContext()
    ctx.register_catalog("paimon", {"warehouse": warehouse})
    return ctx


def cmd_sql(args: argparse.Namespace) -> None:
    """Run each statement in order (a failing one stops the run)."""
    ctx = context(args.warehouse)
    for statement in args.statement:
        ctx.sql(statement)


def cmd_read(args: argparse.Namespace) -> None:
    """Read every split of the table; print ``{"columns": [...], "rows": [[...], ...]}`` as JSON
    (an empty read has no Arrow schema to ship, so rows travel as JSON; values must be JSON types)."""
    from pypaimon_rust.datafusion import PaimonCatalog

    db, _, name = args.table.partition(".")
    table = PaimonCatalog({"warehouse": args.warehouse}).get_table((db, name))
    builder = table.new_read_builder()
    batches = builder.new_read().read(builder.new_scan().plan().splits())
    columns = [f.name() for f in table.schema().fields()]
    rows = [list(r.values()) for b in batches for r in pa.Table.from_batches([b]).select(columns).to_pylist()]
    print(json.dumps({"columns": columns, "rows": rows}, default=_json_value))


def _json_value(value: Any) -> Any:
    """A value JSON has no type for, as tests/interop/paimon.py's ``jsonable`` writes it."""
    if isinstance(value, bytes):
        return "hex:" + value.hex()
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)  # Decimal


def cmd_query(args: argparse.Namespace) -> None:
    """Run one SELECT; print its rows as ``cmd_read`` does (columns of the first batch)."""
    batches = context(args.warehouse).sql(args.statement[0])
    table = pa.Table.from_batches(batches) if batches else pa.table({})
    print(json.dumps({"columns": table.column_names, "rows": [list(r.values()) for r in table.to_pylist()]},
                     default=_json_value))


def _write_with(args: argparse.Namespace, builder_name: str) -> None:
    """Write and commit an Arrow IPC stream file with the table's ``builder_name`` write builder."""
    from pypaimon_rust.datafusion import PaimonCatalog

    with pa.ipc.open_stream(args.data) as reader:
        data = reader.read_all()
    db, _, name = args.table.partition(".")
    table = PaimonCatalog({"warehouse": args.warehouse}).get_table((db, name))
    builder = getattr(table, builder_name)()
    writer = builder.new_write()
    try:
        for batch in data.to_batches():
            writer.write_arrow(batch)
        builder.new_commit().commit(writer.prepare_commit())
    finally:
        writer.close()


def cmd_write_fixed_bucket(args: argparse.Namespace) -> None:
    """Write and commit an Arrow IPC stream file with the postpone fixed-bucket write builder."""
    _write_with(args, "new_postpone_fixed_bucket_write_builder")


def cmd_write(args: argparse.Namespace) -> None:
    """Write and commit an Arrow IPC stream file with the table's batch write builder (its own
    bucket routing: the table's bucket function for a fixed-bucket table)."""
    _write_with(args, "new_batch_write_builder")


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    parser = argparse.ArgumentParser(description="pypaimon-rust driver for lake_assets interop tests")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("sql")
    p.add_argument("--warehouse", required=True)
    p.add_argument("--statement", action="append", required=True)
    p.set_defaults(func=cmd_sql)
    p = sub.add_parser("read")
    p.add_argument("--warehouse", required=True)
    p.add_argument("--table", required=True, help="db.table")
    p.set_defaults(func=cmd_read)
    p = sub.add_parser("query")
    p.add_argument("--warehouse", required=True)
    p.add_argument("--statement", action="append", required=True)
    p.set_defaults(func=cmd_query)
    p = sub.add_parser("write")
    p.add_argument("--warehouse", required=True)
    p.add_argument("--table", required=True, help="db.table")
    p.add_argument("--data", required=True)
    p.set_defaults(func=cmd_write)
    p = sub.add_parser("write-fixed-bucket")
    p.add_argument("--warehouse", required=True)
    p.add_argument("--table", required=True, help="db.table")
    p.add_argument("--data", required=True)
    p.set_defaults(func=cmd_write_fixed_bucket)
    args = parser.parse_args(argv)
    try:
        args.func(args)
    except SystemExit:
        raise
    except BaseException as exc:
        traceback.print_exc(file=sys.stderr)
        print(f"paimon_rust_driver {args.command} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    # Leave without interpreter teardown: the peer's native thread pools can abort the process
    # there ("terminate called without an active exception") after the work is done and flushed.
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code or 0)
