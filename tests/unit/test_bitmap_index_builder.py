"""The bitmap index writer fed batch by batch (``formats/bitmap_index.py``, issue 14): the same
bytes however a file's rows are split into batches, and memory held that grows with the column's
distinct values and their bitmaps, not with its rows or the width of its values (Java's writer
keeps a RoaringBitmap32 per value; the builder used to keep every value until ``finish``)."""

from __future__ import annotations

import gc

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from lake_assets.formats.bitmap_index import BitmapIndex, BitmapIndexBuilder, index_keys, write_bitmap_index
from lake_assets.spec.types import parse_type


@settings(max_examples=150, deadline=None)
@given(data=st.data(), type_name=st.sampled_from(["INT", "STRING", "DOUBLE", "TINYINT"]))
def test_any_split_into_batches_gives_the_bytes_of_one_batch(data: st.DataObject, type_name: str) -> None:
    """Values recurring across batches, new ones in late batches, batches of nulls only or empty:
    the payload (value order, the HashMap's growth after the last new value) is the one-batch one."""
    dt = parse_type(type_name)
    pool = data.draw(st.lists(st.integers(-200, 200), min_size=1, max_size=80, unique=True))
    picks = data.draw(st.lists(st.one_of(st.none(), st.sampled_from(pool)), max_size=400))
    values = _typed(picks, type_name)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(picks)), max_size=8)))
    builder = BitmapIndexBuilder(dt)
    for a, b in zip([0, *cuts], [*cuts, len(picks)], strict=True):
        builder.add(values.slice(a, b - a))
    whole, _ = write_bitmap_index(index_keys(values, dt), dt)
    assert builder.finish() == whole
    index = BitmapIndex.parse(whole, dt)
    typed = values.to_pylist()
    for i in sorted({typed.index(v) for v in typed if v is not None}):
        want = [j for j, x in enumerate(typed) if x == typed[i]]
        assert list(index.rows_in(values.take([i]))) == want


def _typed(picks: list[int | None], type_name: str) -> pa.Array:
    if type_name == "STRING":
        return pa.array([None if p is None else f"v{p}" for p in picks], pa.string())
    if type_name == "DOUBLE":
        return pa.array([None if p is None else p / 4 for p in picks], pa.float64())
    if type_name == "TINYINT":
        return pa.array([None if p is None else p % 128 for p in picks], pa.int8())
    return pa.array(picks, pa.int32())


_WIDTH = 1000  # bytes of each value: a wide string column


def _feed(rows: int, distinct: int, *, run: int, seed: int = 0, batch: int = 8192) -> tuple[BitmapIndexBuilder, int]:
    """(a builder fed ``rows`` rows of ``distinct`` wide strings, in runs of ``run`` rows of one
    value (``run`` 1: in random order); the Arrow bytes of the values it was fed)."""
    pool = pa.array([str(i).rjust(_WIDTH, "x") for i in range(distinct)])
    rng = np.random.default_rng(seed)
    builder = BitmapIndexBuilder(parse_type("STRING"))
    fed = 0
    for start in range(0, rows, batch):
        at = np.arange(start, min(rows, start + batch))
        ids = (at // run) % distinct if run > 1 else rng.integers(0, distinct, len(at))
        chunk = pool.take(pa.array(ids))
        fed += chunk.nbytes
        builder.add(chunk)
    return builder, fed


def test_memory_held_grows_with_distinct_values_not_rows() -> None:
    """A low-cardinality column whose values come in runs (as a clustered or sorted column does):
    16 times the rows hold less than twice as much (a roaring container per value and 65536-row
    block, as in Java); 8 times the distinct values hold about 8 times more. Arrow's pool keeps
    only the distinct values once the batches are gone."""
    gc.collect()
    before = pa.total_allocated_bytes()
    small, _ = _feed(65_536, 8, run=5_000)
    pooled = pa.total_allocated_bytes() - before
    large, fed = _feed(16 * 65_536, 8, run=5_000)
    wide, _ = _feed(65_536, 64, run=1_000)
    assert large.held_bytes() < 2 * small.held_bytes()
    assert large.held_bytes() < fed / 1000  # the old builder held all of ``fed``
    assert wide.held_bytes() > 6 * small.held_bytes()
    assert pooled < 8 * _WIDTH + 64 * 1024
    # and it is the whole index: every row is found
    index = BitmapIndex.parse(large.finish(), parse_type("STRING"))
    want = np.nonzero((np.arange(16 * 65_536) // 5_000) % 8 == 3)[0]
    assert np.array_equal(np.array(index.rows_in(pa.array(["3".rjust(_WIDTH, "x")])).to_array()), want)


def test_memory_held_in_random_order_is_the_bitmaps() -> None:
    """4 values in random order: each value's rows take a bitset container (1 bit a row), as in
    Java's RoaringBitmap32s: 4 bits a row, against the 1000 bytes a row the values take."""
    rows = 8 * 65_536
    builder, fed = _feed(rows, 4, run=1, seed=7)
    assert builder.held_bytes() <= rows * 4 // 8 + 4 * _WIDTH + 48 * 4 * 8 + 4096
    assert builder.held_bytes() < fed / 1000


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), strings=st.booleans(), distinct=st.sampled_from([300, 6000, 40_000]))
def test_high_cardinality_batches_give_the_bytes_of_one_batch(seed: int, strings: bool, distinct: int) -> None:
    """Thousands of values over small batches take the provisional ids and their merges (values
    recurring across merged and pending batches, new ones after a merge): the same bytes."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5_000, 60_000))
    ids = rng.integers(0, distinct, n)
    ids[rng.random(n) < 0.05] = -1
    dt = parse_type("STRING" if strings else "BIGINT")
    values = (pa.array([None if i < 0 else f"k{i}" for i in ids.tolist()]) if strings
              else pa.array(ids, mask=ids < 0))
    builder = BitmapIndexBuilder(dt)
    start = 0
    while start < n:
        size = int(rng.integers(1, 3_000))
        builder.add(values.slice(start, size))
        start += size
    whole, _ = write_bitmap_index(index_keys(values, dt), dt)
    assert builder.finish() == whole
