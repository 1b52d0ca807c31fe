"""``bucket-function.type`` ``mod`` and ``hive`` both ways with pypaimon-rust 0.4 and pypaimon 2.1.

pypaimon-rust 0.4 implements both functions (``crates/paimon/src/table/bucket_function.rs``, a port of
Paimon HEAD's ``ModBucketFunction`` / ``HiveBucketFunction``): the same rows written by it and by us
land in the same bucket, row for row; it reads our tables, its filtered queries included; we read
its tables (filters pruning buckets by the function) and compact them. pypaimon 2.1 implements
neither (its fixed-bucket writer hashes with the default function whatever the table says, and its
postpone writer refuses them), so it only reads ours (it prunes no bucket of a non-default table).
Paimon Java 0.9 predates both functions; `tests/unit/test_bucket_function.py` holds HEAD's vectors.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_assets import Catalog, Table
from lake_assets.lsm.bucket import assign_buckets

from .paimon import Pypaimon, PypaimonRust, canonical

ROWS = 240
BUCKETS = 7


def _data(case: str) -> tuple[pa.Table, list[str], str]:
    """Rows (unique keys, a row id ``v``), the key columns and the SQL column list of a case."""
    rng = np.random.default_rng(len(case))
    v = pa.array(np.arange(ROWS, dtype=np.int64))
    if case == "mod-bigint":
        k = rng.choice(np.arange(-(2**40), 2**40, 2**27), ROWS, replace=False).astype(np.int64)
        cols = {"k": pa.array(k)}
        sql = "k BIGINT"
    elif case == "mod-int":
        k = rng.choice(np.arange(-(2**31), 2**31 - 1, 2**20), ROWS, replace=False).astype(np.int32)
        cols = {"k": pa.array(k)}
        sql = "k INT"
    elif case == "hive-string":
        words = ["", "é", "hello", "日本語のキー", "longer than seven bytes", "x" * 70]
        cols = {"k": pa.array([f"{words[i % len(words)]}-{i}" if i else "" for i in range(ROWS)])}
        sql = "k STRING"
    else:  # hive-mixed: every type both implement, in one key
        i = np.arange(ROWS)
        cols = {
            "b": pa.array(i % 2 == 0),
            "ti": pa.array((i % 250 - 125).astype(np.int8)),
            "si": pa.array((i * 131 - 30000).astype(np.int16)),
            "l": pa.array(rng.integers(-(2**62), 2**62, ROWS)),
            "f": pa.array((rng.standard_normal(ROWS) * 1e3).astype(np.float32)),
            "d": pa.array(rng.standard_normal(ROWS) * 1e9),
            "dec": pa.array([Decimal(int(x)).scaleb(-4) for x in rng.integers(-(10**9), 10**9, ROWS)],
                            pa.decimal128(10, 4)),
            "wdec": pa.array([Decimal(int(x) * 10**12 + j).scaleb(-6) for j, x in
                              enumerate(rng.integers(-(10**11), 10**11, ROWS))], pa.decimal128(30, 6)),
            "bin": pa.array([bytes([j % 256, 255 - j % 256]) * (j % 5) for j in range(ROWS)]),
            "dt": pa.array([dt.date(1960, 1, 1) + dt.timedelta(days=int(x)) for x in rng.integers(0, 40000, ROWS)]),
        }
        sql = ("b BOOLEAN, ti TINYINT, si SMALLINT, l BIGINT, f FLOAT, d DOUBLE, dec DECIMAL(10, 4), "
               "wdec DECIMAL(30, 6), bin BYTEA, dt DATE")
    keys = list(cols)
    fields = [pa.field(name, col.type, nullable=False) for name, col in cols.items()]
    schema = pa.schema([*fields, pa.field("v", pa.int64())])
    return pa.Table.from_arrays([*cols.values(), v], schema=schema), keys, sql


CASES = [("mod", "mod-bigint"), ("mod", "mod-int"), ("hive", "hive-string"), ("hive", "hive-mixed")]


def _rust_table(rust: PypaimonRust, wh: str, function: str, sql: str, keys: list[str]) -> None:
    rust.sql(wh, "CREATE SCHEMA paimon.db",
             f"CREATE TABLE paimon.db.t ({sql}, v BIGINT, PRIMARY KEY ({', '.join(keys)})) "
             f"WITH ('bucket' = '{BUCKETS}', 'bucket-function.type' = '{function}')")


def _placement(t: Table) -> dict[int, int]:
    """Each row id's bucket, from the live data file holding it."""
    placed: dict[int, int] = {}
    for split in t.plan():
        bucket_dir = Path(t.store.bucket_dir(split.partition, split.bucket))
        for f in split.files:
            for v in pq.read_table(bucket_dir / f.file_name, columns=["v"]).column("v").to_pylist():
                placed[v] = split.bucket
    return placed


def _expected(data: pa.Table, keys: list[str], function: str, t: Table) -> list[int]:
    return assign_buckets([data.column(k) for k in keys], t.schema.types(keys), BUCKETS, function).tolist()


@pytest.mark.parametrize(("function", "case"), CASES)
def test_same_bucket_for_every_row_both_ways(rust: PypaimonRust, tmp_path: Path, function: str, case: str) -> None:
    data, keys, sql = _data(case)
    theirs_wh, ours_wh = str(tmp_path / "theirs"), str(tmp_path / "ours")
    _rust_table(rust, theirs_wh, function, sql, keys)
    rust.write_batch(theirs_wh, "db.t", data)
    cat = Catalog(ours_wh)
    cat.create_database("db")
    ours = cat.create_table("db.t", data.schema, primary_keys=keys,
                            options={"bucket": str(BUCKETS), "bucket-function.type": function})
    ours.write_arrow(data)
    theirs = Catalog(theirs_wh).get_table("db.t")
    want = _expected(data, keys, function, theirs)
    assert len(set(want)) > 1  # the rows spread: a constant bucket would prove nothing
    placed_theirs, placed_ours = _placement(theirs), _placement(ours)
    assert [placed_theirs[v] for v in range(ROWS)] == want
    assert [placed_ours[v] for v in range(ROWS)] == want
    # pypaimon-rust reads ours whole, and its filtered query finds each key it looks up
    assert sorted(r["v"] for r in rust.query(ours_wh, "SELECT v FROM paimon.db.t")) == list(range(ROWS))
    if case != "hive-mixed":  # one SQL literal per key type
        rows = data.to_pylist()
        for v in range(0, ROWS, 37):
            literal = f"'{rows[v]['k']}'" if case == "hive-string" else str(rows[v]["k"])
            got = rust.query(ours_wh, f"SELECT v FROM paimon.db.t WHERE k = {literal}")
            assert [r["v"] for r in got] == [v]


@pytest.mark.parametrize(("function", "case"), CASES)
def test_we_read_filter_and_compact_theirs(rust: PypaimonRust, tmp_path: Path, function: str, case: str) -> None:
    data, keys, sql = _data(case)
    wh = str(tmp_path / "wh")
    _rust_table(rust, wh, function, sql, keys)
    half = ROWS // 2
    rust.write_batch(wh, "db.t", data.slice(0, half))
    rust.write_batch(wh, "db.t", data.slice(half))
    t = Catalog(wh).get_table("db.t")
    assert canonical(t.to_arrow(), ["v"]) == canonical(data, ["v"])
    rows = data.to_pylist()
    for v in range(0, ROWS, 29):
        flt = [(k, "=", rows[v][k]) for k in keys]
        splits = t.plan(filter=flt)
        assert len(splits) == 1  # pruned to the key's bucket by the table's function
        assert t.to_arrow(filter=flt).column("v").to_pylist() == [v]
    t.compact(full=True)
    t = Catalog(wh).get_table("db.t")
    assert [_placement(t)[v] for v in range(ROWS)] == _expected(data, keys, function, t)
    assert sorted(r["v"] for r in rust.query(wh, "SELECT v FROM paimon.db.t")) == list(range(ROWS))


@pytest.mark.parametrize("function", ["mod", "hive"])
def test_nullable_bucket_keys_of_their_append_tables(rust: PypaimonRust, tmp_path: Path, function: str) -> None:
    # append tables: the bucket key may hold nulls (a null is hashed as 0 / the zeroed slot); we read
    # such tables, and our writes into them place rows as pypaimon-rust does
    wh = str(tmp_path / "wh")
    cols = "a BIGINT" if function == "mod" else "a BIGINT, s STRING"
    key = "a" if function == "mod" else "a,s"
    rust.sql(wh, "CREATE SCHEMA paimon.db",
             f"CREATE TABLE paimon.db.t ({cols}, v BIGINT) WITH ('bucket' = '{BUCKETS}', 'bucket-key' = '{key}', "
             f"'bucket-function.type' = '{function}')")
    a = [None if i % 4 == 0 else i * 7919 - 500 for i in range(60)]
    columns: dict[str, Any] = {"a": pa.array(a, pa.int64())}
    if function == "hive":
        columns["s"] = pa.array([None if i % 3 == 0 else f"s{i}é" for i in range(60)])
    columns["v"] = pa.array(range(60), pa.int64())
    data = pa.table(columns)
    rust.write_batch(wh, "db.t", data)
    t = Catalog(wh).get_table("db.t")
    keys = key.split(",")
    want = assign_buckets([data.column(k) for k in keys], t.schema.types(keys), BUCKETS, function).tolist()
    assert [_placement(t)[v] for v in range(60)] == want
    assert want[0] == 0  # row 0's key is all nulls: mod reads the zeroed slot, hive hashes nulls as 0
    ours = data.set_column(data.schema.get_field_index("v"), "v", pa.array(range(60, 120), pa.int64()))
    t.write_arrow(ours)
    placed = _placement(t.refresh())
    assert [placed[v] for v in range(60, 120)] == want
    assert sorted(r["v"] for r in rust.query(wh, "SELECT v FROM paimon.db.t")) == list(range(120))


@pytest.mark.parametrize(("function", "case"), [("mod", "mod-bigint"), ("hive", "hive-mixed")])
def test_pypaimon_reads_ours(pypaimon: Pypaimon, tmp_path: Path, function: str, case: str) -> None:
    data, keys, _ = _data(case)
    wh = str(tmp_path / "wh")
    cat = Catalog(wh)
    cat.create_database("db")
    t = cat.create_table("db.t", data.schema, primary_keys=keys,
                         options={"bucket": str(BUCKETS), "bucket-function.type": function})
    t.write_arrow(data)
    assert sorted(pypaimon.read(wh, "db.t").column("v").to_pylist()) == list(range(ROWS))


def test_pypaimon_writes_ignore_the_function(pypaimon: Pypaimon, tmp_path: Path) -> None:
    # pypaimon 2.1's FixedBucketRowKeyExtractor never reads bucket-function.type: it places rows by
    # the default hash, where Paimon HEAD, pypaimon-rust and we place them by floorMod. Its tables
    # of another function are misplaced for every pruning reader (HEAD's and ours), so it is no
    # oracle here; when this fails, pypaimon has learnt the functions and can become one.
    wh = str(tmp_path / "wh")
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.int64())])
    pypaimon.create_table(wh, "db.t", schema, primary_keys=["k"],
                          options={"bucket": str(BUCKETS), "bucket-function.type": "mod"})
    data = pa.table({"k": pa.array(range(40), pa.int64()), "v": pa.array(range(40), pa.int64())}, schema=schema)
    pypaimon.write(wh, "db.t", data)
    t = Catalog(wh).get_table("db.t")
    placed = [_placement(t)[v] for v in range(40)]
    assert placed == assign_buckets([data.column("k")], t.schema.types(["k"]), BUCKETS).tolist()
    assert placed != assign_buckets([data.column("k")], t.schema.types(["k"]), BUCKETS, "mod").tolist()
