"""Snapshots whose ``logOffsets`` and ``statistics`` our commits carried forward, read by pypaimon
2.1 (which parses the snapshot JSON itself): it reads the table at every snapshot, and a pypaimon
commit on top of ours lands (carrying neither field: pypaimon's own divergence from Java)."""

from __future__ import annotations

import pyarrow as pa

from lake_assets import Catalog
from tests.unit.test_snapshot_fields import OFFSETS, SCHEMA, analyze_as_java


def _rows(keys: range) -> pa.Table:
    return pa.table({"k": list(keys), "v": [f"v{k}" for k in keys], "dt": ["d1"] * len(keys)}, schema=SCHEMA)


def test_pypaimon_reads_and_commits_over_carried_fields(pypaimon, tmp_warehouse: str) -> None:
    cat = Catalog(tmp_warehouse)
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"], options={"bucket": "1"})
    t.write_arrow(_rows(range(5)))
    name = analyze_as_java(t, offsets=OFFSETS)
    t.write_arrow(_rows(range(3, 8)))
    t.compact(full=True)
    t = cat.get_table("db.t")
    ids = [s.id for s in t.snapshots()]
    assert [(s.log_offsets, s.statistics) for s in t.snapshots()][2:] == [(OFFSETS, name)] * 2
    assert pypaimon.snapshots(tmp_warehouse, "db.t")["snapshots"] == ids
    for sid in ids:
        assert (pypaimon.read(tmp_warehouse, "db.t", snapshot_id=sid).sort_by("k").to_pylist()
                == t.to_arrow(snapshot_id=sid).sort_by("k").to_pylist())
    pypaimon.write(tmp_warehouse, "db.t", _rows(range(8, 10)))
    t = cat.get_table("db.t")
    assert t.snapshot_manager.latest_id() == ids[-1] + 1
    assert sorted(r["k"] for r in t.to_arrow().to_pylist()) == list(range(10))
    # pypaimon 2.1's commit carries neither (no logOffsets field, as Paimon after 1.3; the
    # statistics name dropped, unlike Java's tryCommitOnce): its behaviour, recorded here
    last = t.snapshot_manager.latest()
    assert last is not None and (last.log_offsets, last.statistics) == (None, None)
