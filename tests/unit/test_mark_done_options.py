"""The mark-done options (``partition.end-input-to-done``, ``partition.mark-done-action`` and its
custom / http keys) and enum options parsed as Java parses them (case-insensitive, untrimmed)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import OptionError, UnsupportedFeatureError
from lake_assets.option_rules import RULES
from lake_assets.option_rules_mark_done import mark_done_actions
from lake_assets.option_types import parse_value
from lake_assets.refusal import Op
from lake_assets.spec.data_types import BigIntType, VarCharType
from lake_assets.spec.schema import DataField, TableSchema
from lake_assets.table_support import schema_refusals

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("dt", pa.string())])
WRITE_ONLY = frozenset({Op.WRITE})


def _blocked(options: dict[str, str]) -> frozenset[Op]:
    fields = (DataField(0, "id", BigIntType(nullable=False)), DataField(1, "dt", VarCharType(2147483647)))
    schema = TableSchema(0, fields, 1, ("dt",), ("id", "dt"), {"bucket": "2", **options})
    return frozenset(op for op in Op if any(r.blocks(op) for r in schema_refusals(schema)))


def _catalog(tmp_path: Path) -> Catalog:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat


def test_action_lists_parse_as_paimon_head() -> None:
    """``partitionMarkDoneActions``: split on ',', '-' as '_', upper-cased enum names, no trim."""
    assert mark_done_actions("success-file") == {"SUCCESS_FILE"}
    assert mark_done_actions("SUCCESS-FILE,done-partition,") == {"SUCCESS_FILE", "DONE_PARTITION"}
    for bad in (" success-file", "success-file, done-partition", "", ",success-file", "success"):
        assert mark_done_actions(bad) is None, bad


def test_success_file_is_written_other_actions_refuse_writes_only() -> None:
    assert _blocked({"partition.mark-done-action": "success-file", "partition.end-input-to-done": "true"}) == set()
    for action in ("done-partition", "success-file,mark-event", "http-report", "custom"):
        assert _blocked({"partition.mark-done-action": action}) == WRITE_ONLY, action
    # a value Java cannot parse refuses writes too, never reads or maintenance
    assert _blocked({"partition.mark-done-action": " success-file"}) == WRITE_ONLY
    (refusal,) = schema_refusals(TableSchema(0, (DataField(0, "id", BigIntType()),), 1, (), (), {
        "bucket": "-1", "partition.mark-done-action": "done-partition"}))
    assert "partition.mark-done-action = 'done-partition'" in refusal.property and "metastore" in refusal.why


def test_custom_and_http_keys_no_longer_refuse_anything() -> None:
    keys = {"partition.mark-done-action.custom.class": "com.example.Done",
            "partition.mark-done-action.http.url": "http://x", "partition.mark-done-action.http.params": "a",
            "partition.mark-done-action.http.timeout": "5 s"}
    assert _blocked(keys) == set()
    # with their action set, the action refuses writes
    assert _blocked({**keys, "partition.mark-done-action": "custom"}) == WRITE_ONLY


def test_end_input_to_done_is_a_boolean_refusing_writes_when_it_does_not_parse() -> None:
    assert _blocked({"partition.end-input-to-done": "TRUE"}) == set()
    assert _blocked({"partition.end-input-to-done": "1 h"}) == {Op.WRITE, Op.COMPACT}


def test_create_and_alter_check_the_mark_done_options(tmp_path: Path) -> None:
    cat = _catalog(tmp_path)
    t = cat.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                         options={"bucket": "1", "partition.end-input-to-done": "true",
                                  "partition.mark-done-action": "success-file",
                                  "partition.mark-done-action.custom.class": "com.example.Done"})
    t.write_arrow(pa.table({"id": [1], "dt": ["d"]}, schema=SCHEMA))
    with pytest.raises(UnsupportedFeatureError, match=r"partition\.mark-done-action='done-partition' is not "
                       r"supported: .*metastore.*supported values: success-file"):
        t.update_schema().set_option("partition.mark-done-action", "done-partition").commit()
    with pytest.raises(OptionError, match=r"partition\.mark-done-action.*no spaces"):
        t.update_schema().set_option("partition.mark-done-action", "success-file, done-partition").commit()
    with pytest.raises(OptionError, match=r"partition\.end-input-to-done"):
        cat.create_table("db.u", SCHEMA, options={"partition.end-input-to-done": "1 h"})


@pytest.mark.parametrize(("key", "text", "value"), [
    ("scan.mode", "FULL", "full"), ("scan.mode", "Latest-Full", "latest-full"), ("scan.mode", " full", None),
    ("scan.mode", "full ", None), ("changelog-producer", "\u0131nput", "input"),  # dotless i upper-cases to I
    ("changelog-producer", "input\t", None), ("merge-engine", " deduplicate", None),
    ("merge-engine", "First-Row", "first-row"), ("tag.creation-period", "TWO-HOURS", "two-hours"),
    ("partition.sink-strategy", "PARTITION_DYNAMIC", "partition_dynamic"), ("bucket-function.type", "Default ", None),
])
def test_enum_options_match_as_javas_convert_to_enum(key: str, text: str, value: str | None) -> None:
    if value is None:
        with pytest.raises(OptionError, match="is not one of"):
            parse_value(RULES[key], text)
    else:
        assert parse_value(RULES[key], text) == value


def test_parquet_writer_version_is_exact_as_parquet_java(tmp_path: Path) -> None:
    rule = RULES["parquet.writer.version"]
    for ok in ("v1", "PARQUET_1_0"):
        assert parse_value(rule, ok) == ok
    for bad in ("V1", " v1", "parquet_1_0"):
        with pytest.raises(OptionError, match=r"WriterVersion\.fromString"):
            parse_value(rule, bad)
    cat = _catalog(tmp_path)
    cat.create_table("db.p", SCHEMA, options={"parquet.writer.version": "PARQUET_1_0"})
    with pytest.raises(UnsupportedFeatureError, match=r"parquet\.writer\.version='PARQUET_2_0' is not supported"):
        cat.create_table("db.q", SCHEMA, options={"parquet.writer.version": "PARQUET_2_0"})
