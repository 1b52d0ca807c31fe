"""What a many-runs compaction holds between merge steps (issue 17 §2, round 8).

A fold of ``ops/compact/fan_in.py`` merges runs into a spill run step by step. Each step (up to
about twice ``compaction.merge-rows`` rows, sorted) must be released once it is written: the fold
kept its first step alive until the fold ended, and the spill writer's loop kept the previous
step while the next was gathered and sorted, so a fold held up to three steps where the bound
counts one - which showed only once a fold's inputs exceeded one step (level-0 files of 40,000
rows at 64M rows in `bench/bench_memory.py --many-runs 200`), hence a peak that grew with the table.

Counted, not timed: which sorted steps are still alive when the next one is made, and the
Arrow bytes an open rolling writer holds after each row group.
"""

from __future__ import annotations

import gc
import tempfile
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.formats.data_file import FILE_SOURCE_COMPACT
from lake_assets.ops.compact import rewrite
from lake_assets.ops.compact.plan import plan_compaction
from lake_assets.ops.compact.rewrite import _writer

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64()), ("s", pa.string())])


@pytest.fixture()
def catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Catalog:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # spill directories stay in the test's dir
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


def _many_runs(catalog: Catalog, runs: int, rows: int, **options: str) -> Any:
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={
        "bucket": "1", "write-only": "true", **options})
    rng = np.random.default_rng(11)
    for r in range(runs):
        keys = rng.choice(rows * 4, rows, replace=False)
        table.write_arrow(pa.table({"k": keys, "v": np.full(rows, r), "s": [f"v{r}-{k}" for k in keys]},
                                   schema=SCHEMA))
    return table


class _Steps:
    """The sorted steps the compaction's merges make (``sort_for_merge`` outputs: a fold's
    steps), and the most of the earlier ones still alive when a later one is made."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.made: list[weakref.ref[pa.Table]] = []
        self.most_alive = 0
        original = rewrite.sort_for_merge

        def counted(table: pa.Table, *args: Any, **kwargs: Any) -> pa.Table:
            alive = sum(1 for ref in self.made if ref() is not None)
            self.most_alive = max(self.most_alive, alive)
            out = original(table, *args, **kwargs)
            self.made.append(weakref.ref(out))
            return out

        monkeypatch.setattr(rewrite, "sort_for_merge", counted)


def test_a_fold_holds_no_earlier_step_while_it_makes_the_next(catalog: Catalog,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # 12 runs of 400 rows, at most 3 merged at once, steps of 128 rows: every fold writes
    # several steps into its spill run
    table = _many_runs(catalog, 12, 400, **{"sort-spill-threshold": "3", "compaction.merge-rows": "128"})
    expected = table.to_arrow().sort_by("k")
    gc.disable()  # reference counts alone must free a written step (no cycle collector help)
    try:
        steps = _Steps(monkeypatch)
        table.compact(full=True)
    finally:
        gc.enable()
    assert len(steps.made) > 20  # folds of many steps did run
    # each step is written (to the spill run) before the next is gathered: none of the earlier
    # ones is alive then (before round 8: the fold's first step and the spill writer's last)
    assert steps.most_alive == 0
    assert table.to_arrow().sort_by("k").equals(expected)


def test_an_open_rolling_writer_holds_no_rows_between_row_groups(catalog: Catalog) -> None:
    """The output writer of a compaction writes each merged step as a row group of its open file:
    between calls it holds the sink's buffer and encoder state, not the rows written so far (so a
    file's size up to ``target-file-size`` does not set the unit's memory; Java's writer, by
    contrast, buffers a row group up to ``parquet.block.size``)."""
    table = _many_runs(catalog, 2, 50)
    store = table.store
    task = plan_compaction(store, full=True).tasks[0]
    rolling = _writer(store, task).rolling(level=5, file_source=FILE_SOURCE_COMPACT)
    rng = np.random.default_rng(3)
    step = 100_000
    held: list[int] = []
    step_bytes = 0
    try:
        for i in range(8):
            keys = np.arange(i * step, (i + 1) * step, dtype=np.int64)
            chunk = pa.table({"k": keys, "v": rng.integers(0, 1 << 40, step),
                              "s": [f"value-{k % 977}" for k in keys.tolist()],
                              "_SEQUENCE_NUMBER": keys, "_VALUE_KIND": pa.array(np.zeros(step, np.int8))})
            step_bytes = chunk.nbytes
            before = pa.total_allocated_bytes()
            rolling.write(chunk)
            del chunk
            held.append(pa.total_allocated_bytes() - before + step_bytes)  # what the write left behind
        assert rolling.current is not None and rolling.current.rows == 8 * step  # one file, 8 row groups
    finally:
        rolling.abort()
    # the open file's state - the sink's buffer and parquet-cpp's column writers, which keep
    # about 16 bytes a row of the last row group (measured with pyarrow's ParquetWriter alone) -
    # is at most about one step and does not grow with the rows the file holds (the first call
    # also opens the file)
    assert held[0] < 2 * step_bytes and max(held[1:]) < step_bytes
    assert max(held[1:]) - min(held[1:]) < step_bytes // 16
