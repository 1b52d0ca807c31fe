"""The merge frontier's column search (`key_search.equal_range`, used by `count_at_most` and
`count_below`) orders every key type as the merge's comparator (`compare_keys`) does: randomized
equivalence on sorted columns with nulls, NaN, -0.0, infinities, empty and multibyte strings,
large decimals, multiple chunks and sliced offsets, single- and multi-column keys; and the search
is the vectorised one, not the scalar fallback, for every type it claims."""

from __future__ import annotations

import datetime
import decimal
import functools
import itertools

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lake_assets.lsm import merge_reader
from lake_assets.lsm.key_compare import compare_keys
from lake_assets.lsm.key_search import equal_range
from lake_assets.lsm.merge_reader import count_at_most, count_below

_UTC = datetime.UTC
_FLOATS = (st.sampled_from([-0.0, 0.0, float("nan")])
           | st.sampled_from([float("-inf"), -1.5, 5e-324, 2.5, float("inf"), -float("nan")])
           | st.floats(allow_nan=True))


def _decimals(digits: int, scale: int) -> st.SearchStrategy[decimal.Decimal]:
    bound = 10**digits - 1
    edge = st.sampled_from([-bound, -1, 0, 1, bound, 2**64, -(2**64), 2**63 - 1, -(2**63)])
    unscaled = (edge | st.integers(-bound, bound)).filter(lambda u: abs(u) <= bound)
    return unscaled.map(lambda u: decimal.Decimal(u).scaleb(-scale, decimal.Context(prec=100)))


# (arrow type, values a column of it holds, before nulls)
_TYPES: list[tuple[pa.DataType, st.SearchStrategy[object]]] = [
    (pa.int64(), st.integers(-3, 3) | st.sampled_from([-(2**63), 2**63 - 1])),
    (pa.int8(), st.integers(-128, 127)),
    (pa.uint64(), st.integers(0, 3) | st.sampled_from([2**63, 2**64 - 1])),
    (pa.int32(), st.integers(-2, 2)),
    (pa.float64(), _FLOATS),
    (pa.float32(), _FLOATS),
    (pa.string(), st.text(st.sampled_from(["a", "b", "é", "\x00", "\U0001f600", "\uffff"]), max_size=3)),
    (pa.large_string(), st.text(st.sampled_from(["a", "é", "z"]), max_size=2)),
    (pa.binary(), st.binary(max_size=3)),
    (pa.decimal128(12, 2), _decimals(12, 2)),
    (pa.decimal128(38, 0), _decimals(38, 0)),
    (pa.decimal256(50, 5), _decimals(50, 5)),
    (pa.date32(), st.dates()),
    (pa.timestamp("us"), st.datetimes()),
    (pa.timestamp("ms", tz="UTC"), st.datetimes(timezones=st.just(_UTC))),
    (pa.timestamp("ns"), st.integers(-(2**62), 2**62)),
    (pa.time32("ms"), st.times().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))),
    (pa.duration("us"), st.timedeltas(min_value=datetime.timedelta(days=-9), max_value=datetime.timedelta(9))),
]
# types `equal_range` searches without decoding (the rest must fall back, and still be right)
_FALLBACK = [(pa.bool_(), st.booleans()), (pa.time64("ns"), st.integers(0, 86_400 * 10**9 - 1)),
             (pa.binary(2), st.binary(min_size=2, max_size=2))]


def _decoded(typ: pa.DataType, values: list[object]) -> list[object]:
    """The values as the merge decodes them (float32 rounded, decimals at the column's scale...)."""
    return pa.array(values, typ).to_pylist()


def _decode_one(typ: pa.DataType, value: object) -> object:
    return pa.array([value], typ)[0].as_py()


def _table(names: list[str], types: list[pa.DataType], rows: list[tuple[object, ...]],
           cuts: list[int], offset: int) -> pa.Table:
    """``rows`` sorted by `compare_keys`, in chunks cut at ``cuts``, sliced from ``offset``."""
    ordered = sorted(rows, key=functools.cmp_to_key(compare_keys))
    whole = pa.table({n: pa.array([r[i] for r in ordered], t)
                      for i, (n, t) in enumerate(zip(names, types, strict=True))})
    bounds = sorted({0, len(ordered), *(c for c in cuts if 0 < c < len(ordered))})
    parts = [whole.slice(a, b - a) for a, b in itertools.pairwise(bounds)] or [whole]
    return pa.concat_tables(parts).slice(min(offset, whole.num_rows))


def _row(table: pa.Table, names: list[str], r: int) -> tuple[object, ...]:
    return tuple(table.column(n)[r].as_py() for n in names)


def _counts(table: pa.Table, names: list[str], key: tuple[object, ...]) -> tuple[int, int]:
    """Rows below and rows at most ``key`` by the comparator, row by row."""
    order = [compare_keys(_row(table, names, r), key) for r in range(table.num_rows)]
    return sum(c < 0 for c in order), sum(c <= 0 for c in order)


# Strategies built once: a composite strategy built afresh per example costs hypothesis more than
# the example's check (about 8 ms of 10), so an example draws indexes into its pools from these.
_MAX_ROWS = 40
_POOL_SIZE = 4
_POOL_VALUES = {t: st.lists(st.none() | s, min_size=1, max_size=_POOL_SIZE) for t, s in _TYPES + _FALLBACK}
_FRESH_VALUES = {t: s.map(functools.partial(_decode_one, t)) for t, s in _TYPES + _FALLBACK}
_ROW_PICKS = {w: st.lists(st.tuples(*[st.integers(0, _POOL_SIZE - 1)] * w), max_size=_MAX_ROWS) for w in (1, 2, 3)}
_KEY_SOURCES = ("none", "pool", "type")


def _draw_case(data: st.DataObject, types: list[tuple[pa.DataType, st.SearchStrategy[object]]]) -> tuple[
        pa.Table, list[str], tuple[object, ...]]:
    width = data.draw(st.integers(1, 3))
    chosen = [data.draw(st.sampled_from(types)) for _ in range(width)]
    names = [f"k{i}" for i in range(width)]
    # few distinct values per column, so keys share prefixes and equal blocks are long
    pools = [_decoded(t, data.draw(_POOL_VALUES[t])) for t, _ in chosen]
    picks = data.draw(_ROW_PICKS[width])
    rows = [tuple(p[i % len(p)] for p, i in zip(pools, pick, strict=True)) for pick in picks]
    cuts = data.draw(st.lists(st.integers(0, _MAX_ROWS), max_size=3))
    table = _table(names, [t for t, _ in chosen], rows, cuts, data.draw(st.integers(0, 3)))
    if table.num_rows and data.draw(st.booleans()):  # a key of the table's
        key = _row(table, names, data.draw(st.integers(0, _MAX_ROWS - 1)) % table.num_rows)
    else:  # a fresh key: per column null, a pool value, or any value of the type
        parts: list[object] = []
        for (t, _), p in zip(chosen, pools, strict=True):
            source = data.draw(st.sampled_from(_KEY_SOURCES))
            if source == "pool":
                parts.append(p[data.draw(st.integers(0, _POOL_SIZE - 1)) % len(p)])
            else:
                parts.append(None if source == "none" else data.draw(_FRESH_VALUES[t]))
        key = tuple(parts)
    return table, names, key


@settings(max_examples=600, deadline=None)
@given(data=st.data())
def test_count_below_and_at_most_equal_the_comparator_for_every_key_type(data: st.DataObject) -> None:
    table, names, key = _draw_case(data, _TYPES + _FALLBACK)
    assert (count_below(table, names, key), count_at_most(table, names, key)) == _counts(table, names, key)


@settings(max_examples=600, deadline=None)
@given(data=st.data())
def test_equal_range_is_the_comparators_block_and_vectorised(data: st.DataObject) -> None:
    typ, values = data.draw(st.sampled_from(_TYPES))
    table, _, key = _draw_case(data, [(typ, values)])
    column = table.column("k0")
    # a window of the column, as the search of a later key column gets it
    lo = data.draw(st.integers(0, table.num_rows))
    hi = data.draw(st.integers(lo, table.num_rows))
    got = equal_range(column, key[0], lo, hi)
    assert got is not None, f"{typ} took the scalar fallback"
    assert got == _counts(table.select(["k0"]).slice(lo, hi - lo), ["k0"], key[:1])


@pytest.mark.parametrize("typ, value", [(pa.bool_(), True), (pa.time64("ns"), 5), (pa.binary(2), b"ab")])
def test_types_without_a_buffer_search_fall_back(typ: pa.DataType, value: object) -> None:
    column = pa.array([None, value], typ)
    assert equal_range(column, column[1].as_py()) is None


@pytest.mark.parametrize("typ, stored, value", [
    (pa.int64(), 1, 1.0), (pa.float64(), 1.0, 1), (pa.string(), "a", b"a"), (pa.binary(), b"a", "a"),
    (pa.decimal128(5, 1), decimal.Decimal("1.2"), decimal.Decimal("1.25")),
    (pa.date32(), datetime.date(2020, 1, 1), datetime.datetime(2020, 1, 1)),
    (pa.timestamp("us", tz="UTC"), datetime.datetime(2020, 1, 1, tzinfo=_UTC), datetime.datetime(2020, 1, 1)),
])
def test_a_value_the_column_does_not_decode_to_takes_the_scalar_search(
        typ: pa.DataType, stored: object, value: object) -> None:
    # the scalar search decides what the comparator says about mixed types; the buffer search
    # must not answer with a conversion of its own (a rounded decimal, bytes from a str...)
    assert equal_range(pa.array([stored], typ), value) is None


def test_the_frontier_decodes_no_key_of_a_string_or_float_led_table(monkeypatch: pytest.MonkeyPatch) -> None:
    words = sorted(f"w{i:05d}" for i in range(20_000))
    table = pa.table({"s": words, "x": pa.array([0.5] * len(words))})
    calls = 0
    real = merge_reader._key_at

    def counted(*args: object) -> tuple[object, ...]:
        nonlocal calls
        calls += 1
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(merge_reader, "_key_at", counted)
    assert count_at_most(table, ["s", "x"], ("w01234", 0.5)) == 1_235
    assert count_at_most(table, ["x", "s"], (0.5, "w00009")) == 10
    assert calls == 0


@pytest.mark.parametrize("typ", [pa.float64(), pa.float32()])
@pytest.mark.parametrize("nulls", [0, 2])
def test_float_blocks_split_zero_by_sign_and_join_every_nan(typ: pa.DataType, nulls: int) -> None:
    ordered = [None] * nulls + [float("-inf"), -1.0, -0.0, -0.0, 0.0, 0.0, 0.0, 1e-45, float("inf"),
                                float("nan"), -float("nan")]
    column = pa.array(ordered, typ)
    table = pa.table({"k0": column})
    for value in [None, float("-inf"), -0.0, 0.0, 1e-45, 0.1, float("inf"), float("nan")]:
        assert equal_range(column, value) == _counts(table, ["k0"], (value,)), value


_D = decimal.Decimal
_DAY = datetime.date(2020, 1, 1)
_NOON = datetime.datetime(2020, 1, 1, 12)
# per type, values in the comparator's order (each twice in the column), searched in every window
_LADDERS: list[tuple[pa.DataType, list[object]]] = [
    (pa.int64(), [-(2**63), -1, 0, 2**63 - 1]), (pa.uint8(), [0, 1, 200, 255]),
    (pa.float64(), [float("-inf"), -0.0, 0.0, float("nan")]), (pa.float32(), [-1.5, -0.0, 0.0, 2.5]),
    (pa.string(), ["", "a", "é", "\U0001f600"]), (pa.binary(), [b"", b"\x00", b"\x7f", b"\xff"]),
    (pa.decimal128(38, 2), [_D("-1e35"), _D("-0.01"), _D("0.00"), _D("1e35")]),
    (pa.decimal256(60, 0), [_D("-1e58"), _D(-1), _D(2**70), _D("1e58")]),
    (pa.date32(), [_DAY - datetime.timedelta(days=1), _DAY, _DAY + datetime.timedelta(days=400), datetime.date.max]),
    (pa.timestamp("us", tz="UTC"), [_NOON.replace(tzinfo=_UTC) + datetime.timedelta(microseconds=i)
                                    for i in (-1, 0, 1, 10**9)]),
]


@pytest.mark.parametrize("nulls", [0, 1])
@pytest.mark.parametrize("typ, ladder", _LADDERS, ids=[str(t) for t, _ in _LADDERS])
def test_every_window_of_every_type(typ: pa.DataType, ladder: list[object], nulls: int) -> None:
    # without nulls the window is searched in place, with them in an Arrow slice
    column = pa.array([None] * nulls + [v for v in ladder for _ in range(2)], typ)
    table = pa.table({"k0": column})
    for lo in range(len(column) + 1):
        for hi in range(lo, len(column) + 1):
            window = table.slice(lo, hi - lo)
            for value in [None, *ladder]:
                assert equal_range(column, value, lo, hi) == _counts(window, ["k0"], (value,)), (lo, hi, value)
