"""`TableChanges`: the change verbs of a `Table`: incremental reads between two snapshots or tags
(`read_changes`) and streaming reads (`stream` plans change splits, `change_reader` reads them),
each checking its arguments and the table before delegating to `lake_assets.ops.stream`. `Table`
inherits them.

Each verb imports its operation's modules in its first lines, as `Table`'s do (issue 17 §3); the
imports under ``TYPE_CHECKING`` are the return types'.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import pyarrow as pa

from lake_assets import arguments as args
from lake_assets.errors import InvalidArgumentError
from lake_assets.table_store_view import StoreView
from lake_assets.table_support import Op

if TYPE_CHECKING:
    from lake_assets.ops.stream import ChangeReader, StreamEnumerator

_STREAM_MODES = ("latest-full", "earliest-full", "latest", "from-snapshot", "from-snapshot-full", "from-timestamp")


class TableChanges(StoreView):
    """The changes of a table: incremental reads and streams of change splits."""

    def read_changes(
        self,
        start: int | str,
        end: int | str | None = None,
        *,
        source: str | None = None,
        columns: Sequence[str] | None = None,
    ) -> pa.Table:
        """Incremental read with a ``_row_kind`` column (+I, -U, +U, -D): between two tags the net
        change of each key (the tags' files diffed, as Paimon), else the changes of snapshots in
        ``(start, end]``. ``source``: "delta", "changelog", "auto" or "diff"; unset, the table's
        ``incremental-between-scan-mode`` (see `lake_assets.ops.stream.read_changes`)."""
        from lake_assets.ops.stream import read_changes

        args.snapshot_or_tag("start", start, optional=False)
        args.snapshot_or_tag("end", end)
        if source is not None:
            args.one_of("source", source, ("auto", "delta", "changelog", "diff"))
        args.names("columns", columns)
        self.store.require(Op.STREAM)
        return read_changes(self.store, start, end, source=source, columns=list(columns) if columns else None)  # type: ignore[arg-type]

    def stream(
        self,
        *,
        mode: str = "latest-full",
        snapshot_id: int | None = None,
        timestamp: datetime | int | str | None = None,
        consumer_id: str | None = None,
        position: int | None = None,
    ) -> StreamEnumerator:
        """A streaming read's enumerator (read its splits with `change_reader`). It reads with
        one schema for its whole run (`StreamEnumerator.read_schema`: the table's now, or a
        start snapshot's fields when it starts at a snapshot id or time), as Paimon's streams;
        a new enumerator - from ``consumer_id``'s position too - takes the table's schema then."""
        from lake_assets.ops.plan import to_epoch_ms
        from lake_assets.ops.stream import StreamEnumerator

        args.one_of("mode", mode, _STREAM_MODES)
        args.integer("snapshot_id", snapshot_id, minimum=0)
        # An argument the mode does not use would be ignored silently (Java refuses such options:
        # "scan.snapshot-id must be null when you set scan.mode=...").
        if snapshot_id is not None and mode not in ("from-snapshot", "from-snapshot-full"):
            raise InvalidArgumentError(f"snapshot_id needs mode 'from-snapshot' or 'from-snapshot-full', not {mode!r}")
        if timestamp is not None and mode != "from-timestamp":
            raise InvalidArgumentError(f"timestamp needs mode 'from-timestamp', not {mode!r}")
        args.text("consumer_id", consumer_id, empty=True)
        args.integer("position", position, minimum=0)
        self.store.require(Op.STREAM)
        ts = None if timestamp is None else to_epoch_ms(timestamp)
        return StreamEnumerator(self.store, mode=mode, snapshot_id=snapshot_id, timestamp_ms=ts,  # type: ignore[arg-type]
                                consumer_id=consumer_id, position=position)

    def change_reader(
        self, columns: Sequence[str] | None = None, *, stream: StreamEnumerator | None = None
    ) -> ChangeReader:
        """A reader of the change splits a `stream` plans, projecting ``columns``. With ``stream``
        it starts with that stream's schema: one from an old snapshot reads with the snapshot's
        fields (`StreamEnumerator.read_schema`), so ``columns`` and its `ChangeReader.schema`
        are those names. Splits are read with the schema they carry either way."""
        from lake_assets.ops.stream import ChangeReader, StreamEnumerator

        args.names("columns", columns)
        if stream is not None and not isinstance(stream, StreamEnumerator):
            raise InvalidArgumentError(f"stream must be a StreamEnumerator from Table.stream, got "
                                       f"{type(stream).__name__}")
        self.store.require(Op.STREAM)
        return ChangeReader(self.store, list(columns) if columns else None,
                            None if stream is None else stream.read_schema)
