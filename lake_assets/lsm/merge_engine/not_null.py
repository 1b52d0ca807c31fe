"""The NOT NULL check of the merge engines that take a record's whole image (Paimon HEAD).

Paimon's ``initRow`` (AggregateMergeFunction and PartialUpdateMergeFunction, 1.1+) copies a
retraction's image into the key's row and throws ``IllegalArgumentException("Field <i> can not be
null")`` when a NOT NULL column of the image is null; partial-update's ``updateNonNullFields``
(no sequence groups) throws the same for an insert's null in a NOT NULL column. Both run at merge
time, in ``add``, so only for the keys a merge folds (a key's only record is emitted as it is by
Java's ReducerMergeFunctionWrapper, see `grouping.keep_singles`). Java's writer refuses such rows
at write time (TableWriteImpl.checkNullability, every row kind; lake_assets' `ops.conform` too),
so they reach a merge only from files written before a column was made NOT NULL
(``alter-column-null-to-not-null.disabled = false``) or by a writer that does not check.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from lake_assets.errors import InvalidDataError
from lake_assets.lsm.merge_engine.grouping import Grouping, valid_mask
from lake_assets.spec.row_kind import RowKind

if TYPE_CHECKING:
    from lake_assets.lsm.merge_engine.partial_update import PartialUpdate


def has_nulls(table: pa.Table, not_null: Collection[str]) -> bool:
    """Whether a NOT NULL column of ``table`` holds a null at all: the usual answer, no, costs a
    null count per column and spares the merge every per-row check."""
    return any(table.column(name).null_count for name in table.column_names if name in not_null)


def folded_rows(grouping: Grouping, merges_singles: bool, gid: np.ndarray | None = None) -> np.ndarray:
    """Per row of the grouped table (or of the rows whose group ids are ``gid``, e.g. those left
    after dropping ignored retractions), whether Java's merge function sees it (``add``): every row
    of a key with more than one record, and a key's only record too when ``merges_singles``."""
    gid = grouping.gid if gid is None else gid
    if merges_singles:
        return np.ones(len(gid), dtype=bool)
    sizes = grouping.ends - grouping.starts + 1
    out: np.ndarray = sizes[gid] > 1
    return out


def check_not_null(
    table: pa.Table, rows: np.ndarray, columns: Sequence[str], not_null: Collection[str], what: str, record: str
) -> None:
    """Raise `InvalidDataError` when a NOT NULL column of ``table`` is null at a row ``rows`` flags.

    ``columns``: the table's columns in schema order (Java's field index counts those the merge
    reads); ``what`` says whose merge it is (e.g. "Table db.t"), ``record`` what the row is."""
    if not not_null or not rows.any():
        return
    read = [name for name in columns if name in table.column_names]
    for index, name in enumerate(read):
        if name not in not_null:
            continue
        col = table.column(name)
        if not col.null_count:
            continue
        bad = rows & ~valid_mask(col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col)
        if bad.any():
            prefix = f"{what}: " if what else ""
            raise InvalidDataError(
                f"{prefix}column {name!r} is NOT NULL but {record} holds a null in it ({int(bad.sum())} "
                f"records): the merge cannot take it (Paimon: 'Field {index} can not be null'); such rows "
                "come from files written before the column was made NOT NULL or by a writer that does not check"
            )


def check_partial_update(
    engine: PartialUpdate, table: pa.Table, folded: np.ndarray, grouping: Grouping,
    kinds: np.ndarray, retract: np.ndarray,
) -> None:
    """Partial-update's checks of the records its merge folds (``folded``, `folded_rows`): a
    key's leading retraction and a remove-record-on-delete -D copy their image (initRow); without
    sequence groups an insert's null in a NOT NULL column fails too (updateNonNullFields). The
    images of remove-record-on-sequence-group resets are checked where those are found."""
    image = np.zeros(table.num_rows, dtype=bool)
    image[grouping.starts] = retract[grouping.starts]
    if engine.remove_on_delete:
        image |= kinds == RowKind.DELETE
    names = list(engine.types)
    check_not_null(table, image & folded, names, engine.not_null, engine.what,
                   "a retraction's image (partial-update starts or resets the row from it)")
    if not engine.groups:
        check_not_null(table, ~retract & folded, names, engine.not_null, engine.what,
                       "an insert (partial-update's merge takes only set values of a NOT NULL column)")


__all__ = ["check_not_null", "check_partial_update", "folded_rows", "has_nulls"]
