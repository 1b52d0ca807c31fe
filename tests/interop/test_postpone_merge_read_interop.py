"""``postpone.merge-on-read`` over postpone files other engines wrote: neither pypaimon 2.1 nor
pypaimon-rust 0.4 reads with the option (both read real buckets only), so they are oracles as
writers: our merge-on-read of their postpone files (with ours between) returns what our
compaction of them, read plainly, returns, and what the commit order says."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import tests.interop.test_refuse_unsupported as engines
from lake_assets import Catalog
from lake_assets.table import Table
from tests.interop.paimon import Pypaimon, PypaimonRust, canonical

engine_tables = engines.engine_tables
table_copy = engines.table_copy

pytestmark = pytest.mark.interop


def _merged_then_compacted(warehouse: str | Path, name: str) -> list[dict]:
    """Our merge-on-read of ``db.<name>``, checked equal to a compacted copy's plain read."""
    cat = Catalog(str(warehouse))
    t = cat.get_table(f"db.{name}")
    t.update_schema().set_option("postpone.merge-on-read", "true").commit()
    t = cat.get_table(f"db.{name}")
    merged = canonical(t.to_arrow(), ["id"])
    shutil.copytree(Path(warehouse) / "db.db" / name, Path(warehouse) / "db.db" / f"{name}_copy")
    copy: Table = cat.get_table(f"db.{name}_copy")
    copy.compact()
    assert not [e for e in copy.store.file_store_scan().live_entries(copy.store.snapshot_manager.latest())
                if e.bucket == -2]
    assert canonical(copy.to_arrow(), ["id"]) == merged
    return merged


def test_merge_on_read_of_pypaimon_and_our_postpone_files(tmp_warehouse, pypaimon: Pypaimon) -> None:
    """pypaimon, then we, then pypaimon write bucket-postpone: the newest commit's version wins."""
    pypaimon.create_table(tmp_warehouse, "db.m", engines.SCHEMA, primary_keys=["id"], options={"bucket": "-2"})
    pypaimon.write(tmp_warehouse, "db.m", engines.batch(range(20), "a"))
    Catalog(tmp_warehouse).get_table("db.m").write_arrow(engines.batch(range(10, 30), "b"))
    pypaimon.write(tmp_warehouse, "db.m", engines.batch(range(25, 35), "c"))
    merged = _merged_then_compacted(tmp_warehouse, "m")
    assert merged == [{"id": i, "v": f"{'a' if i < 10 else 'b' if i < 25 else 'c'}{i}"} for i in range(35)]


def test_merge_on_read_of_rust_postpone_files_over_real_buckets(table_copy, rust: PypaimonRust) -> None:
    """pypaimon-rust's postpone commits compacted by us into real buckets, then more of its
    postpone rows waiting on top of them, and ours."""
    warehouse = table_copy("rust_postpone")
    Catalog(str(warehouse)).get_table("db.rust_postpone").compact()
    values = ", ".join(f"({i}, 'e{i}')" for i in range(0, 5))
    rust.sql(warehouse, f"INSERT INTO paimon.db.rust_postpone VALUES {values}")
    Catalog(str(warehouse)).get_table("db.rust_postpone").write_arrow(engines.batch(range(40, 50), "d"))
    merged = _merged_then_compacted(warehouse, "rust_postpone")
    tag = {range(0, 5): "e", range(5, 15): "a", range(15, 40): "b", range(40, 50): "d"}
    assert merged == [{"id": i, "v": f"{t}{i}"} for ids, t in tag.items() for i in ids]
