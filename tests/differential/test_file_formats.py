"""ORC and Avro data files against Paimon Java 0.9: Java writes them and we read them exactly, we
write them and Java reads them exactly, a table whose file.format changed holds files of every
kind at once, and compaction, expiry and orphan removal handle them. The manifests' column
statistics of our files are the ones Java writes for the same rows."""

from __future__ import annotations

import datetime
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog, InvalidDataError
from lake_assets.spec.binary_row import deserialize_row
from lake_assets.table import Table
from tests.java.oracle import PaimonJava

from .data import ALL_TYPES, all_types_table
from .helpers import assert_same_rows, assert_same_table, compare_every_snapshot

FORMATS = ["orc", "avro"]


# TIMESTAMP(6) values of ALL_TYPES an ORC file we write cannot hold (test_orc_refuses_timestamps_*),
# and what ORC tests write instead. Not within the second before 1970 either: ORC Java's writer
# stores those one second late (Java 0.9 reads its own 1969-12-31 23:59:59.999 back as
# 1970-01-01 00:00:00.999; ours it reads exactly), so Java's files would not hold the rows.
_ORC_TS6 = {
    datetime.datetime(1, 1, 1): datetime.datetime(1677, 9, 22),
    datetime.datetime(1969, 12, 31, 23, 59, 59, 999999): datetime.datetime(1969, 12, 31, 23, 59, 58, 999000),
}


def format_data(fmt: str) -> pa.Table:
    """ALL_TYPES rows; for ORC without the TIMESTAMP(6) values outside what pyarrow's ORC files
    carry to Java and back (see `_ORC_TS6`)."""
    data = all_types_table()
    if fmt != "orc":
        return data
    i = data.schema.get_field_index("ts6")
    ts6 = [_ORC_TS6.get(v, v) for v in data.column("ts6").to_pylist()]
    return data.set_column(i, data.schema.field(i), pa.array(ts6, pa.timestamp("us")))


def files_of(wh: str, name: str) -> list[Path]:
    return sorted(p for p in (Path(wh) / "db.db" / name).rglob("data-*") if p.is_file())


def extensions(wh: str, name: str) -> set[str]:
    return {p.suffix for p in files_of(wh, name)}


def options(fmt: str, pk: bool) -> dict[str, str]:
    return {"bucket": "2" if pk else "-1", "file.format": fmt}


@pytest.mark.parametrize("pk", [True, False], ids=["pk", "append"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_java_writes_we_read_exactly_and_maintain(java: PaimonJava, wh: str, lake: Catalog, fmt: str,
                                                  pk: bool) -> None:
    name = f"{fmt}_{'pk' if pk else 'append'}"
    ident = f"db.{name}"
    data = format_data(fmt)
    java.create_table(wh, ident, ALL_TYPES, primary_keys=["id"] if pk else [], options=options(fmt, pk))
    java.write(wh, ident, data)
    java.write(wh, ident, data.slice(0, 3))
    if pk:
        java.write(wh, ident, data.slice(3, 2), kinds=["-D", "-D"])
    assert extensions(wh, name) == {f".{fmt}"}
    t = lake.get_table(ident)
    compare_every_snapshot(java, wh, ident, t)
    assert_same_rows(t.to_arrow(), java.read(wh, ident))

    # our compaction rewrites Java's files into the table's format; Java reads the result (append
    # tables compact small files from compaction.min.file-num on: write enough of them)
    for _ in range(0 if pk else 4):
        java.write(wh, ident, data.slice(6))
    assert t.refresh().compact(full=True).snapshot_id is not None
    t = t.refresh()
    assert_same_table(t.to_arrow(), java.read(wh, ident))
    t.expire_snapshots(retain_min=1, retain_max=1, older_than=timedelta(0))
    assert t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True).paths == []
    assert_same_table(t.to_arrow(), java.read(wh, ident))
    # and Java goes on writing on top of our files
    java.write(wh, ident, data.slice(5))
    assert_same_table(t.refresh().to_arrow(), java.read(wh, ident))


@pytest.mark.parametrize("pk", [True, False], ids=["pk", "append"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_we_write_java_reads_exactly(java: PaimonJava, wh: str, lake: Catalog, fmt: str, pk: bool) -> None:
    name = f"ours_{fmt}_{'pk' if pk else 'append'}"
    ident = f"db.{name}"
    data = format_data(fmt)
    t = lake.create_table(ident, ALL_TYPES, primary_keys=["id"] if pk else [], options=options(fmt, pk))
    t.write_arrow(data)
    t.write_arrow(data.slice(0, 3))
    assert extensions(wh, name) == {f".{fmt}"}
    compare_every_snapshot(java, wh, ident, t)
    # Java compacts our files and we read its output (Java's writer compacts bucket-unaware append
    # tables only in a dedicated job the oracle does not run)
    if pk:
        java.compact(wh, ident, full=True)
    assert_same_table(t.refresh().to_arrow(), java.read(wh, ident))
    t.write_arrow(data.slice(4))
    java.write(wh, ident, data.slice(1, 2))
    assert_same_table(t.refresh().to_arrow(), java.read(wh, ident))


def _stats(table: Table) -> list[dict[str, object]]:
    """Per file (in key order of the first key): value stats min, max and null counts, decoded."""
    types = [f.type for f in table.schema.fields]
    out = []
    for e in table.store.file_store_scan().live_entries(table.latest_snapshot()):
        s = e.file.value_stats
        out.append({"min": deserialize_row(s.min_values, types), "max": deserialize_row(s.max_values, types),
                    "nulls": s.null_counts, "rows": e.file.row_count, "key_min": e.file.min_key,
                    "key_max": e.file.max_key, "deletes": e.file.delete_row_count})
    return sorted(out, key=lambda d: (d["key_min"], d["rows"]))  # type: ignore[arg-type,return-value]


# Where our statistics deliberately differ from Java's for the same rows: FLOAT/DOUBLE columns
# holding NaN, where Java's ORC writer records NaN as min and max and its Avro stats collector
# orders NaN by Float.compare; we write no bounds (the file is always read), as Java does for Parquet.
_NAN_COLUMNS = {"f32", "f64"}


@pytest.mark.parametrize("fmt", FORMATS)
def test_manifest_stats_are_javas(java: PaimonJava, wh: str, lake: Catalog, fmt: str) -> None:
    data = format_data(fmt)
    for who in ("java", "ours"):
        ident = f"db.{who}"
        if who == "java":
            java.create_table(wh, ident, ALL_TYPES, primary_keys=["id"], options=options(fmt, True))
            java.write(wh, ident, data)
        else:
            lake.create_table(ident, ALL_TYPES, primary_keys=["id"], options=options(fmt, True)).write_arrow(data)
    theirs, ours = _stats(lake.get_table("db.java")), _stats(lake.get_table("db.ours"))
    assert len(theirs) == len(ours) == 2
    names = ALL_TYPES.names
    for j, o in zip(theirs, ours, strict=True):
        assert (o["rows"], o["key_min"], o["key_max"], o["nulls"], o["deletes"]) == (
            j["rows"], j["key_min"], j["key_max"], j["nulls"], j["deletes"])
        for bound in ("min", "max"):
            for col, jv, ov in zip(names, j[bound], o[bound], strict=True):  # type: ignore[call-overload]
                if col in _NAN_COLUMNS and ov is None:
                    continue
                assert ov == jv, (bound, col, jv, ov)


def test_table_whose_format_changed_holds_every_kind(java: PaimonJava, wh: str, lake: Catalog) -> None:
    """Parquet, then ORC, then Avro: each file is read as its own format (Paimon decides per file),
    by both engines, through compaction, expiry and orphan removal."""
    ident = "db.switch"
    data = format_data("orc")  # every file must hold rows ORC can too
    java.create_table(wh, ident, ALL_TYPES, primary_keys=["id"], options=options("parquet", True))
    java.write(wh, ident, data.slice(0, 3))
    t = lake.get_table(ident)
    t.write_arrow(data.slice(2, 2))
    java.alter_table(wh, ident, {"change": "set_option", "key": "file.format", "value": "orc"})
    java.write(wh, ident, data.slice(4, 2))
    t = t.refresh()
    t.write_arrow(data.slice(0, 1))
    t.update_schema().set_option("file.format", "avro").commit()
    t = t.refresh()
    t.write_arrow(data.slice(6))
    java.write(wh, ident, data.slice(1, 1))
    assert extensions(wh, "switch") == {".parquet", ".orc", ".avro"}
    compare_every_snapshot(java, wh, ident, t)
    assert_same_rows(t.to_arrow(), data)

    t.create_tag("mixed")
    t.compact(full=True)
    t = t.refresh()
    assert_same_table(t.to_arrow(), java.read(wh, ident))
    t.expire_snapshots(retain_min=1, retain_max=1, older_than=timedelta(0))
    assert t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True).paths == []
    # the tag keeps the files of every format it references; both engines still read it
    assert {".parquet", ".orc", ".avro"} <= extensions(wh, "switch")
    assert_same_table(t.to_arrow(tag="mixed"), java.read(wh, ident, tag="mixed"))
    assert_same_table(t.to_arrow(), java.read(wh, ident))
    t.delete_tag("mixed")
    t.expire_snapshots(retain_min=1, retain_max=1, older_than=timedelta(0))
    t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    assert_same_table(t.to_arrow(), java.read(wh, ident))
    assert_same_rows(t.to_arrow(), data)


@pytest.mark.parametrize(("value", "why"), [
    # pyarrow reads ORC timestamps as nanoseconds: a file we could not read back
    (datetime.datetime(1, 1, 1), r"outside 1677-09-21\.\.2262-04-11"),
    # ORC's C++ writer encodes these so that Paimon Java's ORC reader fails on the file
    (datetime.datetime(1960, 6, 1, 12, 0, 0, 1), r"before 1970 with a fraction finer than a millisecond"),
])
def test_orc_refuses_timestamps_not_every_reader_reads(java: PaimonJava, lake: Catalog, wh: str,
                                                        value: datetime.datetime, why: str) -> None:
    """The write fails before committing and leaves no file behind; the same rows in Avro round-trip."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("ts", pa.timestamp("us"))])
    rows = pa.table({"id": [1, 2], "ts": pa.array([datetime.datetime(2024, 1, 1), value], pa.timestamp("us"))})
    t = lake.create_table("db.ts", schema, primary_keys=["id"], options=options("orc", True))
    with pytest.raises(InvalidDataError, match=rf"Column ts holds a timestamp {why}"):
        t.write_arrow(rows)
    assert files_of(wh, "ts") == [] and t.latest_snapshot() is None
    a = lake.create_table("db.ts_avro", schema, primary_keys=["id"], options=options("avro", True))
    a.write_arrow(rows)
    assert_same_table(java.read(wh, "db.ts_avro"), rows.cast(java.read(wh, "db.ts_avro").schema))


@pytest.mark.parametrize("fmt", FORMATS)
def test_changelog_files_are_written_in_the_tables_format(java: PaimonJava, wh: str, lake: Catalog,
                                                          fmt: str) -> None:
    """The lookup changelog producer writes changelog files in the table's format (Java's default
    when changelog-file.format is unset); Java reads our changes as we do."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = lake.create_table("db.cl", schema, primary_keys=["id"],
                          options={"bucket": "1", "file.format": fmt, "changelog-producer": "lookup"})
    t.write_arrow(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=schema))
    t.write_arrow(pa.table({"id": [1, 4], "v": ["x", "d"]}, schema=schema))
    changelogs = sorted(p for p in (Path(wh) / "db.db" / "cl").rglob("changelog-*") if p.is_file())
    assert changelogs and {p.suffix for p in changelogs} == {f".{fmt}"}
    latest = t.latest_snapshot().id
    ours = t.read_changes(0, latest)
    # snapshot by snapshot: Java 0.9's read over several snapshots drops changes (test_changelog_producers)
    theirs = pa.concat_tables([java.read_changes(wh, "db.cl", s - 1, s) for s in range(1, latest + 1)])
    assert_same_rows(ours.select(theirs.column_names), theirs)
    assert sorted(ours.column("_row_kind").to_pylist()) == ["+I", "+I", "+I", "+I", "+U", "-U"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_deletion_vectors_on_orc_and_avro_files(java: PaimonJava, wh: str, lake: Catalog, fmt: str) -> None:
    """Deletion vectors mark row positions of a file: the same in every format, both engines."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = lake.create_table("db.dv", schema, primary_keys=["id"],
                          options={"bucket": "1", "file.format": fmt, "deletion-vectors.enabled": "true"})
    t.write_arrow(pa.table({"id": list(range(20)), "v": [f"a{i}" for i in range(20)]}, schema=schema))
    t.compact(full=True)
    t.write_arrow(pa.table({"id": list(range(0, 20, 3)), "v": [f"b{i}" for i in range(0, 20, 3)]}, schema=schema))
    t = t.refresh()
    t.compact()
    t = t.refresh()
    assert t.latest_snapshot().index_manifest is not None
    expected = {i: (f"b{i}" if i % 3 == 0 else f"a{i}") for i in range(20)}
    assert {r["id"]: r["v"] for r in t.to_arrow().to_pylist()} == expected
    assert_same_table(t.to_arrow(), java.read(wh, "db.dv"))
    java.write(wh, "db.dv", pa.table({"id": [1], "v": ["j1"]}, schema=schema))
    java.compact(wh, "db.dv", full=False)
    assert_same_table(t.refresh().to_arrow(), java.read(wh, "db.dv"))
