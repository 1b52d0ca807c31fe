"""Postpone-bucket writes (ops/postpone_write.py) checked both ways against pypaimon 2.1 and
pypaimon-rust (Paimon Java 0.9 predates the mode): they read our postponed and our compacted
tables as we do, their postpone files and ours compact together in commit order, and our files'
manifest entries carry what pypaimon's carry."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pytest

import tests.interop.test_refuse_unsupported as engines
from lake_assets import Catalog
from lake_assets.spec.snapshot import CommitKind
from lake_assets.table import Table
from tests.interop.paimon import Pypaimon, PypaimonRust, canonical

engine_tables = engines.engine_tables
table_copy = engines.table_copy

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string())])
FLAT = engines.SCHEMA  # (id, v): the engine-written tables' schema


def batch(ids: range | list[int], dt: str, tag: str) -> pa.Table:
    return pa.table({"id": list(ids), "dt": [dt] * len(ids), "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def live(t: Table) -> list:
    return list(t.store.file_store_scan().live_entries(t.store.snapshot_manager.latest()))


def assert_all_read_alike(warehouse: str | Path, name: str, pypaimon: Pypaimon, rust: PypaimonRust,
                          keys: list[str]) -> list[dict]:
    t = Catalog(str(warehouse)).get_table(f"db.{name}")
    ours = canonical(t.to_arrow(), keys)
    assert canonical(pypaimon.read(warehouse, f"db.{name}").select(t.arrow_schema.names), keys) == ours
    theirs = rust.read_rows(warehouse, f"db.{name}")
    assert sorted(theirs, key=lambda r: tuple(r[k] for k in keys)) == ours
    return ours


def test_paimon_readers_read_our_postponed_then_compacted_table(tmp_warehouse, pypaimon, rust):
    """Before compaction Paimon's readers see only the real buckets (none yet, then the first
    compaction's), after it every row: the same as our reads at each step."""
    cat = Catalog(tmp_warehouse)
    cat.create_database("db")
    t = cat.create_table("db.p", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                         options={"bucket": "-2", "postpone.default-bucket-num": "2"})
    t.write_arrow(pa.concat_tables([batch(range(10), "d1", "a"), batch(range(5), "d2", "a")]))
    assert assert_all_read_alike(tmp_warehouse, "p", pypaimon, rust, ["dt", "id"]) == []
    t.compact()
    t.write_arrow(pa.concat_tables([batch(range(5, 15), "d1", "b"), batch(range(3, 8), "d2", "b")]))
    # the second round waits in bucket-postpone: everyone still reads the first
    first = assert_all_read_alike(tmp_warehouse, "p", pypaimon, rust, ["dt", "id"])
    assert len(first) == 15 and {r["v"][0] for r in first} == {"a"}
    t.compact()
    done = assert_all_read_alike(tmp_warehouse, "p", pypaimon, rust, ["dt", "id"])
    expected = canonical(pa.concat_tables([batch(range(5), "d1", "a"), batch(range(5, 15), "d1", "b"),
                                           batch(range(3), "d2", "a"), batch(range(3, 8), "d2", "b")]),
                         ["dt", "id"])
    assert done == expected


def test_pypaimon_and_our_postpone_files_compact_in_commit_order(tmp_warehouse, pypaimon, rust):
    """pypaimon, then we, then pypaimon again write bucket-postpone; one compaction replays the
    three writers in commit order, so the newest commit's version of a key wins."""
    pypaimon.create_table(tmp_warehouse, "db.m", FLAT, primary_keys=["id"], options={"bucket": "-2"})
    pypaimon.write(tmp_warehouse, "db.m", engines.batch(range(20), "a"))
    t = Catalog(tmp_warehouse).get_table("db.m")
    t.write_arrow(engines.batch(range(10, 30), "b"))
    pypaimon.write(tmp_warehouse, "db.m", engines.batch(range(25, 35), "c"))
    t = Catalog(tmp_warehouse).get_table("db.m")
    assert len({e.file.file_name.split("-w-")[0] for e in live(t)}) == 3  # three writers
    t.compact()
    ours = assert_all_read_alike(tmp_warehouse, "m", pypaimon, rust, ["id"])
    expected = [{"id": i, "v": f"{'a' if i < 10 else 'b' if i < 25 else 'c'}{i}"} for i in range(35)]
    assert ours == expected


def test_rust_postpone_files_and_ours_compact_together(table_copy, pypaimon, rust):
    """pypaimon-rust's two postpone commits plus one of ours, compacted by us; pypaimon-rust then
    writes more postpone rows on top of our real buckets, and we compact again."""
    warehouse = table_copy("rust_postpone")
    t = Catalog(str(warehouse)).get_table("db.rust_postpone")
    t.write_arrow(engines.batch(range(40, 50), "d"))
    t.compact()
    values = ", ".join(f"({i}, 'e{i}')" for i in range(0, 5))
    rust.sql(warehouse, f"INSERT INTO paimon.db.rust_postpone VALUES {values}")
    Catalog(str(warehouse)).get_table("db.rust_postpone").compact()
    ours = assert_all_read_alike(warehouse, "rust_postpone", pypaimon, rust, ["id"])
    tag = {range(0, 5): "e", range(5, 15): "a", range(15, 40): "b", range(40, 50): "d"}
    assert ours == [{"id": i, "v": f"{t}{i}"} for ids, t in tag.items() for i in ids]


def test_our_manifest_entries_carry_what_pypaimons_carry(tmp_warehouse, pypaimon):
    """The same rows written by pypaimon and by us into bucket-postpone: the entries agree on
    everything but names, sizes, times and the key stats' encoding details."""
    pypaimon.create_table(tmp_warehouse, "db.theirs", FLAT, primary_keys=["id"], options={"bucket": "-2"})
    pypaimon.write(tmp_warehouse, "db.theirs", engines.batch([3, 1, 2], "a"))
    cat = Catalog(tmp_warehouse)
    cat.create_table("db.ours", FLAT, primary_keys=["id"], options={"bucket": "-2"})
    cat.get_table("db.ours").write_arrow(engines.batch([3, 1, 2], "a"))
    entries = {}
    for name in ("theirs", "ours"):
        t = cat.get_table(f"db.{name}")
        [e] = live(t)
        snap = t.store.snapshot_manager.latest()
        assert snap.commit_kind == CommitKind.APPEND
        pattern = rf"^data--u-{re.escape(snap.commit_user)}-s-\d+-w-[0-9a-f-]{{36}}-0\.avro$"
        assert re.match(pattern, e.file.file_name), e.file.file_name
        f = e.file
        entries[name] = (e.bucket, e.total_buckets, f.level, f.row_count, f.min_sequence_number,
                         f.max_sequence_number, f.delete_row_count, f.file_source, f.value_stats_cols,
                         f.value_stats, f.min_key, f.max_key, f.key_stats, f.schema_id, f.extra_files)
    assert entries["ours"] == entries["theirs"]
