"""``partition.legacy-name`` both ways with pypaimon 2.1 and pypaimon-rust 0.4, which both honour it
(pypaimon's ``FileStorePathFactory`` and pypaimon-rust's ``CoreOptions::legacy_partition_name``):
tables they partition by every type they support as a partition key, written by them and read,
compacted, expired and cleaned by us, and the same tables written by us and read by them, in the
same directories. Java 0.9 predates the option: tests/differential/test_partition_names_java.py.

Left out, as each peer refuses or misnames them:

* pypaimon 2.1 names a BINARY/VARBINARY value ``str(bytes)`` (``b'ab'``) with false, not Java's UTF-8
  text (``BinaryToStringCastRule``; pypaimon-rust writes ``ab``): its own reader finds its files,
  Paimon's would not; such a table is exercised with pypaimon-rust only.
* pypaimon-rust 0.4 takes no FLOAT, DOUBLE or TIME partition key, and no BINARY one with legacy names
  (Java's are ``byte[].toString()``, an identity hash).
* TIMESTAMP WITH LOCAL TIME ZONE with false is refused by us (tests/unit/test_partition_names.py).
"""

from __future__ import annotations

import datetime as dt
import decimal
import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog

from .paimon import Pypaimon, PypaimonRust, canonical, jsonable, missing

# One partition key per type pypaimon 2.1 writes: the table's directories nest all of them.
PY_SCHEMA = pa.schema([
    pa.field("id", pa.int64()),
    pa.field("d", pa.date32()),
    pa.field("ts3", pa.timestamp("ms")),
    pa.field("ts6", pa.timestamp("us")),
    pa.field("tm", pa.time32("ms")),
    pa.field("dec", pa.decimal128(10, 2)),
    pa.field("b", pa.bool_()),
    pa.field("n", pa.int32()),
    pa.field("f", pa.float32()),
    pa.field("x", pa.float64()),
    pa.field("s", pa.string()),
    pa.field("v", pa.string()),
])
PY_KEYS = ["d", "ts3", "ts6", "tm", "dec", "b", "n", "f", "x", "s"]


def _py_rows(ids: list[int]) -> pa.Table:
    days = [dt.date(2024, 1, 5), dt.date(1969, 12, 31), dt.date(2024, 1, 5)]
    return pa.table({
        "id": ids,
        "d": [days[i % 3] for i in ids],
        "ts3": [dt.datetime(2024, 1, 5, 1, 2, 3, 400000) if i % 2 else dt.datetime(2024, 1, 5) for i in ids],
        "ts6": [dt.datetime(2024, 1, 5, 1, 2, 0, 120000) if i % 2 else dt.datetime(1900, 1, 1) for i in ids],
        "tm": [dt.time(1, 2, 3) if i % 2 else dt.time(0, 0) for i in ids],
        "dec": [decimal.Decimal("1.50") if i % 2 else decimal.Decimal("-0.01") for i in ids],
        "b": [bool(i % 2) for i in ids],
        "n": [-(2**31) if i % 2 else 7 for i in ids],
        "f": [1.1 if i % 2 else 3e10 for i in ids],
        "x": [0.1 if i % 2 else -2.5e-5 for i in ids],
        "s": ["a b:c" if i % 2 else "50%/x" for i in ids],
        "v": [f"v{i}" for i in ids],
    }, schema=PY_SCHEMA)


def _data_dirs(root: str) -> set[str]:
    return {os.path.relpath(r, root) for r, _, files in os.walk(root) if any(f.startswith("data-") for f in files)}


def _ours(wh: str) -> Catalog:
    cat = Catalog(wh)
    cat.create_database("db")  # if missing
    return cat


@pytest.mark.parametrize("legacy", ["false", "true"])
def test_pypaimon_writes_we_read_compact_expire(pypaimon: Pypaimon, tmp_path: Path, legacy: str) -> None:
    wh = str(tmp_path / "wh")
    opts = {"bucket": "-1", "partition.legacy-name": legacy, "snapshot.time-retained": "1 ms"}
    pypaimon.create_table(wh, "db.t", PY_SCHEMA, partition_keys=PY_KEYS, options=opts)
    for ids in ([0, 1, 2], [3, 4], [5, 6, 7]):
        pypaimon.write(wh, "db.t", _py_rows(ids))
    t = _ours(wh).get_table("db.t")
    want = canonical(_py_rows(list(range(8))), ["id"])
    assert canonical(t.to_arrow(), ["id"]) == want
    before = _data_dirs(t.paths.root)
    t.compact(full=True)
    t.expire_snapshots(retain_min=1, older_than=dt.datetime.now() + timedelta(days=1))
    t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    t = t.refresh()
    assert canonical(t.to_arrow(), ["id"]) == want
    # the compacted files sit in pypaimon's directories, which pypaimon reads back
    assert _data_dirs(t.paths.root) == before
    assert canonical(pypaimon.read(wh, "db.t").cast(PY_SCHEMA), ["id"]) == want


@pytest.mark.parametrize("legacy", ["false", "true"])
def test_we_write_pypaimon_reads(pypaimon: Pypaimon, tmp_path: Path, legacy: str) -> None:
    wh = str(tmp_path / "wh")
    opts = {"bucket": "-1", "partition.legacy-name": legacy}
    cat = _ours(wh)
    # two tables of one schema (pypaimon's own would map time32[ms] to TIME(0), ours is TIME(3)):
    # we write one, pypaimon the other
    t = cat.create_table("db.ours", PY_SCHEMA, partition_keys=PY_KEYS, options=opts)
    theirs = cat.create_table("db.theirs", PY_SCHEMA, partition_keys=PY_KEYS, options=opts)
    t.write_arrow(_py_rows([0, 1]))
    t.write_arrow(_py_rows([2, 3]))
    pypaimon.write(wh, "db.theirs", _py_rows(list(range(4))))
    want = canonical(_py_rows(list(range(4))), ["id"])
    assert canonical(pypaimon.read(wh, "db.ours").cast(PY_SCHEMA), ["id"]) == want
    assert canonical(theirs.refresh().to_arrow(), ["id"]) == want
    assert _data_dirs(t.paths.root) == _data_dirs(theirs.paths.root)


# pypaimon-rust: the partition key types its SQL writes (BINARY with false only).
RUST_COLUMNS = "id BIGINT, d DATE, ts0 TIMESTAMP(0), ts3 TIMESTAMP(3), ts6 TIMESTAMP(6), dec DECIMAL(10,2), " \
               "b BOOLEAN, n INT, s STRING, v STRING"
RUST_KEYS = ["d", "ts0", "ts3", "ts6", "dec", "b", "n", "s"]
RUST_ROWS = [
    "(1, DATE '2024-01-05', TIMESTAMP '2024-01-05 01:02:03', TIMESTAMP '2024-01-05 01:02:03.400', "
    "TIMESTAMP '2024-01-05 01:02:00', CAST(1.5 AS DECIMAL(10,2)), true, -7, 'a b:c', 'v1')",
    "(2, DATE '1969-12-31', TIMESTAMP '1969-12-31 23:59:00', TIMESTAMP '2024-01-05 00:00:00', "
    "TIMESTAMP '1900-01-01 00:00:00.000001', CAST(-0.01 AS DECIMAL(10,2)), false, 0, '50%/x', 'v2')",
    "(3, DATE '2024-01-05', TIMESTAMP '2024-01-05 01:02:03', TIMESTAMP '2024-01-05 01:02:03.400', "
    "TIMESTAMP '2024-01-05 01:02:00', CAST(1.5 AS DECIMAL(10,2)), true, -7, 'a b:c', 'v3')",
]


def _rust_table(legacy: str) -> tuple[str, list[str], pa.Schema]:
    columns, keys = RUST_COLUMNS, list(RUST_KEYS)
    schema = pa.schema([("id", pa.int64()), ("d", pa.date32()), ("ts0", pa.timestamp("s")),
                        ("ts3", pa.timestamp("ms")), ("ts6", pa.timestamp("us")), ("dec", pa.decimal128(10, 2)),
                        ("b", pa.bool_()), ("n", pa.int32()), ("s", pa.string()), ("v", pa.string())])
    if legacy == "false":
        columns += ", bin BYTES"
        keys.append("bin")
        schema = schema.append(pa.field("bin", pa.binary()))
    return columns, keys, schema


def _rust_values(legacy: str) -> list[str]:
    if legacy == "true":
        return RUST_ROWS
    return [r[:-1] + f", X'{h}')" for r, h in zip(RUST_ROWS, ["6162", "c3bc", "6162"], strict=True)]


def _json_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted((jsonable(r) for r in rows), key=lambda r: r["id"])


@pytest.mark.parametrize("legacy", ["false", "true"])
def test_pypaimon_rust_both_ways(tmp_path: Path, legacy: str) -> None:
    rust = PypaimonRust()
    if not rust.available():
        missing(f"pypaimon-rust not installed in {rust.python}; run `make venv-paimon`")
    wh = str(tmp_path / "wh")
    columns, keys, schema = _rust_table(legacy)
    rust.sql(wh, "CREATE SCHEMA paimon.db",
             f"CREATE TABLE paimon.db.t ({columns}) PARTITIONED BY ({', '.join(keys)}) "
             f"WITH ('partition.legacy-name' = '{legacy}', 'snapshot.time-retained' = '1 ms')",
             *(f"INSERT INTO paimon.db.t VALUES {row}" for row in _rust_values(legacy)))
    # they write, we read, compact, expire and clean; they read our compacted files
    cat = _ours(wh)
    t = cat.get_table("db.t")
    ours = t.to_arrow().cast(schema)
    assert _json_rows(rust.read_rows(wh, "db.t")) == _json_rows(ours.to_pylist())
    assert sorted(ours.column("v").to_pylist()) == ["v1", "v2", "v3"]
    dirs = _data_dirs(t.paths.root)
    t.compact(full=True)
    t.expire_snapshots(retain_min=1, older_than=dt.datetime.now() + timedelta(days=1))
    t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    assert _data_dirs(t.paths.root) == dirs
    assert _json_rows(rust.read_rows(wh, "db.t")) == _json_rows(ours.to_pylist())
    # we write the same rows into a table of ours; they read it, from the same directory names
    mine = cat.create_table("db.mine", schema, partition_keys=keys, options={"bucket": "-1",
                                                                             "partition.legacy-name": legacy})
    mine.write_arrow(ours.slice(0, 2))
    mine.write_arrow(ours.slice(2))
    assert _json_rows(rust.read_rows(wh, "db.mine")) == _json_rows(ours.to_pylist())
    assert _data_dirs(mine.paths.root) == dirs
