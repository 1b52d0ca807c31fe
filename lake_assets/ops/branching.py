"""Creating and deleting a table's branches, with the files Paimon 0.9's ``BranchManager`` writes.

``createBranch(name)`` copies the latest schema file into ``branch/branch-<name>/schema/``;
``createBranch(name, tag)`` copies the tag's file, its snapshot's file and that snapshot's schema
file, so the branch starts on the tag's manifests and data files. ``deleteBranch`` deletes the
branch's directory (lake_assets its schema files last, see `delete_branch`): its own snapshots'
files become orphans (`remove_orphan_files` of the main branch collects them); nothing else names
them, since main never reads a branch's metadata. A create or delete cut short by a crash is
finished by running it again.

A branch made from a tag races the tag's deletion: the branch's files are copied first (schema
first, so that maintenance never sees a branch without one), then the tag is read again. Tag
deletion deletes the tag's file before it looks (again) at what every branch holds, so either this
second read misses the tag - the branch is removed again and nothing is left - or the deletion's
look sees the branch and keeps its files.
"""

from __future__ import annotations

import posixpath

from lake_assets.catalog_names import check_name
from lake_assets.errors import (
    AlreadyExistsError,
    CorruptMetadataError,
    InvalidArgumentError,
    NoSuchTableError,
    SnapshotNotFoundError,
)
from lake_assets.spec.snapshot import Snapshot, Tag
from lake_assets.store.branch_table import MAIN_BRANCH
from lake_assets.store.branches import BRANCH_DIR, BRANCH_PREFIX, branch_names
from lake_assets.store.file_store import FileStore
from lake_assets.store.read_once import reads_once
from lake_assets.store.snapshot_identity import same_snapshot


def _branch_root(store: FileStore, name: str, what: str) -> str:
    check_name(name, f"branch of {store.name}")
    if name == MAIN_BRANCH or name.isdigit():
        raise InvalidArgumentError(f"Cannot {what} branch {name!r} of {store.name}: a branch cannot be "
                                   f"{'the main branch' if name == MAIN_BRANCH else 'a number'} (as in Paimon)")
    return posixpath.join(store.paths.root, BRANCH_DIR, BRANCH_PREFIX + name)


@reads_once
def create_branch(store: FileStore, name: str, tag: str | None = None) -> None:
    """Create branch ``name``: empty (the latest schema), or from main's tag ``tag``. A branch a
    crashed create left part way (some of these files, nothing else) is finished."""
    root = _branch_root(store, name, "create")
    if tag is None:
        schema_path = store.paths.schema_file(store.load_latest_schema().id)
        target = posixpath.join(root, "schema", posixpath.basename(schema_path))
        _refuse_existing(store, name, root, [(schema_path, target)])
        _copy_new(store, name, schema_path, target)
        return
    tags = store.tag_manager()
    # The tag's and its snapshot's files are read once, checked, and those bytes copied: one read
    # of each (as a copy reading them again would) and the copy is what was checked. The schema
    # file is read to be copied only; the tag is read again after the copies (the race above).
    tag_path = store.paths.tag_file(tag)
    tag_data = _read_or_none(store, tag_path)
    if tag_data is None:
        raise SnapshotNotFoundError(f"Table {store.name} has no tag {tag!r}")
    snap = Tag.from_json(tag, tag_data).snapshot
    snap_path = store.paths.snapshot_file(snap.id)
    snap_data = _read_or_none(store, snap_path)
    current = None if snap_data is None else Snapshot.from_json(snap_data, f"snapshot-{snap.id} of {store.name}")
    if current is not None and current.id != snap.id:
        raise CorruptMetadataError(f"File snapshot-{snap.id} of {store.name} holds snapshot id {current.id}")
    if current is None or not same_snapshot(current, snap):
        # Java 0.9 copies the snapshot file of the tag's id: an expired one fails there too
        raise SnapshotNotFoundError(
            f"Cannot create branch {name!r} of {store.name} from tag {tag!r}: its snapshot {snap.id} is no "
            "longer retained by the main branch (Paimon 0.9 copies that snapshot's file); nothing was created")
    copies = [(source, posixpath.join(root, directory, posixpath.basename(source)), data)
              for source, directory, data in [(store.paths.schema_file(snap.schema_id), "schema", None),
                                              (snap_path, "snapshot", snap_data), (tag_path, "tag", tag_data)]]
    _refuse_existing(store, name, root, [(source, target) for source, target, _ in copies])
    created: list[str] = []
    try:
        for source, target, data in copies:
            if _copy_new(store, name, source, target, data):
                created.append(target)
        again = tags.try_get(tag)
        if again is None or not same_snapshot(again.snapshot, snap):
            raise SnapshotNotFoundError(f"Cannot create branch {name!r} of {store.name}: tag {tag!r} was deleted "
                                        "or replaced while the branch was created; nothing was created")
    except BaseException:
        # only what this call created (exclusive creates): a racing creator's files stay
        store.file_io.delete_many(list(reversed(created)))
        for d in ("schema", "snapshot", "tag", ""):  # an empty branch directory would stop maintenance
            store.file_io.delete_dir_if_empty(posixpath.join(root, d).rstrip("/"))
        raise


def _refuse_existing(store: FileStore, name: str, root: str, copies: list[tuple[str, str]]) -> None:
    """`AlreadyExistsError` when branch ``name`` exists, unless a create of these ``copies``
    (source, target) was cut short there: its files are some of the targets, each holding its
    source's bytes (a crash part way leaves them; running the create again finishes it)."""
    fio = store.file_io
    if not fio.exists(root):
        return
    targets = dict((target, source) for source, target in copies)
    # a put cut short leaves its hidden temporary file (".<name>.<uuid>.tmp"), never a file it names
    held = [st.path for st in fio.walk_files(root) if not posixpath.basename(st.path).startswith(".")]
    if len(held) < len(copies) and all(p in targets and _same_bytes(store, targets[p], p) for p in held):
        return
    raise AlreadyExistsError(f"Cannot create branch {name!r} of {store.name}: it already exists")


def _same_bytes(store: FileStore, source: str, target: str) -> bool:
    try:
        return store.file_io.read_bytes(source) == store.file_io.read_bytes(target)
    except FileNotFoundError:
        return False


def _read_or_none(store: FileStore, path: str) -> bytes | None:
    try:
        return store.file_io.read_bytes(path)
    except FileNotFoundError:
        return None


def _copy_new(store: FileStore, name: str, source: str, target: str, data: bytes | None = None) -> bool:
    """Create ``target`` with ``data`` (None: ``source``'s bytes, read now); True if this call
    created it, False if it held these bytes already (a create cut short, or a racing create of
    the same branch)."""
    if data is None:
        data = _read_or_none(store, source)
    if data is None:
        raise SnapshotNotFoundError(f"Cannot create branch {name!r} of {store.name}: {source} is gone; "
                                    "nothing was created")
    if store.file_io.try_create(target, data):
        return True
    try:
        if store.file_io.read_bytes(target) == data:
            return False
    except FileNotFoundError:
        pass
    raise AlreadyExistsError(f"Cannot create branch {name!r} of {store.name}: another writer is creating it")


def delete_branch(store: FileStore, name: str) -> None:
    """Delete branch ``name``'s directory (as Paimon's ``deleteBranch``); a symlinked branch
    directory is refused: what deletes here never goes through a link."""
    root = _branch_root(store, name, "delete")
    if name not in branch_names(store.file_io, store.paths.root):
        raise NoSuchTableError(f"Cannot delete branch {name!r} of {store.name}: it does not exist")
    if name not in branch_names(store.file_io, store.paths.root, links=False):
        raise InvalidArgumentError(f"Cannot delete branch {name!r} of {store.name}: its directory is a symlink; "
                                   "nothing was deleted")
    store.paths.ensure_inside([root])
    fio = store.file_io
    # The schema files go last: a delete cut short leaves a branch that still has its schema (the
    # files it no longer lists are orphans), never one whose references cannot be told, which
    # would stop the table's maintenance; running the delete again finishes it.
    schema_dir = posixpath.join(root, "schema")
    fio.delete_many([st.path for st in fio.walk_files(root) if posixpath.dirname(st.path) != schema_dir])
    for entry in fio.list_status(root):
        if entry.path != schema_dir:
            fio.delete_tree(entry.path)
    fio.delete_tree(root)


__all__ = ["create_branch", "delete_branch"]
