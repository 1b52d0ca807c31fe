"""Writes, updates, deletes, overwrites and reads through the public Table API."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

from lake_assets import Catalog, CommitKind, SchemaError
from tests.conftest import rows


def _orders(ids, dts, names, amounts, ops):
    return pa.table({"id": ids, "dt": dts, "name": names, "amount": amounts, "op": ops})


def test_upsert_and_delete_merge_on_read(orders):
    s1 = orders.write_arrow(
        _orders([1, 2, 3, 4, 5, 6], ["d1"] * 4 + ["d2"] * 2, list("abcdef"), [1.0, 2, 3, 4, 5, 6], ["+I"] * 6)
    )
    s2 = orders.write_arrow(
        _orders([2, 3, 3, 7, 4], ["d1"] * 5, ["b2", "c", "c3", "g", "d"], [20.0, 3, 30, 7, 4],
                ["+U", "-U", "+U", "+I", "-D"])
    )
    assert (s1, s2) == (1, 2)
    got = rows(orders.to_arrow(), "dt", "id")
    assert [(r["id"], r["name"]) for r in got] == [(1, "a"), (2, "b2"), (3, "c3"), (7, "g"), (5, "e"), (6, "f")]
    # time travel to the first snapshot still sees the original rows
    assert rows(orders.to_arrow(snapshot_id=1), "dt", "id")[3]["name"] == "d"
    snaps = orders.snapshots()
    assert [s.commit_kind for s in snaps] == [CommitKind.APPEND, CommitKind.APPEND]
    # -U and +U of id 3 merge in the write buffer: 4 rows written, as pypaimon does (vector 02)
    assert snaps[-1].total_record_count == 10 and snaps[-1].delta_record_count == 4


def test_duplicate_keys_in_one_batch_last_wins(orders):
    orders.write_arrow(_orders([1, 1, 1], ["d1"] * 3, ["x", "y", "z"], [1.0, 2.0, 3.0], ["+I"] * 3))
    assert orders.to_arrow().column("name").to_pylist() == ["z"]


def test_delete_only_commit_hides_key_and_writes_delete_count(orders):
    orders.write_arrow(_orders([1, 2], ["d1", "d1"], ["a", "b"], [1.0, 2.0], ["+I", "+I"]))
    orders.write_arrow(_orders([1], ["d1"], [None], [None], ["-D"]))
    assert orders.to_arrow().column("id").to_pylist() == [2]
    entries = orders.store.file_store_scan().delta_entries(orders.latest_snapshot())
    # Readers take single-file sections raw when the delete count is 0: it must be exact.
    assert [e.file.delete_row_count for e in entries] == [1]


def test_projection_filter_and_partition_pruning(orders):
    orders.write_arrow(_orders(list(range(10)), ["d1"] * 5 + ["d2"] * 5, list("abcdefghij"),
                               [float(i) for i in range(10)], ["+I"] * 10))
    got = orders.to_arrow(columns=["name"], filter=[("dt", "=", "d2"), ("amount", ">", 7.0)])
    assert got.schema.names == ["name"]
    assert sorted(got.column("name").to_pylist()) == ["i", "j"]
    assert all(s.partition_values == ("d2",) for s in orders.plan(filter=[("dt", "=", "d2")]))
    # an equality on the whole bucket key reads one bucket only
    plan = orders.plan(filter=[("id", "=", 3), ("dt", "=", "d1")])
    assert len(plan) == 1
    assert orders.to_arrow(filter=[("id", "=", 3), ("dt", "=", "d1")]).column("name").to_pylist() == ["d"]
    # OR of ANDs
    got = orders.to_arrow(filter=[[("id", "=", 0)], [("id", "=", 9)]])
    assert sorted(got.column("id").to_pylist()) == [0, 9]


def test_to_batches_streams_same_rows(orders):
    orders.write_arrow(_orders(list(range(100)), ["d1"] * 100, ["n"] * 100, [0.0] * 100, ["+I"] * 100))
    batches = list(orders.to_batches())
    assert sum(b.num_rows for b in batches) == 100
    assert pa.Table.from_batches(batches).sort_by("id").equals(orders.to_arrow().sort_by("id"))


def test_overwrite_partition_and_whole_table(orders):
    orders.write_arrow(_orders([1, 2, 3], ["d1", "d1", "d2"], list("abc"), [1.0, 2, 3], ["+I"] * 3))
    orders.write_arrow(_orders([9], ["d1"], ["z"], [9.0], ["+I"]), overwrite={"dt": "d1"})
    assert rows(orders.to_arrow(), "dt", "id") == [
        {"id": 9, "dt": "d1", "name": "z", "amount": 9.0, "op": "+I"},
        {"id": 3, "dt": "d2", "name": "c", "amount": 3.0, "op": "+I"},
    ]
    assert orders.latest_snapshot().commit_kind == CommitKind.OVERWRITE
    with pytest.raises(SchemaError, match="outside the overwritten"):
        orders.write_arrow(_orders([5], ["d2"], ["q"], [1.0], ["+I"]), overwrite={"dt": "d1"})
    with pytest.raises(SchemaError, match="not a partition key"):
        orders.write_arrow(_orders([5], ["d2"], ["q"], [1.0], ["+I"]), overwrite={"name": "x"})
    before = orders.latest_snapshot().id
    with pytest.raises(SchemaError, match="is not a string"):  # no Arrow integer holds it
        orders.write_arrow(_orders([5], ["d1"], ["q"], [1.0], ["+I"]), overwrite={"dt": 2**70})
    assert orders.latest_snapshot().id == before
    # dynamic-partition-overwrite (Paimon's default): only the partitions the data has rows in
    orders.write_arrow(_orders([4, 8], ["d3", "d2"], ["w", "y"], [4.0, 8.0], ["+I"] * 2), overwrite=True)
    assert sorted(orders.to_arrow().column("id").to_pylist()) == [4, 8, 9]


def test_append_table_all_types_roundtrip(catalog: Catalog):
    schema = pa.schema(
        [
            ("i8", pa.int8()), ("i16", pa.int16()), ("i32", pa.int32()), ("i64", pa.int64()),
            ("f32", pa.float32()), ("f64", pa.float64()), ("b", pa.bool_()), ("s", pa.string()),
            ("bin", pa.binary()), ("d", pa.date32()), ("dec", pa.decimal128(10, 2)),
            ("bigdec", pa.decimal128(30, 5)), ("ts3", pa.timestamp("ms")), ("ts6", pa.timestamp("us")),
            ("ltz", pa.timestamp("us", tz="UTC")), ("arr", pa.list_(pa.int32())),
            ("st", pa.struct([("x", pa.int32()), ("y", pa.string())])),
        ]
    )
    t = catalog.create_table("db.all_types", schema)
    data = pa.table(
        {
            "i8": [1, None], "i16": [2, -2], "i32": [3, 3], "i64": [2**40, None], "f32": [1.5, None],
            "f64": [2.25, float("nan")], "b": [True, None], "s": ["héllo", None], "bin": [b"\x00\x01", None],
            "d": [dt.date(2024, 1, 1), None], "dec": [decimal.Decimal("1.25"), None],
            "bigdec": [decimal.Decimal("-12345678901234567890.12345"), None],
            "ts3": [dt.datetime(2024, 1, 1, 12, 0, 0, 123000), None],
            "ts6": [dt.datetime(2024, 1, 1, 12, 0, 0, 123456), None],
            "ltz": [dt.datetime(2024, 1, 1, tzinfo=dt.UTC), None],
            "arr": [[1, 2], None], "st": [{"x": 1, "y": "a"}, None],
        },
        schema=schema,
    )
    t.write_arrow(data)
    got = t.to_arrow()
    assert got.schema == schema
    assert got.slice(0, 1).to_pylist() == data.slice(0, 1).to_pylist()
    assert got.column("s").to_pylist() == ["héllo", None]


def test_append_rolls_files_at_target_size(catalog: Catalog):
    t = catalog.create_table("db.roll", pa.schema([("x", pa.int64()), ("s", pa.string())]),
                             options={"target-file-size": "64 kb"})
    n = 300_000
    import numpy as np

    data = pa.table({"x": np.arange(n), "s": pa.array([f"value-{i}" for i in range(n)])})
    t.write_arrow(data)
    files = [e.file for e in t.store.file_store_scan().live_entries(t.latest_snapshot())]
    assert len(files) > 3
    assert sum(f.row_count for f in files) == n
    assert t.to_arrow().sort_by("x").equals(data)


def test_empty_write_creates_no_snapshot(orders):
    assert orders.write_arrow(orders.arrow_schema.empty_table()) is None
    assert orders.latest_snapshot() is None
    assert orders.to_arrow().num_rows == 0


def test_record_batch_reader_input(orders):
    data = _orders([1, 2], ["d1", "d1"], ["a", "b"], [1.0, 2.0], ["+I", "+I"])
    reader = pa.RecordBatchReader.from_batches(data.schema, data.to_batches(max_chunksize=1))
    orders.write_arrow(reader)
    assert orders.to_arrow().num_rows == 2


def test_sequence_field_orders_updates(catalog: Catalog):
    t = catalog.create_table(
        "db.seq", pa.schema([("k", pa.int32()), ("v", pa.string()), ("ts", pa.int64())]),
        primary_keys=["k"], options={"bucket": "1", "sequence.field": "ts"},
    )
    t.write_arrow(pa.table({"k": [1], "v": ["new"], "ts": [10]}, schema=t.arrow_schema))
    t.write_arrow(pa.table({"k": [1], "v": ["late-but-old"], "ts": [5]}, schema=t.arrow_schema))
    assert t.to_arrow().column("v").to_pylist() == ["new"]


def test_composite_string_key_and_bucket_key(catalog: Catalog):
    t = catalog.create_table(
        "db.comp", pa.schema([("k", pa.string()), ("n", pa.int32()), ("v", pa.int64())]),
        primary_keys=["k", "n"], options={"bucket": "3", "bucket-key": "k"},
    )
    t.write_arrow(pa.table({"k": ["a", "a", "a-much-longer-key-string"], "n": [1, 2, 1], "v": [1, 2, 3]},
                           schema=t.arrow_schema))
    t.write_arrow(pa.table({"k": ["a"], "n": [2], "v": [20]}, schema=t.arrow_schema))
    assert rows(t.to_arrow(), "k", "n") == [
        {"k": "a", "n": 1, "v": 1}, {"k": "a", "n": 2, "v": 20}, {"k": "a-much-longer-key-string", "n": 1, "v": 3}
    ]
    # bucket-key = k: both rows of k = "a" are hashed on k alone, so they share one bucket
    from lake_assets.ops.read import SplitReader

    reader = SplitReader(t.store, t.schema)
    buckets_of_a = {sp.bucket for sp in t.plan() for part in reader.read_split(sp)
                    if "a" in part.column("k").to_pylist()}
    assert len(buckets_of_a) == 1


def test_write_on_memory_filesystem():
    cat = Catalog("memory://wh-test")
    cat.create_database("db")
    t = cat.create_table("db.t", pa.schema([("k", pa.int64()), ("v", pa.string())]),
                         primary_keys=["k"], options={"bucket": "2"})
    t.write_arrow(pa.table({"k": [1, 2], "v": ["a", "b"]}, schema=t.arrow_schema))
    t.write_arrow(pa.table({"k": [2], "v": ["b2"]}, schema=t.arrow_schema))
    assert rows(cat.get_table("db.t").to_arrow(), "k") == [{"k": 1, "v": "a"}, {"k": 2, "v": "b2"}]
    cat.drop_table("db.t")


def test_large_batch_is_routed_in_slices_within_the_write_buffer(catalog: Catalog):
    import numpy as np

    t = catalog.create_table("db.slices", pa.schema([("k", pa.int64()), ("v", pa.string())]), primary_keys=["k"],
                             options={"bucket": "2", "write-buffer-size": "1 mb", "write-only": "true",
                                      "write-buffer-spillable": "false"})  # count flushed level-0 files
    n = 200_000
    keys = np.arange(n)[::-1].copy()
    data = pa.table({"k": keys, "v": pa.array([f"value-{i:08d}" for i in range(n)])})
    data = pa.concat_tables([data, data.slice(0, 10).set_column(1, "v", pa.array(["late"] * 10))])
    t.write_arrow(data)
    files = [f for sp in t.plan() for f in sp.files]
    assert len(files) > 2  # the buffer flushed several times
    got = t.to_arrow().sort_by("k")
    assert got.num_rows == n
    assert got.column("v")[n - 1].as_py() == "late"  # the later duplicate in the same batch wins
