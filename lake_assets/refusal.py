"""An operation on a table (`Op`) and a property of the table that blocks some operations
(`Refusal`): the vocabulary of `lake_assets.table_support`'s rules, and `refuse`, which raises
`UnsupportedFeatureError` naming every property that blocks an operation, why, and what the user
can do about it (`lake_assets.refusal_actions`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from lake_assets.errors import UnsupportedFeatureError
from lake_assets.refusal_actions import ACTION_MARK


class Op(Enum):
    """Operations a table is checked for; the value is the verb of the error message."""

    READ = "read"
    STREAM = "stream from"
    WRITE = "write to"
    COMPACT = "compact"
    EXPIRE = "expire snapshots of"
    ORPHANS = "remove orphan files of"
    TAG = "tag"
    ROLLBACK = "roll back"
    SCHEMA_CHANGE = "alter"


READS = frozenset({Op.READ, Op.STREAM})
# Operations that read or write data files.
DATA = frozenset({Op.READ, Op.STREAM, Op.WRITE, Op.COMPACT})
# Operations that create or delete files from what the table's metadata says.
MAINTENANCE = frozenset({Op.WRITE, Op.COMPACT, Op.EXPIRE, Op.ORPHANS, Op.ROLLBACK})
# Data operations plus those that compute data file paths to delete or keep.
PATHS = DATA | {Op.EXPIRE, Op.ORPHANS}


@dataclass(frozen=True)
class Refusal:
    """A property of a table that blocks some operations: ``why``, and what the user can do
    (``action``: remove an option, hand the table to Paimon, ...; never empty)."""

    property: str
    why: str
    ops: frozenset[Op]
    action: str

    def blocks(self, op: Op) -> bool:
        """Whether this property blocks ``op``."""
        return op in self.ops


def refuse(name: str, op: Op, refusals: Iterable[Refusal]) -> None:
    """Raise `UnsupportedFeatureError` if any refusal blocks ``op`` on table ``name``: each
    blocking property with why, then what the user can do about it."""
    blocking = [r for r in refusals if r.blocks(op)]
    if not blocking:
        return
    text = "; also ".join(f"{r.property} is not supported; {r.why.rstrip('.')}. {ACTION_MARK}{r.action}"
                          for r in blocking)
    raise UnsupportedFeatureError(f"Cannot {op.value} {name}: {text}")


__all__ = ["DATA", "MAINTENANCE", "PATHS", "READS", "Op", "Refusal", "refuse"]
