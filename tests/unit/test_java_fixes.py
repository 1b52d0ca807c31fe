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


BIN_SCHEMA = pa.schema([pa.field("k", pa.binary(), nullable=False), ("v", pa.binary())])


def _binary_table(tmp_path, options: dict | None = None):
    cat = Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table("db.b", BIN_SCHEMA, primary_keys=["k"], options={"bucket": "1", **(options or {})})
    t.write_arrow(pa.table({"k": [b"\x00", b"\x10", b"\xff" * 33], "v": [b"\x80", None, b"a"]}, schema=BIN_SCHEMA))
    return t


def test_binary_columns_get_null_min_max_stats(tmp_path) -> None:
    """Paimon Java writes NULL min/max for BINARY/VARBINARY (ParquetSimpleStatsExtractor), keeping
    the null count; so do we."""
    from lake_assets.spec.binary_row import deserialize_row

    t = _binary_table(tmp_path)
    (split,) = t.plan()
    (meta,) = split.files
    types = t.schema.types(["k"])
    assert deserialize_row(meta.key_stats.min_values, types) == [None]
    assert deserialize_row(meta.key_stats.max_values, types) == [None]
    vtypes = t.schema.types(t.schema.field_names)
    assert deserialize_row(meta.value_stats.min_values, vtypes)[:2] == [None, None]
    assert meta.value_stats.null_counts[:2] == (0, 1)


def test_pruning_ignores_binary_stats_of_older_files(tmp_path) -> None:
    """Files older lake_assets versions wrote carry binary bounds; one ordered as signed bytes
    (min 0x80.., max 0x7f..) would exclude b'\\x10' by unsigned order. Pruning must not use them."""
    import dataclasses

    from lake_assets.ops.plan import file_may_match
    from lake_assets.predicate import Predicate
    from lake_assets.spec.binary_row import serialize_row
    from lake_assets.spec.manifest import SimpleStats

    t = _binary_table(tmp_path)
    (split,) = t.plan()
    (meta,) = split.files
    types = t.schema.types(["k"])
    signed = SimpleStats(serialize_row([b"\x80"], types), serialize_row([b"\x7f"], types), (0,))
    old = dataclasses.replace(meta, key_stats=signed)
    assert file_may_match(t.store, old, Predicate.of([("k", "=", b"\x10")]), t.schema)
    assert sorted(t.to_arrow(filter=[("k", "=", b"\x10")]).column("k").to_pylist()) == [b"\x10"]


FR_OPTIONS = {"bucket": "1", "merge-engine": "first-row"}


def test_first_row_refuses_input_and_full_compaction_producers(tmp_path) -> None:
    """Java's SchemaValidation: only 'none' and 'lookup' changelog-producer on first-row, checked at
    create and ALTER; a table carrying another one (written elsewhere) is not written or compacted."""
    import json

    import pytest

    from lake_assets.errors import UnsupportedFeatureError

    cat = Catalog(str(tmp_path))
    cat.create_database("db")
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("a", pa.string())])
    for producer in ("input", "full-compaction"):
        with pytest.raises(UnsupportedFeatureError, match="first-row"):
            cat.create_table("db.x", schema, primary_keys=["k"],
                             options={**FR_OPTIONS, "changelog-producer": producer})
    t = cat.create_table("db.t", schema, primary_keys=["k"], options=FR_OPTIONS)
    t.write_arrow(pa.table({"k": [1], "a": ["x"]}, schema=schema))
    with pytest.raises(UnsupportedFeatureError, match="changelog-producer='input'"):
        t.update_schema().set_option("changelog-producer", "input").commit()
    assert "changelog-producer" not in cat.get_table("db.t").schema.options
    # A schema file that carries the pair anyway: reads work, writes and compactions refuse.
    path = tmp_path / "db.db" / "t" / "schema" / "schema-0"
    doc = json.loads(path.read_text())
    doc["options"]["changelog-producer"] = "full-compaction"
    path.write_text(json.dumps(doc))
    t = cat.get_table("db.t")
    assert t.to_arrow().column("k").to_pylist() == [1]
    with pytest.raises(UnsupportedFeatureError, match=r"Cannot write to db\.t"):
        t.write_arrow(pa.table({"k": [2], "a": ["y"]}, schema=schema))
    with pytest.raises(UnsupportedFeatureError, match=r"Cannot compact db\.t") as raised:
        t.compact(full=True)
    assert str(raised.value).endswith("What you can do: set changelog-producer to none or lookup (table.update_"
                                      "schema().set_option(...).commit(), or ALTER TABLE ... SET in Flink, SET "
                                      "TBLPROPERTIES in Spark); reads are not refused")
    # following it: the table is written again
    t.update_schema().set_option("changelog-producer", "lookup").commit()
    t = cat.get_table("db.t")
    t.write_arrow(pa.table({"k": [2], "a": ["y"]}, schema=schema))
    assert sorted(t.to_arrow().column("k").to_pylist()) == [1, 2]


def test_compaction_changelog_files_carry_the_output_level(tmp_path) -> None:
    """Java writes a compaction's changelog files with the unit's output level (the top level for a
    full compaction); its 0.9 batch reads of first-row tables skip level-0 files, changelog too."""
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("a", pa.string())])
    cat = Catalog(str(tmp_path))
    cat.create_database("db")
    for engine in ("deduplicate", "first-row"):
        t = cat.create_table(f"db.{engine.replace('-', '_')}", schema, primary_keys=["k"],
                             options={"bucket": "1", "merge-engine": engine, "changelog-producer": "lookup",
                                      "write-only": "true"})
        t.write_arrow(pa.table({"k": [1, 2], "a": ["x", "y"]}, schema=schema))
        t.compact(full=True)
        snap = t.latest_snapshot()
        entries = t.store.file_store_scan().changelog_entries(snap)
        assert entries, engine
        top = t.schema.core_options.num_levels - 1
        assert {e.file.level for e in entries} == {top}, engine
        assert sorted(t.read_changes(0, snap.id).column("k").to_pylist()) == [1, 2]


def test_lookup_changelog_of_a_late_losing_record_is_an_unchanged_pair(tmp_path) -> None:
    """Java's lookup wrapper emits -U(old)/+U(old) for a key whose level-0 record loses to the stored
    one (older sequence.field); changelog-producer.row-deduplicate drops the pair."""
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()), ("seq", pa.int64())])
    cat = Catalog(str(tmp_path))
    cat.create_database("db")
    for dedupe in ("false", "true"):
        t = cat.create_table(f"db.t{dedupe}", schema, primary_keys=["k"],
                             options={"bucket": "1", "changelog-producer": "lookup", "sequence.field": "seq",
                                      "changelog-producer.row-deduplicate": dedupe})
        first = t.write_arrow(pa.table({"k": [1, 2], "v": ["a", "b"], "seq": [5, 1]}, schema=schema))
        t.write_arrow(pa.table({"k": [1, 2], "v": ["late", "b2"], "seq": [4, 2]}, schema=schema))
        changes = t.read_changes(first, source="changelog")
        got = sorted((r["k"], r["_row_kind"], r["v"]) for r in changes.to_pylist())
        pair = [(1, "+U", "a"), (1, "-U", "a")] if dedupe == "false" else []
        assert got == sorted([*pair, (2, "+U", "b2"), (2, "-U", "b")]), dedupe
        assert sorted(t.to_arrow().column("v").to_pylist()) == ["a", "b2"]
