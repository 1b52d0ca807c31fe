"""Cross-partition upsert tables in the core: the key index (spilled or not), racing writers,
what such a table refuses (overwrites, fixed buckets, sequence.field) and the commit message field."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog, Table
from lake_assets.errors import (
    CommitConflictError,
    InvalidCommitMessageError,
    InvalidDataError,
    SchemaError,
    UnsupportedFeatureError,
)
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.ops.key_index import ENTRY_SCHEMA, KeyIndex, encode_keys
from lake_assets.spec.data_types import BigIntType

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.int64())])


def rows(ids: list[int], dt: str | list[str], v: int = 0) -> pa.Table:
    dts = dt if isinstance(dt, list) else [dt] * len(ids)
    return pa.table({"id": ids, "dt": dts, "v": [v + i for i in ids]}, schema=SCHEMA)


@pytest.fixture
def table(tmp_path: Path) -> Table:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat.create_table("db.t", SCHEMA, primary_keys=["id"], partition_keys=["dt"],
                            options={"dynamic-bucket.target-row-num": "4"})


def by_key(t: Table) -> dict[int, tuple[str, int]]:
    got = t.refresh().to_arrow().to_pylist()
    assert len(got) == len({r["id"] for r in got}), "a key in two places"
    return {r["id"]: (r["dt"], r["v"]) for r in got}


def keys(ids: list[int]) -> tuple[pa.Array, np.ndarray]:
    return encode_keys([pa.array(ids, pa.int64())], [BigIntType(nullable=False)], len(ids))


@pytest.mark.parametrize("memory", [1 << 20, 4096])
def test_key_index_lookups_in_memory_and_spilled(tmp_path: Path, memory: int) -> None:
    index = KeyIndex("db.t", memory, str(tmp_path))
    ids = list(range(0, 3000, 3))
    k, h = keys(ids)
    pieces = [pa.table([k.slice(i, 100), pa.array(h[i:i + 100]), pa.array(np.full(100, i // 100, np.int32)),
                        pa.array(np.full(100, 7, np.int32))], schema=ENTRY_SCHEMA) for i in range(0, 1000, 100)]
    index.bootstrap(pieces, expected_entries=len(ids))
    assert index.spilled == (memory == 4096)
    if index.spilled:  # sized from the expected entries: each shard about half the bound
        shard_bytes = [(tmp_path / d / f).stat().st_size for d in os.listdir(tmp_path)
                       for f in os.listdir(tmp_path / d)]
        assert len(shard_bytes) >= 8 and max(shard_bytes) <= memory
    probe = [3, 4, 2997, 2998, 0]
    got = index.lookup(*keys(probe))
    assert got.found.tolist() == [True, False, True, False, True]
    assert got.parts[got.found].tolist() == [0, 9, 0] and set(got.buckets[got.found].tolist()) == {7}
    # the writer's own placements win over the bootstrap's, also once merged into shard files
    for rnd in range(3):
        pk, ph = keys([3, 4])
        index.put(pk, ph, np.array([20 + rnd, 30 + rnd], np.int32), np.array([1, 2], np.int32))
        got = index.lookup(*keys([4, 3, 6]))
        assert got.found.all() and got.parts.tolist() == [30 + rnd, 20 + rnd, 0]
    index.close()
    assert not list(tmp_path.iterdir())  # shard files removed


def test_key_index_refuses_a_key_in_two_places(tmp_path: Path) -> None:
    k, h = keys([1, 2])
    piece = pa.table([k, pa.array(h), pa.array(np.zeros(2, np.int32)), pa.array(np.zeros(2, np.int32))],
                     schema=ENTRY_SCHEMA)
    with pytest.raises(InvalidDataError, match="a primary key lives in two places"):
        KeyIndex("db.t", 1 << 20, str(tmp_path)).bootstrap([piece, piece.slice(1)])


def _writer_messages(t: Table, data: pa.Table) -> tuple[str, list[CommitMessage]]:
    user = f"w-{uuid.uuid4()}"
    with t.refresh().new_writer(user) as w:
        w.write_arrow(data)
        return user, w.prepare_commit()


def test_racing_writers_moving_one_key_conflict(table: Table) -> None:
    """Two writers from one snapshot both move key 1: the second to commit fails and changes
    nothing (Paimon allows one writer; a key could end up in two partitions); writers of other
    keys both commit, and one writer's several commits never conflict with themselves."""
    table.write_arrow(rows([1, 2, 3, 4, 5], "a"))
    user_a, first = _writer_messages(table, rows([1], "b", 10))
    user_b, second = _writer_messages(table, rows([1, 9], "c", 20))
    assert {m.key_index_base for m in first + second} == {1}
    table.new_committer(user_a).commit(first)
    before = by_key(table)
    with pytest.raises(CommitConflictError, match=r"snapshot 2 of another writer .*since snapshot 1"):
        table.new_committer(user_b).commit(second)
    assert by_key(table) == before and before[1] == ("b", 11)
    # other keys: both land
    user_c, third = _writer_messages(table, rows([2], "b", 30))
    user_d, fourth = _writer_messages(table, rows([3, 7], "c", 40))
    table.new_committer(user_c).commit(third)
    table.new_committer(user_d).commit(fourth)
    got = by_key(table)
    assert got[2] == ("b", 32) and got[3] == ("c", 43) and got[7] == ("c", 47)
    # one writer, two commits from one bootstrap
    user = "streaming"
    with table.refresh().new_writer(user) as w:
        committer = table.new_committer(user)
        w.write_arrow(rows([4], "c", 50))
        committer.commit(w.prepare_commit(), 1)
        w.write_arrow(rows([4], "a", 60))
        committer.commit(w.prepare_commit(), 2)
    assert by_key(table)[4] == ("a", 64)


def test_overwrite_is_refused_by_name(table: Table) -> None:
    table.write_arrow(rows([1], "a"))
    with pytest.raises(UnsupportedFeatureError, match="overwrites of cross-partition upsert tables"):
        table.write_arrow(rows([1], "b"), overwrite=True)
    assert by_key(table) == {1: ("a", 1)}


def test_create_rules_follow_paimons_schema_validation(tmp_path: Path) -> None:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    with pytest.raises(SchemaError, match="needs dynamic bucket mode"):
        cat.create_table("db.f", SCHEMA, primary_keys=["id"], partition_keys=["dt"], options={"bucket": "2"})
    with pytest.raises(SchemaError, match=r"sequence\.field cannot be used in cross-partition"):
        cat.create_table("db.s", SCHEMA, primary_keys=["id"], partition_keys=["dt"], options={"sequence.field": "v"})
    t = cat.create_table("db.ok", SCHEMA, primary_keys=["id"], partition_keys=["dt"], options={"bucket": "-1"})
    with pytest.raises(SchemaError, match=r"sequence\.field cannot be used in cross-partition"):
        t.update_schema().set_option("sequence.field", "v").commit()


def test_commit_message_carries_the_key_index_base() -> None:
    m = CommitMessage(b"\x00\x00\x00\x00", 0, -1, key_index_base=7, key_index_base_identity="x")
    assert CommitMessage.from_json(m.to_json()).key_index_base == 7
    assert CommitMessage.from_json(CommitMessage(b"\x00\x00\x00\x00", 0, -1).to_json()).key_index_base == -1
    with pytest.raises(InvalidCommitMessageError, match="key_index_base is -2"):
        CommitMessage(b"\x00\x00\x00\x00", 0, -1, key_index_base=-2)
