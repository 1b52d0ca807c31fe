"""Java 0.9 reads session 14's table kinds after lake_assets' maintenance, and lake_assets reads
them after Java's: a seeded history per kind (`tests.property.table_kinds`: writes, deletes,
compactions, expiry, orphan removal, tags, tag deletion, rollback to snapshots and tags), then

- Java reads every retained snapshot and every tag as lake_assets does, and lists the same tags;
- Java's own snapshot expiry and orphan clean (0.9's) run on the result, and every snapshot and
  tag still reads as the model says: neither engine's maintenance deletes what the other's
  metadata needs (deletion vector and hash index files included).

Kinds Java 0.9 knows only: `data-file.path-directory`, bitmap index v2 and row tracking are 1.x
(pypaimon reads those: tests/interop/test_maintenance_kinds_interop.py). One Java session, one
warehouse, every kind in one test (lean).
"""

from __future__ import annotations

import time

from lake_assets import Catalog
from tests.java.oracle import PaimonJava
from tests.property.table_kinds import KINDS, SCHEMA, random_history, rows_of

JAVA_KINDS = ["append_dv", "dv_deduplicate", "dv_partial_update_lookup", "dv_aggregation", "dv_max_lookup",
              "cross_partition", "cross_partition_dv"]
COLUMNS = tuple(SCHEMA.names)


def test_java_reads_every_snapshot_and_tag_after_maintenance_and_maintains_after_us(
    java: PaimonJava, wh: str, lake: Catalog
) -> None:
    histories = {}
    for i, name in enumerate(JAVA_KINDS):
        kind = KINDS[name]
        # a seed whose history holds tags and rollbacks (the same per kind: the steps are seeded)
        h = random_history(kind, lake, seed=1614 + i, steps=26, identifier=f"db.{name}")
        histories[name] = h
        ident = f"db.{name}"
        t = h.table
        assert java.tags(wh, ident) == {n: s.id for n, s in t.tags().items()}, h.log
        assert [s["id"] for s in java.snapshots(wh, ident)] == [s.id for s in t.snapshots()]
        for snap in t.snapshots():
            assert rows_of(java.read(wh, ident, snapshot_id=snap.id), COLUMNS) == h.states[snap.id], (name, snap.id)
        for tag, (_, state) in h.tags.items():
            assert rows_of(java.read(wh, ident, tag=tag), COLUMNS) == state, (name, tag, h.log)
    assert any(h.tags for h in histories.values()) and any("rollback" in " ".join(h.log) for h in histories.values())

    for name, h in histories.items():
        ident = f"db.{name}"
        java.expire_snapshots(wh, ident, options={"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2"})
        java.remove_orphan_files(wh, ident, older_than_ms=int(time.time() * 1000) + 60_000)
        t = h.table.refresh()
        h.table = t
        h.log.append("java expire + orphans")
        h.check()  # every retained snapshot and tag reads its rows, none lost a file
        latest = t.latest_snapshot()
        assert latest is not None
        assert rows_of(java.read(wh, ident), COLUMNS) == h.states[latest.id]
