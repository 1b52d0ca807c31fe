"""Changelog production and export.

1. For ``changelog-producer`` = ``lookup`` or ``full-compaction``, run the compaction that produces
   the changelog of everything written since the last run (lookup: all level-0 files; full-compaction:
   a full compaction), distributed like the compact job. ``input`` tables already have their
   changelog: the step is skipped.
2. Optionally export the changes of a snapshot range to a downstream table (``--export-table``) or
   as Parquet files with a ``_row_kind`` column (``--export-path``).

With ``--consumer-id`` the position is stored in the source table (which also keeps expiration
from removing unread snapshots). The export is written first and the position committed after it;
to make a crash between the two harmless, the export itself records how far it got: a Parquet file
is named after its snapshot range (``changelog-<first>-<last>.parquet``) and a table export commits
with the last snapshot id as its commit identifier. A re-run resumes after the furthest of the saved
position and the recorded export, so no change is exported twice.
"""

from __future__ import annotations

import argparse
import re
import uuid
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lake_assets.catalog_names import check_name
from lake_assets.errors import OptionError, SchemaError
from lake_assets.io.file_io import FileIO
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.spark.jobs.args import base_parser, non_negative_int, positive_int
from lake_assets.spark.jobs.compact import distributed_compact
from lake_assets.spark.jobs.context import JobContext
from lake_assets.spark.jobs.errors import UsageError
from lake_assets.spark.jobs.logs import log
from lake_assets.spark.jobs.runner import main_entry, run_job
from lake_assets.spark.spill_dirs import driver_spill_dir
from lake_assets.spec.row_kind import ROW_KIND
from lake_assets.table import Table

JOB = "changelog"
PRODUCERS = ("lookup", "full-compaction", "input")
EXPORT_FILE = re.compile(r"^changelog-(\d+)-(\d+)\.parquet$")
# Without a row-kind column downstream, only upserts can be expressed.
UPSERT_KINDS = ("+I", "+U")


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser(JOB, "Produce a table's changelog by compaction, then optionally export it.")
    parser.add_argument("--no-compact", dest="compact", action="store_false",
                        help="skip the compaction step (export only)")
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--export-table", default=None, metavar="DB.TABLE",
                        help="append the changes to this table (same columns, plus optionally the column "
                        "named by its rowkind.field option or a _row_kind column to receive the kind)")
    target.add_argument("--export-path", default=None, metavar="DIR",
                        help="write the changes as Parquet files with a _row_kind column into DIR")
    parser.add_argument("--consumer-id", default=None,
                        help="keep the export position in the source table under this consumer id")
    parser.add_argument("--start-snapshot", type=positive_int, default=None,
                        help="first snapshot to export when there is no saved position (default: earliest)")
    parser.add_argument("--end-snapshot", type=non_negative_int, default=None,
                        help="last snapshot to export (default: latest)")
    return parser


# ----------------------------------------------------------------------- sinks
class ParquetSink:
    """Writes one Parquet file per run, named after the snapshot range it holds."""

    def __init__(self, url: str, storage: dict[str, Any], schema: pa.Schema) -> None:
        self.file_io, self.root = FileIO.for_url(url, **storage)
        self.schema = schema
        self._writer: pq.ParquetWriter | None = None
        self._stream: Any = None
        self._final = ""
        self._write_path = ""

    def last_exported(self) -> int | None:
        lasts = [int(m.group(2)) for n in self.file_io.list_names(self.root) if (m := EXPORT_FILE.match(n))]
        return max(lasts) if lasts else None

    def start(self, first: int, last: int) -> None:
        self._final = f"{self.root}/changelog-{first:012d}-{last:012d}.parquet"
        # Object stores publish an object on close (atomic); a local file needs write-then-rename.
        self._write_path = (self._final if self.file_io.publishes_on_close
                            else f"{self.root}/.changelog-{uuid.uuid4().hex}.parquet.tmp")

    def write(self, data: pa.Table) -> None:
        if self._writer is None:
            self.file_io.mkdirs(self.root)
            self._stream = self.file_io.open_output(self._write_path)
            self._writer = pq.ParquetWriter(self._stream, self.schema, compression="zstd")
        self._writer.write_table(data.cast(self.schema))

    def finish(self) -> dict[str, Any]:
        if self._writer is None:
            return {"file": None}
        self._writer.close()
        self._stream.close()
        if self._write_path != self._final:
            self.file_io.rename(self._write_path, self._final)
        return {"file": self.file_io.uri(self._final)}

    def abort(self) -> None:
        if self._writer is not None:
            try:
                self._writer.close()
                self._stream.close()
            finally:
                self.file_io.delete(self._write_path)


class TableSink:
    """Appends the changes to a lake table in one commit whose identifier is the last snapshot id."""

    def __init__(self, source: Table, target: Table, consumer_id: str | None, spill_dir: str | None = None) -> None:
        self.target = target
        kind = target.schema.core_options.rowkind_field
        if kind is None and target.schema.has_field(ROW_KIND):
            kind = ROW_KIND
        self.kind_column = kind
        src = set(source.schema.field_names) - {kind}
        dst = set(target.schema.field_names) - {kind}
        if src != dst:
            raise SchemaError(
                f"Cannot export the changelog of {source.name} to {target.name}: the columns differ "
                f"(missing in the target: {sorted(src - dst)}, not in the source: {sorted(dst - src)}); "
                f"the target needs the source's columns plus optionally a string column for the row kind"
            )
        # A stable user makes the target's commits say how far the export got (see module doc).
        self.user = (f"changelog-export-{source.name}-{consumer_id}" if consumer_id
                     else f"changelog-export-{uuid.uuid4()}")
        self.idempotent = consumer_id is not None
        self.committer = target.new_committer(self.user)
        self.writer = target.new_writer(self.user, spill_dir=spill_dir)  # runs on the driver
        self.dropped = 0
        self._last = 0

    def last_exported(self) -> int | None:
        return self.committer.last_committed_identifier() if self.idempotent else None

    def start(self, first: int, last: int) -> None:
        self._last = last

    def write(self, data: pa.Table) -> None:
        if self.kind_column is None:
            keep = pc.is_in(data.column(ROW_KIND), value_set=pa.array(UPSERT_KINDS))
            before = data.num_rows
            data = data.filter(keep)
            self.dropped += before - data.num_rows
            data = data.drop_columns([ROW_KIND])
        elif self.kind_column != ROW_KIND:
            kinds = data.column(ROW_KIND)
            data = data.drop_columns([c for c in (ROW_KIND, self.kind_column) if c in data.column_names])
            data = data.append_column(self.kind_column, kinds)
        if data.num_rows:
            self.writer.write_arrow(data.select(self.target.schema.field_names))

    def finish(self) -> dict[str, Any]:
        messages: list[CommitMessage] = []
        try:
            messages = self.writer.prepare_commit()
            ids = (self.committer.commit(messages, self._last, check_committed=self.idempotent)
                   if messages else [])
        except BaseException:
            if not self.committer.may_have_landed:  # never delete files a landed snapshot needs
                self.writer.abort(messages)
            raise
        finally:
            self.writer.close()
        return {"target_snapshot_id": ids[-1] if ids else None, "dropped_rows": self.dropped}

    def abort(self) -> None:
        self.writer.abort()
        self.writer.close()


# ------------------------------------------------------------------------ job
def export_changes(ctx: JobContext, sink: ParquetSink | TableSink) -> dict[str, Any]:
    """Export the changes of the snapshots after the position; commit the position after the export."""
    args = ctx.args
    table = ctx.table
    sm = table.snapshot_manager
    latest = sm.latest_id()
    saved = table.store.consumer_manager().get(args.consumer_id) if args.consumer_id else None
    # a saved position wins over --start-snapshot, which only places a new consumer
    position = saved.next_snapshot if saved is not None else (args.start_snapshot or sm.earliest_id() or 1)
    done = sink.last_exported() if args.consumer_id else None
    if done is not None and done + 1 > position:
        log.info("export already holds snapshots up to %d (position %d was not saved): resuming after it",
                 done, position)
        position = done + 1
    end = latest if args.end_snapshot is None or latest is None else min(args.end_snapshot, latest)
    out: dict[str, Any] = {"from_snapshot": position, "to_snapshot": None, "rows": 0, "rows_by_kind": {}}
    if end is None or position > end:
        if args.consumer_id and (saved is None or saved.next_snapshot != position):
            table.store.consumer_manager().record(args.consumer_id, position)
        out["consumer_position"] = position if args.consumer_id else None
        return out
    ctx.describe(f"export changes of snapshots {position}..{end}")
    enumerator = table.stream(position=position, consumer_id=args.consumer_id)
    reader = table.change_reader()
    kinds: Counter[str] = Counter()
    sink.start(position, end)
    try:
        batches = enumerator.poll(end - position + 1)
        for batch in batches:
            for split in batch.splits:
                data = reader.read(split)
                if data.num_rows == 0:
                    continue
                for k, n in zip(*pc.value_counts(data.column(ROW_KIND)).flatten(), strict=True):
                    kinds[k.as_py()] += n.as_py()
                sink.write(data)
        out.update(sink.finish())
    except BaseException:
        sink.abort()
        raise
    enumerator.commit(end + 1)
    out.update({"to_snapshot": end, "rows": sum(kinds.values()), "rows_by_kind": dict(kinds),
                "consumer_position": end + 1 if args.consumer_id else None})
    return out


def _producer(table: Table) -> str:
    producer = table.schema.core_options.changelog_producer
    if producer not in PRODUCERS:
        raise OptionError(
            f"Table {table.name} has changelog-producer {producer!r}: there is no changelog to produce "
            f"or export (set it to one of {list(PRODUCERS)})"
        )
    return producer


def check_targets(args: argparse.Namespace) -> None:
    """Refuse a consumer without an export: its position would say changes were read that nobody read."""
    if args.consumer_id is not None and not (args.export_table or args.export_path):
        raise UsageError("--consumer-id needs --export-table or --export-path")


def body(ctx: JobContext) -> dict[str, Any]:
    args = ctx.args
    table = ctx.table
    producer = _producer(table)
    check_targets(args)
    sink: ParquetSink | TableSink | None = None
    if args.export_table:
        target = ctx.ref.with_identifier(args.export_table).open()
        if target.paths.root == table.paths.root:
            raise UsageError("--export-table must not be the source table")
        sink = TableSink(table, target, args.consumer_id, driver_spill_dir(ctx.spark))
    elif args.export_path:
        sink = ParquetSink(args.export_path, ctx.ref.storage, table.change_reader().schema)
    if args.consumer_id is not None:
        check_name(args.consumer_id, "consumer id")
    ctx.start_run()
    out: dict[str, Any] = {"changelog_producer": producer, "compaction": "skipped"}
    if args.compact and producer in ("lookup", "full-compaction"):
        full = producer == "full-compaction"
        out.update(distributed_compact(ctx, full=full))
        out["compaction"] = "full" if full else "lookup"
    if sink is not None:
        export = export_changes(ctx, sink)
        export["target"] = args.export_table or args.export_path
        out["consumer_id"] = args.consumer_id
        out["consumer_position"] = export.pop("consumer_position", None)
        out["export"] = export
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run the changelog job; returns the exit code (see `lake_assets.spark.jobs`)."""
    return run_job(JOB, argv, build_parser(), body)


if __name__ == "__main__":
    main_entry(main)


__all__ = ["ParquetSink", "TableSink", "export_changes", "main"]
