"""The bucket of a row as a Spark expression: Paimon's bucket hash computed in the JVM (docs/format.md §6).

Paimon's bucket is ``abs(hashBytesByWords(row) % n)`` over the bucket key's BinaryRow bytes (a
multiple of 8 bytes long). Spark's ``hash()`` of a BINARY value whose length is a multiple of 4 is
the same function: Murmur3 x86-32 over little-endian 4-byte words with seed 42, finalised with the
byte length. So a key whose BinaryRow bytes can be spelled with Spark expressions gets its bucket
without sending the key columns to a Python worker and back.

The bytes are concatenated as BINARY in memory order: the 8-byte header (RowKind +I, then the
null bits of fields 0..55), one 8-byte little-endian slot per field, then the variable part of
strings/binaries longer than 7 bytes, each padded to 8 bytes. (Building them as hexadecimal text
and one ``unhex`` cost 5x the Arrow UDF per row; as BINARY they cost about the same as it.)
Only types whose slot Spark can produce exactly are encoded (`encodable`); for any other key type
`bucket_column` returns None and the caller routes with the Python hash instead.

The table's other bucket functions (``bucket-function.type`` ``mod`` and ``hive``) are spelled
the same way where their arithmetic on the key's value is a few Spark expressions (`function_encodable`):
``mod`` always (``pmod``), ``hive`` for boolean, integer and date keys; other ``hive`` keys take
the Python path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from lake_assets.lsm.bucket_function import DEFAULT, MOD, function_problem
from lake_assets.spec.data_types import (
    BigIntType,
    BinaryType,
    BooleanType,
    CharType,
    DataType,
    DateType,
    DecimalType,
    IntType,
    SmallIntType,
    TinyIntType,
    VarBinaryType,
    VarCharType,
)

if TYPE_CHECKING:
    from pyspark.sql import Column

# The header holds the RowKind byte and one null bit per field: one 8-byte word up to 56 fields.
_MAX_ARITY = 56
# A decimal of precision up to 18 is stored as its unscaled long in the slot (compact decimal).
_MAX_COMPACT_DECIMAL = 18
# Strings and binaries of up to 7 bytes live in the slot itself, flagged in its last byte.
_MAX_INLINE = 7
# Fixed-width types: the Spark type the column is cast to and the mask of the slot's bits.
_INT_WIDTHS: dict[type[DataType], tuple[str, int]] = {
    TinyIntType: ("tinyint", 0xFF),
    SmallIntType: ("smallint", 0xFFFF),
    IntType: ("int", 0xFFFFFFFF),
}
_BYTES_TYPES = (CharType, VarCharType, BinaryType, VarBinaryType)
# Key types whose Hive hash `bucket_column` spells (their value, or Long.hashCode of it).
_HIVE_SPARK_TYPES: tuple[type[DataType], ...] = (BooleanType, DateType, BigIntType, *_INT_WIDTHS)
_U32_MASK = 0xFFFFFFFF


def encodable(types: Sequence[DataType]) -> bool:
    """Whether `bucket_column` spells the BinaryRow of keys of these types exactly.

    Floating point keys are not (Spark has no expression for a double's raw bits), nor
    timestamps (Spark's TIMESTAMP / TIMESTAMP_NTZ mapping of Paimon's types is the writer's
    business), nor wide decimals (their BigInteger bytes) and nested types.
    """
    if not 0 < len(types) <= _MAX_ARITY:
        return False
    for t in types:
        if isinstance(t, DecimalType):
            if t.precision > _MAX_COMPACT_DECIMAL:
                return False
        elif not isinstance(t, (BigIntType, BooleanType, DateType, *_INT_WIDTHS, *_BYTES_TYPES)):
            return False
    return True


def _le_bytes(value: Column) -> Column:
    """The 8 bytes of a bigint ``value`` in little-endian order, as BINARY.

    The bytes are swapped with shifts and masks (no string work per byte), then the swapped
    value goes through one ``hex``/``unhex`` pair: Spark has no bigint-to-binary expression
    under ANSI mode.
    """
    from pyspark.sql import functions as F

    swapped: Column | None = None
    for i in range(8):
        byte = F.shiftright(value, 8 * i).bitwiseAND(F.lit(0xFF))
        term = F.shiftleft(byte, 8 * (7 - i))
        swapped = term if swapped is None else swapped.bitwiseOR(term)
    assert swapped is not None
    return F.unhex(F.lpad(F.hex(swapped), 16, "0"))


def _slot_value(column: Column, t: DataType) -> Column:
    """The 8-byte slot of a fixed-width value as a bigint (its bit pattern, not its number)."""
    from pyspark.sql import functions as F

    if isinstance(t, BigIntType):
        return column.cast("bigint")
    if isinstance(t, BooleanType):
        return F.when(column.cast("boolean"), F.lit(1)).otherwise(F.lit(0)).cast("bigint")
    if isinstance(t, DateType):
        # days since the epoch as an int, stored in the low 4 bytes
        return F.unix_date(column.cast("date")).cast("bigint").bitwiseAND(F.lit(0xFFFFFFFF))
    if isinstance(t, DecimalType):
        # the unscaled value: exact, since precision + scale + 1 <= 38 for a compact decimal
        scaled = column.cast(f"decimal({t.precision},{t.scale})") * F.lit(10**t.scale)
        return scaled.cast("bigint")
    spark_type, mask = _INT_WIDTHS[type(t)]
    return column.cast(spark_type).cast("bigint").bitwiseAND(F.lit(mask))


def bucket_column(columns: Sequence[Column], types: Sequence[DataType], num_buckets: int | Column,
                  function: str = DEFAULT) -> Column | None:
    """The bucket (an int column) of rows whose bucket-key ``columns`` have the table's ``types``,
    under the table's ``bucket-function.type`` ``function``.

    ``num_buckets`` is the table's count, or a column of each row's count (a postpone table's
    partitions have counts of their own); a null count gives a null bucket.

    Each column is cast to its table type first (an int key hashes differently from a bigint
    one, so a wider Spark column must not be hashed as it is). None when `encodable` (or, for
    ``mod`` and ``hive``, `function_encodable`) says no.
    """
    from pyspark.sql import functions as F

    if len(columns) != len(types):
        return None
    count = F.lit(num_buckets) if isinstance(num_buckets, int) else num_buckets
    if function != DEFAULT:
        return _function_bucket(columns, types, count, function)
    if not encodable(types):
        return None
    arity = len(types)
    null_bits: Column = F.lit(0).cast("bigint")
    slots: list[Column] = []
    var_parts: list[Column] = []
    var_offset: Column = F.lit(8 + 8 * arity).cast("bigint")  # where the next variable part starts
    zero_slot = F.unhex(F.lit("0" * 16))
    for i, (column, t) in enumerate(zip(columns, types, strict=True)):
        null_bits = null_bits + F.when(column.isNull(), F.lit(1 << (i + 8))).otherwise(F.lit(0))
        if isinstance(t, _BYTES_TYPES):
            # a string's bytes are its UTF-8 encoding (cast to BINARY)
            value = F.coalesce(column.cast("string" if isinstance(t, CharType | VarCharType) else "binary")
                               .cast("binary"), F.unhex(F.lit("")))
            size = F.octet_length(value).cast("bigint")
            inline = F.concat(F.rpad(value, _MAX_INLINE, F.unhex(F.lit("00"))),
                              F.unhex(F.hex(F.lit(0x80) + size)))
            padded = F.shiftleft(F.shiftright(size + F.lit(7), 3), 3)
            pointer = _le_bytes(F.shiftleft(var_offset, 32).bitwiseOR(size))
            long_value = size > _MAX_INLINE
            slot = F.when(column.isNull(), zero_slot).when(long_value, pointer).otherwise(inline)
            var_parts.append(F.when(long_value, F.rpad(value, padded.cast("int"), F.unhex(F.lit("00"))))
                             .otherwise(F.unhex(F.lit(""))))
            var_offset = var_offset + F.when(long_value, padded).otherwise(F.lit(0))
        else:
            slot = F.when(column.isNull(), zero_slot).otherwise(_le_bytes(_slot_value(column, t)))
        slots.append(slot)
    row = F.concat(_le_bytes(null_bits), *slots, *var_parts)
    # Java's Math.abs(hash % n): Spark's % truncates toward zero like Java's
    return F.abs(F.hash(row) % count).cast("int")


def function_encodable(types: Sequence[DataType], function: str) -> bool:
    """Whether `bucket_column` spells ``function`` (``mod`` or ``hive``) of keys of these types.

    ``mod``: every key it takes (one INT or BIGINT). ``hive``: keys of booleans, integers and
    dates, whose field hash is their value; floats (raw bits), decimals (trailing zeros stripped)
    and strings (a polynomial over the bytes) have no cheap Spark expression, so they take the
    Python path (`lake_assets.lsm.bucket_function`, vectorized).
    """
    if function_problem(function, types) is not None:
        return False
    return function == MOD or all(isinstance(t, _HIVE_SPARK_TYPES) for t in types)


def _function_bucket(columns: Sequence[Column], types: Sequence[DataType], count: Column,
                     function: str) -> Column | None:
    """``mod`` and ``hive`` buckets (`lake_assets.lsm.bucket_function`) as Spark expressions."""
    from pyspark.sql import functions as F

    if not function_encodable(types, function):
        return None
    if function == MOD:
        # Math.floorMod(key, n) is Spark's pmod for a positive n; a null key reads as 0 (bucket 0)
        table_type = "int" if isinstance(types[0], IntType) else "bigint"
        key = F.coalesce(columns[0].cast(table_type).cast("bigint"), F.lit(0).cast("bigint"))
        return F.pmod(key, count.cast("bigint")).cast("int")
    # h = 31 * h + field hash in Java int arithmetic: kept as a bigint in [0, 2**32), the low 32
    # bits Java keeps; only h & Integer.MAX_VALUE is used at the end, so the sign never matters
    h: Column = F.lit(0).cast("bigint")
    for column, t in zip(columns, types, strict=True):
        field = F.coalesce(_hive_field_hash(column, t), F.lit(0).cast("bigint"))
        h = (h * F.lit(31) + field).bitwiseAND(F.lit(_U32_MASK))
    return (h.bitwiseAND(F.lit(0x7FFFFFFF)) % count.cast("bigint")).cast("int")


def _hive_field_hash(column: Column, t: DataType) -> Column:
    """Hive's hash of one value as a bigint's low 32 bits (null stays null)."""
    from pyspark.sql import functions as F

    if isinstance(t, BooleanType):
        return F.when(column.cast("boolean"), F.lit(1)).otherwise(F.lit(0)).cast("bigint")
    if isinstance(t, DateType):
        return F.unix_date(column.cast("date")).cast("bigint").bitwiseAND(F.lit(_U32_MASK))
    if isinstance(t, BigIntType):
        # Long.hashCode: (int) (v ^ (v >>> 32))
        v = column.cast("bigint")
        return v.bitwiseXOR(F.shiftrightunsigned(v, 32)).bitwiseAND(F.lit(_U32_MASK))
    spark_type, _ = _INT_WIDTHS[type(t)]
    return column.cast(spark_type).cast("bigint").bitwiseAND(F.lit(_U32_MASK))
