"""Deleting the rows of an append table that match a filter, through deletion vectors.

As Paimon's Spark ``DELETE FROM`` on an append table with ``deletion-vectors.enabled``
(``DeleteFromPaimonTableCommand`` with ``PaimonSparkWriter.persistDeletionVectors``): the files
that may hold a matching row are found as a read finds them (partition, stats and file-index
pruning), each is read whole in file order (positions count every row, marked ones too), the
matching positions are added to the file's vector, and the changed vectors of each partition are
committed as one index change (`lake_assets.ops.append_vectors.change_vectors`) in an OVERWRITE
snapshot, as Paimon 1.x commits them. No data file is written or removed.

A commit racing a compaction that rewrote one of the files, or another delete that changed the
vector of one of the files it marks (or replaced an index file holding one of their vectors),
fails with `CommitConflictError` and changes nothing, as Paimon 1.x's commit does
(`append_vectors.check_vector_targets` and `index_commit.next_index_manifest`): marks are never
put on a file that is gone, nor lost. Deletes of other files of the partition land side by side.
A failed delete may be run again as it is: it re-reads the vectors.

A fixed-bucket append table (``bucket = N``) keeps each bucket's vectors in one index file
(Paimon's ``BucketedAppendDeletionFileMaintainer``): a delete replaces the file of every bucket it
marks rows in, so it conflicts with any other change of that bucket's vectors since it read them
(two deletes of one bucket, or a delete and a compaction rewriting a file with a vector there);
deletes of other buckets land side by side.

Refused: primary-key tables (a delete there is a row of kind ``-D`` written with the table's
writer), append tables without vectors (Paimon's Spark rewrites their touched files; lake_assets
does not: enable ``deletion-vectors.enabled`` or rewrite with an overwrite).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from lake_assets.errors import InvalidArgumentError, UnsupportedFeatureError
from lake_assets.ops import deletion_vectors
from lake_assets.ops.append_vectors import change_vectors
from lake_assets.ops.commit import TableCommitter
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.ops.deletion_vectors import VectorLoader
from lake_assets.ops.fallback_read import FALLBACK_BRANCH, fallback_branch
from lake_assets.ops.plan import plan_splits
from lake_assets.ops.read import SplitReader
from lake_assets.ops.scan import Split
from lake_assets.predicate import Predicate
from lake_assets.spec.deletion_vector import DeletionVector, add_positions, new_vector
from lake_assets.table_support import Op

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore


@dataclass(frozen=True)
class DeleteResult:
    """What a delete did: its snapshot (None when no row matched), rows and files newly marked."""

    snapshot_id: int | None
    rows_deleted: int
    files_marked: int


def check_deletable(store: FileStore) -> None:
    """Raise `UnsupportedFeatureError` unless rows of the table can be deleted through vectors."""
    schema = store.schema
    where = f"Cannot delete rows of {store.name}"
    fallback = fallback_branch(schema)
    if fallback is not None:
        # the delete would mark its own rows only, while its reads still return the fallback's
        # matching rows of the partitions it lacks: a delete that seems to do nothing
        raise UnsupportedFeatureError(
            f"{where}: it carries {FALLBACK_BRANCH} = {fallback!r}, whose rows its reads return where it has "
            "no files; lake_assets does not delete rows of such a table")
    if schema.primary_keys:
        raise UnsupportedFeatureError(
            f"{where}: it has a primary key; write the rows to delete with row kind '-D' "
            "(a _ROW_KIND column through the table's writer) instead")
    if not deletion_vectors.enabled(schema):
        raise UnsupportedFeatureError(
            f"{where}: deleting rows of an append table needs deletion-vectors.enabled = true (Paimon's "
            "Spark DELETE rewrites the touched files of a table without vectors; lake_assets does not)")


def delete_rows(store: FileStore, filter: Any, *, commit_user: str | None = None) -> DeleteResult:
    """Mark every live row matching ``filter`` (the read filters' form; required: deleting every
    row is an overwrite with no rows) deleted and commit; see the module doc."""
    check_deletable(store)
    store.require(Op.WRITE)
    pred = Predicate.of(filter)
    if pred is None or not pred.clauses:
        raise InvalidArgumentError(
            f"Cannot delete rows of {store.name}: a filter is required (to delete every row, overwrite "
            "the table or drop its partitions)")
    pred = pred.bind(store.schema.arrow_schema, store.name)
    snap = store.snapshot_manager.latest()
    if snap is None:
        return DeleteResult(None, 0, 0)
    reader = SplitReader(store, store.schema)
    loader = VectorLoader(store)
    columns = sorted(pred.columns)
    messages: list[CommitMessage] = []
    written: list[str] = []
    rows = files = 0
    committer: TableCommitter | None = None
    try:
        for split in plan_splits(store, snap, pred, Op.READ):
            old = loader.vectors(split.dv_entries) if split.dv_entries else {}
            changed: dict[str, DeletionVector] = {}
            for meta in split.files:
                # every row in file order, no vector applied: positions count the marked rows too
                whole = Split(split.partition, split.partition_values, split.bucket, split.total_buckets, [meta])
                data = reader.read_file(whole, meta, False, columns)
                hits = np.flatnonzero(pred.mask(data).to_numpy(zero_copy_only=False))
                before = old.get(meta.file_name)
                vector = (new_vector(bitmap64=deletion_vectors.bitmap64(store.schema)) if before is None
                          else before.copy())  # an old vector keeps its form, as in Java
                add_positions(vector, hits.astype(np.int64), meta.file_name)
                gained = len(vector) - (len(before) if before is not None else 0)
                if gained:
                    vector.run_optimize()
                    changed[meta.file_name] = vector
                    rows += gained
                    files += 1
            if changed:
                index_before, index_after, paths = change_vectors(store, split, changed=changed, loader=loader)
                written += paths
                messages.append(CommitMessage(split.partition, split.bucket, split.total_buckets,
                                              index_before=index_before, index_after=index_after))
        if not messages:
            return DeleteResult(None, 0, 0)
        store.fault_point("delete.before_commit")
        committer = TableCommitter(store, commit_user or f"delete-{uuid.uuid4()}")
        ids = committer.commit(messages, check_committed=False)
    except BaseException:
        # the new index files go unless a snapshot referencing them may have landed
        if committer is None or not committer.may_have_landed:
            store.file_io.delete_many(written)
        raise
    return DeleteResult(ids[-1] if ids else None, rows, files)


__all__ = ["DeleteResult", "check_deletable", "delete_rows"]
