"""Manifest partition null counts as pypaimon 2.1 and pypaimon-rust 0.4 write them: one per entry
with a null partition value (pypaimon's ``ManifestFileManager`` counts the entries' partitions, as
Java's ``ManifestFile``; pypaimon-rust the same), so our manifest pruning by them keeps every row: the rows read with a
filter equal the unfiltered read filtered, and the manifests ruled out are skipped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lake_assets import Catalog
from lake_assets.spec.manifest import ManifestFileMeta
from lake_assets.store.manifest_io import ManifestIO

from .paimon import Pypaimon, PypaimonRust, missing

SCHEMA = pa.schema([("p", pa.int32()), ("id", pa.int64())])
COMMITS: list[list[Any]] = [[None] * 4, [1] * 3, [2] * 3, [None, 3, 3]]
FILTERS: list[tuple[Any, pc.Expression, int]] = [
    ([("p", "is null")], pc.field("p").is_null(), 2),
    ([("p", "is not null")], pc.field("p").is_valid(), 3),
    ([("p", "=", 1)], pc.field("p") == 1, 1),
    ([("p", "in", [3, None])], pc.field("p") == 3, 1),
]


def _commit(n: int) -> pa.Table:
    return pa.table({"p": COMMITS[n], "id": [10 * n + i for i in range(len(COMMITS[n]))]}, schema=SCHEMA)


def _check(wh: str, monkeypatch: pytest.MonkeyPatch) -> None:
    t = Catalog(wh).get_table("db.t")
    scan = t.store.file_store_scan()
    metas = scan.data_manifests(t.latest_snapshot())
    assert len(metas) == len(COMMITS)
    for meta, entries in zip(metas, scan.manifest_io.read_manifests(metas), strict=True):
        nulls = sum(1 for e in entries if scan.partition_values(e.partition)[0] is None)
        assert meta.partition_stats.null_counts == (nulls,)
    everything = t.to_arrow()
    assert everything.num_rows == sum(len(c) for c in COMMITS)
    for flt, keep, manifests in FILTERS:
        read, rows = _read_counting(t, flt, monkeypatch)
        assert sorted(rows.column("id").to_pylist()) == sorted(everything.filter(keep).column("id").to_pylist())
        assert read == manifests, flt


def _read_counting(t: Any, flt: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[int, pa.Table]:
    """How many data manifests a read with ``flt`` opens, and its rows."""
    read: list[ManifestFileMeta] = []
    real = ManifestIO.read_manifests

    def counting(self: ManifestIO, metas: Any) -> Any:
        metas = list(metas)
        read.extend(metas)
        return real(self, metas)

    monkeypatch.setattr(ManifestIO, "read_manifests", counting)
    rows = t.to_arrow(filter=flt)
    monkeypatch.undo()
    return len(read), rows


def test_pypaimon_manifests(pypaimon: Pypaimon, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wh = str(tmp_path / "wh")
    pypaimon.create_table(wh, "db.t", SCHEMA, partition_keys=["p"], options={"bucket": "-1"})
    for n in range(len(COMMITS)):
        pypaimon.write(wh, "db.t", _commit(n))
    _check(wh, monkeypatch)


def test_pypaimon_rust_manifests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rust = PypaimonRust()
    if not rust.available():
        missing(f"pypaimon-rust not installed in {rust.python}; run `make venv-paimon`")
    wh = str(tmp_path / "wh")
    rust.sql(wh, "CREATE SCHEMA paimon.db",
             "CREATE TABLE paimon.db.t (p INT, id BIGINT) PARTITIONED BY (p)")
    for n in range(len(COMMITS)):
        values = ",".join(f"({'NULL' if p is None else p}, {10 * n + i})" for i, p in enumerate(COMMITS[n]))
        rust.sql(wh, f"INSERT INTO paimon.db.t VALUES {values}")
    _check(wh, monkeypatch)
