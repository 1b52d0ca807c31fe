"""Manifest column ranges taken from the Parquet footer instead of a second pass over the rows.

parquet-cpp computes every column chunk's min/max while it encodes (``write_statistics``, which
our files carry as Java's do). For the types below its range is exactly what `pc.min_max` gives
(integers and dates by value, strings bytewise as UTF-8), so a rolling writer defers those
columns' ranges to the footer and folds them in when the file is closed. Floating-point columns
(NaN: Paimon gives them no range, Parquet skips NaN) and the other types keep the computed path.

parquet-cpp drops a chunk's range when a value is longer than 4 KiB (``max_statistics_size``):
string chunks holding a value longer than `FOOTER_STRING_BYTES` are computed, and a chunk that
still comes back without a range leaves its column without min/max (wider, never wrong).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.formats.stats import StatsAccumulator
from lake_assets.spec.data_types import (
    BigIntType,
    BooleanType,
    CharType,
    DataType,
    DateType,
    IntType,
    SmallIntType,
    TinyIntType,
    VarCharType,
)

# Types whose footer min/max is the exact range (parquet-java's statistics of these are by value,
# strings bytewise as UTF-8); the native Spark write reads its files' stats by the same rule.
FOOTER_RANGE_TYPES = (BooleanType, TinyIntType, SmallIntType, IntType, BigIntType, DateType, CharType, VarCharType)
FOOTER_STRING_TYPES = (CharType, VarCharType)
# Longest string value whose chunk range is left to the footer (parquet-cpp keeps up to 4 KiB).
FOOTER_STRING_BYTES = 1024


def _leaf_count(t: pa.DataType) -> int:
    """Parquet leaf columns of one Arrow field of this type."""
    if pa.types.is_struct(t):
        return sum(_leaf_count(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_map(t):
        return _leaf_count(t.key_type) + _leaf_count(t.item_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _leaf_count(t.value_type)
    return 1


@dataclass(frozen=True)
class FooterColumns:
    """Of the columns one accumulator sees (by position), those whose range the footer gives:
    position -> Parquet leaf column index of the file."""

    leaf: dict[int, int]
    strings: frozenset[int]

    @staticmethod
    def of(arrow_schema: pa.Schema, names: Sequence[str], types: Sequence[DataType]) -> FooterColumns:
        """The footer-covered columns among ``names`` (of ``types``) in files of ``arrow_schema``."""
        starts: dict[str, int] = {}
        leaf = 0
        for f in arrow_schema:
            starts[f.name] = leaf
            leaf += _leaf_count(f.type)
        covered = {i: starts[n] for i, (n, t) in enumerate(zip(names, types, strict=True))
                   if isinstance(t, FOOTER_RANGE_TYPES)}
        return FooterColumns(covered, frozenset(i for i in covered if isinstance(types[i], FOOTER_STRING_TYPES)))

    def deferrable(self, columns: Sequence[pa.Array | pa.ChunkedArray]) -> tuple[int, ...]:
        """Positions of ``columns`` (one chunk) whose range the footer will hold."""
        out = []
        for i in self.leaf:
            col = columns[i]
            if len(col) == col.null_count:
                continue  # no range to fold (its nulls are counted)
            if i in self.strings:
                longest = pc.max(pc.binary_length(col)).as_py() or 0
                if longest > FOOTER_STRING_BYTES:
                    continue  # parquet-cpp may drop this chunk's range: computed instead
            out.append(i)
        return tuple(out)


@dataclass
class DeferredRanges:
    """A file's chunks in write order, each with its row count and the positions of the
    accumulator's columns whose range waits for the footer."""

    acc: StatsAccumulator
    columns: FooterColumns
    chunks: list[tuple[int, tuple[int, ...]]] = field(default_factory=list)

    def update(self, columns: Sequence[pa.Array | pa.ChunkedArray]) -> None:
        """`StatsAccumulator.update` of one chunk, deferring what the footer covers."""
        defer = self.columns.deferrable(columns)
        self.acc.update(columns, defer)
        self.chunks.append((len(columns[0]) if columns else 0, defer))

    def fold(self, groups: list[tuple[int, list[tuple[Any, Any] | None]]] | None, leaves: list[int]) -> None:
        """Fold the footer's row-group ranges (`FormatWriter.row_group_ranges` of ``leaves``) into
        the deferred columns. A chunk is one row group or several (the writer may split it);
        a row group without a range while its chunk had values leaves the column without one."""
        if not any(deferred for _, deferred in self.chunks):
            return
        if groups is None:  # no footer statistics: nothing deferred can be trusted
            for _, deferred in self.chunks:
                for i in deferred:
                    self.acc.fold(i, None, None)
            return
        pos = {leaf: k for k, leaf in enumerate(leaves)}
        it = iter(self.chunks)
        left = 0
        defer: tuple[int, ...] = ()
        for rows, ranges in groups:
            while left <= 0:
                left, defer = next(it)
            left -= rows
            for i in defer:
                r = ranges[pos[self.columns.leaf[i]]]
                if r is not None:  # None: the row group holds no value of the column
                    self.acc.fold(i, r[0], r[1])


def needed_leaves(*deferred: DeferredRanges) -> list[int]:
    """The leaf columns whose footer ranges the ``deferred`` accumulators wait for."""
    return sorted({d.columns.leaf[i] for d in deferred for _, defer in d.chunks for i in defer})
