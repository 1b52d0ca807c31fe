"""`lsm.key_codes` (order-preserving codes of composite keys) against Paimon's key comparator
(`lsm.key_compare.compare_keys`), and `lsm.key_ranks.KeyRanks` built on them against a dict
model: hypothesis draws keys of fixed-width parts (integers of every width, DATE, short strings
and binaries: empty, zero bytes, non-ASCII, shared prefixes) and keys the file lacks (longer
strings, values past the file's range)."""

from __future__ import annotations

import datetime
import functools

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from lake_assets.lsm.key_codes import CodeLayout, order_codes
from lake_assets.lsm.key_compare import compare_keys
from lake_assets.lsm.key_ranks import KeyRanks

_INTS = {pa.int8(): 8, pa.int16(): 16, pa.int32(): 32, pa.int64(): 64}
_EPOCH = datetime.date(1970, 1, 1)
_TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.date32(), pa.string(), pa.binary()]


def _values(t: pa.DataType) -> st.SearchStrategy[object]:
    if t in _INTS:
        bits = _INTS[t]
        # the ends of the range and values near zero, where the sign bit flips
        return st.one_of(st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1), st.integers(-3, 3))
    if pa.types.is_date32(t):
        return st.dates(datetime.date(1, 1, 1), datetime.date(9999, 12, 31))
    chars = st.sampled_from(["", "a", "b", "\x00", "é", "日", "\U0001f600", "ab"])
    text = st.lists(chars, max_size=5).map("".join)
    return text if pa.types.is_string(t) else text.map(str.encode)


def _order(t: pa.DataType, value: object) -> object:
    """A value as Paimon's comparator sees it (strings by their UTF-8 bytes, dates by their day)."""
    if isinstance(value, datetime.date):
        return (value - _EPOCH).days
    return value.encode() if isinstance(value, str) else value


def _compare(types: list[pa.DataType], a: tuple[object, ...], b: tuple[object, ...]) -> int:
    return compare_keys([_order(t, v) for t, v in zip(types, a, strict=True)],
                        [_order(t, v) for t, v in zip(types, b, strict=True)])


def _table(types: list[pa.DataType], keys: list[tuple[object, ...]]) -> pa.Table:
    return pa.table({f"k{i}": pa.array([k[i] for k in keys], t) for i, t in enumerate(types)})


@st.composite
def _case(draw: st.DrawFn) -> tuple[list[pa.DataType], list[tuple[object, ...]], list[tuple[object, ...]]]:
    types = draw(st.lists(st.sampled_from(_TYPES), min_size=1, max_size=3))
    key = st.tuples(*(_values(t) for t in types))
    universe = draw(st.lists(key, max_size=30))
    file_keys = sorted(set(draw(st.lists(st.sampled_from(universe), max_size=20)) if universe else []),
                       key=functools.cmp_to_key(lambda a, b: _compare(types, a, b)))
    wanted = draw(st.lists(st.one_of(st.sampled_from(universe), key) if universe else key, max_size=20))
    return types, file_keys, wanted


@settings(max_examples=150, deadline=None)
@given(_case(), st.sampled_from([8, 16]))
def test_codes_never_decrease_in_paimons_key_order(case: tuple[list[pa.DataType], list[tuple[object, ...]],
                                                                list[tuple[object, ...]]], width: int) -> None:
    types, file_keys, wanted = case
    if not file_keys:
        return
    columns = _table(types, file_keys).columns
    layout = CodeLayout.plan([c.combine_chunks() for c in columns], width)
    codes = order_codes([c.combine_chunks() for c in columns], layout)
    # the file's keys ascend strictly in Paimon's order: their codes never decrease, and an
    # exact layout's strictly increase
    assert bool(np.all(codes[1:] >= codes[:-1]))
    if layout.exact:
        assert bool(np.all(codes[1:] > codes[:-1]))
    # any two keys (the file's and others, in the file's layout): order kept, and an exact
    # layout's code equals a file key's only for that key
    everyone = file_keys + wanted
    every_code = order_codes([c.combine_chunks() for c in _table(types, everyone).columns], layout)
    for i, a in enumerate(everyone):
        for j, b in enumerate(file_keys):
            c = _compare(types, a, b)
            if c < 0:
                assert every_code[i] <= codes[j]
            elif c > 0:
                assert every_code[i] >= codes[j]
            else:
                assert every_code[i] == codes[j]
            if layout.exact and c != 0:
                assert every_code[i] != codes[j]


@settings(max_examples=150, deadline=None)
@given(_case())
def test_key_ranks_find_each_key_as_a_dict_does(case: tuple[list[pa.DataType], list[tuple[object, ...]],
                                                             list[tuple[object, ...]]]) -> None:
    types, file_keys, wanted = case
    ranks = KeyRanks.build(_table(types, file_keys))
    assert ranks is not None
    where = {k: i for i, k in enumerate(file_keys)}
    assert ranks.locate(_table(types, wanted)).tolist() == [where.get(k, -1) for k in wanted]


def test_fixed_width_composite_keys_get_exact_codes() -> None:
    n = 1000
    tenant = np.repeat(np.arange(10, dtype=np.int64), n // 10)
    order = np.tile(np.arange(n // 10, dtype=np.int64), 10)
    cases = {
        "int64+int64": pa.table({"t": tenant, "o": order}),  # 16 bytes
        "int32+date": pa.table({"t": tenant.astype(np.int32), "d": pa.array(order.astype(np.int32), pa.int32())
                                .cast(pa.date32())}),  # 8 bytes
        "int64+date": pa.table({"t": tenant, "d": pa.array(order.astype(np.int32)).cast(pa.date32())}),
        "char(2)+int32": pa.table({"c": pa.array([f"{t:02d}" for t in tenant.tolist()]),
                                   "o": order.astype(np.int32)}),  # 3 + 4 bytes
        "int32+uuid-ish string": pa.table({"t": tenant.astype(np.int32),
                                           "o": pa.array([f"{o:011x}" for o in order.tolist()])}),  # 4 + 12
    }
    for name, table in cases.items():
        ranks = KeyRanks.build(table)
        assert ranks is not None and ranks.kind == "exact", name
        shuffled = np.random.default_rng(0).permutation(n)
        assert ranks.locate(table.take(shuffled)).tolist() == shuffled.tolist(), name
    # a tenant and an order id longer than 12 bytes: their first 16 bytes, checked on the keys
    # random ids (their first two hex digits repeat within a tenant: 8 bytes are not enough)
    ids = sorted({f"o-{o:016x}#x" for o in np.random.default_rng(1).integers(0, 1 << 62, n // 10).tolist()})
    long_ids = pa.table({"t": tenant.astype(np.int32), "o": pa.array(ids * 10)})
    ranks = KeyRanks.build(long_ids)
    assert ranks is not None and (ranks.kind, ranks.code_width) == ("prefix", 16)
