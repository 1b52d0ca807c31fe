"""What runs after a commit landed: Paimon's commit-time lifecycle (automatic tags, tag expiry and
partition expiry), as its TableCommitImpl runs it after each snapshot."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore

# The committer's logger: its warnings keep the name they had before this module was split off.
log = logging.getLogger("lake_assets.ops.commit")


def after_commit(store: FileStore, snapshot_id: int) -> None:
    """Commit-time lifecycle, as Paimon's TableCommitImpl runs it: automatic tags, tag expiry and
    (every ``partition.expiration-check-interval``) partition expiry. The commit has landed: a
    failure here is logged, never reported as a failed commit (the caller would redo landed work)."""
    opts = store.schema.core_options
    tags_off = str(opts.get("tag.automatic-creation", "none")).strip().lower() == "none"
    if tags_off and "tag.default-time-retained" not in opts.raw and "partition.expiration-time" not in opts.raw:
        return  # the common case: nothing to do, no listing
    from lake_assets.ops.partition_expire import expire_partitions_after_commit
    from lake_assets.ops.tag_auto import run_tag_automation

    try:
        snap = store.snapshot_manager.try_snapshot(snapshot_id)
        if snap is not None:
            run_tag_automation(store, snap)
        expire_partitions_after_commit(store)
    except Exception as exc:  # storage errors too: the commit stands, the next commit tries again
        log.warning("Commit %s of %s landed; its lifecycle step failed: %s", snapshot_id, store.name, exc)
