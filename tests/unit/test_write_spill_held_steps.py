"""What the spillable write buffer holds between merge steps (session 12, debt 2).

At commit, `WriteBufferSpill.merge_into` merges a bucket's spilled runs into level-0 files step
by step (each step up to about twice ``SPILL_MERGE_ROWS`` rows, merged by the merge engine).
Its ``for chunk in ...: rolling.write(chunk)`` loop kept the previous step alive in the loop
variable while the generator gathered and merged the next: two steps where the bound
(`spill_merge_bound_bytes`) counts one. A fold of runs (``local-sort.max-num-file-handles``
reached) goes through `SpillDirectory.write_run`, which must release its steps the same way.

Counted, not timed: which merged steps are still alive when the next one is made (reference
counts only: the cycle collector is off).
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
from lake_assets.ops import write_spill
from lake_assets.ops.level0_flush import Level0Flush

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64()), ("s", pa.string())])


class _Steps:
    """Weak references to the steps one function makes, and the most of the earlier ones still
    alive when it is called for the next."""

    def __init__(self) -> None:
        self.made: list[weakref.ref[pa.Table]] = []
        self.most_alive = 0

    def wrap(self, make: Any) -> Any:
        def counted(*args: Any, **kwargs: Any) -> pa.Table:
            alive = sum(1 for ref in self.made if ref() is not None)
            self.most_alive = max(self.most_alive, alive)
            out = make(*args, **kwargs)
            self.made.append(weakref.ref(out))
            return out
        return counted


@pytest.fixture()
def catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Catalog:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # spill runs stay in the test's dir
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


def _write_one_commit(catalog: Catalog, batches: int, rows: int, **options: str) -> tuple[Any, pa.Table]:
    """One commit of ``batches`` writes of ``rows`` random upserts each to a one-bucket table whose
    small write buffer spills each of them: its content (sorted by key) and the table."""
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={
        "bucket": "1", "write-only": "true", "write-buffer-size": "64 kb", **options})
    rng = np.random.default_rng(5)
    written = []
    writer = table.new_writer("u")
    try:
        for b in range(batches):
            keys = rng.choice(rows * 3, rows, replace=False)
            data = pa.table({"k": keys, "v": np.full(rows, b), "s": [f"v{b}-{k}-{'x' * 40}" for k in keys]},
                            schema=SCHEMA)
            written.append(data)
            writer.write_arrow(data)
        messages = writer.prepare_commit()
        table.new_committer("u").commit(messages, 1)
    finally:
        writer.close()
    # deduplicate: the last write of a key wins
    everything = pa.concat_tables(written)
    order = np.lexsort((np.arange(everything.num_rows), everything.column("k").to_numpy()))
    ordered = everything.take(pa.array(order))
    keys = ordered.column("k").to_numpy()
    last = np.append(keys[1:] != keys[:-1], True)
    return table, ordered.filter(pa.array(last))


def test_merge_into_holds_no_earlier_step_while_it_merges_the_next(catalog: Catalog,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(write_spill, "SPILL_MERGE_ROWS", 200)
    steps = _Steps()
    monkeypatch.setattr(Level0Flush, "_merge_chunk", steps.wrap(Level0Flush._merge_chunk))
    gc.disable()  # reference counts alone must free a written step
    try:
        table, expected = _write_one_commit(catalog, 6, 2000)
    finally:
        gc.enable()
    assert len(steps.made) > 20  # the commit-time merge of the spilled runs ran many steps
    # each merged step is written before the next is gathered (before: the loop variable kept one)
    assert steps.most_alive == 0
    assert table.to_arrow().sort_by("k").to_pylist() == expected.to_pylist()


def test_a_fold_of_spilled_runs_holds_no_earlier_step(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    """``local-sort.max-num-file-handles`` runs fold into one through `SpillDirectory.write_run`."""
    monkeypatch.setattr(write_spill, "SPILL_MERGE_ROWS", 200)
    steps = _Steps()
    monkeypatch.setattr(write_spill.WriteBufferSpill, "sort_chunk",
                        steps.wrap(write_spill.WriteBufferSpill.sort_chunk))
    gc.disable()
    try:
        table, expected = _write_one_commit(catalog, 8, 2000, **{"local-sort.max-num-file-handles": "3"})
    finally:
        gc.enable()
    assert len(steps.made) > 20  # folds (and the spills' own sorts) made many steps
    assert steps.most_alive == 0
    assert table.to_arrow().sort_by("k").to_pylist() == expected.to_pylist()


def test_a_streamed_full_phase_holds_no_earlier_step_while_it_merges_the_next(catalog: Catalog,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The full phase of a stream (`ChangeReader.read_batches`, `streaming_read.stream_split`)
    merges a bucket in steps of ``read.batch-size`` rows: neither loop may keep the step it
    emitted - nor the tables made from it - while the next one is merged."""
    from lake_assets.ops import streaming_read

    table = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={
        "bucket": "1", "write-only": "true", "read.batch-size": "100"})
    rng = np.random.default_rng(8)
    for b in range(4):  # four overlapping level-0 runs: a merged split
        keys = rng.choice(3000, 1500, replace=False)
        table.write_arrow(pa.table({"k": keys, "v": np.full(1500, b), "s": [f"v{b}-{k}" for k in keys]},
                                   schema=SCHEMA))
    made: list[weakref.ref[pa.Table]] = []
    most_alive = 0
    real_merge_sorted = streaming_read.merge_sorted

    def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal most_alive
        steps = real_merge_sorted(*args, **kwargs)
        while True:
            most_alive = max(most_alive, sum(1 for ref in made if ref() is not None))
            try:
                step = next(steps)
            except StopIteration:
                return
            made.append(weakref.ref(step))
            yield step
            del step

    monkeypatch.setattr(streaming_read, "merge_sorted", counted)
    stream = table.stream(mode="latest-full")
    reader = table.change_reader()
    rows = 0
    gc.disable()
    try:
        for split in stream.poll(max_snapshots=1)[0].splits:
            for batch in reader.read_batches(split):
                rows += batch.num_rows
                del batch
    finally:
        gc.enable()
    assert len(made) > 20 and rows == table.to_arrow().num_rows
    assert most_alive == 0  # before: the reader's and the stream_split loop's variables held one
