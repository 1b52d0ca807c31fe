"""Spark writes of a DataFrame holding only some columns of a data-evolution table.

Paimon HEAD's Spark connector has no option for this: a write (``INSERT INTO t (a, b)``, a
``MERGE INTO``'s ``WHEN NOT MATCHED THEN INSERT``, a DataFrame append) that lacks columns gets
them filled with NULL by its output resolver (``PaimonOutputResolver``: "top-level always
NULL-fills (mirrors Spark INSERT FILL)"), and a NOT NULL column left out fails its null check.
lake_assets follows that shape, the DataFrame's columns, for data-evolution tables only: their
new rows are written as files of those columns (``_WRITE_COLS``, `lake_assets.ops.column_subset`),
which every reader merges with the columns left out reading NULL (or their
``fields.<c>.default-value``), as HEAD's NULL-filled rows read. Paimon writes those rows whole; a
subset file stores no column of nulls, and a later column update (HEAD's ``MERGE INTO ... UPDATE
SET``, `Table.update_columns`) fills the columns alike.

Any other table still takes exactly its columns: a DataFrame missing one is refused by the write
(`lake_assets.ops.conform`), as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from lake_assets.ops.column_subset import subset_write_schema
from lake_assets.ops.row_tracking import data_evolution_enabled
from lake_assets.spark.schema import BUCKET_COLUMN

if TYPE_CHECKING:
    from lake_assets.table import Table


def dataframe_write_columns(table: Table, input_columns: Sequence[str] | None) -> tuple[str, ...] | None:
    """The columns a Spark write of ``input_columns`` (the DataFrame's, in its order) writes to
    ``table``: None for a write of whole rows (every column present, or a table without data
    evolution, whose write refuses missing columns itself), else those columns, checked now, in
    the driver, as `Table.write_arrow`'s ``write_columns`` are (partition and NOT NULL columns
    cannot be left out; unknown and system columns are refused)."""
    if input_columns is None or not data_evolution_enabled(table.schema.options):
        return None
    names = tuple(n for n in input_columns if n != BUCKET_COLUMN)
    if set(table.schema.field_names) <= set(names):
        return None  # whole rows; unknown extra columns are the write's to refuse, as for any table
    subset_write_schema(table.schema, names, table.name)
    return names


__all__ = ["dataframe_write_columns"]
