"""`TableMaintenance`: the tag and maintenance verbs of a `Table` (tags, snapshot and partition
expiry, compaction, health, orphan removal, rollback), each checking its arguments and the table
before delegating to its operation in `lake_assets.ops`. `Table` inherits them.

Each verb imports its operation's modules in its first lines: a process that only reads and writes
(a Spark worker, a Dagster code location that loads tables) does not import compaction, expiry,
tags or orphan removal (issue 17 §3). The imports under ``TYPE_CHECKING`` are the return types'.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lake_assets import arguments as args
from lake_assets.errors import InvalidArgumentError, UnsupportedFeatureError
from lake_assets.spec.snapshot import Snapshot, Tag
from lake_assets.store.branch_table import MAIN_BRANCH
from lake_assets.table_store_view import StoreView
from lake_assets.table_support import Op

if TYPE_CHECKING:
    from lake_assets.ops.compact import CompactResult
    from lake_assets.ops.delete_rows import DeleteResult
    from lake_assets.ops.expire import ExpireResult
    from lake_assets.ops.orphans import OrphanResult
    from lake_assets.ops.partition_expire import PartitionExpireResult
    from lake_assets.ops.tag_deletion import TagDeletionResult


class TableMaintenance(StoreView):
    """Tags and maintenance of a table: the verbs that keep it tidy rather than read or write it."""

    # ------------------------------------------------------ tags, consumers
    def create_tag(self, name: str, snapshot_id: int | None = None, *, time_retained: timedelta | None = None) -> Tag:
        """Tag a snapshot (default: the latest). Tagged snapshots' files survive expiration.

        With ``time_retained`` the tag is deleted by the first commit after that time has passed
        (Paimon's tag expiry, which its committers and lake_assets' run at every commit).

        Raises `SnapshotNotFoundError` (and leaves no tag) when an expiration is removing, or has
        removed, the snapshot; `AlreadyExistsError` when another tag has the name.
        """
        from lake_assets.ops.plan import resolve_snapshot
        from lake_assets.ops.tagging import create_tag

        args.text("name", name, optional=False, empty=True)  # check_tag_name judges it
        args.integer("snapshot_id", snapshot_id, minimum=0)
        args.duration("time_retained", time_retained)
        self.store.require(Op.TAG)
        snap = resolve_snapshot(self.store, snapshot_id)
        return create_tag(self.store, name, snap, None if time_retained is None else time_retained.total_seconds())

    def delete_tag(self, name: str) -> TagDeletionResult:
        """Remove a tag and, as Paimon does, the files only it kept alive (its snapshot expired):
        data files, manifests, index files nothing retained references - no branch either (see
        `ops.tag_deletion`). The tag a branch was created from is refused (`InvalidArgumentError`)
        while no other tag holds its snapshot: Paimon's expiry keeps the branch's files through it."""
        from lake_assets.ops.tag_deletion import delete_tag

        args.text("name", name, optional=False, empty=True)  # check_tag_name judges it
        self.store.require(Op.TAG)
        return delete_tag(self.store, name)

    def tags(self) -> dict[str, Snapshot]:
        """Tag name → tagged snapshot."""
        return {n: t.snapshot for n, t in self.store.tag_manager().tags().items()}

    def branches(self) -> list[str]:
        """The names of the table's branches (Paimon's ``branch/branch-<name>``), sorted. Their
        snapshots name files in the table's directories: expiry, tag deletion and orphan removal
        keep every such file (`lake_assets.store.branches`)."""
        from lake_assets.store.branches import branch_names

        return branch_names(self.store.file_io, self.store.paths.root)

    def create_branch(self, name: str, tag: str | None = None) -> None:
        """Create branch ``name`` as Paimon 0.9's ``createBranch`` does: empty (the latest schema),
        or from the main branch's tag ``tag`` (its tag, snapshot and schema files copied), which then
        cannot be deleted while the branch needs it. Open it with ``catalog.get_table("db.t$branch_<name>")``."""
        from lake_assets.ops.branching import create_branch

        args.text("name", name, optional=False)
        args.text("tag", tag)
        self._require_main("create a branch of")
        create_branch(self.store, name, tag)

    def delete_branch(self, name: str) -> None:
        """Delete branch ``name`` (its directory, as Paimon's ``deleteBranch``); the data files only
        it named become orphans, which `remove_orphan_files` collects."""
        from lake_assets.ops.branching import delete_branch

        args.text("name", name, optional=False)
        self._require_main("delete a branch of")
        delete_branch(self.store, name)

    def fast_forward(self, branch: str) -> Snapshot:
        """Make the main branch branch ``branch``'s history from the branch's earliest snapshot on, as
        Paimon 0.9's ``fastForward``: main's snapshots, tags and schemas from there on are replaced by
        the branch's (copied; no data file is copied or deleted: main's discarded files become orphans
        for `remove_orphan_files`). Returns main's new latest snapshot. Stop main's writers first.

        Raises `InvalidArgumentError` (nothing changed) for a branch without snapshots, one whose
        history does not continue main's kept snapshots, a schema change main still reads with, or a
        replaced tag another branch was created from (`lake_assets.ops.fast_forward`)."""
        from lake_assets.ops.fast_forward import fast_forward

        args.text("branch", branch, optional=False)
        self._require_main("fast-forward")
        if branch == MAIN_BRANCH:
            raise InvalidArgumentError(f"Cannot fast-forward {self.name} to branch 'main': it is the main branch")
        self.store.require(Op.ROLLBACK)
        return fast_forward(self.store, branch)

    def _require_main(self, what: str) -> None:
        if self.store.paths.branch is not None:
            raise UnsupportedFeatureError(f"Cannot {what} {self.name}: it is a branch; branches are made from "
                                          "and kept by the main branch (open the table without $branch_)")

    # -------------------------------------------------------------- maintenance
    def expire_snapshots(
        self,
        *,
        retain_min: int | None = None,
        retain_max: int | None = None,
        older_than: datetime | timedelta | None = None,
        limit: int | None = None,
        dry_run: bool = False,
    ) -> ExpireResult:
        """Expire old snapshots per ``snapshot.num-retained.*``, ``snapshot.time-retained`` and
        ``snapshot.expire.limit`` (arguments override). Tags, live consumers and the latest snapshot
        are always kept.

        When ``changelog.num-retained.*`` / ``changelog.time-retained`` exceed the snapshot settings,
        expired snapshots leave long-lived changelogs that streams and `read_changes` still read;
        those expire here too, per the changelog settings."""
        from lake_assets.ops.expire import expire_snapshots
        from lake_assets.ops.plan import to_epoch_ms

        args.integer("retain_min", retain_min, minimum=1)  # the latest snapshot is never expired
        args.integer("retain_max", retain_max, minimum=1)
        args.age_or_time("older_than", older_than)
        args.flag("dry_run", dry_run)
        args.integer("limit", limit, minimum=1)
        # Both given: they contradict each other (one given bounds the other option, as before).
        if retain_min is not None and retain_max is not None and retain_max < retain_min:
            raise InvalidArgumentError(f"Cannot expire {self.name}: retain_max ({retain_max}) must not be less "
                                       f"than retain_min ({retain_min})")
        self.store.require_exists()
        older_ms = None
        if isinstance(older_than, timedelta):
            older_ms = int(time.time() * 1000) - int(older_than.total_seconds() * 1000)
        elif isinstance(older_than, datetime):
            older_ms = to_epoch_ms(older_than)
        return expire_snapshots(self.store, retain_min=retain_min, retain_max=retain_max, older_than_ms=older_ms,
                                limit=limit, dry_run=dry_run)

    def expire_partitions(
        self,
        expiration_time: timedelta | None = None,
        *,
        strategy: str | None = None,
        timestamp_pattern: str | None = None,
        timestamp_formatter: str | None = None,
        max_expires: int | None = None,
        dry_run: bool = False,
    ) -> PartitionExpireResult:
        """Drop partitions older than ``expiration_time`` (default: option ``partition.expiration-time``)
        in one OVERWRITE snapshot, per ``partition.expiration-strategy`` (values-time, update-time),
        ``partition.timestamp-pattern`` / ``-formatter`` and ``partition.expiration-max-num``
        (arguments override); see `lake_assets.ops.partition_expire`."""
        from lake_assets.ops.partition_expire import expire_partitions

        return expire_partitions(
            self.store, expiration_time=expiration_time, strategy=strategy, timestamp_pattern=timestamp_pattern,
            timestamp_formatter=timestamp_formatter, max_expires=max_expires, dry_run=dry_run,
        )

    def compact(
        self,
        *,
        full: bool = False,
        partitions: Sequence[dict[str, Any]] | None = None,
        max_units: int | None = None,
        parallelism: int | None = None,
        spill_dir: str | os.PathLike[str] | None = None,
    ) -> CompactResult:
        """Compact in this process: Paimon's universal compaction (or everything with ``full=True``)
        per (partition, bucket), committed as one COMPACT snapshot with conflict checks.

        Up to ``parallelism`` units run at once (default: option ``compaction.parallelism``).
        Units spill under ``spill_dir`` (default ``LAKE_ASSETS_SPILL_DIR``, in a Spark worker
        Spark's local dirs, else the system temp; `lake_assets.ops.spill.spill_root`).
        For distributed runs pass a unit runner to `lake_assets.ops.compact.compact` (``run_tasks``).
        """
        from lake_assets.ops.compact import compact

        args.flag("full", full)
        args.mappings("partitions", partitions)
        args.integer("max_units", max_units, minimum=1)
        args.integer("parallelism", parallelism, minimum=1)
        self.store.require_exists()
        return compact(self.store, full=full, partitions=partitions, max_units=max_units, parallelism=parallelism,
                       spill_dir=spill_dir)

    def delete_where(self, filter: Any) -> DeleteResult:
        """Delete the rows matching ``filter`` (the form `Table.to_arrow` takes, required) from an
        append table with ``deletion-vectors.enabled`` (``bucket = -1``, or ``N``: each bucket's
        vectors in one index file), as Paimon's Spark ``DELETE FROM`` does: their positions are
        marked in the files' deletion vectors, committed as one OVERWRITE snapshot; no data file is
        rewritten (compaction later drops the rows). Raises `CommitConflictError` (nothing
        committed) when a concurrent compaction rewrote a file or another delete changed the
        vectors meanwhile (of those files; with ``bucket = N``, of their buckets). Primary-key tables delete by
        writing rows of kind ``-D``; other tables are refused (`UnsupportedFeatureError`)."""
        from lake_assets.ops.delete_rows import delete_rows

        self.store.require_exists()
        return delete_rows(self.store, filter)

    def health(self, *, snapshot_id: int | None = None, small_file_threshold: int | None = None) -> pa.Table:
        """Per (partition, bucket) LSM health from manifests only (no data files are read)."""
        from lake_assets.ops.table_health import table_health

        args.integer("snapshot_id", snapshot_id, minimum=0)
        args.integer("small_file_threshold", small_file_threshold, minimum=0)
        self.store.require_exists()
        return table_health(self.store, snapshot_id=snapshot_id, small_file_threshold=small_file_threshold)

    def remove_orphan_files(
        self, *, older_than: timedelta = timedelta(days=1), dry_run: bool = True, allow_recent: bool = False
    ) -> OrphanResult:
        """List (and with ``dry_run=False`` delete) files no snapshot or tag references, older than the bound.

        Deleting with ``older_than`` below an hour (`lake_assets.ops.orphans.ORPHAN_AGE_FLOOR`) is
        refused unless ``allow_recent=True``: younger files may be a write's still in flight."""
        from lake_assets.ops.orphans import remove_orphan_files

        args.duration("older_than", older_than, optional=False)
        args.flag("dry_run", dry_run)
        args.flag("allow_recent", allow_recent)
        # it checks that the table still exists (with the listing of schema/ it looks in)
        return remove_orphan_files(self.store, older_than=older_than, dry_run=dry_run, allow_recent=allow_recent)

    def rollback_to_as_latest(self, *, snapshot_id: int | None = None, tag: str | None = None) -> Snapshot:
        """Commit a new latest snapshot whose files are those of an older snapshot (or a tag's),
        keeping every snapshot and tag, as Paimon HEAD's ``rollback_to_as_latest``: an OVERWRITE
        with the target's schema id and index manifest, ``nextRowId`` never moving back. A
        snapshot id is tagged ``rollback-to-as-latest-<id>-<uuid>`` first: that tag keeps the files
        the new snapshot re-adds from Paimon's expiry (lake_assets' keeps them without it); delete
        it only once the snapshots between the target and the rollback have expired if other
        engines expire the table (`lake_assets.ops.rollback_as_latest`).
        """
        from lake_assets.ops.rollback_as_latest import rollback_to_as_latest

        self._check_rollback_target("rollback_to_as_latest", snapshot_id, tag)
        return rollback_to_as_latest(self.store, snapshot_id=snapshot_id, tag=tag)

    def rollback_to(self, *, snapshot_id: int | None = None, tag: str | None = None) -> Snapshot:
        """Make a snapshot (or a tag's snapshot) the latest again. As Paimon's rollback, newer
        snapshots, long-lived changelogs and tags of newer snapshots are removed (the next commits
        reuse their ids); their files become unreferenced and are cleaned by `remove_orphan_files`.

        Raises `InvalidArgumentError` (nothing changed) for a tag of a history an earlier rollback
        discarded (left by an older lake_assets, which kept newer tags): it still reads; and when a
        newer tag it would delete is the tag a branch was created from.
        """
        from lake_assets.ops.tagging import rollback_to

        self._check_rollback_target("rollback_to", snapshot_id, tag)
        return rollback_to(self.store, snapshot_id=snapshot_id, tag=tag)

    def _check_rollback_target(self, operation: str, snapshot_id: int | None, tag: str | None) -> None:
        """A rollback's target: exactly one of a snapshot id and a tag name, on a table whose
        features allow rollback (nothing changes otherwise)."""
        args.integer("snapshot_id", snapshot_id, minimum=0)
        args.text("tag", tag, empty=True)
        if (snapshot_id is None) == (tag is None):
            raise InvalidArgumentError(f"{operation} needs exactly one of snapshot_id or tag")
        self.store.require(Op.ROLLBACK)
