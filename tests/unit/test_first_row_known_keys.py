"""First-row compaction drops keys older levels hold by streaming those levels' keys along the
merged output (`first_row.KnownKeys`): the result equals a whole-set lookup, and the key rows in
memory are a chunk per sorted run, never the bucket - counted in-process, not measured."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.lsm.merge_engine.first_row import KnownKeys, drop_known_keys
from lake_assets.ops.compact import rewrite as rewrite_mod
from lake_assets.ops.read import SplitReader

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])


class _Files:
    """Stand-ins for data files whose key chunks come from in-memory sorted runs."""

    def __init__(self, runs: list[pa.Table], chunk: int) -> None:
        self.runs, self.chunk, self.held, self.peak = runs, chunk, 0, 0

    def open(self, index: int) -> Iterator[pa.Table]:
        run = self.runs[index]
        for start in range(0, run.num_rows, self.chunk):
            part = run.slice(start, self.chunk)
            self.held += part.num_rows
            self.peak = max(self.peak, self.held)
            yield part
            self.held -= part.num_rows


@pytest.mark.parametrize("keys", [["k"], ["k", "j"]])
def test_streamed_lookup_equals_the_whole_key_set_and_holds_a_chunk_per_run(keys: list[str]) -> None:
    rng = np.random.default_rng(11)
    levels = [np.sort(rng.choice(200_000, 30_000, replace=False)) for _ in range(3)]

    def table(k: np.ndarray) -> pa.Table:
        t = pa.table({"k": k.astype(np.int64)})
        return t.append_column("j", pa.array(k % 7)) if "j" in keys else t

    runs = [table(k) for k in levels]
    files = _Files(runs, 1_000)
    known = KnownKeys([0, 1, 2], keys, [], files.open)  # type: ignore[list-item]
    fresh = table(np.sort(rng.choice(200_000, 50_000, replace=False)))
    out = [known.drop(fresh.slice(s, 4_096)) for s in range(0, fresh.num_rows, 4_096)]
    want = drop_known_keys(fresh, pa.concat_tables(runs), keys)
    assert pa.concat_tables(out).equals(want)
    assert files.peak <= 3 * 1_000  # a chunk per run, not 90_000 keys
    # going back in key order starts the runs over: still the right answer
    again = known.drop(fresh.slice(0, 4_096))
    assert again.equals(drop_known_keys(fresh.slice(0, 4_096), pa.concat_tables(runs), keys))


@pytest.fixture(autouse=True)
def _one_run_per_stand_in(request, monkeypatch) -> None:
    """The stand-in "files" are run indexes: each is its own sorted run."""
    if "catalog" not in request.fixturenames:
        monkeypatch.setattr("lake_assets.lsm.merge_engine.first_row.split_into_runs",
                            lambda files, types: [[f] for f in files])


def test_streamed_lookup_matches_float_keys_as_paimon() -> None:
    neg_nan = -math.nan
    files = _Files([pa.table({"k": [-0.0, 1.0, neg_nan]})], 1)
    known = KnownKeys([0], ["k"], [], files.open)  # type: ignore[list-item]
    merged = pa.table({"k": [0.0, 1.0, math.nan], "i": [0, 1, 2]})  # Double.compare order
    assert known.drop(merged).column("i").to_pylist() == [0]


def test_first_row_compaction_reads_lookup_keys_in_chunks(catalog: Catalog, monkeypatch) -> None:
    table = catalog.create_table("db.fr", SCHEMA, primary_keys=["k"],
                                 options={"bucket": "1", "merge-engine": "first-row", "write-only": "true"})
    rng = np.random.default_rng(2)
    base = rng.choice(100_000, 40_000, replace=False)
    table.write_arrow(pa.table({"k": base, "v": np.zeros(40_000, np.int64)}, schema=SCHEMA))
    table.compact(full=True)  # the bucket's keys now sit at the top level
    late = rng.choice(100_000, 8_000, replace=False)  # half of them repeat old keys
    table.write_arrow(pa.table({"k": late, "v": np.ones(8_000, np.int64)}, schema=SCHEMA))
    sizes: list[int] = []
    original = SplitReader.iter_file

    def iter_file(self, split, meta, with_system=True, columns=None, batch_rows=None):
        for part in original(self, split, meta, with_system, columns, batch_rows):
            if columns == ["k"] and not with_system:  # the lookup's key reads
                sizes.append(part.num_rows)
            yield part

    monkeypatch.setattr(SplitReader, "iter_file", iter_file)
    original_task = rewrite_mod.run_compaction_task
    monkeypatch.setattr(rewrite_mod, "run_compaction_task",
                        lambda store, task, **kw: original_task(store, task, chunk_rows=2_000, **kw))
    table.compact()
    assert sizes and max(sizes) <= 2_000  # key chunks, not the 40_000 keys at once
    got = dict(zip(*table.to_arrow().select(["k", "v"]).to_pydict().values(), strict=True))
    old = set(base.tolist())
    want = {int(k): 0 for k in base} | {int(k): 1 for k in late.tolist() if k not in old}
    assert got == want
