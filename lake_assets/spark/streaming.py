"""Streaming reads: micro-batches of snapshots, following the core's stream enumerator.

An offset is a position: ``{"snapshot": n, "full": b}`` — snapshots from ``n`` on are unread, and
with ``full`` the complete state as of snapshot ``n - 1`` (the initial scan of ``latest-full``)
is unread too. Offsets name snapshots, so a replayed batch reads the same changes again.

Schema: the one Spark was told when the query started (`LakeDataSource.schema`: the table's, or a
time-travelling stream's start snapshot's fields), for the query's whole run, as Paimon's sources
keep the table they were built with: files the table writes under a later schema are read by field
id into it (renamed columns under their old names, added ones left out, dropped ones as nulls,
widened ones cast back). A later value the declared type cannot hold stops the query with a
`SchemaError`; a new query - from the same ``consumer-id``, or a fresh checkpoint - reads with the
schema the table has then.

Rows carry ``_row_kind`` when the read schema has it (``read.changelog=true``). Without it a
primary-key table's stream keeps only +I and +U rows (upserts); -U and -D rows are dropped, since a
row without its kind cannot say it was retracted.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxFiles,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from lake_assets.errors import OptionError
from lake_assets.ops.stream import ChangeReader, ChangeSplit, full_splits
from lake_assets.spark.reader import ChangePartition
from lake_assets.spark.schema import spark_arrow_schema, to_spark_batches
from lake_assets.spark.source_options import SCAN_MODE, SNAPSHOT_ID, TIMESTAMP, SourceOptions
from lake_assets.spec.row_kind import ROW_KIND
from lake_assets.table import Table

SCAN_MODES = ("latest-full", "latest", "from-snapshot", "from-snapshot-full", "earliest-full", "from-timestamp")
MAX_SNAPSHOTS = ("max-snapshots-per-trigger",)
MAX_FILES = ("max-files-per-trigger", "maxfilespertrigger")
MAX_ROWS = ("max-rows-per-trigger", "maxrecordspertrigger")
CONSUMER_ID = ("consumer-id",)


def offset(snapshot: int, full: bool = False) -> dict:
    return {"snapshot": snapshot, "full": full}


def _full_splits(table: Table, snapshot_id: int) -> list[ChangeSplit]:
    # the core's full phase: the same splits a core stream plans (postponed files included where
    # Paimon's streams read them, ops/stream_postpone.py), read with the query's pinned schema
    return full_splits(table.store, table.snapshot_manager.snapshot(snapshot_id), table.schema)


def plan_between(table: Table, start: dict, end: dict) -> list[ChangeSplit]:
    """The change splits between two offsets: the pending full scan, then each snapshot's changes."""
    splits: list[ChangeSplit] = []
    if start["full"] and not (end["snapshot"] == start["snapshot"] and end["full"]):
        splits += _full_splits(table, start["snapshot"] - 1)
    count = end["snapshot"] - start["snapshot"]
    if count > 0:
        enumerator = table.stream(position=start["snapshot"])
        for batch in enumerator.poll(count):
            splits += batch.splits
    return splits


class LakeStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("lake")``: follows new snapshots of a table.

    Options: ``scan.mode`` (latest-full, latest, from-snapshot, from-snapshot-full, earliest-full,
    from-timestamp with ``scan.snapshot-id`` / ``scan.timestamp-millis``), ``consumer-id`` (stores
    the committed position in the table, which protects unread snapshots from expiry, and is where
    a new checkpoint starts; recorded as Spark commits batches, and at the start unless a full phase
    is pending, which a restart must plan again), ``max-snapshots-per-trigger`` (always applied), and
    ``max-files-per-trigger`` / ``max-rows-per-trigger`` (Spark's read limits).
    """

    def __init__(self, options: SourceOptions, schema: StructType, schema_id: int | None) -> None:
        self.options = options
        self.schema = schema
        self.schema_id = schema_id
        # Unset, the mode follows the start options as Paimon's `scan.mode = default` does: a
        # timestamp starts from that time, a snapshot id from that snapshot, else latest-full.
        default = ("from-timestamp" if options.get(TIMESTAMP) else
                   "from-snapshot" if options.get(SNAPSHOT_ID) else "latest-full")
        self.mode = (options.get(SCAN_MODE) or default).strip().lower()
        if self.mode not in SCAN_MODES:
            raise OptionError(f"Option 'scan.mode' must be one of {SCAN_MODES}, got {self.mode!r}")
        self.max_snapshots = options.get_int(MAX_SNAPSHOTS)
        self.consumer_id = options.get(CONSUMER_ID)
        self._target: int | None = None  # availableNow: the last snapshot this query may read
        self._table_handle: Table | None = None
        # Spark asks for the initial offset more than once (availableNow's preparation, then the
        # first batch); the first answer stands: a later call would find the consumer position the
        # first one recorded and resume from it, losing a pending full phase
        self._initial: dict | None = None

    def __getstate__(self) -> dict:
        # pickled into tasks: an open table (file system handles) stays behind
        state = dict(self.__dict__)
        state["_table_handle"] = None
        return state

    def _table(self) -> Table:
        if self._table_handle is None:
            table = self.options.table(self.schema_id)
            # The query's schema is fixed for its run (Spark cannot change it mid-query, and a
            # Paimon source keeps the table it was built with): pinned, the handle plans every
            # batch with it, and its splits carry it to the tasks, which read later schemas' files
            # by field id into it (`StreamEnumerator.read_schema`).
            table.store.pin_schema(table.store.schema)
            self._table_handle = table
        return self._table_handle

    # ------------------------------------------------------------- offsets
    def initialOffset(self) -> dict:
        if self._initial is not None:
            return self._initial
        table = self._table()
        ts = self.options.get(TIMESTAMP)
        enumerator = table.stream(
            mode=self.mode,
            snapshot_id=self.options.get_int(SNAPSHOT_ID),
            timestamp=(int(ts) if ts and ts.strip().isdigit() else ts),
            consumer_id=self.consumer_id,
        )
        start = enumerator.position
        # The enumerator plans a pending full scan as a batch that leaves its position unchanged.
        batches = enumerator.poll(1)
        full = bool(batches) and batches[0].next_position == start
        initial = offset(start, full)
        if not full:
            # protect what this stream will read from its first batch on. Not with a pending full
            # phase: a consumer position means "resume with the changes after it", so a query that
            # died before Spark wrote its first offset would restart without its full phase
            # (Paimon's consumers move at checkpoints only; `commit` records this one then).
            self._record_consumer(initial)
        self._initial = initial
        return initial

    def getDefaultReadLimit(self) -> ReadLimit:
        files = self.options.get_int(MAX_FILES)
        if files is not None:
            return ReadMaxFiles(files)
        rows = self.options.get_int(MAX_ROWS)
        if rows is not None:
            return ReadMaxRows(rows)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._table().snapshot_manager.latest_id() or 0

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        """The end of the next batch: as many snapshots as are available and fit the limit."""
        table = self._table()
        latest = table.snapshot_manager.latest_id() or 0
        if self._target is not None:
            latest = min(latest, self._target)
        end = offset(start["snapshot"], start["full"])
        budget = _Budget(limit)
        # Units are the pending full scan and each snapshot; the first one is always admitted,
        # however large, or a big snapshot would stall the stream.
        units = 0
        if end["full"]:
            if budget.limited:
                budget.take(_full_splits(table, end["snapshot"] - 1))
            end = offset(end["snapshot"])
            units = 1
        if not budget.limited:
            # no need to plan snapshots to count them: jump (max_snapshots caps the jump)
            room = latest + 1 - end["snapshot"]
            if self.max_snapshots is not None:
                room = min(room, self.max_snapshots - units)
            return offset(end["snapshot"] + max(room, 0)) if room > 0 else end
        enumerator = table.stream(position=end["snapshot"])
        while end["snapshot"] <= latest and not budget.exhausted:
            if self.max_snapshots is not None and units >= self.max_snapshots:
                break
            batch = enumerator.poll(1)[0]
            if not budget.take(batch.splits) and units:
                break  # this snapshot would overshoot: leave it for the next batch
            end = offset(batch.next_position)
            units += 1
        return end

    def reportLatestOffset(self) -> dict | None:
        latest = self._table().snapshot_manager.latest_id()
        return None if latest is None else offset(latest + 1)

    # ---------------------------------------------------------------- reads
    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        return [ChangePartition(s) for s in plan_between(self._table(), start, end)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, ChangePartition)
        table = self._table()
        names = [n for n in self.schema.names if n != ROW_KIND]
        target = spark_arrow_schema(self.schema)
        for data in ChangeReader(table.store, names).read_batches(partition.split):  # read.batch-size
            if ROW_KIND not in self.schema.names and table.primary_keys:
                data = data.filter(pc.is_in(data.column(ROW_KIND), pa.array(["+I", "+U"])))
            yield from to_spark_batches(data, target)

    def commit(self, end: dict) -> None:
        """Spark processed everything up to ``end``: move the consumer there.

        Spark calls this when it starts the batch after ``end``'s, so the consumer trails the
        stream by a batch (it protects a little more than needed, never less).
        """
        self._record_consumer(end)

    def _record_consumer(self, position: dict) -> None:
        if self.consumer_id:
            # a pending full scan still needs its snapshot: protect it too
            nxt = position["snapshot"] - 1 if position["full"] else position["snapshot"]
            self._table().store.consumer_manager().record(self.consumer_id, max(nxt, 1))


class _Budget:
    """What is left of a read limit as splits are admitted."""

    def __init__(self, limit: ReadLimit) -> None:
        self.files = limit.max_files if isinstance(limit, ReadMaxFiles) else None
        self.rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        self.bytes = limit.max_bytes if isinstance(limit, ReadMaxBytes) else None

    @property
    def limited(self) -> bool:
        return any(x is not None for x in (self.files, self.rows, self.bytes))

    @property
    def exhausted(self) -> bool:
        return any(x is not None and x <= 0 for x in (self.files, self.rows, self.bytes))

    def take(self, splits: list[ChangeSplit]) -> bool:
        """Count ``splits`` against the limit; False if they did not fit (they are counted anyway)."""
        files = sum(len(s.files) for s in splits)
        rows = sum(s.row_count for s in splits)
        size = sum(f.file_size for s in splits for f in s.files)
        fits = True
        if self.files is not None:
            fits &= files <= self.files
            self.files -= files
        if self.rows is not None:
            fits &= rows <= self.rows
            self.rows -= rows
        if self.bytes is not None:
            fits &= size <= self.bytes
            self.bytes -= size
        return fits
