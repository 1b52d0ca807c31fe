"""A lossless reader and writer of Thrift compact-protocol structs, for Parquet's footer.

A struct decodes into a list of ``(field id, compact type, value)`` in the order the bytes hold
them, every field kept whatever its id, so that encoding it again gives the same bytes (Apache
Thrift's compact writer, which parquet-cpp and parquet-java use: a field header is one byte with
the id's delta from the previous field when 1-15, else the type byte and the id as a zigzag
varint; lists of fewer than 15 elements carry their size in the header's high nibble). A caller
changes what it must (`field`, `set_field`, or a copy: ``list(struct)``) and writes the struct
back (`encode_struct`). A decoded struct keeps its own bytes (`DecodedStruct`), which encoding
copies while the struct is unchanged: a footer written back with a few offsets moved encodes only
the structs on the way to them (a Parquet footer's statistics and schema are most of its bytes).

Values by compact type: booleans as ``bool``; bytes, i16, i32, i64 as ``int``; a double as its 8
raw bytes; binary as ``bytes``; a list or set as ``(element type, [values])``; a struct as a
`Struct`. Maps do not occur in Parquet's footer: one raises `ThriftError`.
"""

from __future__ import annotations

from typing import Any

# compact protocol type ids
BOOL_TRUE, BOOL_FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT = range(1, 13)
_STOP = 0
# Nesting deeper than this is no Parquet footer (FileMetaData nests six structs at most)
_MAX_DEPTH = 32

Field = tuple[int, int, Any]  # (field id, compact type, value)
Struct = list[Field]


class DecodedStruct(list[Field]):
    """A struct as `decode_struct` read it, with its bytes (stop byte included, nested values
    too) in ``raw``, which `encode_struct` copies. `set_field` on it drops them (it is then
    encoded field by field); a change inside one of its values is not seen: change a copy
    (``list(struct)``) of every struct on the way to it, as `parquet_splice` does."""

    __slots__ = ("raw",)
    raw: bytes | None

    def __setitem__(self, *args: Any) -> None:
        self.raw = None
        super().__setitem__(*args)


class ThriftError(ValueError):
    """Bytes that are no Thrift compact struct this module can keep (truncated, a map, too deep)."""


def _varint(b: bytes, i: int) -> tuple[int, int]:
    out = shift = 0
    while True:
        if i >= len(b) or shift > 63:
            raise ThriftError("a varint runs past the end of the bytes")
        x = b[i]
        i += 1
        out |= (x & 0x7F) << shift
        if x < 0x80:
            return out, i
        shift += 7


def _zigzag(v: int) -> int:
    return (v >> 1) ^ -(v & 1)


def _value(b: bytes, i: int, t: int, depth: int) -> tuple[Any, int]:
    if t == BYTE:
        if i >= len(b):
            raise ThriftError("a byte runs past the end of the bytes")
        v = b[i]
        return v - 256 if v > 127 else v, i + 1
    if t in (I16, I32, I64):
        v, i = _varint(b, i)
        return _zigzag(v), i
    if t == DOUBLE:
        if i + 8 > len(b):
            raise ThriftError("a double runs past the end of the bytes")
        return bytes(b[i:i + 8]), i + 8
    if t == BINARY:
        n, i = _varint(b, i)
        if i + n > len(b):
            raise ThriftError("a binary runs past the end of the bytes")
        return bytes(b[i:i + n]), i + n
    if t in (LIST, SET):
        if i >= len(b):
            raise ThriftError("a list runs past the end of the bytes")
        head = b[i]
        i += 1
        n, et = head >> 4, head & 0x0F
        if n == 15:
            n, i = _varint(b, i)
        items = []
        for _ in range(n):
            if et in (BOOL_TRUE, BOOL_FALSE):  # a boolean element is a byte: 1 true, 2 false
                if i >= len(b):
                    raise ThriftError("a list runs past the end of the bytes")
                items.append(b[i] == BOOL_TRUE)
                i += 1
            else:
                v, i = _value(b, i, et, depth)
                items.append(v)
        return (et, items), i
    if t == STRUCT:
        return decode_struct(b, i, depth + 1)
    raise ThriftError(f"compact type {t} is not kept by this reader")


def decode_struct(b: bytes, i: int = 0, depth: int = 0) -> tuple[Struct, int]:
    """The struct starting at ``i`` of ``b`` and the index after its stop byte."""
    if depth > _MAX_DEPTH:
        raise ThriftError("structs nest too deep")
    fields = DecodedStruct()
    start = i
    last = 0
    while True:
        if i >= len(b):
            raise ThriftError("a struct runs past the end of the bytes")
        head = b[i]
        i += 1
        if head == _STOP:
            fields.raw = bytes(b[start:i])
            return fields, i
        t, delta = head & 0x0F, head >> 4
        if delta:
            fid = last + delta
        else:
            raw, i = _varint(b, i)
            fid = _zigzag(raw)
        if t in (BOOL_TRUE, BOOL_FALSE):
            list.append(fields, (fid, t, t == BOOL_TRUE))
        else:
            v, i = _value(b, i, t, depth)
            list.append(fields, (fid, t, v))
        last = fid


def _write_varint(out: bytearray, v: int) -> None:
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _write_zigzag(out: bytearray, v: int) -> None:
    _write_varint(out, (v << 1) ^ (v >> 63) if v < 0 else v << 1)


def _write_value(out: bytearray, t: int, v: Any) -> None:
    if t == BYTE:
        out.append(v & 0xFF)
    elif t in (I16, I32, I64):
        _write_zigzag(out, int(v))
    elif t == DOUBLE:
        if len(v) != 8:
            raise ThriftError("a double is 8 bytes")
        out += v
    elif t == BINARY:
        _write_varint(out, len(v))
        out += v
    elif t in (LIST, SET):
        et, items = v
        if len(items) < 15:
            out.append((len(items) << 4) | et)
        else:
            out.append(0xF0 | et)
            _write_varint(out, len(items))
        for item in items:
            if et in (BOOL_TRUE, BOOL_FALSE):
                out.append(BOOL_TRUE if item else BOOL_FALSE)
            else:
                _write_value(out, et, item)
    elif t == STRUCT:
        encode_struct(v, out)
    else:
        raise ThriftError(f"compact type {t} is not written by this writer")


def encode_struct(fields: Struct, out: bytearray) -> None:
    """Append ``fields`` (as `decode_struct` gives them) and a stop byte to ``out``."""
    raw = getattr(fields, "raw", None)
    if raw is not None:  # decoded and unchanged since: its own bytes
        out += raw
        return
    last = 0
    for fid, t, v in fields:
        if t in (BOOL_TRUE, BOOL_FALSE):
            t = BOOL_TRUE if v else BOOL_FALSE
        delta = fid - last
        if 0 < delta <= 15:
            out.append((delta << 4) | t)
        else:
            out.append(t)
            _write_zigzag(out, fid)
        if t not in (BOOL_TRUE, BOOL_FALSE):
            _write_value(out, t, v)
        last = fid
    out.append(_STOP)


def field(fields: Struct, fid: int) -> Any:
    """The value of field ``fid``, or None when the struct lacks it."""
    for f, _, v in fields:
        if f == fid:
            return v
    return None


def set_field(fields: Struct, fid: int, value: Any) -> None:
    """Replace the value of field ``fid``, which the struct must hold (its type stays)."""
    for k, (f, t, _) in enumerate(fields):
        if f == fid:
            fields[k] = (f, t, value)  # a DecodedStruct drops its bytes
            return
    raise ThriftError(f"the struct has no field {fid} to set")


__all__ = ["BINARY", "I32", "I64", "LIST", "STRUCT", "DecodedStruct", "Field", "Struct", "ThriftError", "decode_struct",
           "encode_struct", "field", "set_field"]
