"""The bounded k-way merge and streaming split reads: results equal a whole merge, and the rows in
flight are bounded by the configured batch/step sizes - counted in-process by instrumented
inputs, never measured in time or RSS."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import InvalidArgumentError
from lake_assets.lsm.merge import sort_and_merge
from lake_assets.lsm.merge_engine.deduplicate import Deduplicate
from lake_assets.lsm.merge_reader import count_at_most, merge_sorted
from lake_assets.lsm.run_partition import split_into_runs
from lake_assets.ops import read as read_mod
from lake_assets.ops.read import SplitReader
from lake_assets.ops.spill import key_batches
from lake_assets.ops.streaming_read import read_ahead_of


def _run(rng: np.random.Generator, n: int, seq_start: int, dups: bool) -> pa.Table:
    """A key-sorted run; with ``dups`` a key may repeat (as in a spill run)."""
    keys = np.sort(rng.integers(0, 50_000, n) if dups else rng.choice(50_000, n, replace=False))
    return pa.table({"k": keys.astype(np.int64), "_SEQUENCE_NUMBER": np.arange(seq_start, seq_start + n),
                     "_VALUE_KIND": pa.array(np.zeros(n, np.int8)), "v": rng.integers(0, 9, n)})


class _Counted:
    """Inputs that count the rows they have handed out."""

    def __init__(self) -> None:
        self.rows = 0

    def wrap(self, batches: Iterator[pa.Table]) -> Iterator[pa.Table]:
        for b in batches:
            self.rows += b.num_rows
            yield b


@pytest.mark.parametrize("dups", [False, True])
def test_merge_step_is_bounded_whatever_the_fan_in(dups: bool) -> None:
    rng = np.random.default_rng(7)
    runs = [_run(rng, 8_000, i * 10_000, dups) for i in range(32)]
    counted = _Counted()
    inputs = [counted.wrap(key_batches(r, ["k"], 4_096)) for r in runs]
    sizes: list[int] = []

    def merge(chunk: pa.Table) -> pa.Table:
        sizes.append(chunk.num_rows)
        return sort_and_merge(chunk, ["k"], Deduplicate())

    out = pa.concat_tables(list(merge_sorted(inputs, ["k"], merge, min_rows=1_024, max_step_rows=1_024)))
    want = sort_and_merge(pa.concat_tables(runs), ["k"], Deduplicate())
    assert out.equals(want)
    # min_rows + max_step_rows, plus the frontier key's other versions (one per run, more with dups)
    slack = 32 * (8 if dups else 1)
    assert max(sizes) <= 2 * 1_024 + slack
    # the fan-in times the batch size used to be one step (32 * ~4096 rows)
    assert len(sizes) > 100


def test_count_at_most_is_the_sorted_prefix() -> None:
    t = pa.table({"a": [1, 1, 2, 2, 3], "b": ["x", "y", "a", "z", "a"]})
    assert [count_at_most(t, ["a", "b"], f) for f in [(0, "z"), (1, "x"), (2, "b"), (2, "z"), (9, "")]] == [
        0, 1, 3, 4, 5]
    f = pa.table({"d": [float("-inf"), -0.0, 0.0, float("nan")]})  # Double.compare order
    assert [count_at_most(f, ["d"], (v,)) for v in (-0.0, 0.0, float("inf"), float("nan"))] == [2, 3, 3, 4]


def _overlapping(catalog: Catalog, rounds: int, rows: int, **options: str):
    schema = pa.schema([("k", pa.int64()), ("v", pa.int64()), ("s", pa.string())])
    table = catalog.create_table("db.t", schema, primary_keys=["k"],
                                 options={"bucket": "1", "write-only": "true", **options})
    rng = np.random.default_rng(3)
    for r in range(rounds):  # every round covers the whole key range: one section of `rounds` runs
        keys = rng.choice(rows * 2, rows, replace=False)
        table.write_arrow(pa.table({"k": keys, "v": np.full(rows, r), "s": [f"r{r}"] * rows}, schema=schema))
    return table


@pytest.fixture()
def catalog(tmp_path) -> Catalog:
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


@pytest.mark.parametrize("options", [
    {},
    {"merge-engine": "partial-update"},
    {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
])
def test_streaming_split_read_holds_runs_times_batch(catalog: Catalog, monkeypatch, options) -> None:
    rounds, rows, batch = 4, 20_000, 1_000
    table = _overlapping(catalog, rounds, rows, **options)
    want = table.to_arrow().sort_by("k")
    counted = _Counted()
    original = read_mod.iter_data_file

    def iter_data_file(*a, **kw):
        return counted.wrap(original(*a, **kw))

    monkeypatch.setattr(read_mod, "iter_data_file", iter_data_file)
    reader = SplitReader(table.store, table.schema)
    (split,) = table.plan()
    assert len(split.files) == rounds
    out, in_flight = [], []
    seen = 0
    for part in reader.stream_split(split, batch):
        in_flight.append(counted.rows - seen)  # rows decoded since the previous batch went out
        seen = counted.rows
        assert part.num_rows <= 2 * batch + rounds
        out.append(part)
    assert pa.concat_tables(out).sort_by("k").equals(want)
    # one batch per sorted run, plus one step: never the section (rounds * rows)
    assert max(in_flight) <= rounds * batch + 2 * batch + rounds


def test_split_into_runs_chains_disjoint_files(catalog: Catalog) -> None:
    table = _overlapping(catalog, 3, 1_000)
    (split,) = table.plan()
    key_types = table.schema.types(["k"])
    runs = split_into_runs(split.files, key_types)
    assert len(runs) == 3 and sorted(len(r) for r in runs) == [1, 1, 1]


def test_read_ahead_holds_workers_times_depth() -> None:
    import threading

    produced = 0
    consumed = 0
    peak = 0
    lock = threading.Lock()

    def produce(item: int) -> Iterator[int]:
        nonlocal produced, peak
        for j in range(50):
            with lock:
                produced += 1
                peak = max(peak, produced - consumed)
            yield item * 100 + j

    out = []
    for v in read_ahead_of(list(range(12)), produce, workers=3, depth=2):
        out.append(v)
        with lock:
            consumed += 1
    assert out == [i * 100 + j for i in range(12) for j in range(50)]  # plan order
    # each worker: `depth` queued plus the one it waits to put, plus the one the caller holds
    assert peak <= 3 * (2 + 1) + 1


def test_read_ahead_stops_early_and_raises_at_the_item() -> None:
    def produce(item: int) -> Iterator[int]:
        if item == 3:
            raise ValueError("bad item 3")
        yield from range(item * 10, item * 10 + 10)

    it = read_ahead_of(list(range(6)), produce, workers=2, depth=1)
    assert [next(it) for _ in range(5)] == list(range(5))
    it.close()  # workers stop; nothing hangs
    with pytest.raises(ValueError, match="bad item 3"):
        list(read_ahead_of(list(range(6)), produce, workers=2, depth=1))


def test_to_batches_streams_in_batch_size(catalog: Catalog) -> None:
    table = _overlapping(catalog, 3, 5_000)
    want = table.to_arrow().sort_by("k")
    batches = list(table.to_batches(batch_size=700, read_ahead=1))
    assert max(b.num_rows for b in batches) <= 700
    assert pa.Table.from_batches(batches).sort_by("k").equals(want)
    filtered = pa.Table.from_batches(list(table.to_batches(batch_size=300, filter=[("k", "<", 900)],
                                                           columns=["k", "s"])))
    assert filtered.sort_by("k").equals(want.filter(pa.compute.less(want["k"], 900)).select(["k", "s"]))
    with pytest.raises(InvalidArgumentError, match="batch_size"):
        table.to_batches(batch_size=0)


def test_compaction_merge_is_bounded_by_chunk_rows_whatever_the_runs(catalog: Catalog, monkeypatch) -> None:
    """A full compaction of many overlapping runs gives the merge engine chunks of about
    ``chunk_rows`` (twice at most, plus the frontier key's versions), one input per sorted run (8 runs:
    under the default sort-spill-threshold, nothing is folded)."""
    from lake_assets.ops.compact import rewrite
    from lake_assets.ops.compact.plan import plan_compaction
    from lake_assets.ops.compact.rewrite import run_compaction_task

    rounds = 8
    table = _overlapping(catalog, rounds, 3_000)
    want = table.to_arrow().sort_by("k")
    sizes: list[int] = []
    inputs: list[int] = []
    original_merge, original_inputs = rewrite.sort_and_merge, rewrite.bounded_inputs

    def counting_merge(chunk, *a, **kw):
        sizes.append(chunk.num_rows)
        return original_merge(chunk, *a, **kw)

    def counting_inputs(runs, *a, **kw):
        got = original_inputs(runs, *a, **kw)
        inputs.append(len(got))
        return got

    monkeypatch.setattr(rewrite, "sort_and_merge", counting_merge)
    monkeypatch.setattr(rewrite, "bounded_inputs", counting_inputs)
    plan = plan_compaction(table.store, full=True)
    msgs = [run_compaction_task(table.store, task, chunk_rows=300, whole_read_rows=0) for task in plan.tasks]
    table.new_committer("c").commit(msgs)
    assert inputs == [rounds]
    assert max(sizes) <= 2 * 300 + rounds
    assert table.to_arrow().sort_by("k").equals(want)


@pytest.mark.parametrize("dv", ["true", "false"])
def test_to_batches_reads_what_to_arrow_reads_with_and_without_deletion_vectors(catalog: Catalog, dv: str) -> None:
    schema = pa.schema([("k", pa.int64()), ("v", pa.int64()), ("s", pa.string())])
    table = catalog.create_table("db.dv", schema, primary_keys=["k"],
                                 options={"bucket": "2", "deletion-vectors.enabled": dv})
    rng = np.random.default_rng(5)
    for r in range(4):  # upserts over a shared key range: vectors (or merges) hide the old rows
        keys = rng.choice(6_000, 3_000, replace=False)
        table.write_arrow(pa.table({"k": keys, "v": np.full(3_000, r), "s": [f"r{r}"] * 3_000}, schema=schema))
    want = table.to_arrow().sort_by("k")
    got = pa.Table.from_batches(list(table.to_batches(batch_size=500))).sort_by("k")
    assert got.equals(want)
    flt = [("v", ">=", 2)]
    got = pa.Table.from_batches(list(table.to_batches(batch_size=500, filter=flt))).sort_by("k")
    assert got.equals(table.to_arrow(filter=flt).sort_by("k"))
