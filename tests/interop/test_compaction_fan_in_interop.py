"""A compaction that spilled part of its sorted runs (``sort-spill-threshold``) writes files
Paimon's own reader (pypaimon) reads back as the rows written, on a table carrying the option."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops.spill import SpillRun
from tests.interop.paimon import canonical

pytestmark = pytest.mark.interop


def test_pypaimon_reads_a_compaction_that_spilled(pypaimon, tmp_warehouse, monkeypatch):
    cat = Catalog(tmp_warehouse)
    cat.create_database("db")
    schema = pa.schema([("k", pa.int64()), ("v", pa.int64()), ("op", pa.string())])
    t = cat.create_table("db.fan", schema, primary_keys=["k"], options={
        "bucket": "2", "rowkind.field": "op", "write-only": "true", "sort-spill-threshold": "3",
        "compaction.merge-rows": "100"})
    rng = np.random.default_rng(11)
    live: dict[int, int] = {}
    for i in range(12):
        ks = rng.choice(2_000, 400, replace=False)
        ops = rng.choice(["+I", "-D"], size=400, p=[0.85, 0.15])
        t.write_arrow(pa.table({"k": ks, "v": np.full(400, i), "op": ops}, schema=schema))
        for k, op in zip(ks.tolist(), ops.tolist(), strict=True):
            if op == "+I":
                live[k] = i
            else:
                live.pop(k, None)
    spilled: list[str] = []
    original = SpillRun.batches

    def batches(run: SpillRun):
        spilled.append(run.path)
        return original(run)

    monkeypatch.setattr(SpillRun, "batches", batches)
    t.compact(full=True)
    assert spilled  # the compaction merged spill runs
    want = pa.table({"k": list(live), "v": list(live.values()), "op": ["+I"] * len(live)}, schema=schema)
    theirs = pypaimon.read(tmp_warehouse, "db.fan")
    assert canonical(theirs.select(["k", "v"]), ["k"]) == canonical(want.select(["k", "v"]), ["k"])
    assert canonical(t.to_arrow().select(["k", "v"]), ["k"]) == canonical(want.select(["k", "v"]), ["k"])
