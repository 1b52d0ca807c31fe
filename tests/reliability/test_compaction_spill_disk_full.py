"""A local disk too small for compaction's spill runs (real tmpfs): the unit merges its runs at
once instead, with the same output, and leaves nothing behind - spilling only saves memory."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops.compact import fan_in
from tests.reliability.tmpfs import small_tmpfs

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])


def test_a_full_local_disk_drops_the_spill_not_the_compaction(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    tables = [catalog.create_table(f"db.{name}", SCHEMA, primary_keys=["k"], options={
        "bucket": "1", "write-only": "true", "compaction.merge-rows": "1000", "sort-spill-threshold": threshold})
        for name, threshold in (("b", "2"), ("u", "1000"))]
    rng = np.random.default_rng(6)
    for _ in range(8):
        keys = rng.choice(60_000, 20_000, replace=False)
        batch = pa.table({"k": keys, "v": [rng.bytes(12).hex() for _i in range(20_000)]}, schema=SCHEMA)
        for t in tables:
            t.write_arrow(batch)
    failures: list[BaseException] = []
    original = fan_in._fold

    def fold(*args: Any, **kwargs: Any) -> Any:
        try:
            return original(*args, **kwargs)
        except OSError as exc:
            failures.append(exc)
            raise

    monkeypatch.setattr(fan_in, "_fold", fold)
    with small_tmpfs(tmp_path / "small", "64k") as disk:
        monkeypatch.setattr(tempfile, "tempdir", str(disk))
        tables[0].compact(full=True)
        assert failures and all(getattr(e, "errno", None) == 28 for e in failures)  # ENOSPC, really
        assert list(disk.iterdir()) == []
    tables[1].compact(full=True)
    assert tables[0].to_arrow().sort_by("k").equals(tables[1].to_arrow().sort_by("k"))
    assert tables[0].latest_snapshot().id == tables[1].latest_snapshot().id
