"""`TableReads`: the batch read verbs of a `Table`: which snapshot a read sees (`resolve_snapshot`),
its splits (`plan`) and its rows (`to_arrow`, `to_batches`), each checking its arguments and the
table before delegating to `lake_assets.ops` (the plan, `ops.read.SplitReader`, the read-ahead and
streaming reads, a postpone table's merge-on-read). `Table` inherits them.

A read resolves its snapshot and the schema it reads with once (`_read_point`), and the verbs'
modules are imported inside the methods, as `Table`'s are (issue 17 §3).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lake_assets import arguments as args
from lake_assets.errors import InvalidArgumentError, SchemaError
from lake_assets.ops.data_evolution_read import system_columns
from lake_assets.ops.row_range_prune import filter_schema
from lake_assets.spec.schema import TableSchema
from lake_assets.spec.snapshot import Snapshot
from lake_assets.table_store_view import StoreView
from lake_assets.table_support import Op

if TYPE_CHECKING:
    from lake_assets.ops.scan import Split


class TableReads(StoreView):
    """Batch reads of a table: the snapshot a read sees, its plan and its rows."""

    def _read_schema(self, snap: Snapshot | None, *, travel: bool) -> TableSchema:
        """Time travel reads with the fields of the schema the snapshot was committed under and
        the current options, as Paimon does (`FileStore.travel_schema`); a read of the latest state
        uses the handle's schema, moved on to the snapshot's when another handle evolved the schema
        since (`FileStore.schema_at`)."""
        if not travel:
            return self.store.schema_at(snap)
        return self.store.travel_schema(snap)

    def resolve_snapshot(
        self,
        snapshot_id: int | None = None,
        *,
        tag: str | None = None,
        timestamp: datetime | int | str | None = None,
    ) -> Snapshot | None:
        """The snapshot a read sees: by id, by tag, as of a time (epoch ms, datetime or ISO text), or latest."""
        from lake_assets.ops.plan import resolve_snapshot, to_epoch_ms

        args.integer("snapshot_id", snapshot_id)
        args.text("tag", tag, empty=True)
        given = [x is not None for x in (snapshot_id, tag, timestamp)]
        if sum(given) > 1:
            raise InvalidArgumentError("Pass at most one of snapshot_id, tag and timestamp")
        ms = None if timestamp is None else to_epoch_ms(timestamp)
        return resolve_snapshot(self.store, snapshot_id, tag=tag, timestamp_ms=ms, timestamp_label=timestamp)

    def plan(
        self,
        *,
        snapshot_id: int | None = None,
        filter: Any = None,
        snapshot: Snapshot | None = None,
        op: Op = Op.READ,
    ) -> list[Split]:
        """The splits (one per partition and bucket) a read of the snapshot consists of.

        ``op`` is the operation the plan is for (a compaction plans with `Op.COMPACT`): the table and
        the files planned are checked for it (`lake_assets.table_support`). A postpone table's plan
        holds its real buckets only; with ``postpone.merge-on-read`` the reads merge the waiting rows
        in (`lake_assets.ops.postpone_merge_read.plan_merge_read` is their plan). The plan is of
        this branch's own files: a table carrying ``scan.fallback-branch`` reads the fallback's
        partitions besides (`lake_assets.ops.fallback_read`)."""
        from lake_assets.ops.plan import plan_splits
        from lake_assets.predicate import Predicate

        self.store.require(op)
        snap = snapshot if snapshot is not None else self.resolve_snapshot(snapshot_id)
        if snap is None:
            return []
        # the filter names columns as the read's schema does: a time travel's is its snapshot's,
        # else the handle's, moved on when the snapshot was committed under a newer one
        schema = self._read_schema(snap, travel=snapshot is None and snapshot_id is not None)
        pred = Predicate.of(filter)
        if pred is not None:
            pred = pred.bind(filter_schema(schema), self.name)
        return plan_splits(self.store, snap, pred, op, schema=schema)

    def to_batches(
        self,
        *,
        snapshot_id: int | None = None,
        tag: str | None = None,
        timestamp: datetime | int | str | None = None,
        columns: Sequence[str] | None = None,
        filter: Any = None,
        batch_size: int | None = None,
        read_ahead: int | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """Stream the table's rows as record batches of at most ``batch_size`` rows.

        Memory is set by ``batch_size`` and ``read_ahead`` (batches each reading thread may hold
        ready), not by the table: a bucket's sorted runs are merged batch by batch (see
        `lake_assets.ops.streaming_read`). Unset, they are the table's options ``read.batch-size``
        and ``read.read-ahead`` (defaults 65536 and 2), taken once the snapshot is resolved from the
        table's current schema - the handle's, moved on to the latest snapshot's when another handle
        evolved it (`FileStore.schema_at`) - as Paimon's reads take options: a time-travel read
        reads the old snapshot's columns with the current options (Java's time travel copies the
        snapshot's schema with the table's options), not the options the old schema had.
        Arguments are checked at the call, not at the first batch."""
        args.names("columns", columns)
        args.integer("batch_size", batch_size, minimum=1)
        args.integer("read_ahead", read_ahead, minimum=1)
        return self._batches(snapshot_id=snapshot_id, tag=tag, timestamp=timestamp, columns=columns, filter=filter,
                             stream=(batch_size, read_ahead))

    def _batches(self, *, snapshot_id: int | None, tag: str | None, timestamp: datetime | int | str | None,
                 columns: Sequence[str] | None, filter: Any,
                 stream: tuple[int | None, int | None] = (None, None),
                 ) -> Iterator[pa.RecordBatch]:
        from lake_assets.ops.streaming_read import stream_bounds

        # Resolved at the first batch (a generator), once: the schema and the files come from it.
        snap, schema = self._read_point(snapshot_id, tag=tag, timestamp=timestamp)
        # after `_read_point`: a read of the latest state has moved the store to its schema
        bounds = stream_bounds(self.store.schema.core_options, *stream)
        for t in self._tables(snap, schema, columns=columns, filter=filter, stream=bounds,
                              travel=(snapshot_id, tag, timestamp)):
            yield from t.to_batches(max_chunksize=bounds[0])

    def _read_point(
        self, snapshot_id: int | None, *, tag: str | None, timestamp: datetime | int | str | None
    ) -> tuple[Snapshot | None, TableSchema]:
        """The snapshot a read sees and the schema it reads with, resolved once: a read that looked
        the snapshot up twice could pair one snapshot's schema with another's files."""
        self.store.require(Op.READ)
        snap = self.resolve_snapshot(snapshot_id, tag=tag, timestamp=timestamp)
        return snap, self._read_schema(snap, travel=(snapshot_id, tag, timestamp) != (None, None, None))

    def _tables(
        self,
        snap: Snapshot | None,
        schema: TableSchema,
        *,
        columns: Sequence[str] | None,
        filter: Any,
        stream: tuple[int, int] | None = None,
        travel: tuple[int | None, str | None, datetime | int | str | None] = (None, None, None),
    ) -> Iterator[pa.Table]:
        """The rows of ``snap`` read with ``schema`` (from `_read_point`), table by table: whole merge
        sections read splits ahead, or with ``stream`` = (batch rows, read-ahead) bounded batches
        (`ops.streaming_read`). ``travel`` is how the read chose ``snap`` (snapshot id, tag,
        timestamp): a table carrying ``scan.fallback-branch`` reads the partitions it lacks from
        that branch's snapshot of the same time (`lake_assets.ops.fallback_read`)."""
        from lake_assets.ops import postpone_merge_read
        from lake_assets.ops.fallback_read import fallback_branch
        from lake_assets.ops.read import SplitReader
        from lake_assets.ops.read_ahead import read_splits_ahead
        from lake_assets.ops.streaming_read import stream_bounds, stream_splits
        from lake_assets.predicate import Predicate

        if columns is not None:
            unknown = [c for c in columns if not schema.has_field(c) and c not in system_columns(schema)]
            if unknown:
                raise SchemaError(f"Table {self.name} has no columns {unknown}")
        if fallback_branch(schema) is not None:
            yield from self._fallback_tables(snap, schema, columns=columns, filter=filter, stream=stream,
                                             travel=travel)
            return
        if snap is None:
            return
        pred = Predicate.of(filter)
        if pred is not None:
            pred = pred.bind(filter_schema(schema), self.name)
        reader = SplitReader(self.store, schema, columns, pred, fill_defaults=True)
        reader.snapshot_id = snap.id  # a file removed by expiry meanwhile: a race, not corruption
        # postpone.merge-on-read: partitions with postponed rows are merged unit by unit
        splits, units = postpone_merge_read.plan_read(self.store, snap, pred, schema)
        if stream is not None:
            yield from stream_splits(reader, splits, batch_rows=stream[0], read_ahead=stream[1])
        else:
            yield from read_splits_ahead(reader, splits)
        batch_rows = stream[0] if stream is not None else stream_bounds(self.store.schema.core_options)[0]
        for unit in units:
            yield from postpone_merge_read.read_unit(reader, unit, batch_rows)

    def _fallback_tables(
        self,
        snap: Snapshot | None,
        schema: TableSchema,
        *,
        columns: Sequence[str] | None,
        filter: Any,
        stream: tuple[int, int] | None,
        travel: tuple[int | None, str | None, datetime | int | str | None],
    ) -> Iterator[pa.Table]:
        """`_tables` of a table carrying ``scan.fallback-branch``: its own splits, then the fallback
        branch's of the partitions it lacks, each read by its own branch's reader (both planned,
        and the fallback checked, before the first row)."""
        from lake_assets.ops import postpone_merge_read
        from lake_assets.ops.fallback_read import Travel, bound, fallback_splits, open_fallback
        from lake_assets.ops.plan import plan_splits, to_epoch_ms
        from lake_assets.ops.read import SplitReader
        from lake_assets.ops.read_ahead import read_splits_ahead
        from lake_assets.ops.streaming_read import stream_splits

        if postpone_merge_read.configured(schema):
            from lake_assets.errors import UnsupportedFeatureError

            raise UnsupportedFeatureError(f"Cannot read {self.name}: lake_assets does not combine "
                                          "postpone.merge-on-read with scan.fallback-branch")
        snapshot_id, tag, timestamp = travel
        ms = None if timestamp is None else to_epoch_ms(timestamp)
        source = open_fallback(self.store, schema, snap, Travel(snapshot_id, tag, ms))
        pred = bound(filter, schema, self.name)
        own = [] if snap is None else plan_splits(self.store, snap, pred, schema=schema)
        readers = [(SplitReader(self.store, schema, columns, pred, fill_defaults=True), snap, own)]
        if source is not None:
            extra = fallback_splits(self.store, snap, schema, source, filter, own if pred is None else None)
            fb_reader = SplitReader(source.store, source.schema, columns, bound(filter, source.schema, self.name),
                                    fill_defaults=True)
            readers.append((fb_reader, source.snapshot, extra))
        target = self._output_schema(schema, columns)
        for reader, at, splits in readers:
            if not splits or at is None:
                continue
            reader.snapshot_id = at.id  # a file removed by expiry meanwhile: a race, not corruption
            tables = (stream_splits(reader, splits, batch_rows=stream[0], read_ahead=stream[1]) if stream is not None
                      else read_splits_ahead(reader, splits))
            for t in tables:  # the fallback's columns may differ in nullability only (checked)
                yield t if t.schema == target else t.cast(target)

    @staticmethod
    def _output_schema(table_schema: TableSchema, columns: Sequence[str] | None) -> pa.Schema:
        """The Arrow schema a read of ``columns`` (all when None) of ``table_schema`` returns."""
        schema = table_schema.arrow_schema
        if columns is not None:
            extra = system_columns(table_schema)
            schema = pa.schema([extra[c] if c in extra else schema.field(c) for c in columns
                                if table_schema.has_field(c) or c in extra])
        return schema

    def to_arrow(
        self,
        *,
        snapshot_id: int | None = None,
        tag: str | None = None,
        timestamp: datetime | int | str | None = None,
        columns: Sequence[str] | None = None,
        filter: Any = None,
    ) -> pa.Table:
        """Read the table into one Arrow table: latest, or as of a snapshot id, tag or point in time."""
        args.names("columns", columns)
        snap, table_schema = self._read_point(snapshot_id, tag=tag, timestamp=timestamp)
        schema = self._output_schema(table_schema, columns)
        tables = list(self._tables(snap, table_schema, columns=columns, filter=filter,
                                   travel=(snapshot_id, tag, timestamp)))
        if not tables:
            return schema.empty_table()
        return pa.concat_tables(tables)
