"""The merge frontier's vectorised search (`count_at_most`) and the k-way merge built on it equal
simple references on random multi-run inputs with duplicate keys across runs; integer keys take
no per-row Python key decodes; spill batching uses no hash-based ``np.unique``."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lake_assets.lsm import merge_reader
from lake_assets.lsm.key_compare import compare_keys
from lake_assets.lsm.merge import sort_and_merge
from lake_assets.lsm.merge_engine.deduplicate import Deduplicate
from lake_assets.lsm.merge_reader import count_at_most, merge_sorted
from lake_assets.ops.spill import key_batches

_KEYS = ["a", "b", "c"]


def _sorted_table(rows: list[tuple[int, str, float]], seq_start: int) -> pa.Table:
    """A table sorted by Paimon's key order (a, b, c), with sequence numbers and a value."""
    import functools

    ordered = sorted(rows, key=functools.cmp_to_key(compare_keys))
    n = len(ordered)
    return pa.table({
        "a": pa.array([r[0] for r in ordered], pa.int32()),
        "b": pa.array([r[1] for r in ordered], pa.string()),
        "c": pa.array([r[2] for r in ordered], pa.float64()),
        "_SEQUENCE_NUMBER": pa.array(np.arange(seq_start, seq_start + n), pa.int64()),
        "_VALUE_KIND": pa.array(np.zeros(n, np.int8)),
        "v": pa.array(np.arange(n) + seq_start, pa.int64()),
    })


_ROW = st.tuples(st.integers(-3, 3), st.sampled_from(["", "a", "b", "é"]),
                 st.sampled_from([float("-inf"), -0.0, 0.0, 1.5, float("nan")]))


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(_ROW, max_size=40), frontier=_ROW, width=st.integers(1, 3))
def test_count_at_most_equals_a_linear_count(rows: list[tuple[int, str, float]],
                                             frontier: tuple[int, str, float], width: int) -> None:
    table = _sorted_table(rows, 0)
    names = _KEYS[:width]
    want = sum(1 for r in range(table.num_rows)
               if compare_keys(tuple(table.column(k)[r].as_py() for k in names), frontier[:width]) <= 0)
    assert count_at_most(table, names, frontier[:width]) == want


def _batches(table: pa.Table, rows: int) -> list[pa.Table]:
    return list(key_batches(table, _KEYS, rows)) if table.num_rows else []


@settings(max_examples=60, deadline=None)
@given(runs=st.lists(st.lists(_ROW, max_size=60), min_size=1, max_size=6),
       batch=st.integers(1, 9), step=st.integers(1, 17), min_rows=st.integers(1, 33))
def test_merge_sorted_equals_a_whole_merge(runs: list[list[tuple[int, str, float]]], batch: int,
                                           step: int, min_rows: int) -> None:
    # duplicate keys within and across runs; later runs carry higher sequence numbers
    tables = [_sorted_table(rows, i * 1_000) for i, rows in enumerate(runs)]
    inputs = [iter(_batches(t, batch)) for t in tables]

    def merge(chunk: pa.Table) -> pa.Table:
        return sort_and_merge(chunk, _KEYS, Deduplicate())

    chunks = list(merge_sorted(inputs, _KEYS, merge, min_rows=min_rows, max_step_rows=step))
    want = merge(pa.concat_tables(tables))
    got = pa.concat_tables(chunks) if chunks else want.slice(0, 0)
    assert got.to_pylist() == want.to_pylist() or _same_with_nan(got, want)


def _same_with_nan(got: pa.Table, want: pa.Table) -> bool:
    """Row equality where NaN equals NaN (to_pylist compares NaN unequal)."""
    def norm(t: pa.Table) -> list[tuple[object, ...]]:
        return [tuple("nan" if isinstance(x, float) and x != x else x for x in r.values()) for r in t.to_pylist()]
    return norm(got) == norm(want)


def test_integer_keys_take_no_python_key_decodes(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    a = np.sort(rng.integers(0, 1_000, 100_000))
    table = pa.table({"a": a, "b": np.zeros(a.size, np.int32), "s": pa.array(["x"] * a.size)})
    decodes = 0
    real = merge_reader._key_at

    def counted(table: pa.Table, key_names: list[str], row: int) -> tuple[object, ...]:
        nonlocal decodes
        decodes += 1
        return real(table, key_names, row)

    monkeypatch.setattr(merge_reader, "_key_at", counted)
    for f in (-1, 0, 500, 999, 5_000):
        assert count_at_most(table, ["a", "b"], (f, 0)) == int(np.count_nonzero(a <= f))
    assert decodes == 0  # the binary search of decoded keys took ~17 per call
    # a string column after integer ones searches only the rows equal in the integer columns
    assert count_at_most(table, ["a", "b", "s"], (500, 0, "x")) == int(np.count_nonzero(a <= 500))
    assert decodes <= 2 + int(np.count_nonzero(a == 500)).bit_length()


def test_key_batches_cut_at_key_starts_without_np_unique(monkeypatch: pytest.MonkeyPatch) -> None:
    keys = np.repeat(np.arange(50), np.arange(1, 51) % 7 + 1)
    table = pa.table({"k": keys})

    def refuse(*args: object, **kwargs: object) -> np.ndarray:
        raise AssertionError("np.unique takes numpy 2.x's hash path: use a sort-based unique")

    monkeypatch.setattr(np, "unique", refuse)
    for rows in (1, 3, 10, 64, keys.size):
        parts = list(key_batches(table, ["k"], rows))
        assert pa.concat_tables(parts).equals(table)
        for before, after in itertools.pairwise(parts):
            assert before.column("k")[-1].as_py() != after.column("k")[0].as_py()  # never inside a key
        assert all(p.num_rows >= min(rows, 1) for p in parts)


def test_key_disjoint_runs_search_only_the_runs_at_the_frontier(monkeypatch: pytest.MonkeyPatch) -> None:
    # a load's spilled runs barely overlap: a step shared among all 40 runs took 1/40 of a step
    # from the one run giving rows and searched all 40, so searches per row grew with runs^2
    runs, per_run, batch = 40, 1_000, 100
    tables = [_sorted_table([(r * per_run + i, "x", 0.5) for i in range(per_run)], r * per_run)
              for r in range(runs)]
    inputs = [iter(_batches(t, batch)) for t in tables]
    searches = 0
    real = merge_reader.count_at_most

    def counted(table: pa.Table, key_names: list[str], frontier: tuple[object, ...]) -> int:
        nonlocal searches
        searches += 1
        return real(table, key_names, frontier)

    monkeypatch.setattr(merge_reader, "count_at_most", counted)

    def merge(chunk: pa.Table) -> pa.Table:
        return sort_and_merge(chunk, _KEYS, Deduplicate())

    out = pa.concat_tables(list(merge_sorted(inputs, _KEYS, merge, min_rows=4_000, max_step_rows=4_000)))
    assert out.column("a").to_pylist() == list(range(runs * per_run))
    assert searches <= 2 * runs * per_run // batch  # about one per batch (8,000+ before)
