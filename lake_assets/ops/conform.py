"""Checking and casting incoming Arrow data to a table's schema before anything is written."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Executor
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.errors import InvalidDataError, SchemaError, UnsupportedFeatureError
from lake_assets.spec.partition_text import names_bytes_as_utf8, not_utf8_refusal
from lake_assets.spec.row_kind import ROW_KIND_NAMES, RowKind
from lake_assets.spec.schema import TableSchema

_STRINGS = (pa.types.is_string, pa.types.is_large_string, pa.types.is_string_view)
_BINARIES = (pa.types.is_binary, pa.types.is_large_binary, pa.types.is_fixed_size_binary, pa.types.is_binary_view)
_LISTS = (pa.types.is_list, pa.types.is_large_list, pa.types.is_fixed_size_list, pa.types.is_list_view,
          pa.types.is_large_list_view)

# Paimon's TIMESTAMP and DATE range (years 1 to 9999, as Java's and Spark's readers take them), in
# seconds since the epoch: later values overflow the readers' calendars (Python's datetime, too).
_MIN_SECOND = -62_135_596_800  # 0001-01-01T00:00:00
_MAX_SECOND = 253_402_300_799  # 9999-12-31T23:59:59
_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
_DAY_MS = 86_400_000


def _any(preds: tuple[Any, ...], t: pa.DataType) -> bool:
    return any(p(t) for p in preds)


def _castable(src: pa.DataType, dst: pa.DataType) -> str | None:
    """Why ``src`` cannot be stored as ``dst`` without guessing, or None when it can.

    Only casts that keep every value are taken (their values are checked after the cast): integer
    and float widening, integers into floats and decimals, decimal rescaling, narrower floats,
    coarser timestamp units, other string/binary layouts; nested types field by field, with struct
    fields matched by name. Parsing strings into numbers, dropping or inventing struct fields and
    truncating floats to integers are refused.
    """
    if src == dst or pa.types.is_null(src):
        return None
    if pa.types.is_dictionary(src):
        return _castable(src.value_type, dst)  # the values, not their codes, must fit
    if pa.types.is_struct(src) and pa.types.is_struct(dst):
        have = [src.field(i).name for i in range(src.num_fields)]
        want = [dst.field(i).name for i in range(dst.num_fields)]
        if sorted(have) != sorted(want):
            return f"struct fields {have} do not match the table's {want}"
        for name in want:
            why = _castable(src.field(name).type, dst.field(name).type)
            if why:
                return f"field {name!r}: {why}"
        return None
    if _any(_LISTS, src) and _any(_LISTS, dst):
        why = _castable(src.value_type, dst.value_type)
        return f"list element: {why}" if why else None
    if pa.types.is_map(src) and pa.types.is_map(dst):
        why = _castable(src.key_type, dst.key_type) or _castable(src.item_type, dst.item_type)
        return f"map entry: {why}" if why else None
    families = (
        (pa.types.is_integer, pa.types.is_integer),
        (pa.types.is_integer, pa.types.is_floating),
        (pa.types.is_integer, pa.types.is_decimal),
        (pa.types.is_floating, pa.types.is_floating),
        (pa.types.is_decimal, pa.types.is_decimal),
        (lambda t: _any(_STRINGS, t), pa.types.is_string),
        (lambda t: _any(_BINARIES, t), pa.types.is_binary),
        (pa.types.is_timestamp, pa.types.is_timestamp),
        (pa.types.is_date, pa.types.is_date),
        (pa.types.is_time, pa.types.is_time),
    )
    for src_ok, dst_ok in families:
        if src_ok(src) and dst_ok(dst):
            if pa.types.is_timestamp(src) and (src.tz is None) != (dst.tz is None):
                return "local and instant timestamps differ"  # refuse rather than guess
            return None
    return f"{src} is not {dst}"


def _bad_values(src: pa.Array, dst: pa.DataType) -> str | None:
    """What in ``src`` a (safe) cast to ``dst`` would still change: overflow of finite floats to
    infinity, a time of day dropped from a date, dates and times outside years 1-9999."""
    if pa.types.is_dictionary(src.type):
        src = src.dictionary_decode()
    t = src.type
    if pa.types.is_struct(t) and pa.types.is_struct(dst):
        for i in range(dst.num_fields):
            f = dst.field(i)
            why = _bad_values(pc.struct_field(src, [t.get_field_index(f.name)]), f.type)
            if why:
                return f"field {f.name!r}: {why}"
        return None
    if _any(_LISTS, t) and _any(_LISTS, dst):
        return _bad_values(src.flatten(), dst.value_type)
    if pa.types.is_map(t) and pa.types.is_map(dst):
        return _bad_values(src.keys, dst.key_type) or _bad_values(src.items, dst.item_type)
    if pa.types.is_floating(t) and pa.types.is_float32(dst) and not pa.types.is_float32(t):
        big = pc.and_(pc.is_finite(src), pc.greater(pc.abs(src), float(np.finfo(np.float32).max)))
        if pc.any(big).as_py():
            return f"{pc.filter(src, big)[0].as_py()!r} overflows FLOAT"
    if pa.types.is_date64(t):
        ms = src.cast(pa.int64())
        if pa.types.is_date32(dst) and bool((ms.fill_null(0).to_numpy() % _DAY_MS != 0).any()):
            return "date64 values carry a time of day that a DATE would drop"
        return _out_of_range(ms, 1_000)
    if pa.types.is_date32(t):
        return _out_of_range(src.cast(pa.int32()).cast(pa.int64()), 1, per_day=True)
    if pa.types.is_timestamp(t):
        return _out_of_range(src.cast(pa.int64()), _PER_SECOND[t.unit])
    return None


def _out_of_range(values: pa.Array, per_second: int, *, per_day: bool = False) -> str | None:
    """A value outside years 1-9999 (``values`` count units of 1/``per_second`` s, or days)."""
    lo, hi = (_MIN_SECOND // 86_400, _MAX_SECOND // 86_400) if per_day else (
        _MIN_SECOND * per_second, (_MAX_SECOND + 1) * per_second - 1)
    mm = pc.min_max(values)
    if mm["min"].is_valid and (mm["min"].as_py() < lo or mm["max"].as_py() > hi):
        return "a date or time outside the years 1 to 9999"
    return None


def as_table(data: object, table_name: str) -> pa.Table:
    """``data`` as a pyarrow Table: a Table or RecordBatch; anything else is refused by name."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    raise InvalidDataError(
        f"Cannot write to {table_name}: expected a pyarrow Table, RecordBatch or RecordBatchReader, "
        f"got {type(data).__name__} (convert with pyarrow.table(...) first)"
    )


def listed_columns(*groups: tuple[str, Sequence[str]]) -> str:
    """The non-empty groups of column names, in the order given, as an error names them:
    ``missing columns ['a'] and unknown columns ['b']`` ('' when every group is empty)."""
    return " and ".join(f"{what} columns {list(names)}" for what, names in groups if names)


def conform(data: pa.Table, schema: TableSchema, table_name: str, pool: Executor | None = None) -> pa.Table:
    """Return ``data`` with exactly the table's columns, order and types, or raise naming the problem.

    Values are never changed (but for the nulls of a column with a write-time default, Paimon
    1.3's field ``defaultValue``: `ops.default_values.WriteDefaults`): a cast that would lose or
    invent information is refused with `SchemaError` (types) or `InvalidDataError` (values),
    naming the column. With ``pool`` the
    columns are checked on it side by side (the full validation of a string column is a UTF-8
    pass over its bytes, which pyarrow runs without the GIL); the error raised is still the one
    of the first bad column in the table's order.
    """
    data = as_table(data, table_name)
    target = schema.arrow_schema
    names = data.column_names
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise SchemaError(f"Cannot write to {table_name}: duplicate columns {dup}")
    missing = [n for n in target.names if n not in names]
    extra = [n for n in names if not schema.has_field(n)]
    if problems := listed_columns(("missing", missing), ("unknown", extra)):
        raise SchemaError(f"Cannot write to {table_name}: input has {problems}")
    columns = [data.column(field.name) for field in target]

    def check(field: pa.Field, col: pa.ChunkedArray) -> pa.ChunkedArray:
        return _conform_column(field, col, schema, table_name)

    fields = list(target)
    arrays = list(pool.map(check, fields, columns)) if pool is not None else [
        check(f, c) for f, c in zip(fields, columns, strict=True)]
    table = pa.Table.from_arrays(arrays, schema=target)
    if any(f.default_value is not None for f in schema.fields):  # after the NOT NULL checks, as Java
        from lake_assets.ops.default_values import WriteDefaults

        defaults = WriteDefaults.of(schema)
        if defaults is not None:
            table = defaults.fill(table)
    _check_partition_names(table, schema, table_name)
    return table


def _check_partition_names(table: pa.Table, schema: TableSchema, table_name: str) -> None:
    """Refuse a batch holding a partition value no directory name can be given (a BINARY value
    that is not UTF-8 under ``partition.legacy-name = false``) here, before a writer names a
    directory or writes a file: one vectorized UTF-8 pass per such column."""
    legacy_name = schema.core_options.partition_legacy_name
    for key in schema.partition_keys:
        if not names_bytes_as_utf8(schema.field(key).type, legacy_name=legacy_name):
            continue
        column = table.column(key)
        try:
            column.cast(pa.string())  # Arrow validates the UTF-8 of every value
        except pa.ArrowInvalid as exc:
            # the first invalid value for the message: a pass over the distinct values only
            for raw in pc.unique(column).to_pylist():
                if raw is not None and not _is_utf8(raw):
                    raise UnsupportedFeatureError(
                        f"Cannot write to {table_name}: partition column {key!r}: {not_utf8_refusal(raw)}"
                    ) from None
            raise InvalidDataError(f"Cannot write to {table_name}: partition column {key!r}: {exc}") from exc


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _conform_column(field: pa.Field, col: pa.ChunkedArray, schema: TableSchema, table_name: str) -> pa.ChunkedArray:
    """``col`` checked and (losslessly) cast to ``field``'s type."""
    why = _castable(col.type, field.type)
    if why:
        raise SchemaError(
            f"Cannot write to {table_name}: column {field.name!r} has type {col.type}, "
            f"table expects {field.type} ({why})"
        )
    try:
        for chunk in col.chunks:
            _validate(chunk)
            bad = _bad_values(chunk, field.type)
            if bad:
                raise InvalidDataError(
                    f"Cannot write to {table_name}: column {field.name!r} has values that do not fit "
                    f"{field.type}: {bad}"
                )
        if col.type != field.type:
            col = pc.cast(col, field.type, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise InvalidDataError(
            f"Cannot write to {table_name}: column {field.name!r} has values that do not fit "
            f"{field.type}: {exc}"
        ) from exc
    if not field.nullable and col.null_count:
        role = "primary key " if field.name in schema.primary_keys else ""
        raise InvalidDataError(
            f"Cannot write to {table_name}: {role}column {field.name!r} is NOT NULL "
            f"but {col.null_count} input rows are null"
        )
    return col


# Offset widths of the string layouts whose full validation `_validate` can shortcut.
_OFFSET_TYPES: dict[pa.DataType, type[np.signedinteger[Any]]] = {pa.string(): np.int32, pa.large_string(): np.int64}
# Every byte's top bit, eight bytes at a time: set in no byte of ASCII text.
_HIGH_BITS = np.uint64(0x8080808080808080)


def _validate(chunk: pa.Array) -> None:
    """``chunk.validate(full=True)``: raise `pa.ArrowInvalid` on a malformed array, above all
    strings that are not UTF-8 (a reader would fail on them).

    Arrow's full check of a string array walks the values one by one (about 6 ms for 200k short
    strings). For the usual string chunk - no nulls, ASCII only - it is decided here with a few
    vectorized passes instead, and these prove everything the full check would check: buffer
    sizes (the cheap `validate`), offsets that never decrease and stay inside the data buffer,
    and bytes of the values all below 0x80 (ASCII text is valid UTF-8, and so is every piece
    of it); no validity bitmap and no nulls leave no null count to recount. Any other chunk -
    and any chunk that fails one of these checks - takes Arrow's full check, so what is refused
    and the error raised are Arrow's own.
    """
    width = _OFFSET_TYPES.get(chunk.type)
    if width is not None and len(chunk) and chunk.null_count == 0 and _ascii_strings(chunk, width):
        return
    chunk.validate(full=True)


def _ascii_strings(chunk: pa.Array, width: type[np.signedinteger[Any]]) -> bool:
    """Whether a null-free string chunk is well formed and all ASCII (False: not shown here)."""
    chunk.validate()  # buffer count and sizes: the offsets below are there to read
    validity, offsets_buf, data = chunk.buffers()
    if validity is not None or offsets_buf is None or data is None:
        return False
    offsets = np.frombuffer(offsets_buf, dtype=width)[chunk.offset:chunk.offset + len(chunk) + 1]
    lo, hi = int(offsets[0]), int(offsets[-1])
    if lo < 0 or hi > data.size or bool((offsets[1:] < offsets[:-1]).any()):
        return False
    values = np.frombuffer(data, dtype=np.uint8, count=hi - lo, offset=lo)
    head = len(values) // 8 * 8
    return not (values[:head].view(np.uint64) & _HIGH_BITS).any() and not (values[head:] & 0x80).any()


def row_kinds(data: pa.Table, schema: TableSchema, table_name: str) -> np.ndarray:
    """RowKind value per input row (``int8``) from ``rowkind.field``, or all +I without it."""
    field = schema.core_options.rowkind_field
    n = data.num_rows
    if field is None:
        return np.full(n, RowKind.INSERT, dtype=np.int8)
    if not schema.has_field(field):
        raise SchemaError(f"Table {table_name}: rowkind.field {field!r} is not a column")
    idx = pc.index_in(data.column(field), value_set=pa.array(ROW_KIND_NAMES))
    if idx.null_count:
        bad = pc.unique(pc.filter(data.column(field), pc.is_null(idx))).to_pylist()[:5]
        raise InvalidDataError(
            f"Cannot write to {table_name}: column {field!r} holds row kinds {bad}; "
            f"expected one of {list(ROW_KIND_NAMES)}"
        )
    kinds: np.ndarray = idx.to_numpy(zero_copy_only=False).astype(np.int8)
    return kinds
