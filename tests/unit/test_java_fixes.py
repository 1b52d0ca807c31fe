"""Behaviours aligned with Paimon Java 0.9 after the differential suite found us apart.

Each case names what Java does; ``tests/differential`` checks the same against the real engine.
"""

from __future__ import annotations

import pyarrow as pa

from lake_assets import Catalog

PU_SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("a", pa.string()), ("op", pa.string())])


def test_ignore_delete_write_of_only_retractions_writes_nothing(tmp_path) -> None:
    """Java's writer drops every retraction of an ignore-delete table and a batch commit with no
    files makes no snapshot; we used to crash slicing the emptied batch (range step 0)."""
    cat = Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table("db.t", PU_SCHEMA, primary_keys=["k"],
                         options={"bucket": "1", "merge-engine": "partial-update",
                                  "partial-update.ignore-delete": "true", "rowkind.field": "op"})
    first = t.write_arrow(pa.table({"k": [1], "a": ["x"], "op": ["+I"]}, schema=PU_SCHEMA))
    retractions = pa.table({"k": [1, 2], "a": [None, None], "op": ["-D", "-U"]}, schema=PU_SCHEMA)
    assert t.write_arrow(retractions) is None
    assert t.snapshot_manager.latest_id() == first
    assert t.to_arrow().to_pylist() == [{"k": 1, "a": "x", "op": "+I"}]


def test_snapshot_json_has_java_09_fields(tmp_path) -> None:
    """Paimon 0.9 writes ``changelogRecordCount: 0`` without changelog and ``logOffsets: {}``."""
    import json

    cat = Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table("db.t", PU_SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    sid = t.write_arrow(pa.table({"k": [1], "a": ["x"], "op": ["+I"]}, schema=PU_SCHEMA))
    raw = json.loads((tmp_path / "db.db" / "t" / "snapshot" / f"snapshot-{sid}").read_text())
    assert (raw["changelogRecordCount"], raw["logOffsets"]) == (0, {})
    assert list(raw).index("logOffsets") == list(raw).index("timeMillis") + 1  # Java's field order
    assert t.snapshot_manager.snapshot(sid).log_offsets == {}
