"""Checks of the pypaimon interop harness itself (pypaimon writes, pypaimon reads; no lake_assets)."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from .paimon import (
    Pypaimon,
    canonical,
    canonical_json,
    copy_vector_warehouse,
    load_vector_expected,
)

pytestmark = pytest.mark.interop


def commit_kinds(warehouse: str, identifier: str) -> dict[int, str]:
    """``{snapshot id: commitKind}`` read straight from the snapshot JSON files."""
    db, name = identifier.split(".", 1)
    snap_dir = Path(warehouse) / f"{db}.db" / name / "snapshot"
    return {
        int(p.name.removeprefix("snapshot-")): json.loads(p.read_text())["commitKind"]
        for p in snap_dir.glob("snapshot-*")
    }


APPEND_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int32(), nullable=False),
        ("big", pa.int64()),
        ("name", pa.string()),
        ("amount", pa.float64()),
        ("flag", pa.bool_()),
        ("d", pa.date32()),
        ("price", pa.decimal128(10, 2)),
        ("ts", pa.timestamp("ms")),
        ("raw", pa.binary()),
    ]
)


def append_batch(ids: list[int]) -> pa.Table:
    """Deterministic rows for the append table, with a null in every nullable column on odd ids."""

    def val(i: int, v: Any) -> Any:
        return None if i % 2 else v

    return pa.table(
        {
            "id": ids,
            "big": [val(i, i * 1_000_000_000_000) for i in ids],
            "name": [val(i, f"name-{i}-" + "x" * i) for i in ids],
            "amount": [val(i, i / 4) for i in ids],
            "flag": [val(i, i % 4 == 0) for i in ids],
            "d": [val(i, dt.date(2024, 1, 1) + dt.timedelta(days=i)) for i in ids],
            "price": [val(i, decimal.Decimal(i * 101) / 100) for i in ids],
            "ts": [val(i, dt.datetime(2024, 2, 29, 23, 59, 59, 123000) + dt.timedelta(hours=i)) for i in ids],
            "raw": [val(i, bytes([i, 0, 255])) for i in ids],
        },
        schema=APPEND_SCHEMA,
    )


def test_append_round_trip(pypaimon: Pypaimon, tmp_warehouse: str) -> None:
    pypaimon.create_table(tmp_warehouse, "db.app", APPEND_SCHEMA, options={"file.format": "parquet"})
    assert pypaimon.read(tmp_warehouse, "db.app").num_rows == 0

    first, second = append_batch([1, 2, 3, 4]), append_batch([5, 6, 2])  # duplicates are fine in append
    pypaimon.write(tmp_warehouse, "db.app", first)
    pypaimon.write(tmp_warehouse, "db.app", second)

    got = pypaimon.read(tmp_warehouse, "db.app")
    assert got.schema == APPEND_SCHEMA
    keys = ["id", "big"]
    assert canonical(got, keys) == canonical(pa.concat_tables([first, second]), keys)
    assert canonical(pypaimon.read(tmp_warehouse, "db.app", snapshot_id=1), keys) == canonical(first, keys)

    projected = pypaimon.read(tmp_warehouse, "db.app", columns=["name", "id"])
    assert projected.schema.names == ["name", "id"]
    assert projected.num_rows == 7

    assert pypaimon.snapshots(tmp_warehouse, "db.app") == {"snapshots": [1, 2], "tags": []}
    assert commit_kinds(tmp_warehouse, "db.app") == {1: "APPEND", 2: "APPEND"}


PK_SCHEMA = pa.schema(
    [
        pa.field("region", pa.string(), nullable=False),
        pa.field("user", pa.string(), nullable=False),
        pa.field("dt", pa.string(), nullable=False),
        ("score", pa.int64()),
        ("note", pa.string()),
    ]
)
PK = ["region", "user", "dt"]


def pk_rows(rows: list[tuple[str, str, str, int | None, str | None]]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(PK_SCHEMA.names, r, strict=True)) for r in rows], schema=PK_SCHEMA)


def test_pk_partitioned_composite_key_updates(pypaimon: Pypaimon, tmp_warehouse: str) -> None:
    pypaimon.create_table(
        tmp_warehouse,
        "db.pk",
        PK_SCHEMA,
        primary_keys=PK,
        partition_keys=["dt"],
        options={"bucket": "2", "file.format": "parquet"},
    )
    first = pk_rows(
        [
            ("eu", "alice", "2024-01-01", 1, "a"),
            ("eu", "bob", "2024-01-01", 2, None),
            ("us", "alice", "2024-01-01", 3, "short"),
            ("us", "a-much-longer-user-name", "2024-01-02", 4, "long key"),
            ("", "", "2024-01-02", 5, "empty strings are keys too"),
            ("ünï", "çödé", "2024-01-02", 6, "non-ascii"),
        ]
    )
    second = pk_rows(
        [
            ("eu", "bob", "2024-01-01", 20, "updated"),
            ("us", "a-much-longer-user-name", "2024-01-02", None, None),  # update to nulls
            ("eu", "alice", "2024-01-02", 7, "same key, other partition"),
            ("us", "carol", "2024-01-03", 8, "new partition"),
        ]
    )
    pypaimon.write(tmp_warehouse, "db.pk", first)
    pypaimon.write(tmp_warehouse, "db.pk", second)

    expected = {tuple(r[k] for k in PK): r for r in first.to_pylist()}
    expected.update({tuple(r[k] for k in PK): r for r in second.to_pylist()})
    latest = pypaimon.read(tmp_warehouse, "db.pk")
    assert latest.schema == PK_SCHEMA
    assert canonical(latest, PK) == sorted(expected.values(), key=lambda r: tuple(r[k] for k in PK))
    assert canonical(pypaimon.read(tmp_warehouse, "db.pk", snapshot_id=1), PK) == canonical(first, PK)

    parts = {p.name for p in (Path(tmp_warehouse) / "db.db" / "pk").glob("dt=*")}
    assert parts == {"dt=2024-01-01", "dt=2024-01-02", "dt=2024-01-03"}


def test_pk_rowkind_delete(pypaimon: Pypaimon, tmp_warehouse: str) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("op", pa.string())])
    pypaimon.create_table(
        tmp_warehouse, "db.del", schema, primary_keys=["id"], options={"bucket": "1", "rowkind.field": "op"}
    )
    pypaimon.write(
        tmp_warehouse,
        "db.del",
        pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"], "op": ["+I"] * 3}, schema=schema),
    )
    pypaimon.write(
        tmp_warehouse,
        "db.del",
        pa.table({"id": [2, 3, 3], "v": [None, "c", "c2"], "op": ["-D", "-U", "+U"]}, schema=schema),
    )
    assert canonical(pypaimon.read(tmp_warehouse, "db.del"), ["id"]) == [
        {"id": 1, "v": "a", "op": "+I"},
        {"id": 3, "v": "c2", "op": "+U"},
    ]


def test_pypaimon_delete_row_count_bug(pypaimon: Pypaimon, tmp_warehouse: str) -> None:
    """Known pypaimon 2.1.0 bug (docs/format.md §11.1): a lone file holding a -D row is read raw."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("op", pa.string())])
    pypaimon.create_table(
        tmp_warehouse, "db.bug", schema, primary_keys=["id"], options={"bucket": "1", "rowkind.field": "op"}
    )
    pypaimon.write(tmp_warehouse, "db.bug", pa.table({"id": [1, 2], "op": ["+I", "-D"]}, schema=schema))
    assert canonical(pypaimon.read(tmp_warehouse, "db.bug"), ["id"]) == [
        {"id": 1, "op": "+I"},
        {"id": 2, "op": "-D"},
    ]


PART_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("dt", pa.string(), nullable=False),
        ("v", pa.string()),
    ]
)


def part_rows(rows: list[tuple[int, str, str]]) -> pa.Table:
    return pa.Table.from_pylist(
        [dict(zip(PART_SCHEMA.names, r, strict=True)) for r in rows], schema=PART_SCHEMA
    )


@pytest.mark.parametrize("primary_keys", [(), ("id", "dt")], ids=["append", "pk"])
def test_overwrite_partition(pypaimon: Pypaimon, tmp_warehouse: str, primary_keys: tuple[str, ...]) -> None:
    options = {"bucket": "2"} if primary_keys else {}
    pypaimon.create_table(
        tmp_warehouse, "db.ow", PART_SCHEMA, primary_keys=primary_keys, partition_keys=["dt"], options=options
    )
    pypaimon.write(
        tmp_warehouse, "db.ow", part_rows([(1, "a", "x"), (2, "a", "y"), (3, "b", "z"), (4, "c", "w")])
    )

    pypaimon.write(tmp_warehouse, "db.ow", part_rows([(10, "a", "new")]), overwrite={"dt": "a"})
    assert canonical(pypaimon.read(tmp_warehouse, "db.ow"), ["id"]) == canonical(
        part_rows([(3, "b", "z"), (4, "c", "w"), (10, "a", "new")]), ["id"]
    )

    # Empty static overwrite: a no-op in the default dynamic mode, a partition truncate with it off.
    pypaimon.write(tmp_warehouse, "db.ow", PART_SCHEMA.empty_table(), overwrite={"dt": "b"})
    assert pypaimon.read(tmp_warehouse, "db.ow").num_rows == 3
    pypaimon.write(
        tmp_warehouse,
        "db.ow",
        PART_SCHEMA.empty_table(),
        overwrite={"dt": "b"},
        options={"dynamic-partition-overwrite": "false"},
    )
    assert canonical(pypaimon.read(tmp_warehouse, "db.ow"), ["id"]) == canonical(
        part_rows([(4, "c", "w"), (10, "a", "new")]), ["id"]
    )

    assert commit_kinds(tmp_warehouse, "db.ow") == {1: "APPEND", 2: "OVERWRITE", 3: "OVERWRITE"}
    assert canonical(pypaimon.read(tmp_warehouse, "db.ow", snapshot_id=1), ["id"])[0] == {
        "id": 1,
        "dt": "a",
        "v": "x",
    }


def test_tag_and_errors(pypaimon: Pypaimon, tmp_warehouse: str) -> None:
    pypaimon.create_table(tmp_warehouse, "db.tg", PART_SCHEMA, partition_keys=["dt"])
    pypaimon.write(tmp_warehouse, "db.tg", part_rows([(1, "a", "x")]))
    pypaimon.create_tag(tmp_warehouse, "db.tg", "v1")
    pypaimon.write(tmp_warehouse, "db.tg", part_rows([(2, "b", "y")]))
    assert pypaimon.read(tmp_warehouse, "db.tg", tag="v1").to_pylist() == [{"id": 1, "dt": "a", "v": "x"}]
    assert pypaimon.read(tmp_warehouse, "db.tg").num_rows == 2
    assert pypaimon.snapshots(tmp_warehouse, "db.tg") == {"snapshots": [1, 2], "tags": ["v1"]}

    with pytest.raises(AssertionError, match="Snapshot id '7' doesn't exist"):
        pypaimon.read(tmp_warehouse, "db.tg", snapshot_id=7)
    with pytest.raises(AssertionError, match="does not belong to this partition"):
        pypaimon.write(
            tmp_warehouse,
            "db.tg",
            part_rows([(3, "c", "z")]),
            overwrite={"dt": "a"},
            options={"dynamic-partition-overwrite": "false"},
        )


VECTORS = {  # dir -> (identifier, sort keys used by its make.py)
    "01_append": ("db.t", ["id", "big"]),
    "02_pk_partitioned": ("db.pk", ["dt", "id"]),
    "03_pk_composite": ("db.comp", ["k", "n"]),
    "04_partial_update": ("db.pu", ["id"]),
    "05_aggregation": ("db.agg", ["k"]),
}


@pytest.mark.parametrize("vector", sorted(VECTORS))
def test_read_vector(pypaimon: Pypaimon, tmp_path: Path, vector: str) -> None:
    identifier, keys = VECTORS[vector]
    warehouse = copy_vector_warehouse(vector, tmp_path / "warehouse")
    expected = load_vector_expected(vector)
    got = pypaimon.read(warehouse, identifier)
    assert got.schema.names == expected["columns"]
    assert [str(f) for f in got.schema] == expected["arrow_schema"]
    assert canonical_json(got, keys) == expected["rows"]


def test_vector_02_time_travel(pypaimon: Pypaimon, tmp_path: Path) -> None:
    warehouse = copy_vector_warehouse("02_pk_partitioned", tmp_path / "warehouse")
    expected = load_vector_expected("02_pk_partitioned", "expected_snapshot_1.json")
    got = pypaimon.read(warehouse, "db.pk", snapshot_id=1)
    assert canonical_json(got, ["dt", "id"]) == expected["rows"]
    assert (
        canonical_json(pypaimon.read(warehouse, "db.pk"), ["dt", "id"])
        == (load_vector_expected("02_pk_partitioned")["rows"])
    )
    assert pypaimon.read(warehouse, "db.pk", snapshot_id=1, columns=["id"]).num_rows == 6
