"""File indexes (``file-index.*``, docs/format.md §7.6): option validation, the container and bloom
filter round trips, refusals of what we do not write, and the writer's cleanup of ``.index`` files.
Hashes and bytes are checked against Paimon Java in tests/differential/test_file_index_java.py."""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import errno
import json
import os
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from lake_assets.errors import CorruptMetadataError, OptionError, UnsupportedFeatureError
from lake_assets.formats.bloom_filter import BloomFilter64
from lake_assets.formats.data_file import DataFileWriter
from lake_assets.formats.fast_hash import fast_hash, xxhash64
from lake_assets.formats.file_index import FileIndexBuilder, bloom_filters, index_plan, read_container, write_container
from lake_assets.io.local import LocalFileIO
from lake_assets.predicate import FilterError, Predicate
from lake_assets.spec.types import from_arrow, parse_type, to_arrow
from tests.java.oracle_values import decode_values

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("flag", pa.bool_()), ("m", pa.map_(pa.string(),
                                                                                                     pa.int32()))])
BLOOM = "file-index.bloom-filter"


def _rows(ids: range) -> pa.Table:
    return pa.table({"id": list(ids), "name": [f"name-{i}" for i in ids], "flag": [i % 2 == 0 for i in ids],
                     "m": [[("k", i)] for i in ids]}, schema=SCHEMA)


# ---------------------------------------------------------------- validation at create and ALTER


@pytest.mark.parametrize(("options", "error", "match"), [
    ({f"{BLOOM}.columns": "id,nope"}, OptionError, "names column 'nope'"),
    ({f"{BLOOM}.columns": "id,,name"}, OptionError, "empty column"),
    ({f"{BLOOM}.columns": "id", f"{BLOOM}.name.fpp": "0.1"}, OptionError, "does not list"),
    ({f"{BLOOM}.columns": "id", f"{BLOOM}.id.fpp": "0"}, OptionError, "between 0 and 1"),
    ({f"{BLOOM}.columns": "id", f"{BLOOM}.id.fpp": "1"}, OptionError, "between 0 and 1"),
    ({f"{BLOOM}.columns": "id", f"{BLOOM}.id.fpp": "x"}, OptionError, "not a number"),
    ({f"{BLOOM}.columns": "id", f"{BLOOM}.id.items": "0"}, OptionError, "at least 1"),
    ({"file-index.in-manifest-threshold": "lots"}, OptionError, "memory size"),
    ({"file-index.bitmap.columns": "name", "file-index.bitmap.name.version": "3"}, UnsupportedFeatureError,
     r"version='3' is not supported.*supported values: 1, 2"),
    ({"file-index.bitmap.columns": "name", "file-index.bitmap.name.index-block-size": "8 b"}, OptionError,
     "between 16 bytes"),
    ({"file-index.bitmap.columns": "name", "file-index.bitmap.name.colour": "2"}, OptionError,
     "Unknown table option 'file-index.bitmap.name.colour'"),
    ({"file-index.vector.columns": "id"}, UnsupportedFeatureError, "file-index.vector.columns"),
    ({"file-index.range-bitmap.columns": "id", "file-index.range-bitmap.id.chunk-size": "2 gb"}, OptionError,
     "at most 2147483647"),
    ({"file-index.range-bitmap.columns": "id", "file-index.range-bitmap.name.chunk-size": "1 kb"}, OptionError,
     "does not list"),
    ({"file-index.range-bitmap.columns": "id", "file-index.range-bitmap.id.colour": "1"}, OptionError,
     "Unknown table option 'file-index.range-bitmap.id.colour'"),
])
def test_create_refuses_bad_file_index_options(catalog, options, error, match) -> None:
    with pytest.raises(error, match=match):
        catalog.create_table("db.t", SCHEMA, options=options)


def test_alter_validates_file_index_options_too(catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, options={f"{BLOOM}.columns": "id"})
    with pytest.raises(OptionError, match="names column 'gone'"):
        t.update_schema().set_option(f"{BLOOM}.columns", "gone").commit()
    t.update_schema().set_option(f"{BLOOM}.columns", "id,name").set_option(f"{BLOOM}.name.items", "10").commit()
    assert t.refresh().schema.options[f"{BLOOM}.name.items"] == "10"


@pytest.mark.parametrize(("index", "column", "why"), [
    (BLOOM, "flag", "no bloom-filter hash for type BOOLEAN"), (BLOOM, "name[k]", "not a map with CHAR / VARCHAR"),
    ("file-index.bitmap", "flag", "no BOOLEAN layout"), ("file-index.bitmap", "m[k]", "map values"),
    ("file-index.bitmap", "m", "does not support type MAP"),
    # range-bitmap of a MAP column: refused at create and ALTER (test_range_bitmap_column_types.py)
    ("file-index.range-bitmap", "m[k]", "map values"),
])
def test_unhashable_or_nested_columns_refuse_writes_and_compaction_only(catalog, index, column, why) -> None:
    """Tables another engine configured so (Paimon before 2.0 let them be created; 2.0 refuses some at
    create and ALTER, as we do: test_file_index_column_types.py)."""
    t = catalog.create_table("db.t", SCHEMA)
    t.write_arrow(_rows(range(5)))
    schema = t.schema
    carried = dataclasses.replace(schema, id=schema.id + 1, options={**schema.options, f"{index}.columns": column})
    t.file_io.write_bytes(t.paths.schema_file(carried.id), carried.to_json().encode())
    t = t.refresh()
    with pytest.raises(UnsupportedFeatureError, match=why):
        t.write_arrow(_rows(range(5, 6)))
    with pytest.raises(UnsupportedFeatureError, match=f"{index}.columns"):
        t.compact(full=True)
    assert t.to_arrow().num_rows == 5
    t.create_tag("kept")
    t.expire_snapshots()
    t.remove_orphan_files(dry_run=True)


def test_bloom_filters_of_map_values_hash_each_rows_value_of_the_key(catalog) -> None:
    # sized by the map column's options unless the key has its own (Paimon's MapFileIndexMaintainer)
    t = catalog.create_table("db.t", SCHEMA, options={
        f"{BLOOM}.columns": "m[k],m[other]", f"{BLOOM}.m.items": "64", f"{BLOOM}.m[other].items": "8",
        "file-index.in-manifest-threshold": "1 mb"})
    t.write_arrow(_rows(range(40)))
    (meta,) = [f for sp in t.plan() for f in sp.files]
    blooms = bloom_filters(meta.embedded_file_index)
    assert set(blooms) == {"m[k]", "m[other]"}
    assert blooms["m[k]"].num_bits == BloomFilter64.sized(64, 0.1).num_bits
    assert blooms["m[other]"].num_bits == BloomFilter64.sized(8, 0.1).num_bits
    int_type = parse_type("INT")
    assert blooms["m[k]"].might_contain(fast_hash(pa.array(range(40), pa.int32()), int_type)).all()
    misses = blooms["m[k]"].might_contain(fast_hash(pa.array(range(1000, 2000), pa.int32()), int_type))
    assert misses.mean() < 0.5
    assert not blooms["m[other]"].bits.any()  # no row has the key: an empty filter


# ---------------------------------------------------------------- container and bloom filter


def test_container_round_trips_names_java_writes_in_modified_utf8() -> None:
    names = {"id": {"bloom-filter": b"\x00\x00\x00\x01\xff"}, "nul\x00é日😀": {"bloom-filter": None, "x": b""}}
    data = write_container(names)
    assert data[:8] == (1493475289347502).to_bytes(8, "big")
    assert read_container(data) == names
    # NUL is two bytes and a supplementary character two 3-byte surrogates in Java's writeUTF
    assert b"\xc0\x80" in data and b"\xed\xa0\xbd\xed\xb8\x80" in data


def test_bloom_filter_has_no_false_negatives_and_few_false_positives() -> None:
    values = pa.array([f"v{i}" for i in range(2000)])
    hashes = fast_hash(values, from_arrow(pa.string()))
    bloom = BloomFilter64.sized(2000, 0.01)
    bloom.add_hashes(hashes[:1000])
    bloom.add_hashes(hashes[1000:])
    again = bloom_filters(write_container({"c": {"bloom-filter": bloom.to_bytes()}}))["c"]
    assert again.might_contain(hashes).all()
    absent = fast_hash(pa.array([f"w{i}" for i in range(5000)]), from_arrow(pa.string()))
    assert again.might_contain(absent).mean() < 0.03


VECTORS = json.loads((Path(__file__).parents[1] / "data" / "file_index_java_vectors.json").read_text())


@pytest.mark.parametrize("case", VECTORS["hashes"], ids=lambda c: c["paimon_type"])
def test_hash_of_every_hashed_type_equals_java_09s(case) -> None:
    # values and FastHash results Paimon Java 0.9 computed (tests/differential/test_file_index_java.py
    # checks that the file holds Java's answers)
    paimon_type = parse_type(case["paimon_type"])
    values = decode_values(case["values"], to_arrow(paimon_type))
    assert fast_hash(values, paimon_type).view(np.int64).tolist() == case["hashes"]


@pytest.mark.parametrize("case", VECTORS["containers"], ids=lambda c: c["options"][f"{BLOOM}.name.items"])
def test_index_of_rows_is_the_container_java_09_wrote(catalog, case) -> None:
    t = catalog.create_table("db.v", pa.schema([("id", pa.int64()), ("name", pa.string())]), options=case["options"])
    ids = range(40)
    rows = pa.table({"id": list(ids), "name": [f"name-{i}" for i in ids]})
    builder = FileIndexBuilder(index_plan(t.schema))
    builder.add(rows)
    assert builder.finish() == (base64.b64decode(case["embedded"]), False)


def test_xxhash64_known_vectors() -> None:
    # XXH64 reference values for seed 0 (xxhash's sanity checks)
    hashed = xxhash64(pa.array([b"", b"a", b"abc"], pa.binary())).tolist()
    assert hashed == [0xEF46DB3751D8E999, 0xD24EC4F1A98C6E5B, 0x44BC2CF5AD770999]


def test_nulls_are_not_hashed() -> None:
    out = fast_hash(pa.chunked_array([pa.array([1, None, 3]), pa.array([None], pa.int64())]),
                    from_arrow(pa.int64()))
    assert len(out) == 2 and out.dtype == np.uint64


# ---------------------------------------------------------------- what writes produce


def _files(t) -> list:
    return [f for s in t.plan() for f in s.files]


def _paths(t) -> list[Path]:
    """The live data files of ``t`` and their extra files, absolute."""
    return [Path(p) for s in t.plan() for f in s.files for p in t.store.written_file_paths(s.partition, s.bucket, f)]


def test_writes_embed_small_indexes_and_write_large_ones_beside_the_file(catalog) -> None:
    small = catalog.create_table("db.small", SCHEMA, options={f"{BLOOM}.columns": "id", f"{BLOOM}.id.items": "10"})
    small.write_arrow(_rows(range(10)))
    (f,) = _files(small)
    assert f.extra_files == () and f.embedded_file_index is not None
    assert bloom_filters(f.embedded_file_index)["id"].might_contain(
        fast_hash(pa.array(range(10), pa.int64()), from_arrow(pa.int64()))).all()
    large = catalog.create_table("db.large", SCHEMA, options={f"{BLOOM}.columns": "id,name"})
    large.write_arrow(_rows(range(10)))
    (f,) = _files(large)
    assert f.embedded_file_index is None and f.extra_files == (f.file_name + ".index",)
    data_file, index_file = _paths(large)
    assert index_file.name == f.extra_files[0] and index_file.parent == data_file.parent
    assert index_file.stat().st_size > 500


class _IndexFileFails(LocalFileIO):
    """Local IO whose ``.index`` files cannot be written (the disk is full when the index goes out)."""

    def write_bytes(self, path: str, data: bytes) -> None:
        if path.endswith(".index"):
            Path(path).write_bytes(data[:10])  # a partial file exists, as after a real ENOSPC
            raise OSError(errno.ENOSPC, "No space left on device", path)
        super().write_bytes(path, data)


def test_a_failed_index_file_removes_the_data_file_and_every_earlier_file(catalog, tmp_path: Path) -> None:
    t = catalog.create_table("db.t", SCHEMA, options={f"{BLOOM}.columns": "id"})
    bucket = tmp_path / "bucket-0"
    writer = DataFileWriter(_IndexFileFails(), str(bucket), t.store.schema, t.store.data_file_config())
    with pytest.raises(OSError, match="No space"):
        writer.write(_rows(range(100)).append_column("_SEQUENCE_NUMBER", pa.array(range(100), pa.int64())), level=0)
    assert not bucket.exists() or list(bucket.iterdir()) == []


# ---------------------------------------------------------------- maintenance


def test_compaction_indexes_its_outputs_and_expiry_and_orphans_follow_index_files(catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", f"{BLOOM}.columns": "id,name"})
    for k in range(3):
        t.write_arrow(_rows(range(k * 10, k * 10 + 10)))
    before = _paths(t)
    assert len(before) == 6 and sum(p.suffix == ".index" for p in before) == 3
    t.compact(full=True)
    t = t.refresh()
    after = _paths(t)
    (out,) = _files(t)
    assert out.extra_files == (out.file_name + ".index",)
    assert bloom_filters(after[1].read_bytes())["name"].might_contain(
        fast_hash(pa.array([f"name-{i}" for i in range(30)]), from_arrow(pa.string()))).all()
    # orphan removal keeps every index file a snapshot references, and removes an unreferenced one
    stray = after[0].parent / "data-stray.parquet.index"
    stray.write_bytes(b"x")
    os.utime(stray, (time.time() - 60, time.time() - 60))  # older than the cutoff: it is strict, as Paimon's
    removed = t.remove_orphan_files(older_than=dt.timedelta(0), dry_run=False, allow_recent=True)
    assert all(p.exists() for p in before + after) and not stray.exists()
    assert str(stray) in {str(Path(p)) for p in removed.paths}
    # expiry deletes the compacted inputs with their index files, and nothing of the output
    t.expire_snapshots(retain_min=1, older_than=dt.timedelta(0))
    assert not any(p.exists() for p in before) and all(p.exists() for p in after)
    assert t.to_arrow(filter=[("name", "=", "name-17")]).column("id").to_pylist() == [17]


# ---------------------------------------------------------------- reads skip files by their indexes


def _interleaved(t, files: int = 4, per_file: int = 50) -> None:
    """``files`` files whose id and name ranges overlap (file k holds ids k, k + files, ...), so
    that min/max stats prune none of them."""
    for k in range(files):
        t.write_arrow(_rows(range(k, files * per_file, files)))


def _planned(t, filter) -> int:
    return sum(len(s.files) for s in t.plan(filter=filter))


@pytest.mark.parametrize("sizing", [{f"{BLOOM}.id.items": "60", f"{BLOOM}.name.items": "60",
                                     f"{BLOOM}.id.fpp": "0.01", f"{BLOOM}.name.fpp": "0.01"}, {}],
                         ids=["embedded", "index-file"])
def test_reads_open_only_files_whose_index_may_hold_the_value(catalog, sizing) -> None:
    t = catalog.create_table("db.t", SCHEMA, options={f"{BLOOM}.columns": "id,name", **sizing})
    _interleaved(t)
    assert _planned(t, None) == 4
    assert all((f.embedded_file_index is not None) == bool(sizing) for f in _files(t))
    opened = 0
    for i in range(0, 200, 3):
        for flt in ([("id", "=", i)], [("name", "in", [f"name-{i}", "absent"])],
                    [("id", "=", i), ("name", "!=", "x")]):
            opened += _planned(t, flt)
            assert t.to_arrow(filter=flt).column("id").to_pylist() == [i]
    queries = 3 * len(range(0, 200, 3))
    assert queries <= opened < 1.2 * queries  # the file holding the value, rarely a false positive
    # an OR opens the files of both values; a value no file holds opens (almost) none
    assert _planned(t, [[("id", "=", 1)], [("id", "=", 2)]]) >= 2
    assert sum(_planned(t, [("name", "=", f"nope-{i}")]) for i in range(50)) < 10
    # file-index.read.enabled = false: every file is read
    t.update_schema().set_option("file-index.read.enabled", "false").commit()
    assert _planned(t.refresh(), [("id", "=", 5)]) == 4


def test_reads_skip_files_by_bitmaps_exactly(catalog) -> None:
    # bitmaps have no false positives: a file is opened exactly when a row of it matches the clause
    t = catalog.create_table("db.t", SCHEMA, options={"file-index.bitmap.columns": "id,name"})
    _interleaved(t)  # file k holds ids k, k + 4, ...; name-i on row id i
    full = t.to_arrow()
    for flt in ([("id", "=", 9)], [("id", "in", [1, 2, 500])], [("name", "=", "nope")],
                [("id", "=", 9), ("name", "=", "name-9")], [("id", "=", 9), ("name", "=", "name-13")],
                [("id", "not in", list(range(0, 200, 4)))], [("name", "!=", "name-0")],
                [[("id", "=", 3)], [("name", "in", ["name-4", "name-8"])]]):
        pred = Predicate.of(flt)
        assert pred is not None
        expected = pred.filter_table(full)
        holding = {i % 4 for i in expected.column("id").to_pylist()}
        assert _planned(t, flt) == len(holding), flt
        assert sorted(t.to_arrow(filter=flt).column("id").to_pylist()) == sorted(expected.column("id").to_pylist())


@pytest.mark.parametrize("index", [BLOOM, "file-index.bitmap"])
def test_primary_key_reads_never_skip_files_by_value_indexes(catalog, index) -> None:
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", "write-only": "true", f"{index}.columns": "name"})
    t.write_arrow(_rows(range(5)))
    newer = _rows(range(5)).set_column(1, "name", pa.array([f"new-{i}" for i in range(5)]))
    t.write_arrow(newer)
    assert all(f.embedded_file_index is not None or f.extra_files for f in _files(t))  # indexed, as HEAD
    # the newer file lacks name-3, yet it replaces the older row: skipping it would resurrect name-3
    assert _planned(t, [("name", "=", "name-3")]) == 2
    assert _planned(t, [("name", "!=", "new-3")]) == 2
    assert t.to_arrow(filter=[("name", "=", "name-3")]).num_rows == 0


@pytest.mark.parametrize("garbage", [b"garbage", None], ids=["container", "bitmap"])
def test_an_unreadable_index_file_fails_the_filtered_read(catalog, garbage) -> None:
    """Java 0.9's reader fails on a damaged ``.index`` file (``FileIndexSkipper``): so do we,
    naming it, and a read without a filter still reads every row."""
    options = ({f"{BLOOM}.columns": "id"} if garbage else
               {"file-index.bitmap.columns": "id", "file-index.in-manifest-threshold": "0"})
    t = catalog.create_table("db.t", SCHEMA, options=options)
    _interleaved(t, files=2, per_file=5)
    for p in _paths(t):
        if p.suffix == ".index":
            # the container itself, or a bitmap payload whose entries run past its end
            p.write_bytes(garbage or write_container({"id": {"bitmap": b"\x01" + bytes(4) + b"\x7f\xff\xff\xff\x00"}}))
    with pytest.raises(CorruptMetadataError, match=r"the file index data-.*\.index of data-.* is corrupt"):
        t.to_arrow(filter=[("id", "=", 3)])
    assert t.to_arrow().num_rows == 10


def test_two_phase_commit_messages_carry_indexes_and_abort_removes_index_files(catalog) -> None:
    from lake_assets.ops.commit_message import CommitMessage

    small = {f"{BLOOM}.id.items": "10"}
    for name, options in (("db.embedded", small), ("db.files", {})):
        t = catalog.create_table(name, SCHEMA, options={f"{BLOOM}.columns": "id", **options})
        writer = t.new_writer(commit_user="u", write_only=True)
        writer.write_arrow(_rows(range(10)))
        messages = [CommitMessage.from_json(m.to_json()) for m in writer.prepare_commit()]
        (f,) = [f for m in messages for f in m.new_files]
        assert (f.embedded_file_index is not None) == bool(options)
        assert f.extra_files == (() if options else (f.file_name + ".index",))
        t.new_committer("u").commit(messages, commit_identifier=1)
        assert _files(t.refresh()) == [f]
        # a second write aborted: its data and index files are gone, the committed ones stay
        writer = t.new_writer(commit_user="u", write_only=True)
        writer.write_arrow(_rows(range(10, 20)))
        aborted = writer.prepare_commit()
        on_disk = {p.name for p in _paths(t)}
        writer.abort(aborted)
        folder = _paths(t)[0].parent
        assert {p.name for p in folder.iterdir()} == on_disk


def test_literals_that_do_not_convert_exactly_prune_nothing(catalog) -> None:
    schema = pa.schema([("ts", pa.timestamp("us")), ("f", pa.float32())])
    t = catalog.create_table("db.t", schema, options={f"{BLOOM}.columns": "ts,f"})
    rows = pa.table({"ts": [dt.datetime(2024, 1, 1, 12)], "f": [0.1]}, schema=schema)
    t.write_arrow(rows)
    t.write_arrow(pa.table({"ts": [dt.datetime(2024, 1, 2)], "f": [0.5]}, schema=schema))
    zoned = dt.datetime(2024, 1, 1, 12, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    # a zoned literal for a naive column is no value of it: refused before any file is planned
    with pytest.raises(FilterError, match=r"column 'ts' \(TIMESTAMP\(6\)\): a zoned time"):
        _planned(t, [("ts", "=", zoned)])
    # a FLOAT column's literal is rounded to FLOAT, as Java's floatValue(): 0.1 is the 0.1f written
    assert _planned(t, [("f", "=", 0.1)]) == 1
    assert _planned(t, [("ts", "=", dt.datetime(2024, 1, 1, 12))]) == 1
    assert _planned(t, [("f", "=", 0.5)]) == 1


# ---------------------------------------------------------------- tables other engines indexed


def _schema_with(options: dict[str, str]):
    from lake_assets.spec.schema import TableSchema
    from lake_assets.spec.types import STRING_LENGTH, BigIntType, DataField, VarCharType

    fields = (DataField(0, "id", BigIntType(nullable=False)), DataField(1, "v", VarCharType(STRING_LENGTH)))
    return TableSchema(0, fields, 1, (), (), dict(options))


@pytest.mark.parametrize(("options", "refused"), [
    ({f"{BLOOM}.columns": "id,v", f"{BLOOM}.v.fpp": "0.01", f"{BLOOM}.v.items": "7",
      "file-index.in-manifest-threshold": "1 kb", "file-index.read.enabled": "false"}, set()),
    ({"file-index.bitmap.columns": "v", "file-index.bitmap.v.index-block-size": "16 kb",
      "file-index.bitmap.v.version": "1"}, set()),
    ({"file-index.bitmap.columns": "v", "file-index.bitmap.v.version": "2"}, set()),
    ({"file-index.bitmap.columns": "v", "file-index.bitmap.v.version": "3"}, {"WRITE", "COMPACT"}),
    ({"file-index.bsi.columns": "id"}, set()),
    ({"file-index.bsi.columns": "v"}, {"WRITE", "COMPACT"}),  # no bsi of a string (Paimon's writer fails)
    ({"file-index.range-bitmap.columns": "id,v", "file-index.range-bitmap.id.chunk-size": "8 kb"}, set()),
    ({"file-index.range-bitmap.columns": "id", "file-index.range-bitmap.id.chunk-size": "lots"},
     {"WRITE", "COMPACT"}),  # carried, not parsing
    # an index type of a newer Paimon or a plug-in, with an option of its own
    ({"file-index.vector.columns": "v", "file-index.vector.v.dimension": "8"}, {"WRITE", "COMPACT"}),
    ({f"{BLOOM}.columns": "id", f"{BLOOM}.id.fpp": "2"}, {"WRITE", "COMPACT"}),  # carried, not parsing
    ({f"{BLOOM}.columns": "missing"}, {"WRITE", "COMPACT"}),
])
def test_carried_file_index_options_refuse_only_what_writes_files(options, refused) -> None:
    from lake_assets.table_support import Op, schema_refusals, validate_open

    validate_open(_schema_with(options))  # every operation may open the table
    refusals = schema_refusals(_schema_with(options))
    assert {op.name for op in Op if any(r.blocks(op) for r in refusals)} == refused
    for r in refusals:
        assert r.property.split(" ")[1].startswith("file-index.")


def test_a_table_carrying_another_index_type_is_read_tagged_expired_and_cleaned(catalog) -> None:
    import json

    t = catalog.create_table("db.t", SCHEMA, options={"snapshot.num-retained.min": "1"})
    for k in range(3):
        t.write_arrow(_rows(range(k * 5, k * 5 + 5)))
    # the schema as a newer Paimon would leave it (crafted metadata: create and ALTER refuse these)
    schema_file = Path(t.store.paths.schema_file(0))
    doc = json.loads(schema_file.read_text())
    doc["options"].update({"file-index.vector.columns": "id"})
    schema_file.write_text(json.dumps(doc))
    t = catalog.get_table("db.t")
    assert t.to_arrow(filter=[("name", "=", "name-7")]).column("id").to_pylist() == [7]
    t.create_tag("t1")
    t.rollback_to(tag="t1")
    t.expire_snapshots(retain_min=1, older_than=dt.timedelta(0))
    t.remove_orphan_files(older_than=dt.timedelta(0), dry_run=False, allow_recent=True)
    t.delete_tag("t1")
    with pytest.raises(UnsupportedFeatureError, match=r"file-index\.vector\.columns"):
        t.write_arrow(_rows(range(20, 21)))
    with pytest.raises(UnsupportedFeatureError, match=r"file-index\.vector\.columns"):
        t.compact(full=True)


@pytest.mark.parametrize("producer", ["input", "lookup", "full-compaction"])
def test_changelog_files_get_no_index_as_in_paimon(catalog, producer) -> None:
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={
        "bucket": "1", "changelog-producer": producer, f"{BLOOM}.columns": "name", f"{BLOOM}.name.items": "10"})
    t.write_arrow(_rows(range(5)))
    t.write_arrow(_rows(range(3)))
    t.compact(full=True)
    scan = t.store.file_store_scan()
    changelog = [e.file for snap in t.store.snapshot_manager.snapshots() for e in scan.changelog_entries(snap)]
    assert changelog and all(f.file_name.startswith("changelog-") for f in changelog)
    assert all(f.embedded_file_index is None and not f.extra_files for f in changelog)
    assert all(f.embedded_file_index is not None for f in _files(t))


def test_a_bloom_filter_java_could_not_size_refuses_writes(catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, options={f"{BLOOM}.columns": "id", f"{BLOOM}.id.items": "1000000000"})
    with pytest.raises(UnsupportedFeatureError, match="more bits than a Java int"):
        t.write_arrow(_rows(range(3)))
    # Java's sizing, by hand: (int)(1e7 * ln 10 / ln² 2) = 47925291, then up past the next multiple of 8
    assert BloomFilter64.sized(10_000_000, 0.1).num_bits == 47925296


def test_indexes_prune_by_field_id_across_a_rename_and_in_time_travel(catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, options={f"{BLOOM}.columns": "name", f"{BLOOM}.name.items": "60",
                                                      f"{BLOOM}.name.fpp": "0.01"})
    _interleaved(t, files=4, per_file=20)
    first = t.store.snapshot_manager.latest_id()
    (t.update_schema().rename_column("name", "label").set_option(f"{BLOOM}.columns", "label")
     .remove_option(f"{BLOOM}.name.items").remove_option(f"{BLOOM}.name.fpp").commit())
    t = t.refresh()
    # the files' indexes hold column "name"; the read's column "label" is the same field
    assert _planned(t, [("label", "=", "name-9")]) == 1
    assert t.to_arrow(filter=[("label", "=", "name-9")]).column("id").to_pylist() == [9]
    # a time-travel read names columns as its snapshot's schema did
    assert sum(len(s.files) for s in t.plan(snapshot_id=first, filter=[("name", "=", "name-10")])) == 1
    old = t.to_arrow(snapshot_id=first, filter=[("name", "=", "name-10")])
    assert old.column("id").to_pylist() == [10]
