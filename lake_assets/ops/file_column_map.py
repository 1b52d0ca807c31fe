"""How a data file's columns map onto a read's: schema evolution on read.

A file written under an older schema holds its columns under the names that schema gave them.
A read matches them to its own columns by field id: a renamed column follows its id, a column
added after the file was written reads as nulls, a widened type is cast. `FileColumnMap` is that
plan for the files of one schema id (the same for each of them, so a reader caches it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.errors import SchemaError
from lake_assets.formats.data_file import SEQUENCE_NUMBER, VALUE_KIND
from lake_assets.spec.arrow_types import to_arrow_field
from lake_assets.spec.schema import TableSchema

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore

SEQ_FIELD = pa.field(SEQUENCE_NUMBER, pa.int64(), nullable=False)
KIND_FIELD = pa.field(VALUE_KIND, pa.int8(), nullable=False)

# (the map, the column's name in the read, its name in the file) -> the error a failed cast raises
NarrowingError = Callable[["FileColumnMap", str, str], SchemaError]


class FileColumnMap:
    """Read plan for files of one schema id: read columns to file columns, and target fields."""

    __slots__ = ("fields", "file_columns", "schema_id", "stale_nulls", "wanted")

    def __init__(self, schema_id: int, wanted: list[tuple[str, str | None]], fields: list[pa.Field],
                 stale_nulls: dict[str, str] | None = None) -> None:
        self.schema_id = schema_id  # the files' schema, named when a cast to the read schema fails
        self.wanted = wanted
        self.file_columns = [old for _, old in wanted if old is not None]
        self.fields = fields
        # read column -> why a null in it is refused (`_stale_nulls`)
        self.stale_nulls = stale_nulls or {}

    @classmethod
    def of(cls, store: FileStore, read_schema: TableSchema, schema_id: int, columns: Sequence[str],
           relaxed: AbstractSet[str] = frozenset()) -> FileColumnMap:
        """How files written under ``schema_id`` map to ``columns`` of ``read_schema``, by field id;
        ``relaxed`` columns (NOT NULL now, nullable once: `lake_assets.ops.not_null_history`) are
        nullable in every file's map, so files with and without nulls concatenate."""
        file_schema = store.schema_by_id(schema_id)
        wanted: list[tuple[str, str | None]] = []
        for name in columns:
            old = file_schema.field_by_id(read_schema.field(name).id)
            wanted.append((name, old.name if old is not None else None))
        fields = [to_arrow_field(read_schema.field(name)) for name, _ in wanted]
        fields = [f.with_nullable(True) if f.name in relaxed else f for f in fields]
        return cls(schema_id, wanted, fields, _stale_nulls(store.name, read_schema, file_schema, wanted, fields))

    def to_read(self, raw: pa.Table, with_system: bool, narrowing: NarrowingError) -> pa.Table:
        """Map a file's columns to the read columns: match by field id, cast, add missing as nulls;
        ``narrowing`` builds the error of a value the read type cannot hold."""
        arrays = []
        fields = []
        for (name, old), field in zip(self.wanted, self.fields, strict=True):
            target = field.type
            if old is None:
                arr = pa.nulls(raw.num_rows, target)  # column added after this file was written
            else:
                arr = raw.column(old)
                if arr.type != target:
                    try:
                        arr = pc.cast(arr, target)
                    except pa.ArrowInvalid:
                        raise narrowing(self, name, old) from None
            if arr.null_count and name in self.stale_nulls:
                raise SchemaError(self.stale_nulls[name])
            arrays.append(arr)
            # nullability as the file has it: old files may predate a NOT NULL in no way we check
            fields.append(field if field.nullable or not arr.null_count else field.with_nullable(True))
        if with_system:
            arrays += [raw.column(SEQUENCE_NUMBER), raw.column(VALUE_KIND)]
            fields += [SEQ_FIELD, KIND_FIELD]
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields))

    def of_written(self, written: pa.Table) -> pa.Table | None:
        """``written`` (the read columns and system columns by name, as a writer held them) as a
        read of a file of the read schema gives it; None when a column is missing or of another type."""
        names = set(written.column_names)
        if not {name for name, _ in self.wanted} | {SEQUENCE_NUMBER, VALUE_KIND} <= names:
            return None
        arrays = [written.column(name) for name, _ in self.wanted]
        arrays += [written.column(SEQUENCE_NUMBER), written.column(VALUE_KIND)]
        fields = [*self.fields, SEQ_FIELD, KIND_FIELD]
        if any(a.type != f.type or (not f.nullable and a.null_count) for a, f in zip(arrays, fields, strict=True)):
            return None
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _stale_nulls(table: str, read_schema: TableSchema, file_schema: TableSchema,
                 wanted: list[tuple[str, str | None]], fields: list[pa.Field]) -> dict[str, str]:
    """The read columns that are NOT NULL in ``read_schema`` but that ``file_schema``, a later
    schema of the table, made nullable or dropped, with the error a null in them raises.

    A read pinned to an older schema (a stream keeps the schema it started with, as Java's do)
    meets files written after another handle evolved the table. Their nulls fit no NOT NULL
    column: a file's batch turned nullable would not concatenate with the others' (Arrow
    compares nullability), nor cast to the read's schema. The read stops, naming the change, as
    it does when a later schema widened a type (`SplitReader._narrowing_error`)."""
    if file_schema.id <= read_schema.id:
        return {}
    out = {}
    for (name, old), field in zip(wanted, fields, strict=True):
        if field.nullable:
            continue
        if old is None:
            change = "dropped it"
        elif file_schema.field(old).type.nullable:
            change = "made it nullable"
        else:
            continue
        out[name] = (f"Cannot read {table} with its schema-{read_schema.id}: column {name} is NOT NULL there, but "
                     f"schema-{file_schema.id} {change} and a data file written under it holds nulls in it; restart "
                     "the read to read with the table's current schema (a stream with a consumer id resumes where "
                     "it stopped)")
    return out


def no_columns(rows: int) -> pa.Table:
    """A table of ``rows`` rows and no column (not every format's reader counts rows of no column)."""
    return pa.table({"rows": pa.nulls(rows)}).select([])
