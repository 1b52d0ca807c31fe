"""The four places where lake_assets disagreed with Paimon Java 0.9, checked against real Java.

Each case runs twice: Java writes the table and both engines read it, and lake_assets writes the
table and both engines read it. The expected values are what Java reads from its own table.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import OptionError
from tests.java.oracle import JavaError, PaimonJava

from .helpers import assert_same_rows

WRITERS = ["java", "lake"]


def _create(java: PaimonJava, lake: Catalog, wh: str, writer: str, name: str, schema: pa.Schema,
            primary_keys: list[str], options: dict[str, str], partition_keys: tuple[str, ...] = ()) -> None:
    if writer == "java":
        java.create_table(wh, name, schema, primary_keys=primary_keys, partition_keys=partition_keys,
                          options=options)
    else:
        lake.create_table(name, schema, primary_keys=primary_keys, partition_keys=list(partition_keys),
                          options=options)


def _write(java: PaimonJava, lake: Catalog, wh: str, writer: str, name: str, data: pa.Table,
           overwrite: bool = False) -> None:
    kinds = data.column("op").to_pylist() if "op" in data.column_names else None
    if writer == "java":
        java.write(wh, name, data, kinds=kinds, overwrite=overwrite or None)
    else:
        lake.get_table(name).write_arrow(data, overwrite=overwrite)


def _both_read(java: PaimonJava, lake: Catalog, wh: str, name: str, expected: list[dict[str, Any]],
               columns: list[str]) -> None:
    schema = lake.get_table(name).arrow_schema
    want = pa.Table.from_pylist(expected, schema=pa.schema([schema.field(c) for c in columns]))
    assert_same_rows(java.read(wh, name, projection=columns), want, columns)
    assert_same_rows(lake.get_table(name).to_arrow(columns=columns), want, columns)


def _kinds(snapshots: list[Any]) -> list[str]:
    if snapshots and isinstance(snapshots[0], dict):
        return [s["commitKind"] for s in sorted(snapshots, key=lambda s: s["id"])]
    return [s.commit_kind.value for s in snapshots]


# ---------------------------------------------------------------------------------------------
# 1. aggregation: a commit whose only record of a key is a retraction

AGG = pa.schema([pa.field("k", pa.int64(), nullable=False), ("s", pa.int64()), ("p", pa.int64()),
                 ("lnn", pa.string()), ("op", pa.string())])
AGG_OPTIONS = {
    "bucket": "1", "rowkind.field": "op", "merge-engine": "aggregation",
    "fields.s.aggregate-function": "sum", "fields.p.aggregate-function": "product",
    "fields.lnn.aggregate-function": "last_non_null_value",
}


@pytest.mark.parametrize("write_only", ["true", "false"])
@pytest.mark.parametrize("writer", WRITERS)
def test_aggregation_lone_retraction(java: PaimonJava, lake: Catalog, wh: str, writer: str, write_only: str):
    _create(java, lake, wh, writer, "db.agg", AGG, ["k"], {**AGG_OPTIONS, "write-only": write_only})
    _write(java, lake, wh, writer, "db.agg", pa.table(
        {"k": [1, 2], "s": [10, 5], "p": [6, 5], "lnn": ["a", "x"], "op": ["+I", "+I"]}, schema=AGG))
    # key 1: a lone -U; key 3: a lone -U of a key never inserted
    _write(java, lake, wh, writer, "db.agg", pa.table(
        {"k": [1, 3], "s": [3, 1], "p": [2, 1], "lnn": ["b", "y"], "op": ["-U", "-U"]}, schema=AGG))
    expected = [{"k": 1, "s": 7, "p": 3, "lnn": None}, {"k": 2, "s": 5, "p": 5, "lnn": "x"}]
    _both_read(java, lake, wh, "db.agg", expected, ["k", "s", "p", "lnn"])
    lake.get_table("db.agg").compact(full=True)
    _both_read(java, lake, wh, "db.agg", expected, ["k", "s", "p", "lnn"])


PU = pa.schema([pa.field("k", pa.int64(), nullable=False), ("g", pa.int64()), ("a", pa.int64()),
                ("b", pa.string()), ("op", pa.string())])


@pytest.mark.parametrize("case", ["remove-record-on-delete", "sequence-group"])
@pytest.mark.parametrize("writer", WRITERS)
def test_partial_update_lone_retraction(java: PaimonJava, lake: Catalog, wh: str, writer: str, case: str):
    options = {"bucket": "1", "rowkind.field": "op", "merge-engine": "partial-update", "write-only": "true"}
    if case == "remove-record-on-delete":
        options["partial-update.remove-record-on-delete"] = "true"
        retract = {"k": [1], "g": [None], "a": [None], "b": [None], "op": ["-D"]}
        expected = [{"k": 2, "g": 1, "a": 5, "b": "y"}]
    else:
        options.update({"fields.g.sequence-group": "a", "fields.a.aggregate-function": "sum"})
        retract = {"k": [1], "g": [2], "a": [4], "b": [None], "op": ["-U"]}
        expected = [{"k": 1, "g": 2, "a": 6, "b": "x"}, {"k": 2, "g": 1, "a": 5, "b": "y"}]
    _create(java, lake, wh, writer, "db.pu", PU, ["k"], options)
    _write(java, lake, wh, writer, "db.pu", pa.table(
        {"k": [1, 2], "g": [1, 1], "a": [10, 5], "b": ["x", "y"], "op": ["+I", "+I"]}, schema=PU))
    _write(java, lake, wh, writer, "db.pu", pa.table(retract, schema=PU))
    _both_read(java, lake, wh, "db.pu", expected, ["k", "g", "a", "b"])
    lake.get_table("db.pu").compact(full=True)
    _both_read(java, lake, wh, "db.pu", expected, ["k", "g", "a", "b"])


# ---------------------------------------------------------------------------------------------
# 2. inline compaction's changelog (lookup; full-compaction with delta-commits)

KV = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()), ("op", pa.string())])


@pytest.mark.parametrize("producer", [
    {"changelog-producer": "lookup"},
    {"changelog-producer": "full-compaction", "full-compaction.delta-commits": "1"},
], ids=["lookup", "full-compaction"])
@pytest.mark.parametrize("writer", WRITERS)
def test_inline_compaction_changelog(java: PaimonJava, lake: Catalog, wh: str, writer: str, producer: dict):
    options = {"bucket": "1", "rowkind.field": "op", **producer}
    _create(java, lake, wh, writer, "db.cl", KV, ["k"], options)
    commits = [pa.table({"k": [1, 2], "v": ["a", "b"], "op": ["+I", "+I"]}, schema=KV),
               pa.table({"k": [1, 2], "v": ["c", "b"], "op": ["+U", "-D"]}, schema=KV)]
    first = None
    if writer == "java":
        # Flink's sink: one writer across commits; with full-compaction.delta-commits its
        # GlobalFullCompactionSinkWrite asks for a full compaction before the commit that is due
        with java.open_writer(wh, "db.cl") as w:
            for i, data in enumerate(commits, start=1):
                w.write(data, kinds=data.column("op").to_pylist())
                if "full-compaction.delta-commits" in producer:
                    w.compact(full=True)
                w.commit(i, wait_compaction=True)
                first = first or lake.get_table("db.cl").latest_snapshot().id
    else:
        for data in commits:
            lake.get_table("db.cl").write_arrow(data)
            first = first or lake.get_table("db.cl").latest_snapshot().id
    table = lake.get_table("db.cl")
    last = table.latest_snapshot().id
    # Java's writer: an APPEND with the new files, then a COMPACT carrying the changelog
    assert _kinds(table.snapshots()) == ["APPEND", "COMPACT", "APPEND", "COMPACT"]
    assert _kinds(java.snapshots(wh, "db.cl")) == ["APPEND", "COMPACT", "APPEND", "COMPACT"]
    want = pa.table({"k": [1, 1, 2], "v": ["a", "c", "b"], "op": ["+U", "+U", "-D"],
                     "_row_kind": ["-U", "+U", "-D"]})
    cols = ["k", "v", "_row_kind"]
    assert_same_rows(java.read_changes(wh, "db.cl", first, last, mode="changelog"), want, cols)
    assert_same_rows(table.read_changes(first, last, source="changelog"), want, cols)


# ---------------------------------------------------------------------------------------------
# 3. first-row: visible at once, unless write-only

FR = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])


@pytest.mark.parametrize("writer", WRITERS)
def test_first_row_visibility(java: PaimonJava, lake: Catalog, wh: str, writer: str):
    _create(java, lake, wh, writer, "db.fr", FR, ["k"], {"bucket": "1", "merge-engine": "first-row"})
    _write(java, lake, wh, writer, "db.fr", pa.table({"k": [1, 2], "v": ["a", "b"]}, schema=FR))
    _both_read(java, lake, wh, "db.fr", [{"k": 1, "v": "a"}, {"k": 2, "v": "b"}], ["k", "v"])
    _write(java, lake, wh, writer, "db.fr", pa.table({"k": [2, 3], "v": ["x", "c"]}, schema=FR))
    _both_read(java, lake, wh, "db.fr", [{"k": 1, "v": "a"}, {"k": 2, "v": "b"}, {"k": 3, "v": "c"}], ["k", "v"])


@pytest.mark.parametrize("writer", WRITERS)
def test_first_row_write_only_waits_for_compaction(java: PaimonJava, lake: Catalog, wh: str, writer: str):
    _create(java, lake, wh, writer, "db.fr", FR, ["k"],
            {"bucket": "1", "merge-engine": "first-row", "write-only": "true"})
    _write(java, lake, wh, writer, "db.fr", pa.table({"k": [1], "v": ["a"]}, schema=FR))
    _both_read(java, lake, wh, "db.fr", [], ["k", "v"])
    lake.get_table("db.fr").compact()
    _both_read(java, lake, wh, "db.fr", [{"k": 1, "v": "a"}], ["k", "v"])


# ---------------------------------------------------------------------------------------------
# 4. overwrite=True on a partitioned table

PART = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                  ("v", pa.string())])


@pytest.mark.parametrize("dynamic", [None, "false"], ids=["default", "static"])
@pytest.mark.parametrize("pk", [True, False], ids=["pk", "append"])
@pytest.mark.parametrize("writer", WRITERS)
def test_overwrite_without_partition(java: PaimonJava, lake: Catalog, wh: str, writer: str, pk: bool,
                                     dynamic: str | None):
    options = {"bucket": "1"} if pk else {"bucket": "-1"}
    if dynamic is not None:
        options["dynamic-partition-overwrite"] = dynamic
    _create(java, lake, wh, writer, "db.p", PART, ["k", "dt"] if pk else [], options, ("dt",))
    _write(java, lake, wh, writer, "db.p", pa.table({"k": [1, 2], "dt": ["d1", "d2"], "v": ["a", "b"]}, schema=PART))
    _write(java, lake, wh, writer, "db.p", pa.table({"k": [3], "dt": ["d2"], "v": ["c"]}, schema=PART),
           overwrite=True)
    expected = [{"k": 3, "dt": "d2", "v": "c"}]
    if dynamic is None:
        expected.insert(0, {"k": 1, "dt": "d1", "v": "a"})
    _both_read(java, lake, wh, "db.p", expected, ["k", "dt", "v"])


# ---------------------------------------------------------------------------------------------
# Option values: what Java's writer accepts


def test_file_compression_spelling(java: PaimonJava, lake: Catalog, wh: str):
    data = pa.table({"k": [1], "v": ["a"], "op": ["+I"]}, schema=KV)
    java.create_table(wh, "db.none", KV, primary_keys=["k"], options={"bucket": "1", "file.compression": "none"})
    with pytest.raises(JavaError):
        java.write(wh, "db.none", data)
    with pytest.raises(OptionError, match="uncompressed"):
        lake.create_table("db.none2", KV, primary_keys=["k"], options={"bucket": "1", "file.compression": "none"})
    lake.create_table("db.unc", KV, primary_keys=["k"], options={"bucket": "1", "file.compression": "uncompressed"})
    lake.get_table("db.unc").write_arrow(data)
    java.write(wh, "db.unc", pa.table({"k": [2], "v": ["b"], "op": ["+I"]}, schema=KV))
    _both_read(java, lake, wh, "db.unc", [{"k": 1, "v": "a"}, {"k": 2, "v": "b"}], ["k", "v"])


@pytest.mark.parametrize("writer", WRITERS)
def test_lz4_raw_tables_cross_engines(java: PaimonJava, lake: Catalog, wh: str, writer: str):
    _create(java, lake, wh, writer, "db.lz", KV, ["k"], {"bucket": "1", "file.compression": "lz4_raw"})
    _write(java, lake, wh, writer, "db.lz", pa.table({"k": [1], "v": ["a"], "op": ["+I"]}, schema=KV))
    other = "lake" if writer == "java" else "java"
    _write(java, lake, wh, other, "db.lz", pa.table({"k": [2], "v": ["b"], "op": ["+I"]}, schema=KV))
    _both_read(java, lake, wh, "db.lz", [{"k": 1, "v": "a"}, {"k": 2, "v": "b"}], ["k", "v"])


def test_java_cannot_read_brotli(java: PaimonJava, lake: Catalog, wh: str):
    """Why lake_assets refuses file.compression=brotli: Java can neither write nor read it."""
    java.create_table(wh, "db.br", KV, primary_keys=["k"], options={"bucket": "1", "file.compression": "brotli"})
    with pytest.raises(JavaError) as err:
        java.write(wh, "db.br", pa.table({"k": [1], "v": ["a"], "op": ["+I"]}, schema=KV))
    assert err.value.mentions("BrotliCodec")


@pytest.mark.parametrize("writer", WRITERS)
def test_overwrite_of_a_lookup_table(java: PaimonJava, lake: Catalog, wh: str, writer: str):
    """Java's overwrite writer ignores the previous files (they are not compacted with the new
    rows), and its commit carries no changelog: an OVERWRITE and a COMPACT without changes."""
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                        ("v", pa.string())])
    _create(java, lake, wh, writer, "db.ol", schema, ["k", "dt"],
            {"bucket": "1", "changelog-producer": "lookup"}, ("dt",))
    _write(java, lake, wh, writer, "db.ol", pa.table({"k": [1, 2], "dt": ["d1", "d2"], "v": ["x", "y"]}, schema=schema))
    before = lake.get_table("db.ol").latest_snapshot().id
    _write(java, lake, wh, writer, "db.ol", pa.table({"k": [1, 3], "dt": ["d1", "d1"], "v": ["z", "w"]}, schema=schema),
           overwrite=True)
    table = lake.get_table("db.ol")
    last = table.latest_snapshot().id
    assert _kinds(table.snapshots())[-2:] == ["OVERWRITE", "COMPACT"]
    _both_read(java, lake, wh, "db.ol", [{"k": 1, "dt": "d1", "v": "z"}, {"k": 2, "dt": "d2", "v": "y"},
                                         {"k": 3, "dt": "d1", "v": "w"}], ["k", "dt", "v"])
    assert java.read_changes(wh, "db.ol", before, last, mode="changelog").num_rows == 0
    assert table.read_changes(before, last, source="changelog").num_rows == 0
    assert [s.changelog_manifest_list for s in table.snapshots()[-2:]] == [None, None]
