"""Changelog production (``lookup``, ``full-compaction``) reads the state before a compaction for
the keys with new records only, streaming the older files in ``read.batch-size`` batches: the
rows read at once are a batch, not the bucket - counted in-process, not measured."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops.read import SplitReader

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64()), ("op", pa.string())])


@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
def test_changelog_reads_the_old_state_in_batches_and_only_for_new_keys(catalog: Catalog, producer: str,
                                                                       monkeypatch) -> None:
    t = catalog.create_table("db.c", SCHEMA, primary_keys=["k"], options={
        "bucket": "1", "rowkind.field": "op", "changelog-producer": producer, "write-only": "true",
        "read.batch-size": "700"})
    rng = np.random.default_rng(4)
    base = rng.choice(50_000, 20_000, replace=False)
    t.write_arrow(pa.table({"k": base, "v": np.zeros(20_000, np.int64), "op": ["+I"] * 20_000}, schema=SCHEMA))
    t.compact(full=True)
    start = t.latest_snapshot().id
    changed = np.concatenate([base[:30], [60_001, 60_002]])  # 30 updates, 2 new keys, 1 delete
    ops = ["+U"] * 29 + ["-D", "+I", "+I"]
    t.write_arrow(pa.table({"k": changed, "v": np.ones(32, np.int64), "op": ops}, schema=SCHEMA))
    whole: list[int] = []
    batches: list[int] = []
    original_read, original_iter = SplitReader.read_file, SplitReader.iter_file

    def read_file(self, split, meta, *a, **kw):
        out = original_read(self, split, meta, *a, **kw)
        whole.append(out.num_rows)
        return out

    def iter_file(self, split, meta, with_system=True, columns=None, batch_rows=None):
        for part in original_iter(self, split, meta, with_system, columns, batch_rows):
            batches.append(part.num_rows)
            yield part

    monkeypatch.setattr(SplitReader, "read_file", read_file)
    monkeypatch.setattr(SplitReader, "iter_file", iter_file)
    t.compact(full=producer == "full-compaction")
    monkeypatch.undo()
    # the old rows are streamed in batches of read.batch-size for the changelog; a lookup unit
    # (level 0 only) never reads the 20_000 old rows whole (a full compaction rewrites them)
    assert batches and max(batches) <= 700
    assert producer == "full-compaction" or 20_000 not in whole
    got = sorted((r["k"], r["_row_kind"], r["v"]) for r in t.read_changes(start).to_pylist())
    b = [int(k) for k in base[:30]]
    want = sorted([(k, "-U", 0) for k in b[:29]] + [(k, "+U", 1) for k in b[:29]]
                  + [(b[29], "-D", 0), (60_001, "+I", 1), (60_002, "+I", 1)])
    assert got == want


def test_lookup_changelog_of_a_large_level0_streams_it_in_batches(catalog: Catalog, monkeypatch) -> None:
    # a first compaction after a load: the unit's level 0 is the whole bucket
    t = catalog.create_table("db.l", SCHEMA, primary_keys=["k"], options={
        "bucket": "1", "rowkind.field": "op", "changelog-producer": "lookup", "write-only": "true",
        "read.batch-size": "900"})
    t.write_arrow(pa.table({"k": np.arange(12_000), "v": np.arange(12_000), "op": ["+I"] * 12_000}, schema=SCHEMA))
    start = t.latest_snapshot().id
    batches: list[int] = []
    original_iter = SplitReader.iter_file

    def iter_file(self, split, meta, with_system=True, columns=None, batch_rows=None):
        for part in original_iter(self, split, meta, with_system, columns, batch_rows):
            if batch_rows == 900:
                batches.append(part.num_rows)
            yield part

    monkeypatch.setattr(SplitReader, "iter_file", iter_file)
    t.compact()
    monkeypatch.undo()
    assert sum(batches) == 12_000 and max(batches) <= 900  # the new rows, streamed
    changes = t.read_changes(start)
    assert changes.num_rows == 12_000 and set(changes.column("_row_kind").to_pylist()) == {"+I"}
    assert changes.column("k").to_pylist() == list(range(12_000))
