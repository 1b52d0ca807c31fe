"""Where orphan removal looks: the directories Paimon's own orphan clean lists, and nothing else.

Paimon (1.0 to HEAD, docs/format.md §9.4) lists, per table:

- ``snapshot/`` and ``changelog/``, the table's and every branch's (``branch/branch-<name>/``): every
  file (not directory) that is not a ``snapshot-<id>`` / ``changelog-<id>`` file nor an ``EARLIEST`` /
  ``LATEST`` hint is removed when old enough (``OrphanFilesClean.cleanBranchSnapshotDir``);
  lake_assets also keeps the twins of its expiry markers there (``EXPIRING-<uuid>``,
  `lake_assets.store.snapshot_manager`), which guard older lake_assets' tagging (Paimon's clean
  deletes them: the markers themselves live in ``expiring/``);
- ``manifest/``, ``index/`` and ``statistics/``: the files directly inside;
- the data directories: partition levels (directories whose name contains ``=``, as many levels as
  the table has partition keys) down to the ``bucket-*`` directories (``bucket-postpone`` too), and
  the files directly inside those; a partition directory without a bucket directory is listed itself
  (HEAD, ``listFileDirs``), below ``data-file.path-directory`` when the table sets it (HEAD's
  ``dataFilePath()``). Anything else in the table directory - a Flink ``_SUCCESS`` mark-done
  file in a partition directory, a README at the root, another tool's directory - is never looked at.

``schema/``, ``tag/``, ``consumer/`` (a branch's too) and lake_assets' ``expiring/`` are never listed by Paimon;
lake_assets collects only the temporary files of crashed atomic writes there
(``.<name>.<uuid>.tmp``), which no reader ever opens.
Listings leave symlinks out (`FileIO.list_without_links`): a link is never followed nor deleted.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lake_assets.store.branches import BRANCH_DIR, BRANCH_PREFIX, branch_names
from lake_assets.store.snapshot_manager import MARKER_DIR

if TYPE_CHECKING:
    from lake_assets.io.file_io import FileIO, FileStatus
    from lake_assets.store.file_store import FileStore

BUCKET_DIR_PREFIX = "bucket-"
_HINTS = ("EARLIEST", "LATEST")
_EXPIRY_MARKER_PREFIX = "EXPIRING-"  # lake_assets' expiry handshake (store/snapshot_manager.py)


@dataclass
class OrphanScope:
    """What one listing of a table found: the files orphan removal may delete (if nothing
    references them), the data directories they sit in, and the listed directories that are empty."""

    files: list[FileStatus] = field(default_factory=list)
    bucket_dirs: set[str] = field(default_factory=set)
    empty_dirs: list[FileStatus] = field(default_factory=list)


def is_temp_file(name: str) -> bool:
    """A temporary file of an atomic write (``.snapshot-3.<uuid>.tmp``): garbage once its writer died."""
    return name.startswith(".") and name.endswith(".tmp")


def _is_metadata_file(name: str, prefix: str) -> bool:
    """Files of ``snapshot/`` / ``changelog/`` Paimon's clean keeps (and lake_assets' expiry markers)."""
    return name.startswith(prefix) or name in _HINTS or name.startswith(_EXPIRY_MARKER_PREFIX)


def _candidate(name: str, keep: str | None, temp_only: bool) -> bool:
    """Whether a file of a listed metadata directory may be an orphan: with ``temp_only`` only a
    crashed atomic write's temporary file, with ``keep`` anything but Paimon's own files."""
    if temp_only and not is_temp_file(name):
        return False
    return keep is None or not _is_metadata_file(name, keep)


def list_scope(store: FileStore, given: Mapping[str, list[FileStatus]] | None = None) -> OrphanScope:
    """List the files and directories of ``store``'s table that orphan removal considers (see the
    module docstring); no reference or age is checked here. ``given``: directories of the table
    (by name: ``snapshot``) that the caller listed already, links left out, not listed again."""
    given = given or {}
    fio = store.file_io
    paths = store.paths
    root = paths.root.rstrip("/")
    scope = OrphanScope()
    root_dirs = [st for st in fio.list_without_links(root) if st.is_dir]
    top = {posixpath.basename(st.path): st for st in root_dirs}

    def files_of(directory: str, keep: str | None = None, *, temp_only: bool = False) -> None:
        scope.files.extend(st for st in fio.list_without_links(directory)
                           if not st.is_dir and _candidate(posixpath.basename(st.path), keep, temp_only))

    def files_in(name: str, keep: str | None = None, *, temp_only: bool = False) -> None:
        """``files_of`` a directory of the table's root, from the caller's listing when it has one."""
        if name in given:
            scope.files.extend(st for st in given[name] if not st.is_dir and _candidate(
                posixpath.basename(st.path), keep, temp_only))
        elif name in top:
            files_of(top[name].path, keep, temp_only=temp_only)

    for name, prefix in (("snapshot", "snapshot-"), ("changelog", "changelog-")):
        files_in(name, prefix)
    # every branch's snapshot/ and changelog/ likewise (Paimon cleans them per branch)
    for branch in branch_names(fio, root, links=False) if BRANCH_DIR in top else ():
        branch_root = posixpath.join(root, BRANCH_DIR, BRANCH_PREFIX + branch)
        for name, prefix in (("snapshot", "snapshot-"), ("changelog", "changelog-")):
            files_of(posixpath.join(branch_root, name), prefix)
    for name in ("schema", "tag", "consumer", MARKER_DIR):
        files_in(name, temp_only=True)
    listed = [top[n] for n in ("manifest", "index", "statistics") if n in top]
    data_root = paths.data_root.rstrip("/")
    if data_root == root:
        listed += _data_dirs(fio, root, len(store.schema.partition_keys), root_dirs)
    elif fio.exists(data_root):  # data-file.path-directory: Paimon lists its dataFilePath()
        listed += _data_dirs(fio, data_root, len(store.schema.partition_keys))
    for d in listed:
        entries = fio.list_without_links(d.path)
        if not entries:
            scope.empty_dirs.append(d)
            continue
        if posixpath.basename(d.path).startswith(BUCKET_DIR_PREFIX):
            scope.bucket_dirs.add(d.path)
        scope.files.extend(st for st in entries if not st.is_dir)
    return scope


def _data_dirs(fio: FileIO, directory: str, levels: int, listed: list[FileStatus] | None = None) -> list[FileStatus]:
    """Paimon's ``listFileDirs``: the ``bucket-*`` directories below ``levels`` partition levels
    (directories whose name contains ``=``); a partition directory with none is returned itself.
    ``listed``: the subdirectories of ``directory`` when they were just listed (a LIST less)."""
    entries = listed if listed is not None else [st for st in fio.list_without_links(directory) if st.is_dir]
    if levels == 0:
        return [st for st in entries if posixpath.basename(st.path).startswith(BUCKET_DIR_PREFIX)]
    out: list[FileStatus] = []
    for st in entries:
        if "=" not in posixpath.basename(st.path):
            continue  # not a partition directory: another tool's, never looked into
        below = _data_dirs(fio, st.path, levels - 1)
        out.extend(below or [st])
    return out


__all__ = ["BUCKET_DIR_PREFIX", "OrphanScope", "is_temp_file", "list_scope"]
