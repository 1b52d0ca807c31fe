"""pypaimon 2.1 reads session 14's 1.x table kinds after lake_assets' maintenance: data evolution
(``_ROW_ID`` of every retained snapshot and tag; a plain row-tracking table is not read here since
lake_assets compacts it as Paimon HEAD does, whose outputs pypaimon 2.1 reads with null ``_ROW_ID``s:
pinned in tests/interop/test_row_tracking_interop.py), and `data-file.path-directory` with bitmap
index v2 files (append with vectors and primary key with vectors), each after a seeded history
of writes, deletes, compactions, expiry, orphan removal, tags, tag deletion and rollback
(`tests.property.table_kinds`; Java 0.9 reads the kinds it knows in
tests/differential/test_maintenance_kinds_java.py). One pypaimon process reads them all.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lake_assets import Catalog
from tests.property.table_kinds import KINDS, random_history, rows_of

from .paimon import Pypaimon, read_ipc
from .test_row_tracking_interop import RowTrackingPaimon

PYPAIMON_KINDS = ["data_evolution", "append_dv_dir_bitmap_v2", "dv_dir_bitmap_v2"]


def test_pypaimon_reads_every_snapshot_and_tag_after_maintenance(pypaimon: Pypaimon, tmp_warehouse: str,
                                                                 tmp_path: Path) -> None:
    cat = Catalog(tmp_warehouse)
    cat.create_database("db")
    reads: list[dict[str, Any]] = []
    expected: dict[str, Any] = {}
    histories = []
    for i, name in enumerate(PYPAIMON_KINDS):
        kind = KINDS[name]
        h = random_history(kind, cat, seed=1614 + i, steps=26, identifier=f"db.{name}")
        histories.append(h)
        points: list[dict[str, Any]] = [{"snapshot_id": s.id} for s in h.table.snapshots()]
        points += [{"tag": tag} for tag in h.tags]
        for at in points:
            out = str(tmp_path / f"{name}-{len(reads)}.arrow")
            reads.append({"op": "read", "table": f"db.{name}", "columns": list(kind.read_columns), "out": out, **at})
            state = h.states[at["snapshot_id"]] if "snapshot_id" in at else h.tags[at["tag"]][1]
            expected[out] = (name, at, kind.read_columns, state)
    assert any(h.tags for h in histories) and any("rollback" in " ".join(h.log) for h in histories)
    driver = RowTrackingPaimon(pypaimon.python)
    path = tmp_path / "steps.json"
    path.write_text(json.dumps(reads))
    driver.run("steps", tmp_warehouse, str(path))
    for out, (name, at, columns, state) in expected.items():
        assert rows_of(read_ipc(out), columns) == state, (name, at)
