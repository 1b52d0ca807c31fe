"""`IntKeyPositions`: the row positions of integer keys in a sorted one-row-per-key file column,
by its rank bitmap (dense keys) and by its binary search (sparse keys); `WantedKeys`: the same
answer from a mark of the wanted keys; all against a plain model."""

from __future__ import annotations

import numpy as np
import pytest

from lake_assets.lsm import int_key_positions
from lake_assets.lsm.int_key_positions import (
    DENSE_SPAN_PER_ROW,
    MARK_SPAN_PER_KEY,
    IntKeyPositions,
    WantedKeys,
)


def model(keys: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Positions of ``keys`` whose value is in ``wanted``, by a Python set."""
    wanted_set = {int(w) for w in wanted}
    return np.array([i for i, k in enumerate(keys.tolist()) if k in wanted_set], dtype=np.intp)


def dense(index: IntKeyPositions) -> bool:
    return index.kind == "rank"


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
@pytest.mark.parametrize("spacing", [2, 20])
def test_dense_keys_use_the_rank_bitmap_and_find_every_row(dtype: type, spacing: int) -> None:
    rng = np.random.default_rng(1)
    info = np.iinfo(dtype)
    span = min(45 * spacing, int(info.max) - int(info.min) + 1)
    rows = 45 if spacing * 45 <= span else span // spacing
    for lo in (lo for lo in (int(info.min), -3, 0, int(info.max) - span + 1) if lo + span - 1 <= info.max):
        keys = np.sort(rng.choice(span, rows, replace=False)).astype(np.int64) + lo
        keys[0], keys[-1] = lo, lo + span - 1  # the span is the one asked for
        keys = np.unique(keys).astype(dtype)
        index = IntKeyPositions(keys)
        assert dense(index), (dtype, lo)
        # keys at the file's edges, inside, between its keys, and outside its range
        near = np.arange(max(int(info.min), lo - 5), min(int(info.max), lo + span + 5), dtype=np.int64)
        candidates = np.unique(np.concatenate([keys[:1], keys[-1:], rng.choice(keys, 20), near.astype(dtype),
                                               np.array([info.min, info.max], dtype=dtype)]))
        wanted = candidates.astype(dtype)
        got = index.find(wanted)
        assert np.array_equal(got, model(keys, wanted)), (dtype, lo)
        assert got.dtype == np.intp


def test_words_boundaries_and_a_file_whose_every_key_is_wanted() -> None:
    # keys at bit 0 and bit 63 of words, a run across a word border, a lone key in a far word
    keys = np.array([0, 63, 64, 65, 127, 128, 191, 400], dtype=np.int64) + 10
    index = IntKeyPositions(keys)
    assert index.kind == "rank"
    assert np.array_equal(index.find(keys), np.arange(keys.size))  # a file fully deleted
    assert np.array_equal(index.find(keys[[0, 4, 7]]), [0, 4, 7])
    assert index.find(keys[:1] - 1).size == 0 and index.find(keys[-1:] + 1).size == 0


def test_sparse_keys_are_searched_with_the_same_answers() -> None:
    rng = np.random.default_rng(2)
    keys = np.sort(rng.choice(2**62, 500, replace=False)).astype(np.int64) - 2**61
    index = IntKeyPositions(keys)
    assert not dense(index), "span far above the dense bound: a binary search"
    wanted = np.sort(np.concatenate([rng.choice(keys, 50, replace=False), keys[:1], keys[-1:],
                                     np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max])]))
    wanted = np.unique(wanted)
    assert np.array_equal(index.find(wanted), model(keys, wanted))


def test_the_dense_bound_and_the_search_agree_on_either_side_of_it() -> None:
    keys = np.arange(0, 100 * DENSE_SPAN_PER_ROW, DENSE_SPAN_PER_ROW, dtype=np.int64)  # span just dense
    wide = keys.copy()
    wide[-1] += DENSE_SPAN_PER_ROW  # one past the bound
    wanted = np.arange(0, int(wide[-1]) + 1, 7, dtype=np.int64)
    assert IntKeyPositions(keys).kind == "rank" and IntKeyPositions(wide).kind == "search"
    assert np.array_equal(IntKeyPositions(keys).find(wanted), model(keys, wanted))
    assert np.array_equal(IntKeyPositions(wide).find(wanted), model(wide, wanted))


def test_empty_file_and_empty_wanted() -> None:
    empty = IntKeyPositions(np.empty(0, dtype=np.int64))
    assert empty.find(np.arange(5, dtype=np.int64)).size == 0
    assert IntKeyPositions(np.arange(5, dtype=np.int64)).find(np.empty(0, dtype=np.int64)).size == 0


def test_repeated_keys_are_never_ranked() -> None:
    # a column that repeats a key (not a file above level 0) must not take the rank bitmap: a
    # rank counts distinct keys, not rows; the binary search finds each key's first row
    keys = np.array([1, 2, 2, 3, 5], dtype=np.int64)
    index = IntKeyPositions(keys)
    assert not dense(index)
    assert np.array_equal(index.find(np.array([2, 3, 5], dtype=np.int64)), [1, 3, 4])


def test_unsigned_and_old_numpy_take_the_search(monkeypatch: pytest.MonkeyPatch) -> None:
    keys = np.array([1, 2, 2**64 - 1], dtype=np.uint64)
    index = IntKeyPositions(keys)
    assert not dense(index)
    assert np.array_equal(index.find(np.array([2, 2**64 - 1], dtype=np.uint64)), [1, 2])
    monkeypatch.setattr(int_key_positions, "_HAS_BITCOUNT", False)
    assert not dense(IntKeyPositions(np.arange(10, dtype=np.int64)))


def test_nbytes_counts_what_is_held() -> None:
    index = IntKeyPositions(np.arange(0, 64_000, 2, dtype=np.int64))
    assert dense(index)
    assert index.nbytes == 1000 * 8 + 1000 * 8  # a word and a count per 64 values of span


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
def test_wanted_keys_mark_finds_the_rows_a_search_finds(dtype: type) -> None:
    rng = np.random.default_rng(3)
    info = np.iinfo(dtype)
    for lo in (int(info.min), -40, int(info.max) - 99):
        wanted = np.unique(rng.integers(lo, lo + 100, 30)).astype(dtype)
        marks = WantedKeys(wanted)
        assert marks.markable
        pool = np.arange(max(int(info.min), lo - 20), min(int(info.max), lo + 120), dtype=np.int64)
        file_keys = np.sort(rng.choice(pool, 50, replace=False)).astype(dtype)
        edges = np.array([info.min, info.max, wanted[0], wanted[-1]], dtype=dtype)
        for keys in (file_keys, np.unique(np.concatenate([file_keys, edges])), rng.permutation(file_keys)):
            assert np.array_equal(marks.positions_in(keys), model(keys, wanted)), (dtype, lo)


def test_wanted_keys_far_from_the_file_keys_never_match_by_wrapping() -> None:
    # offsets from the wanted keys' low end wrap in int64 for keys at the other extreme: a
    # wrapped offset must never land on a marked slot
    wanted = np.array([2**62, 2**62 + 1, 2**62 + 3], dtype=np.int64)
    keys = np.array([-(2**63), -(2**63) + 1, -(2**62), 0, 2**62 + 1, 2**62 + 2, 2**63 - 1], dtype=np.int64)
    assert np.array_equal(WantedKeys(wanted).positions_in(keys), model(keys, wanted))


def test_wanted_keys_too_sparse_for_a_mark_are_refused() -> None:
    sparse = np.array([0, MARK_SPAN_PER_KEY * 2], dtype=np.int64)  # span 129 for 2 keys
    assert not WantedKeys(sparse).markable
    assert WantedKeys(np.array([0, MARK_SPAN_PER_KEY * 2 - 1], dtype=np.int64)).markable
    assert not WantedKeys(np.empty(0, dtype=np.int64)).markable
    with pytest.raises(ValueError, match="too sparse"):
        WantedKeys(sparse).positions_in(np.arange(3, dtype=np.int64))
