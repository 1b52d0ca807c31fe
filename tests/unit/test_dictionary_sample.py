"""The per-file dictionary decision's cheap steps (issue 17 §1, round 6): the look at a column's
first rows counts distinct values with numpy where numpy agrees with Arrow's hash kernels, also
rejects never-repeating strings, and ``_KEY_<k>`` takes the decision made for ``k``."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lake_assets.formats.data_file import DataFileWriter
from lake_assets.formats.file_layout import _all_distinct, dictionary_pays

SAMPLED_TYPES = [pa.int16(), pa.int32(), pa.int64(), pa.float32(), pa.float64(), pa.date32(), pa.time32("ms"),
                 pa.time64("us"), pa.timestamp("ms"), pa.timestamp("us", tz="UTC"), pa.decimal128(10, 2)]


def _arrow_all_distinct(head: pa.Array | pa.ChunkedArray) -> bool:
    """The former check: Arrow's count of distinct valid values against the valid values."""
    return bool(pc.count_distinct(head, mode="only_valid").as_py() == len(head) - head.null_count)


def _array(values: list[int | None], dtype: pa.DataType) -> pa.Array:
    if pa.types.is_floating(dtype):
        return pa.array([None if v is None else v / 4 for v in values], dtype)
    if pa.types.is_decimal(dtype):
        return pa.array([None if v is None else Decimal(v) / 4 for v in values], dtype)
    storage = pa.int64() if dtype.bit_width == 64 else pa.int32()
    return pa.array(values, storage).cast(dtype) if not pa.types.is_integer(dtype) else pa.array(values, dtype)


@settings(max_examples=300, deadline=None)
@given(values=st.lists(st.one_of(st.none(), st.integers(-300, 300)), min_size=1, max_size=64),
       dtype=st.sampled_from(SAMPLED_TYPES), chunks=st.integers(1, 3))
def test_numpy_distinct_check_agrees_with_arrow(values: list[int | None], dtype: pa.DataType, chunks: int) -> None:
    arr = _array(values, dtype)
    cut = len(arr) // chunks
    head = pa.chunked_array([arr.slice(0, cut), arr.slice(cut)]) if chunks > 1 else arr
    assert _all_distinct(head) == _arrow_all_distinct(head)
    assert _all_distinct(pa.chunked_array([arr])) == _arrow_all_distinct(arr)


@pytest.mark.parametrize("values", [
    [0.0, -0.0, 1.0], [-0.0, 2.0], [float("nan"), float("nan")], [float("nan"), 1.0, 2.0],
    [float("inf"), float("-inf"), 1.0], [float("inf"), float("inf")], [1.5, 1.5, None], [1e300, -1e300],
])
@pytest.mark.parametrize("dtype", [pa.float32(), pa.float64()])
def test_float_zeros_and_nans_count_as_arrow_counts_them(values: list[float | None], dtype: pa.DataType) -> None:
    head = pa.array(values, dtype)
    assert _all_distinct(head) == _arrow_all_distinct(head)


def test_never_repeating_strings_are_rejected_on_the_first_rows() -> None:
    rng = np.random.default_rng(5)
    distinct = pa.array([f"user-{x:09d}" for x in rng.permutation(10**6)[:4096]])
    assert not dictionary_pays(distinct, 100_000)
    # drawn at random from a domain the full sample accepts: repeats within the first rows
    for domain in (5, 200, 1500):
        drawn = pa.array([f"code-{x}" for x in rng.integers(0, domain, 4096)])
        assert dictionary_pays(drawn, 100_000), domain
    # with nulls among them, the valid values decide
    with_nulls = pa.array([None if i % 3 == 0 else f"s{i % 7}" for i in range(4096)])
    assert dictionary_pays(with_nulls, 100_000)


def test_strings_cycling_through_more_values_than_the_first_rows_stay_plain() -> None:
    """The deliberate change of round 6: 1,000 values in order, each seen four times in the
    sample, used to get a dictionary; the look at the first 256 rows, all distinct, now leaves
    the column PLAIN as it already left such numbers (both encodings are read by every reader)."""
    cycling = pa.array([f"v{i % 1000:04d}" for i in range(4096)])
    assert not dictionary_pays(cycling, 100_000)
    assert not dictionary_pays(pa.array(np.arange(4096) % 1000), 100_000)
    assert dictionary_pays(pa.array([f"v{i % 200:04d}" for i in range(4096)]), 100_000)


def test_the_key_copy_takes_the_keys_decision(catalog) -> None:
    """``_KEY_k`` and ``k`` hold the same values: they get a dictionary together or not at all,
    for a repeating first key column of a two-column key and for a unique one."""
    schema = pa.schema([("a", pa.int64()), ("b", pa.string()), ("v", pa.float64())])
    t = catalog.create_table("db.t", schema, primary_keys=["a", "b"], options={"bucket": "1"})
    writer = DataFileWriter(t.store.file_io, "unused", t.store.schema, t.store.data_file_config())
    n = 8192
    for a in (np.arange(n) // 4, np.arange(n)):
        rows = pa.table({"a": a, "b": [f"b{i % 4}-{i}" for i in range(n)], "v": np.arange(n) / 8.0})
        rows = rows.append_column("_SEQUENCE_NUMBER", pa.array(np.arange(n)))
        rows = rows.append_column("_VALUE_KIND", pa.array(np.zeros(n, np.int8)))
        laid_out = writer._layout(rows)
        chosen = writer.dictionary_columns(laid_out.slice(0, 4096), n)
        expected = [c for c in writer._dictionary_columns if c not in writer._sampled_dictionary_columns
                    or dictionary_pays(laid_out.column(c).slice(0, 4096), n)]
        assert chosen == expected
        assert ("_KEY_a" in chosen) == ("a" in chosen) == (len(np.unique(a)) < n)
        assert "_KEY_b" not in chosen and "b" not in chosen
