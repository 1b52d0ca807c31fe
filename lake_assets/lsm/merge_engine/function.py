"""The merge-function contract: what a merge engine's function offers the code that merges.

Paimon's MergeFunction, vectorized: a function takes a table sorted by key and then by sequence
(oldest first) holding the value columns plus ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND``, and returns
one row per key, still sorted by key. Retract rows (-U/-D) survive the merge so that, written to a
file, they can cancel rows in older files; readers drop them at the end. Writes, reads (merge on
read), compaction and changelog production all merge through this contract; the registry
(`lake_assets.lsm.merge_engine.registry`) makes the function of a table's ``merge-engine``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
import pyarrow as pa

if TYPE_CHECKING:  # the contract needs no part of lake_assets at run time
    from lake_assets.options import CoreOptions

# (column name, Arrow type) of every table column, in schema order
SchemaFields = Sequence[tuple[str, pa.DataType]]


class MergeFunction(Protocol):
    """Collapses the records of each key into one record."""

    # Whether -U/-D records are dropped before merging (``ignore-delete`` or a fallback key), so a
    # key's older record wins over a retraction.
    ignore_delete: bool

    def merge(self, table: pa.Table, key_names: Sequence[str]) -> pa.Table:
        """One row per key of a table sorted by key and sequence (see the module docstring)."""
        ...


@runtime_checkable
class RowSelectingMergeFunction(MergeFunction, Protocol):
    """A merge function whose result is one whole input row per key (deduplicate, first-row).

    Callers find the winners on the key columns alone and gather the wide columns once
    (`lake_assets.lsm.merge.sort_and_merge`), or find them without sorting at all
    (`lake_assets.lsm.merge.winner_masks`).
    """

    # True: a key's oldest record wins (first-row); False: its newest (deduplicate).
    keeps_first: bool

    def select_rows(self, table: pa.Table, key_names: Sequence[str]) -> np.ndarray | None:
        """Positions of the winning rows of a key-sorted table (None: every row wins)."""
        ...

    def check_retracts(self, retract: np.ndarray) -> None:
        """Raise `InvalidDataError` when the function cannot take the flagged -U/-D records."""
        ...



class RowSelectingMerge(ABC):
    """Shared base of the row-selecting engines (deduplicate, first-row): `merge` takes the rows
    `select_rows` picks, so the merged result and the winners callers find on key columns alone
    (`RowSelectingMergeFunction`) cannot disagree."""

    keeps_first: bool

    def __init__(self, ignore_delete: bool = False) -> None:
        self.ignore_delete = ignore_delete

    def merge(self, table: pa.Table, key_names: Sequence[str]) -> pa.Table:
        """The winning record of each key of a key-sorted table."""
        rows = self.select_rows(table, key_names)
        return table if rows is None else table.take(pa.array(rows))

    @abstractmethod
    def select_rows(self, table: pa.Table, key_names: Sequence[str]) -> np.ndarray | None:
        """Positions of the winning rows of a key-sorted table (None: every row wins)."""

    @abstractmethod
    def check_retracts(self, retract: np.ndarray) -> None:
        """Raise `InvalidDataError` when the function cannot take the flagged -U/-D records."""

class MergeFunctionFactory(Protocol):
    """Builds a table's merge function from its columns, its (trimmed) primary key and its typed
    options (``schema.core_options``); raises `OptionError`/`UnsupportedFeatureError` for options
    the engine cannot honour (Paimon's MergeFunctionFactory). ``not_null`` names the NOT NULL
    columns (Paimon's ``nullables``; empty: none checked) and ``what`` whose merge it is (e.g.
    "Table db.t"), for the errors of a merge that meets a null in one (`not_null`)."""

    def __call__(
        self, fields: SchemaFields, key_names: Sequence[str], options: CoreOptions,
        not_null: Collection[str] = (), what: str = "", /,
    ) -> MergeFunction:
        """The merge function (see the class docstring)."""
        ...
