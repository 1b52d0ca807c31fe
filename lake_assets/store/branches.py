"""A table's branches (``branch/branch-<name>/``, Paimon 0.9+), as maintenance of the main branch sees them.

A branch has its own ``schema/``, ``snapshot/``, ``tag/``, ``consumer/`` and ``changelog/``
directories below ``branch/branch-<name>/`` but no data, manifest, index or statistics directory of
its own: its snapshots name manifests in the table's ``manifest/`` and data files in the table's
partition and bucket directories (Paimon's ``BranchManager``; ``createBranch(name, tag)`` copies the
tag's snapshot and schema files into the branch, so the branch starts on the tag's manifests).
Expiry, tag deletion and orphan removal of the main branch therefore keep every file a branch's
snapshot, tag or long-lived changelog names (`holders`); this module only reads.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from lake_assets.errors import CorruptMetadataError, UnsupportedFeatureError
from lake_assets.paths import TablePaths
from lake_assets.spec.schema import TableSchema
from lake_assets.spec.snapshot import Snapshot
from lake_assets.store.changelog_manager import ChangelogManager
from lake_assets.store.snapshot_identity import same_snapshot
from lake_assets.store.snapshot_manager import SnapshotManager
from lake_assets.store.tags import TagManager

if TYPE_CHECKING:
    from lake_assets.io.file_io import FileIO

BRANCH_DIR = "branch"
BRANCH_PREFIX = "branch-"

HolderKind = Literal["snapshot", "tag", "changelog"]


@dataclass(frozen=True)
class Branch:
    """One branch of a table: its name and the metadata stores of its own directory."""

    table_name: str
    name: str
    paths: TablePaths  # rooted at branch/branch-<name>: only its metadata directories are used

    @property
    def label(self) -> str:
        """How messages name it (Paimon's identifier ``db.t$branch_<name>``)."""
        return f"{self.table_name}$branch_{self.name}"

    def snapshot_manager(self, file_io: FileIO) -> SnapshotManager:
        return SnapshotManager(file_io, self.paths, self.label)

    def tag_manager(self, file_io: FileIO) -> TagManager:
        return TagManager(file_io, self.paths, self.label)

    def changelog_manager(self, file_io: FileIO) -> ChangelogManager:
        return ChangelogManager(file_io, self.paths, self.label)


def branch_names(file_io: FileIO, root: str, *, links: bool = True) -> list[str]:
    """The names of the table's branches (directories ``branch/branch-<name>``), sorted.

    A symlinked branch directory counts (what it references is kept) unless ``links=False``: what
    deletes in a branch's own directories never goes through a link."""
    directory = posixpath.join(root, BRANCH_DIR)
    listed = file_io.list_status(directory) if links else file_io.list_without_links(directory)
    return sorted(posixpath.basename(st.path)[len(BRANCH_PREFIX):] for st in listed
                  if st.is_dir and posixpath.basename(st.path).startswith(BRANCH_PREFIX)
                  and len(posixpath.basename(st.path)) > len(BRANCH_PREFIX))


def branches(file_io: FileIO, root: str, table_name: str) -> list[Branch]:
    """The table's branches. A branch without a schema file raises `CorruptMetadataError`: what
    it holds cannot be trusted to be listed (Paimon's orphan clean aborts on such a branch too).
    A branch directory without a schema file that holds no snapshot, tag or changelog either is
    left out: it names no file (what a `create_branch` or `delete_branch` cut short by a crash
    leaves; running it again finishes it)."""
    out = []
    for name in branch_names(file_io, root):
        branch = Branch(table_name, name, TablePaths(posixpath.join(root, BRANCH_DIR, BRANCH_PREFIX + name)))
        if not any(n.startswith("schema-") for n in file_io.list_names(branch.paths.schema_dir)):
            if not _holds_any(file_io, branch):
                continue
            raise CorruptMetadataError(
                f"Branch {name!r} of {table_name} has no schema file ({branch.paths.schema_dir}): what it "
                "references cannot be told, so nothing was deleted; check the branch or delete it")
        _check_schemas(file_io, branch)
        out.append(branch)
    return out


def _check_schemas(file_io: FileIO, branch: Branch) -> None:
    """`CorruptMetadataError` naming ``branch`` when one of its schema files does not parse: its
    metadata is damaged (maintenance stops on it, as on an unreadable snapshot or tag)."""
    for file_name in file_io.list_names(branch.paths.schema_dir):
        if not file_name.startswith("schema-"):
            continue
        try:
            TableSchema.from_json(file_io.read_bytes(posixpath.join(branch.paths.schema_dir, file_name)), file_name)
        except (FileNotFoundError, UnsupportedFeatureError):
            continue  # deleted while listing (the branch's deletion), or readable with a type we refuse
        except CorruptMetadataError as exc:
            raise CorruptMetadataError(
                f"Branch {branch.name!r} of {branch.table_name}: schema file {file_name} cannot be read ({exc}); "
                "its metadata is damaged, so nothing was deleted; check the branch or delete it") from exc


def _holds_any(file_io: FileIO, branch: Branch) -> bool:
    """Whether ``branch``'s snapshot, tag or changelog directory lists any entry but a hidden
    temporary file (a put cut short) - listing follows links, as `branch_names` does."""
    dirs = (branch.paths.snapshot_dir, branch.paths.tag_dir, branch.paths.changelog_dir)
    return any(not n.startswith(".") for d in dirs for n in file_io.list_names(d))


@dataclass(frozen=True)
class BranchHolder:
    """A snapshot, tag or long-lived changelog of a branch: it names files in the table's directories."""

    snapshot: Snapshot
    kind: HolderKind
    branch: str

    @property
    def label(self) -> str:
        """How messages name it: ``snapshot 3 of branch 'b1'``."""
        return f"{self.kind} {self.snapshot.id} of branch {self.branch!r}"


def holders(file_io: FileIO, root: str, table_name: str) -> list[BranchHolder]:
    """Every snapshot, tag and long-lived changelog of every branch: what keeps files of the table
    besides the main branch's own. Snapshots that vanish while listing are skipped (a branch's
    own expiry); an entry that cannot be read raises `CorruptMetadataError`."""
    out: list[BranchHolder] = []
    for branch in branches(file_io, root, table_name):
        out += _holders_of(file_io, branch)
    return out


def main_holders(file_io: FileIO, root: str, table_name: str) -> list[BranchHolder]:
    """Every snapshot, tag and long-lived changelog of the main branch, as `holders` lists a
    branch's (``branch`` is ``"main"``): what maintenance of a branch keeps besides other branches'."""
    return _holders_of(file_io, Branch(table_name, "main", TablePaths(root)))


def _holders_of(file_io: FileIO, branch: Branch) -> list[BranchHolder]:
    sm = branch.snapshot_manager(file_io)
    out = [BranchHolder(s, "snapshot", branch.name) for s in sm.snapshots()]
    out += [BranchHolder(t.snapshot, "tag", branch.name) for t in branch.tag_manager(file_io).tags().values()]
    changelogs = branch.changelog_manager(file_io)
    out += [BranchHolder(c, "changelog", branch.name)
            for c in (changelogs.try_changelog(i) for i in changelogs.ids()) if c is not None]
    return out


def based_on(file_io: FileIO, root: str, table_name: str, snap: Snapshot) -> list[str]:
    """The branches created from ``snap`` (a main tag's snapshot): those holding a copy of it as a
    snapshot or tag, as Paimon's ``createBranch(name, tag)`` leaves them. Paimon's expiry of the main
    branch keeps their files only through a tag of ``snap`` (docs/format.md §9.5)."""
    out = []
    for branch in branches(file_io, root, table_name):
        records = [*branch.snapshot_manager(file_io).snapshots(),
                   *(t.snapshot for t in branch.tag_manager(file_io).tags().values())]
        if any(r.id == snap.id and same_snapshot(r, snap) for r in records):
            out.append(branch.name)
    return out


__all__ = ["BRANCH_DIR", "BRANCH_PREFIX", "Branch", "BranchHolder", "HolderKind", "based_on", "branch_names",
           "branches", "holders", "main_holders"]
