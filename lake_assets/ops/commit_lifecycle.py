"""What runs after a commit landed: Paimon's commit-time lifecycle (automatic tags, tag expiry,
partition expiry, consumer expiry, then snapshot and changelog expiry), as its TableCommitImpl runs
it after each commit (HEAD's order; 0.9 ran consumer and snapshot expiry first).

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
    past their own retention, (every ``partition.expiration-check-interval``) partition expiry, then
    consumer, snapshot and changelog expiry (`expire_after_commit`).
    ``write_only``: the committer's view of the table's ``write-only`` (the table's option, or False
    for a dedicated compaction); such a committer runs none of it, as Paimon's.
    The commit has landed: a failure here is logged, never reported as a failed commit (the caller
    would redo landed work)."""
    if write_only:
        return
    _tags_and_partitions(store, snapshot_id)
    expire_after_commit(store, snapshot_id)


def _tags_and_partitions(store: FileStore, snapshot_id: int) -> None:
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


def expire_after_commit(store: FileStore, latest_id: int) -> None:
    """Paimon's commit-time expiry: consumers past ``consumer.expiration-time``, then snapshots per
    ``snapshot.num-retained.*`` / ``snapshot.time-retained``, at most ``snapshot.expire.limit`` of
    them, then long-lived changelogs (`lake_assets.ops.expire.expire_snapshots`, which keeps what
    every retained snapshot, tag, branch, consumer and writer lease needs and re-checks).

    Always synchronous: Paimon's ``snapshot.expire.execution-mode = async`` only moves the same work
    to a background thread of a long-running (streaming) committer, and its batch commits run it
    inline; here the commit call returns when it is done. A failure is logged, never raised: the
    commit has landed (Paimon instead fails the committer's next commit with it)."""
    opts = store.schema.core_options
    try:
        if opts.consumer_expiration_ms is None and not opts.changelog_decoupled():
            # Nothing can expire while the table keeps at most ``snapshot.num-retained.min``
            # snapshots (Paimon's plan is empty then too): a young table pays no request, an older
            # one the EARLIEST hint's read (which expire_snapshots writes once it runs).
            retain_min = opts.snapshot_num_retained_min
            if latest_id <= retain_min:
                return
            earliest = store.snapshot_manager.earliest_id()
            if earliest is None or latest_id - earliest + 1 <= retain_min:
                return
        from lake_assets.ops.expire import expire_snapshots

        result = expire_snapshots(store)
        if result.expired_snapshots or result.expired_changelogs:
            log.info("Commit %s of %s expired snapshot(s) %s and changelog(s) %s", latest_id, store.name,
                     _ids(result.expired_snapshots), _ids(result.expired_changelogs))
    except Exception as exc:  # storage errors too: the commit stands, the next commit tries again
        log.warning("Commit %s of %s landed; expiring its old snapshots failed (the next commit, "
                    "expire_snapshots or the expiry asset retries): %s", latest_id, store.name, exc)


def _ids(ids: list[int]) -> str:
    return "none" if not ids else str(ids[0]) if len(ids) == 1 else f"{ids[0]}..{ids[-1]}"
