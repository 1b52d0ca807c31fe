"""Drive pypaimon from its own virtualenv (``.venv-paimon``) on behalf of the interop tests.

Runs under ``.venv-paimon/bin/python`` only: it imports pypaimon and that venv's pyarrow, never
``lake_assets``. Tables travel as Arrow IPC *stream* files, which pyarrow 19 and 26 both read and write.

Subcommands::

    read       --warehouse W --table db.t [--snapshot-id N] [--tag NAME] [--columns a,b]
               [--option k=v ...] --out rows.arrow
    create     --warehouse W --table db.t --schema schema.arrow [--primary-keys a,b]
               [--partition-keys c] [--option k=v ...]
    write      --warehouse W --table db.t --data batch.arrow [--overwrite]
               [--overwrite-partition k=v ...] [--option k=v ...]
    create-tag --warehouse W --table db.t --name NAME [--snapshot-id N]
    create-branch --warehouse W --table db.t --name NAME [--tag TAG]   (write to it as db.t$branch_NAME)
    snapshots  --warehouse W --table db.t          (prints JSON: {"snapshots": [...], "tags": [...]})
    stream-follow --warehouse W --table db.t --from N --out rows.arrow
               (the follow-up phase of pypaimon's streaming scan over snapshots N..latest: each
               snapshot its follow-up scanner reads, rows with _row_kind and a _snapshot column)

Errors go to stderr with exit code 1 (2 for bad arguments).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import traceback
from typing import Any

import pyarrow as pa

ARROW_FILE_MAGIC = b"ARROW1"
DEFAULT_PARTITION = "__DEFAULT_PARTITION__"


def read_ipc(path: str) -> pa.Table:
    """Read an Arrow IPC stream file (or an IPC random-access file, detected by its magic)."""
    with open(path, "rb") as fh:
        magic = fh.read(len(ARROW_FILE_MAGIC))
    if magic == ARROW_FILE_MAGIC:
        with pa.ipc.open_file(path) as reader:
            return reader.read_all()
    with pa.ipc.open_stream(path) as reader:
        return reader.read_all()


def write_ipc(table: pa.Table, path: str) -> None:
    """Write ``table`` as an Arrow IPC stream file."""
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)


def parse_kv(items: list[str] | None, what: str) -> dict[str, str]:
    """Turn ``["k=v", ...]`` into a dict (the value may contain ``=``)."""
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"error: {what} must look like key=value, got {item!r}")
        out[key] = value
    return out


def split_list(text: str | None) -> list[str]:
    """Split a comma separated list, dropping blanks."""
    return [p.strip() for p in (text or "").split(",") if p.strip()]


def catalog(warehouse: str) -> Any:
    """A filesystem catalog over ``warehouse``."""
    from pypaimon import CatalogFactory

    return CatalogFactory.create({"warehouse": warehouse})


def table_dir(warehouse: str, identifier: str) -> str:
    """Filesystem path of ``db.t`` in a filesystem-catalog warehouse."""
    db, _, name = identifier.partition(".")
    if not db or not name:
        raise SystemExit(f"error: table must be 'db.table', got {identifier!r}")
    return os.path.join(warehouse, f"{db}.db", name)


def cmd_read(args: argparse.Namespace) -> None:
    """Read all splits of the table (optionally time travelling) into an IPC file."""
    options = parse_kv(args.option, "--option")
    if args.snapshot_id is not None:
        options["scan.snapshot-id"] = str(args.snapshot_id)
    if args.tag is not None:
        options["scan.tag-name"] = args.tag
    table = catalog(args.warehouse).get_table(args.table)
    if options:
        table = table.copy(options)
    builder = table.new_read_builder()
    columns = split_list(args.columns)
    if columns:
        builder = builder.with_projection(columns)
    splits = builder.new_scan().plan().splits()
    result = builder.new_read().to_arrow(splits)
    if result is None:
        from pypaimon.schema.data_types import PyarrowFieldParser

        result = PyarrowFieldParser.from_paimon_schema(builder.read_type()).empty_table()
    write_ipc(result, args.out)


def cmd_create(args: argparse.Namespace) -> None:
    """Create the database (if needed) and the table from an IPC file's schema."""
    from pypaimon import Schema

    schema = read_ipc(args.schema).schema
    db = args.table.partition(".")[0]
    cat = catalog(args.warehouse)
    cat.create_database(db, True)
    paimon_schema = Schema.from_pyarrow_schema(
        schema,
        partition_keys=split_list(args.partition_keys) or None,
        primary_keys=split_list(args.primary_keys) or None,
        options=parse_kv(args.option, "--option"),
    )
    cat.create_table(args.table, paimon_schema, False)


def _partition_value(field: Any, text: str) -> Any:
    """Convert a partition value given as text to the Python value of the field's type."""
    from pypaimon.schema.data_types import PyarrowFieldParser

    if text == DEFAULT_PARTITION:
        return None
    arrow_type = PyarrowFieldParser.from_paimon_type(field.type)
    if pa.types.is_string(arrow_type):
        return text
    if pa.types.is_boolean(arrow_type):
        return text.strip().lower() == "true"
    return pa.array([text], pa.string()).cast(arrow_type).to_pylist()[0]


def cmd_write(args: argparse.Namespace) -> None:
    """One batch write and commit (append/upsert, or overwrite)."""
    data = read_ipc(args.data)
    table = catalog(args.warehouse).get_table(args.table)
    options = parse_kv(args.option, "--option")
    if options:
        table = table.copy(options)
    # --fixed-bucket: a postpone table's batch write into real buckets (PostponeFixedBucketWriteBuilder)
    builder = table.new_postpone_fixed_bucket_write_builder() if args.fixed_bucket else table.new_batch_write_builder()
    spec = parse_kv(args.overwrite_partition, "--overwrite-partition")
    if spec:
        fields = {f.name: f for f in table.fields}
        unknown = sorted(set(spec) - set(table.partition_keys))
        if unknown:
            raise SystemExit(f"error: {unknown} are not partition keys of {args.table}")
        builder = builder.overwrite({k: _partition_value(fields[k], v) for k, v in spec.items()})
    elif args.overwrite:
        builder = builder.overwrite()
    writer = builder.new_write()
    commit = builder.new_commit()
    try:
        if data.num_rows:
            writer.write_arrow(data)
        commit.commit(writer.prepare_commit())
    finally:
        writer.close()
        commit.close()


def cmd_create_tag(args: argparse.Namespace) -> None:
    """Tag a snapshot (the latest by default)."""
    table = catalog(args.warehouse).get_table(args.table)
    table.create_tag(args.name, snapshot_id=args.snapshot_id)


def cmd_create_branch(args: argparse.Namespace) -> None:
    """Create a branch (from a tag, or empty); write to it with table ``db.t$branch_<name>``."""
    catalog(args.warehouse).create_branch(args.table, args.name, args.tag)


def cmd_snapshots(args: argparse.Namespace) -> None:
    """Print the snapshot ids and tag names found on disk, as JSON."""
    path = table_dir(args.warehouse, args.table)

    def listing(sub: str, pattern: str) -> list[str]:
        d = os.path.join(path, sub)
        names = os.listdir(d) if os.path.isdir(d) else []
        return [m.group(1) for n in names if (m := re.fullmatch(pattern, n))]

    snapshots = sorted(int(s) for s in listing("snapshot", r"snapshot-(\d+)"))
    tags = sorted(listing("tag", r"tag-(.+)"))
    print(json.dumps({"snapshots": snapshots, "tags": tags}))


def cmd_stream_follow(args: argparse.Namespace) -> None:
    """What pypaimon's streaming scan emits for snapshots ``--from`` to the latest, one follow-up
    plan per snapshot its scanner reads (the scan's own per-snapshot planning, without its
    polling loop, which never returns once it is caught up)."""
    table = catalog(args.warehouse).get_table(args.table)
    builder = table.new_stream_read_builder().with_include_row_kind(True)
    scan = builder.new_streaming_scan()
    read = builder.new_read()
    manager = table.snapshot_manager()
    latest = manager.get_latest_snapshot()
    parts = []
    for sid in range(args.start, (latest.id if latest else 0) + 1):
        snapshot = manager.get_snapshot_by_id(sid)
        if snapshot is None or not scan.follow_up_scanner.should_scan(snapshot):
            continue
        splits = scan._create_follow_up_plan(snapshot).splits()
        rows = read.to_arrow(splits) if splits else None
        if rows is not None and rows.num_rows:
            parts.append(rows.append_column("_snapshot", pa.array([sid] * rows.num_rows, pa.int64())))
    if parts:
        result = pa.concat_tables(parts)
    else:
        from pypaimon.schema.data_types import PyarrowFieldParser

        empty = PyarrowFieldParser.from_paimon_schema(builder.read_type()).empty_table()
        result = empty.add_column(0, "_row_kind", pa.array([], pa.string())).append_column(
            "_snapshot", pa.array([], pa.int64()))
    write_ipc(result, args.out)


def build_parser() -> argparse.ArgumentParser:
    """The command line."""
    parser = argparse.ArgumentParser(description="pypaimon driver for lake_assets interop tests")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(name: str, func: Any) -> argparse.ArgumentParser:
        p = sub.add_parser(name)
        p.add_argument("--warehouse", required=True)
        p.add_argument("--table", required=True, help="db.table")
        p.set_defaults(func=func)
        return p

    p = common("read", cmd_read)
    p.add_argument("--snapshot-id", type=int)
    p.add_argument("--tag")
    p.add_argument("--columns", help="comma separated projection")
    p.add_argument("--option", action="extend", nargs="+", help="dynamic table options k=v")
    p.add_argument("--out", required=True)

    p = common("create", cmd_create)
    p.add_argument("--schema", required=True, help="IPC file whose schema is the table schema")
    p.add_argument("--primary-keys")
    p.add_argument("--partition-keys")
    p.add_argument("--option", action="extend", nargs="+", help="table options k=v")

    p = common("write", cmd_write)
    p.add_argument("--data", required=True)
    p.add_argument("--overwrite", action="store_true")
    p.add_argument("--fixed-bucket", action="store_true")
    p.add_argument("--overwrite-partition", action="extend", nargs="+", help="static partition k=v")
    p.add_argument("--option", action="extend", nargs="+", help="dynamic table options k=v")

    p = common("create-tag", cmd_create_tag)
    p.add_argument("--name", required=True)
    p.add_argument("--snapshot-id", type=int)

    p = common("create-branch", cmd_create_branch)
    p.add_argument("--name", required=True)
    p.add_argument("--tag")

    common("snapshots", cmd_snapshots)

    p = common("stream-follow", cmd_stream_follow)
    p.add_argument("--from", dest="start", type=int, required=True)
    p.add_argument("--out", required=True)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    args = build_parser().parse_args(argv)
    if args.command != "snapshots":
        table_dir(args.warehouse, args.table)  # validates the identifier
    try:
        args.func(args)
    except SystemExit:
        raise
    except BaseException as exc:
        traceback.print_exc(file=sys.stderr)
        print(f"paimon_driver {args.command} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    # Leave without interpreter teardown: the peer's native thread pools can abort the process
    # there ("terminate called without an active exception") after the work is done and flushed.
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code or 0)
