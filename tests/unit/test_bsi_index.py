"""The bsi (bit-sliced) file index: its bytes as Java HEAD's source lays them out, the rows each
term gets from it against numpy's answer, and reads pruned by it against reads filtered row by row.

pypaimon-rust 0.4, the only writer of bsi here, is checked in tests/interop/test_bsi_interop.py.
"""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyroaring import BitMap

from lake_assets import Catalog
from lake_assets.errors import InvalidDataError, UnsupportedFeatureError
from lake_assets.formats.bsi_index import BsiIndex, BsiIndexBuilder, bsi_keys, term_keys
from lake_assets.formats.file_index import read_container
from lake_assets.ops.file_index_prune import index_may_match, prunes_by_index
from lake_assets.predicate import Predicate
from lake_assets.spec.data_types import (
    BigIntType,
    DateType,
    DecimalType,
    LocalZonedTimestampType,
    TimestampType,
    TimeType,
    TinyIntType,
)
from tests.unit.test_bsi_column_types import carry_bsi_column

_OPS = ("=", "!=", "<", "<=", ">", ">=", "in", "not in")
LONG_MIN = -(2**63)


def _build(values: list[int | None], dt_: Any = None, chunk: int = 7) -> bytes:
    b = BsiIndexBuilder(dt_ or BigIntType(), "c")
    arr = pa.array(values, pa.int64())
    for start in range(0, max(len(values), 1), chunk):
        b.add(arr.slice(start, chunk))
    return b.finish()


def _expected(values: list[int | None], op: str, lits: list[int]) -> BitMap:
    """The rows lake_assets' filter keeps for ``c op lits`` (SQL's: a null row matches no term,
    ``!=`` and ``not in`` included)."""
    out = BitMap()
    for i, v in enumerate(values):
        if v is None:
            hit = False
        elif op in ("=", "in"):
            hit = v in lits
        elif op == "not in":
            hit = v not in lits
        else:
            lit = lits[0]
            hit = {"!=": v != lit, "<": v < lit, "<=": v <= lit, ">": v > lit, ">=": v >= lit}[op]
        if hit:
            out.add(i)
    return out


def test_payload_layout_is_javas() -> None:
    # rows: 5, -3, null, 0, 6 -> positive max 6 (3 slices), negative max 3 (2 slices), min 0 always
    payload = _build([5, -3, None, 0, 6])
    assert payload[:6] == struct.pack(">biB", 1, 5, 1)
    version, lo, hi = struct.unpack_from(">bqq", payload, 6)
    assert (version, lo, hi) == (1, 0, 6)
    index = BsiIndex.parse(payload)
    assert index.rows == 5
    assert index.positive.ebm == BitMap([0, 3, 4])
    # slice i: the rows whose value has bit i set (5 = 101, 0, 6 = 110)
    assert index.positive.slices == (BitMap([0]), BitMap([4]), BitMap([0, 4]))
    assert (index.negative.min, index.negative.max) == (0, 3)
    assert index.negative.ebm == BitMap([1])
    assert index.negative.slices == (BitMap([1]), BitMap([1]))
    # nothing negative: "has negative" false and nothing after it
    only_positive = _build([1, None, 2])
    assert only_positive.endswith(b"\x00") and BsiIndex.parse(only_positive).negative.ebm == BitMap()
    # all null: a row count and two false flags
    assert _build([None, None]) == struct.pack(">bi??", 1, 2, False, False)
    # Java's writer run-optimizes each bitmap (RoaringBitmap32.serialize): 0..999 is one run
    dense = BsiIndex.parse(_build(list(range(1000)), chunk=300))
    assert dense.positive.ebm == BitMap(range(1000))
    (cookie,) = struct.unpack_from("<I", _build(list(range(1000))), 23)  # the ebm, after version, min and max
    assert cookie & 0xFFFF == 12347  # the portable format's cookie of a bitmap with run containers


@settings(max_examples=150, deadline=None)
@given(values=st.lists(st.one_of(st.none(), st.integers(LONG_MIN + 1, 2**63 - 1), st.integers(-40, 40)),
                       max_size=60),
       op=st.sampled_from(_OPS), lits=st.lists(st.integers(LONG_MIN, 2**63 - 1) | st.integers(-45, 45),
                                               min_size=1, max_size=3),
       chunk=st.integers(1, 20))
def test_rows_of_each_term_are_exact(values: list[int | None], op: str, lits: list[int], chunk: int) -> None:
    index = BsiIndex.parse(_build(values, chunk=chunk))
    lits = lits if op in ("in", "not in") else lits[:1]
    assert index.rows_matching(op, lits) == _expected(values, op, lits)


def test_long_min_is_refused_as_javas_writer_fails() -> None:
    with pytest.raises(InvalidDataError, match="-9223372036854775808 has no bsi magnitude"):
        _build([1, LONG_MIN])
    # a literal of Long.MIN_VALUE matches nothing below it, everything above it
    index = BsiIndex.parse(_build([3, -4, None]))
    assert index.rows_matching("<", [LONG_MIN]) == BitMap()
    assert index.rows_matching(">", [LONG_MIN]) == BitMap([0, 1])


def test_keys_are_javas_value_mapper() -> None:
    day = dt.date(1969, 12, 30)
    assert bsi_keys(pa.array([day, None]), DateType())[0][0] == -2
    assert bsi_keys(pa.array([dt.time(0, 0, 1, 500_000)], pa.time32("ms")), TimeType())[0].tolist() == [1500]
    ts = dt.datetime(1969, 12, 31, 23, 59, 59, 999_999)
    # TIMESTAMP(p <= 3) as epoch millis, wider ones as epoch micros, floored as Paimon's Timestamp
    assert bsi_keys(pa.array([ts], pa.timestamp("ms")), TimestampType(3))[0].tolist() == [-1]
    assert bsi_keys(pa.array([ts], pa.timestamp("us")), TimestampType(6))[0].tolist() == [-1]
    ns = pa.array([-1], pa.int64()).view(pa.timestamp("ns", tz="UTC"))
    assert bsi_keys(ns, LocalZonedTimestampType(9))[0].tolist() == [-1]
    # DECIMAL by its unscaled value, offsets of sliced arrays honoured
    dec = pa.array([Decimal("1.25"), None, Decimal("-9999999999999999.99")], pa.decimal128(18, 2))
    keys, valid = bsi_keys(dec.slice(1), DecimalType(18, 2))
    assert keys[1] == -999_999_999_999_999_999 and valid.tolist() == [False, True]
    assert bsi_keys(pa.array([-5], pa.int8()), TinyIntType())[0].tolist() == [-5]


def test_nanosecond_timestamps_never_prune_a_match() -> None:
    """TIMESTAMP(9) values are indexed by their micros: a literal between two values of the same
    micro keeps them (Java's reader would drop them for <, > and !=)."""
    dt9 = TimestampType(9)
    lit = pa.array([500], pa.int64()).view(pa.timestamp("ns"))  # 0.5 micros
    assert term_keys(lit, dt9, "<") == ("<=", [0])
    assert term_keys(lit, dt9, ">") == (">=", [0])
    assert term_keys(lit, dt9, "!=") is None and term_keys(lit, dt9, "not in") is None
    # rows at 0.1, 0.9 and 5 micros: < 0.5 micros matches row 0, > 0.5 micros rows 1 and 2 (Java's
    # strict < 0 and > 0 on the micros would give no row and row 2 only)
    b = BsiIndexBuilder(dt9, "t")
    b.add(pa.array([100, 900, 5_000], pa.int64()).view(pa.timestamp("ns")))
    index = BsiIndex.parse(b.finish())
    asked = term_keys(lit, dt9, "<")
    assert asked is not None and index.rows_matching(*asked) >= BitMap([0])
    asked = term_keys(lit, dt9, ">")
    assert asked is not None and index.rows_matching(*asked) >= BitMap([1, 2])
    assert term_keys(pa.array([None], pa.int64()), BigIntType(), "in") is None  # a null literal decides nothing


def test_parse_refuses_what_is_not_a_bsi_index() -> None:
    good = _build([1, 2, -3])
    for bad in (b"\x02" + good[1:], good[:20], good[:6] + b"\x07" + good[7:]):
        with pytest.raises(InvalidDataError):
            BsiIndex.parse(bad)


# ---------------------------------------------------------------- tables


SCHEMA = pa.schema([("id", pa.int32()), ("i", pa.int32()), ("b", pa.int64()), ("d", pa.date32()),
                    ("ts", pa.timestamp("us")), ("dec", pa.decimal128(10, 2)), ("s", pa.string())])
BSI_COLUMNS = "i,b,d,ts,dec"


def _table_rows(ids: list[int], seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    base = int(rng.integers(-50, 50))
    vals = [None if rng.random() < 0.15 else base + int(rng.integers(-20, 20)) for _ in ids]
    return pa.table({
        "id": ids, "i": vals, "b": [None if v is None else v * 1_000_003 for v in vals],
        "d": [None if v is None else dt.date(2000, 1, 1) + dt.timedelta(days=v) for v in vals],
        "ts": [None if v is None else dt.datetime(2000, 1, 1) + dt.timedelta(microseconds=7 * v) for v in vals],
        "dec": [None if v is None else Decimal(v) / 4 for v in vals],
        "s": [f"s{i}" for i in ids]}, schema=SCHEMA)


def _literal(column: str, v: int) -> Any:
    return {"i": v, "b": v * 1_000_003, "d": dt.date(2000, 1, 1) + dt.timedelta(days=v),
            "ts": dt.datetime(2000, 1, 1) + dt.timedelta(microseconds=7 * v), "dec": Decimal(v) / 4}[column]


@pytest.fixture(scope="module")
def bsi_table(tmp_path_factory: pytest.TempPathFactory) -> Any:
    lake = Catalog(str(tmp_path_factory.mktemp("bsi") / "wh"))
    lake.create_database("db")
    t = lake.create_table("db.t", SCHEMA, options={"bucket": "-1", "file-index.bsi.columns": BSI_COLUMNS,
                                                   "file-index.in-manifest-threshold": "300 b"})
    for k in range(6):
        t.write_arrow(_table_rows(list(range(k * 30, k * 30 + 30)), k))
    return lake.get_table("db.t")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(terms=st.lists(st.tuples(st.sampled_from(BSI_COLUMNS.split(",")), st.sampled_from(_OPS),
                                st.lists(st.integers(-75, 75), min_size=1, max_size=3)), min_size=1, max_size=2),
       second=st.booleans())
def test_pruned_read_equals_full_read_then_filtered(bsi_table: Any, terms: list[Any], second: bool) -> None:
    clause = [(c, op, [_literal(c, v) for v in vs] if op in ("in", "not in") else _literal(c, vs[0]))
              for c, op, vs in terms]
    flt: Any = [clause, [("id", "<", 5)]] if second else clause
    pred = Predicate.of(flt)
    assert pred is not None and prunes_by_index(bsi_table.schema, pred)
    full = bsi_table.to_arrow()
    got = bsi_table.to_arrow(filter=flt).sort_by("id")
    assert got.equals(pred.filter_table(full).sort_by("id"))


def test_index_prunes_files_by_a_range(bsi_table: Any) -> None:
    t = bsi_table
    entries = sorted(t.store.file_store_scan().live_entries(t.latest_snapshot()),
                     key=lambda e: e.file.min_sequence_number)
    full = t.to_arrow()
    lo = min(v for v in full.column("i").to_pylist() if v is not None)
    pred = Predicate.of([("i", "<=", lo)])
    assert pred is not None
    kept = [index_may_match(t.store, e, pred, t.schema) for e in entries]
    assert any(kept) and not all(kept)  # the files holding the least value only
    # over the 300-byte threshold: written beside the data files (the compaction test reads embedded ones)
    assert all(e.file.embedded_file_index is None and e.file.extra_files for e in entries)


def test_not_in_skips_a_file_whose_rows_are_null_or_listed(tmp_path: Path) -> None:
    # a null row matches no `not in` (the filters' SQL semantics, Java's reader too), so the index
    # rules out a file holding only nulls and listed values, and keeps one with another value
    lake = Catalog(str(tmp_path / "wh"))
    lake.create_database("db")
    t = lake.create_table("db.n", SCHEMA, options={"bucket": "-1", "file-index.bsi.columns": "b"})
    for bs in ([None, 5, None, 7], [None, 5, 6]):
        rows = {c: [None] * len(bs) for c in SCHEMA.names}
        t.write_arrow(pa.table({**rows, "id": list(range(len(bs))), "b": bs}, schema=SCHEMA))
    t = lake.get_table("db.n")
    entries = sorted(t.store.file_store_scan().live_entries(t.latest_snapshot()),
                     key=lambda e: e.file.min_sequence_number)
    for flt, kept in (([("b", "not in", [5, 7])], [False, True]), ([("b", "!=", 5)], [True, True]),
                      ([("b", "not in", [5, 6, 7])], [False, False])):
        pred = Predicate.of(flt)
        assert pred is not None
        assert [index_may_match(t.store, e, pred, t.schema) for e in entries] == kept, flt
        assert t.to_arrow(filter=flt).sort_by("b").equals(pred.filter_table(t.to_arrow()).sort_by("b"))


def test_compaction_indexes_its_outputs(tmp_path: Path) -> None:
    lake = Catalog(str(tmp_path / "wh"))
    lake.create_database("db")
    t = lake.create_table("db.c", SCHEMA, options={"bucket": "-1", "file-index.bsi.columns": "b,dec",
                                                   "file-index.in-manifest-threshold": "1 mb"})
    for k in range(3):
        t.write_arrow(_table_rows(list(range(k * 10, k * 10 + 10)), 10 + k))
    before = t.to_arrow().sort_by("id")
    t.compact(full=True)
    t = lake.get_table("db.c")
    (entry,) = t.store.file_store_scan().live_entries(t.latest_snapshot())
    assert entry.file.embedded_file_index is not None
    container = read_container(entry.file.embedded_file_index)
    b = BsiIndexBuilder(BigIntType(), "b")
    compacted = t.to_arrow()
    b.add(compacted.column("b"))
    assert container["b"]["bsi"] == b.finish()
    assert set(container) == {"b", "dec"}
    assert t.to_arrow(filter=[("b", ">", 0)]).sort_by("id").equals(
        before.filter(pa.compute.greater(before.column("b"), 0)))


@pytest.mark.parametrize(("column_type", "match"), [
    (pa.string(), "does not support type"),
    (pa.float64(), "does not support type"),
    (pa.decimal128(20, 2), "precision 18"),
])
def test_unsupported_types_refuse_writes_and_compaction(tmp_path: Path, column_type: pa.DataType,
                                                         match: str) -> None:
    lake = Catalog(str(tmp_path / "wh"))
    lake.create_database("db")
    schema = pa.schema([("id", pa.int32()), ("x", column_type)])
    t = lake.create_table("db.u", schema, options={"bucket": "-1"})
    t.write_arrow(pa.table({"id": [1], "x": [None]}, schema=schema))
    # STRING and DOUBLE are refused at ALTER (tests/unit/test_bsi_column_types.py): a schema another engine wrote
    carry_bsi_column(t, "x")
    t = lake.get_table("db.u")
    with pytest.raises(UnsupportedFeatureError, match=match):
        t.write_arrow(pa.table({"id": [2], "x": [None]}, schema=schema))
    with pytest.raises(UnsupportedFeatureError, match=match):
        t.compact(full=True)
    assert t.to_arrow().column("id").to_pylist() == [1]


def test_a_long_min_value_fails_the_write_and_commits_nothing(tmp_path: Path) -> None:
    lake = Catalog(str(tmp_path / "wh"))
    lake.create_database("db")
    schema = pa.schema([("id", pa.int32()), ("b", pa.int64())])
    t = lake.create_table("db.m", schema, options={"bucket": "-1", "file-index.bsi.columns": "b"})
    t.write_arrow(pa.table({"id": [1], "b": [5]}, schema=schema))
    with pytest.raises(InvalidDataError, match="no bsi magnitude"):
        t.write_arrow(pa.table({"id": [2, 3], "b": [7, LONG_MIN]}, schema=schema))
    assert t.to_arrow().column("id").to_pylist() == [1]
    assert lake.get_table("db.m").latest_snapshot().id == 1


def test_large_indexes_parse_back_with_every_container_kind() -> None:
    """Over 65536 rows a bitmap has several containers (and, with runs, an offset header from 4 on);
    array, bitmap (> 4096 rows of a block) and run containers must all be measured right to read
    the bitmaps that follow them."""
    rng = np.random.default_rng(7)
    rows = 300_000
    values = rng.integers(-1000, 1000, rows)
    values[:70_000] = 5  # one value over a whole block and more: runs in the ebm and the slices
    nulls = rng.random(rows) < 0.5
    nulls[:70_000] = False
    nulls[70_000:140_000] = rng.random(70_000) < 0.01  # sparse nulls: runs; elsewhere arrays and bitmaps
    arr = pa.array(values, mask=nulls)
    b = BsiIndexBuilder(BigIntType(), "c")
    for start in range(0, rows, 65_000):
        b.add(arr.slice(start, 65_000))
    payload = b.finish()
    index = BsiIndex.parse(payload)
    assert index.rows == rows
    v = np.where(nulls, 0, values)
    for op, lit in (("=", 5), ("<", -500), (">=", 999), ("!=", 5), ("<=", 0), (">", -1)):
        expected = {"=": v == lit, "<": v < lit, ">=": v >= lit, "!=": v != lit, "<=": v <= lit, ">": v > lit}[op]
        got = index.rows_matching(op, [lit])
        assert got == BitMap(np.flatnonzero(expected & ~nulls).astype(np.uint32)), op
    # a null row matches no term, not in included (as the filters and Java's reader answer)
    assert index.rows_matching("not in", [5]) == BitMap(np.flatnonzero(~nulls & (v != 5)).astype(np.uint32))
    # the payload holds every kind of container: run (cookie 12347) and dense blocks
    assert struct.unpack_from("<I", payload, 23)[0] & 0xFFFF == 12347


def test_nanosecond_bitmaps_do_not_decide_not_equal() -> None:
    """A bitmap index keys TIMESTAMP(7..9) by micros too: != / not in must keep a file whose rows
    only share the literal's micro (Java's reader would skip it)."""
    from lake_assets.formats.bitmap_index import BitmapIndexBuilder
    from lake_assets.ops.file_index_prune import _FileIndexes, _index_rows

    dt9 = TimestampType(9)
    values = pa.array([100, 900], pa.int64()).view(pa.timestamp("ns"))
    bitmap, bsi = BitmapIndexBuilder(dt9), BsiIndexBuilder(dt9, "t")
    bitmap.add(values)
    bsi.add(values)
    indexes = _FileIndexes("db.t", "f", {"t": {"bitmap": bitmap.finish(), "bsi": bsi.finish()}}, "index of f", 2)
    literal = pa.array([500], pa.int64()).view(pa.timestamp("ns"))
    for op in ("!=", "not in"):
        assert _index_rows(indexes, "t", dt9, op, literal) == [], op  # neither index decides
    # = keeps both rows (a superset: neither equals 500 ns) from both indexes
    assert _index_rows(indexes, "t", dt9, "=", literal) == [BitMap([0, 1]), BitMap([0, 1])]
