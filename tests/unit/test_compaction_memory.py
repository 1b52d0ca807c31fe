"""Compaction's memory is bounded by the table's options (issue 17 §2, round 5): the rows of a
merge step (``compaction.merge-rows``), the rows each sorted run is read in (``read.batch-size``,
shared among many runs), append groups streamed, and the allocator's freed pages given back after
each unit - all counted in-process, never measured in time or RSS."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from typing import ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_assets import Catalog
from lake_assets.errors import MissingDataFileError, OptionError
from lake_assets.ops.compact import memory, rewrite, unit_pool
from lake_assets.ops.read import SplitReader

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64()), ("s", pa.string())])


@pytest.fixture()
def catalog(tmp_path) -> Catalog:
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


def _overlapping(catalog: Catalog, rounds: int, rows: int, **options: str):
    """A one-bucket write-only table whose ``rounds`` commits each cover the whole key range:
    a full compaction merges one interval of ``rounds`` sorted runs."""
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["k"],
                                 options={"bucket": "1", "write-only": "true", **options})
    rng = np.random.default_rng(3)
    for r in range(rounds):
        keys = rng.choice(rows * 2, rows, replace=False)
        table.write_arrow(pa.table({"k": keys, "v": np.full(rows, r), "s": [f"r{r}"] * rows}, schema=SCHEMA))
    return table


class _CountingReader(SplitReader):
    """A split reader that records the rows of every batch its file iterators hand out."""

    batches: ClassVar[list[int]] = []

    def iter_file(self, *args, **kwargs) -> Iterator[pa.Table]:  # type: ignore[override]
        for piece in super().iter_file(*args, **kwargs):
            _CountingReader.batches.append(piece.num_rows)
            yield piece


@pytest.fixture()
def counted(monkeypatch) -> dict[str, list[int]]:
    """Counts of a compaction's merge-step sizes and read batches."""
    got: dict[str, list[int]] = {"steps": [], "batches": []}
    _CountingReader.batches = got["batches"]
    original = rewrite.sort_and_merge

    def counting_merge(chunk, *a, **kw):
        got["steps"].append(chunk.num_rows)
        return original(chunk, *a, **kw)

    monkeypatch.setattr(rewrite, "sort_and_merge", counting_merge)
    monkeypatch.setattr(rewrite, "SplitReader", _CountingReader)
    return got


def test_run_batch_rows_share_the_merge_rows_among_runs() -> None:
    assert memory.run_batch_rows(262_144, 65_536, 2) == 65_536  # read.batch-size caps it
    assert memory.run_batch_rows(262_144, 65_536, 100) == 2_621  # an equal share of the merge rows
    assert memory.run_batch_rows(262_144, 65_536, 1_000) == memory.MIN_RUN_BATCH_ROWS  # the floor
    assert memory.run_batch_rows(262_144, 500, 1_000) == 500  # never above read.batch-size


def test_unit_rows_bound_names_each_part(catalog: Catalog) -> None:
    table = catalog.create_table("db.b", SCHEMA, primary_keys=["k"],
                                 options={"bucket": "1", "compaction.merge-rows": "10000", "read.batch-size": "3000"})
    bound = memory.unit_rows_bound(table.store.schema.core_options, runs=4)
    assert (bound.merge_input, bound.merge_output, bound.run_batches) == (20_004, 20_004, 4 * 2_500)
    assert memory.compaction_rows_bound(table.store.schema.core_options, 4, units=3) == 3 * bound.total
    unset = catalog.create_table("db.u", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    assert memory.merge_rows(unset.store.schema.core_options) == memory.DEFAULT_MERGE_ROWS == 256 * 1024


def test_the_runs_parquet_readers_are_bounded_in_bytes_by_read_parquet_buffer_size(catalog: Catalog) -> None:
    table = catalog.create_table("db.r", SCHEMA, primary_keys=["k"],
                                 options={"bucket": "1", "read.parquet.buffer-size": "256 kb",
                                          "sort-spill-threshold": "5"})
    opts = table.store.schema.core_options
    per_column = 256 * 1024 + 3 * memory.PARQUET_PAGE_BYTES  # buffer, a data page, a dictionary, a cut page
    assert memory.run_reader_bytes(opts, columns=6) == 6 * per_column
    # at most sort-spill-threshold runs' files open at once per unit (the rest are spilled first)
    assert memory.compaction_reader_bytes(opts, runs=200, units=2, columns=6) == 2 * 5 * 6 * per_column
    assert memory.compaction_reader_bytes(opts, runs=3, units=2, columns=6) == 2 * 3 * 6 * per_column
    whole = catalog.create_table("db.w", SCHEMA, primary_keys=["k"],
                                 options={"bucket": "1", "read.parquet.buffer-size": "0 b"})
    # whole column chunks: a run holds its whole compressed file, up to target-file-size
    assert memory.run_reader_bytes(whole.store.schema.core_options, 6) == 128 * 1024 * 1024
    unset = catalog.create_table("db.d", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    assert unset.store.schema.core_options.read_parquet_buffer_size == 1024 * 1024


def test_merge_rows_option_bounds_the_merge_steps_of_compact(catalog: Catalog, counted) -> None:
    rounds = 6
    table = _overlapping(catalog, rounds, 4_000, **{"compaction.merge-rows": "1500"})
    want = table.to_arrow().sort_by("k")
    table.compact(full=True)
    assert table.to_arrow().sort_by("k").equals(want)
    assert len(counted["steps"]) > 1  # streamed, not one merge of the bucket's 24,000 rows
    # min rows + one step (the same option), plus the frontier key's versions (one per run)
    assert max(counted["steps"]) <= 2 * 1_500 + rounds


def test_sorted_runs_are_read_in_batches_within_the_merge_bound(catalog: Catalog, counted) -> None:
    """Each file of a streamed interval is read in batches of `run_batch_rows`, never whole row
    groups (one per written file here: 4,000 rows each)."""
    rounds = 8
    table = _overlapping(catalog, rounds, 4_000, **{"compaction.merge-rows": "4096", "read.batch-size": "3000"})
    want = table.to_arrow().sort_by("k")
    table.compact(full=True)
    assert table.to_arrow().sort_by("k").equals(want)
    per_run = memory.run_batch_rows(4_096, 3_000, rounds)
    assert per_run == memory.MIN_RUN_BATCH_ROWS  # 4096 / 8 runs is below the floor
    assert sum(counted["batches"]) == rounds * 4_000
    assert max(counted["batches"]) <= per_run


def test_append_groups_are_streamed_in_merge_rows(catalog: Catalog, counted) -> None:
    table = catalog.create_table("db.app", pa.schema([("x", pa.int64())]),
                                 options={"compaction.min.file-num": "3", "compaction.merge-rows": "2500",
                                          "read.batch-size": "700"})
    for i in range(6):
        table.write_arrow(pa.table({"x": np.arange(i * 1_000, (i + 1) * 1_000)}))
    res = table.compact()
    assert res.files_in == 6 and res.files_out == 1
    assert table.to_arrow().column("x").to_pylist() == list(range(6_000))  # sequence order kept
    assert max(counted["batches"]) <= 700
    files = [f for sp in table.plan() for f in sp.files]
    assert (files[0].min_sequence_number, files[0].max_sequence_number) == (0, 5_999)
    split = table.plan()[0]
    meta = pq.read_metadata(table.file_io.open_input(table.store.data_file_path(split.partition, split.bucket,
                                                                               files[0])))
    groups = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    # a row group per gathered chunk: at least merge-rows, at most that plus one read batch
    assert sum(groups) == 6_000 and max(groups) <= 2_500 + 700 and len(groups) > 1


def test_each_unit_gives_its_threads_freed_pages_back(catalog: Catalog, monkeypatch) -> None:
    table = catalog.create_table("db.r", SCHEMA, primary_keys=["k"],
                                 options={"bucket": "4", "write-only": "true"})
    for r in range(2):
        table.write_arrow(pa.table({"k": np.arange(2_000), "v": np.full(2_000, r), "s": ["x"] * 2_000},
                                   schema=SCHEMA))
    units: list[int] = []
    releases: list[int] = []
    original = rewrite.run_compaction_task

    def counting_unit(*a, **kw):
        units.append(threading.get_ident())
        return original(*a, **kw)

    monkeypatch.setattr(rewrite, "run_compaction_task", counting_unit)
    monkeypatch.setattr(unit_pool, "release_thread_memory", lambda: releases.append(threading.get_ident()))
    res = table.compact(full=True, parallelism=2)
    assert res.tasks == 4
    assert sorted(releases) == sorted(units)  # once per unit, on the thread that ran it
    units.clear()
    releases.clear()
    for r in range(2):
        table.write_arrow(pa.table({"k": np.arange(2_000), "v": np.full(2_000, r), "s": ["y"] * 2_000},
                                   schema=SCHEMA))
    table.compact(full=True, parallelism=1)  # the serial path too
    assert len(units) == 4 and releases == units


def test_a_failed_unit_releases_too(catalog: Catalog, monkeypatch) -> None:
    table = catalog.create_table("db.f", SCHEMA, primary_keys=["k"], options={"bucket": "1", "write-only": "true"})
    table.write_arrow(pa.table({"k": [1, 2], "v": [1, 2], "s": ["a", "b"]}, schema=SCHEMA))
    releases: list[int] = []

    def failing(*a, **kw):
        raise OSError("disk gone")

    monkeypatch.setattr(rewrite, "run_compaction_task", failing)
    monkeypatch.setattr(unit_pool, "release_thread_memory", lambda: releases.append(1))
    with pytest.raises(OSError, match="disk gone"):
        table.compact(full=True)
    assert releases == [1]


@pytest.mark.parametrize("value", ["0", "-5", "many"])
def test_merge_rows_option_is_checked(catalog: Catalog, value: str) -> None:
    with pytest.raises(OptionError, match=r"compaction\.merge-rows"):
        catalog.create_table("db.bad", SCHEMA, primary_keys=["k"],
                             options={"bucket": "1", "compaction.merge-rows": value})


def test_a_merge_steps_input_is_dropped_before_its_output_is_consumed() -> None:
    """While the caller writes a step's merged rows, the step's gathered input is no longer held,
    only each input's current batch (a generator suspended at ``yield merge(concat(pending))``
    kept the step's input too: its rows twice). Counted in the bytes of a pool only the inputs'
    batches are allocated from."""
    from lake_assets.lsm.merge import sort_and_merge
    from lake_assets.lsm.merge_engine.deduplicate import Deduplicate
    from lake_assets.lsm.merge_reader import merge_sorted

    pool = pa.proxy_memory_pool(pa.default_memory_pool())
    batch_rows, runs = 1_000, 3
    batch_bytes: list[int] = []

    def run(seed: int) -> Iterator[pa.Table]:
        rng = np.random.default_rng(seed)
        keys = np.sort(rng.choice(40_000, 8_000, replace=False))
        for start in range(0, len(keys), batch_rows):  # fresh buffers per batch, from `pool`
            part = keys[start:start + batch_rows].tolist()
            batch = pa.table({"k": pa.array(part, pa.int64(), memory_pool=pool),
                              "_SEQUENCE_NUMBER": pa.array([seed] * len(part), pa.int64(), memory_pool=pool),
                              "_VALUE_KIND": pa.array([0] * len(part), pa.int8(), memory_pool=pool)})
            batch_bytes.append(batch.nbytes)
            yield batch

    held: list[int] = []
    out = []
    for merged in merge_sorted([run(s) for s in range(runs)], ["k"],
                               lambda c: sort_and_merge(c, ["k"], Deduplicate()), min_rows=2_500):
        held.append(pool.bytes_allocated())
        out.append(merged)
    distinct = set()
    for seed in range(runs):
        distinct |= set(np.random.default_rng(seed).choice(40_000, 8_000, replace=False).tolist())
    assert len(out) > 3 and sum(t.num_rows for t in out) == len(distinct)
    # each input's current batch (allocations round up to 64 bytes per buffer)
    assert max(held) <= runs * (max(batch_bytes) + 3 * 64)


def test_a_steps_merged_rows_are_not_held_while_the_next_step_merges(catalog: Catalog, monkeypatch) -> None:
    """Once written, a step's merged rows are dropped before the next step gathers and merges
    (the write loop's variable kept them: a third step's worth of rows at the merge's peak)."""
    table = _overlapping(catalog, 4, 6_000, **{"compaction.merge-rows": "2000"})
    want = table.to_arrow().sort_by("k")
    outputs: list[weakref.ref[pa.Table]] = []
    alive_at_merge: list[int] = []
    original = rewrite.sort_and_merge

    def tracking_merge(chunk, *a, **kw):
        alive_at_merge.append(sum(ref() is not None for ref in outputs))
        merged = original(chunk, *a, **kw)
        outputs.append(weakref.ref(merged))
        return merged

    monkeypatch.setattr(rewrite, "sort_and_merge", tracking_merge)
    table.compact(full=True)
    assert len(alive_at_merge) > 3 and max(alive_at_merge) == 0
    assert table.to_arrow().sort_by("k").equals(want)


def test_spark_units_give_the_reused_workers_pages_back(catalog: Catalog, tmp_path, monkeypatch) -> None:
    """A Spark task's unit (compact and postpone jobs) releases on its worker's thread, as the
    in-process units do: Spark reuses the Python worker for the next task, which would otherwise
    stay at the unit's peak; a unit that fails with a lake error releases too."""
    from lake_assets.ops.compact import plan_compaction
    from lake_assets.ops.postpone import plan_postpone
    from lake_assets.spark.jobs import compact as job
    from lake_assets.spark.jobs import compact_postpone as job_postpone
    from lake_assets.spark.jobs.table_ref import TableRef

    releases: list[str] = []
    for module in (job, job_postpone):
        monkeypatch.setattr(module, "release_thread_memory", lambda m=module.__name__: releases.append(m))
    table = catalog.create_table("db.s", SCHEMA, primary_keys=["k"], options={"bucket": "2", "write-only": "true"})
    post = catalog.create_table("db.p", SCHEMA, primary_keys=["k"], options={"bucket": "-2"})
    for t in (table, post):
        for r in range(2):
            t.write_arrow(pa.table({"k": np.arange(500), "v": np.full(500, r), "s": ["x"] * 500}, schema=SCHEMA))
    warehouse = str(tmp_path / "wh")
    task = plan_compaction(table.store, full=True).tasks[0]
    assert job.run_unit(TableRef(warehouse, "db.s"), task)[0] == "ok"
    unit = plan_postpone(post.store)[0]
    assert job_postpone.run_unit(TableRef(warehouse, "db.p"), unit, "u")[0] == "ok"
    assert releases == [job.__name__, job_postpone.__name__]

    def damaged(*_a: object) -> None:
        raise MissingDataFileError("Cannot compact db.s: file x is missing")

    monkeypatch.setattr(job, "run_compaction_task", damaged)
    assert job.run_unit(TableRef(warehouse, "db.s"), task) == ("error", ("MissingDataFileError",
                                                                         "Cannot compact db.s: file x is missing"))
    assert releases[2:] == [job.__name__]
