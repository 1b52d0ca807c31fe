"""`formats.parquet_splice`: a file made of an old file's unchanged column chunks and newly encoded
ones is, byte for byte, the file our writer makes of the same rows (same options, same row
groups), and parquet-cpp reads it with its page index on; `formats.thrift_compact` gives footers
back as it read them; what the splice cannot carry is refused, and a wrong offset does not pass."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lake_assets.formats import parquet_splice
from lake_assets.formats.parquet_splice import SpliceRefused, splice_columns
from lake_assets.formats.thrift_compact import decode_struct, encode_struct, field, set_field

# (Arrow type, a value for row i and variant v): the types a Paimon file column takes flat
TYPES: dict[str, tuple[pa.DataType, object]] = {
    "bool": (pa.bool_(), lambda i, v: (i + v) % 3 == 0),
    "int8": (pa.int8(), lambda i, v: (i * 7 + v) % 120 - 60),
    "int16": (pa.int16(), lambda i, v: (i * 31 + v) % 30000),
    "int32": (pa.int32(), lambda i, v: i % 5 + v),
    "int64": (pa.int64(), lambda i, v: i * 1_000_003 - (v << 40)),
    "float32": (pa.float32(), lambda i, v: i / 4 + v),
    "float64": (pa.float64(), lambda i, v: i * 0.37 - v),
    "string": (pa.string(), lambda i, v: f"s{i % 11}-{v}é"),
    "binary": (pa.binary(), lambda i, v: bytes([i % 256, v % 256]) * (i % 3)),
    "date": (pa.date32(), lambda i, v: dt.date(2020, 1, 1) + dt.timedelta(days=i % 400 + v)),
    "timestamp": (pa.timestamp("us"), lambda i, v: dt.datetime(2021, 5, 1) + dt.timedelta(seconds=i * 13 + v)),
    "decimal": (pa.decimal128(12, 3), lambda i, v: decimal.Decimal(i * 7 + v) / 1000),
}
KEYS = sorted(TYPES)


def _schema(kinds: list[str]) -> pa.Schema:
    fields = [pa.field("_KEY_k", pa.int64(), nullable=False, metadata={b"PARQUET:field_id": b"2147483646"})]
    fields += [pa.field(f"c{i}", TYPES[k][0], metadata={b"PARQUET:field_id": str(i).encode()})
               for i, k in enumerate(kinds)]
    return pa.schema(fields)


def _table(schema: pa.Schema, kinds: list[str], rows: int, variants: list[int], nulls: int) -> pa.Table:
    cols = [pa.array(range(rows), pa.int64())]
    for k, v in zip(kinds, variants, strict=True):
        make = TYPES[k][1]
        values = [None if nulls and (i * (v + 1)) % nulls == 0 else make(i, v) for i in range(rows)]  # type: ignore[operator]
        cols.append(pa.array(values, TYPES[k][0]))
    return pa.Table.from_arrays(cols, schema=schema)


def _write(table: pa.Table, groups: list[int], **options: object) -> bytes:
    sink = pa.BufferOutputStream()
    dictionary = options.get("use_dictionary")
    if isinstance(dictionary, list):
        options = {**options, "use_dictionary": [c for c in dictionary if c in table.column_names]}
    with pq.ParquetWriter(sink, table.schema, **options) as w:  # type: ignore[arg-type]
        start = 0
        for n in groups:
            w.write_table(table.slice(start, n), row_group_size=n)
            start += n
    return bytes(sink.getvalue().to_pybytes())


def _spliced(old_table: pa.Table, new_table: pa.Table, changed: list[int], groups: list[int],
             **options: object) -> tuple[bytes, bytes]:
    """(the splice of ``old_table``'s file with ``new_table``'s ``changed`` columns, ``new_table``'s file)."""
    old = _write(old_table, groups, **options)
    part = _write(new_table.select(changed), groups, **options)
    return splice_columns(old, part, changed), _write(new_table, groups, **options)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kinds=st.lists(st.sampled_from(KEYS), min_size=1, max_size=5), data=st.data())
def test_a_splice_is_the_file_our_writer_makes_of_the_new_rows(kinds: list[str], data: st.DataObject) -> None:
    rows = data.draw(st.integers(1, 3_000), label="rows")
    cut = data.draw(st.integers(0, rows - 1), label="cut")
    groups = [cut, rows - cut] if cut else [rows]
    nulls = data.draw(st.sampled_from([0, 1, 2, 5]), label="nulls")  # 1: every value null
    schema = _schema(kinds)
    changed = data.draw(st.lists(st.integers(1, len(kinds)), min_size=1, unique=True), label="changed")
    changed.sort()
    old_variants = [0] * len(kinds)
    new_variants = [3 if i + 1 in changed else 0 for i in range(len(kinds))]
    options = {
        "compression": data.draw(st.sampled_from(["zstd", "snappy", "none", "gzip", "lz4"]), label="codec"),
        "use_dictionary": data.draw(st.sampled_from([True, False, [f"c{i}" for i in range(0, len(kinds), 2)]]),
                                    label="dictionary"),
        "write_statistics": True, "store_decimal_as_integer": True,
        "data_page_size": data.draw(st.sampled_from([1 << 20, 1 << 10]), label="page"),
    }
    old_table = _table(schema, kinds, rows, old_variants, nulls)
    new_table = _table(schema, kinds, rows, new_variants, nulls)
    spliced, whole = _spliced(old_table, new_table, changed, groups, **options)
    assert spliced == whole
    assert pq.read_table(pa.BufferReader(spliced), page_checksum_verification=True).equals(new_table)


def test_footers_decode_and_encode_to_the_same_bytes() -> None:
    schema = _schema(KEYS)
    table = _table(schema, KEYS, 2_500, [1] * len(KEYS), 3)
    for options in ({}, {"write_page_index": True}, {"compression": "zstd", "use_dictionary": False}):
        data = _write(table, [2_000, 500], **options)
        n = int.from_bytes(data[-8:-4], "little")
        footer = data[-8 - n:-8]
        struct, end = decode_struct(footer)
        out = bytearray()
        encode_struct(struct, out)
        assert end == n and bytes(out) == footer
        # field by field: the same struct without the bytes each decoded struct keeps
        out = bytearray()
        encode_struct(_plain(struct), out)
        assert bytes(out) == footer


def _plain(value: object) -> object:
    """``value`` with every decoded struct in it copied to a plain list (no kept bytes)."""
    if isinstance(value, list):
        return [(fid, t, _plain(v)) for fid, t, v in value]
    if isinstance(value, tuple):
        return (value[0], [_plain(v) for v in value[1]])
    return value


def test_a_decoded_struct_changed_by_set_field_is_encoded_with_the_change() -> None:
    """`set_field` on a decoded struct drops the bytes it kept; a copy (``list``) keeps none."""
    data = _write(_table(_schema(KEYS), KEYS, 100, [1] * len(KEYS), 3), [100])
    n = int.from_bytes(data[-8:-4], "little")
    struct, _ = decode_struct(data[-8 - n:-8])
    copy = list(struct)
    set_field(struct, 3, 99)  # FileMetaData.num_rows
    set_field(copy, 3, 98)
    for changed, rows in ((struct, 99), (copy, 98)):
        out = bytearray()
        encode_struct(changed, out)
        again, _ = decode_struct(bytes(out))
        assert field(again, 3) == rows and _plain(again)[:2] == _plain(changed)[:2]


def test_a_spliced_file_reads_by_row_group_and_filter_with_its_statistics() -> None:
    """Our writer writes no page index (pyarrow's default; an old file with one is refused):
    what a reader prunes by is the chunks' statistics, which come with the chunks."""
    schema = _schema(["int64", "string", "float64"])
    old, new = (_table(schema, ["int64", "string", "float64"], 5_000, v, 4) for v in ([0, 0, 0], [0, 0, 2]))
    spliced, _ = _spliced(old, new, [3], [4_000, 1_000], compression="zstd")
    meta = pq.read_metadata(pa.BufferReader(spliced))
    assert meta.row_group(1).column(3).statistics.max == pa.compute.max(new.column("c2").slice(4_000)).as_py()
    assert pq.read_table(pa.BufferReader(spliced), filters=[("c2", ">", 100.0)]).equals(
        new.filter(pa.compute.greater(new.column("c2"), 100.0)))
    assert pq.ParquetFile(pa.BufferReader(spliced)).read_row_group(1).equals(new.slice(4_000))


def test_a_wrong_offset_gives_a_file_that_does_not_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    schema = _schema(["int64", "string"])
    old, new = (_table(schema, ["int64", "string"], 3_000, v, 0) for v in ([0, 0], [5, 0]))
    right, whole = _spliced(old, new, [1], [3_000], compression="snappy")
    assert right == whole
    real = parquet_splice._moved
    monkeypatch.setattr(parquet_splice, "_moved", lambda cc, cm, delta: real(cc, cm, delta + 1))
    wrong, _ = _spliced(old, new, [1], [3_000], compression="snappy")
    assert wrong != whole
    with pytest.raises((OSError, ValueError)):
        if not pq.read_table(pa.BufferReader(wrong)).equals(new):
            raise ValueError("other rows")


@pytest.mark.parametrize("what", ["page-index", "bloom", "groups", "field-id", "nested", "codec"])
def test_what_a_splice_cannot_carry_is_refused(what: str) -> None:
    schema = _schema(["int64", "string"])
    old, new = (_table(schema, ["int64", "string"], 1_000, v, 0) for v in ([0, 0], [4, 0]))
    old_options: dict[str, object] = {"compression": "zstd"}
    new_options: dict[str, object] = {"compression": "zstd"}
    groups, new_groups, part = [1_000], [1_000], new.select([1])
    if what == "page-index":
        old_options["write_page_index"] = True
    elif what == "bloom":
        new_options["bloom_filter_options"] = {"c0": {"ndv": 100, "fpp": 0.05}}
    elif what == "groups":
        new_groups = [600, 400]
    elif what == "field-id":
        part = part.cast(pa.schema([part.schema.field(0).with_metadata({b"PARQUET:field_id": b"9"})]))
    elif what == "codec":
        new_options["compression"] = "snappy"
    else:
        nested = pa.struct([("x", pa.int64())])
        old = pa.table({"k": pa.array(range(1_000)), "s": pa.array([{"x": i} for i in range(1_000)], nested)})
        part = pa.table({"k": pa.array(range(1, 1_001))})
    with pytest.raises(SpliceRefused):
        splice_columns(_write(old, groups, **old_options), _write(part, new_groups, **new_options),
                       [0] if what == "nested" else [1])
