"""Options of Paimon's Flink and Spark connectors (and CoreOptions keys only Java's jobs read):
accepted at create and ALTER with any value, documented, and without effect on which operations a
table allows; unknown keys are still refused; every row names a real Paimon option; every
CoreOptions key the registry does not declare is in the audit of docs/format.md §13.2."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import OptionError, UnsupportedFeatureError
from lake_assets.option_docs import render
from lake_assets.option_rules import RULES
from lake_assets.option_rules_engines import ENGINE_RULES
from lake_assets.option_rules_refused import REFUSED_ENGINE_RULES
from lake_assets.options import rule_for
from lake_assets.refusal import Op
from lake_assets.spec.data_types import BigIntType, VarCharType
from lake_assets.spec.schema import DataField, TableSchema
from lake_assets.table_support import schema_refusals

from .paimon_option_names import CORE_OPTIONS, FLINK_CONNECTOR_OPTIONS, ROCKSDB_OPTIONS, SPARK_CONNECTOR_OPTIONS

FORMAT_MD = Path(__file__).resolve().parents[2] / "docs" / "format.md"
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
# values of every type a connector option takes, and text no type takes: Paimon stores any of them
VALUES = ("4", "true", "10 s", "64 mb", "full", "not a number")


def _schema(options: dict[str, str]) -> TableSchema:
    fields = (DataField(0, "id", BigIntType(nullable=False)), DataField(1, "v", VarCharType(2147483647)))
    return TableSchema(0, fields, 1, (), ("id",), {"bucket": "2", **options})


def _blocked(options: dict[str, str]) -> frozenset[Op]:
    return frozenset(op for op in Op if any(r.blocks(op) for r in schema_refusals(_schema(options))))


def test_engine_rows_name_real_paimon_options() -> None:
    real = (FLINK_CONNECTOR_OPTIONS.keys() | SPARK_CONNECTOR_OPTIONS.keys() | CORE_OPTIONS.keys()
            | ROCKSDB_OPTIONS.keys())
    declared = ENGINE_RULES.keys() | REFUSED_ENGINE_RULES.keys()
    assert sorted(declared - real) == []
    # and they are rows of the one registry, which lists each key once
    assert all(RULES[k] is rule for k, rule in {**ENGINE_RULES, **REFUSED_ENGINE_RULES}.items())


def test_every_connector_option_is_declared() -> None:
    """A table Flink or Spark (0.9 to HEAD) wrote never carries a connector key we do not know."""
    connector = FLINK_CONNECTOR_OPTIONS.keys() | SPARK_CONNECTOR_OPTIONS.keys()
    assert sorted(k for k in connector if rule_for(k) is None) == []
    # and Java's cross-partition index tuning (RocksDBOptions, 0.9 to 1.4): every key, any value
    assert sorted(k for k in ROCKSDB_OPTIONS if k not in ENGINE_RULES) == []


@pytest.mark.parametrize("value", VALUES)
def test_engine_options_leave_every_operation_allowed(value: str) -> None:
    assert _blocked(dict.fromkeys(ENGINE_RULES, value)) == frozenset()


def test_refused_engine_options_block_only_what_they_affect() -> None:
    for key in ("scan.partitions", "lookup.dynamic-partition"):
        assert _blocked({key: "dt=2024-01-01"}) == {Op.READ, Op.STREAM}
    # Flink's streaming mark-done trigger: its _SUCCESS files are outside what orphan removal lists
    # (partition.end-input-to-done and the actions: tests/unit/test_mark_done_options.py)
    assert _blocked({"partition.idle-time-to-done": "1 h"}) == frozenset()
    (refusal,) = schema_refusals(_schema({"scan.partitions": "max_pt()"}))
    assert "scan.partitions = 'max_pt()'" in refusal.property and "Flink" in refusal.why


def test_engine_options_are_accepted_at_create_and_alter(tmp_path: Path) -> None:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    options = {key: VALUES[i % len(VALUES)] for i, key in enumerate(ENGINE_RULES)}
    t = cat.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1", **options})
    assert {k: t.schema.options[k] for k in options} == options
    t.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    t.update_schema().set_option("sink.parallelism", "8").set_option("write.merge-schema", "false").commit()
    t = cat.get_table("db.t")
    assert t.schema.options["sink.parallelism"] == "8"
    t.compact(full=True)
    assert sorted(t.refresh().to_arrow().column("id").to_pylist()) == [1, 2]


def test_refused_engine_options_and_unknown_keys_are_refused_at_create(tmp_path: Path) -> None:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    with pytest.raises(UnsupportedFeatureError, match=r"scan\.partitions='dt=1' is not supported: Flink's"):
        cat.create_table("db.a", SCHEMA, primary_keys=["id"], options={"bucket": "1", "scan.partitions": "dt=1"})
    with pytest.raises(OptionError, match=r"Unknown table option 'sink\.parallelizm'.*'sink\.parallelism'"):
        cat.create_table("db.b", SCHEMA, primary_keys=["id"], options={"bucket": "1", "sink.parallelizm": "4"})
    assert cat.list_tables("db") == []


def test_unknown_keys_next_to_engine_options_are_still_refused() -> None:
    blocked = _blocked({"sink.parallelism": "4", "paimon.future-feature": "on"})
    assert blocked == {Op.WRITE, Op.COMPACT, Op.EXPIRE, Op.ORPHANS, Op.ROLLBACK, Op.READ, Op.STREAM}
    (refusal,) = schema_refusals(_schema({"sink.parallelism": "4", "paimon.future-feature": "on"}))
    assert "paimon.future-feature" in refusal.property
    # keys of the same families that the connectors do not declare stay unknown
    assert _blocked({"sink.watermark-time-zone": "UTC+8"}) == {Op.WRITE}
    assert Op.COMPACT in _blocked({"lookup.remote-file.enabled": "true"})


def test_each_engine_option_is_documented() -> None:
    docs = render()
    for key, rule in ENGINE_RULES.items():
        row = next(line for line in docs.splitlines() if line.startswith(f"| `{key}` |"))
        assert "runtime setting with no effect on what lake_assets reads, writes or maintains" in row, key
        assert "any value is accepted at create and ALTER, as Paimon does" in row, key
        assert rule.description in row
    for key, rule in REFUSED_ENGINE_RULES.items():
        row = next(line for line in docs.splitlines() if line.startswith(f"| `{key}` |"))
        if rule.supported:  # branch: the main branch only
            assert "tables carrying another value: refused for read" in row, key
        else:
            assert "refused whenever set" in row and "tables carrying it: refused for" in row, key


def _format_md_section(title: str) -> str:
    text = FORMAT_MD.read_text(encoding="utf-8")
    start = text.index(title)
    end = text.find("\n## ", start)
    return text[start:end]


def test_format_md_lists_every_connector_option_with_its_verdict() -> None:
    section = _format_md_section("### 13.1 Flink and Spark connector options")
    listed = set(re.findall(r"^\| `([^`]+)` \|", section, re.MULTILINE))
    assert sorted((FLINK_CONNECTOR_OPTIONS.keys() | SPARK_CONNECTOR_OPTIONS.keys()) - listed) == []
    assert sorted(ENGINE_RULES.keys() - listed) == []


def test_format_md_audits_every_undeclared_core_option() -> None:
    """Every CoreOptions key of Paimon 0.9 to HEAD is declared or in the audit table, which says
    what a table carrying it is refused for; file-index.* keys have their own module."""
    audit = _format_md_section("### 13.2 Paimon's CoreOptions keys not in the registry")
    audited = set(re.findall(r"`([^`]+)` \(", audit))
    undeclared = {k for k in CORE_OPTIONS if rule_for(k) is None and not k.startswith("file-index.")}
    assert sorted(undeclared - audited) == []
    for key in ("scan.bucket", "data-file.thin-mode", "clustering.incremental", "commit.callbacks"):
        assert key in audited
