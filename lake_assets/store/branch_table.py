"""A branch opened as a table (``db.t$branch_<name>``): what it may do, and how its identifier reads.

A branch handle is a `FileStore` whose `TablePaths` carry the branch: its schema, snapshot, tag,
consumer and changelog directories are ``branch/branch-<name>/...``, its data, manifests and index
files the table's (Paimon 0.9's ``FileStoreTable.switchToBranch``). Reads, streams, change reads,
time travel to its own tags, creating its tags and expiring its snapshots work on it (the expiry
keeps every file the main branch or another branch names: `lake_assets.ops.expire_files`). What
else writes or deletes is refused (`refuse_on_branch`): a commit to a branch would need its own
conflict checks against main's files, and its tag deletion, rollback or orphan removal would delete
files the main branch or another branch still names.
"""

from __future__ import annotations

from lake_assets.catalog_names import check_name
from lake_assets.errors import InvalidIdentifierError, UnsupportedFeatureError
from lake_assets.refusal import Op

BRANCH_SEPARATOR = "$branch_"
MAIN_BRANCH = "main"

# What a branch handle does (reads; tags are created in its own tag directory).
ALLOWED_ON_BRANCH = frozenset({Op.READ, Op.STREAM, Op.TAG, Op.EXPIRE})

_WHY = {
    Op.WRITE: "commits go to the main branch only (a branch's commit would need its own conflict "
              "checks against the files it shares with main)",
    Op.COMPACT: "commits go to the main branch only (a branch's commit would need its own conflict "
                "checks against the files it shares with main)",
    Op.SCHEMA_CHANGE: "schema changes go to the main branch only",
    Op.ROLLBACK: "rolling a branch back would delete files the main branch or another branch may still name",
    Op.ORPHANS: "orphan removal is a whole-table operation: run it on the main branch, which keeps every "
                "file any branch names",
}


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


def refuse_tag_deletion(name: str) -> None:
    """Deleting a branch's tag is refused (`UnsupportedFeatureError`): what it alone kept would be
    judged against the branch's own history only."""
    raise UnsupportedFeatureError(
        f"Cannot delete a tag of {name}: lake_assets does not delete a branch's tags (the files only the tag "
        "kept would have to be checked against the main branch and every other branch too)")


def refuse_on_branch(name: str, op: Op) -> None:
    """Raise `UnsupportedFeatureError` naming the branch handle ``name`` when ``op`` writes or deletes."""
    if op in ALLOWED_ON_BRANCH:
        return
    raise UnsupportedFeatureError(
        f"Cannot {op.value} {name}: lake_assets reads a branch (batch, time travel, streams, change "
        f"reads, tags) but does not {op.value} it: {_WHY.get(op, 'not implemented on a branch')}")


__all__ = ["ALLOWED_ON_BRANCH", "BRANCH_SEPARATOR", "MAIN_BRANCH", "main_name", "refuse_on_branch",
           "refuse_tag_deletion", "split_branch"]
