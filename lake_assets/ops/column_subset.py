"""Column-subset writes of new rows to data-evolution tables (pypaimon's ``with_write_type``).

A data-evolution table (``data-evolution.enabled``, Paimon 1.2+) takes new rows that hold only
some of its columns: their files list those columns in ``_WRITE_COLS``, the commit gives the rows
new row ids (a new APPEND file without ``_ROW_ID`` among its columns), and every reader merges the
files of a row-id range column by column, so the columns left out read as null (or as the
table's ``fields.<c>.default-value``, filled on read) until a column update
(`Table.update_columns`) sets them. This is what pypaimon 2.1 writes after
``write.with_write_type([...])`` and Paimon HEAD's ``withWriteType``.

Refused here, before anything is written, each naming what to do instead:

* a table without ``data-evolution.enabled`` (its readers would read every file as whole rows);
* unknown, duplicated or system columns, or no column at all;
* a partition column left out (the rows' partition comes from their values);
* a NOT NULL column left out: no file of the new range would hold it, and Paimon's readers
  (``DataEvolutionSplitRead``, and lake_assets') refuse such a range.

Every column, in any order, is an ordinary write (``_WRITE_COLS`` null), as pypaimon makes it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from lake_assets.errors import InvalidArgumentError, UnsupportedFeatureError
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.ops.row_tracking import ROW_TRACKING_FIELDS, data_evolution_enabled
from lake_assets.spec.schema import TableSchema


def subset_write_schema(schema: TableSchema, write_columns: Sequence[str] | None, table: str) -> TableSchema | None:
    """The schema the files of a write of ``write_columns`` hold: the table's schema (its id,
    field ids, partition keys and options) with those fields only, in the table's order; None
    for a write of every column (``write_columns`` None or all of them). File-index options go:
    a subset file carries no file index (pypaimon writes none), and an index of a column left
    out could not be built."""
    if write_columns is None:
        return None
    if isinstance(write_columns, str) or not all(isinstance(c, str) for c in write_columns):
        raise InvalidArgumentError(f"Cannot write to {table}: write_columns must be a list of column names, "
                                   f"got {write_columns!r}")
    names = list(write_columns)
    what = f"Cannot write columns {names} to {table}"
    if not data_evolution_enabled(schema.options):
        raise UnsupportedFeatureError(
            f"{what}: a write of some of the columns needs a data-evolution table "
            "(data-evolution.enabled = true, with row-tracking.enabled); write every column instead")
    if not names:
        raise InvalidArgumentError(f"{what}: no column given")
    if len(set(names)) != len(names):
        raise InvalidArgumentError(f"{what}: duplicate columns {sorted({n for n in names if names.count(n) > 1})}")
    system = [n for n in names if n in ROW_TRACKING_FIELDS]
    unknown = [n for n in names if not schema.has_field(n) and n not in ROW_TRACKING_FIELDS]
    if system or unknown:
        why = (f"system columns {system} are assigned by the commit, not written" if system
               else f"unknown columns {unknown}")
        raise InvalidArgumentError(f"{what}: {why} (columns: {list(schema.field_names)})")
    held = set(names)
    partition = [k for k in schema.partition_keys if k not in held]
    if partition:
        raise InvalidArgumentError(
            f"{what}: partition columns {partition} are left out; the rows' partition comes from their values, "
            "so list them too")
    required = [f.name for f in schema.fields if f.name not in held and not f.type.nullable]
    if required:
        raise InvalidArgumentError(
            f"{what}: NOT NULL columns {required} are left out; no file of the new rows would hold them, and "
            "readers refuse such rows: list them too")
    if held == set(schema.field_names):
        return None
    return dataclasses.replace(
        schema, fields=tuple(f for f in schema.fields if f.name in held),
        options={k: v for k, v in schema.options.items() if not k.startswith("file-index.")})


def with_write_cols(messages: Sequence[CommitMessage], file_schema: TableSchema) -> list[CommitMessage]:
    """``messages`` with their new files marked as holding ``file_schema``'s columns only
    (``_WRITE_COLS``, in the table's order)."""
    cols = tuple(file_schema.field_names)
    return [dataclasses.replace(m, new_files=tuple(dataclasses.replace(f, write_cols=cols) for f in m.new_files))
            for m in messages]


__all__ = ["subset_write_schema", "with_write_cols"]
