"""Postpone-bucket tables (``bucket = -2``) written by pypaimon 2.1 and pypaimon-rust: lake_assets'
compaction moves their postponed rows into real buckets, and the Paimon readers then return what
we return (ops/postpone.py).

The tables come from the engine-written set of ``test_refuse_unsupported`` (each test works on
its own copy).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import tests.interop.test_refuse_unsupported as engines
from lake_assets import UnsupportedFeatureError
from tests.interop.paimon import Pypaimon, PypaimonRust, canonical
from tests.interop.test_refuse_unsupported import open_table

# the engine-written tables' fixtures, shared with test_refuse_unsupported
engine_tables = engines.engine_tables
table_copy = engines.table_copy

pytestmark = pytest.mark.interop


def rows(prefix_of: dict[range, str]) -> list[dict]:
    out = []
    for ids, tag in prefix_of.items():
        out += [{"id": i, "v": f"{tag}{i}"} for i in ids]
    return sorted(out, key=lambda r: r["id"])


def compact_and_check(warehouse: Path, name: str, pypaimon: Pypaimon, rust: PypaimonRust, expected: list[dict],
                      buckets: int) -> None:
    t, _ = open_table(warehouse, name)
    result = t.compact()
    assert result.snapshot_id is not None
    t, _ = open_table(warehouse, name)
    ours = canonical(t.to_arrow(), ["id"])
    assert ours == expected
    assert canonical(pypaimon.read(warehouse, f"db.{name}").select(["id", "v"]), ["id"]) == expected
    assert sorted(rust.read_rows(warehouse, f"db.{name}"), key=lambda r: r["id"]) == expected
    # nothing waits in bucket-postpone any more; every live file is in one of the real buckets
    entries = t.store.file_store_scan().live_entries(t.store.snapshot_manager.latest())
    assert entries and {e.bucket for e in entries} <= set(range(buckets))
    assert {e.total_buckets for e in entries} == {buckets}
    # a second compaction has nothing to move
    assert t.compact().snapshot_id is None


def test_compact_pypaimon_postpone_table(table_copy, pypaimon, rust):
    """Two pypaimon commits into bucket-postpone (the second updates half the keys): compaction
    replays them in order into postpone.default-bucket-num (default 1) buckets."""
    warehouse = table_copy("postpone_parquet")
    expected = rows({range(15): "a", range(15, 45): "b"})
    compact_and_check(warehouse, "postpone_parquet", pypaimon, rust, expected, buckets=1)


def test_compact_rust_postpone_table(table_copy, pypaimon, rust):
    warehouse = table_copy("rust_postpone")
    expected = rows({range(15): "a", range(15, 45): "b"})
    compact_and_check(warehouse, "rust_postpone", pypaimon, rust, expected, buckets=1)


def test_compact_merges_into_the_partitions_real_buckets(table_copy, pypaimon, rust):
    """Rows already in 3 real buckets (pypaimon-rust's fixed-bucket writer) plus newer rows in
    bucket-postpone: compaction keeps the 3 buckets the manifest records and the newer rows win."""
    warehouse = table_copy("rust_postpone_fixed")
    expected = rows({range(15): "a", range(15, 40): "b", range(40, 50): "c"})
    compact_and_check(warehouse, "rust_postpone_fixed", pypaimon, rust, expected, buckets=3)


def test_compact_pypaimon_avro_postpone_table(table_copy, pypaimon, rust):
    """pypaimon writes postpone files as Avro by default: compaction reads them (Avro data files)
    and moves their rows into real buckets like the Parquet ones."""
    warehouse = table_copy("postpone_avro")
    expected = rows({range(15): "a", range(15, 45): "b"})
    compact_and_check(warehouse, "postpone_avro", pypaimon, rust, expected, buckets=1)


def test_health_counts_postponed_files_as_backlog(table_copy):
    """The small-file sensor reads `Table.health`: files waiting in bucket-postpone show there, as
    bucket -2, until the postpone compaction moves them."""
    warehouse = table_copy("postpone_parquet")
    t, _ = open_table(warehouse, "postpone_parquet")
    waiting = [r for r in t.health().to_pylist() if r["bucket"] == -2]
    assert len(waiting) == 1 and waiting[0]["file_count"] == 2 and waiting[0]["small_file_count"] == 2
    t.compact()
    assert all(r["bucket"] >= 0 for r in open_table(warehouse, "postpone_parquet")[0].health().to_pylist())


def test_compact_some_partitions_with_their_own_bucket_counts(tmp_path, pypaimon, rust):
    """A partitioned table: compaction of one partition moves only its postponed rows (the Dagster
    sensor asks per partition); each new partition gets postpone.default-bucket-num buckets."""
    schema = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                        ("v", pa.string())])
    wh = tmp_path / "warehouse"
    pypaimon.create_table(wh, "db.parts", schema, primary_keys=["dt", "id"], partition_keys=["dt"],
                          options={"bucket": "-2", "file.format": "parquet", "postpone.default-bucket-num": "2"})

    def data(dt: str, ids: range, tag: str) -> pa.Table:
        return pa.table({"dt": [dt] * len(ids), "id": list(ids), "v": [f"{tag}{i}" for i in ids]}, schema=schema)

    pypaimon.write(wh, "db.parts", pa.concat_tables([data("a", range(10), "x"), data("b", range(10), "x")]))
    pypaimon.write(wh, "db.parts", data("a", range(5, 15), "y"))
    t, _ = open_table(wh, "parts")
    assert t.compact(partitions=[{"dt": "a"}]).snapshot_id is not None
    expected_a = [{"dt": "a", "id": i, "v": f"{'x' if i < 5 else 'y'}{i}"} for i in range(15)]
    t, _ = open_table(wh, "parts")
    assert canonical(t.to_arrow(), ["dt", "id"]) == expected_a
    assert canonical(pypaimon.read(wh, "db.parts").select(["dt", "id", "v"]), ["dt", "id"]) == expected_a
    waiting = {(r["partition"], r["bucket"]) for r in t.health().to_pylist()}
    assert waiting == {("dt=a", 0), ("dt=a", 1), ("dt=b", -2)}
    t.compact()
    expected = expected_a + [{"dt": "b", "id": i, "v": f"x{i}"} for i in range(10)]
    assert canonical(pypaimon.read(wh, "db.parts").select(["dt", "id", "v"]), ["dt", "id"]) == expected


def test_plan_compaction_refuses_postpone_tables(table_copy):
    """The unit planner treats buckets as LSM trees; bucket-postpone is none, so planning directly
    (not through compact) is refused."""
    from lake_assets.ops.compact import plan_compaction

    t, _ = open_table(table_copy("postpone_parquet"), "postpone_parquet")
    with pytest.raises(UnsupportedFeatureError, match="postpone-bucket table"):
        plan_compaction(t.store)
