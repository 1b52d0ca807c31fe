"""Column default values (``fields.<column>.default-value``, `lake_assets.ops.default_values`).

Parity with Paimon Java 0.9 is `tests/differential/test_default_values_java.py`; these tests pin
the parts each read path and each refusal owns, without a JVM.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import InvalidDataError, OptionError, UnsupportedFeatureError
from lake_assets.ops.default_value_cast import DefaultValueError, to_scalar
from lake_assets.ops.default_values import option_defaults, prunable
from lake_assets.predicate import Predicate
from lake_assets.spec.type_parser import parse_type

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int32()), ("s", pa.string())])
OPTS = {"bucket": "1", "fields.v.default-value": "7", "fields.s.default-value": "dflt"}


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


def _rows(t: pa.Table) -> list[dict[str, object]]:
    return sorted(t.to_pylist(), key=lambda r: repr(sorted(r.items())))


@pytest.mark.parametrize(("typ", "text", "value"), [
    ("INT", "5.9", 5),  # BinaryStringUtils.toInt truncates a fraction
    ("INT", "-.5", 0),
    ("SMALLINT", "-32768", -32768),
    ("CHAR(4)", "ab", "ab  "),  # CHAR padded, VARCHAR cut
    ("VARCHAR(2)", "abc", "ab"),
    ("DECIMAL(6, 2)", "2.345", Decimal("2.35")),  # HALF_UP
    ("DECIMAL(6, 2)", "-2.345", Decimal("-2.35")),
    ("DATE", "31", dt.date(1970, 2, 1)),  # digits only: days since the epoch
    ("DATE", "2024-2", dt.date(2024, 2, 1)),
    ("TIMESTAMP(3)", "2024-01-02 03:04:05.6789", dt.datetime(2024, 1, 2, 3, 4, 5, 678000)),  # floored
    ("TIMESTAMP(0)", "2024-01-02 03:04:05.9", dt.datetime(2024, 1, 2, 3, 4, 5)),
    ("BOOLEAN", "N", False),
    ("BINARY(3)", "é", b"\xc3\xa9\x00"),
])
def test_texts_cast_as_java_casts_them(typ: str, text: str, value: object) -> None:
    assert to_scalar(text, parse_type(typ)).as_py() == value


@pytest.mark.parametrize(("typ", "text", "why"), [
    ("INT", " 5", "not an integer"),  # no trim in toInt
    ("INT", "2147483648", "out of the range"),
    ("TINYINT", "1e2", "not an integer"),
    ("DOUBLE", "0x1p3", "not a DOUBLE"),  # hexadecimal floats: not followed
    ("DECIMAL(10, 2)", "NaN", "not a decimal"),
    ("DECIMAL(3, 1)", "123.4", "does not fit"),
    ("DATE", "2023-02-29", "not a valid DATE"),
    ("TIMESTAMP(6)", "2024-01-02T03:04:05", "not a TIMESTAMP"),
    ("BOOLEAN", "on", "not a BOOLEAN"),
    ("TIME", "10:00:00", "not supported by lake_assets"),
    ("TIMESTAMP(6) WITH LOCAL TIME ZONE", "2024-01-02", "not supported by lake_assets"),
    ("ARRAY<INT>", "[1]", "Paimon has no default values"),
])
def test_texts_that_do_not_cast_are_refused(typ: str, text: str, why: str) -> None:
    with pytest.raises(DefaultValueError, match=why):
        to_scalar(text, parse_type(typ))


def test_option_names_are_read_as_java_reads_them() -> None:
    options = {"fields.a.default-value": "1", "fields.a,b.default-value": "2", "fields.a.aggregate-function": "sum",
               "fields..default-value": "3"}
    assert option_defaults(options) == {"a": "1", "a,b": "2"}


def test_a_default_is_set_per_column(catalog: Catalog) -> None:
    with pytest.raises(OptionError, match=r"'fields\.v,s\.default-value' names no column"):
        catalog.create_table("db.t", SCHEMA, primary_keys=["k"],
                             options={"bucket": "1", "fields.v,s.default-value": "1"})


def test_filters_prune_without_their_terms_on_defaulted_columns(catalog: Catalog) -> None:
    schema = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options=OPTS).schema
    bind = lambda f: Predicate.of(f).bind(schema.arrow_schema, "db.t")  # noqa: E731
    assert prunable(schema, bind([("v", "=", 7)])) is None
    assert prunable(schema, bind([("v", "=", 7), ("k", ">", 1)])).clauses == ((("k", ">", 1),),)
    assert prunable(schema, bind([[("v", "=", 7)], [("k", "=", 1)]])) is None  # an OR clause left empty
    kept = bind([("k", "<", 3)])
    assert prunable(schema, kept) is kept


def test_reads_fill_after_the_merge_and_filter_the_filled_rows(catalog: Catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"],
                             options={**OPTS, "merge-engine": "partial-update"})
    t.write_arrow(pa.table({"k": [1, 2, 3], "v": [1, None, None], "s": [None, "b", None]}, schema=SCHEMA))
    t.write_arrow(pa.table({"k": [1, 2], "v": [None, 2], "s": ["a", None]}, schema=SCHEMA))
    assert _rows(t.to_arrow()) == _rows(pa.table({"k": [1, 2, 3], "v": [1, 2, 7], "s": ["a", "b", "dflt"]},
                                                 schema=SCHEMA))
    assert t.to_arrow(filter=[("v", "=", 7)], columns=["k"]).to_pylist() == [{"k": 3}]
    assert t.to_arrow(filter=[("s", "is null")]).num_rows == 0
    batches = list(t.to_batches(batch_size=1, filter=[("s", "=", "dflt")]))
    assert [b.to_pylist() for b in batches if b.num_rows] == [[{"k": 3, "v": 7, "s": "dflt"}]]


def test_a_column_added_later_reads_as_its_default_in_older_files(catalog: Catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    t.write_arrow(pa.table({"k": [1], "v": [1], "s": ["a"]}, schema=SCHEMA))
    t.update_schema().add_column("n", pa.int64()).set_option("fields.n.default-value", "-1").commit()
    assert catalog.get_table("db.t").to_arrow(filter=[("n", "=", -1)]).column("k").to_pylist() == [1]


def test_compaction_keeps_the_nulls_and_alter_changes_the_default(catalog: Catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options=OPTS)
    t.write_arrow(pa.table({"k": [1, 2], "v": [None, 2], "s": ["a", None]}, schema=SCHEMA))
    t.write_arrow(pa.table({"k": [3], "v": [None], "s": [None]}, schema=SCHEMA))
    t.compact(full=True)
    t.update_schema().set_option("fields.v.default-value", "8").remove_option("fields.s.default-value").commit()
    t = catalog.get_table("db.t")
    assert _rows(t.to_arrow()) == _rows(pa.table({"k": [1, 2, 3], "v": [8, 2, 8], "s": ["a", None, None]},
                                                 schema=SCHEMA))


def test_changes_and_streams_are_filled(catalog: Catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA.append(pa.field("op", pa.string())), primary_keys=["k"],
                             options={**OPTS, "rowkind.field": "op"})
    t.write_arrow(pa.table({"k": [1, 2], "v": [None, 1], "s": ["a", "b"], "op": ["+I", "+I"]}))
    t.create_tag("one")
    t.write_arrow(pa.table({"k": [1, 2], "v": [None, None], "s": [None, "b"], "op": ["-D", "+I"]}))
    t.create_tag("two")
    delta = t.read_changes(1, 2, source="delta")
    assert sorted(zip(*(delta.column(c).to_pylist() for c in ("k", "v", "_row_kind")), strict=True)) == [
        (1, 7, "-D"), (2, 7, "+I")]
    # between tags: the files the tags do not share (the second commit's), merged keeping the
    # retraction (`ops.tag_diff`), then filled - the -D row's nulls too
    diff = t.read_changes("one", "two")
    assert sorted(zip(*(diff.column(c).to_pylist() for c in ("k", "v", "s", "_row_kind")), strict=True)) == [
        (1, 7, "dflt", "-D"), (2, 7, "b", "+I")]
    stream = t.stream(mode="from-snapshot-full", snapshot_id=1)
    reader = t.change_reader()
    full = pa.concat_tables([reader.read(sp) for batch in stream.poll() for sp in batch.splits])
    assert sorted(zip(full.column("k").to_pylist(), full.column("v").to_pylist(), strict=True)) == [(1, 7), (2, 1)]
    changes = pa.concat_tables([reader.read(sp) for batch in stream.poll() for sp in batch.splits])
    assert sorted(zip(*(changes.column(c).to_pylist() for c in ("k", "v", "_row_kind")), strict=True)) == [
        (1, 7, "-D"), (2, 7, "+I")]


def _set_field_default(table_dir: Path, column: str, default: str) -> None:
    """Give ``column`` Paimon 1.3's write-time default in schema-0 (as a 1.3+ writer would)."""
    path = table_dir / "schema" / "schema-0"
    schema = json.loads(path.read_text())
    for f in schema["fields"]:
        if f["name"] == column:
            f["defaultValue"] = default
    path.write_text(json.dumps(schema))


def test_write_time_defaults_of_paimon_1_3_are_filled_on_write(catalog: Catalog, tmp_path: Path) -> None:
    schema = SCHEMA.append(pa.field("p", pa.int32())).append(pa.field("n", pa.int32(), nullable=False))
    t = catalog.create_table("db.t", schema, partition_keys=["p"], options={"bucket": "-1"})
    t.write_arrow(pa.table({"k": [1], "v": [None], "s": [None], "p": [1], "n": [0]}, schema=schema))
    for column, default in (("v", "5"), ("s", "'it''s'"), ("p", "9"), ("n", "4")):
        _set_field_default(tmp_path / "wh" / "db.db" / "t", column, default)
    t = catalog.get_table("db.t")
    # what is on storage reads as it is (1.3+ readers fill nothing); new rows are filled as
    # TableWriteImpl fills them - single quotes around the text dropped, partition values too
    t.write_arrow(pa.table({"k": [2, 3], "v": [None, 6], "s": [None, "x"], "p": [None, 2], "n": [1, 1]},
                           schema=schema))
    assert _rows(t.to_arrow()) == _rows(pa.table(
        {"k": [1, 2, 3], "v": [None, 5, 6], "s": [None, "it''s", "x"], "p": [1, 9, 2], "n": [0, 1, 1]}, schema=schema))
    assert t.to_arrow(filter=[("p", "=", 9)]).column("k").to_pylist() == [2]
    with pytest.raises(InvalidDataError, match="'n' is NOT NULL"):  # the NOT NULL check comes first
        t.write_arrow(pa.table({"k": [4], "v": [1], "s": ["a"], "p": [1], "n": pa.array([None], pa.int32())}))
    from lake_assets.spark.native_eligibility import native_refusals

    assert any("write-time default values of columns ['v', 's', 'p', 'n']" in r for r in native_refusals(t))


def test_a_write_time_default_that_does_not_cast_refuses_writes_only(catalog: Catalog, tmp_path: Path) -> None:
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    t.write_arrow(pa.table({"k": [1], "v": [None], "s": ["a"]}, schema=SCHEMA))
    _set_field_default(tmp_path / "wh" / "db.db" / "t", "v", "five")
    t = catalog.get_table("db.t")
    assert t.to_arrow().column("v").to_pylist() == [None]
    with pytest.raises(UnsupportedFeatureError, match=r"defaultValue\) of column 'v'.*'five' is not an integer"):
        t.write_arrow(pa.table({"k": [2], "v": [None], "s": ["b"]}, schema=SCHEMA))
    t.compact(full=True)  # compaction writes no new values


def test_a_carried_default_that_does_not_cast_refuses_reads_only(catalog: Catalog, tmp_path: Path) -> None:
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    t.write_arrow(pa.table({"k": [1], "v": [None], "s": ["a"]}, schema=SCHEMA))
    path = tmp_path / "wh" / "db.db" / "t" / "schema" / "schema-0"
    schema = json.loads(path.read_text())
    schema["options"]["fields.v.default-value"] = "seven"  # written by an engine that did not check
    path.write_text(json.dumps(schema))
    t = catalog.get_table("db.t")
    with pytest.raises(UnsupportedFeatureError, match=r"fields\.v\.default-value.*'seven' is not an integer"):
        t.to_arrow()
    t.write_arrow(pa.table({"k": [2], "v": [2], "s": ["b"]}, schema=SCHEMA))  # writers keep nulls: unaffected
    with pytest.raises(OptionError, match=r"Cannot alter db\.t: option 'fields\.v\.default-value'"):
        t.update_schema().set_option("fields.s.default-value", "x").commit()
    t.update_schema().remove_option("fields.v.default-value").commit()  # how the user repairs it
    assert catalog.get_table("db.t").to_arrow().num_rows == 2
