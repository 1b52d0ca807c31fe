"""``file.suffix.include.compression = true``: new data and changelog files are named as Paimon HEAD
names them (``DataFilePathFactory.makeExtension`` with ``compressFileExtension``, 1.3 and later):
``<prefix><uuid>-<n>.<codec extension>.<format>``, the codec the table's ``file.compression``
(HadoopCompressionType's extension, else the value as written), whatever the level's own codec.
Readers, orphan removal and health take such files by their last extension. Vectors below are
from Java's source (HadoopCompressionType: zstd -> zst, gzip -> gz, snappy, lz4; none -> none)."""

from __future__ import annotations

import re
from datetime import timedelta

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_assets import Catalog
from lake_assets.formats.file_format import format_of_file
from lake_assets.formats.file_names import compression_extension, file_extension
from lake_assets.table import Table

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


@pytest.mark.parametrize(("codec", "extension"), [
    ("zstd", "zst"), ("ZSTD", "zst"), ("gzip", "gz"), ("snappy", "snappy"), ("lz4", "lz4"), ("bzip2", "bz2"),
    ("deflate", "deflate"), ("none", None), ("NONE", None), ("lz4_raw", "lz4_raw"), ("LZ4_RAW", "LZ4_RAW"),
    ("uncompressed", "uncompressed"), ("", None),
])
def test_codec_extensions_are_javas(codec: str, extension: str | None) -> None:
    assert compression_extension(codec) == extension
    assert file_extension("parquet", extension) == (f".{extension}.parquet" if extension else ".parquet")


@pytest.mark.parametrize(("name", "fmt"), [
    ("data-x-0.zst.parquet", "parquet"), ("data-x-0.zstd.parquet", "parquet"),  # HEAD's and 1.0-1.2's names
    ("data-x-0.gz.orc", "orc"), ("data-x-0.lz4_raw.parquet", "parquet"), ("data-x-0.uncompressed.avro", "avro"),
    ("data-x-0.parquet", "parquet"), ("data-x-0.json.gz", "json"), ("data-x-0.csv.zst", "csv"),
])
def test_the_format_is_the_last_extension_unless_that_is_a_codec(name: str, fmt: str) -> None:
    assert format_of_file(name) == fmt


def _names(t: Table) -> list[str]:
    snap = t.latest_snapshot()
    return sorted(e.file.file_name for e in t.store.file_store_scan().live_entries(snap))


def _rows(ks: range) -> pa.Table:
    return pa.table({"k": list(ks), "v": [str(k) for k in ks]}, schema=SCHEMA)


@pytest.mark.parametrize(("options", "suffix"), [
    ({}, ".zst.parquet"),  # file.compression's default, zstd
    ({"file.compression": "snappy"}, ".snappy.parquet"),
    ({"file.compression": "LZ4_RAW"}, ".LZ4_RAW.parquet"),
    ({"file.compression": "uncompressed"}, ".uncompressed.parquet"),
    ({"file.format": "orc", "file.compression": "zstd"}, ".zst.orc"),
    ({"file.format": "orc", "file.compression": "zlib"}, ".zlib.orc"),  # no Hadoop codec: the value itself
    ({"file.format": "avro", "file.compression": "snappy"}, ".snappy.avro"),
])
def test_writes_and_compaction_name_files_with_the_codec(catalog: Catalog, options: dict[str, str], suffix: str):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"],
                             options={"bucket": "1", "file.suffix.include.compression": "true", **options})
    t.write_arrow(_rows(range(5)))
    t.write_arrow(_rows(range(3, 8)))
    names = _names(t)
    assert len(names) == 2 and all(re.fullmatch(f"data-{UUID}-0{re.escape(suffix)}", n) for n in names), names
    t.compact(full=True)
    (compacted,) = _names(t)
    assert compacted.endswith(suffix) and compacted not in names
    assert t.to_arrow().sort_by("k").to_pylist() == _rows(range(8)).to_pylist()


def test_changelog_and_level_codecs_use_the_tables_codec(catalog: Catalog):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={
        "bucket": "1", "file.suffix.include.compression": "true", "changelog-producer": "input",
        "file.compression.per.level": "0:snappy", "file.compression": "gzip"})
    t.write_arrow(_rows(range(4)))
    snap = t.latest_snapshot()
    (data,) = _names(t)
    assert re.fullmatch(f"data-{UUID}-0\\.gz\\.parquet", data)  # named by the table's codec
    (entry,) = t.store.file_store_scan().live_entries(snap)
    path = t.store.data_file_path(entry.partition, entry.bucket, entry.file)
    assert pq.ParquetFile(t.file_io.open_input(path)).metadata.row_group(0).column(0).compression == "SNAPPY"
    mio = t.store.manifest_io()
    changelog = [e.file.file_name for m in mio.read_manifest_list(snap.changelog_manifest_list)
                 for e in mio.read_manifest(m.file_name)]
    assert len(changelog) == 1 and re.fullmatch(f"changelog-{UUID}-0\\.gz\\.parquet", changelog[0])
    assert t.read_changes(0, snap.id).num_rows == 4


def test_the_option_off_names_files_as_before(catalog: Catalog):
    t = catalog.create_table("db.t", SCHEMA, options={"file.suffix.include.compression": "false"})
    t.write_arrow(_rows(range(3)))
    assert all(re.fullmatch(f"data-{UUID}-0\\.parquet", n) for n in _names(t))


def test_orphans_health_and_expiry_take_suffixed_files(catalog: Catalog):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={
        "bucket": "1", "file.suffix.include.compression": "true", "snapshot.num-retained.min": "1",
        "snapshot.num-retained.max": "1"})
    for i in range(3):
        t.write_arrow(_rows(range(i, i + 3)))
    live = _names(t)
    assert t.remove_orphan_files(older_than=timedelta(0)).paths == []
    assert t.health().num_rows > 0
    t.compact(full=True)
    t.expire_snapshots()
    (left,) = _names(t)
    assert left.endswith(".zst.parquet") and left not in live
    assert t.to_arrow().sort_by("k").to_pylist() == _rows(range(5)).to_pylist()
