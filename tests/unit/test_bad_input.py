"""Bad input gets a clear error naming the problem, and the table does not change."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import (
    AlreadyExistsError,
    Catalog,
    CorruptMetadataError,
    InvalidDataError,
    InvalidIdentifierError,
    NoSuchDatabaseError,
    NoSuchTableError,
    OptionError,
    SchemaError,
    UnsupportedFeatureError,
)

SCHEMA = pa.schema([("k", pa.int32()), ("v", pa.string())])


@pytest.fixture
def kv(catalog: Catalog):
    t = catalog.create_table("db.kv", SCHEMA, primary_keys=["k"], options={"bucket": "2"})
    t.write_arrow(pa.table({"k": [1, 2], "v": ["a", "b"]}, schema=t.arrow_schema))
    return t


def _unchanged(t) -> None:
    assert len(t.snapshots()) == 1
    assert sorted(t.to_arrow().column("k").to_pylist()) == [1, 2]


@pytest.mark.parametrize(
    ("data", "error", "match"),
    [
        (pa.table({"k": [3]}), SchemaError, "missing columns \\['v'\\]"),
        (pa.table({"k": [3], "v": ["x"], "z": [1]}), SchemaError, "unknown columns \\['z'\\]"),
        (pa.table({"k": ["3"], "v": ["x"]}), SchemaError, "column 'k' has type string"),
        (pa.table({"k": pa.array([None], pa.int32()), "v": ["x"]}), InvalidDataError, "primary key column 'k'"),
        (pa.table({"k": pa.array([2**40], pa.int64()), "v": ["x"]}), InvalidDataError, "do not fit"),
        (pa.table({"k": [3], "v": [5]}), SchemaError, "column 'v' has type int64"),
    ],
)
def test_bad_batches_are_rejected(kv, data, error, match):
    with pytest.raises(error, match=match):
        kv.write_arrow(data)
    _unchanged(kv)
    # and nothing was left behind in bucket directories
    files = [s.path for s in kv.file_io.walk_files(kv.paths.root) if s.path.endswith(".parquet")]
    assert len(files) == len({f.file_name for sp in kv.plan() for f in sp.files})


def test_unknown_row_kind(catalog: Catalog):
    t = catalog.create_table("db.rk", pa.schema([("k", pa.int32()), ("op", pa.string())]),
                             primary_keys=["k"], options={"bucket": "1", "rowkind.field": "op"})
    with pytest.raises(InvalidDataError, match="row kinds \\['X'\\]"):
        t.write_arrow(pa.table({"k": [1], "op": ["X"]}, schema=t.arrow_schema))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"options": {"bucket": "2", "no.such.option": "1"}}, OptionError, "Unknown table option 'no.such.option'"),
        ({"options": {"bucket": "2", "file.format": "csv"}}, UnsupportedFeatureError, "file.format"),
        ({"options": {"bucket": "2", "merge-engine": "magic"}}, OptionError, "merge-engine"),
        ({"options": {"bucket": "-3"}}, OptionError, "'bucket'"),
        ({"options": {"bucket-key": "k"}}, OptionError, "'bucket-key' cannot be set with bucket = -1"),
        ({"options": {"bucket": "two"}}, OptionError, "'bucket'"),
        ({"options": {"bucket": "2", "snapshot.num-retained.min": "5", "snapshot.num-retained.max": "2"}},
         OptionError, "Contradictory"),
        ({"options": {"bucket": "2", "target-file-size": "lots"}}, OptionError, "target-file-size"),
        ({"options": {"bucket": "2", "sequence.field": "nope"}}, OptionError, "sequence.field"),
        ({"options": {"bucket": "2", "bucket-key": "v"}}, OptionError, "bucket-key"),
    ],
)
def test_bad_table_options(catalog: Catalog, kwargs, error, match):
    with pytest.raises(error, match=match):
        catalog.create_table("db.bad", SCHEMA, primary_keys=["k"], **kwargs)
    assert not catalog.table_exists("db.bad")


def test_bad_keys(catalog: Catalog):
    with pytest.raises(SchemaError, match="not in the schema"):
        catalog.create_table("db.b1", SCHEMA, primary_keys=["zz"], options={"bucket": "1"})
    # a fixed bucket count cannot place a key whose partition changes (Paimon's cross-partition upsert needs bucket -1)
    with pytest.raises(SchemaError, match=r"lacks the partition keys \['v'\].*bucket = -1"):
        catalog.create_table("db.b2", SCHEMA, primary_keys=["k"], partition_keys=["v"], options={"bucket": "1"})
    # a fixed-bucket append table needs a bucket-key, as Paimon's SchemaValidation says
    with pytest.raises(OptionError, match="define a 'bucket-key' for bucketed append mode"):
        catalog.create_table("db.b3", SCHEMA, options={"bucket": "4"})


@pytest.mark.parametrize("ident", ["db/../x", "..", "db..t", "db.t/x", "db. t", "", "a.b.c", "db.../etc"])
def test_bad_identifiers(catalog: Catalog, ident):
    with pytest.raises(InvalidIdentifierError):
        catalog.create_table(ident, SCHEMA)


def test_catalog_errors(catalog: Catalog, kv):
    with pytest.raises(AlreadyExistsError):
        catalog.create_table("db.kv", SCHEMA, primary_keys=["k"], options={"bucket": "2"})
    assert catalog.create_table("db.kv", SCHEMA, ignore_if_exists=True).name == "db.kv"
    with pytest.raises(NoSuchTableError):
        catalog.get_table("db.missing")
    with pytest.raises(NoSuchDatabaseError):
        catalog.create_table("nodb.t", SCHEMA)
    assert catalog.list_databases() == ["db"]
    assert catalog.list_tables("db") == ["kv"]


def test_corrupt_snapshot_json_is_named(kv):
    path = kv.paths.snapshot_file(1)
    kv.file_io.overwrite_atomic(path, b'{"id": 1, "schemaId": ')
    with pytest.raises(CorruptMetadataError, match="snapshot-1"):
        kv.to_arrow()


def test_corrupt_manifest_is_named(kv):
    snap = kv.latest_snapshot()
    mio = kv.store.manifest_io()
    name = mio.read_manifest_list(snap.delta_manifest_list)[0].file_name
    kv.file_io.write_bytes(kv.paths.manifest_file(name), b"Obj\x01garbage")
    from lake_assets.store import manifest_io

    manifest_io._cache_slot.cache_clear()
    with pytest.raises(CorruptMetadataError, match=name):
        kv.to_arrow()


def test_missing_data_file_is_named(kv):
    sp = kv.plan()[0]
    path = kv.store.data_file_path(sp.partition, sp.bucket, sp.files[0])
    kv.file_io.delete(path)
    with pytest.raises(CorruptMetadataError, match="missing"):
        kv.to_arrow()
