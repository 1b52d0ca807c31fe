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

A streaming write (``writeStream``) takes the same path: each micro-batch is written as a batch
write of its rows (the same files, ``_WRITE_COLS`` and row ids), refused in the driver alike.

The ingest job takes a subset only where one is declared (`declared_write_columns`:
``--write-columns``, lake.yaml's ``ingest.write_columns``), never from whatever columns the input
happens to have: a source that stops delivering a column must fail, not write nulls. An overwrite
with a subset (a partition re-ingested) replaces the partition's rows whole, as Paimon HEAD's
``INSERT OVERWRITE t PARTITION (...) (a, b)`` does with its NULL-filled rows: the columns left out
read null (or their default) afterwards, even where a column update had set them.
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


def declared_write_columns(table: Table, write_columns: Sequence[str] | None) -> tuple[str, ...] | None:
    """The columns a declared subset (the ingest job's ``--write-columns``) writes to ``table``,
    in the declaration's order, or None when none is declared (every column of a data-evolution
    table, declared, is a whole-row write, returned as given). Refused as `Table.write_arrow`'s
    ``write_columns`` are, with its messages: a table without data evolution, unknown, duplicated
    or system columns, a partition or NOT NULL column left out."""
    if write_columns is None:
        return None
    subset_write_schema(table.schema, write_columns, table.name)
    return tuple(write_columns)


__all__ = ["dataframe_write_columns", "declared_write_columns"]
