"""Row kinds of Paimon's changelog: the ``_VALUE_KIND`` column of key-value files (§ data files).

Values are Java's ``RowKind`` byte values. An IntEnum compares equal to its int, so numpy and Arrow
code compares whole ``int8`` columns with the members directly (no per-row enum objects).

Also the ``_row_kind`` column change reads add (`ROW_KIND`, `check_row_kind_free`), here rather
than in `lake_assets.ops.stream` so that code naming the column (the Spark schema of every worker)
need not import the change reads (issue 17 §3).
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum
from functools import cache

import pyarrow as pa

from lake_assets.errors import SchemaError

__all__ = ["ROW_KIND", "ROW_KIND_NAMES", "RowKind", "check_row_kind_free", "row_kind_names_array"]


class RowKind(IntEnum):
    """Kind of change a row carries."""

    INSERT = 0  # +I
    UPDATE_BEFORE = 1  # -U
    UPDATE_AFTER = 2  # +U
    DELETE = 3  # -D

    @property
    def short_string(self) -> str:
        """Java's ``RowKind.shortString()``: ``+I``, ``-U``, ``+U`` or ``-D``."""
        return ROW_KIND_NAMES[self]


#: Short strings indexed by value: ``ROW_KIND_NAMES[kind]`` (also as an Arrow take() dictionary).
ROW_KIND_NAMES: tuple[str, ...] = ("+I", "-U", "+U", "-D")


@cache
def row_kind_names_array() -> pa.Array:
    """`ROW_KIND_NAMES` as an Arrow string array, the dictionary ``pc.take`` turns kind values into
    short strings with; built once, at the first call, never at import: pyarrow imports pandas at
    its first ``pa.array`` of a Python sequence, which an import of the package must not pay for."""
    return pa.array(ROW_KIND_NAMES, pa.string())


#: The column change reads add (Paimon's audit_log table calls it ``rowkind``).
ROW_KIND = "_row_kind"


def check_row_kind_free(names: Iterable[str], table_name: str) -> None:
    """Refuse change reads of a table that has a column named like the row kind column.

    As in Paimon, whose audit_log table adds its ``rowkind`` column and fails on a duplicate
    name: the user column is neither dropped nor shadowed, the read fails naming it.
    """
    if ROW_KIND in names:
        raise SchemaError(
            f"Cannot read changes of {table_name}: its column {ROW_KIND!r} clashes with the row kind "
            f"column change reads add; rename the column (ALTER TABLE ... RENAME COLUMN) to read its changes"
        )
