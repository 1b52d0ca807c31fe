"""Incremental and streaming reads, in the split-enumerator / split-reader shape of FLIP-27.

`StreamEnumerator` discovers new snapshots and turns each into `ChangeSplit`s per
(partition, bucket); `ChangeReader` reads a split into rows with a ``_row_kind`` column. The
position is the id of the next snapshot to read: save it (or let a consumer id store it in the
table) and resume from it after a restart with no row lost or repeated.

What a snapshot contributes depends on the table's ``changelog-producer``:

* ``none``: the data files an APPEND snapshot added, as written (each file is merged per key, so a
  key changed twice in one commit appears once). COMPACT snapshots carry no new data and are
  skipped; OVERWRITE snapshots too, unless ``streaming-read-overwrite`` (primary-key tables) or,
  in a stream of an append table, ``streaming-read-append-overwrite`` (Paimon 1.2+) is true.
* ``input``, ``lookup``, ``full-compaction``: the changelog files in the snapshot's changelog
  manifest list, whatever the commit kind.

The full phase (the starting scan of ``latest-full`` / ``from-snapshot-full`` / ``earliest-full``)
emits the merged state with the row kinds Paimon Java's reader gives it (`lake_assets.ops.full_phase_kinds`):
the merged record's kind (a key last written as ``+U`` comes out ``+U``), ``+I`` where Java reads
a split raw.

Once a snapshot expired, its long-lived changelog (``changelog/changelog-<id>``, kept when the
changelog lifecycle is decoupled from snapshots) serves the same reads.

Schema: a stream reads - its full phase and every later snapshot - with one schema, fixed when it
starts (`StreamEnumerator.read_schema`), as a Paimon Java source reads with the table it was built
with (Flink's and Spark's sources hold that ``FileStoreTable``; 0.9 to HEAD, none reloads it): a
stream started at a snapshot id or a time with the fields of the schema that snapshot was written
under and the current options (Java's time-travelling table copy), every other stream with the
table's schema at its start. Files of later schemas are read by field id into it: a renamed
column under its old name, an added one left out, a dropped one as nulls, a widened one cast back
when its values fit (else `SchemaError`: restart the stream - from its consumer position - to
read with the new schema, as a restarted Java job does).

The splits are planned in `lake_assets.ops.stream_splits` and read in `lake_assets.ops.stream_reader`.

Postpone-bucket tables: which scans see the rows waiting in ``bucket-postpone`` is in
`lake_assets.ops.stream_postpone` (streams without a changelog producer read them as written;
everything else reads real buckets only).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Literal

import pyarrow as pa

from lake_assets import arguments as args
from lake_assets.errors import InvalidArgumentError, NoSuchTableError, SnapshotNotFoundError
from lake_assets.ops.stream_reader import ChangeReader
from lake_assets.ops.stream_splits import (
    ChangeBatch,
    ChangeSource,
    ChangeSplit,
    change_splits_between,
    full_splits,
    snapshot_changes,
)
from lake_assets.spec.snapshot import Snapshot
from lake_assets.store.changelog_manager import snapshot_or_changelog
from lake_assets.store.read_once import reads_once

if TYPE_CHECKING:
    from lake_assets.spec.schema import TableSchema
    from lake_assets.store.file_store import FileStore

StartMode = Literal["latest-full", "latest", "from-snapshot", "from-snapshot-full", "from-timestamp", "earliest-full"]
DiffSource = Literal["diff"]


class StreamEnumerator:
    """Discovers snapshots and plans change splits; its position survives restarts.

    ``position`` is the id of the next snapshot to read. With ``consumer_id`` the position is
    stored in the table (``consumer/consumer-<id>``) after each `commit`, and a restart resumes
    from it; snapshot expiration keeps every snapshot from that position on.
    """

    def __init__(
        self,
        store: FileStore,
        *,
        mode: StartMode = "latest-full",
        snapshot_id: int | None = None,
        timestamp_ms: int | None = None,
        consumer_id: str | None = None,
        position: int | None = None,
    ) -> None:
        self.store = store
        self.consumer_id = consumer_id
        self.mode = mode
        self._needs_full: Snapshot | None = None
        sm = store.snapshot_manager
        saved = store.consumer_manager().get(consumer_id) if consumer_id else None
        # the latest snapshot once read here, for the stream's schema below (read once, not again)
        latest: Snapshot | Literal[False] | None = False
        if position is not None:
            self.position = position
        elif saved is not None:
            self.position = self._resume_position(consumer_id or "", saved.next_snapshot)
        elif mode in ("latest-full", "earliest-full"):
            earliest = sm.earliest_id()
            snap = latest = sm.latest() if mode == "latest-full" else (
                sm.try_snapshot(earliest) if earliest is not None else None)
            self._needs_full = snap
            self.position = (snap.id + 1) if snap is not None else (sm.earliest_id() or 1)
        elif mode == "latest":
            latest = sm.latest()
            self.position = (latest.id + 1) if latest is not None else 1
        elif mode in ("from-snapshot", "from-snapshot-full"):
            if snapshot_id is None:
                raise InvalidArgumentError(f"start mode {mode!r} needs snapshot_id")
            if mode == "from-snapshot-full":
                self._needs_full = sm.snapshot(snapshot_id)
                self.position = snapshot_id + 1
            else:
                self.position = snapshot_id
        elif mode == "from-timestamp":
            if timestamp_ms is None:
                raise InvalidArgumentError("start mode 'from-timestamp' needs timestamp_ms")
            before = sm.earlier_than_time(timestamp_ms)  # Java: earlierThanTimeMills
            if before is not None:
                self.position = before + 1
            else:
                self.position = self._first_changelog_after(timestamp_ms - 1) or sm.earliest_id() or 1
        else:
            raise InvalidArgumentError(f"unknown start mode {mode!r}")
        travel = self._travel_snapshot(mode, snapshot_id, timestamp_ms)
        # The schema the whole stream reads with, fixed from here on: a travelling stream's start
        # snapshot's fields, else the table's as of now (the handle's, or a newer one the latest
        # snapshot was written under: Java's source loads the table when it starts). A restart,
        # from a consumer's position too, fixes it again, as a restarted Java source does.
        self.travelled = travel is not None
        if travel is not None:
            self.read_schema: TableSchema = store.travel_schema(travel)
        else:
            self.read_schema = store.schema_at(sm.latest() if latest is False else latest)

    def _resume_position(self, consumer_id: str, next_snapshot: int) -> int:
        """Where a stream resumes from consumer ``consumer_id``'s saved ``next_snapshot``.

        Paimon Java 0.9's streaming scan resumes a consumer from ``max(nextSnapshot, earliest)``
        (``ContinuousFromSnapshotStartingScanner``; the earliest long-lived changelog with a
        decoupled changelog) and, ahead of the latest snapshot, waits for ``nextSnapshot`` to be
        written (``NextSnapshotFetcher``). Where that loses nothing - a position at or below 0 on
        a table whose snapshot 1 is still there - it resumes as Java. Where it would skip changes
        silently, `SnapshotNotFoundError` says what happened and what to do: snapshots from the
        position on expired unread (Java starts at the earliest), or the position is past the
        next snapshot the table will write (a consumer saved before a rollback, or on another
        table: Java would wait and then skip the snapshots written before it). The consumer is
        read before the latest snapshot, so a position its stream saved is never ahead."""
        sm = self.store.snapshot_manager
        latest = sm.latest_id()
        changelogs = self.store.changelog_manager()
        firsts = [x for x in (sm.earliest_id(), changelogs.earliest_id(), latest) if x is not None]
        first = min(firsts) if firsts else 1
        name, where = self.store.name, f"consumer {consumer_id!r} (consumer/consumer-{consumer_id})"
        reset = (f"move the consumer (store.consumer_manager().record({consumer_id!r}, <snapshot>)), or delete it "
                 f"and start the stream anew (mode='latest-full' reads the whole table first)")
        if next_snapshot > (latest or 0) + 1:
            raise SnapshotNotFoundError(
                f"Cannot resume a stream of {name} from {where}: it is at snapshot {next_snapshot}, past the next "
                f"snapshot the table will write ({(latest or 0) + 1}; "
                f"{'it has none' if latest is None else f'the latest is {latest}'}): it was saved before the table "
                f"was rolled back, or on another table. Paimon Java 0.9 would wait for snapshot {next_snapshot} and "
                f"never read the ones written before it; to read from the next one, "
                f"{reset.replace('<snapshot>', str((latest or 0) + 1))}")
        if next_snapshot >= first or first <= 1:
            return max(next_snapshot, first)  # nothing skipped: Java's max(nextSnapshot, earliest)
        gone = max(next_snapshot, 1)
        what = (f"at snapshot {next_snapshot}, which names no snapshot (ids start at 1)" if next_snapshot <= 0
                else f"at snapshot {next_snapshot}")
        raise SnapshotNotFoundError(
            f"Cannot resume a stream of {name} from {where}: it is {what}, and snapshots {gone} to {first - 1} "
            f"expired before it read them (the earliest is {first}; an expiry that did not honour the consumer, "
            f"or a consumer moved back), so their changes cannot be read. Paimon Java 0.9 resumes such a consumer "
            f"from the earliest snapshot, skipping them; to do the same, {reset.replace('<snapshot>', str(first))}")

    def _travel_snapshot(self, mode: StartMode, snapshot_id: int | None, timestamp_ms: int | None) -> Snapshot | None:
        """The snapshot a stream starting at a snapshot id or a time travels to, as Paimon Java's
        table copied with ``scan.snapshot-id`` / ``scan.timestamp-millis`` does
        (``AbstractFileStoreTable.tryTimeTravel``, 0.9 and 1.x): it reads - its full phase and
        every later snapshot's changes - with that snapshot's fields and the current options
        (`FileStore.travel_schema`), also after later snapshots evolve the schema. None where Java
        does not travel: the other modes, a snapshot id that does not exist (expired, or not yet
        written), a time before the earliest snapshot. A saved consumer position changes where the
        stream resumes, not the schema (Java travels by the options alone)."""
        sm = self.store.snapshot_manager
        if mode in ("from-snapshot", "from-snapshot-full") and snapshot_id is not None:
            return sm.try_snapshot(snapshot_id)
        if mode == "from-timestamp" and timestamp_ms is not None:
            return sm.earlier_or_equal_time(timestamp_ms)  # Java: earlierOrEqualTimeMills
        return None

    def change_reader(self, columns: list[str] | None = None) -> ChangeReader:
        """A reader of this stream's splits that starts with its schema (`read_schema`): its
        `ChangeReader.schema` and ``columns`` are that schema's names (a travelling stream's
        start snapshot's)."""
        return ChangeReader(self.store, columns, self.read_schema)

    def _first_changelog_after(self, time_ms: int) -> int | None:
        """The oldest long-lived changelog committed after ``time_ms`` (streams starting before the
        earliest snapshot read those first): a binary search over the listed ids, as Java's
        ``earlierThanTimeMills`` searches changelogs, reading about log2(n) changelog files."""
        changelogs = self.store.changelog_manager()
        ids = changelogs.ids()
        lo, hi, found = 0, len(ids) - 1, None
        while lo <= hi:
            mid = (lo + hi) // 2
            snap = changelogs.try_changelog(ids[mid])
            if snap is None or snap.time_millis <= time_ms:  # gone: expired, so older than the answer
                lo = mid + 1
            else:
                found, hi = ids[mid], mid - 1
        return found

    @reads_once
    def poll(self, max_snapshots: int = 1) -> list[ChangeBatch]:
        """Plan up to ``max_snapshots`` snapshots that are available now (empty if none)."""
        args.integer("max_snapshots", max_snapshots, minimum=1, optional=False)
        batches: list[ChangeBatch] = []
        if self._needs_full is not None:
            full = self._needs_full
            splits = full_splits(self.store, full, self.read_schema)
            self._needs_full = None
            batches.append(ChangeBatch(full.id, splits, self.position))
            max_snapshots -= 1
        sm = self.store.snapshot_manager
        changelogs = self.store.changelog_manager()
        latest = sm.latest_id()
        if latest is None:
            self._require_branch("poll")  # a deleted branch has no snapshot: never wait on it
        while max_snapshots > 0 and latest is not None and self.position <= latest:
            snap = snapshot_or_changelog(sm, changelogs, self.position)
            if snap is None:
                earliest = min(x for x in (sm.earliest_id(), changelogs.earliest_id(), latest) if x is not None)
                protect = (f"consumer {self.consumer_id!r} should have held it (an expiry that does not honour "
                           "consumers, or the consumer was dropped by consumer.expiration-time); restart the stream "
                           "from the consumer to see what to do" if self.consumer_id
                           else "use a consumer id to protect unread snapshots")
                raise SnapshotNotFoundError(
                    f"Table {self.store.name}: snapshot {self.position} expired before this stream read it "
                    f"(earliest is {earliest}); {protect}"
                )
            splits = snapshot_changes(self.store, snap, schema=self.read_schema)
            batches.append(ChangeBatch(snap.id, splits, snap.id + 1))
            self.position = snap.id + 1
            max_snapshots -= 1
        return batches

    def commit(self, position: int | None = None) -> None:
        """Record that everything before ``position`` (default: the current one) was processed."""
        args.integer("position", position, minimum=0)
        pos = self.position if position is None else position
        if self.consumer_id:
            self._require_branch("record the position of")  # else its file would bring the branch back
            self.store.consumer_manager().record(self.consumer_id, pos)

    def _require_branch(self, what: str) -> None:
        """`NoSuchTableError` when this stream reads a branch that was deleted (its schema files are
        gone): the stream cannot go on, and nothing is written into the deleted branch's directory."""
        if self.store.paths.branch is None:
            return
        if not any(n.startswith("schema-") for n in self.store.file_io.list_names(self.store.paths.schema_dir)):
            raise NoSuchTableError(f"Cannot {what} the stream of {self.store.name}: the branch was deleted")


def read_changes(
    store: FileStore,
    start: int | str,
    end: int | str | None = None,
    *,
    source: ChangeSource | DiffSource | None = None,
    columns: list[str] | None = None,
) -> pa.Table:
    """Changes between ``start`` and ``end`` (ids or tag names) with a ``_row_kind`` column.

    Between two tags, as Paimon's ``incremental-between = 'tag1,tag2'``: the difference of the
    tags' files, the net change of each key (`lake_assets.ops.tag_diff`), which needs no snapshot in
    between. Otherwise the changes of each snapshot in ``(start, end]``: ``source="delta"`` reads
    the data files new snapshots added; ``"changelog"`` the changelog files (tables with a changelog
    producer); ``"auto"`` picks by the table's producer; ``"diff"`` diffs the two snapshots' files as
    between tags (Paimon 1.x). Unset, ``source`` is the table's ``incremental-between-scan-mode``.
    """
    both_tags = isinstance(start, str) and isinstance(end, str)
    mode = source if source is not None else _scan_mode(store)
    if both_tags and source is not None and source not in ("auto", "diff"):
        raise InvalidArgumentError(
            f"Cannot read changes of {store.name} between tags {start!r} and {end!r} with source={source!r}: "
            f"Paimon diffs two tags' files (incremental-between-scan-mode applies to snapshot ids only)"
        )
    if both_tags or mode == "diff":
        from lake_assets.ops.tag_diff import read_diff  # only diff reads need it

        return read_diff(store, start, end, columns)
    splits = change_splits_between(store, start, end, mode)  # type: ignore[arg-type]
    reader = ChangeReader(store, columns)  # after planning: with the newest schema the splits need
    parts = [reader.read(split) for split in splits]
    return pa.concat_tables(parts) if parts else reader.schema.empty_table()


def _scan_mode(store: FileStore) -> str:
    """The table's ``incremental-between-scan-mode`` (auto, delta, changelog or diff)."""
    return store.schema.core_options._choice("incremental-between-scan-mode")


def iter_stream(
    enumerator: StreamEnumerator, reader: ChangeReader, *, max_batches: int | None = None
) -> Iterator[tuple[int, pa.Table]]:
    """Drain what is available now: (position after the snapshot, its changes), committing as it goes."""
    done = 0
    while max_batches is None or done < max_batches:
        batches = enumerator.poll()
        if not batches:
            return
        for b in batches:
            parts = [reader.read(s) for s in b.splits]
            yield b.next_position, (pa.concat_tables(parts) if parts else reader.schema.empty_table())
            enumerator.commit(b.next_position)
            done += 1


# the planning and reading halves live in their own modules; callers import them from here too
__all__ = [
    "ChangeBatch",
    "ChangeReader",
    "ChangeSource",
    "ChangeSplit",
    "DiffSource",
    "StartMode",
    "StreamEnumerator",
    "change_splits_between",
    "full_splits",
    "iter_stream",
    "read_changes",
    "snapshot_changes",
]
