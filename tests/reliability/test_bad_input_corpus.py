"""A corpus of bad inputs and corrupt state: each gets a clear error naming the problem, the table
does not change, and the valid data already there stays readable."""

from __future__ import annotations

import contextlib
import json
import os

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lake_assets import (
    Catalog,
    CorruptMetadataError,
    InvalidDataError,
    InvalidIdentifierError,
    LakeError,
    NoSuchTableError,
    SchemaError,
    UnsupportedFeatureError,
)
from lake_assets.formats.manifest_codec import decode_manifest_entries, decode_manifest_list
from lake_assets.spec.binary_row import deserialize_row
from lake_assets.spec.schema import TableSchema
from lake_assets.spec.snapshot import Snapshot
from lake_assets.spec.types import BigIntType, DecimalType, IntType, TimestampType, VarCharType
from lake_assets.store import manifest_io

SCHEMA = pa.schema([("k", pa.int32()), ("dt", pa.string()), ("v", pa.string()), ("n", pa.int64())])


@pytest.fixture
def t(catalog):
    table = catalog.create_table(
        "db.t", pa.schema([SCHEMA.field(i) for i in range(3)] + [pa.field("n", pa.int64(), nullable=False)]),
        primary_keys=["k", "dt"], partition_keys=["dt"], options={"bucket": "2"},
    )
    table.write_arrow(pa.table({"k": [1, 2], "dt": ["d1", "d2"], "v": ["a", "b"], "n": [1, 2]},
                               schema=table.arrow_schema))
    manifest_io._cache_slot.cache_clear()  # corruption tests must hit storage
    return table


def _snapshot_of(t) -> dict:
    return {s.path: s.size for s in t.file_io.walk_files(t.paths.root)}


def _readable(t) -> None:
    assert sorted(t.to_arrow().column("k").to_pylist()) == [1, 2]


BAD_BATCHES = [
    ("missing column", {"k": [3], "dt": ["d1"], "v": ["x"]}, SchemaError, "missing columns"),
    ("extra column", {"k": [3], "dt": ["d1"], "v": ["x"], "n": [1], "z": [0]}, SchemaError, "unknown columns"),
    ("wrong type", {"k": ["3"], "dt": ["d1"], "v": ["x"], "n": [1]}, SchemaError, "column 'k' has type string"),
    ("wrong type float→string", {"k": [3], "dt": ["d1"], "v": [1.5], "n": [1]}, SchemaError, "column 'v'"),
    ("null primary key", {"k": pa.array([None], pa.int32()), "dt": ["d1"], "v": ["x"], "n": [1]},
     InvalidDataError, "primary key column 'k'"),
    ("null partition key", {"k": [3], "dt": pa.array([None], pa.string()), "v": ["x"], "n": [1]},
     InvalidDataError, "column 'dt'"),
    ("null in NOT NULL column", {"k": [3], "dt": ["d1"], "v": ["x"], "n": pa.array([None], pa.int64())},
     InvalidDataError, "column 'n' is NOT NULL"),
    ("int overflow", {"k": pa.array([2**31], pa.int64()), "dt": ["d1"], "v": ["x"], "n": [1]},
     InvalidDataError, "do not fit"),
    ("float into int", {"k": pa.array([1.5]), "dt": ["d1"], "v": ["x"], "n": [1]}, SchemaError,
     "column 'k' has type double"),
    ("duplicate columns", None, SchemaError, "duplicate columns"),
]


@pytest.mark.parametrize(("case", "data", "error", "match"), BAD_BATCHES, ids=[c[0] for c in BAD_BATCHES])
def test_bad_batch(t, case, data, error, match):
    if data is None:
        batch = pa.Table.from_arrays([pa.array([1], pa.int32()), pa.array([1], pa.int32())], names=["k", "k"])
    else:
        batch = pa.table(data)
    before = _snapshot_of(t)
    with pytest.raises(error, match=match):
        t.write_arrow(batch)
    assert _snapshot_of(t) == before
    _readable(t)


def test_changing_bucket_mode_is_rejected(t):
    # N -> M is a rescale Paimon allows (ops/bucket_count.py); to dynamic or postpone mode it is not
    before = _snapshot_of(t)
    with pytest.raises(UnsupportedFeatureError, match="rescal"):
        t.update_schema().set_option("bucket", "-1").commit()
    assert _snapshot_of(t) == before


def test_writing_to_dropped_table(catalog, t):
    catalog.drop_table("db.t")
    with pytest.raises(NoSuchTableError):
        t.write_arrow(pa.table({"k": [3], "dt": ["d1"], "v": ["x"], "n": [1]}, schema=t.arrow_schema))
    with pytest.raises(NoSuchTableError):
        catalog.get_table("db.t")
    assert not os.path.exists(t.paths.root) or not t.file_io.list_names(t.paths.schema_dir)


@pytest.mark.parametrize("ident", ["db/../../etc", "db...t", "../db.t", "db.t/..", "db.\u2028", "db.t name"])
def test_identifier_escape_attempts(catalog, ident):
    with pytest.raises(InvalidIdentifierError):
        catalog.get_table(ident)


@pytest.mark.parametrize("value", ["a/b", "x=y", "..", "../../outside", "größe €", "%2F", "", "  "])
def test_partition_values_never_leave_the_table_directory(catalog, value):
    t = catalog.create_table("db.p", pa.schema([("k", pa.int32()), ("dt", pa.string())]),
                             primary_keys=["k", "dt"], partition_keys=["dt"], options={"bucket": "1"})
    t.write_arrow(pa.table({"k": [1], "dt": [value]}, schema=t.arrow_schema))
    root = os.path.realpath(t.paths.root)
    for f in t.file_io.walk_files(os.path.dirname(root)):
        assert os.path.realpath(f.path).startswith(root + os.sep)
    assert t.to_arrow().to_pylist() == [{"k": 1, "dt": value}]
    assert t.to_arrow(filter=[("dt", "=", value)]).num_rows == 1


CORRUPTIONS = ["truncated snapshot", "garbage snapshot", "snapshot wrong id", "missing manifest list",
               "truncated manifest list", "corrupt manifest", "truncated manifest", "missing manifest",
               "corrupt parquet", "truncated parquet", "missing data file", "corrupt schema"]


@pytest.mark.parametrize("case", CORRUPTIONS)
def test_corrupt_state_is_named_and_older_snapshots_stay_readable(t, warehouse, case):
    t.write_arrow(pa.table({"k": [5], "dt": ["d1"], "v": ["e"], "n": [5]}, schema=t.arrow_schema))
    snap = t.latest_snapshot()
    mio = t.store.manifest_io()
    delta = mio.read_manifest_list(snap.delta_manifest_list)[0]
    entry = mio.read_manifest(delta.file_name)[0]
    data_path = t.store.data_file_path(entry.partition, entry.bucket, entry.file)
    snap_path = t.paths.snapshot_file(snap.id)
    fio = t.file_io
    if case == "truncated snapshot":
        fio.overwrite_atomic(snap_path, fio.read_bytes(snap_path)[:40])
    elif case == "garbage snapshot":
        fio.overwrite_atomic(snap_path, b"\x00\xff not json")
    elif case == "snapshot wrong id":
        fio.overwrite_atomic(snap_path, json.dumps({**json.loads(fio.read_bytes(snap_path)), "id": 99}).encode())
    elif case == "missing manifest list":
        fio.delete(t.paths.manifest_file(snap.delta_manifest_list))
    elif case == "truncated manifest list":
        p = t.paths.manifest_file(snap.delta_manifest_list)
        fio.write_bytes(p, fio.read_bytes(p)[:-30])
    elif case == "corrupt manifest":
        p = t.paths.manifest_file(delta.file_name)
        b = bytearray(fio.read_bytes(p))
        b[len(b) // 2] ^= 0xFF
        fio.write_bytes(p, bytes(b))
    elif case == "truncated manifest":
        p = t.paths.manifest_file(delta.file_name)
        fio.write_bytes(p, fio.read_bytes(p)[:-20])
    elif case == "missing manifest":
        fio.delete(t.paths.manifest_file(delta.file_name))
    elif case == "corrupt parquet":
        fio.write_bytes(data_path, b"PAR1" + os.urandom(200) + b"PAR1")
    elif case == "truncated parquet":
        fio.write_bytes(data_path, fio.read_bytes(data_path)[:100])
    elif case == "missing data file":
        fio.delete(data_path)
    elif case == "corrupt schema":
        fio.overwrite_atomic(t.paths.schema_file(0), b'{"version": 3, "id": 0, "fields": [{"id": 0')
    manifest_io._cache_slot.cache_clear()
    fresh = Catalog(warehouse)
    if case == "corrupt schema":
        with pytest.raises(CorruptMetadataError, match="schema-0"):
            fresh.get_table("db.t")
        return
    table = fresh.get_table("db.t")
    with pytest.raises(CorruptMetadataError) as info:
        table.to_arrow()
    msg = str(info.value)
    assert any(name in msg for name in (f"snapshot-{snap.id}", snap.delta_manifest_list, delta.file_name,
                                        entry.file.file_name)), msg
    # the snapshot before the corruption still reads
    assert sorted(table.to_arrow(snapshot_id=snap.id - 1).column("k").to_pylist()) == [1, 2]


# ------------------------------------------------------------------------------------- fuzzing
@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_fuzz_snapshot_and_schema_json(data):
    for decode in (lambda b: Snapshot.from_json(b, "fuzz"), lambda b: TableSchema.from_json(b, "fuzz")):
        with contextlib.suppress(LakeError):
            decode(data)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["id", "schemaId", "baseManifestList", "deltaManifestList", "commitUser",
                                        "commitIdentifier", "commitKind", "timeMillis", "fields", "version"]),
                       st.one_of(st.none(), st.integers(), st.text(max_size=5), st.lists(st.integers(), max_size=2),
                                 st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))))
def test_fuzz_structured_json(d):
    text = json.dumps(d)
    for decode in (lambda b: Snapshot.from_json(b, "fuzz"), lambda b: TableSchema.from_json(b, "fuzz")):
        with contextlib.suppress(LakeError):
            decode(text)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=600))
def test_fuzz_manifest_decoders(data):
    for decode in (decode_manifest_entries, decode_manifest_list):
        with contextlib.suppress(LakeError):
            decode(b"Obj\x01" + data, "fuzz")
        with contextlib.suppress(LakeError):
            decode(data, "fuzz")


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=120))
def test_fuzz_binary_row(data):
    for types in ([BigIntType()], [VarCharType(2147483647), IntType()], [DecimalType(30, 2), TimestampType(6)]):
        with contextlib.suppress(LakeError):
            deserialize_row(data, types)
