"""A branch opened as a table (``db.t$branch_<name>``): what it may do, and how its identifier reads.

A branch handle is a `FileStore` whose `TablePaths` carry the branch: its schema, snapshot, tag,
consumer and changelog directories are ``branch/branch-<name>/...``, its data, manifests and index
files the table's (Paimon 0.9's ``FileStoreTable.switchToBranch``). Reads, streams, change reads,
time travel to its own tags, creating its tags and expiring its snapshots work on it (the expiry
keeps every file the main branch or another branch names: `lake_assets.ops.expire_files`).

Writes and compaction of fixed-bucket, dynamic-bucket, unaware-bucket and postpone-bucket tables,
with or without deletion vectors, commit to the branch as 0.9's branch writer does (`FileStoreCommitImpl` over the
branch's `SnapshotManager`): snapshots in the branch's ``snapshot/``, data files, manifests and index
files (hash indexes, deletion vectors: named by the branch's own index manifests) in the table's
directories, conflicts checked against the branch's own snapshots (main never deletes a file its own
history no longer names before its expiry, which keeps every file a branch names). What a branch's
commit would do besides is refused where Java 0.9 does it wrongly or we have not checked it
(`refuse_branch_write`): automatic tags and tag expiry (Paimon 0.9 to 1.x put them in, and expire,
the main branch's ``tag/``) and Spark's writes. Commit-time partition expiry drops the branch's own
partitions, as Java 0.9's committer of a branch does. Row deletes (`delete_where`) commit to
the branch like its writes. Rollback deletes the branch's own newer snapshots, tags and changelogs
(no data file: `remove_orphan_files` of the main branch collects them); tag deletion spares what the
main branch and every other branch name; schema changes write the branch's own ``schema/`` (Java
0.9's ``SchemaManager`` of the branch). Orphan removal of a branch is refused (`refuse_on_branch`):
it is a whole-table operation, run on the main branch.
"""

from __future__ import annotations

from collections.abc import Mapping

from lake_assets.catalog_names import check_name
from lake_assets.errors import InvalidIdentifierError, UnsupportedFeatureError
from lake_assets.refusal import Op
from lake_assets.refusal_actions import ACTION_MARK

BRANCH_SEPARATOR = "$branch_"
MAIN_BRANCH = "main"

# What a branch handle does (reads; tags are created and deleted in its own tag directory; writes
# and compaction of the tables `refuse_branch_write` lets through; rollback and schema changes in its
# own snapshot and schema directories).
ALLOWED_ON_BRANCH = frozenset({Op.READ, Op.STREAM, Op.TAG, Op.EXPIRE, Op.WRITE, Op.COMPACT, Op.ROLLBACK,
                               Op.SCHEMA_CHANGE})

_WHY = {
    Op.ORPHANS: f"orphan removal is a whole-table operation. {ACTION_MARK}run it on the main branch, which keeps "
                "every file any branch names",
}


def refuse_branch_write(name: str, op: Op, options: Mapping[str, str]) -> None:
    """Raise `UnsupportedFeatureError` naming the branch handle ``name`` when a write or compaction
    (``op``) of a branch with these table ``options`` would need what lake_assets does not do on a
    branch; nothing has changed then."""
    if op not in (Op.WRITE, Op.COMPACT):
        return
    problems = []
    keys = []
    if options.get("tag.automatic-creation", "none").strip().lower() != "none":
        problems.append("tag.automatic-creation (Paimon, 0.9 to 1.x, creates a branch's automatic tags in the "
                        "main branch's tag directory; lake_assets does not create them on a branch)")
        keys.append("tag.automatic-creation")
    if options.get("tag.default-time-retained") is not None:
        problems.append("tag.default-time-retained (Paimon's commit to a branch expires the main branch's tags; "
                        "lake_assets does not expire tags at a branch's commits)")
        keys.append("tag.default-time-retained")
    if problems:
        # the branch's own schema carries them (a branch starts with a copy of main's): removing them
        # there changes nothing on the main branch
        removal = "".join(f".remove_option({k!r})" for k in keys)
        raise UnsupportedFeatureError(
            f"Cannot {op.value} {name}: this branch carries {'; '.join(problems)}. {ACTION_MARK}remove "
            f"{'them' if len(keys) > 1 else 'it'} from the branch's own schema, which leaves the main branch's "
            f"options as they are (on the branch's handle: update_schema(){removal}.commit()); create the "
            "branch's tags with its create_tag instead")


def split_branch(table: str) -> tuple[str, str | None]:
    """``("t", "b1")`` for Paimon's branch identifier ``t$branch_b1``, ``("t", None)`` for a plain
    name; ``t$branch_main`` is the main branch (as Paimon's ``Identifier``). A branch name that is
    empty, all digits (Paimon refuses those) or not a plain name raises `InvalidIdentifierError`."""
    base, sep, branch = table.partition(BRANCH_SEPARATOR)
    if not sep:
        return table, None
    if not base or not branch or branch.isdigit() or BRANCH_SEPARATOR in branch:
        raise InvalidIdentifierError(
            f"Invalid branch identifier {table!r}: expected '<table>$branch_<name>' with a name that is not a number")
    check_name(branch, table)
    return base, None if branch == MAIN_BRANCH else branch


def main_name(name: str) -> str:
    """``db.t`` of the branch handle ``db.t$branch_<b>``."""
    return name.partition(BRANCH_SEPARATOR)[0]


def refuse_on_branch(name: str, op: Op) -> None:
    """Raise `UnsupportedFeatureError` naming the branch handle ``name`` when ``op`` writes or deletes."""
    if op in ALLOWED_ON_BRANCH:
        return
    raise UnsupportedFeatureError(
        f"Cannot {op.value} {name}: lake_assets does not {op.value} a branch: "
        f"{_WHY.get(op, 'not implemented on a branch')}")


__all__ = ["ALLOWED_ON_BRANCH", "BRANCH_SEPARATOR", "MAIN_BRANCH", "main_name", "refuse_branch_write",
           "refuse_on_branch", "split_branch"]
