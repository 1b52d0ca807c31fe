"""Column default values (``fields.<column>.default-value``) against Paimon Java 0.9.

Java 0.9 fills every null of a defaulted column when it reads (``DefaultValueAssigner``: after the
merge, batch and incremental reads alike, changes of every kind) and filters the filled rows, its
scan never pruning on such a column; its writers keep the nulls. Both directions are checked: Java
writes rows with nulls (and files whose stats say a column is all null), we read with and without
filters and get Java's rows; we write, Java reads. The defaults' texts are cast as Java casts them
(``CastExecutors``) - a table per odd text, read by both. A default that does not cast, or one on a
primary-key or partition column, is refused at create and ALTER by both; ALTER of a default changes
what both read, files unchanged. Paimon 1.3 dropped read-side defaults (apache/paimon#5804): these
tests pin 0.9's behaviour, which lake_assets follows.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import OptionError
from tests.java.oracle import JavaError, PaimonJava

from .helpers import assert_same_rows

SCHEMA = pa.schema([
    ("id", pa.int64()), ("p", pa.int32()), ("i", pa.int32()), ("s", pa.string()), ("d", pa.decimal128(10, 2)),
    ("day", pa.date32()), ("ts", pa.timestamp("ms")), ("b", pa.bool_()),
])
DEFAULTS = {"i": "7", "s": "none", "d": "3.145", "day": "2024-02-29", "ts": "2024-01-15 10:11:12.123456",
            "b": "yes"}
OPTIONS = {f"fields.{c}.default-value": v for c, v in DEFAULTS.items()}
# what Java 0.9 casts DEFAULTS to: DECIMAL HALF_UP to the scale, TIMESTAMP(3) floored to millis
FILLED: dict[str, Any] = {"i": 7, "s": "none", "d": Decimal("3.15"), "day": dt.date(2024, 2, 29),
                          "ts": dt.datetime(2024, 1, 15, 10, 11, 12, 123000), "b": True}
VALUE_COLUMNS = list(DEFAULTS)


def _rows(ids: range, nulls: str) -> pa.Table:
    """Rows of ``ids``; ``nulls`` "all": every value column null (the file's stats say only
    nulls), "some": every third row's, "none": no nulls."""
    def value(i: int, c: str) -> Any:
        if nulls == "all" or (nulls == "some" and i % 3 == 0):
            return None
        return {"i": i % 10, "s": f"s{i % 4}", "d": Decimal(i) / 4, "day": dt.date(2024, 1, 1 + i % 28),
                "ts": dt.datetime(2024, 3, 1, 0, 0, i % 60), "b": i % 2 == 0}[c]
    data: dict[str, list[Any]] = {"id": list(ids), "p": [i % 2 for i in ids]}
    for c in VALUE_COLUMNS:
        data[c] = [value(i, c) for i in ids]
    return pa.table(data, schema=SCHEMA)


BATCHES = [_rows(range(0, 12), "none"), _rows(range(12, 24), "all"), _rows(range(24, 36), "some")]

FILTERS: list[Any] = [
    [("i", "=", 7)], [("i", "is null")], [("i", "is not null"), ("p", "=", 1)], [("s", "=", "none")],
    [("d", "=", Decimal("3.15"))], [("day", "=", dt.date(2024, 2, 29))], [("b", "=", True), ("i", ">", 5)],
    [("ts", ">", dt.datetime(2024, 1, 1))], [[("i", "=", 7)], [("id", "<", 3)]], [("id", ">=", 12), ("id", "<", 24)],
]


def _check_reads(java: PaimonJava, wh: str, lake: Catalog, name: str) -> None:
    ours = lake.get_table(name)
    assert_same_rows(ours.to_arrow(), java.read(wh, name))
    for flt in FILTERS:
        assert_same_rows(ours.to_arrow(filter=flt), java.read(wh, name, filter=flt))
    assert_same_rows(ours.to_arrow(columns=["id", "s"], filter=[("i", "=", 7)]),
                     java.read(wh, name, projection=["id", "s"], filter=[("i", "=", 7)]))


def _assert_filled(table: pa.Table) -> None:
    """No nulls left in a defaulted column, and the all-null file's rows read as the defaults."""
    for c in VALUE_COLUMNS:
        assert table.column(c).null_count == 0, c
    by_id = {r["id"]: r for r in table.to_pylist()}
    assert {c: by_id[13][c] for c in VALUE_COLUMNS} == FILLED


# value stats prune append files, bitmap indexes too; a deletion-vector table's files above level 0
# are read without a merge, pruned by their value stats
LAYOUTS = {"append": ((), {}), "append-bitmap": ((), {"file-index.bitmap.columns": "i,s"}),
           "pk": (("id",), {}), "pk-dv": (("id",), {"deletion-vectors.enabled": "true"})}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_java_writes_we_read(java: PaimonJava, wh: str, lake: Catalog, layout: str) -> None:
    keys, extra = LAYOUTS[layout]
    opts = {"bucket": "2" if keys else "-1", "metadata.stats-mode": "full", **OPTIONS, **extra}
    java.create_table(wh, "db.t", SCHEMA, primary_keys=[*keys, "p"] if keys else [], partition_keys=["p"],
                      options=opts)
    for batch in BATCHES:
        java.write(wh, "db.t", batch)
    if extra.get("deletion-vectors.enabled"):
        java.compact(wh, "db.t")  # every file above level 0: read file by file, by value stats
    _check_reads(java, wh, lake, "db.t")
    _assert_filled(lake.get_table("db.t").to_arrow())
    # the filter on the default finds the rows of the file whose stats say "all null"
    hits = lake.get_table("db.t").to_arrow(filter=[("i", "=", 7)]).column("id").to_pylist()
    assert set(range(12, 24)) <= set(hits)


@pytest.mark.parametrize("keys", [(), ("id",)], ids=["append", "pk"])
def test_we_write_java_reads(java: PaimonJava, wh: str, lake: Catalog, keys: tuple[str, ...]) -> None:
    t = lake.create_table("db.t", SCHEMA, primary_keys=[*keys, "p"] if keys else [], partition_keys=["p"],
                          options={"bucket": "2" if keys else "-1", **OPTIONS})
    for batch in BATCHES:
        t.write_arrow(batch)
    _check_reads(java, wh, lake, "db.t")
    _assert_filled(java.read(wh, "db.t"))
    # our files keep the nulls (Java's writers do too): without the option, nulls come back
    java.alter_table(wh, "db.t", *({"change": "remove_option", "key": k} for k in OPTIONS))
    plain = lake.get_table("db.t").to_arrow()
    assert plain.column("i").null_count == 12 + 4
    assert_same_rows(plain, java.read(wh, "db.t"))


def test_partial_update_fills_after_the_merge(java: PaimonJava, wh: str, lake: Catalog) -> None:
    """A partial-update row's null means "not updated": the merged row is filled, not each input."""
    opts = {"bucket": "1", "merge-engine": "partial-update", "fields.i.default-value": "-1",
            "fields.s.default-value": "unset"}
    schema = pa.schema([("id", pa.int64()), ("i", pa.int32()), ("s", pa.string())])
    java.create_table(wh, "db.t", schema, primary_keys=["id"], options=opts)
    java.write(wh, "db.t", pa.table({"id": [1, 2, 3], "i": [10, None, None], "s": [None, "b", None]}, schema=schema))
    java.write(wh, "db.t", pa.table({"id": [1, 2], "i": [None, 20], "s": ["a", None]}, schema=schema))
    ours = lake.get_table("db.t")
    assert_same_rows(ours.to_arrow(), java.read(wh, "db.t"))
    assert sorted(ours.to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "i": 10, "s": "a"}, {"id": 2, "i": 20, "s": "b"}, {"id": 3, "i": -1, "s": "unset"}]
    for flt in ([("i", "=", -1)], [("s", "=", "unset")], [("i", "is null")]):
        assert_same_rows(ours.to_arrow(filter=flt), java.read(wh, "db.t", filter=flt))


@pytest.mark.parametrize("writer", ["java", "lake"])
def test_changes_are_filled(java: PaimonJava, wh: str, lake: Catalog, writer: str) -> None:
    """Incremental reads fill every change, deletes and updates included."""
    schema = pa.schema([("id", pa.int64()), ("i", pa.int32()), ("op", pa.string())])
    opts = {"bucket": "1", "fields.i.default-value": "5"}
    steps = [([1, 2, 3], [None, 1, None], "+I"), ([2], [None], "+I"), ([1, 3], [None, None], "-D")]
    if writer == "java":
        java.create_table(wh, "db.t", schema, primary_keys=["id"], options=opts)
        for ids, vals, kind in steps:
            java.write(wh, "db.t", pa.table({"id": ids, "i": vals, "op": [kind] * len(ids)}, schema=schema),
                       kinds=[kind] * len(ids))
    else:
        t = lake.create_table("db.t", schema, primary_keys=["id"], options={**opts, "rowkind.field": "op"})
        for ids, vals, kind in steps:
            t.write_arrow(pa.table({"id": ids, "i": vals, "op": [kind] * len(ids)}, schema=schema))
    t = lake.get_table("db.t")
    for start in range(3):
        ours = t.read_changes(start, start + 1, source="delta")
        assert ours.column("i").null_count == 0
        assert_same_rows(ours, java.read_changes(wh, "db.t", start, start + 1, mode="delta"))


# Odd texts: each is cast by Java (a table per text, a null row read back) and by us.
CASTS: list[tuple[str, str]] = [
    ("INT", "5.9"), ("INT", "-.5"), ("INT", "+12"), ("TINYINT", "-128"), ("BIGINT", "9223372036854775807"),
    ("FLOAT", "0.1"), ("DOUBLE", " 1e3d "), ("DOUBLE", "-Infinity"), ("DECIMAL(5, 2)", "-1.005"),
    ("DECIMAL(38, 10)", "1E+3"), ("BOOLEAN", "T"), ("BOOLEAN", "no"), ("CHAR(4)", "ab"), ("VARCHAR(3)", "abcdef"),
    ("STRING", ""), ("DATE", "19000"), ("DATE", "2024-3"), ("DATE", "2024-01-15 10:00:00"),
    ("DATE", " 2024 - 1 - 5"), ("TIMESTAMP(6)", "2024-1-5 1:2:3.1234567"), ("TIMESTAMP(3)", "2024-01-15"),
    ("TIMESTAMP(9)", "2000-02-29 23:59:59.999999999"), ("BINARY(3)", "a"), ("VARBINARY(2)", "abc"),
]


def test_casts_match_java(java: PaimonJava, wh: str, lake: Catalog) -> None:
    for n, (typ, text) in enumerate(CASTS):
        name = f"db.c{n}"
        java.create_table(wh, name, [("id", "INT"), ("v", typ)], options={"bucket": "-1",
                                                                         "fields.v.default-value": text})
        java.write(wh, name, pa.table({"id": pa.array([1], pa.int32())}))  # v is written as null
        ours = lake.get_table(name).to_arrow()
        theirs = java.read(wh, name)
        assert ours.column("v").null_count == 0, (typ, text)
        assert ours.to_pylist() == theirs.to_pylist(), (typ, text, ours.to_pylist(), theirs.to_pylist())


@pytest.mark.parametrize(("column", "text", "why"), [
    ("i", "seven", "not an integer"), ("day", "2023-02-29", "not a valid DATE"),
    ("b", "maybe", "not a BOOLEAN"), ("id", "1", "primary-key column 'id'"), ("p", "1", "partition column 'p'"),
])
def test_bad_defaults_are_refused_at_create_and_alter(java: PaimonJava, wh: str, lake: Catalog, column: str,
                                                      text: str, why: str) -> None:
    key = f"fields.{column}.default-value"
    with pytest.raises(OptionError, match=rf"Cannot create db\.t: option '{key}'.*{why}"):
        lake.create_table("db.t", SCHEMA, primary_keys=["id", "p"], partition_keys=["p"],
                          options={"bucket": "1", key: text})
    assert not lake.table_exists("db.t")
    with pytest.raises(JavaError):  # Java's SchemaValidation.validateDefaultValues refuses it too
        java.create_table(wh, "db.j", SCHEMA, primary_keys=["id", "p"], partition_keys=["p"],
                          options={"bucket": "1", key: text})
    t = lake.create_table("db.t", SCHEMA, primary_keys=["id", "p"], partition_keys=["p"], options={"bucket": "1"})
    with pytest.raises(OptionError, match=rf"Cannot alter db\.t: option '{key}'.*{why}"):
        t.update_schema().set_option(key, text).commit()
    assert lake.get_table("db.t").schema.id == 0
    with pytest.raises(JavaError):
        java.alter_table(wh, "db.t", {"change": "set_option", "key": key, "value": text})


def test_alter_sets_and_changes_the_default(java: PaimonJava, wh: str, lake: Catalog) -> None:
    t = lake.create_table("db.t", SCHEMA, partition_keys=["p"], options={"bucket": "-1"})
    for batch in BATCHES:
        t.write_arrow(batch)
    assert lake.get_table("db.t").to_arrow().column("i").null_count == 16
    t.update_schema().set_option("fields.i.default-value", "42").commit()  # we set, Java reads
    assert lake.get_table("db.t").to_arrow(filter=[("i", "=", 42)]).num_rows == 16
    assert_same_rows(lake.get_table("db.t").to_arrow(), java.read(wh, "db.t"))
    java.alter_table(wh, "db.t", {"change": "set_option", "key": "fields.i.default-value", "value": "-3"})
    ours = lake.get_table("db.t")  # Java changed it, we read: the same files, the new default
    assert ours.to_arrow(filter=[("i", "=", 42)]).num_rows == 0
    assert ours.to_arrow(filter=[("i", "=", -3)]).num_rows == 16
    assert_same_rows(ours.to_arrow(), java.read(wh, "db.t"))


def test_a_decimal_default_java_casts_to_null(java: PaimonJava, wh: str, lake: Catalog) -> None:
    """Java 0.9 accepts a DECIMAL default with more digits than the precision (``fromBigDecimal``
    gives null, which its validation does not check) and then fills nothing. We refuse to create
    such a table (a default that never applies is a mistake) and read Java's as Java does."""
    opts = {"bucket": "-1", "fields.d.default-value": "1e20"}
    with pytest.raises(OptionError, match=r"'fields\.d\.default-value'.*does not fit DECIMAL\(10, 2\)"):
        lake.create_table("db.t", SCHEMA, options=opts)
    java.create_table(wh, "db.t", SCHEMA, options=opts)
    java.write(wh, "db.t", BATCHES[1])
    ours = lake.get_table("db.t").to_arrow()
    assert ours.column("d").null_count == 12
    assert_same_rows(ours, java.read(wh, "db.t"))


def test_java_reads_our_write_time_defaults(java: PaimonJava, wh: str, lake: Catalog) -> None:
    """A schema field's ``defaultValue`` (Paimon 1.3's write-time default, set here as a 1.3 writer
    would) is filled into the rows we write; Java 0.9 ignores the field but reads the values the
    files hold, so both read the same rows - older rows keep their nulls in both."""
    schema = pa.schema([("id", pa.int64()), ("v", pa.int32()), ("d", pa.decimal128(10, 2))])
    t = lake.create_table("db.t", schema, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1], "v": [None], "d": [None]}, schema=schema))
    path = Path(wh) / "db.db" / "t" / "schema" / "schema-0"
    text = json.loads(path.read_text())
    for f in text["fields"]:
        f["defaultValue"] = {"v": "5", "d": "'1.255'"}.get(f["name"])
    path.write_text(json.dumps({**text, "fields": [{k: v for k, v in f.items() if v is not None}
                                                   for f in text["fields"]]}))
    lake.get_table("db.t").write_arrow(pa.table({"id": [2, 3], "v": [None, 1], "d": [None, None]}, schema=schema))
    ours = lake.get_table("db.t").to_arrow()
    assert sorted(ours.to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "v": None, "d": None}, {"id": 2, "v": 5, "d": Decimal("1.26")},
        {"id": 3, "v": 1, "d": Decimal("1.26")}]
    assert_same_rows(ours, java.read(wh, "db.t"))
