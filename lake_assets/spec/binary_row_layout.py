"""The BinaryRow layout (docs/format.md §5) shared by the row-at-a-time codec (`binary_row`) and the
vectorized encoder (`binary_row_vectorized`).

Layout: ``[header + null bits][8-byte slot per field][variable part]``, little-endian, 8-byte aligned.
Strings and binaries of up to 7 bytes live inline in their slot; DECIMAL p > 18 and TIMESTAMP p > 3
keep part of their value in the variable part, which is reserved even for a null value (§5.4 item 1).
"""

from __future__ import annotations

from lake_assets.spec.data_types import (
    ArrayType,
    BinaryType,
    CharType,
    LocalZonedTimestampType,
    MapType,
    MultisetType,
    RowType,
    TimestampType,
    VarBinaryType,
    VarCharType,
)

MAX_INLINE = 7  # longest string or binary kept inline in its slot
INLINE_FLAG = 0x80  # top bit of an inline slot's last byte (the low 7 bits hold the length)
MASK64 = (1 << 64) - 1
DECIMAL_AREA = 16  # bytes always reserved for a non-compact decimal
TIMESTAMP_AREA = 8  # bytes holding epoch millis of a non-compact timestamp

STRING_TYPES = (CharType, VarCharType)
BINARY_TYPES = (BinaryType, VarBinaryType)
NESTED_TYPES = (ArrayType, MapType, MultisetType, RowType)
TIMESTAMP_TYPES = (TimestampType, LocalZonedTimestampType)


def header_size(arity: int) -> int:
    """Bytes of header + null bitset for a row of ``arity`` fields (8 for arity 0..56)."""
    return ((arity + 63 + 8) // 64) * 8

