"""Incremental and streaming reads, in the split-enumerator / split-reader shape of FLIP-27.

`StreamEnumerator` discovers new snapshots and turns each into `ChangeSplit`s per
(partition, bucket); `ChangeReader` reads a split into rows with a ``_row_kind`` column. The
position is the id of the next snapshot to read: save it (or let a consumer id store it in the
table) and resume from it after a restart with no row lost or repeated.

What a snapshot contributes depends on the table's ``changelog-producer``:

* ``none``: the data files an APPEND snapshot added, as written (each file is merged per key, so a
  key changed twice in one commit appears once). COMPACT snapshots carry no new data and are
  skipped; OVERWRITE snapshots too, unless ``streaming-read-overwrite`` is true.
* ``input``, ``lookup``, ``full-compaction``: the changelog files in the snapshot's changelog
  manifest list, whatever the commit kind.

The full phase (the starting scan of ``latest-full`` / ``from-snapshot-full`` / ``earliest-full``)
emits the merged state with the row kinds Paimon Java's reader gives it (`lake_assets.ops.full_phase_kinds`):
the merged record's kind (a key last written as ``+U`` comes out ``+U``), ``+I`` where Java reads
a split raw.

Once a snapshot expired, its long-lived changelog (``changelog/changelog-<id>``, kept when the
changelog lifecycle is decoupled from snapshots) serves the same reads.

Postpone-bucket tables: which scans see the rows waiting in ``bucket-postpone`` is in
`lake_assets.ops.stream_postpone` (streams without a changelog producer read them as written;
everything else reads real buckets only).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa
import pyarrow.compute as pc

from lake_assets import arguments as args
from lake_assets.errors import (
    InvalidArgumentError,
    MissingDataFileError,
    SchemaError,
    SnapshotNotFoundError,
    UnsupportedFeatureError,
)
from lake_assets.formats.data_file import SEQUENCE_NUMBER, VALUE_KIND
from lake_assets.ops.plan import plan_splits
from lake_assets.ops.read import SplitReader, missing_file_error
from lake_assets.ops.scan import Split
from lake_assets.ops.stream_postpone import postponed_entries, read_order, sees_postponed, skips_postponed
from lake_assets.spec.manifest import DataFileMeta, FileKind, IndexManifestEntry, ManifestEntry
from lake_assets.spec.row_kind import ROW_KIND, check_row_kind_free, row_kind_names_array
from lake_assets.spec.snapshot import CommitKind, Snapshot
from lake_assets.store.changelog_manager import snapshot_or_changelog
from lake_assets.table_support import Op

if TYPE_CHECKING:
    from lake_assets.ops.scan import FileStoreScan
    from lake_assets.store.file_store import FileStore

StartMode = Literal["latest-full", "latest", "from-snapshot", "from-snapshot-full", "from-timestamp", "earliest-full"]
ChangeSource = Literal["delta", "changelog", "auto"]
DiffSource = Literal["diff"]


@dataclass(frozen=True)
class ChangeSplit:
    """Files of one (partition, bucket) from one snapshot, or the full state of a bucket."""

    snapshot_id: int
    partition: bytes
    partition_values: tuple[Any, ...]
    bucket: int
    files: tuple[DataFileMeta, ...]
    kind: Literal["delta", "changelog", "full"]
    # a full split of a deletion-vector table: its bucket's index files (ops/deletion_vectors.py)
    dv_entries: tuple[IndexManifestEntry, ...] = ()

    @property
    def row_count(self) -> int:
        return sum(f.row_count for f in self.files)


@dataclass
class ChangeBatch:
    """The splits of one snapshot (or of the initial full state) and the position after them."""

    snapshot_id: int
    splits: list[ChangeSplit] = field(default_factory=list)
    next_position: int = 0


def _group(snapshot_id: int, entries: list[ManifestEntry], kind: str, scan: FileStoreScan) -> list[ChangeSplit]:
    groups: dict[tuple[bytes, int], list[DataFileMeta]] = {}
    for e in entries:
        if e.kind == FileKind.ADD:
            groups.setdefault((e.partition, e.bucket), []).append(e.file)
    return [
        ChangeSplit(snapshot_id, part, scan.partition_values(part), bucket, tuple(files), kind)  # type: ignore[arg-type]
        for (part, bucket), files in groups.items()
    ]


def snapshot_changes(
    store: FileStore, snap: Snapshot, source: ChangeSource = "auto", *, streaming: bool = True
) -> list[ChangeSplit]:
    """The change splits one snapshot contributes (see the module docstring): to a stream, or
    with ``streaming=False`` to an incremental batch read (which never sees ``bucket-postpone``)."""
    store.schema_at(snap)  # a snapshot committed under a newer schema is read with it
    scan = store.file_store_scan(Op.STREAM, real_buckets_only=skips_postponed(store, streaming=streaming))
    producer = store.schema.core_options.changelog_producer
    use_changelog = source == "changelog" or (source == "auto" and producer != "none")
    if use_changelog:
        return _group(snap.id, scan.changelog_entries(snap), "changelog", scan)
    if snap.commit_kind == CommitKind.COMPACT:
        return []
    if snap.commit_kind == CommitKind.OVERWRITE and not store.schema.core_options.streaming_read_overwrite:
        return []
    return _group(snap.id, scan.delta_entries(snap), "delta", scan)


def _full_phase_levels(store: FileStore) -> Callable[[int], bool] | None:
    """The levels a stream's full phase reads (Java's ``DataTableStreamScan.tryFirstPlan``, 0.9 to
    2.x): with ``lookup`` levels above 0, with ``full-compaction`` the top level only, as the
    changelog of the files below is still to come (the next compaction's); else every level."""
    opts = store.schema.core_options
    if opts.changelog_producer == "lookup":
        return lambda level: level > 0
    if opts.changelog_producer == "full-compaction":
        top = opts.num_levels - 1
        return lambda level: level == top
    return None


def full_splits(store: FileStore, snap: Snapshot) -> list[ChangeSplit]:
    """The full phase of a stream at ``snap``: its merged real buckets (of the levels
    `_full_phase_levels` keeps; `ChangeReader` gives their rows Java's kinds), and, where the
    stream sees them (`stream_postpone.sees_postponed`), the files still waiting in
    ``bucket-postpone``, read as written (Java reads bucket -2 splits without a merge)."""
    keep = _full_phase_levels(store)
    splits: list[ChangeSplit] = []
    for sp in plan_splits(store, snap, None):
        files = tuple(f for f in sp.files if keep is None or keep(f.level))
        if files:
            splits.append(ChangeSplit(snap.id, sp.partition, sp.partition_values, sp.bucket, files, "full",
                                      sp.dv_entries))
    if sees_postponed(store, streaming=True):
        scan = store.file_store_scan(Op.STREAM, real_buckets_only=False)
        splits += _group(snap.id, postponed_entries(store, snap), "delta", scan)
    return splits


class ChangeReader:
    """Reads change splits into Arrow tables with the table's columns plus ``_row_kind``."""

    def __init__(self, store: FileStore, columns: list[str] | None = None) -> None:
        check_row_kind_free(store.schema.field_names, store.name)
        unknown = [c for c in columns or () if not store.schema.has_field(c)]
        if unknown:
            raise SchemaError(f"Table {store.name} has no columns {unknown}")
        self.store = store
        self.columns = columns
        self._reader = SplitReader(store, store.schema, columns)

    @property
    def schema(self) -> pa.Schema:
        return self._reader.output_schema.append(pa.field(ROW_KIND, pa.string(), nullable=False))

    def read(self, split: ChangeSplit) -> pa.Table:
        """The changes in one split that `StreamEnumerator.poll` planned, with a ``_row_kind`` column."""
        parts = list(self.read_batches(split))
        return pa.concat_tables(parts) if parts else self.schema.empty_table()

    def read_batches(self, split: ChangeSplit) -> Iterator[pa.Table]:
        """The changes of one split as tables: a full split streamed in batches of the table's
        ``read.batch-size`` rows (`ops.streaming_read`), a delta split one table per file."""
        if not isinstance(split, ChangeSplit):
            raise InvalidArgumentError(
                f"split must be a ChangeSplit from StreamEnumerator.poll, got {type(split).__name__}"
            )
        return self._guarded(split)  # the split is checked at the call, not at the first batch

    def _guarded(self, split: ChangeSplit) -> Iterator[pa.Table]:
        try:
            yield from self._read(split)
        except MissingDataFileError as exc:
            raise missing_file_error(self.store, exc, split.snapshot_id) from None

    def _read_full(self, sp: Split) -> Iterator[pa.Table]:
        """A full split's merged rows with the kinds Java's reader gives them
        (`ops.full_phase_kinds`): +I where Java reads raw (and in append tables), else the merged
        record's kind."""
        from lake_assets.ops.full_phase_kinds import full_phase_groups
        from lake_assets.ops.streaming_read import stream_bounds  # it builds on ops.read, as this module

        batch_rows, _ = stream_bounds(self.store.schema.core_options)
        if self.store.primary_keys:
            groups = [(list(g.files), not g.raw) for g in full_phase_groups(self.store, sp.files)]
        else:
            groups = [(sp.files, False)]
        for files, with_kind in groups:
            part = Split(sp.partition, sp.partition_values, sp.bucket, -1, files, sp.dv_entries)
            for merged in self._reader.stream_split(part, batch_rows, with_kind=with_kind):  # <= ~2 * batch_rows
                for start in range(0, merged.num_rows, batch_rows):
                    data = merged.slice(start, batch_rows)
                    if with_kind:
                        kinds = pc.take(row_kind_names_array(), data.column(VALUE_KIND).cast(pa.int32()))
                        data = data.drop_columns([VALUE_KIND])
                    else:
                        kinds = pa.array(["+I"] * data.num_rows, pa.string())
                    yield data.append_column(ROW_KIND, kinds)

    def _read(self, split: ChangeSplit) -> Iterator[pa.Table]:
        if self._reader.schema.id != self.store.schema.id:
            # planning moved the store to a newer schema (`FileStore.schema_at`): the splits' files
            # may hold columns the older one lacks, so the reader follows (its output too)
            gone = [c for c in self.columns or () if not self.store.schema.has_field(c)]
            if gone:
                raise SchemaError(f"Cannot read changes of {self.store.name}: columns {gone} were renamed or "
                                  f"dropped by schema {self.store.schema.id}, which later snapshots were written under")
            self._reader = SplitReader(self.store, self.store.schema, self.columns)
        sp = Split(split.partition, split.partition_values, split.bucket, -1, list(split.files), split.dv_entries)
        if split.kind == "full":
            yield from self._read_full(sp)
            return
        # Files are read as written (no merge across files): each row is one change.
        for meta in read_order(split.bucket, split.files):
            # append files carry no system columns: every row is an insert
            raw = self._reader.read_file(sp, meta, with_system=bool(self.store.primary_keys))
            if self.store.primary_keys:
                # within a commit, changes of a key are ordered by sequence number
                raw = raw.take(pc.sort_indices(raw, sort_keys=[(SEQUENCE_NUMBER, "ascending")]))
                kinds = pc.take(row_kind_names_array(), raw.column(VALUE_KIND).cast(pa.int32()))
            else:
                kinds = pa.array(["+I"] * raw.num_rows, pa.string())
            data = raw.select(self._reader.columns).cast(self._reader.output_schema)
            yield data.append_column(ROW_KIND, kinds)


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
        if position is not None:
            self.position = position
        elif saved is not None:
            self.position = saved.next_snapshot
        elif mode in ("latest-full", "earliest-full"):
            earliest = sm.earliest_id()
            snap = sm.latest() if mode == "latest-full" else (
                sm.try_snapshot(earliest) if earliest is not None else None)
            self._needs_full = snap
            self.position = (snap.id + 1) if snap is not None else (sm.earliest_id() or 1)
        elif mode == "latest":
            latest = sm.latest_id()
            self.position = (latest + 1) if latest is not None else 1
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
            before = sm.newer_than_or_equal_time(timestamp_ms - 1)
            if before is not None:
                self.position = before.id + 1
            else:
                self.position = self._first_changelog_after(timestamp_ms - 1) or sm.earliest_id() or 1
        else:
            raise InvalidArgumentError(f"unknown start mode {mode!r}")

    def _first_changelog_after(self, time_ms: int) -> int | None:
        """The oldest long-lived changelog committed after ``time_ms`` (streams starting before the
        earliest snapshot read those first)."""
        changelogs = self.store.changelog_manager()
        for cid in changelogs.ids():
            snap = changelogs.try_changelog(cid)
            if snap is not None and snap.time_millis > time_ms:
                return cid
        return None

    def poll(self, max_snapshots: int = 1) -> list[ChangeBatch]:
        """Plan up to ``max_snapshots`` snapshots that are available now (empty if none)."""
        args.integer("max_snapshots", max_snapshots, minimum=1, optional=False)
        batches: list[ChangeBatch] = []
        if self._needs_full is not None:
            full = self._needs_full
            splits = full_splits(self.store, full)
            self._needs_full = None
            batches.append(ChangeBatch(full.id, splits, self.position))
            max_snapshots -= 1
        sm = self.store.snapshot_manager
        changelogs = self.store.changelog_manager()
        latest = sm.latest_id()
        while max_snapshots > 0 and latest is not None and self.position <= latest:
            snap = snapshot_or_changelog(sm, changelogs, self.position)
            if snap is None:
                earliest = min(x for x in (sm.earliest_id(), changelogs.earliest_id(), latest) if x is not None)
                raise SnapshotNotFoundError(
                    f"Table {self.store.name}: snapshot {self.position} expired before this stream read it "
                    f"(earliest is {earliest}); use a consumer id to protect unread snapshots"
                )
            batches.append(ChangeBatch(snap.id, snapshot_changes(self.store, snap), snap.id + 1))
            self.position = snap.id + 1
            max_snapshots -= 1
        return batches

    def commit(self, position: int | None = None) -> None:
        """Record that everything before ``position`` (default: the current one) was processed."""
        args.integer("position", position, minimum=0)
        pos = self.position if position is None else position
        if self.consumer_id:
            self.store.consumer_manager().record(self.consumer_id, pos)


def change_splits_between(
    store: FileStore, start: int | str, end: int | str | None = None, source: ChangeSource = "auto"
) -> list[ChangeSplit]:
    """The change splits of snapshots in ``(start, end]`` (ids or tag names; ``end`` defaults to the
    latest), read from long-lived changelogs where the snapshot expired.

    Not between two tags: Paimon diffs two tags' files instead (`read_changes`,
    `lake_assets.ops.tag_diff`), an answer per-snapshot splits cannot give."""
    if isinstance(start, str) and isinstance(end, str):
        raise UnsupportedFeatureError(
            f"Cannot plan the changes of {store.name} between tags {start!r} and {end!r} snapshot by snapshot: "
            f"Paimon diffs the two tags' files; read them with Table.read_changes({start!r}, {end!r})"
        )

    def resolve(x: int | str) -> int:
        return store.tag_manager().get(x).snapshot.id if isinstance(x, str) else int(x)

    lo = resolve(start)
    latest = store.snapshot_manager.latest_id() or 0
    hi = resolve(end) if end is not None else latest
    if hi < lo:
        raise InvalidArgumentError(f"Cannot read changes of {store.name}: end {end!r} (snapshot {hi}) is before "
                                   f"start {start!r} (snapshot {lo})")
    if hi > latest:
        raise SnapshotNotFoundError(f"Cannot read changes of {store.name} up to snapshot {hi}: the latest is {latest}")
    changelogs = store.changelog_manager()
    splits: list[ChangeSplit] = []
    for sid in range(lo + 1, hi + 1):
        snap = snapshot_or_changelog(store.snapshot_manager, changelogs, sid)
        if snap is None:
            raise SnapshotNotFoundError(
                f"Table {store.name}: snapshot {sid} expired and no long-lived changelog keeps its changes"
            )
        splits += snapshot_changes(store, snap, source, streaming=False)
    return splits


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
