"""Reading a stream's change splits (`lake_assets.ops.stream_splits`) into Arrow tables with a
``_row_kind`` column: delta and changelog files as written, a full split merged with the kinds
Paimon Java's reader gives it (`lake_assets.ops.full_phase_kinds`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.errors import InvalidArgumentError, MissingDataFileError, SchemaError
from lake_assets.formats.data_file import SEQUENCE_NUMBER, VALUE_KIND
from lake_assets.ops.data_evolution_read import system_columns
from lake_assets.ops.read import SplitReader, missing_file_error
from lake_assets.ops.row_tracking import row_tracking_enabled
from lake_assets.ops.scan import Split
from lake_assets.ops.stream_postpone import read_order
from lake_assets.ops.stream_splits import ChangeSplit
from lake_assets.spec.row_kind import ROW_KIND, check_row_kind_free, row_kind_names_array

if TYPE_CHECKING:
    from lake_assets.ops.file_column_map import FileColumnMap
    from lake_assets.spec.schema import TableSchema
    from lake_assets.store.file_store import FileStore


class _StreamSplitReader(SplitReader):
    """A `SplitReader` of a stream's splits: the schema it reads with is the stream's, fixed when
    the stream started, so a value too wide for it calls for a restart, not a refreshed handle."""

    def _narrowing_error(self, layout: FileColumnMap, name: str, old: str) -> SchemaError:
        file_field = self.store.schema_by_id(layout.schema_id).field(old)
        return SchemaError(
            f"Cannot read the changes of {self.store.name}: column {name} holds a value outside "
            f"{self.schema.field(name).type}, its type in schema-{self.schema.id}, which the stream has read "
            f"with since it started (schema-{layout.schema_id}, which wrote the value, has {file_field.type}); "
            "restart the stream from its consumer position to read with the new schema")


class ChangeReader:
    """Reads change splits into Arrow tables with the table's columns plus ``_row_kind``."""

    def __init__(self, store: FileStore, columns: list[str] | None = None, schema: TableSchema | None = None) -> None:
        """``schema``: the one the stream whose splits this reads starts with (its
        `StreamEnumerator.read_schema`: a stream from an old snapshot reads with that snapshot's
        fields, as Paimon Java's); by default the table's. Each split is read with the schema it
        carries either way."""
        start = store.schema if schema is None else schema
        check_row_kind_free(start.field_names, store.name)
        # a row-tracking table's system columns too, as its batch reads (ops/data_evolution_read.py)
        unknown = [c for c in columns or () if not start.has_field(c) and c not in system_columns(start)]
        if unknown:
            raise SchemaError(f"Table {store.name} has no columns {unknown}"
                              + ("" if schema is None else f" in schema {schema.id}, which the stream reads with"))
        self.store = store
        self.columns = columns
        self._reader = _for_changes(SplitReader(store, start, columns, fill_defaults=True) if schema is None else (
            _StreamSplitReader(store, start, columns, fill_defaults=True)))

    @property
    def schema(self) -> pa.Schema:
        return self._reader.output_schema.append(pa.field(ROW_KIND, pa.string(), nullable=False))

    def read(self, split: ChangeSplit) -> pa.Table:
        """The changes in one split that `StreamEnumerator.poll` planned, with a ``_row_kind`` column."""
        parts = list(self.read_batches(split))
        return pa.concat_tables(parts) if parts else self.schema.empty_table()

    def read_batches(self, split: ChangeSplit) -> Iterator[pa.Table]:
        """The changes of one split as tables: a full split streamed in batches of the table's
        ``read.batch-size`` rows (`ops.streaming_read`), a delta split one table per file."""
        if not isinstance(split, ChangeSplit):
            raise InvalidArgumentError(
                f"split must be a ChangeSplit from StreamEnumerator.poll, got {type(split).__name__}"
            )
        return self._guarded(split)  # the split is checked at the call, not at the first batch

    def _guarded(self, split: ChangeSplit) -> Iterator[pa.Table]:
        try:
            yield from self._read(split)
        except MissingDataFileError as exc:
            raise missing_file_error(self.store, exc, split.snapshot_id) from None

    def _read_with(self, schema: TableSchema) -> None:
        """Read with the fixed schema of the stream the split is from: files of later schemas by
        field id into its fields (added columns left out, renamed ones under the old name), as
        the table a Paimon Java source was built with (or copied to its start snapshot) reads them."""
        current = self._reader.schema
        if current.id == schema.id and current.options == schema.options and isinstance(
                self._reader, _StreamSplitReader):
            return
        missing = [c for c in self.columns or () if not schema.has_field(c) and c not in system_columns(schema)]
        if missing:
            raise SchemaError(f"Cannot read changes of {self.store.name}: the stream reads with the fields of "
                              f"schema {schema.id} (fixed when it started), which has no columns {missing}")
        check_row_kind_free(schema.field_names, self.store.name)
        self._reader = _for_changes(_StreamSplitReader(self.store, schema, self.columns, fill_defaults=True))

    def _read_full(self, sp: Split) -> Iterator[pa.Table]:
        """A full split's merged rows with the kinds Java's reader gives them
        (`ops.full_phase_kinds`): +I where Java reads raw (and in append tables), else the merged
        record's kind."""
        from lake_assets.ops.full_phase_kinds import full_phase_groups
        from lake_assets.ops.streaming_read import stream_bounds  # it builds on ops.read, as this module

        batch_rows, _ = stream_bounds(self.store.schema.core_options)
        if self.store.primary_keys:
            groups = [(list(g.files), not g.raw) for g in full_phase_groups(self.store, sp.files)]
        else:
            groups = [(sp.files, False)]
        for files, with_kind in groups:
            part = Split(sp.partition, sp.partition_values, sp.bucket, -1, files, sp.dv_entries)
            for merged in self._reader.stream_split(part, batch_rows, with_kind=with_kind):  # <= ~2 * batch_rows
                for start in range(0, merged.num_rows, batch_rows):
                    data = merged.slice(start, batch_rows)
                    if with_kind:
                        kinds = pc.take(row_kind_names_array(), data.column(VALUE_KIND).cast(pa.int32()))
                        data = data.drop_columns([VALUE_KIND])
                    else:
                        kinds = _inserts(data.num_rows)
                    yield data.append_column(ROW_KIND, kinds)
                    del data, kinds
                # emitted: the loop variable would hold this step while the next one is merged
                del merged

    def _read(self, split: ChangeSplit) -> Iterator[pa.Table]:
        if split.schema is not None:
            self._read_with(split.schema)
        elif self._reader.schema.id != self.store.schema.id:
            # planning moved the store to a newer schema (`FileStore.schema_at`): the splits' files
            # may hold columns the older one lacks, so the reader follows (its output too)
            gone = [c for c in self.columns or ()
                    if not self.store.schema.has_field(c) and c not in system_columns(self.store.schema)]
            if gone:
                raise SchemaError(f"Cannot read changes of {self.store.name}: columns {gone} were renamed or "
                                  f"dropped by schema {self.store.schema.id}, which later snapshots were written under")
            self._reader = _for_changes(SplitReader(self.store, self.store.schema, self.columns, fill_defaults=True))
        sp = Split(split.partition, split.partition_values, split.bucket, -1, list(split.files), split.dv_entries)
        if split.kind == "full":
            yield from self._read_full(sp)
            return
        if not self.store.primary_keys and row_tracking_enabled(self._reader.schema.options):
            # a row-tracking table's new files as a batch read of them reads them, as Paimon HEAD
            # reads a delta split: with the system columns asked for, and on a data-evolution
            # table the files of one row-id range merged (a column update's file on its own: its
            # columns, null in the others), each row an insert
            for data in self._reader.read_split(sp):
                yield data.append_column(ROW_KIND, _inserts(data.num_rows))
            return
        # Files are read as written (no merge across files): each row is one change.
        for meta in read_order(split.bucket, split.files):
            # append files carry no system columns: every row is an insert
            raw = self._reader.read_file(sp, meta, with_system=bool(self.store.primary_keys))
            if self.store.primary_keys:
                # within a commit, changes of a key are ordered by sequence number
                raw = raw.take(pc.sort_indices(raw, sort_keys=[(SEQUENCE_NUMBER, "ascending")]))
                kinds = pc.take(row_kind_names_array(), raw.column(VALUE_KIND).cast(pa.int32()))
            else:
                kinds = _inserts(raw.num_rows)
            data = raw.select(self._reader.columns)
            if self._reader.defaults is not None:  # changes of every kind, as Java fills them
                data = self._reader.defaults.fill(data)
            data = data.cast(self._reader.output_schema)
            yield data.append_column(ROW_KIND, kinds)


def _for_changes(reader: SplitReader) -> SplitReader:
    """``reader`` set up for change reads: on a data-evolution table a column update's file is read
    on its own, and its rows are null in the columns it does not hold, NOT NULL ones too (Paimon
    HEAD's ``DataEvolutionSplitRead`` reads a lone file of a range through the file's reader, which
    checks nothing), so the columns are nullable."""
    if reader.data_evolution:
        reader.lone_files_null_fill = True
        reader.output_schema = pa.schema([f.with_nullable(True) for f in reader.output_schema])
    return reader


def _inserts(rows: int) -> pa.Array:
    """``+I`` for each of ``rows`` rows (append files and raw splits store no row kind)."""
    return pa.repeat(pa.scalar("+I", pa.string()), rows)


__all__ = ["ChangeReader"]
