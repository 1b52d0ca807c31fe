"""The row group plan of a batched read on an object store (`formats.parquet_chunk_plan`): which
column chunks are read whole within the bound of the columns' buffers, and that a planned read
returns what a plain read returns (issue 17 §2)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_assets.formats.parquet_chunk_plan import HOLE_BYTES, column_chunk_bytes, plan_row_group
from lake_assets.formats.parquet_read import iter_parquet
from lake_assets.ops.compact import memory
from lake_assets.options import CoreOptions

MiB = 1024 * 1024


def _held(chunks: dict[str, tuple[int, int]], plan_whole: tuple[str, ...], streamed: tuple[str, ...],
          buffer: int) -> int:
    """What a read by the plan holds of the file at most: whole chunks with their gaps, a buffer
    per streamed leaf column."""
    return (sum(chunks[c][0] + HOLE_BYTES for c in plan_whole)
            + sum(chunks[c][1] for c in streamed) * buffer)


def test_the_smallest_chunks_are_read_whole_and_the_rest_streamed_within_the_bound() -> None:
    chunks = {"a": (10 * MiB, 1), "b": (MiB, 1), "c": (2 * MiB, 1), "d": (30 * MiB, 1)}
    plan = plan_row_group(chunks, ["d", "a", "b", "c"], 8 * MiB)
    # 1 + 2 + 10 MiB (and 8 MiB for d) fit 4 x 8 MiB; d does not: it gets the rest
    assert plan.whole == ("a", "b", "c") and plan.streamed == ("d",)  # in the projection's order
    assert plan.stream_buffer == 32 * MiB - 13 * MiB - 3 * HOLE_BYTES
    assert _held(chunks, plan.whole, plan.streamed, plan.stream_buffer) == 32 * MiB


def test_a_row_group_within_the_bound_is_read_whole_one_above_it_streamed() -> None:
    fits = {"a": (20 * MiB, 1), "b": (MiB, 1)}
    assert plan_row_group(fits, ["a", "b"], 16 * MiB).streamed == ()
    # no chunk can be read whole beside a buffer for the other: each streams with its own
    big = {"a": (20 * MiB, 1), "b": (9 * MiB, 1)}
    plan = plan_row_group(big, ["a", "b"], 8 * MiB)
    assert plan.whole == () and plan.streamed == ("a", "b") and plan.stream_buffer == 8 * MiB
    # a projection plans its own columns only
    assert plan_row_group(big, ["b"], 8 * MiB).whole == ()
    assert plan_row_group(big, ["b"], 10 * MiB).whole == ("b",)


def test_a_nested_column_counts_a_buffer_per_leaf() -> None:
    # two leaves: streamed it holds two buffers, so its budget is two buffers
    chunks = {"s": (MiB + MiB // 2, 2), "x": (40 * MiB, 1)}
    plan = plan_row_group(chunks, ["s", "x"], MiB)
    assert plan.whole == ("s",) and plan.streamed == ("x",)
    assert plan.stream_buffer == 3 * MiB - (MiB + MiB // 2) - HOLE_BYTES
    assert _held(chunks, plan.whole, plan.streamed, plan.stream_buffer) <= 3 * MiB


@pytest.fixture(scope="module")
def mixed_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pa.Table]:
    """Three row groups of random values (large chunks), dictionary strings (small), a struct
    with a list (nested: three leaves) and a sequence."""
    rng = np.random.default_rng(1)
    n = 300_000
    table = pa.table({
        "a": rng.integers(0, 1 << 62, n),
        "s": pa.array([f"v{i % 500}" for i in range(n)]),
        "st": pa.array([{"x": i, "y": [i, 2]} for i in range(n)]),
        "d": rng.random(n),
        "k": np.arange(n),
    })
    path = tmp_path_factory.mktemp("plan") / "mixed.parquet"
    pq.write_table(table, path, row_group_size=120_000, use_dictionary=["s"])
    return path, table


def test_column_chunk_bytes_sum_each_columns_leaves(mixed_file: tuple[Path, pa.Table]) -> None:
    path, _ = mixed_file
    md = pq.ParquetFile(path).metadata
    chunks = column_chunk_bytes(md, pq.ParquetFile(path).schema_arrow, 1)
    rg = md.row_group(1)
    assert chunks["st"] == (rg.column(2).total_compressed_size + rg.column(3).total_compressed_size, 2)
    assert chunks["k"] == (rg.column(5).total_compressed_size, 1)
    assert sum(b for b, _ in chunks.values()) == sum(rg.column(j).total_compressed_size for j in range(6))


@pytest.mark.parametrize("buffer", [64 * 1024, 512 * 1024, 8 * MiB])
@pytest.mark.parametrize("columns", [None, ["d", "s", "a"], ["st", "k"], ["k", "missing", "k"]])
def test_a_planned_read_returns_what_a_plain_read_returns(
        mixed_file: tuple[Path, pa.Table], buffer: int, columns: list[str] | None) -> None:
    """64 KiB: most columns streamed, the small dictionary column whole, the two readers' batches
    joined; 512 KiB: some whole, some streamed; 8 MiB: every chunk whole."""
    path, table = mixed_file
    # as pyarrow reads a projection: names the file lacks left out, each name once
    expected = table if columns is None else table.select([c for c in dict.fromkeys(columns) if c != "missing"])
    with pa.OSFile(str(path)) as src:
        pieces = list(iter_parquet(src, columns, 7000, buffer_bytes=buffer, coalesce=True))
    assert all(p.num_rows <= 7000 for p in pieces)
    assert pa.concat_tables(pieces).equals(expected)
    assert [f.name for f in pieces[0].schema] == expected.column_names


def test_the_plans_of_the_mixed_file_take_each_path(mixed_file: tuple[Path, pa.Table]) -> None:
    """The read above goes through the whole, the streamed and the joined paths."""
    path, table = mixed_file
    pf = pq.ParquetFile(path)
    chunks = column_chunk_bytes(pf.metadata, pf.schema_arrow, 0)
    plans = {b: plan_row_group(chunks, table.column_names, b) for b in (64 * 1024, 512 * 1024, 8 * MiB)}
    assert plans[64 * 1024].whole and plans[64 * 1024].streamed
    assert plans[8 * MiB].streamed == ()
    assert plan_row_group(chunks, ["a", "d"], 64 * 1024).whole == ()


def _held_per_row_group(path: Path, coalesce: bool) -> list[int]:
    """The most Arrow bytes held between batches, per row group, of a batched read with 1 MiB."""
    held: list[int] = []
    rows = pq.ParquetFile(path).metadata
    bounds = np.cumsum([rows.row_group(i).num_rows for i in range(rows.num_row_groups)])
    seen = 0
    with pa.OSFile(str(path)) as src:
        start = pa.total_allocated_bytes()
        for piece in iter_parquet(src, None, 8192, buffer_bytes=MiB, coalesce=coalesce):
            group = int(np.searchsorted(bounds, seen, side="right"))
            seen += piece.num_rows
            held += [0] * (group + 1 - len(held))
            held[group] = max(held[group], pa.total_allocated_bytes() - start - piece.nbytes)
            del piece
    return held


def test_a_whole_row_group_is_not_held_while_the_next_is_streamed(tmp_path: Path) -> None:
    """A reader keeps what it pre-buffered until it pre-buffers again: the whole-read first row
    group's chunks must not stay beside the streamed second one's buffers."""
    rng = np.random.default_rng(2)
    path = tmp_path / "two-groups.parquet"
    small = pa.table({"a": rng.integers(0, 1 << 62, 100_000), "b": rng.integers(0, 1 << 62, 100_000)})
    big = pa.table({"a": rng.integers(0, 1 << 62, 1_500_000), "b": rng.integers(0, 1 << 62, 1_500_000)})
    with pq.ParquetWriter(path, small.schema) as w:
        w.write_table(small, row_group_size=100_000)
        w.write_table(big, row_group_size=1_500_000)
    md = pq.ParquetFile(path).metadata
    first = sum(md.row_group(0).column(j).total_compressed_size for j in range(2))
    pf = pq.ParquetFile(path)
    plans = [plan_row_group(column_chunk_bytes(md, pf.schema_arrow, i), ["a", "b"], MiB) for i in range(2)]
    assert plans[0].streamed == () and plans[1].whole == ()  # whole, then streamed
    planned, streamed = _held_per_row_group(path, True), _held_per_row_group(path, False)
    # the second row group holds what session 10's read of it holds (each column streamed), not
    # that and the first row group's 1.6 MB of chunks
    assert planned[1] < streamed[1] + first // 2


def test_a_streamed_string_column_holds_more_than_two_pages_beside_its_buffer(tmp_path: Path) -> None:
    """The bound's third page per column: a string column whose dictionary fell back to plain
    pages, streamed with an 8 MiB buffer, holds more than the buffer and two 1 MiB pages between
    batches (the compressed page a refill cut is read whole beside the buffer), within three."""
    n = 2_000_000
    keys = np.sort(np.random.default_rng(5).choice(n * 4, n, replace=False))
    path = tmp_path / "notes.parquet"
    pq.write_table(pa.table({"note": pa.array([f"note {k} {'x' * (k % 37)}" for k in keys])}), path,
                   row_group_size=n, compression="zstd")
    assert pq.ParquetFile(path).metadata.row_group(0).column(0).total_compressed_size > 8 * MiB
    options = CoreOptions({"read.parquet.buffer-size": "8 mb"})
    with pa.OSFile(str(path)) as src:
        start, most = pa.total_allocated_bytes(), 0
        for piece in iter_parquet(src, None, 65536, buffer_bytes=8 * MiB, coalesce=True):
            most = max(most, pa.total_allocated_bytes() - start - piece.nbytes)
            del piece
    assert 8 * MiB + 2 * memory.PARQUET_PAGE_BYTES < most <= memory.run_reader_bytes(options, 1)
