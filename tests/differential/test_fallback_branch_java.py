"""``scan.fallback-branch`` reads, against Paimon Java 0.9 (``FallbackReadFileStoreTable``).

Java builds the table once, as Paimon's own ``BranchSqlITCase.testFallbackBranchBatchRead``: a
partitioned primary-key table with partition 1 on the main branch, an empty branch ``fb`` that
gets partitions 1 and 2, and ``scan.fallback-branch = fb`` set on main. A batch read of main takes
partition 1 from main and partition 2 from ``fb``: the core's reads and the Spark source read the
rows Java reads, latest, filtered and by snapshot id; then our writes (to main, which then has
partition 2 itself, and to the branch) and Java agrees again. Streams and change reads stay
refused (0.9's streaming reads ignore the fallback), and a fallback whose columns differ is an
error in both.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import SchemaError, UnsupportedFeatureError
from tests.java.oracle import JavaError, PaimonJava

from .helpers import assert_same_rows

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SCHEMA = pa.schema([pa.field("pt", pa.int32(), nullable=False), pa.field("k", pa.int32(), nullable=False),
                    ("v", pa.string())])
IDENT = "db.t"
FB = f"{IDENT}$branch_fb"


def rows(pt: int, kv: dict[int, str]) -> pa.Table:
    return pa.table({"pt": [pt] * len(kv), "k": list(kv), "v": list(kv.values())}, schema=SCHEMA)


MAIN_1 = rows(1, {10: "apple", 20: "banana"})
FB_1 = rows(1, {20: "cat", 30: "dog"})
FB_2 = rows(2, {10: "tiger", 20: "wolf"})


def _fallback(java: PaimonJava, wh: Path, ident: str, branch: str) -> None:
    java.alter_table(str(wh), ident, {"change": "set_option", "key": "scan.fallback-branch", "value": branch})


def _second_schema(java: PaimonJava, wh: Path, branch_ident: str) -> None:
    """Give the (empty) fallback branch a schema 1 with the same fields. Paimon 0.9 reads the main
    branch's primary-key files with the fallback's reader, which looks their schema id up in the
    fallback branch (1.x reads each split with its own branch's reader, apache/paimon#5665): a file
    main writes under its schema 1 (after the ALTER that sets the fallback) fails Java 0.9's read
    unless the fallback has a schema 1 too. lake_assets reads each split with its own branch's."""
    java.alter_table(str(wh), branch_ident, {"change": "set_option", "key": "snapshot.num-retained.max", "value": "50"})


@pytest.fixture(scope="module")
def base(java: PaimonJava, tmp_path_factory: pytest.TempPathFactory) -> Path:
    wh = tmp_path_factory.mktemp("fallback_branch") / "wh"
    w = str(wh)
    java.create_table(w, IDENT, SCHEMA, primary_keys=["pt", "k"], partition_keys=["pt"], options={"bucket": "2"})
    java.write(w, IDENT, MAIN_1)  # main's 1
    java.create_branch(w, IDENT, "fb")  # empty: main's latest schema
    _second_schema(java, wh, FB)
    java.write(w, FB, FB_1)  # fb's 1
    java.write(w, FB, FB_2)  # fb's 2
    _fallback(java, wh, IDENT, "fb")
    return wh


def _copy(base: Path, tmp_path: Path) -> Path:
    wh = tmp_path / "wh"
    shutil.copytree(base, wh)
    return wh


def test_reads_take_missing_partitions_from_the_fallback_as_java(java: PaimonJava, base: Path) -> None:
    w = str(base)
    t = Catalog(w).get_table(IDENT)
    expected = pa.concat_tables([MAIN_1, FB_2])
    assert_same_rows(java.read(w, IDENT), expected)
    assert_same_rows(t.to_arrow(), expected)
    assert_same_rows(pa.Table.from_batches(list(t.to_batches(batch_size=1))), expected)
    for pt, want in ((1, MAIN_1), (2, FB_2)):
        flt = [("pt", "=", pt)]
        assert_same_rows(java.read(w, IDENT, filter=flt), want)
        assert_same_rows(t.to_arrow(filter=flt), want)
    assert_same_rows(t.to_arrow(columns=["v", "pt"]), expected.select(["v", "pt"]))
    # the branch itself reads its own rows only (its schema carries no fallback)
    assert_same_rows(Catalog(w).get_table(FB).to_arrow(), pa.concat_tables([FB_1, FB_2]))


def test_a_value_filter_does_not_move_a_partition_to_the_fallback(java: PaimonJava, base: Path) -> None:
    """Paimon 0.9 decided which partitions main has from the splits left after the filter, so a
    filter that prunes main's files of partition 1 (v = 'dog' is outside its files' v range) read
    partition 1 from the fallback; Paimon 1.x decides by main's files alone (apache/paimon#7388).
    Java 0.9 predates the fix: we read as 1.x."""
    w = str(base)
    flt = [("v", "=", "dog")]
    assert_same_rows(java.read(w, IDENT, filter=flt), rows(1, {30: "dog"}))  # 0.9's behaviour
    assert Catalog(w).get_table(IDENT).to_arrow(filter=flt).num_rows == 0
    tiger = [("v", "=", "tiger")]  # a partition main lacks: both read it from the fallback
    assert_same_rows(Catalog(w).get_table(IDENT).to_arrow(filter=tiger), java.read(w, IDENT, filter=tiger))


def test_time_travel_by_snapshot_id_takes_the_fallbacks_snapshot_of_that_time(
        java: PaimonJava, base: Path, tmp_path: Path) -> None:
    wh = _copy(base, tmp_path)
    w = str(wh)
    t = Catalog(w).get_table(IDENT)
    t.write_arrow(rows(1, {40: "pear"}))  # main's 2: after fb's snapshots
    for sid in (1, 2):
        assert_same_rows(t.to_arrow(snapshot_id=sid), java.read(w, IDENT, snapshot_id=sid))
        ms = t.snapshot(sid).time_millis  # by time: each branch's snapshot of that time
        assert_same_rows(t.to_arrow(timestamp=ms), java.read(w, IDENT, timestamp_millis=ms))
    assert t.to_arrow(snapshot_id=1).num_rows == 2  # fb's snapshot 1 has partition 1 only: main's
    t.create_tag("x", 1)
    with pytest.raises(UnsupportedFeatureError, match=r"as of tag 'x'.*scan\.fallback-branch"):
        t.to_arrow(tag="x")


def test_our_writes_then_reads_agree_with_java(java: PaimonJava, base: Path, tmp_path: Path, spark) -> None:  # type: ignore[no-untyped-def]
    from lake_assets.spark import read_table, register

    register(spark)
    wh = _copy(base, tmp_path)
    w = str(wh)
    Catalog(w).get_table(FB).write_arrow(rows(3, {1: "owl"}))  # the fallback gets partition 3
    Catalog(w).get_table(IDENT).write_arrow(rows(2, {99: "lion"}))  # main now has partition 2 itself
    expected = pa.concat_tables([MAIN_1, rows(2, {99: "lion"}), rows(3, {1: "owl"})])
    assert_same_rows(java.read(w, IDENT), expected)
    assert_same_rows(Catalog(w).get_table(IDENT).to_arrow(), expected)

    def spark_rows(df) -> pa.Table:  # type: ignore[no-untyped-def]
        return pa.Table.from_pylist([r.asDict() for r in df.collect()], schema=SCHEMA)

    source = spark.read.format("lake").option("warehouse", w)
    assert_same_rows(spark_rows(source.load(IDENT)), expected)
    assert_same_rows(spark_rows(read_table(spark, w, IDENT)), expected)
    assert_same_rows(spark_rows(source.option("filter", '[["pt", "=", 3]]').load(IDENT)), rows(3, {1: "owl"}))
    assert_same_rows(spark_rows(spark.read.format("lake").option("warehouse", w).option("snapshot-id", "1")
                                .load(IDENT)), java.read(w, IDENT, snapshot_id=1))


def test_a_table_without_partitions_reads_the_fallback_while_it_is_empty(java: PaimonJava, tmp_path: Path) -> None:
    w = str(tmp_path / "wh")
    schema = pa.schema([pa.field("k", pa.int32(), nullable=False), ("v", pa.string())])
    java.create_table(w, "db.u", schema, primary_keys=["k"], options={"bucket": "1"})
    java.create_branch(w, "db.u", "fb")
    _second_schema(java, tmp_path / "wh", "db.u$branch_fb")
    java.write(w, "db.u$branch_fb", pa.table({"k": [1], "v": ["fb"]}, schema=schema))
    _fallback(java, tmp_path / "wh", "db.u", "fb")
    t = Catalog(w).get_table("db.u")
    assert t.latest_snapshot() is None or t.latest_snapshot().id == 1  # the ALTER commits no snapshot
    assert_same_rows(t.to_arrow(), java.read(w, "db.u"))
    assert t.to_arrow().column("v").to_pylist() == ["fb"]
    t.write_arrow(pa.table({"k": [2], "v": ["main"]}, schema=schema))
    assert_same_rows(Catalog(w).get_table("db.u").to_arrow(), java.read(w, "db.u"))
    assert Catalog(w).get_table("db.u").to_arrow().column("v").to_pylist() == ["main"]


def test_streams_changes_and_different_columns_are_refused(java: PaimonJava, base: Path, tmp_path: Path) -> None:
    wh = _copy(base, tmp_path)
    w = str(wh)
    t = Catalog(w).get_table(IDENT)
    for read in (lambda: t.read_changes(0, 1), lambda: t.stream()):
        with pytest.raises(UnsupportedFeatureError, match=r"scan\.fallback-branch = 'fb'"):
            read()
    java.alter_table(w, FB, {"change": "add_column", "name": "v2", "type": pa.int32()})
    with pytest.raises(JavaError) as theirs:
        java.read(w, IDENT)
    assert theirs.value.mentions("does not have the same row type")
    with pytest.raises(SchemaError, match=r"Cannot read db\.t: it and its fallback branch 'fb' .* same row type"):
        Catalog(w).get_table(IDENT).to_arrow()
