"""``scan.fallback-branch``: a batch read takes the partitions its branch lacks from another branch.

Paimon 0.9+ (``FallbackReadFileStoreTable``, made by ``FileStoreTableFactory`` for every table whose
options name a fallback branch): a batch read plans the table's own branch as usual, then adds the
fallback branch's splits of every partition the table's branch has no live file in. The fallback
is opened on its own latest schema and options (its merge engine, bucket count, deletion vectors)
and is never itself read with a fallback (``createWithoutFallbackBranch``). A table without
partition keys has one partition: its own rows if it has any, else the fallback's.

Which partitions the table's branch "has" is decided by its live files alone, never by a read's
filter: Paimon 0.9 decided it from the splits left after the filter, so a filter on a value column
that pruned every file of a partition read that partition from the fallback instead; Paimon 1.x
fixed it (apache/paimon#7388) and lake_assets reads as 1.x does.

The two branches must have the same columns: the same types position by position (nullability
aside) and, where the table has primary keys, the same ones (0.9's ``validateSchema``); lake_assets
also requires the same names, since it reads columns by name. Time travel by snapshot id reads the
fallback's snapshot committed at or before the table's snapshot's time (else its snapshot 1, as
0.9); by timestamp, the fallback's as of that time; by tag it is refused (0.9 looks the tag up in the
fallback's handle, whose tags lake_assets does not resolve the same way). Streams and change reads
of such a table are refused by the option's rule: 0.9's streaming reads ignore the fallback, its
incremental batch reads pass it the table's snapshot ids unconverted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lake_assets.errors import NoSuchTableError, SchemaError, SnapshotNotFoundError, UnsupportedFeatureError
from lake_assets.ops.plan import plan_splits
from lake_assets.ops.row_range_prune import filter_schema
from lake_assets.ops.scan import Split
from lake_assets.predicate import Predicate
from lake_assets.spec.schema import TableSchema
from lake_assets.spec.snapshot import Snapshot
from lake_assets.store.branch_table import BRANCH_SEPARATOR, MAIN_BRANCH, main_name, split_branch
from lake_assets.store.file_store import FileStore
from lake_assets.table_support import Op

FALLBACK_BRANCH = "scan.fallback-branch"
FIRST_SNAPSHOT_ID = 1  # Paimon's Snapshot.FIRST_SNAPSHOT_ID: 0.9's fallback when no snapshot is old enough


def fallback_branch(schema: TableSchema) -> str | None:
    """The branch ``schema``'s table reads missing partitions from, or None (unset or blank, as
    0.9's ``isNullOrWhitespaceOnly``)."""
    text = schema.options.get(FALLBACK_BRANCH)
    return None if text is None or not text.strip() else text


@dataclass(frozen=True)
class Travel:
    """How a read chose its snapshot: latest (all None), by id, by tag or as of a time (epoch ms)."""

    snapshot_id: int | None = None
    tag: str | None = None
    timestamp_ms: int | None = None


@dataclass(frozen=True)
class FallbackSource:
    """The fallback branch a read takes partitions from: its handle, snapshot and schema."""

    store: FileStore
    snapshot: Snapshot | None
    schema: TableSchema

    def splits(self, filter: Any, exclude: set[bytes]) -> list[Split]:
        """The fallback's splits that may hold rows ``filter`` accepts, of the partitions not in ``exclude``."""
        if self.snapshot is None:
            return []
        pred = bound(filter, self.schema, self.store.name)
        return [s for s in plan_splits(self.store, self.snapshot, pred, Op.READ, schema=self.schema)
                if s.partition not in exclude]


def bound(filter: Any, schema: TableSchema, name: str) -> Predicate | None:
    """``filter`` (the core's filter convention) bound to ``schema``'s columns."""
    pred = Predicate.of(filter)
    return None if pred is None else pred.bind(filter_schema(schema), name)


def open_branch(store: FileStore, branch: str) -> FileStore:
    """A handle of ``branch`` of ``store``'s table (the main branch for ``main``), on its latest schema."""
    base = main_name(store.name)
    _, checked = split_branch(f"t{BRANCH_SEPARATOR}{branch}")  # a name Paimon allows, or InvalidIdentifierError
    if checked is None or branch == MAIN_BRANCH:
        return FileStore(base, store.file_io, store.paths.root)
    name = f"{base}{BRANCH_SEPARATOR}{checked}"
    if not store.file_io.list_names(f"{store.paths.root}/branch/branch-{checked}/schema"):
        raise NoSuchTableError(f"Cannot read {store.name}: its option {FALLBACK_BRANCH} = {branch!r} names a branch "
                               "that does not exist")
    return FileStore(name, store.file_io, store.paths.root, branch=checked)


def open_fallback(store: FileStore, schema: TableSchema, snap: Snapshot | None,
                  travel: Travel) -> FallbackSource | None:
    """The fallback a batch read of ``store`` as of ``snap`` (chosen by ``travel``) with ``schema``
    adds, or None when its table names none; a fallback lake_assets cannot read as Paimon does is
    refused naming it."""
    branch = fallback_branch(schema)
    if branch is None:
        return None
    if travel.tag is not None:
        raise UnsupportedFeatureError(
            f"Cannot read {store.name} as of tag {travel.tag!r}: it carries {FALLBACK_BRANCH} = {branch!r}, and "
            "lake_assets does not time-travel the fallback branch by a tag (read by snapshot id or timestamp)")
    fallback = open_branch(store, branch)
    fb_snap = _fallback_snapshot(store, fallback, snap, travel)
    # as the table's own read: a time travel with the snapshot's fields, else the latest schema
    traveled = travel != Travel() and fb_snap is not None
    fb_schema = fallback.travel_schema(fb_snap) if traveled else fallback.schema_at(fb_snap)
    check_same_columns(store.name, schema, fb_schema, branch)
    from lake_assets.ops import postpone_merge_read

    if postpone_merge_read.configured(fb_schema):
        raise UnsupportedFeatureError(
            f"Cannot read {store.name}: its fallback branch {branch!r} carries postpone.merge-on-read, which "
            "lake_assets does not apply to a fallback branch's partitions")
    return FallbackSource(fallback, fb_snap, fb_schema)


def _fallback_snapshot(store: FileStore, fallback: FileStore, snap: Snapshot | None, travel: Travel) -> Snapshot | None:
    manager = fallback.snapshot_manager
    if travel.timestamp_ms is not None:
        return manager.earlier_or_equal_time(travel.timestamp_ms)
    if travel.snapshot_id is None or snap is None:
        return manager.latest()
    # snapshot ids differ between branches: the table's snapshot's time picks the fallback's (0.9)
    found = manager.earlier_or_equal_time(snap.time_millis)
    if found is not None:
        return found
    first = manager.try_snapshot(FIRST_SNAPSHOT_ID)
    if first is None and manager.latest_id() is not None:
        raise SnapshotNotFoundError(
            f"Cannot read {store.name} as of snapshot {snap.id}: its fallback branch {fallback.name} has no snapshot "
            f"committed at or before it, and its snapshot {FIRST_SNAPSHOT_ID} (where Paimon 0.9 reads then) is gone")
    return first


def check_same_columns(name: str, schema: TableSchema, fallback: TableSchema, branch: str) -> None:
    """0.9's ``validateSchema``: the same column types (nullability aside) and, when the table has
    primary keys, the same ones; lake_assets also needs the same names (it reads by name)."""
    ours = [(f.name, f.type.copy(nullable=True)) for f in schema.fields]
    theirs = [(f.name, f.type.copy(nullable=True)) for f in fallback.fields]
    if [t for _, t in ours] != [t for _, t in theirs]:
        raise SchemaError(f"Cannot read {name}: it and its fallback branch {branch!r} ({FALLBACK_BRANCH}) do not have "
                          f"the same row type: {_types(schema)} and {_types(fallback)}")
    if [n for n, _ in ours] != [n for n, _ in theirs]:
        raise UnsupportedFeatureError(
            f"Cannot read {name}: its fallback branch {branch!r} ({FALLBACK_BRANCH}) names its columns "
            f"{list(fallback.field_names)}, the table {list(schema.field_names)}; lake_assets reads a fallback "
            "branch whose columns have the same names only")
    if schema.primary_keys and list(schema.primary_keys) != list(fallback.primary_keys):
        raise SchemaError(f"Cannot read {name}: its primary keys {list(schema.primary_keys)} and those of its "
                          f"fallback branch {branch!r} ({FALLBACK_BRANCH}), {list(fallback.primary_keys)}, differ")


def _types(schema: TableSchema) -> str:
    return "(" + ", ".join(f"{f.name} {f.type}" for f in schema.fields) + ")"


def own_partitions(store: FileStore, snap: Snapshot | None, schema: TableSchema) -> set[bytes]:
    """The partitions ``store``'s branch has live files in at ``snap``, whatever a read filters."""
    if snap is None:
        return set()
    return {s.partition for s in plan_splits(store, snap, None, Op.READ, schema=schema)}


def fallback_splits(store: FileStore, snap: Snapshot | None, schema: TableSchema, source: FallbackSource,
                    filter: Any, own: Sequence[Split] | None = None) -> list[Split]:
    """The fallback's splits a read of ``store`` adds: those of the partitions its branch lacks.
    ``own`` are the read's own splits when planned without a filter (they then name its partitions)."""
    has = {s.partition for s in own} if own is not None else own_partitions(store, snap, schema)
    return source.splits(filter, has)


__all__ = ["FALLBACK_BRANCH", "FallbackSource", "Travel", "bound", "check_same_columns", "fallback_branch",
           "fallback_splits", "open_branch", "open_fallback", "own_partitions"]
