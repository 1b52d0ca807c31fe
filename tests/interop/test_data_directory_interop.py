"""``data-file.path-directory`` (Paimon 1.0+: partition and bucket directories under
``<table>/<directory>/``) both ways with pypaimon 2.1 and pypaimon-rust 0.4, which both implement it
(Java 0.9 predates it). Each engine writes a partitioned primary-key table with the option; we read
theirs, write into it, compact, expire and remove orphans (never touching a live file), and they
read what we left; and the other way round.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog

from .paimon import Pypaimon, PypaimonRust, canonical

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("k", pa.int32(), nullable=False),
                    ("v", pa.string())])
OPTIONS = {"bucket": "2", "data-file.path-directory": "data/files"}


def _rows(lo: int, hi: int, tag: str) -> pa.Table:
    return pa.table({"dt": [f"d{i % 2}" for i in range(lo, hi)], "k": list(range(lo, hi)),
                     "v": [f"{tag}{i}" for i in range(lo, hi)]}, schema=SCHEMA)


def _data_files(table_dir: Path) -> list[str]:
    """Every data file under the table, relative to it."""
    return sorted(str(p.relative_to(table_dir)) for p in table_dir.rglob("*.parquet"))


@pytest.mark.parametrize("peer", ["pypaimon", "rust"])
def test_both_ways(pypaimon: Pypaimon, rust: PypaimonRust, tmp_path: Path, peer: str) -> None:
    wh = str(tmp_path / "wh")
    table_dir = Path(wh) / "db.db" / "t"
    if peer == "pypaimon":
        pypaimon.create_table(wh, "db.t", SCHEMA, primary_keys=["dt", "k"], partition_keys=["dt"], options=OPTIONS)
        pypaimon.write(wh, "db.t", _rows(0, 10, "a"))
    else:
        rust.sql(wh, "CREATE SCHEMA paimon.db",
                 "CREATE TABLE paimon.db.t (dt STRING NOT NULL, k INT NOT NULL, v STRING, PRIMARY KEY (dt, k)) "
                 "PARTITIONED BY (dt) WITH ("
                 + ", ".join(f"'{k}' = '{v}'" for k, v in OPTIONS.items()) + ")")
        rust.write_batch(wh, "db.t", _rows(0, 10, "a"))
    theirs = _data_files(table_dir)
    assert theirs and all(f.startswith("data/files/dt=d") and "/bucket-" in f for f in theirs)
    t = Catalog(wh).get_table("db.t")
    assert canonical(t.to_arrow(), ["k"]) == canonical(_rows(0, 10, "a"), ["k"])
    t.write_arrow(_rows(5, 15, "b"))
    t.compact(full=True)
    expected = canonical(pa.concat_tables([_rows(0, 5, "a"), _rows(5, 15, "b")]), ["k"])
    ours = [f for f in _data_files(table_dir) if f not in theirs]
    assert ours and all(f.startswith("data/files/dt=d") for f in ours)
    # an orphan where Paimon's clean looks, and a live file of theirs; then expiry of every old snapshot
    orphan = table_dir / "data" / "files" / "dt=d0" / "bucket-0" / "data-orphan-0.parquet"
    orphan.write_bytes(b"x")
    os.utime(orphan, (0, 0))
    result = t.remove_orphan_files(older_than=dt.timedelta(0), dry_run=False, allow_recent=True)
    assert result.paths == [str(orphan)]
    t.expire_snapshots(retain_max=1, retain_min=1, older_than=dt.timedelta(0))
    for reader in (t.to_arrow(), Catalog(wh).get_table("db.t").to_arrow()):
        assert canonical(reader, ["k"]) == expected
    assert canonical(pypaimon.read(wh, "db.t"), ["k"]) == expected
    assert sorted(canonical(pa.Table.from_pylist(rust.read_rows(wh, "db.t"), schema=SCHEMA), ["k"]),
                  key=lambda r: r["k"]) == expected
