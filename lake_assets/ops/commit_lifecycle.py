"""What runs after a commit landed: Paimon's commit-time lifecycle (automatic tags, tag expiry and
partition expiry), as its TableCommitImpl runs it after each snapshot.

Whose commits run it is Paimon's rule (``AbstractFileStoreTable.newCommit``, 0.9 to HEAD): the
committer of a ``write-only`` table gets no tag manager and no partition expiry (nor snapshot
expiry), so a write-only table's writers run none of it; Paimon's dedicated compaction (Flink's
compact action, Spark's compact procedure, the postpone compaction) commits through a copy of the
table with ``write-only = false``, so its commits do. lake_assets' compaction (`compact()`, the
Spark compact jobs, Dagster's compaction asset) commits the same way (`TableCommitter`'s
``write_only=False``)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore

# The committer's logger: its warnings keep the name they had before this module was split off.
log = logging.getLogger("lake_assets.ops.commit")


def after_commit(store: FileStore, snapshot_id: int, *, write_only: bool) -> None:
    """Commit-time lifecycle, as Paimon's TableCommitImpl runs it: automatic tags, expiry of tags
    past their own retention and (every ``partition.expiration-check-interval``) partition expiry.
    ``write_only``: the committer's view of the table's ``write-only`` (the table's option, or False
    for a dedicated compaction); such a committer runs none of it, as Paimon's.
    The commit has landed: a failure here is logged, never reported as a failed commit (the caller
    would redo landed work)."""
    if write_only:
        return
    opts = store.schema.core_options
    tags_off = str(opts.get("tag.automatic-creation", "none")).strip().lower() == "none"
    from lake_assets.ops.tag_retention import expire_tags_if_due

    try:
        if tags_off and "tag.default-time-retained" not in opts.raw and "partition.expiration-time" not in opts.raw:
            # Paimon's committer runs TagTimeExpire at every commit, options or not (0.9 to HEAD): a
            # tag made with its own retention (Java's create_tag procedure, pypaimon's
            # create_tag(time_retained=...), Table.create_tag's) expires then. One listing, and a
            # read of each tag new or changed since this process last read it. A branch's commit
            # leaves tags alone: Paimon's expires main's tags then (its tag manager is main's),
            # which a branch's writer should not touch.
            if store.paths.branch is None:
                expire_tags_if_due(store)
            return
        from lake_assets.ops.partition_expire import expire_partitions_after_commit
        from lake_assets.ops.tag_auto import run_tag_automation

        snap = store.snapshot_manager.try_snapshot(snapshot_id)
        if snap is not None:
            run_tag_automation(store, snap)
        expire_partitions_after_commit(store)
    except Exception as exc:  # storage errors too: the commit stands, the next commit tries again
        log.warning("Commit %s of %s landed; its lifecycle step failed: %s", snapshot_id, store.name, exc)
