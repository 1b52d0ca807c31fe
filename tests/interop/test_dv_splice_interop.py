"""pypaimon 2.1 and pypaimon-rust 0.4 read deletion-vector tables whose compactions wrote spliced
files (`ops.compact.splice_rewrite`: a level-0 file's unchanged column chunks copied, its changed
columns encoded alone, under a footer we write): an aggregation and a partial-update table, both
read as we read them."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops.compact import rewrite

from .paimon import Pypaimon, PypaimonRust

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("name", pa.string()), ("qty", pa.int32()),
                    ("amount", pa.float64())])
TABLES = {
    "agg": {"merge-engine": "aggregation", "fields.qty.aggregate-function": "sum",
            "fields.amount.aggregate-function": "sum"},
    "pu": {"merge-engine": "partial-update"},
}


def _rows(ids: np.ndarray, step: int, partial: bool) -> pa.Table:
    k = ids.tolist()
    gap = [partial and (i + step) % 3 == 0 for i in k]
    return pa.table({"k": pa.array(k, pa.int64()), "name": [f"n{i % 9}" for i in k],
                     "qty": pa.array([None if g else i % 7 + step for i, g in zip(k, gap, strict=True)], pa.int32()),
                     "amount": [None if g or i % 5 == 0 else i * 0.5 + step for i, g in zip(k, gap, strict=True)]},
                    schema=SCHEMA)


def _sorted(rows: list[dict]) -> list[tuple]:
    return sorted((r["k"], r["name"], r["qty"], r["amount"]) for r in rows)


def test_pypaimon_and_rust_read_spliced_files(pypaimon: Pypaimon, rust: PypaimonRust, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    real = rewrite.spliced_rewrite
    counts: Counter[str] = Counter()

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        out = real(*args, **kwargs)
        counts["spliced" if out is not None else "whole"] += 1
        return out

    monkeypatch.setattr(rewrite, "spliced_rewrite", spy)
    wh = str(tmp_path / "wh")
    catalog = Catalog(wh)
    catalog.create_database("db")
    rng = np.random.default_rng(3)
    ours = {}
    for name, options in TABLES.items():
        table = catalog.create_table(f"db.{name}", SCHEMA, primary_keys=["k"],
                                     options={"bucket": "2", "deletion-vectors.enabled": "true", **options})
        for step in range(4):
            ids = np.arange(600) if step == 0 else np.sort(rng.choice(600, 150, replace=False))
            table.write_arrow(_rows(ids, step, name == "pu"))
        ours[name] = _sorted(table.to_arrow().to_pylist())
    assert counts["spliced"] >= 12 and not counts["whole"], counts
    theirs_rust = rust.query(wh, "SELECT 'agg' AS t, k, name, qty, amount FROM paimon.db.agg UNION ALL "
                                 "SELECT 'pu' AS t, k, name, qty, amount FROM paimon.db.pu")
    for name in TABLES:
        assert _sorted(pypaimon.read(wh, f"db.{name}").to_pylist()) == ours[name], name
        assert _sorted([r for r in theirs_rust if r["t"] == name]) == ours[name], name
