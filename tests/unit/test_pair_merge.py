"""The pair merge of a lookup compaction (`lsm.merge_engine.pair_merge`: each key's old row, if any,
then its one record) against the engines' general merge of the same rows interleaved, on seeded
random data: nulls, -0.0, NaN and infinities, +I/+U kinds, old rows in any order; an integer sum
that leaves its type fails in both."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lake_assets.errors import InvalidDataError
from lake_assets.formats.data_file import SEQUENCE_NUMBER, VALUE_KIND
from lake_assets.lsm.merge_engine.aggregation import Aggregation
from lake_assets.lsm.merge_engine.pair_merge import PairInput
from lake_assets.lsm.merge_engine.partial_update import PartialUpdate
from lake_assets.options import CoreOptions

# (column, type, aggregate function): every function and type the pair merge folds
AGGREGATED = [
    ("s_i8", pa.int8(), "sum"), ("s_i16", pa.int16(), "sum"), ("s_i32", pa.int32(), "sum"),
    ("s_u8", pa.uint8(), "sum"), ("s_u16", pa.uint16(), "sum"), ("s_f32", pa.float32(), "sum"),
    ("s_f64", pa.float64(), "sum"), ("s_i64", pa.int64(), "sum"), ("s_u32", pa.uint32(), "sum"),
    ("s_u64", pa.uint64(), "sum"), ("mn_i32", pa.int32(), "min"), ("mx_i64", pa.int64(), "max"),
    ("mx_u64", pa.uint64(), "max"), ("mn_u8", pa.uint8(), "min"), ("and_b", pa.bool_(), "bool_and"),
    ("or_b", pa.bool_(), "bool_or"), ("fv", pa.string(), "first_value"), ("fnn", pa.string(), "first_non_null_value"),
    ("lv", pa.string(), "last_value"), ("lnn", pa.string(), "last_non_null_value"),
    ("dflt", pa.float64(), None),
]


def _column(rng: np.random.Generator, dtype: pa.DataType, n: int, nulls: float) -> pa.Array:
    mask = rng.random(n) < nulls
    if pa.types.is_floating(dtype):
        raw = rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)
        special = rng.random(n)
        raw[special < 0.05] = -0.0
        raw[(special >= 0.05) & (special < 0.08)] = np.nan
        raw[(special >= 0.08) & (special < 0.09)] = -np.inf
        return pa.array(raw, mask=mask).cast(dtype)
    if pa.types.is_boolean(dtype):
        return pa.array(rng.random(n) < 0.7, mask=mask)
    if pa.types.is_string(dtype):
        return pa.array([f"v{i}" for i in rng.integers(0, 50, n)], mask=mask)
    if pa.types.is_unsigned_integer(dtype):
        return pa.array(rng.integers(0, 60, n), mask=mask).cast(dtype)
    return pa.array(rng.integers(-60, 60, n), mask=mask).cast(dtype)


def _rows(rng: np.random.Generator, fields: list[tuple[str, pa.DataType]], keys: np.ndarray, seq: np.ndarray,
          nulls: float) -> pa.Table:
    cols = {"k": pa.array(keys, pa.int64())}
    cols.update({name: _column(rng, dtype, keys.size, nulls) for name, dtype in fields})
    cols[SEQUENCE_NUMBER] = pa.array(seq, pa.int64())
    cols[VALUE_KIND] = pa.array(np.where(rng.random(keys.size) < 0.3, 2, 0).astype(np.int8))
    return pa.table(cols)


def _case(seed: int, fields: list[tuple[str, pa.DataType]], nulls: float,
          olds: str = "some") -> tuple[pa.Table, pa.Table, np.ndarray]:
    """Records (one per key, ascending), old rows of some keys in a random order (never newer than
    their record), and each old row's record position. ``olds``: "every" key has one, in record
    order (an upsert of existing keys: `pair_merge._combine`'s shortcut), or "shuffled" (every
    key, in a random order)."""
    rng = np.random.default_rng(seed)
    keys = np.sort(rng.choice(10_000, 500, replace=False))
    seq = rng.integers(100, 200, keys.size)
    records = _rows(rng, fields, keys, seq, nulls)
    at = rng.permutation(np.flatnonzero(rng.random(keys.size) < (0.6 if olds == "some" else 1.0)))
    if olds == "every":
        at = np.sort(at)
    old = _rows(rng, fields, keys[at], seq[at] - rng.integers(0, 50, at.size), nulls)
    return records, old, at


def _general(fn: Aggregation | PartialUpdate, records: pa.Table, old: pa.Table, at: np.ndarray) -> pa.Table:
    """The engine's own merge of each key's old row followed by its record."""
    both = pa.concat_tables([old, records])
    first = np.zeros(records.num_rows, dtype=np.int64)
    first[at] = 1
    before = np.cumsum(first)
    order = np.empty(both.num_rows, dtype=np.int64)
    order[at + before[at] - 1] = np.arange(at.size)
    order[np.arange(records.num_rows) + before] = at.size + np.arange(records.num_rows)
    return fn.merge(both.take(pa.array(order)), ["k"])


def _pairs(fn: Aggregation | PartialUpdate, records: pa.Table, old: pa.Table, at: np.ndarray) -> pa.Table:
    needed = fn.pair_columns(records)
    assert needed is not None
    return fn.merge_pairs(PairInput(records, at, {name: old.column(name).combine_chunks() for name in needed}))


def _assert_same(got: pa.Table, expected: pa.Table) -> None:
    """Equal column by column, floats to the bit (NaN equals NaN, -0.0 is not 0.0)."""
    assert got.schema == expected.schema
    for name in expected.column_names:
        g, e = got.column(name).combine_chunks(), expected.column(name).combine_chunks()
        assert g.is_valid().equals(e.is_valid()), name
        if pa.types.is_floating(e.type):
            bits = np.uint32 if e.type == pa.float32() else np.uint64
            gv = g.fill_null(0).to_numpy(zero_copy_only=False).view(bits)
            ev = e.fill_null(0).to_numpy(zero_copy_only=False).view(bits)
            assert np.array_equal(gv, ev), name
        else:
            assert g.equals(e), name


@pytest.mark.parametrize(("seed", "olds"), [*((s, "some") for s in range(6)), (6, "every"), (7, "every"),
                                            (8, "shuffled")])
@pytest.mark.parametrize("singles", [True, False])
def test_aggregation_pairs_are_the_general_fold(seed: int, singles: bool, olds: str) -> None:
    fields = [(name, dtype) for name, dtype, _ in AGGREGATED]
    options = {f"fields.{name}.aggregate-function": fn for name, _, fn in AGGREGATED if fn is not None}
    fn = Aggregation([("k", pa.int64()), *fields], ["k"], CoreOptions(options))
    fn.merges_singles = singles  # the lookup compaction's, and the reducer wrapper's lone records
    records, old, at = _case(seed, fields, nulls=0.2 if seed % 3 else 0.0, olds=olds)
    needed = fn.pair_columns(records)
    assert needed is not None and "lv" not in needed
    assert ("lnn" in needed) == bool(records.column("lnn").null_count)
    _assert_same(_pairs(fn, records, old, at), _general(fn, records, old, at))


@pytest.mark.parametrize(("seed", "olds"), [*((s, "some") for s in range(6)), (6, "every"), (7, "every"),
                                            (8, "shuffled")])
def test_partial_update_pairs_are_the_general_merge(seed: int, olds: str) -> None:
    fields = [("a", pa.string()), ("b", pa.float64()), ("c", pa.int32()), ("d", pa.bool_())]
    for singles in (True, False):
        fn = PartialUpdate([("k", pa.int64()), *fields], ["k"], CoreOptions({}))
        fn.merges_singles = singles
        records, old, at = _case(seed, fields, nulls=0.3 if seed % 2 else 0.0, olds=olds)
        # only columns with a null among the records read their old values
        assert fn.pair_columns(records) == [n for n, _ in fields if records.column(n).null_count]
        _assert_same(_pairs(fn, records, old, at), _general(fn, records, old, at))


@pytest.mark.parametrize("olds", ["every", "shuffled", "some"])
def test_partial_rows_take_the_left_out_columns_from_the_old_rows(olds: str) -> None:
    """Records that leave whole columns null (partial rows): each key's old values fill them in,
    as the general merge does, on both the gather path and `every_in_order`'s whole columns."""
    fields = [("a", pa.string()), ("b", pa.float64()), ("c", pa.int32())]
    fn = PartialUpdate([("k", pa.int64()), *fields], ["k"], CoreOptions({}))
    fn.merges_singles = False
    records, old, at = _case(9, fields, nulls=0.0, olds=olds)
    for name in ("a", "b"):
        index = records.schema.get_field_index(name)
        records = records.set_column(index, name, pa.nulls(records.num_rows, records.schema.field(name).type))
    assert fn.pair_columns(records) == ["a", "b"]
    merged = _pairs(fn, records, old, at)
    _assert_same(merged, _general(fn, records, old, at))
    if olds != "some":  # every record has an old row: every value is filled in
        assert merged.column("a").null_count == old.column("a").null_count == 0


def test_whole_partial_update_records_are_themselves() -> None:
    fn = PartialUpdate([("k", pa.int64()), ("a", pa.string())], ["k"], CoreOptions({}))
    fn.merges_singles = True
    records, old, at = _case(1, [("a", pa.string())], nulls=0.0)
    merged = _pairs(fn, records, old, at)
    assert merged.column("a").chunks[0] is not None and merged.column("a").equals(records.column("a"))
    assert merged.column(VALUE_KIND).to_pylist() == [0] * records.num_rows


@pytest.mark.parametrize(("dtype", "new", "old"), [
    (pa.int8(), 100, 100), (pa.int8(), -100, -100), (pa.uint16(), 65_000, 1_000), (pa.int32(), 2**31 - 1, 1),
    (pa.int64(), 2**63 - 1, 1), (pa.int64(), -(2**63), -1),
])  # no unsigned 64-bit case: Paimon has no unsigned types (`arrow_types.from_arrow` refuses them), so no table has one
def test_a_sum_that_leaves_its_type_fails_as_in_the_general_fold(dtype: pa.DataType, new: int, old: int) -> None:
    """Paimon's Java wraps integer sums silently; lake_assets refuses one that leaves its column's type
    (aggregate_functions), and so does the pair merge, where the largest sums that fit still pass."""
    fn = Aggregation([("k", pa.int64()), ("v", dtype)], ["k"], CoreOptions({"fields.v.aggregate-function": "sum"}))
    fn.merges_singles = True

    def rows(keys: list[int], values: list[int | None], seq: int) -> pa.Table:
        return pa.table({"k": pa.array(keys, pa.int64()), "v": pa.array(values, dtype),
                         SEQUENCE_NUMBER: pa.array([seq] * len(keys), pa.int64()),
                         VALUE_KIND: pa.array([0] * len(keys), pa.int8())})

    records, at = rows([1, 2, 3], [new, 1, None], 5), np.array([2, 0])
    for merge in (_pairs, _general):
        with pytest.raises(InvalidDataError, match=f"overflowed column 'v' \\({dtype}\\)"):
            merge(fn, records, rows([3, 1], [None, old], 1), at)
    fits = rows([1], [new - old if new > 0 else new + 1], 5)
    _assert_same(_pairs(fn, fits, rows([1], [old if new > 0 else -1], 1), np.array([0])),
                 _general(fn, fits, rows([1], [old if new > 0 else -1], 1), np.array([0])))


def test_retractions_and_functions_without_a_pair_fold_are_left_to_the_general_merge() -> None:
    records = pa.table({"k": pa.array([1], pa.int64()), "v": pa.array([1.5]),
                        SEQUENCE_NUMBER: pa.array([5], pa.int64()), VALUE_KIND: pa.array([1], pa.int8())})
    assert PartialUpdate([("k", pa.int64()), ("v", pa.float64())], ["k"], CoreOptions({})).pair_columns(records) is None
    inserts = records.set_column(3, VALUE_KIND, pa.array([0], pa.int8()))
    types = {"listagg": pa.string(), "collect": pa.list_(pa.int32())}
    for function in ("product", "max", "listagg", "collect"):  # float max: NaN ordering stays with Arrow
        dtype = types.get(function, pa.float64())
        fn = Aggregation([("k", pa.int64()), ("v", dtype)], ["k"],
                         CoreOptions({"fields.v.aggregate-function": function}))
        assert fn.pair_columns(inserts.set_column(1, "v", pa.nulls(1, dtype))) is None, function
    fn = Aggregation([("k", pa.int64()), ("v", pa.float64())], ["k"],
                     CoreOptions({"fields.v.aggregate-function": "sum"}))
    assert fn.pair_columns(records) is None  # a -U
