"""Fast-forwarding the main branch to a branch, as Paimon 0.9's ``BranchManager.fastForward``.

Java 0.9, with ``e`` the branch's earliest snapshot: deletes the main branch's snapshots from ``e``
on, its schemas from ``e``'s schema id on and its tags of snapshots from ``e`` on, then copies the
branch's ``snapshot/``, ``schema/`` and ``tag/`` directories over main's. No data file is copied
or deleted: the branch's snapshots already name files in the table's directories, and the files
only main's discarded snapshots named become orphans (`remove_orphan_files` collects them). The
branch stays. lake_assets leaves the same snapshot, schema and tag files, and differs where Java's
result misleads:

- main's ``EARLIEST`` hint names main's true earliest snapshot (Java copies the branch's, which
  hides main's older snapshots from every engine: none would ever expire them);
- main's long-lived changelogs from ``e`` on are deleted, as `rollback_to` deletes them: they
  describe the discarded history (Java leaves them to be streamed as the branch's changes).

It refuses, with `InvalidArgumentError` and nothing changed, what Java's result would break:

- a branch without snapshots (Java 0.9 fails with a NullPointerException);
- main keeps snapshots below ``e`` while its snapshot ``e`` is not the branch's (an empty branch,
  or one whose fork point expired), or while it has no snapshot ``e`` and its latest is not
  ``e - 1``: ids would join two unrelated histories (main without ``e`` right below it is what a
  fast-forward cut short leaves, and runs again);
- a main schema replaced by a different branch schema of the same id while a snapshot, tag or
  long-lived changelog main keeps reads with it;
- deleting or replacing a main tag another branch was created from (as `rollback_to`).

The order is `rollback_to`'s - main's newer tags, changelogs, then snapshots newest first - and
then the branch's schemas, snapshots (oldest first) and tags: a crash part way leaves main at an
older snapshot of its own or of the branch's history, and running the fast-forward again finishes
it. Like Java's, it does not coordinate with writers of the main branch: stop them first (a
commit that lands meanwhile on an id the branch needs is discarded, as a fast-forward a moment
later would discard it; one that lands again on the same id is discarded too and stops it with
`CommitConflictError`: run it again once main's writers are stopped).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from lake_assets.errors import CommitConflictError, InvalidArgumentError, NoSuchTableError
from lake_assets.spec.snapshot import Snapshot, Tag
from lake_assets.store.branches import Branch, branches
from lake_assets.store.snapshot_identity import same_snapshot

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore

__all__ = ["fast_forward"]

_SCHEMA_NAME = re.compile(r"schema-([0-9]+)")


def fast_forward(store: FileStore, name: str) -> Snapshot:
    """Make the main branch ``store`` the branch ``name``'s history from its earliest snapshot on
    (see the module doc); returns main's new latest snapshot."""
    branch = _branch(store, name)
    fio = store.file_io
    bsm = branch.snapshot_manager(fio)
    ids = bsm.snapshot_ids()
    if not ids:
        raise InvalidArgumentError(f"Cannot fast-forward {store.name} to branch {name!r}: the branch has no "
                                   "snapshot (Paimon 0.9 fails on it too); nothing was changed")
    first = bsm.snapshot(ids[0])
    sm = store.snapshot_manager
    main_ids = sm.snapshot_ids()
    kept_ids = [i for i in main_ids if i < first.id]
    mains_first = sm.try_snapshot(first.id)
    # main without snapshot e but with e-1: a fast-forward cut short after deleting main's (a re-run)
    if kept_ids and (kept_ids[-1] != first.id - 1 if mains_first is None else not same_snapshot(mains_first, first)):
        raise InvalidArgumentError(
            f"Cannot fast-forward {store.name} to branch {name!r}: the branch's earliest snapshot {first.id} is not "
            f"the main branch's, which keeps snapshots {kept_ids[0]}-{kept_ids[-1]} before it: the result would join "
            "two unrelated histories (the branch was created empty, or its snapshot from the tag it was created "
            "from expired); nothing was changed")
    branch_tags = branch.tag_manager(fio).tags()
    tags = store.tag_manager()
    main_tags = tags.tags()
    replaced = {n: t for n, t in main_tags.items() if (t.snapshot.id >= first.id or n in branch_tags)
                and not (n in branch_tags and same_snapshot(branch_tags[n].snapshot, t.snapshot))}
    _refuse_deleting_branch_bases(store, name, replaced)
    changelogs = store.changelog_manager()
    kept = [*(sm.snapshot(i) for i in kept_ids),
            *(t.snapshot for n, t in main_tags.items() if n not in replaced),
            *(c for c in (changelogs.try_changelog(i) for i in changelogs.ids() if i < first.id) if c is not None)]
    schema_copies, stale_schemas = _schemas(store, branch, name, first.schema_id, {s.schema_id for s in kept})
    # everything to copy is read (and its names checked) before anything changes
    snapshot_copies = [(sid, fio.read_bytes(branch.paths.snapshot_file(sid))) for sid in ids]
    tag_copies = [(store.paths.tag_file(n), fio.read_bytes(branch.paths.tag_file(n))) for n in branch_tags]

    # main's discarded history: tags, changelogs, then snapshots newest first (as rollback_to)
    for tag_name in replaced:
        tags.delete(tag_name)
    newer_changelogs = [cid for cid in changelogs.ids() if cid >= first.id]
    for cid in reversed(newer_changelogs):
        changelogs.delete(cid)
    if newer_changelogs:
        older = [cid for cid in changelogs.ids() if cid < first.id]
        changelogs.write_latest_hint(older[-1] if older else -1)  # -1: none left, as Java
    for sid in reversed([i for i in main_ids if i >= first.id]):
        fio.delete(store.paths.snapshot_file(sid))
        store.fault_point("fast_forward.after_snapshot_delete")
    for schema_id in reversed(stale_schemas):
        fio.delete(store.paths.schema_file(schema_id))
    # the branch's schemas, snapshots (oldest first) and tags
    for schema_id, data in schema_copies:
        fio.overwrite_atomic(store.paths.schema_file(schema_id), data)
    for sid, data in snapshot_copies:
        for attempt in range(2):
            target = store.paths.snapshot_file(sid)
            if fio.try_create(target, data) or fio.read_bytes(target) == data:
                break
            # a writer of main committed meanwhile: discarded, as a fast-forward a moment later would
            for newer in reversed([i for i in sm.snapshot_ids() if i >= sid]):
                fio.delete(store.paths.snapshot_file(newer))
            if attempt:
                raise CommitConflictError(
                    f"Cannot fast-forward {store.name} to branch {name!r}: writers of the main branch keep committing "
                    f"(snapshot {sid} again; their commits were discarded and main holds the branch's snapshots "
                    f"before {sid}). Stop main's writers and fast-forward again")
        store.fault_point("fast_forward.after_snapshot_copy")
    for path, data in tag_copies:
        fio.overwrite_atomic(path, data)
    sm.write_latest_hint(ids[-1])
    sm.write_earliest_hint(kept_ids[0] if kept_ids else ids[0])
    return sm.snapshot(ids[-1])


def _branch(store: FileStore, name: str) -> Branch:
    for branch in branches(store.file_io, store.paths.root, store.name):  # damaged branches raise
        if branch.name == name:
            return branch
    raise NoSuchTableError(f"Cannot fast-forward {store.name} to branch {name!r}: it does not exist")


def _schemas(store: FileStore, branch: Branch, name: str, first_schema: int,
             kept_schemas: set[int]) -> tuple[list[tuple[int, bytes]], list[int]]:
    """The branch's schema files to write into main (id, content) - those main lacks, and from
    ``first_schema`` on those that differ - and main's schema ids from ``first_schema`` on that the
    branch lacks (deleted, as Java's). `InvalidArgumentError` when either would change a schema
    main keeps reading with (``kept_schemas``), or a branch schema below ``first_schema`` differs."""
    fio = store.file_io
    main_ids = _schema_ids(store, store.paths.schema_dir)
    branch_ids = _schema_ids(store, branch.paths.schema_dir)
    copies = []
    for schema_id in branch_ids:
        data = fio.read_bytes(branch.paths.schema_file(schema_id))
        if schema_id in main_ids and fio.read_bytes(store.paths.schema_file(schema_id)) == data:
            continue
        if schema_id in main_ids and (schema_id < first_schema or schema_id in kept_schemas):
            raise InvalidArgumentError(
                f"Cannot fast-forward {store.name} to branch {name!r}: the branch's schema {schema_id} differs from "
                "the main branch's, which a snapshot or tag main keeps reads with; nothing was changed")
        copies.append((schema_id, data))
    stale = [i for i in main_ids if i >= first_schema and i not in branch_ids]
    if set(stale) & kept_schemas:
        raise InvalidArgumentError(
            f"Cannot fast-forward {store.name} to branch {name!r}: it would delete the main branch's schema "
            f"{min(set(stale) & kept_schemas)}, which a snapshot or tag main keeps reads with; nothing was changed")
    return copies, stale


def _schema_ids(store: FileStore, directory: str) -> list[int]:
    return sorted(int(m.group(1)) for n in store.file_io.list_names(directory) if (m := _SCHEMA_NAME.fullmatch(n)))


def _refuse_deleting_branch_bases(store: FileStore, name: str, replaced: dict[str, Tag]) -> None:
    for tag_name, tag in replaced.items():
        based = [b for b in store.branches_based_on(tag.snapshot) if b != name]
        if based:
            raise InvalidArgumentError(
                f"Cannot fast-forward {store.name} to branch {name!r}: it deletes or replaces the main branch's tag "
                f"{tag_name!r} (snapshot {tag.snapshot.id}), and branch {', '.join(repr(b) for b in based)} was "
                "created from it; Paimon's expiry of the main branch keeps a branch's files only through that tag. "
                "Delete that branch first; nothing was changed")
