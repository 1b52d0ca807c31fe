"""Compatibility with Apache Paimon's own Python reader/writer (pypaimon), both ways."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

from lake_assets import Catalog
from tests.interop.paimon import canonical, canonical_json, copy_vector_warehouse, load_vector_expected

pytestmark = pytest.mark.interop


def _same(ours: pa.Table, theirs: pa.Table, keys: list[str]) -> None:
    assert ours.schema.names == theirs.schema.names
    assert canonical(ours, keys) == canonical(theirs, keys)


def test_pypaimon_reads_our_append_table(pypaimon, tmp_warehouse):
    cat = Catalog(tmp_warehouse)
    cat.create_database("db")
    schema = pa.schema([
        ("id", pa.int32()), ("big", pa.int64()), ("name", pa.string()), ("amount", pa.float64()),
        ("flag", pa.bool_()), ("d", pa.date32()), ("price", pa.decimal128(10, 2)), ("ts", pa.timestamp("ms")),
        ("ts6", pa.timestamp("us")), ("small", pa.int16()), ("tiny", pa.int8()), ("f", pa.float32()),
        ("bin", pa.binary()),
    ])
    t = cat.create_table("db.app", schema)
    data = pa.table({
        "id": [1, 2, 3], "big": [10, None, 2**50], "name": ["a", None, "ü-long-string-value"],
        "amount": [1.5, 2.5, None], "flag": [True, False, None],
        "d": [dt.date(2024, 1, 1), None, dt.date(1969, 12, 31)],
        "price": [decimal.Decimal("1.20"), decimal.Decimal("-3.45"), None],
        "ts": [dt.datetime(2024, 1, 1, 12, 0, 0, 123000), None, dt.datetime(1999, 1, 1)],
        "ts6": [dt.datetime(2024, 1, 1, 12, 0, 0, 123456), None, dt.datetime(2000, 1, 1)],
        "small": [1, -1, None], "tiny": [1, None, -128], "f": [0.5, None, 1.0], "bin": [b"\x00", None, b"xyz"],
    }, schema=schema)
    t.write_arrow(data)
    t.write_arrow(data.slice(0, 1))
    theirs = pypaimon.read(tmp_warehouse, "db.app")
    assert theirs.num_rows == 4
    _same(t.to_arrow(), theirs, ["id"])


def test_pypaimon_reads_our_pk_table_after_updates_deletes_and_overwrite(pypaimon, tmp_warehouse):
    cat = Catalog(tmp_warehouse)
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("name", pa.string()), ("op", pa.string())])
    t = cat.create_table("db.pk", schema, primary_keys=["id", "dt"], partition_keys=["dt"],
                         options={"bucket": "2", "rowkind.field": "op"})
    t.write_arrow(pa.table({"id": list(range(8)), "dt": ["d1"] * 4 + ["d 2:x"] * 4, "name": list("abcdefgh"),
                            "op": ["+I"] * 8}, schema=schema))
    t.write_arrow(pa.table({"id": [1, 2, 5, 9], "dt": ["d1", "d1", "d 2:x", "d1"], "name": ["B", None, "F", "J"],
                            "op": ["+U", "-D", "-D", "+I"]}, schema=schema))
    # a bucket whose only new file holds just a delete: needs the exact _DELETE_ROW_COUNT
    t.write_arrow(pa.table({"id": [3], "dt": ["d1"], "name": [None], "op": ["-D"]}, schema=schema))
    _same(t.to_arrow(), pypaimon.read(tmp_warehouse, "db.pk"), ["dt", "id"])
    for sid in (1, 2):
        _same(t.to_arrow(snapshot_id=sid), pypaimon.read(tmp_warehouse, "db.pk", snapshot_id=sid), ["dt", "id"])
    t.write_arrow(pa.table({"id": [100], "dt": ["d1"], "name": ["new"], "op": ["+I"]}, schema=schema),
                  overwrite={"dt": "d1"})
    theirs = pypaimon.read(tmp_warehouse, "db.pk")
    _same(t.to_arrow(), theirs, ["dt", "id"])
    assert sorted(theirs.column("id").to_pylist()) == [4, 6, 7, 100]


def test_pypaimon_reads_our_composite_string_keys(pypaimon, tmp_warehouse):
    cat = Catalog(tmp_warehouse)
    cat.create_database("db")
    schema = pa.schema([("k", pa.string()), ("n", pa.int32()), ("v", pa.string()), ("x", pa.int64())])
    t = cat.create_table("db.comp", schema, primary_keys=["k", "n"], options={"bucket": "3"})
    keys = ["", "a", "short", "a-much-longer-key-string", "ключ", "emoji-😀-key"]
    t.write_arrow(pa.table({"k": keys * 2, "n": [1] * 6 + [-5] * 6, "v": [f"v{i}" for i in range(12)],
                            "x": list(range(12))}, schema=schema))
    t.write_arrow(pa.table({"k": ["a", "ключ"], "n": [1, -5], "v": ["upd", "upd2"], "x": [100, 200]},
                           schema=schema))
    _same(t.to_arrow(), pypaimon.read(tmp_warehouse, "db.comp"), ["k", "n"])
    # equality filters prune buckets with the hash: pypaimon would miss rows if our buckets were wrong
    theirs = pypaimon.read(tmp_warehouse, "db.comp")
    assert theirs.num_rows == 12


@pytest.mark.parametrize(
    ("vector", "identifier", "keys"),
    [
        ("01_append", "db.t", ["id"]),
        ("02_pk_partitioned", "db.pk", ["dt", "id"]),
        ("03_pk_composite", "db.comp", ["k", "n"]),
    ],
)
def test_we_read_pypaimon_vectors(tmp_path, vector, identifier, keys):
    wh = copy_vector_warehouse(vector, tmp_path / "wh")
    expected = load_vector_expected(vector)
    got = Catalog(wh).get_table(identifier).to_arrow()
    assert [str(f) for f in got.schema] == expected["arrow_schema"]
    assert canonical_json(got, keys) == expected["rows"]


def test_we_time_travel_in_pypaimon_vector(tmp_path):
    wh = copy_vector_warehouse("02_pk_partitioned", tmp_path / "wh")
    expected = load_vector_expected("02_pk_partitioned", "expected_snapshot_1.json")
    got = Catalog(wh).get_table("db.pk").to_arrow(snapshot_id=1)
    assert canonical_json(got, ["dt", "id"]) == expected["rows"]


def test_we_read_and_extend_tables_pypaimon_writes(pypaimon, tmp_warehouse):
    schema = pa.schema([("region", pa.string()), ("user", pa.int64()), ("dt", pa.date32()),
                        ("score", pa.float64()), ("op", pa.string())])
    pypaimon.create_table(tmp_warehouse, "db.ev", schema, primary_keys=["region", "user", "dt"],
                          partition_keys=["dt"], options={"bucket": "3", "rowkind.field": "op"})
    d1, d2 = dt.date(2024, 3, 1), dt.date(2024, 3, 2)
    pypaimon.write(tmp_warehouse, "db.ev", pa.table({
        "region": ["eu", "us", "eu", "apac"], "user": [1, 2, 3, 4], "dt": [d1, d1, d2, d2],
        "score": [1.0, 2.0, 3.0, 4.0], "op": ["+I"] * 4}, schema=schema))
    pypaimon.write(tmp_warehouse, "db.ev", pa.table({
        "region": ["eu", "us"], "user": [1, 2], "dt": [d1, d1], "score": [10.0, None], "op": ["+U", "-D"]},
        schema=schema))
    t = Catalog(tmp_warehouse).get_table("db.ev")
    _same(t.to_arrow(), pypaimon.read(tmp_warehouse, "db.ev"), ["region", "user"])
    # we continue writing their table (same buckets, sequence numbers continue), they read it back
    t.write_arrow(pa.table({"region": ["eu", "apac"], "user": [1, 5], "dt": [d1, d2], "score": [11.0, 5.0],
                            "op": ["+U", "+I"]}, schema=t.arrow_schema))
    theirs = pypaimon.read(tmp_warehouse, "db.ev")
    _same(t.to_arrow(), theirs, ["region", "user"])
    assert sorted(theirs.column("score").to_pylist()) == [3.0, 4.0, 5.0, 11.0]


def test_pypaimon_reads_our_tables_after_compaction_and_expiry(pypaimon, tmp_warehouse):
    from datetime import datetime, timedelta

    import numpy as np

    cat = Catalog(tmp_warehouse)
    cat.create_database("db")
    schema = pa.schema([("k", pa.int64()), ("v", pa.int64()), ("op", pa.string())])
    t = cat.create_table("db.maint", schema, primary_keys=["k"],
                         options={"bucket": "2", "rowkind.field": "op", "write-only": "true"})
    rng = np.random.default_rng(4)
    for i in range(7):
        ks = rng.integers(0, 300, size=120)
        ops = rng.choice(["+I", "-D"], size=120, p=[0.8, 0.2])
        t.write_arrow(pa.table({"k": ks, "v": np.full(120, i), "op": ops}, schema=schema))
    t.create_tag("before-compaction")
    t.compact()
    _same(t.to_arrow(), pypaimon.read(tmp_warehouse, "db.maint"), ["k"])
    t.write_arrow(pa.table({"k": [1, 2], "v": [100, 100], "op": ["+I", "-D"]}, schema=schema))
    t.compact(full=True)
    t.expire_snapshots(retain_min=2, older_than=datetime.now() + timedelta(days=1))
    assert len(t.snapshots()) == 2
    _same(t.to_arrow(), pypaimon.read(tmp_warehouse, "db.maint"), ["k"])
    _same(t.to_arrow(tag="before-compaction"), pypaimon.read(tmp_warehouse, "db.maint", tag="before-compaction"),
          ["k"])
    t2 = cat.create_table("db.app_c", pa.schema([("x", pa.int64())]), options={"compaction.min.file-num": "2"})
    for i in range(4):
        t2.write_arrow(pa.table({"x": [i, i + 10]}))
    assert t2.compact().files_out == 1
    _same(t2.to_arrow(), pypaimon.read(tmp_warehouse, "db.app_c"), ["x"])


def test_pypaimon_reads_our_table_with_long_lived_changelogs(pypaimon, tmp_warehouse):
    """Decoupled changelog retention leaves changelog/changelog-<id> files and extra manifests;
    Paimon's reader must still see exactly the latest state."""
    from datetime import datetime, timedelta

    cat = Catalog(tmp_warehouse)
    cat.create_database("db")
    schema = pa.schema([("k", pa.int64()), ("v", pa.int64()), ("op", pa.string())])
    t = cat.create_table("db.cl", schema, primary_keys=["k"],
                         options={"bucket": "2", "rowkind.field": "op", "changelog-producer": "input",
                                  "changelog.num-retained.min": "20"})
    for i in range(6):
        t.write_arrow(pa.table({"k": [i, i + 1, 50], "v": [i] * 3, "op": ["+I", "+U", "-D" if i % 2 else "+I"]},
                               schema=schema))
    t.expire_snapshots(retain_min=1, older_than=datetime.now() + timedelta(days=1))
    latest = t.latest_snapshot().id
    assert len(t.snapshots()) == 1 and t.store.changelog_manager().ids() == list(range(1, latest))
    _same(t.to_arrow(), pypaimon.read(tmp_warehouse, "db.cl"), ["k"])


@pytest.mark.parametrize(
    ("vector", "identifier", "keys"),
    [("04_partial_update", "db.pu", ["id"]), ("05_aggregation", "db.agg", ["id"])],
)
def test_we_read_pypaimon_engine_vectors(tmp_path, vector, identifier, keys):
    wh = copy_vector_warehouse(vector, tmp_path / "wh")
    cat = Catalog(wh)
    ident = identifier if cat.table_exists(identifier) else f"db.{cat.list_tables('db')[0]}"
    expected = load_vector_expected(vector)
    got = cat.get_table(ident).to_arrow()
    assert canonical_json(got, [expected["columns"][0]]) == expected["rows"]


def test_pypaimon_reads_our_engine_tables_and_tags(pypaimon, tmp_warehouse):
    cat = Catalog(tmp_warehouse)
    cat.create_database("db")
    pu = cat.create_table("db.pu", pa.schema([("id", pa.int64()), ("a", pa.string()), ("b", pa.int64())]),
                          primary_keys=["id"], options={"bucket": "2", "merge-engine": "partial-update",
                                                        "write-only": "true"})
    pu.write_arrow(pa.table({"id": [1, 2, 3], "a": ["x", None, "z"], "b": [None, 2, 3]}, schema=pu.arrow_schema))
    pu.write_arrow(pa.table({"id": [1, 2], "a": [None, "y"], "b": [10, None]}, schema=pu.arrow_schema))
    pu.create_tag("t1")
    pu.write_arrow(pa.table({"id": [3], "a": ["z2"], "b": [None]}, schema=pu.arrow_schema))
    _same(pu.to_arrow(), pypaimon.read(tmp_warehouse, "db.pu"), ["id"])
    _same(pu.to_arrow(tag="t1"), pypaimon.read(tmp_warehouse, "db.pu", tag="t1"), ["id"])
    agg = cat.create_table("db.agg", pa.schema([("id", pa.int64()), ("s", pa.int64()), ("m", pa.float64()),
                                                ("l", pa.string())]),
                           primary_keys=["id"], options={"bucket": "2", "merge-engine": "aggregation",
                                                         "fields.s.aggregate-function": "sum",
                                                         "fields.m.aggregate-function": "max",
                                                         "write-only": "true"})
    for i in range(3):
        agg.write_arrow(pa.table({"id": [1, 2, i + 3], "s": [i, 10, 1], "m": [float(i), 1.0, None],
                                  "l": [f"v{i}", None, "q"]}, schema=agg.arrow_schema))
    _same(agg.to_arrow(), pypaimon.read(tmp_warehouse, "db.agg"), ["id"])
    agg.compact(full=True)
    _same(agg.to_arrow(), pypaimon.read(tmp_warehouse, "db.agg"), ["id"])
