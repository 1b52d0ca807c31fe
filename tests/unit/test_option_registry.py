"""The option registry is the one source of option rules: known keys, typed accessors parsed once,
validation at create and ALTER, per-operation refusals and docs/options.md all come from it."""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pytest

from lake_assets import Catalog, OptionError, UnsupportedFeatureError
from lake_assets.option_docs import DOC_PATH, render
from lake_assets.option_rules import RULES
from lake_assets.option_rules_fields import FIELD_RULES
from lake_assets.option_types import KINDS, parse_value
from lake_assets.options import FIELD_OPTION, CoreOptions, rule_for
from lake_assets.table import Table

SCHEMA = pa.schema([("k", pa.int32()), ("v", pa.string())])


def _carry(table: Table, **options: str) -> Table:
    """The table with ``options`` added by a schema another engine wrote (no validation on our side)."""
    schema = table.schema
    new = dataclasses.replace(schema, id=schema.id + 1, options={**schema.options, **options})
    table.file_io.write_bytes(table.paths.schema_file(new.id), new.to_json().encode())
    table.refresh()
    return table


def test_docs_options_md_is_generated_from_the_registry():
    # regenerate with: python -m lake_assets.option_docs
    assert DOC_PATH.read_text(encoding="utf-8") == render()


@pytest.mark.parametrize("rule", [*RULES.values(), *FIELD_RULES.values()], ids=lambda r: r.key)
def test_every_row_is_complete(rule):
    assert rule.kind in KINDS and rule.description
    if rule.default is not None and rule.kind not in ("size", "duration"):
        # the documented default is a value the rule itself accepts
        text = str(rule.default).lower() if isinstance(rule.default, bool) else str(rule.default)
        assert parse_value(rule, text) == rule.default
    if rule.refuses:
        assert rule.supported is not None and rule.why


# ------------------------------------------------------------------ the reproduced drifts of issue 16
@pytest.mark.parametrize(("key", "value"), [("commit.min-retry-wait", "soon"),
                                            ("compaction.small-file-ratio", "abc")])
def test_malformed_values_fail_at_create_and_alter_naming_key_and_value(catalog: Catalog, key, value):
    with pytest.raises(OptionError, match=rf"{key}.*{value}"):
        catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1", key: value})
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    with pytest.raises(OptionError, match=rf"{key}.*{value}"):
        t.update_schema().set_option(key, value).commit()


def test_malformed_value_another_engine_wrote_is_an_option_error_not_a_value_error(catalog: Catalog):
    t = catalog.create_table("db.t", SCHEMA, options={})
    with pytest.raises(OptionError, match=r"small-file-ratio.*abc"):
        _carry(t, **{"compaction.small-file-ratio": "abc"})  # fails as the schema loads
        _ = t.schema.core_options.small_file_ratio


@pytest.mark.parametrize("arrow_type", [
    pa.list_(pa.timestamp("ns")),
    pa.struct([("at", pa.timestamp("ns", tz="UTC"))]),
    pa.map_(pa.string(), pa.timestamp("ns")),
], ids=["array", "row", "map"])
def test_nested_nanosecond_timestamps_are_refused_at_create_as_on_alter(catalog: Catalog, arrow_type):
    schema = pa.schema([("k", pa.int32()), ("n", arrow_type)])
    with pytest.raises(UnsupportedFeatureError, match=r"Cannot create db.t: column 'n' .*precision above 6"):
        catalog.create_table("db.t", schema, primary_keys=["k"], options={"bucket": "1"})
    assert not catalog.table_exists("db.t")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    with pytest.raises(UnsupportedFeatureError, match=r"Cannot add column 'n' .*precision above 6"):
        t.update_schema().add_column("n", arrow_type).commit()


# ----------------------------------------------------------------------- accepted-and-ignored audit
@pytest.mark.parametrize(("key", "value"), [("file.format", "csv")])
def test_options_we_cannot_honour_are_refused(catalog: Catalog, key, value):
    with pytest.raises(UnsupportedFeatureError, match=key.replace(".", r"\.")):
        catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1", key: value})


def test_per_field_rows_parse_their_values(catalog: Catalog):
    with pytest.raises(OptionError, match=r"fields.v.ignore-retract.*'maybe'.*'true' or 'false'"):
        catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={
            "bucket": "1", "merge-engine": "aggregation", "fields.v.ignore-retract": "maybe"})


# ---------------------------------------------------------------------------- accessors
def test_engine_accessors_read_the_per_field_rows():
    opts = CoreOptions({
        "fields.default-aggregate-function": "max", "fields.a.aggregate-function": "sum",
        "fields.a.ignore-retract": "TRUE", "fields.b.list-agg-delimiter": ";",
        "fields.s1,s2.sequence-group": "a, b", "aggregation.remove-record-on-delete": "true",
    })
    assert opts.aggregate_function("a") == "sum"
    assert opts.aggregate_function("b") == "max"
    assert opts.ignore_retract("a") is True and opts.ignore_retract("b") is False
    assert opts.list_agg_delimiter("b") == ";" and opts.list_agg_delimiter("a") == ","
    assert opts.sequence_groups == {("s1", "s2"): ("a", "b")}
    assert opts.aggregation_remove_record_on_delete is True
    assert opts.partial_update_remove_record_on_delete is False


def test_boolean_options_read_raw_before_parse_case_insensitively():
    opts = CoreOptions({"streaming-read-overwrite": "TRUE", "changelog-producer.row-deduplicate": "True"})
    assert opts.streaming_read_overwrite is True and opts.changelog_row_deduplicate is True


def test_values_are_parsed_once_and_defaults_come_from_the_registry():
    opts = CoreOptions({"snapshot.time-retained": "2 h", "fields.x.ignore-retract": "true"})
    assert opts.values is opts.values  # one parse per options map (a schema's is cached too)
    assert opts.values == {"snapshot.time-retained": 7_200_000, "fields.x.ignore-retract": True}
    assert CoreOptions({}).snapshot_num_retained_min == RULES["snapshot.num-retained.min"].default


def test_pattern_keys_are_registry_rows():
    assert FIELD_OPTION.match("fields.a,b.sequence-group")
    rule = rule_for("fields.x.aggregate-function")
    assert rule is not None and rule.key == "fields.x.aggregate-function"
    assert rule.description == FIELD_RULES["aggregate-function"].description
    assert rule_for("fields.x.unknown-suffix") is None


@pytest.mark.parametrize(("options", "expected"), [
    ({}, False),
    ({"partial-update.ignore-delete": "true"}, True),
    ({"first-row.ignore-delete": "TRUE"}, True),
    # Paimon's Options.get: the key itself decides when set, else the first fallback key set
    ({"ignore-delete": "false", "deduplicate.ignore-delete": "true"}, False),
    ({"ignore-delete": "true", "first-row.ignore-delete": "false"}, True),
    ({"first-row.ignore-delete": "false", "partial-update.ignore-delete": "true"}, False),
    ({"deduplicate.ignore-delete": "true", "partial-update.ignore-delete": "false"}, True),
])
def test_ignore_delete_takes_the_first_key_set_as_paimon(options, expected):
    assert CoreOptions(options).ignore_delete is expected
