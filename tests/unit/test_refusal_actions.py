"""Every refusal of a table another engine wrote ends with what its user can do
(`lake_assets.refusal_actions`): each refused row of the option registry, each kind of refusal the
schema and the files raise, and the commonest ones by their text; where the advice is an ALTER,
following it through lake_assets' own schema change makes the refused operation work."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from lake_assets import Catalog, UnsupportedFeatureError
from lake_assets.option_rules import RULES, rule_for
from lake_assets.option_rules_fields import FIELD_RULES
from lake_assets.option_rules_file_index import FILE_INDEX_COLUMN_RULES, OTHER_TYPE_COLUMNS
from lake_assets.option_rules_formats import COLUMN_FORMAT_RULES
from lake_assets.option_types import KEY_SLOT, OptionRule, parse_value, unsupported_value
from lake_assets.refusal_actions import ACTION_MARK
from lake_assets.spec.manifest import DataFileMeta, FileKind, IndexManifestEntry, ManifestEntry, SimpleStats
from lake_assets.spec.schema import TableSchema
from lake_assets.spec.types import STRING_LENGTH, BigIntType, DataField, VarCharType
from lake_assets.table_support import Op, entry_refusals, index_refusals, refuse, schema_refusals

# The registry's rows of refused values under a key a table can carry (per-column rows by example).
_EXAMPLE_KEYS = {"<option>": "file-index.future.v.size", "version": "file-index.bitmap.v.version",
                 OTHER_TYPE_COLUMNS.key: "file-index.future.columns"}


def _refused_rows() -> list[tuple[str, OptionRule]]:
    rows = [(k, r) for k, r in RULES.items() if r.supported is not None]
    others = [*FIELD_RULES.values(), *COLUMN_FORMAT_RULES.values(), *FILE_INDEX_COLUMN_RULES.values(),
              OTHER_TYPE_COLUMNS]
    for r in others:
        if r.supported is not None:
            key = _EXAMPLE_KEYS[r.key]  # a refused row without an example key fails here: add one
            rows.append((key, rule_for(key)))  # type: ignore[arg-type]
    return rows


def _schema(options: dict[str, str], *, pk: bool = True) -> TableSchema:
    fields = (DataField(0, "id", BigIntType(nullable=not pk)), DataField(1, "v", VarCharType(STRING_LENGTH)))
    return TableSchema(0, fields, 1, (), ("id",) if pk else (), {"bucket": "2", **options})


def _message(refusals, op: Op) -> str:
    with pytest.raises(UnsupportedFeatureError) as raised:
        refuse("db.t", op, refusals)
    return str(raised.value)


def _refused_value(rule: OptionRule) -> str:
    """A value of ``rule`` that parses and that lake_assets does not implement."""
    for value in (*(c for c in rule.choices if c not in (rule.supported or ())), "3", "v2", "dev",
                  "done-partition", "x"):
        try:
            parse_value(rule, value)
        except Exception:
            continue
        if unsupported_value(rule, value) is not None:
            return value
    raise AssertionError(f"no refused value found for {rule.key}")


def test_the_registry_has_refused_rows_under_every_group() -> None:
    keys = {k for k, _ in _refused_rows()}
    assert {"file.format", "manifest.format", "scan.partitions", "scan.fallback-branch", "branch",
            "partition.mark-done-action", "file-index.future.columns", "file-index.bitmap.v.version"} <= keys


@pytest.mark.parametrize("key, rule", _refused_rows(), ids=[k for k, _ in _refused_rows()])
def test_every_refused_row_of_the_registry_says_what_to_do(key: str, rule: OptionRule) -> None:
    advice = rule.advice()
    assert advice and KEY_SLOT not in advice and not advice.endswith(".")
    assert rule.refuses, f"{key}: a refused row names the operations it blocks"
    value = _refused_value(rule)
    options = {key: value}
    if key.startswith("file-index.bitmap."):
        options["file-index.bitmap.columns"] = "v"
    refusals = schema_refusals(_schema(options))
    for name in rule.refuses:
        message = _message(refusals, Op[name])
        # the first part as before (tests and users match it), the advice after it
        assert f"option {key} = {value!r} is not supported; {rule.why.rstrip('.')}. {ACTION_MARK}{advice}" in message


def _entry(name: str, *, bucket: int = 0, **fields: object) -> ManifestEntry:
    meta = DataFileMeta(name, 100, 1, b"", b"", SimpleStats.EMPTY, SimpleStats.EMPTY, 0, 0, 0, 0, **fields)
    return ManifestEntry(FileKind.ADD, b"", bucket, 2, meta)


def _index(kind: str) -> IndexManifestEntry:
    return IndexManifestEntry(FileKind.ADD, b"", 0, kind, "index-x-0", 8, 2)


_SCHEMA_KINDS = {
    "bucket mode": ({"bucket": "-2"}, False),
    "bucket function": ({"bucket-key": "v", "bucket-function.type": "mod"}, False),
    "value that does not parse": ({"file-index.bloom-filter.v.fpp": "2"}, True),
    "external paths": ({"data-file.external-paths": "s3://b/x"}, True),
    "scan position": ({"scan.snapshot-id": "3"}, True),
    "scan mode": ({"scan.mode": "from-snapshot"}, True),
    "format writer option": ({"parquet.future.knob": "1"}, True),
    "unknown option": ({"paimon.future-feature": "on"}, True),
    "written format": ({"file.format": "csv"}, True),
    "codec": ({"file.format": "orc", "file.compression": "lz4_raw"}, True),
    "dv on data evolution": ({"deletion-vectors.enabled": "true", "data-evolution.enabled": "true",
                              "row-tracking.enabled": "true", "bucket": "-1"}, False),
    "dv changelog producer": ({"deletion-vectors.enabled": "true", "changelog-producer": "full-compaction"}, True),
    "dv first-row": ({"deletion-vectors.enabled": "true", "merge-engine": "first-row"}, True),
    "file index column": ({"file-index.bloom-filter.columns": "nope"}, True),
    "postpone merge-on-read": ({"bucket": "-2", "postpone.merge-on-read": "true"}, True),
}


@pytest.mark.parametrize("kind", list(_SCHEMA_KINDS))
def test_every_kind_of_schema_refusal_says_what_to_do(kind: str) -> None:
    options, pk = _SCHEMA_KINDS[kind]
    refusals = schema_refusals(_schema(options, pk=pk))
    assert refusals, kind
    for r in refusals:
        assert r.action and not r.action.endswith("."), (kind, r)
        (op,) = sorted(r.ops, key=lambda o: o.name)[:1]
        assert f"{ACTION_MARK}{r.action}" in _message([r], op)


def test_every_kind_of_file_refusal_says_what_to_do() -> None:
    entries = [_entry("data-a-0.lance"), _entry("data-b-0"), _entry("data-c-0.parquet", bucket=-3),
               _entry("data-d-0.parquet", write_cols=["v"]), _entry("data-e-0.parquet", first_row_id=0),
               _entry("data-f-0.parquet", external_path="s3://b/data-f-0.parquet")]
    refusals = entry_refusals(entries)
    refusals += index_refusals([_index("HASH"), _index("DELETION_VECTORS"), _index("FUTURE")], _schema({}))
    refusals += index_refusals([_index("BTREE")], _schema({"row-tracking.enabled": "true"}, pk=False))
    assert len(refusals) == 10
    for r in refusals:
        assert r.action and not r.action.endswith("."), r
    message = _message(entry_refusals([_entry("data-a-0.lance")]), Op.READ)
    assert message == ("Cannot read db.t: data file format 'lance' (file data-a-0.lance) is not supported; only avro, "
                       "orc, parquet data files are implemented. What you can do: read and write the table with the "
                       "Paimon (Java or pypaimon) that wrote lance files")
    # a name that ends in no format: "(none)", not a quoted text
    assert "data file format (none) (file data-b-0)" in _message(entry_refusals([_entry("data-b-0")]), Op.READ)


def test_an_unsupported_file_format_option_says_what_to_do() -> None:
    message = _message(schema_refusals(_schema({"file.format": "csv"})), Op.READ)
    assert message.startswith("Cannot read db.t: option file.format = 'csv' is not supported; only Parquet, ORC and "
                              "Avro data files are implemented")
    assert (f"{ACTION_MARK}use Paimon Java (Flink, Spark) or pypaimon for this table, or copy its rows into a new "
            "table that lake_assets supports (INSERT INTO ... SELECT in Flink or Spark) with file.format parquet, "
            "orc or avro (changing file.format converts no file already written)") in message


# ------------------------------------------------------------- the advice, followed on real tables
def _carry(t, **options: str) -> None:
    """The table's next schema carrying ``options``, as another engine's ALTER leaves it."""
    schema = json.loads(t.file_io.read_bytes(t.paths.schema_file(0)))
    schema["id"] = 1
    schema["options"].update(options)
    t.file_io.write_bytes(t.paths.schema_file(1), json.dumps(schema).encode())


def _table(tmp_path, **options: str):
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    t = catalog.create_table("db.t", pa.schema([("k", pa.int64()), ("v", pa.int64())]), primary_keys=["k"],
                             options={"bucket": "1", **options})
    t.write_arrow(pa.table({"k": [1, 2], "v": [1, 1]}, schema=t.arrow_schema))
    return catalog, t


def test_an_unknown_option_says_how_to_remove_it_and_removing_it_works(tmp_path) -> None:
    catalog, t = _table(tmp_path)
    _carry(t, **{"paimon.future-feature": "on"})
    t = catalog.get_table("db.t")
    rows = pa.table({"k": [3], "v": [3]}, schema=t.arrow_schema)
    with pytest.raises(UnsupportedFeatureError) as raised:
        t.write_arrow(rows)
    assert str(raised.value) == (
        "Cannot write to db.t: option paimon.future-feature = 'on' is not supported; lake_assets does not know this "
        "option (a newer Paimon's?) and cannot tell what it means for the files it would write or delete. "
        "What you can do: if it turns on a newer Paimon's feature, maintain the table with that Paimon; if it is "
        "stale or a typo, remove it (table.update_schema().remove_option('paimon.future-feature').commit(), or "
        "ALTER TABLE ... RESET ('paimon.future-feature') in Flink, ALTER TABLE ... UNSET TBLPROPERTIES "
        "('paimon.future-feature') in Spark)")
    t.update_schema().remove_option("paimon.future-feature").commit()
    t = catalog.get_table("db.t")
    t.write_arrow(rows)
    assert sorted(t.to_arrow().column("k").to_pylist()) == [1, 2, 3]


def test_a_value_that_does_not_parse_says_what_to_do_and_removing_it_works(tmp_path) -> None:
    catalog, t = _table(tmp_path, **{"file-index.bloom-filter.columns": "v"})
    _carry(t, **{"file-index.bloom-filter.v.fpp": "2"})
    t = catalog.get_table("db.t")
    rows = pa.table({"k": [3], "v": [3]}, schema=t.arrow_schema)
    with pytest.raises(UnsupportedFeatureError, match=r"What you can do: give it a valid value with ALTER TABLE \.\.\. "
                       r"SET \('file-index\.bloom-filter\.v\.fpp' = \.\.\.\) in Flink .*, or remove it \(table\."
                       r"update_schema\(\)\.remove_option\('file-index\.bloom-filter\.v\.fpp'\)"):
        t.write_arrow(rows)
    t.update_schema().remove_option("file-index.bloom-filter.v.fpp").commit()
    catalog.get_table("db.t").write_arrow(rows)
    assert catalog.get_table("db.t").to_arrow().num_rows == 3


def test_scan_partitions_says_what_to_do_and_removing_it_works(tmp_path) -> None:
    catalog, t = _table(tmp_path)
    _carry(t, **{"scan.partitions": "max_pt()"})
    t = catalog.get_table("db.t")
    with pytest.raises(UnsupportedFeatureError) as raised:
        t.to_arrow()
    assert str(raised.value).endswith(
        "What you can do: remove it (table.update_schema().remove_option('scan.partitions').commit(), or ALTER "
        "TABLE ... RESET ('scan.partitions') in Flink, ALTER TABLE ... UNSET TBLPROPERTIES ('scan.partitions') in "
        "Spark) and filter the reads here by the partition columns instead; Flink's reads then read every partition "
        "too, unless a query passes the option as a hint (/*+ OPTIONS('scan.partitions' = '...') */), where it "
        "belongs")
    t.update_schema().remove_option("scan.partitions").commit()
    assert catalog.get_table("db.t").to_arrow().num_rows == 2


def test_tag_automatic_creation_on_a_branch_says_what_to_do_and_doing_it_works(tmp_path) -> None:
    catalog, main = _table(tmp_path, **{"tag.automatic-creation": "process-time"})
    main.create_tag("t1", 1)
    main.create_branch("dev", tag="t1")
    dev = catalog.get_table("db.t$branch_dev")
    rows = pa.table({"k": [3], "v": [3]}, schema=dev.arrow_schema)
    with pytest.raises(UnsupportedFeatureError) as raised:
        dev.write_arrow(rows)
    assert str(raised.value).startswith("Cannot write to db.t$branch_dev: this branch carries tag.automatic-creation "
                                        "(Paimon, 0.9 to 1.x, creates a branch's automatic tags in the main branch's "
                                        "tag directory; lake_assets does not create them on a branch). ")
    assert str(raised.value).endswith(
        "What you can do: remove it from the branch's own schema, which leaves the main branch's options as they "
        "are (on the branch's handle: update_schema().remove_option('tag.automatic-creation').commit()); create "
        "the branch's tags with its create_tag instead")
    dev.update_schema().remove_option("tag.automatic-creation").commit()
    dev = catalog.get_table("db.t$branch_dev")
    dev.write_arrow(rows)
    assert sorted(dev.to_arrow().column("k").to_pylist()) == [1, 2, 3]
    assert catalog.get_table("db.t").schema.options["tag.automatic-creation"] == "process-time"


@pytest.mark.parametrize("options, advice", [
    ({"fields.v.aggregate-function": "median"}, "What you can do: name one of bool_and, bool_or, collect, "),
    ({"fields.v.aggregate-function": "listagg", "fields.v.distinct": "true"},
     "What you can do: write and compact the table with Paimon Java 1.x, whose listagg drops repeated values"),
])
def test_aggregate_functions_lake_assets_lacks_say_what_to_do(tmp_path, options, advice) -> None:
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    with pytest.raises(UnsupportedFeatureError) as raised:
        catalog.create_table("db.t", pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())]),
                             primary_keys=["k"], options={"bucket": "1", "merge-engine": "aggregation", **options})
    assert advice in str(raised.value)
    assert catalog.list_tables("db") == []
