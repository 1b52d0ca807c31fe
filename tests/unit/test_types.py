"""Paimon logical types: JSON form (§2.3), parsing, Arrow mapping and field-id assignment."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from lake_assets.errors import CorruptMetadataError, SchemaError
from lake_assets.spec.types import (
    STRING_LENGTH,
    ArrayType,
    BigIntType,
    BinaryType,
    BooleanType,
    CharType,
    DataField,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FieldIdCounter,
    FloatType,
    IntType,
    LocalZonedTimestampType,
    MapType,
    MultisetType,
    RowType,
    SmallIntType,
    TimestampType,
    TimeType,
    TinyIntType,
    VarBinaryType,
    VarCharType,
    bytes_type,
    fields_from_arrow_schema,
    from_arrow,
    is_fixed_length,
    parse_type,
    string_type,
    to_arrow,
    to_arrow_field,
    to_arrow_schema,
)
from tests.vectors import VECTORS_DIR, load_json

# Every atomic row of the §2.3 table, with the object it parses to.
ATOMIC: list[tuple[str, DataType]] = [
    ("BOOLEAN", BooleanType()),
    ("TINYINT", TinyIntType()),
    ("SMALLINT", SmallIntType()),
    ("INT", IntType()),
    ("BIGINT", BigIntType()),
    ("FLOAT", FloatType()),
    ("DOUBLE", DoubleType()),
    ("DECIMAL(10, 2)", DecimalType(10, 2)),
    ("DECIMAL(38, 18)", DecimalType(38, 18)),
    ("CHAR(5)", CharType(5)),
    ("VARCHAR(20)", VarCharType(20)),
    ("STRING", VarCharType(STRING_LENGTH)),
    ("BINARY(16)", BinaryType(16)),
    ("VARBINARY(100)", VarBinaryType(100)),
    ("BYTES", VarBinaryType(STRING_LENGTH)),
    ("DATE", DateType()),
    ("TIME(0)", TimeType(0)),
    ("TIME(3)", TimeType(3)),
    ("TIMESTAMP(6)", TimestampType(6)),
    ("TIMESTAMP(3)", TimestampType(3)),
    ("TIMESTAMP(9)", TimestampType(9)),
    ("TIMESTAMP(6) WITH LOCAL TIME ZONE", LocalZonedTimestampType(6)),
    ("TIMESTAMP(3) WITH LOCAL TIME ZONE", LocalZonedTimestampType(3)),
]

ALIASES: list[tuple[str, str]] = [
    ("INTEGER", "INT"),
    ("integer not null", "INT NOT NULL"),
    ("DOUBLE PRECISION", "DOUBLE"),
    ("DOUBLE PRECISION NOT NULL", "DOUBLE NOT NULL"),
    ("NUMERIC(5, 1)", "DECIMAL(5, 1)"),
    ("NUMERIC", "DECIMAL(10, 0)"),
    ("DEC(7)", "DECIMAL(7, 0)"),
    ("DEC", "DECIMAL(10, 0)"),
    ("DECIMAL", "DECIMAL(10, 0)"),
    ("DECIMAL(12)", "DECIMAL(12, 0)"),
    ("DECIMAL(10,2)", "DECIMAL(10, 2)"),
    ("CHAR", "CHAR(1)"),
    ("BINARY", "BINARY(1)"),
    ("VARCHAR(2147483647)", "STRING"),
    ("VARBINARY(2147483647)", "BYTES"),
    ("TIME", "TIME(0)"),
    ("TIME(3) WITHOUT TIME ZONE", "TIME(3)"),
    ("TIMESTAMP", "TIMESTAMP(6)"),
    ("TIMESTAMP WITHOUT TIME ZONE", "TIMESTAMP(6)"),
    ("TIMESTAMP(3) WITHOUT TIME ZONE NOT NULL", "TIMESTAMP(3) NOT NULL"),
    ("TIMESTAMP_LTZ(3)", "TIMESTAMP(3) WITH LOCAL TIME ZONE"),
    ("TIMESTAMP_LTZ", "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
    ("TIMESTAMP WITH LOCAL TIME ZONE", "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
    ("TIMESTAMP_LTZ(9) NOT NULL", "TIMESTAMP(9) WITH LOCAL TIME ZONE NOT NULL"),
    ("  BIGINT   NOT   NULL ", "BIGINT NOT NULL"),
    ("BIGINT NULL", "BIGINT"),
    ("ARRAY<INT NOT NULL>", {"type": "ARRAY", "element": "INT NOT NULL"}),
    ("MAP<STRING, BIGINT> NOT NULL", {"type": "MAP NOT NULL", "key": "STRING", "value": "BIGINT"}),
    ("MULTISET<DATE>", {"type": "MULTISET", "element": "DATE"}),
]

NESTED_JSON: list[Any] = [
    {"type": "ARRAY", "element": "INT"},
    {"type": "ARRAY NOT NULL", "element": "STRING NOT NULL"},
    {"type": "MAP", "key": "STRING NOT NULL", "value": "DECIMAL(10, 2)"},
    {"type": "MAP NOT NULL", "key": "INT", "value": {"type": "ARRAY", "element": "BYTES"}},
    {"type": "MULTISET", "element": "VARCHAR(3)"},
    {"type": "MULTISET NOT NULL", "element": "INT"},
    {
        "type": "ROW",
        "fields": [
            {"id": 3, "name": "a", "type": "INT NOT NULL"},
            {
                "id": 4,
                "name": "b",
                "type": {"type": "ARRAY", "element": "TIMESTAMP(3)"},
                "description": "doc",
            },
        ],
    },
    {"type": "ROW NOT NULL", "fields": [{"id": 7, "name": "x", "type": "STRING", "defaultValue": "'x'"}]},
]


def _type_jsons_in_vectors() -> list[Any]:
    found: list[Any] = []
    for dump in sorted(VECTORS_DIR.glob("*/metadata_dump.json")):
        for key, value in load_json(str(dump.relative_to(VECTORS_DIR))).items():
            if key.startswith("schema/"):
                found.extend(f["type"] for f in value["fields"])
    for vector in load_json("bucket_vectors.json")["vectors"]:
        found.extend(vector["types"])
    return found


VECTOR_TYPES = _type_jsons_in_vectors()


def test_vectors_have_types() -> None:
    assert len(set(map(str, VECTOR_TYPES))) >= 10


@pytest.mark.parametrize("text", sorted(set(VECTOR_TYPES)))
def test_vector_type_strings_round_trip(text: str) -> None:
    assert parse_type(text).to_json() == text


@pytest.mark.parametrize(("text", "expected"), ATOMIC)
def test_atomic_types(text: str, expected: DataType) -> None:
    assert parse_type(text) == expected
    assert expected.to_json() == text
    not_null = parse_type(text + " NOT NULL")
    assert not_null == expected.copy(nullable=False)
    assert not_null.to_json() == text + " NOT NULL"
    assert not not_null.nullable and not_null.copy(nullable=True) == expected


@pytest.mark.parametrize(("text", "canonical"), ALIASES)
def test_aliases(text: str, canonical: Any) -> None:
    assert parse_type(text).to_json() == canonical


@pytest.mark.parametrize("obj", NESTED_JSON)
def test_nested_json_round_trip(obj: Any) -> None:
    parsed = parse_type(obj)
    assert parsed.to_json() == obj
    assert parse_type(parsed.to_json()) == parsed


def test_nested_objects() -> None:
    row = parse_type(NESTED_JSON[6])
    assert isinstance(row, RowType)
    assert row.fields[0] == DataField(3, "a", IntType(nullable=False))
    assert row.fields[1].description == "doc"
    assert parse_type(NESTED_JSON[1]) == ArrayType(string_type(False), nullable=False)
    assert parse_type(NESTED_JSON[5]) == MultisetType(IntType(), nullable=False)
    assert parse_type(NESTED_JSON[2]) == MapType(string_type(False), DecimalType(10, 2))
    assert str(parse_type(NESTED_JSON[3])) == "MAP<INT, ARRAY<BYTES>> NOT NULL"


def test_helpers() -> None:
    assert string_type() == VarCharType(STRING_LENGTH)
    assert string_type(False).to_json() == "STRING NOT NULL"
    assert bytes_type().to_json() == "BYTES"
    assert bytes_type(nullable=False) == VarBinaryType(STRING_LENGTH, nullable=False)
    assert DecimalType() == DecimalType(10, 0)
    assert CharType().length == 1 and BinaryType().length == 1
    assert TimeType().precision == 0
    assert TimestampType().precision == 6 and LocalZonedTimestampType().precision == 6
    assert hash(RowType([DataField(0, "a", IntType())])) == hash(RowType((DataField(0, "a", IntType()),)))


@pytest.mark.parametrize(
    "bad",
    [
        "FOO",
        "BIGINTEGER",
        "INT NOT",
        "DECIMAL(40, 2)",
        "DECIMAL(5, 6)",
        "DECIMAL(10, 2",
        "TIMESTAMP(10)",
        "TIMESTAMP(3) WITH TIME ZONE",
        "VARCHAR(0)",
        "CHAR(-1)",
        "INT INT",
        "",
        "ARRAY<INT",
        "ROW<a INT>",
        {"type": "ARRAY"},
        {"type": "STRUCT", "fields": []},
        {"type": "ROW", "fields": [{"id": 0, "type": "INT"}]},
        {"type": "ROW", "fields": "nope"},
        5,
        None,
    ],
)
def test_bad_types_raise(bad: Any) -> None:
    with pytest.raises(CorruptMetadataError) as info:
        parse_type(bad)
    if isinstance(bad, str) and bad:
        assert repr(bad) in str(info.value)


def test_constructor_validation() -> None:
    with pytest.raises(SchemaError):
        DecimalType(39, 0)
    with pytest.raises(SchemaError):
        TimestampType(10)
    with pytest.raises(SchemaError):
        VarCharType(0)
    with pytest.raises(SchemaError):
        RowType((DataField(0, "a", IntType()), DataField(1, "a", IntType())))


def test_data_field_json() -> None:
    plain = DataField(0, "id", BigIntType(nullable=False))
    assert plain.to_json() == {"id": 0, "name": "id", "type": "BIGINT NOT NULL"}
    assert list(plain.to_json()) == ["id", "name", "type"]
    full = DataField(3, "c", DecimalType(10, 2), description="price", default_value="0")
    assert full.to_json() == {
        "id": 3,
        "name": "c",
        "type": "DECIMAL(10, 2)",
        "description": "price",
        "defaultValue": "0",
    }
    for f in (plain, full):
        assert DataField.from_json(f.to_json()) == f
    for bad in ({"id": 0, "name": "a"}, {"id": "0", "name": "a", "type": "INT"}, [], {"id": 0, "name": 1}):
        with pytest.raises(CorruptMetadataError):
            DataField.from_json(bad)


def test_vector_schema_fields_round_trip() -> None:
    for dump in sorted(VECTORS_DIR.glob("*/metadata_dump.json")):
        for key, value in load_json(str(dump.relative_to(VECTORS_DIR))).items():
            if key.startswith("schema/"):
                for f in value["fields"]:
                    assert DataField.from_json(f).to_json() == f


ARROW: list[tuple[DataType, pa.DataType]] = [
    (BooleanType(), pa.bool_()),
    (TinyIntType(), pa.int8()),
    (SmallIntType(), pa.int16()),
    (IntType(), pa.int32()),
    (BigIntType(), pa.int64()),
    (FloatType(), pa.float32()),
    (DoubleType(), pa.float64()),
    (DecimalType(10, 2), pa.decimal128(10, 2)),
    (DecimalType(38, 0), pa.decimal128(38, 0)),
    (CharType(3), pa.string()),
    (VarCharType(9), pa.string()),
    (string_type(), pa.string()),
    (BinaryType(4), pa.binary()),
    (VarBinaryType(9), pa.binary()),
    (bytes_type(), pa.binary()),
    (DateType(), pa.date32()),
    (TimeType(0), pa.time32("ms")),
    (TimeType(9), pa.time32("ms")),
    (TimestampType(0), pa.timestamp("ms")),
    (TimestampType(3), pa.timestamp("ms")),
    (TimestampType(4), pa.timestamp("us")),
    (TimestampType(6), pa.timestamp("us")),
    (TimestampType(9), pa.timestamp("ns")),
    (LocalZonedTimestampType(3), pa.timestamp("ms", tz="UTC")),
    (LocalZonedTimestampType(6), pa.timestamp("us", tz="UTC")),
    (LocalZonedTimestampType(7), pa.timestamp("ns", tz="UTC")),
    (ArrayType(IntType(nullable=False)), pa.list_(pa.field("element", pa.int32(), nullable=False))),
    (ArrayType(IntType()), pa.list_(pa.field("element", pa.int32()))),
    (
        MapType(string_type(False), DoubleType(nullable=False)),
        pa.map_(
            pa.field("key", pa.string(), nullable=False),
            pa.field("value", pa.float64(), nullable=False),
        ),
    ),
    (
        RowType((DataField(1, "a", IntType(nullable=False)), DataField(2, "b", string_type()))),
        pa.struct([pa.field("a", pa.int32(), nullable=False), pa.field("b", pa.string())]),
    ),
]


@pytest.mark.parametrize(("paimon", "arrow"), ARROW)
def test_to_arrow(paimon: DataType, arrow: pa.DataType) -> None:
    assert to_arrow(paimon) == arrow
    assert to_arrow(paimon.copy(nullable=False)) == arrow


def test_to_arrow_multiset_and_fields() -> None:
    ms = to_arrow(MultisetType(string_type()))
    assert pa.types.is_map(ms) and ms.item_type == pa.int32()
    f = to_arrow_field(DataField(5, "id", BigIntType(nullable=False)))
    assert f == pa.field("id", pa.int64(), nullable=False)
    assert f.metadata is None
    with_ids = to_arrow_field(DataField(5, "id", BigIntType()), field_ids=True)
    assert with_ids.nullable and with_ids.metadata == {b"PARQUET:field_id": b"5"}
    fields = [DataField(0, "a", IntType(nullable=False)), DataField(1, "b", DateType())]
    schema = to_arrow_schema(fields)
    assert schema == pa.schema([pa.field("a", pa.int32(), nullable=False), pa.field("b", pa.date32())])


FROM_ARROW: list[tuple[pa.DataType, DataType]] = [
    (pa.bool_(), BooleanType()),
    (pa.int8(), TinyIntType()),
    (pa.int16(), SmallIntType()),
    (pa.int32(), IntType()),
    (pa.int64(), BigIntType()),
    (pa.float32(), FloatType()),
    (pa.float64(), DoubleType()),
    (pa.decimal128(20, 3), DecimalType(20, 3)),
    (pa.string(), string_type()),
    (pa.large_string(), string_type()),
    (pa.string_view(), string_type()),
    (pa.binary(), bytes_type()),
    (pa.large_binary(), bytes_type()),
    (pa.binary(7), BinaryType(7)),
    (pa.date32(), DateType()),
    (pa.date64(), DateType()),
    (pa.time32("s"), TimeType(0)),
    (pa.time32("ms"), TimeType(3)),
    (pa.time64("us"), TimeType(6)),
    (pa.time64("ns"), TimeType(9)),
    (pa.timestamp("s"), TimestampType(0)),
    (pa.timestamp("ms"), TimestampType(3)),
    (pa.timestamp("us"), TimestampType(6)),
    (pa.timestamp("ns"), TimestampType(9)),
    (pa.timestamp("us", tz="Europe/Paris"), LocalZonedTimestampType(6)),
    (pa.timestamp("ms", tz="UTC"), LocalZonedTimestampType(3)),
    (pa.list_(pa.int64()), ArrayType(BigIntType())),
    (pa.large_list(pa.field("e", pa.string(), nullable=False)), ArrayType(string_type(False))),
    (pa.map_(pa.string(), pa.int32()), MapType(string_type(False), IntType())),
    (pa.dictionary(pa.int32(), pa.string()), string_type()),
]


@pytest.mark.parametrize(("arrow", "paimon"), FROM_ARROW)
def test_from_arrow(arrow: pa.DataType, paimon: DataType) -> None:
    assert from_arrow(arrow) == paimon
    assert from_arrow(arrow, nullable=False) == paimon.copy(nullable=False)


@pytest.mark.parametrize(
    ("arrow", "name"),
    [
        (pa.uint8(), "uint8"),
        (pa.uint16(), "uint16"),
        (pa.uint32(), "uint32"),
        (pa.uint64(), "uint64"),
        (pa.float16(), "halffloat"),
        (pa.null(), "null"),
        (pa.duration("s"), "duration"),
        (pa.list_(pa.uint32()), "uint32"),
    ],
)
def test_from_arrow_rejects(arrow: pa.DataType, name: str) -> None:
    with pytest.raises(SchemaError, match=name):
        from_arrow(arrow)


def _lossless_in_arrow(t: DataType) -> bool:
    # Arrow has no bounded strings, expresses only timestamp precisions 3/6/9, and map keys are
    # always NOT NULL there: those Paimon types cannot survive a trip through Arrow.
    if isinstance(t, TimeType | CharType | BinaryType | MapType):
        return False
    if isinstance(t, VarCharType | VarBinaryType) and t.length != STRING_LENGTH:
        return False
    return not (isinstance(t, TimestampType | LocalZonedTimestampType) and t.precision not in (3, 6, 9))


@pytest.mark.parametrize(
    "paimon",
    [t for t, _ in ARROW if _lossless_in_arrow(t)] + [VarCharType(STRING_LENGTH), DecimalType(38, 10)],
)
def test_arrow_round_trip_where_lossless(paimon: DataType) -> None:
    # ROW field ids come from the counter, so start it where the expected ids start.
    first_id = paimon.fields[0].id if isinstance(paimon, RowType) else 0
    assert from_arrow(to_arrow(paimon), ids=FieldIdCounter(first_id)) == paimon


def test_fields_from_arrow_schema_ids_depth_first() -> None:
    schema = pa.schema(
        [
            pa.field("a", pa.int64(), nullable=False),
            pa.field(
                "s",
                pa.struct(
                    [
                        pa.field("x", pa.string()),
                        pa.field("y", pa.list_(pa.struct([pa.field("z", pa.int8())]))),
                    ]
                ),
            ),
            pa.field("c", pa.date32()),
        ]
    )
    fields, highest = fields_from_arrow_schema(schema)
    assert [f.id for f in fields] == [0, 1, 5]
    assert highest == 5
    s_type = fields[1].type
    assert isinstance(s_type, RowType)
    assert [(f.id, f.name) for f in s_type.fields] == [(2, "x"), (3, "y")]
    y_type = s_type.fields[1].type
    assert isinstance(y_type, ArrayType) and isinstance(y_type.element, RowType)
    assert y_type.element.fields[0].id == 4
    assert fields[0].type == BigIntType(nullable=False)
    assert to_arrow_schema(fields) == schema

    shifted, top = fields_from_arrow_schema(pa.schema([pa.field("n", pa.int32())]), start_id=10)
    assert shifted == [DataField(10, "n", IntType())] and top == 10
    assert fields_from_arrow_schema(pa.schema([])) == ([], -1)


def test_is_fixed_length() -> None:
    fixed = [
        BooleanType(),
        TinyIntType(),
        SmallIntType(),
        IntType(),
        BigIntType(),
        FloatType(),
        DoubleType(),
        DateType(),
        TimeType(9),
        DecimalType(18, 2),
        TimestampType(3),
        LocalZonedTimestampType(0),
    ]
    variable = [
        DecimalType(19, 2),
        TimestampType(4),
        LocalZonedTimestampType(6),
        string_type(),
        CharType(1),
        VarCharType(3),
        BinaryType(1),
        bytes_type(),
        ArrayType(IntType()),
        MapType(IntType(), IntType()),
        MultisetType(IntType()),
        RowType(()),
    ]
    assert all(is_fixed_length(t) for t in fixed)
    assert not any(is_fixed_length(t) for t in variable)
