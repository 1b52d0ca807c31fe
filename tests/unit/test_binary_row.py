"""BinaryRow codec (§5): pypaimon vectors, manifest rows, Java edge cases and scalar/vectorized agreement."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lake_assets.errors import CorruptMetadataError, InvalidDataError, SchemaError, UnsupportedFeatureError
from lake_assets.spec.binary_row import (
    EMPTY_ROW,
    decode_row,
    deserialize_row,
    encode_row,
    encode_rows,
    header_size,
    serialize_row,
)
from lake_assets.spec.types import (
    ArrayType,
    BigIntType,
    BinaryType,
    BooleanType,
    CharType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    LocalZonedTimestampType,
    SmallIntType,
    TimestampType,
    TimeType,
    TinyIntType,
    VarCharType,
    bytes_type,
    parse_type,
    string_type,
    to_arrow,
)
from tests.vectors import load_json

UTC = dt.UTC
BUCKET_VECTORS = load_json("bucket_vectors.json")["vectors"]
PK_VECTOR_DIRS = ["02_pk_partitioned", "03_pk_composite", "04_partial_update", "05_aggregation"]


def vector_value(value: Any, t: DataType) -> Any:
    """bucket_vectors.json spells DATE, DECIMAL and TIMESTAMP values as ISO / decimal strings."""
    if value is None:
        return None
    if isinstance(t, DateType):
        return dt.date.fromisoformat(value)
    if isinstance(t, DecimalType):
        return Decimal(value)
    if isinstance(t, TimestampType):
        return dt.datetime.fromisoformat(value)
    return value


def column(values: list[Any], t: DataType) -> pa.Array:
    return pa.array(values, type=to_arrow(t))


def rows_of(data: np.ndarray, offsets: np.ndarray) -> list[bytes]:
    return [data[offsets[r] : offsets[r + 1]].tobytes() for r in range(len(offsets) - 1)]


def one_by_one(values: list[Any], t: DataType) -> list[bytes]:
    return [encode_row([v], [t]) for v in values]


def vectorized(rows: list[list[Any]], types: list[DataType]) -> list[bytes]:
    cols = [column([row[i] for row in rows], t) for i, t in enumerate(types)]
    return rows_of(*encode_rows(cols, types, num_rows=len(rows)))


# ---------------------------------------------------------------------------------------------------------
# pypaimon vectors


@pytest.mark.parametrize("vector", BUCKET_VECTORS, ids=lambda v: f"{v['group']}-{v['values']}")
def test_bucket_vector_rows(vector: dict[str, Any]) -> None:
    types = [parse_type(t) for t in vector["types"]]
    values = [vector_value(v, t) for v, t in zip(vector["values"], types, strict=True)]
    encoded = encode_row(values, types)
    assert encoded.hex() == vector["binary_row_hex"]
    assert serialize_row(values, types).hex() == vector["serialized_with_arity_prefix_hex"]
    assert decode_row(encoded, types) == values
    assert deserialize_row(bytes.fromhex(vector["serialized_with_arity_prefix_hex"]), types) == values
    assert vectorized([values], types) == [encoded]


def test_bucket_vectors_batched_per_signature() -> None:
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
    for vector in BUCKET_VECTORS:
        groups[tuple(vector["types"])].append(vector)
    assert sum(len(g) for g in groups.values()) == 59
    for signature, vectors in groups.items():
        types = [parse_type(t) for t in signature]
        rows = [[vector_value(v, t) for v, t in zip(vec["values"], types, strict=True)] for vec in vectors]
        assert [r.hex() for r in vectorized(rows, types)] == [vec["binary_row_hex"] for vec in vectors]


def _manifest_rows(vector_dir: str) -> list[tuple[str, bytes, list[DataType]]]:
    """Every (what, serialized row, types) of the data manifests and manifest lists of one table dump."""
    dump = load_json(f"{vector_dir}/metadata_dump.json")
    schemas = {v["id"]: v for k, v in dump.items() if k.startswith("schema/")}
    found: list[tuple[str, bytes, list[DataType]]] = []

    def types_of(schema: dict[str, Any]) -> tuple[list[DataType], list[DataType]]:
        by_name = {f["name"]: parse_type(f["type"]) for f in schema["fields"]}
        partition = [by_name[p] for p in schema["partitionKeys"]]
        # The key rows hold the trimmed primary key: PK fields minus partition fields.
        key = [by_name[k] for k in schema["primaryKeys"] if k not in schema["partitionKeys"]]
        return partition, key

    def unhex(text: str) -> bytes:
        assert text.startswith("hex:")
        return bytes.fromhex(text[4:])

    for name, content in dump.items():
        if not name.startswith("manifest/"):
            continue
        for record in content["records"]:
            if "_FILE" in record:
                file = record["_FILE"]
                partition, key = types_of(schemas[file["_SCHEMA_ID"]])
                found.append(("_PARTITION", unhex(record["_PARTITION"]), partition))
                found.append(("_MIN_KEY", unhex(file["_MIN_KEY"]), key))
                found.append(("_MAX_KEY", unhex(file["_MAX_KEY"]), key))
                found.append(("_KEY_STATS._MIN_VALUES", unhex(file["_KEY_STATS"]["_MIN_VALUES"]), key))
                found.append(("_KEY_STATS._MAX_VALUES", unhex(file["_KEY_STATS"]["_MAX_VALUES"]), key))
            elif "_PARTITION_STATS" in record:
                partition, _ = types_of(schemas[record.get("_SCHEMA_ID", 0)])
                stats = record["_PARTITION_STATS"]
                found.append(("_PARTITION_STATS.min", unhex(stats["_MIN_VALUES"]), partition))
                found.append(("_PARTITION_STATS.max", unhex(stats["_MAX_VALUES"]), partition))
    return found


@pytest.mark.parametrize("vector_dir", PK_VECTOR_DIRS)
def test_manifest_rows_round_trip(vector_dir: str) -> None:
    rows = _manifest_rows(vector_dir)
    kinds = {what for what, _, _ in rows}
    assert {"_PARTITION", "_MIN_KEY", "_MAX_KEY"} <= kinds
    assert sum(what in ("_PARTITION", "_MIN_KEY", "_MAX_KEY") for what, _, _ in rows) >= 15
    for what, raw, types in rows:
        values = deserialize_row(raw, types)
        assert serialize_row(values, types) == raw, what
        assert all(v is not None for v in values), what
        assert vectorized([values], types) == [raw[4:]], what


def test_manifest_row_values() -> None:
    def decoded(vector_dir: str, word: str) -> set[tuple[Any, ...]]:
        rows = _manifest_rows(vector_dir)
        return {tuple(deserialize_row(raw, t)) for what, raw, t in rows if word in what}

    assert decoded(PK_VECTOR_DIRS[0], "_PARTITION") == {("2024-01-01",), ("2024-01-02",)}
    keys = decoded("03_pk_composite", "KEY")
    assert ("a-much-longer-key-string", -5) in keys and ("", 0) in keys and ("ünï", 3) in keys
    keys = decoded("05_aggregation", "KEY")
    assert ("cherry-long-key",) in keys and ("apple",) in keys


# ---------------------------------------------------------------------------------------------------------
# Layout details from §5


def test_empty_row_and_header_size() -> None:
    assert bytes(12) == EMPTY_ROW
    assert encode_row([], []) == bytes(8)
    assert deserialize_row(EMPTY_ROW, []) == []
    assert [header_size(a) for a in (0, 1, 56, 57, 120, 121)] == [8, 8, 8, 16, 16, 24]
    data, offsets = encode_rows([], [], num_rows=3)
    assert rows_of(data, offsets) == [bytes(8)] * 3


def test_null_partition_example() -> None:
    types = [DateType(), IntType(), string_type()]
    assert encode_row([None, None, None], types).hex() == "0007000000000000" + "00" * 24
    assert vectorized([[None, None, None]], types) == [encode_row([None, None, None], types)]


def test_null_high_precision_uses_codegen_form() -> None:
    types = [IntType(), DecimalType(20, 2), TimestampType(6), LocalZonedTimestampType(9), string_type()]
    row = [None, None, None, None, None]
    encoded = encode_row(row, types)
    w = 8 + 5 * 8
    assert encoded[1] == 0b11111
    slots = [int.from_bytes(encoded[8 + 8 * i : 16 + 8 * i], "little") for i in range(5)]
    # Reserved areas: 16 bytes for the decimal, then 8 for each timestamp; plain nulls keep zero slots.
    assert slots == [0, w << 32, (w + 16) << 32, (w + 24) << 32, 0]
    assert len(encoded) == w + 32 and encoded[w:] == bytes(32)
    assert decode_row(encoded, types) == row
    assert vectorized([row], types) == [encoded]


@pytest.mark.parametrize(
    ("unscaled", "java_hex"),
    [
        (0, "00"),
        (1, "01"),
        (127, "7f"),
        (128, "0080"),
        (255, "00ff"),
        (-1, "ff"),
        (-128, "80"),
        (-129, "ff7f"),
        (-256, "ff00"),
        (-32768, "8000"),
        (32767, "7fff"),
        (10**38 - 1, "4b3b4ca85a86c47a098a223fffffffff"),
        (-(10**38) + 1, "b4c4b357a5793b85f675ddc000000001"),
    ],
)
def test_big_decimal_uses_java_minimal_bytes(unscaled: int, java_hex: str) -> None:
    t = DecimalType(38, 0)
    encoded = encode_row([Decimal(unscaled)], [t])
    slot = int.from_bytes(encoded[8:16], "little")
    assert slot == (16 << 32) | (len(java_hex) // 2)
    assert encoded[16:].hex() == java_hex.ljust(32, "0")
    assert decode_row(encoded, [t]) == [Decimal(unscaled)]
    assert vectorized([[Decimal(unscaled)]], [t]) == [encoded]


def test_decimal_rounding_and_range() -> None:
    t = DecimalType(10, 2)
    assert encode_row([Decimal("1.005")], [t]) == encode_row([Decimal("1.01")], [t])
    assert encode_row([Decimal("-1.005")], [t]) == encode_row([Decimal("-1.01")], [t])
    assert encode_row([7], [t]) == encode_row([Decimal("7.00")], [t])
    assert decode_row(encode_row([Decimal("-4.56")], [t]), [t])[0].as_tuple().exponent == -2
    for bad in (Decimal("100000000.00"), Decimal("NaN"), 1.5, "1.5", True):
        with pytest.raises(InvalidDataError):
            encode_row([bad], [t])
    big = DecimalType(38, 10)
    value = Decimal("1234567890123456789012345678.0123456789")
    assert decode_row(encode_row([value], [big]), [big]) == [value]


def test_timestamps() -> None:
    ts6, ts3 = TimestampType(6), TimestampType(3)
    before_epoch = dt.datetime(1969, 12, 31, 23, 59, 59, 999999)
    encoded = encode_row([before_epoch], [ts6])
    assert int.from_bytes(encoded[8:16], "little") == (16 << 32) | 999_000
    assert int.from_bytes(encoded[16:24], "little", signed=True) == -1
    assert decode_row(encoded, [ts6]) == [before_epoch]
    # Compact timestamps keep whole millis only (floored).
    assert decode_row(encode_row([before_epoch], [ts3]), [ts3]) == [before_epoch.replace(microsecond=999000)]
    ltz = LocalZonedTimestampType(3)
    paris = dt.timezone(dt.timedelta(hours=1))
    aware = dt.datetime(2024, 1, 1, 13, 0, 0, 123000, tzinfo=paris)
    assert encode_row([aware], [ltz]) == bytes.fromhex("0000000000000000" + "7b22e5c48c010000")
    assert decode_row(encode_row([aware], [ltz]), [ltz]) == [aware]
    assert decode_row(encode_row([aware], [ltz]), [ltz])[0].tzinfo == UTC
    naive = dt.datetime(2024, 1, 1, 12, 0, 0, 123000)
    assert encode_row([naive], [ltz]) == encode_row([aware], [ltz]) == encode_row([naive], [ts3])


def test_time_and_date() -> None:
    t = TimeType(3)
    encoded = encode_row([dt.time(1, 2, 3, 456789)], [t])
    assert int.from_bytes(encoded[8:12], "little") == 3_723_456
    assert decode_row(encoded, [t]) == [dt.time(1, 2, 3, 456000)]
    assert decode_row(encode_row([dt.date(1, 1, 1)], [DateType()]), [DateType()]) == [dt.date(1, 1, 1)]
    with pytest.raises(InvalidDataError):
        encode_row([dt.datetime(2024, 1, 1)], [DateType()])


def test_wide_row_header() -> None:
    types: list[DataType] = [IntType()] * 60
    values: list[Any] = list(range(60))
    values[0] = values[56] = values[59] = None
    encoded = encode_row(values, types)
    assert len(encoded) == 16 + 60 * 8
    bits = int.from_bytes(encoded[:16], "little")
    assert bits == (1 << 8) | (1 << 64) | (1 << 67)
    assert decode_row(encoded, types) == values
    assert vectorized([values, list(range(60))], types) == [encoded, encode_row(list(range(60)), types)]


@pytest.mark.parametrize(
    ("value", "t"),
    [
        ("1", IntType()),
        (1.0, BigIntType()),
        (True, IntType()),
        (128, TinyIntType()),
        (-32769, SmallIntType()),
        (2**31, IntType()),
        (2**63, BigIntType()),
        (1, BooleanType()),
        (1e39, FloatType()),
        ("x", DoubleType()),
        (b"x", string_type()),
        ("x", bytes_type()),
        ("\ud800", string_type()),
        (dt.date(2024, 1, 1), TimestampType(3)),
        ("12:00", TimeType()),
    ],
)
def test_bad_values_raise(value: Any, t: DataType) -> None:
    with pytest.raises(InvalidDataError):
        encode_row([value], [t])


def test_nested_and_arity_errors() -> None:
    with pytest.raises(UnsupportedFeatureError):
        encode_row([[1]], [ArrayType(IntType())])
    assert decode_row(encode_row([None], [ArrayType(IntType())]), [ArrayType(IntType())]) == [None]
    with pytest.raises(InvalidDataError):
        encode_row([1, 2], [IntType()])
    with pytest.raises(SchemaError):
        encode_rows([pa.array([1])], [IntType(), IntType()])
    with pytest.raises(SchemaError):
        encode_rows([pa.array([1]), pa.array([1, 2])], [BigIntType(), BigIntType()])
    with pytest.raises(SchemaError):
        encode_rows([pa.array(["x"])], [BigIntType()])


# ---------------------------------------------------------------------------------------------------------
# Corrupt input


def test_deserialize_checks_arity() -> None:
    raw = serialize_row([1, "x"], [BigIntType(), string_type()])
    with pytest.raises(CorruptMetadataError, match="arity 2"):
        deserialize_row(raw, [BigIntType()])
    with pytest.raises(CorruptMetadataError):
        deserialize_row(raw[:3], [])


def test_every_truncation_raises() -> None:
    types = [string_type(), DecimalType(20, 2), TimestampType(6), BigIntType()]
    encoded = encode_row(["a-much-longer-key-string", Decimal("1.25"), dt.datetime(2024, 1, 1), 5], types)
    for cut in range(len(encoded)):
        with pytest.raises(CorruptMetadataError):
            decode_row(encoded[:cut], types)


def test_bad_slots_raise() -> None:
    t = [string_type()]
    inline_too_long = bytes(8) + (0xFF << 56).to_bytes(8, "little")
    with pytest.raises(CorruptMetadataError):
        decode_row(inline_too_long, t)
    bad_utf8 = bytes(8) + bytes.fromhex("ff00000000000081")
    with pytest.raises(CorruptMetadataError, match="UTF-8"):
        decode_row(bad_utf8, t)
    with pytest.raises(CorruptMetadataError):
        decode_row(bytes(8) + (86_400_000).to_bytes(8, "little"), [TimeType()])
    with pytest.raises(CorruptMetadataError):
        decode_row(bytes(8) + (2**62).to_bytes(8, "little"), [TimestampType(3)])


FUZZ_TYPES: list[DataType] = [
    BooleanType(),
    IntType(),
    BigIntType(),
    DoubleType(),
    DateType(),
    TimeType(),
    DecimalType(10, 2),
    DecimalType(30, 5),
    TimestampType(3),
    TimestampType(6),
    LocalZonedTimestampType(9),
    string_type(),
    bytes_type(),
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(FUZZ_TYPES), max_size=5), st.binary(max_size=96))
def test_decoding_garbage_raises_only_corrupt_metadata(types: list[DataType], garbage: bytes) -> None:
    try:
        decode_row(garbage, types)
        deserialize_row(garbage, types)
    except CorruptMetadataError:
        pass


# ---------------------------------------------------------------------------------------------------------
# Vectorized input variants


def test_vectorized_accepts_arrow_variants() -> None:
    texts = ["a", None, "a-much-longer-key-string", "", "seven77", "eight888"]
    t = string_type()
    expected = [encode_row([v], [t]) for v in texts]
    variants = [
        pa.array(texts, pa.large_string()),
        pa.array(texts, pa.string_view()),
        pa.array(texts).dictionary_encode(),
        pa.chunked_array([pa.array(texts[:2]), pa.array(texts[2:])]),
        pa.chunked_array([pa.array(texts[:3]).dictionary_encode(), pa.array(texts[3:]).dictionary_encode()]),
        pa.array(["pad", *texts])[1:],
        texts,
    ]
    for col in variants:
        assert rows_of(*encode_rows([col], [t])) == expected, type(col)
    raw = [b"\x00\x01", None, b"0123456789"]
    for col in (pa.array(raw, pa.large_binary()), pa.array(raw, pa.binary_view()), pa.array(raw)):
        assert rows_of(*encode_rows([col], [bytes_type()])) == [encode_row([v], [bytes_type()]) for v in raw]


def test_vectorized_converts_units() -> None:
    stamps = [dt.datetime(2024, 1, 1, 12, 0, 0, 123456), None, dt.datetime(1969, 12, 31, 23, 59, 59, 999999)]
    for p in (3, 6, 9):
        t = TimestampType(p)
        expected = [encode_row([v], [t]) for v in stamps]
        for unit in ("us", "ns"):
            assert rows_of(*encode_rows([pa.array(stamps, pa.timestamp(unit))], [t])) == expected
    whole = [dt.datetime(2024, 1, 1, 12), None]
    t6 = TimestampType(6)
    assert rows_of(*encode_rows([pa.array(whole, pa.timestamp("s"))], [t6])) == one_by_one(whole, t6)
    times = [dt.time(1, 2, 3, 456789), None]
    expected_t = [encode_row([v], [TimeType(6)]) for v in times]
    for arrow_type in (pa.time64("us"), pa.time64("ns"), pa.time32("ms")):
        assert rows_of(*encode_rows([pa.array(times, arrow_type)], [TimeType(6)])) == expected_t
    days = [dt.date(2024, 1, 1), None]
    assert rows_of(*encode_rows([pa.array(days, pa.date64())], [DateType()])) == [
        encode_row([v], [DateType()]) for v in days
    ]
    decs = [Decimal("1.5"), None, Decimal("-2.25")]
    for t in (DecimalType(10, 2), DecimalType(25, 2)):
        col = pa.array(decs, pa.decimal128(5, 2))
        assert rows_of(*encode_rows([col], [t])) == [encode_row([v], [t]) for v in decs]
    ints = pa.array([1, None, -3], pa.int32())
    assert rows_of(*encode_rows([ints], [BigIntType()])) == one_by_one([1, None, -3], BigIntType())
    with pytest.raises(SchemaError):
        encode_rows([pa.array([2**40])], [IntType()])
    with pytest.raises(SchemaError):
        encode_rows([pa.array([1])], [string_type()])
    sliced = pa.array([Decimal("9.99"), *decs], pa.decimal128(25, 2))[1:]
    assert rows_of(*encode_rows([sliced], [DecimalType(25, 2)])) == one_by_one(decs, DecimalType(25, 2))
    sliced = pa.array([Decimal("9.99"), *decs], pa.decimal128(10, 2))[1:]
    assert rows_of(*encode_rows([sliced], [DecimalType(10, 2)])) == one_by_one(decs, DecimalType(10, 2))
    flags = pa.array([True, None, False, True])[1:]
    assert rows_of(*encode_rows([flags], [BooleanType()])) == one_by_one([None, False, True], BooleanType())


# ---------------------------------------------------------------------------------------------------------
# Property: vectorized == scalar, decode(encode(x)) == x

_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20)


def _datetimes(precision: int) -> st.SearchStrategy[dt.datetime]:
    if precision > 6:
        # Arrow nanosecond timestamps only span the years 1677..2262.
        values = st.datetimes(min_value=dt.datetime(1678, 1, 1), max_value=dt.datetime(2261, 12, 31))
    else:
        values = st.datetimes()
    if precision <= 3:
        values = values.map(lambda v: v.replace(microsecond=v.microsecond // 1000 * 1000))
    return values


def value_strategy(t: DataType) -> st.SearchStrategy[Any]:
    match t:
        case BooleanType():
            return st.booleans()
        case TinyIntType():
            return st.integers(-(2**7), 2**7 - 1)
        case SmallIntType():
            return st.integers(-(2**15), 2**15 - 1)
        case IntType():
            return st.integers(-(2**31), 2**31 - 1)
        case BigIntType():
            return st.integers(-(2**63), 2**63 - 1)
        case FloatType():
            return st.floats(width=32, allow_nan=False)
        case DoubleType():
            return st.floats(allow_nan=False)
        case DateType():
            return st.dates()
        case TimeType():
            return st.times().map(lambda v: v.replace(microsecond=v.microsecond // 1000 * 1000))
        case DecimalType(precision=p, scale=s):
            return st.integers(-(10**p) + 1, 10**p - 1).map(lambda u: Decimal(f"{u}E-{s}"))
        case TimestampType(precision=p):
            return _datetimes(p)
        case LocalZonedTimestampType(precision=p):
            return _datetimes(p).map(lambda v: v.replace(tzinfo=UTC))
        case CharType() | VarCharType():
            return _TEXT
        case _:
            return st.binary(max_size=20)


PROPERTY_TYPES: list[DataType] = [
    BooleanType(),
    TinyIntType(),
    SmallIntType(),
    IntType(nullable=False),
    BigIntType(),
    FloatType(),
    DoubleType(),
    DateType(),
    TimeType(0),
    TimeType(3),
    DecimalType(10, 2),
    DecimalType(18, 0),
    DecimalType(19, 3),
    DecimalType(38, 10),
    TimestampType(0),
    TimestampType(3),
    TimestampType(6),
    TimestampType(9),
    LocalZonedTimestampType(3),
    LocalZonedTimestampType(6),
    CharType(3),
    VarCharType(10),
    string_type(),
    BinaryType(4),
    bytes_type(),
]


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[DataType], list[list[Any]]]:
    types = draw(st.lists(st.sampled_from(PROPERTY_TYPES), min_size=1, max_size=7))
    n = draw(st.integers(1, 12))
    cols = [draw(st.lists(st.none() | value_strategy(t), min_size=n, max_size=n)) for t in types]
    return types, [list(r) for r in zip(*cols, strict=True)]


@settings(max_examples=300, deadline=None)
@given(tables())
def test_vectorized_matches_scalar_and_round_trips(table: tuple[list[DataType], list[list[Any]]]) -> None:
    types, rows = table
    scalar = [encode_row(row, types) for row in rows]
    assert vectorized(rows, types) == scalar
    for row, encoded in zip(rows, scalar, strict=True):
        assert len(encoded) % 8 == 0
        assert decode_row(encoded, types) == row
        assert deserialize_row(serialize_row(row, types), types) == row


@pytest.mark.parametrize("t", PROPERTY_TYPES, ids=str)
def test_all_null_columns(t: DataType) -> None:
    rows: list[list[Any]] = [[None], [None]]
    assert vectorized(rows, [t]) == [encode_row([None], [t])] * 2
