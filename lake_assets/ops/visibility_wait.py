"""``visibility-callback.enabled``: after a batch commit, wait until another job's compaction has
made the committed rows visible (Paimon HEAD's ``VisibilityWaitCallback``).

Readers do not see every file a write adds: a postpone-bucket table's ``bucket-postpone`` files
wait for the postpone compaction, and a primary-key table with deletion vectors reads no level-0
file (its rows are visible once a compaction has moved them up and written the vectors of the
rows they replace). With the option on, Paimon's committer calls this wait after a batch commit
(``BatchWriteBuilder.COMMIT_IDENTIFIER``; streaming and bounded-stream checkpoints with another
identifier never wait) of a primary-key table in postpone bucket mode or with deletion vectors
(``AbstractFileStore.shouldWaitForVisibility``; its third case, row-tracking tables waiting for
global indexes to cover the new row ids, never waits here: a table with global index files is
refused by their index types, and without them Java's wait returns at once). It tracks the
commit's ADD entries in ``bucket-postpone`` or, with deletion vectors, at level 0, and returns
once a snapshot newer than the commit no longer lists any of them, checking every
``visibility-callback.check-interval`` until ``visibility-callback.timeout``, after which it
throws.

Here, as there, the wait runs after the commit landed (`lake_assets.ops.commit.TableCommitter`
calls it last, after the commit-time lifecycle): a timeout raises `CommitNotVisibleError`, which
says the snapshot(s) landed. Differences, where ours is the cheaper or the more exact reading:

* Paimon calls its callback once per snapshot, so a batch commit whose writer compacted inline
  (an APPEND then a COMPACT snapshot) waits after the APPEND for files its own COMPACT is about
  to remove. Here the whole commit is one step: files its own compaction removed or upgraded
  are not tracked, and a commit that leaves nothing invisible returns at once.
* Paimon reads every file of the tracked partitions of the latest snapshot at each check. Here a
  check reads the delta manifests of the snapshots committed since the last check (a file leaves
  the latest snapshot only through a DELETE entry in some delta); only when one of those
  snapshots has expired meanwhile does it read the latest snapshot's files, as Paimon does.
* Only entries the commit adds as new data count (``CommitMessage.new_files``): a compaction's
  outputs are not waited for (a compaction job would otherwise wait for itself).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from lake_assets.errors import CommitNotVisibleError, CorruptMetadataError
from lake_assets.spec.manifest import EntryIdentifier, FileKind, ManifestEntry
from lake_assets.spec.snapshot import BATCH_COMMIT_IDENTIFIER
from lake_assets.table_support import POSTPONE_BUCKET

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore

log = logging.getLogger(__name__)


def table_waits_for_visibility(store: FileStore) -> bool:
    """Whether batch writers of ``store`` wait for a compaction after their commits
    (``visibility-callback.enabled`` on a primary-key table in postpone bucket mode or with
    deletion vectors; Paimon's ``shouldWaitForVisibility``)."""
    opts = store.schema.core_options
    if not opts.visibility_callback_enabled or not store.schema.primary_keys:
        return False
    return opts.bucket == POSTPONE_BUCKET or deletion_vectors_enabled(store)


def waits_for_visibility(store: FileStore, commit_identifier: int) -> bool:
    """Whether a commit with ``commit_identifier`` to ``store`` waits: a batch commit of a table
    whose writers wait (`table_waits_for_visibility`)."""
    return commit_identifier == BATCH_COMMIT_IDENTIFIER and table_waits_for_visibility(store)


def deletion_vectors_enabled(store: FileStore) -> bool:
    """Whether the table carries ``deletion-vectors.enabled = true`` (its level-0 files are invisible)."""
    return str(store.schema.options.get("deletion-vectors.enabled", "false")).strip().lower() == "true"


def invisible_entries(
    store: FileStore, added: Sequence[ManifestEntry], removed: Sequence[ManifestEntry]
) -> set[EntryIdentifier]:
    """The identities of ``added`` entries that readers do not see yet (``bucket-postpone``, or with
    deletion vectors level 0; Paimon's ``shouldBeTracked``) and that ``removed`` (the same
    commit's compaction) does not already delete."""
    dv = deletion_vectors_enabled(store)
    tracked = {e.identifier() for e in added
               if e.kind is FileKind.ADD and (e.bucket == POSTPONE_BUCKET or (dv and e.file.level == 0))}
    return tracked - {e.identifier() for e in removed if e.kind is FileKind.DELETE}


def wait_for_visibility(
    store: FileStore,
    snapshot_ids: Sequence[int],
    pending: set[EntryIdentifier],
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Wait until no snapshot after ``snapshot_ids[-1]`` lists any of ``pending``; returns the id
    of the snapshot in which they were all gone (``snapshot_ids[-1]`` when nothing is pending).

    Raises `CommitNotVisibleError` after ``visibility-callback.timeout``: the commit's snapshots
    landed, some of its rows are still invisible. ``pending`` is not modified."""
    if not snapshot_ids:
        raise ValueError("wait_for_visibility needs the landed snapshot ids")
    checked = snapshot_ids[-1]
    if not pending:
        return checked
    opts = store.schema.core_options
    timeout_s = opts.visibility_callback_timeout_ms / 1000
    interval_s = max(opts.visibility_callback_check_interval_ms, 1) / 1000
    left = set(pending)
    deadline = time.monotonic() + timeout_s
    while True:
        latest = store.snapshot_manager.latest_id()
        if latest is not None and latest > checked:
            left, checked = _still_listed(store, left, checked, latest)
            if not left:
                return checked
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        log.info("Waiting for visibility of %s: %d file(s) of snapshot %s not compacted yet (checked up to %s)",
                 store.name, len(left), snapshot_ids[-1], checked)
        sleep(min(interval_s, remaining))
    raise CommitNotVisibleError(
        f"Commit to {store.name} landed as snapshot {', '.join(map(str, snapshot_ids))}, but "
        f"{len(left)} of its {len(pending)} file(s) written to bucket-postpone"
        f"{' or level 0' if deletion_vectors_enabled(store) else ''} were still not compacted after "
        f"visibility-callback.timeout ({timeout_s:g} s; checked up to snapshot {checked}): its rows are not "
        "visible to readers yet. Do not write them again; run the table's compaction.",
        table=store.name, snapshot_ids=tuple(snapshot_ids), pending=len(left),
    )


def _still_listed(
    store: FileStore, left: set[EntryIdentifier], after: int, latest: int
) -> tuple[set[EntryIdentifier], int]:
    """Which of ``left`` the latest snapshot still lists, and that snapshot's id: from the deltas of
    ``after+1 .. latest`` (a file leaves the table only through a DELETE in some delta), or, when
    one of them expired or its manifests vanished meanwhile, from the files of the latest snapshot
    itself (as Paimon checks every time). ``after`` again when even that snapshot vanished."""
    scan = store.file_store_scan()
    out = set(left)
    try:
        for sid in range(after + 1, latest + 1):
            snap = store.snapshot_manager.try_snapshot(sid)
            if snap is None:
                raise FileNotFoundError(f"snapshot {sid} expired")
            out -= {e.identifier() for e in scan.delta_entries(snap) if e.kind is FileKind.DELETE}
            if not out:
                return out, sid
        return out, latest
    except (FileNotFoundError, CorruptMetadataError) as exc:
        log.info("Visibility check of %s reads the latest snapshot in full (%s)", store.name, exc)
    newest = store.snapshot_manager.latest_id()
    snap = None if newest is None else store.snapshot_manager.try_snapshot(newest)
    if newest is None or snap is None:
        return left, after  # expired as we looked: the next check starts again from ``after``
    partitions = {i.partition for i in left}
    try:
        live = {e.identifier() for e in scan.live_entries(snap) if e.partition in partitions}
    except (FileNotFoundError, CorruptMetadataError) as exc:
        log.info("Visibility check of %s: snapshot %s vanished while read (%s)", store.name, newest, exc)
        return left, after
    return left & live, newest
