"""The range-bitmap file index (Paimon 1.x) against pypaimon-rust 0.4, its only other writer here
(Java 0.9 has none: tests/differential/test_range_bitmap_java.py; pypaimon 2.1 neither writes nor
reads data-file indexes).

Java HEAD's source (``RangeBitmapFileIndex``, ``RangeBitmap``, ``ChunkedDictionary``,
``BitSliceIndexBitmap``) defines the bytes; rust writes the same ones, run-optimized roaring
bitmaps included, so for the same rows our payload is rust's byte for byte (every type Java keys but
TIME, which rust's SQL cannot create - it keys it as INT and DATE; chunk sizes of its default and
smaller ones). Both ways: we prune by rust's indexes exactly (each
file skipped holds no match, every match is read), and rust answers SQL filters over tables we
indexed with the rows a filter selects.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyroaring import BitMap

from lake_assets import Catalog
from lake_assets.formats.file_index import read_container
from lake_assets.formats.range_bitmap_index import RangeBitmapIndex, literal_keys
from lake_assets.formats.range_bitmap_index_write import RangeBitmapIndexBuilder
from lake_assets.ops.file_index_prune import index_may_match
from lake_assets.predicate import Predicate

from .paimon import PypaimonRust

VECTORS = Path(__file__).parents[1] / "data" / "range_bitmap_rust_vectors.json"
COLUMNS = ("a TINYINT", "sm SMALLINT", "i INT", "b BIGINT", "f FLOAT", "d DOUBLE", "s STRING", "c CHAR(6)",
           "dt DATE", "e DECIMAL(10,2)", "t3 TIMESTAMP(3)", "t6 TIMESTAMP(6)",
           "lz TIMESTAMP WITH TIME ZONE", "bo BOOLEAN")
NAMES = tuple(c.split()[0] for c in COLUMNS)
# (rust's SQL makes TIMESTAMP WITH TIME ZONE a TIMESTAMP(3) WITH LOCAL TIME ZONE)
# smaller chunks than the 16 kb default for some columns: many chunks in a dictionary
CHUNKS = {"s": "64 b", "i": "16 b", "d": "0 b", "sm": "6 b"}


def _scrambled(i: int) -> int:
    return (i * 2654435761) % 1_000_003


def _sql_row(i: int, clustered: bool) -> str:
    """Row ``i`` as SQL: v in [-100, 100) (pseudo-random, or i // 10 - 20 when ``clustered``, so
    that bitmaps hold runs) in each column's terms; every 7th row null."""
    if i % 7 == 0:
        return f"({i}, " + ", ".join(["NULL"] * len(COLUMNS)) + ")"
    v = i // 10 - 20 if clustered else _scrambled(i) % 200 - 100
    zero = "CAST('-0.0' AS DOUBLE)" if v == 3 else f"{v / 8}"  # -0.0 and 0.0: two keys (Double.compare)
    return (f"({i}, {v}, {v * 300}, {v * 1000}, {v * 10**12}, CAST({v / 4} AS FLOAT), {zero}, "
            f"'str{v}', 'c{v % 50}', CAST('2000-01-01' AS DATE) + INTERVAL '{v} days', "
            f"CAST({v / 4} AS DECIMAL(10,2)), "
            f"TIMESTAMP '2000-01-01 00:00:00' + INTERVAL '{v * 7} milliseconds', "
            f"TIMESTAMP '2000-01-01 00:00:00' + INTERVAL '{v * 7} microseconds', "
            f"CAST(TIMESTAMP '2000-01-01 00:00:00' + INTERVAL '{v * 11} milliseconds' AS TIMESTAMP WITH TIME ZONE), "
            f"{'TRUE' if v % 2 else 'FALSE'})")


def _rust_table(rust: PypaimonRust, wh: str, name: str, batches: list[list[int]], clustered: bool = False,
                threshold: str = "1 b") -> None:
    chunks = "".join(f", 'file-index.range-bitmap.{c}.chunk-size'='{size}'" for c, size in CHUNKS.items())
    rust.sql(wh, "CREATE SCHEMA IF NOT EXISTS paimon.db",
             f"CREATE TABLE paimon.db.{name} (id INT, {', '.join(COLUMNS)}) WITH ("
             f"'file-index.range-bitmap.columns'='id,{','.join(NAMES)}', "
             f"'file-index.in-manifest-threshold'='{threshold}'{chunks})")
    for ids in batches:
        rust.sql(wh, f"INSERT INTO paimon.db.{name} VALUES " + ",".join(_sql_row(i, clustered) for i in ids))


def _entries(t: Any) -> list[Any]:
    return sorted(t.store.file_store_scan().live_entries(t.latest_snapshot()), key=lambda e: e.file.min_sequence_number)


def _payloads(wh: str, t: Any) -> list[dict[str, bytes]]:
    """Each live file's range-bitmap payloads by column, in the order written."""
    out = []
    for e in _entries(t):
        if e.file.embedded_file_index is not None:
            data = e.file.embedded_file_index
        else:
            (index_file,) = e.file.extra_files
            (data_path,) = Path(wh).rglob(e.file.file_name)
            data = (data_path.parent / index_file).read_bytes()
        out.append({c: p for c, types in read_container(data).items() if (p := types.get("range-bitmap"))})
    return out


def _ours(t: Any, data: pa.Table, column: str) -> bytes:
    """Our payload for one file's rows (in file order), fed in uneven batches."""
    size = t.schema.options.get(f"file-index.range-bitmap.{column}.chunk-size")
    b = RangeBitmapIndexBuilder(t.schema.field(column).type, column,
                                None if size is None else int(size.split()[0]))
    values = data.column(column)
    for start in range(0, len(values), 37):
        b.add(values.slice(start, 37))
    return b.finish()


@pytest.mark.parametrize("clustered", [False, True], ids=["scattered", "clustered"])
def test_our_payloads_are_rusts_for_every_type(rust: PypaimonRust, tmp_path: Path, clustered: bool) -> None:
    wh = str(tmp_path / "wh")
    _rust_table(rust, wh, "p", [list(range(180))], clustered)  # one statement of ~100 kB: an argument's limit
    t = Catalog(wh).get_table("db.p")
    (theirs,) = _payloads(wh, t)
    assert set(theirs) == {"id", *NAMES}
    data = t.to_arrow()
    for column, payload in theirs.items():
        assert _ours(t, data, column) == payload, column
        index = RangeBitmapIndex(payload, t.schema.field(column).type)
        assert index.rows == 180
        # one code per distinct key (-0.0 and 0.0 are two, as Double.compare has them)
        assert index.cardinality == len(set(literal_keys(data.column(column).drop_null(), index.codec.type)))


def _verdicts(t: Any, flt: list[tuple[Any, ...]]) -> list[bool]:
    pred = Predicate.of(flt)
    assert pred is not None
    return [index_may_match(t.store, e, pred, t.schema) for e in _entries(t)]


@pytest.mark.parametrize("threshold", ["1 mb", "1 b"], ids=["embedded", "index-file"])
def test_we_prune_by_rusts_range_bitmaps_exactly(rust: PypaimonRust, tmp_path: Path, threshold: str) -> None:
    wh = str(tmp_path / "wh")
    # four files of ids k*50 .. k*50+49, values clustered by id: i // 10 - 20 in [5k - 20, 5k - 16]
    _rust_table(rust, wh, "p", [list(range(k * 50, k * 50 + 50)) for k in range(4)], True, threshold)
    t = Catalog(wh).get_table("db.p")
    full = t.to_arrow()
    cases: list[tuple[list[tuple[Any, ...]], list[bool] | None]] = [
        ([("id", "<", 50)], [True, False, False, False]),
        ([("id", ">=", 150)], [False, False, False, True]),
        ([("id", "in", [0, 199])], [True, False, False, True]),
        ([("id", "=", 1000)], [False] * 4),
        ([("id", ">", 60), ("id", "<=", 70)], [False, True, False, False]),
        ([("id", "not in", [1, 2])], [True] * 4),
        ([("s", "=", "str-9")], [False, False, True, False]),
        ([("s", "in", ["str-20", "str-3", "nope"])], [True, False, False, True]),
        # byte order: 'str-20' > 'str-2' > 'str-15', and 'str-9' > 'str-2'
        ([("s", ">", "str-2")], [True, False, True, True]),
        ([("i", ">=", -1500)], [False, False, False, True]),
        ([("b", "<", -15 * 10**12)], [True, False, False, False]),
        ([("e", "<=", Decimal("-4.75"))], [True, False, False, False]),
        ([("d", "=", 0.0)], None), ([("d", "<", 0.0)], None), ([("d", "<=", -0.0)], None),
        ([("f", ">", -1.0)], None), ([("a", "!=", -20)], None), ([("sm", "<=", -5700)], None),
        ([("dt", ">", dt.date(1999, 12, 20))], None),
        ([("t3", ">=", dt.datetime(1999, 12, 31, 23, 59, 59, 900_000))], None),
        ([("t6", "<", dt.datetime(1999, 12, 31, 23, 59, 59, 999_900))], None),
        ([("lz", ">", dt.datetime(1999, 12, 31, 23, 59, 59, 900_000, dt.UTC))], None),
        ([("bo", "=", True)], None), ([("c", "in", ["c-3", "c-17"])], None),
        ([("id", "is null")], [False] * 4), ([("s", "is null")], [True] * 4), ([("s", "is not null")], [True] * 4),
    ]
    for flt, kept in cases:
        verdicts = _verdicts(t, flt)
        if kept is not None:
            assert verdicts == kept, flt
        pred = Predicate.of(flt)
        assert pred is not None
        # a file is skipped only when none of its rows match
        assert t.to_arrow(filter=flt).sort_by("id").equals(pred.filter_table(full).sort_by("id")), flt
    # the value columns: the filters above skip files (the indexes are used, not only parsed)
    assert sum(not v for flt, kept in cases if kept is None for v in _verdicts(t, flt)) >= 10


def _schema() -> pa.Schema:
    return pa.schema([("id", pa.int32()), ("s", pa.string()), ("b", pa.int64()), ("f", pa.float64()),
                      ("d", pa.date32()), ("e", pa.decimal128(10, 2)), ("t", pa.timestamp("us")),
                      ("bo", pa.bool_())])


@pytest.mark.parametrize("threshold", ["1 mb", "0"], ids=["embedded", "index-file"])
def test_rust_reads_our_range_bitmap_tables_with_filters(rust: PypaimonRust, tmp_path: Path, threshold: str) -> None:
    wh = str(tmp_path / "wh")
    schema = _schema()
    lake = Catalog(wh)
    lake.create_database("db")
    t = lake.create_table("db.t", schema, options={
        "bucket": "-1", "file-index.range-bitmap.columns": "s,b,f,d,e,t,bo",
        "file-index.range-bitmap.s.chunk-size": "32 b", "file-index.in-manifest-threshold": threshold})
    for k in range(3):
        ids = list(range(k * 40, k * 40 + 40))
        vals = [None if i % 6 == 0 else (_scrambled(i) % 60 - 30) + 20 * k for i in ids]
        t.write_arrow(pa.table({
            "id": ids, "s": [None if v is None else f"v{v}" for v in vals], "b": vals,
            "f": [None if v is None else (-0.0 if v == 0 else v / 3) for v in vals],
            "d": [None if v is None else dt.date(2000, 1, 1) + dt.timedelta(days=v) for v in vals],
            "e": [None if v is None else Decimal(v) / 4 for v in vals],
            "t": [None if v is None else dt.datetime(2000, 1, 1) + dt.timedelta(microseconds=v) for v in vals],
            "bo": [None if v is None else v % 3 == 0 for v in vals]}, schema=schema))
    assert all(len(p) == 7 for p in _payloads(wh, t))
    data = t.to_arrow()
    epoch = dt.datetime(2000, 1, 1)
    for column, sql, test in [
        ("b", "b = 7", lambda v: v == 7), ("b", "b < -20", lambda v: v is not None and v < -20),
        ("b", "b <= 0", lambda v: v is not None and v <= 0), ("b", "b > 40", lambda v: v is not None and v > 40),
        ("b", "b >= 49", lambda v: v is not None and v >= 49), ("b", "b IN (-30, 3, 1000)", lambda v: v in (-30, 3)),
        ("b", "b NOT IN (1, 2)", lambda v: v is not None and v not in (1, 2)),
        ("b", "b <> 5", lambda v: v is not None and v != 5), ("b", "b IS NULL", lambda v: v is None),
        ("b", "b IS NOT NULL", lambda v: v is not None),
        ("b", "b BETWEEN -5 AND 5", lambda v: v is not None and -5 <= v <= 5),
        ("s", "s = 'v12'", lambda v: v == "v12"), ("s", "s > 'v5'", lambda v: v is not None and v > "v5"),
        ("s", "s IN ('v-3', 'v44')", lambda v: v in ("v-3", "v44")),
        ("f", "f > 3.0", lambda v: v is not None and v > 3.0),
        ("f", "f <= 0.0", lambda v: v is not None and v <= 0.0),
        ("d", "d < CAST('1999-12-15' AS DATE)", lambda v: v is not None and v < dt.date(1999, 12, 15)),
        ("e", "e >= CAST(10.25 AS DECIMAL(10,2))", lambda v: v is not None and v >= Decimal("10.25")),
        ("t", "t > TIMESTAMP '2000-01-01 00:00:00.000030'",
         lambda v: v is not None and v > epoch + dt.timedelta(microseconds=30)),
        ("bo", "bo = TRUE", lambda v: v is True), ("bo", "bo = FALSE", lambda v: v is False),
    ]:
        rows = rust.query(wh, f"SELECT id FROM paimon.db.t WHERE {sql}")
        expected = sorted(r["id"] for r in data.to_pylist() if test(r[column]))
        assert sorted(r["id"] for r in rows) == expected, sql


def _json_value(v: Any) -> Any:
    if isinstance(v, float):
        return repr(v)  # NaN, inf and -0.0 survive as text
    if isinstance(v, (dt.date, dt.time, dt.datetime)):
        return v.isoformat()
    if isinstance(v, Decimal):
        return str(v)
    return v


def rust_vectors(rust: PypaimonRust, wh: str) -> dict[str, Any]:
    """pypaimon-rust's payloads of one file of every type, with the file's values (the stored
    vectors of tests/unit/test_range_bitmap_index.py)."""
    _rust_table(rust, wh, "v", [list(range(150))])
    t = Catalog(wh).get_table("db.v")
    (theirs,) = _payloads(wh, t)
    data = t.to_arrow()
    out = []
    for column in ("id", *NAMES):
        size = t.schema.options.get(f"file-index.range-bitmap.{column}.chunk-size")
        out.append({"column": column, "type": str(t.schema.field(column).type.copy(nullable=True)),
                    "chunk_size": None if size is None else int(size.split()[0]),
                    "values": [None if v is None else _json_value(v) for v in data.column(column).to_pylist()],
                    "payload": base64.b64encode(theirs[column]).decode()})
    return {"writer": "pypaimon-rust 0.4.0", "indexes": out}


def test_stored_vectors_are_rusts(rust: PypaimonRust, tmp_path: Path) -> None:
    stored = json.loads(VECTORS.read_text())
    assert rust_vectors(rust, str(tmp_path / "wh")) == stored


def test_pypaimon_reads_our_indexed_tables_and_its_unindexed_files_are_kept(pypaimon: Any, tmp_path: Path) -> None:
    """pypaimon 2.1 has no data-file index (its ``globalindex`` is another format): it reads a table we
    indexed in full, and the files it writes into one carry no index, which our reads then keep."""
    wh = str(tmp_path / "wh")
    schema = pa.schema([("id", pa.int32()), ("s", pa.string()), ("b", pa.int64())])
    lake = Catalog(wh)
    lake.create_database("db")
    t = lake.create_table("db.t", schema, options={"bucket": "-1", "file-index.range-bitmap.columns": "s,b"})
    ours = pa.table({"id": [1, 2, 3], "s": ["a", None, "c"], "b": [10, 20, None]}, schema=schema)
    t.write_arrow(ours)
    assert pypaimon.read(wh, "db.t").sort_by("id").equals(ours)
    theirs = pa.table({"id": [4, 5], "s": ["a", "z"], "b": [10, 99]}, schema=schema)
    pypaimon.write(wh, "db.t", theirs)
    t = lake.get_table("db.t")
    first, second = _entries(t)
    assert first.file.embedded_file_index is not None
    assert second.file.embedded_file_index is None and not second.file.extra_files
    for flt, kept, ids in [([("s", "=", "z")], [False, True], [5]), ([("b", ">", 50)], [False, True], [5]),
                           ([("s", "=", "a")], [True, True], [1, 4]), ([("b", "<", 15)], [True, True], [1, 4])]:
        assert _verdicts(t, flt) == kept, flt  # our file by its index; theirs, without one, always kept
        assert sorted(t.to_arrow(filter=flt).column("id").to_pylist()) == ids, flt


def test_a_large_file_is_rusts_byte_for_byte(rust: PypaimonRust, tmp_path: Path) -> None:
    """200,000 rows in one file: a dictionary of many 16 kb chunks (``id``), bitmaps with bitset
    containers (``m``: 1000 values scattered, nulls every 11th row) and with runs (``s``)."""
    wh = str(tmp_path / "wh")
    rust.sql(wh, "CREATE SCHEMA paimon.db",
             "CREATE TABLE paimon.db.t (id BIGINT, m BIGINT, s STRING) WITH ("
             "'file-index.range-bitmap.columns'='id,m,s', 'file-index.in-manifest-threshold'='1 b')",
             "INSERT INTO paimon.db.t SELECT value, CASE WHEN value % 11 = 0 THEN NULL ELSE (value * 7919) % 1000 END, "
             "CONCAT('k', CAST(value / 1000 AS VARCHAR)) FROM generate_series(0, 199999)")
    t = Catalog(wh).get_table("db.t")
    (theirs,) = _payloads(wh, t)
    data = t.to_arrow()
    assert data.num_rows == 200_000
    for column in ("id", "m", "s"):
        b = RangeBitmapIndexBuilder(t.schema.field(column).type, column)
        for start in range(0, data.num_rows, 65_536):
            b.add(data.column(column).slice(start, 65_536))
        assert b.finish() == theirs[column], column
    index = RangeBitmapIndex(theirs["id"], t.schema.field("id").type)
    ids = data.column("id").to_pylist()  # in file order (rust's parallel plan need not keep id order)
    assert index.rows_matching(">=", [199_990]) == BitMap([row for row, i in enumerate(ids) if i >= 199_990])
    assert sorted(t.to_arrow(filter=[("m", "=", 0)]).column("id").to_pylist()) == \
        [i for i in range(200_000) if i % 11 and (i * 7919) % 1000 == 0]
