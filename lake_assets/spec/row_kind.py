"""Row kinds of Paimon's changelog: the ``_VALUE_KIND`` column of key-value files (§ data files).

Values are Java's ``RowKind`` byte values. An IntEnum compares equal to its int, so numpy and Arrow
code compares whole ``int8`` columns with the members directly (no per-row enum objects).
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["ROW_KIND_NAMES", "RowKind"]


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
