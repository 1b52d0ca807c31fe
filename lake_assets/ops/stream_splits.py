"""The splits of a stream or an incremental read: what one snapshot contributes (its delta or
changelog files per (partition, bucket)), the full phase's merged state, and the snapshots between
two points (`lake_assets.ops.stream` has the rules; `lake_assets.ops.stream_reader` reads them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from lake_assets.errors import InvalidArgumentError, SnapshotNotFoundError, UnsupportedFeatureError
from lake_assets.ops.plan import plan_splits
from lake_assets.ops.stream_postpone import postponed_entries, sees_postponed, skips_postponed
from lake_assets.spec.manifest import DataFileMeta, FileKind, IndexManifestEntry, ManifestEntry
from lake_assets.spec.snapshot import CommitKind, Snapshot
from lake_assets.store.changelog_manager import snapshot_or_changelog
from lake_assets.store.snapshot_identity import discarded_by_rollback
from lake_assets.table_support import Op

if TYPE_CHECKING:
    from lake_assets.ops.scan import FileStoreScan
    from lake_assets.spec.schema import TableSchema
    from lake_assets.store.file_store import FileStore

ChangeSource = Literal["delta", "changelog", "auto"]


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
    # the schema its stream reads with (`StreamEnumerator.read_schema`, fixed for the stream's
    # run); None (incremental reads): the table's, moving on with the snapshots (`FileStore.schema_at`)
    schema: TableSchema | None = field(default=None, compare=False, repr=False)

    @property
    def row_count(self) -> int:
        return sum(f.row_count for f in self.files)


@dataclass
class ChangeBatch:
    """The splits of one snapshot (or of the initial full state) and the position after them."""

    snapshot_id: int
    splits: list[ChangeSplit] = field(default_factory=list)
    next_position: int = 0


def _group(snapshot_id: int, entries: list[ManifestEntry], kind: str, scan: FileStoreScan,
           schema: TableSchema | None = None) -> list[ChangeSplit]:
    groups: dict[tuple[bytes, int], list[DataFileMeta]] = {}
    for e in entries:
        if e.kind == FileKind.ADD:
            groups.setdefault((e.partition, e.bucket), []).append(e.file)
    return [
        ChangeSplit(snapshot_id, part, scan.partition_values(part), bucket, tuple(files), kind,  # type: ignore[arg-type]
                    schema=schema)
        for (part, bucket), files in groups.items()
    ]


def snapshot_changes(
    store: FileStore, snap: Snapshot, source: ChangeSource = "auto", *, streaming: bool = True,
    schema: TableSchema | None = None,
) -> list[ChangeSplit]:
    """The change splits one snapshot contributes (see the module docstring): to a stream, or
    with ``streaming=False`` to an incremental batch read (which never sees ``bucket-postpone``).

    ``schema``: the one a stream reads with (`StreamEnumerator.read_schema`), whose options decide
    what the snapshot contributes, as the table a Paimon source holds; the splits carry it. Unset
    (incremental reads), the handle's schema as of ``snap`` (`FileStore.schema_at`)."""
    moved = store.schema_at(snap) if schema is None else schema  # a newer snapshot's schema, unless fixed
    scan = store.file_store_scan(Op.STREAM, real_buckets_only=skips_postponed(store, streaming=streaming))
    opts = moved.core_options
    producer = opts.changelog_producer
    use_changelog = source == "changelog" or (source == "auto" and producer != "none")
    if use_changelog:
        return _group(snap.id, scan.changelog_entries(snap), "changelog", scan, schema)
    if snap.commit_kind == CommitKind.COMPACT:
        return []
    if snap.commit_kind == CommitKind.OVERWRITE and not _reads_overwrite(moved, streaming):
        return []
    return _group(snap.id, scan.delta_entries(snap), "delta", scan, schema)


def _reads_overwrite(schema: TableSchema, streaming: bool) -> bool:
    """Whether an OVERWRITE snapshot's added files are read: a primary-key table's with
    ``streaming-read-overwrite``; an append table's (which refuses that option) in a stream with
    ``streaming-read-append-overwrite`` (Paimon 1.2+ ``AppendOnlyFileStoreTable
    .supportStreamingReadOverwrite``: only ``DataTableStreamScan`` asks; its incremental scanner
    skips OVERWRITEs)."""
    opts = schema.core_options
    if schema.primary_keys:
        return opts.streaming_read_overwrite
    return streaming and opts.streaming_read_append_overwrite


def _full_phase_levels(schema: TableSchema) -> Callable[[int], bool] | None:
    """The levels a stream's full phase reads (Java's ``DataTableStreamScan.tryFirstPlan``, 0.9 to
    2.x): with ``lookup`` (or ``force-lookup``, which Java's ``needLookup`` counts alike) levels
    above 0, with ``full-compaction`` the top level only, as the changelog of the files below is
    still to come (the next compaction's); else every level."""
    opts = schema.core_options
    if opts.changelog_producer == "lookup" or str(opts.raw.get("force-lookup", "")).strip().lower() == "true":
        return lambda level: level > 0
    if opts.changelog_producer == "full-compaction":
        top = opts.num_levels - 1
        return lambda level: level == top
    return None


def full_splits(store: FileStore, snap: Snapshot, schema: TableSchema | None = None) -> list[ChangeSplit]:
    """The full phase of a stream at ``snap``: its merged real buckets (of the levels
    `_full_phase_levels` keeps; `ChangeReader` gives their rows Java's kinds), and, where the
    stream sees them (`stream_postpone.sees_postponed`), the files still waiting in
    ``bucket-postpone``, read as written (Java reads bucket -2 splits without a merge).
    ``schema``: the stream's (`snapshot_changes`), which the splits carry."""
    keep = _full_phase_levels(store.schema_at(snap) if schema is None else schema)
    splits: list[ChangeSplit] = []
    for sp in plan_splits(store, snap, None, schema=schema):
        files = tuple(f for f in sp.files if keep is None or keep(f.level))
        if files:
            splits.append(ChangeSplit(snap.id, sp.partition, sp.partition_values, sp.bucket, files, "full",
                                      sp.dv_entries, schema=schema))
    if sees_postponed(store, streaming=True):
        scan = store.file_store_scan(Op.STREAM, real_buckets_only=False)
        splits += _group(snap.id, postponed_entries(store, snap), "delta", scan, schema)
    return splits


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
        if not isinstance(x, str):
            return int(x)
        held = store.tag_manager().get(x).snapshot
        if discarded_by_rollback(store, held):  # its id names another commit now (or none yet)
            raise InvalidArgumentError(
                f"Cannot read changes of {store.name} from tag {x!r}: its snapshot {held.id} belongs to a history "
                "a rollback discarded, so snapshot ids from there on are not its successors; read the tag itself "
                "(or diff two tags with read_changes(tag1, tag2))")
        return held.id

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


__all__ = ["ChangeBatch", "ChangeSource", "ChangeSplit", "change_splits_between", "full_splits",
           "snapshot_changes"]
