"""Deletion vectors of append tables (no primary key, ``deletion-vectors.enabled``): unaware-bucket
tables (``bucket = -1``), and fixed-bucket ones (``bucket = N``, `per_bucket_vectors`: each bucket's
vectors in one index file of its own, replaced whole by every change, as Paimon's
``BucketedAppendDeletionFileMaintainer``; their compaction picks as `lsm.bucketed_append`).

Paimon deletes rows of such tables by marking their positions in per-file vectors (Spark's
``DELETE`` / ``UPDATE`` / ``MERGE INTO``) instead of rewriting the files. The vectors of a
partition live in bucket 0's ``DELETION_VECTORS`` index files (Paimon's unaware bucket), several
files each naming the vectors of some data files. Every file is level 0 and stays visible; a read
drops a file's marked positions (`ops/deletion_vectors.py`).

Maintaining them follows Paimon 1.x's ``BaseAppendDeleteFileMaintainer``: a change of the vectors
of some data files (a delete adding marks, a compaction rewriting the files away) removes the
index files holding their old vectors, writes those files' other vectors, unchanged, into a new
index file each, and (a delete) writes the changed vectors into one new index file.

Compaction (`plan_groups`, as Paimon 1.x's ``AppendCompactCoordinator``): a file with a vector is
rewritten, its marked rows dropped, when it is small or when its vector hides more than
``compaction.delete-ratio-threshold`` of its rows; the small files without one are merged as in
any append table. (Java 0.9 rewrites every file with a vector, whole index files at a time.)

A commit changing vectors is checked against the latest snapshot (`check_vector_targets` and the
index manifest's check, Paimon 1.x's ``ConflictDetection`` for unaware-bucket vectors): no vector
may be written for a data file that is gone or whose vector changed since it was read, and no file
may be rewritten away whose vector changed since it was planned. Commits changing the vectors of
different data files of a partition (held in different index files) do not conflict.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from lake_assets.errors import CommitConflictError
from lake_assets.ops import deletion_vectors
from lake_assets.ops.deletion_vector_cache import INDEX_FILE_CACHE
from lake_assets.ops.deletion_vectors import DELETION_VECTORS_INDEX, VectorLoader, deleted_rows
from lake_assets.ops.scan import Split
from lake_assets.spec.deletion_vector import DeletionVector, encode_index_file
from lake_assets.spec.manifest import DataFileMeta, FileKind, IndexManifestEntry, ManifestEntry
from lake_assets.spec.schema import TableSchema
from lake_assets.spec.snapshot import Snapshot

if TYPE_CHECKING:
    from lake_assets.ops.commit_message import CommitMessage
    from lake_assets.ops.index_commit import IndexChange
    from lake_assets.store.file_store import FileStore

DELETE_RATIO_THRESHOLD = "compaction.delete-ratio-threshold"


def keeps_append_vectors(schema: TableSchema) -> bool:
    """Whether the table is an append table that keeps deletion vectors."""
    return not schema.primary_keys and deletion_vectors.enabled(schema)


def is_row_delete(schema: TableSchema, message: CommitMessage) -> bool:
    """Whether ``message`` deletes rows of an append table through vectors: index changes only."""
    return (keeps_append_vectors(schema) and bool(message.index_before or message.index_after)
            and not (message.compact_before or message.compact_after or message.new_files
                     or message.new_changelog or message.compact_changelog))


def _ratio_threshold(schema: TableSchema) -> float:
    return float(schema.core_options.raw.get(DELETE_RATIO_THRESHOLD, "0.2"))


def files_to_purge(schema: TableSchema, files: Iterable[DataFileMeta], deleted: Mapping[str, int]
                   ) -> list[DataFileMeta]:
    """The ``files`` a compaction rewrites because of their vector (``deleted``: data file name ->
    rows its vector hides): small ones with a vector, and those whose vector hides more than
    ``compaction.delete-ratio-threshold`` of their rows (Paimon 1.x's ``AppendCompactCoordinator``).
    `plan_groups` and the table's health (compaction backlog) share this rule."""
    from lake_assets.lsm.compact_strategy import small_file_threshold

    opts = schema.core_options
    small = small_file_threshold(opts.target_file_size, opts.small_file_ratio)
    threshold = _ratio_threshold(schema)
    return [f for f in files if deleted.get(f.file_name)
            and (f.file_size < small or deleted[f.file_name] > f.row_count * threshold)]


def per_bucket_vectors(schema: TableSchema) -> bool:
    """Whether the table is a fixed-bucket append table (``bucket = N > 0``) with vectors: each
    bucket keeps its vectors in one index file of its own (Paimon's
    ``BucketedAppendDeletionFileMaintainer``), which every change of them replaces whole."""
    return keeps_append_vectors(schema) and schema.core_options.bucket > 0


def plan_groups(store: FileStore, split: Split, *, full: bool,
                commits_since_full: int | None = None) -> list[list[DataFileMeta]]:
    """The groups of one partition's files an append compaction rewrites, vectors applied
    (`vector_groups` with the rows the split's vectors hide). A fixed-bucket table's bucket is
    picked as without vectors (Java 0.9's ``BucketedAppendCompactManager``: no delete ratio),
    except that its full compaction rewrites every file from the first small one or one with a
    vector on (`lsm.bucketed_append.pick_bucketed_append_full`)."""
    counts = deleted_rows(store, split.dv_entries) if split.dv_entries else {}
    if per_bucket_vectors(store.schema):
        from lake_assets.lsm.bucketed_append import bucketed_append_groups

        return bucketed_append_groups(split.files, store.schema.core_options, full=full,
                                      commits_since_full=commits_since_full, vectored=frozenset(counts))
    return vector_groups(store.schema, split.files, counts, full=full)


def vector_groups(schema: TableSchema, files: Sequence[DataFileMeta], counts: Mapping[str, int], *,
                  full: bool) -> list[list[DataFileMeta]]:
    """The groups of one partition's ``files`` an append compaction rewrites (``counts``: data
    file name -> rows its vector hides), from metadata only: the planner, and the question the
    table's health asks (``compaction_would_trigger``).

    Files with a vector that are small or hide more than the threshold's share of their rows
    form one group (it may be a single file: its dead rows go); the rest is picked as in any
    append table. A full compaction also rewrites every file with a vector."""
    # here, not at the top: the committer imports this module, a writer need not import compaction's
    from lake_assets.lsm.compact_strategy import pick_append_full, pick_append_small_files

    opts = schema.core_options
    target = opts.target_file_size
    marked = [f for f in files if counts.get(f.file_name)]
    plain = [f for f in files if not counts.get(f.file_name)]
    if full:
        picked = pick_append_full(files, target)
        names = {f.file_name for f in picked}
        extra = [f for f in marked if f.file_name not in names]
        return [picked + extra] if picked or extra else []
    forced = files_to_purge(schema, marked, counts)
    groups = pick_append_small_files(plain, target, opts.compaction_min_file_num,
                                     small_file_ratio=opts.small_file_ratio,
                                     max_file_num=opts.compaction_max_file_num)
    return ([forced] if forced else []) + groups


def _write_index_file(store: FileStore, partition: bytes, bucket: int,
                      vectors: Mapping[str, DeletionVector], written: list[str]) -> IndexManifestEntry:
    """One new index file holding ``vectors``; its path goes into ``written`` before the write."""
    data, ranges = encode_index_file(vectors)
    name = f"index-{uuid.uuid4()}-0"
    path = store.paths.index_file(name)
    written.append(path)
    store.file_io.write_bytes(path, data)
    # reads and the next change start from these vectors: cached as written, never changed in place
    INDEX_FILE_CACHE.put((store.paths.root, name, len(data)), dict(vectors), len(data))
    return IndexManifestEntry(FileKind.ADD, partition, bucket, DELETION_VECTORS_INDEX, name, len(data),
                              len(ranges), ranges)


def change_vectors(
    store: FileStore,
    split: Split,
    *,
    gone: Iterable[str] = (),
    changed: Mapping[str, DeletionVector] | None = None,
    loader: VectorLoader | None = None,
) -> tuple[tuple[IndexManifestEntry, ...], tuple[IndexManifestEntry, ...], list[str]]:
    """The index change of one partition whose data files ``gone`` lose their vectors (rewritten
    away) and whose files in ``changed`` get these vectors (old marks included): (index files
    removed, index files added, paths written). Nothing when no vector changes.

    ``before`` is the index files holding an old vector of those data files, ``after`` the files
    replacing them: the changed vectors, and the removed files' other vectors unchanged (Java's
    delta of index files). The commit fails when one of ``before`` is gone meanwhile
    (`lake_assets.ops.index_commit`), or another commit gave one of the data files a vector
    (`check_vector_targets`); other index files of the partition may change in between."""
    changed = dict(changed or {})
    dropped = set(gone) | set(changed)
    touched = [e for e in split.dv_entries if any(r.data_file in dropped for r in e.dv_ranges or ())]
    if not touched and not changed:
        return (), (), []
    loader = loader or VectorLoader(store)
    if per_bucket_vectors(store.schema):
        return _replace_bucket_vectors(store, split, dropped, changed, loader)
    written: list[str] = []
    after: list[IndexManifestEntry] = []
    try:
        for e in touched:
            # the index file's other vectors, unchanged, into a file of their own (Java's
            # writeUnchangedDeletionVector)
            rest = {name: v for name, v in loader.vectors((e,)).items() if name not in dropped}
            if rest:
                after.append(_write_index_file(store, split.partition, split.bucket, rest, written))
        live = {name: v for name, v in changed.items() if v}
        if live:
            after.append(_write_index_file(store, split.partition, split.bucket, live, written))
    except BaseException:
        store.file_io.delete_many(written)
        raise
    return tuple(touched), tuple(after), written


def _replace_bucket_vectors(
    store: FileStore, split: Split, dropped: set[str], changed: Mapping[str, DeletionVector], loader: VectorLoader,
) -> tuple[tuple[IndexManifestEntry, ...], tuple[IndexManifestEntry, ...], list[str]]:
    """`change_vectors` of a fixed-bucket append table's bucket: every index file of the bucket
    goes, and one new file holds all its vectors after the change (Java's
    ``DeletionVectorsMaintainer.writeDeletionVectorsIndex``; Java's index manifest keeps one file
    per bucket, so a second one would be lost at its next commit). Vectors naming files the
    bucket no longer holds stay, as Java's maintainer keeps them. No vector left: the bucket's
    files go and none is written (Java 0.9 writes an empty index file; both read as no vectors)."""
    vectors = {name: v for name, v in loader.vectors(split.dv_entries).items() if name not in dropped}
    vectors.update((name, v) for name, v in changed.items() if v)
    written: list[str] = []
    if not vectors:
        return split.dv_entries, (), written
    try:
        entry = _write_index_file(store, split.partition, split.bucket, vectors, written)
    except BaseException:
        store.file_io.delete_many(written)
        raise
    return split.dv_entries, (entry,), written


def check_vector_targets(store: FileStore, latest: Snapshot | None, delta: Sequence[ManifestEntry],
                         changes: Sequence[IndexChange], *, overwrite: bool = False) -> None:
    """Raise `CommitConflictError` when a commit to an append table with vectors would mark rows of
    a data file that is no longer live (a concurrent compaction rewrote it), rewrite away a file
    whose vector is not among those it replaces (a concurrent delete marked rows in it since it was
    planned: they would come back), or write a vector for a file that got one from another commit
    since (two deletes marking one file: the second would hide the first one's marks). With
    `next_index_manifest`'s check that every index file a commit replaces is still there, this is
    Paimon 1.x's check for unaware-bucket vectors (``ConflictDetection.buildDeltaEntriesWithDV``:
    each data file keyed with the index file of its vector): two commits conflict only when they
    change the vector of one data file, or replace one index file.

    An ``overwrite`` removes the files of the partitions it replaces, computed against ``latest``,
    and their index files go with them: only its vectors are checked."""
    if latest is None:
        return
    touched = {e.partition for e in delta} | {c.partition for c in changes}
    if not touched:
        return
    index = deletion_vectors.snapshot_index(store, latest)
    holder: dict[tuple[bytes, str], str] = {}  # (partition, data file) -> index file of its vector
    for (partition, _bucket), entries in index.items():
        if partition in touched:
            for e in entries:
                for r in e.dv_ranges or ():
                    holder[(partition, r.data_file)] = e.file_name
    replaced = {(c.partition, e.file_name) for c in changes for e in c.before}
    for d in delta:
        if d.kind != FileKind.DELETE or overwrite:
            continue
        held = holder.get((d.partition, d.file.file_name))
        if held is not None and (d.partition, held) not in replaced:
            raise CommitConflictError(
                f"Cannot commit to {store.name}: data file {d.file.file_name} got a deletion vector since this "
                "compaction was planned (a concurrent delete?); rewriting it would bring its deleted rows "
                "back. Nothing was committed; compact again")
    wanted = {(c.partition, r.data_file) for c in changes for e in c.after
              if e.index_type == DELETION_VECTORS_INDEX for r in e.dv_ranges or ()}
    if not wanted:
        return
    for part, name in sorted(wanted):
        held = holder.get((part, name))
        if held is not None and (part, held) not in replaced and not overwrite:
            raise CommitConflictError(
                f"Cannot commit to {store.name}: data file {name} got a deletion vector from a concurrent commit "
                "(another delete marked rows in it) since this one read its vectors; nothing was committed, "
                "delete again")
    live = {(f.partition, f.file.file_name)
            for f in store.file_store_scan().live_entries(latest, partition_filter=None) if f.partition in touched}
    live -= {(d.partition, d.file.file_name) for d in delta if d.kind == FileKind.DELETE}
    live |= {(d.partition, d.file.file_name) for d in delta if d.kind == FileKind.ADD}
    missing = sorted(name for part, name in wanted - live)
    if missing:
        raise CommitConflictError(
            f"Cannot commit to {store.name}: data file {missing[0]} was already deleted by a concurrent commit "
            "(e.g. a compaction rewrote it), so its rows cannot be marked deleted; nothing was committed, "
            "delete again")


__all__ = ["DELETE_RATIO_THRESHOLD", "change_vectors", "check_vector_targets", "files_to_purge", "is_row_delete",
           "keeps_append_vectors", "per_bucket_vectors", "plan_groups", "vector_groups"]
