"""Options of the data file formats (parquet.*, orc.*, avro.*, per-level formats and codecs): each
honoured option changes the written file as claimed, a value that would mislead readers is refused
for writes only, and maintenance of a table carrying such options still works."""

from __future__ import annotations

import random
from datetime import timedelta
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

from lake_assets import Catalog, OptionError, UnsupportedFeatureError
from lake_assets.formats.file_format import format_of_file

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
ROWS = 20_000


def _rows(start: int = 0, n: int = ROWS) -> pa.Table:
    return pa.table({"id": list(range(start, start + n)), "v": [f"value-{i % 50}" for i in range(start, start + n)]},
                    schema=SCHEMA)


def _table(tmp_path: Path, options: dict[str, str], pk: bool = True):
    cat = Catalog(str(tmp_path))
    cat.create_database("db")
    return cat.create_table("db.t", SCHEMA, primary_keys=["id"] if pk else [],
                            options={"bucket": "1" if pk else "-1", **options})


def _files(tmp_path: Path, ext: str) -> list[Path]:
    return sorted(tmp_path.rglob(f"data-*.{ext}"))


def test_parquet_options_shape_the_file(tmp_path: Path) -> None:
    t = _table(tmp_path, {"parquet.block.size": "65536", "parquet.page.size": "4096",
                          "parquet.enable.dictionary": "false", "parquet.bloom.filter.enabled#v": "true",
                          "parquet.bloom.filter.expected.ndv#v": "1000"})
    t.write_arrow(_rows())
    (path,) = _files(tmp_path, "parquet")
    md = pq.ParquetFile(path).metadata
    assert md.num_row_groups > 1  # 64 KiB row groups, not one per file
    v = md.row_group(0).column(md.schema.names.index("v"))
    assert not v.has_dictionary_page
    assert v.bloom_filter_offset is not None and v.bloom_filter_length > 0
    ident = md.row_group(0).column(md.schema.names.index("id"))
    assert ident.bloom_filter_offset is None  # only the column asked for
    # 4 KiB pages: many data pages in a chunk (its uncompressed size spans several)
    assert v.total_uncompressed_size > 4 * 4096
    assert t.to_arrow().sort_by("id").equals(_rows())


def test_parquet_defaults_are_unchanged(tmp_path: Path) -> None:
    t = _table(tmp_path, {})
    t.write_arrow(_rows())
    (path,) = _files(tmp_path, "parquet")
    md = pq.ParquetFile(path).metadata
    assert md.num_row_groups == 1
    assert md.row_group(0).column(md.schema.names.index("v")).has_dictionary_page


def test_orc_options_shape_the_file(tmp_path: Path) -> None:
    # stripes of 1 MiB at most can only be told apart with enough data: wide random strings
    rng = random.Random(3)
    wide = pa.table({"id": list(range(ROWS)), "v": [rng.randbytes(64).hex() for _ in range(ROWS)]}, schema=SCHEMA)
    t = _table(tmp_path, {"file.format": "orc", "orc.stripe.size": str(1024 * 1024), "orc.compress.size": "131072",
                          "orc.bloom.filter.columns": "v", "orc.row.index.stride": "1000"})
    t.write_arrow(wide)
    (path,) = _files(tmp_path, "orc")
    f = orc.ORCFile(str(path))
    assert f.nstripes > 1
    assert f.compression_size == 131072
    assert f.row_index_stride == 1000
    assert t.to_arrow().sort_by("id").equals(wide)


@pytest.mark.parametrize("codec", ["null", "deflate", "snappy", "zstandard"])
def test_avro_codec_option_is_the_files_codec(tmp_path: Path, codec: str) -> None:
    t = _table(tmp_path, {"file.format": "avro", "avro.codec": codec})
    t.write_arrow(_rows())
    (path,) = _files(tmp_path, "avro")
    with path.open("rb") as f:
        assert fastavro.reader(f).metadata["avro.codec"] == codec
    assert t.to_arrow().sort_by("id").equals(_rows())


def test_avro_codecs_java_cannot_read_are_refused_for_writes_only(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedFeatureError, match=r"avro.codec='xz' is not supported.*zstandard"):
        _table(tmp_path, {"file.format": "avro", "avro.codec": "xz"})


def test_parquet_v2_pages_java_cannot_read_are_refused(tmp_path: Path) -> None:
    """Paimon Java 0.9 fails on pyarrow's v2 data pages (tests/differential/test_format_options_java.py
    found it): refused by name at create, and for writes of a table carrying it."""
    with pytest.raises(UnsupportedFeatureError, match=r"parquet.writer.version='v2' is not supported"):
        _table(tmp_path, {"parquet.writer.version": "v2"})


def test_malformed_format_option_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match=r"parquet.page.size"):
        _table(tmp_path, {"parquet.page.size": "big"})
    with pytest.raises(OptionError, match=r"file.format.per.level.*'avro'"):
        _table(tmp_path, {"file.format.per.level": "avro"})


def test_per_level_formats_and_codecs_for_writes_and_compaction(tmp_path: Path) -> None:
    t = _table(tmp_path, {"file.format.per.level": "0:avro,5:orc", "file.compression.per.level": "0:snappy",
                          "num-levels": "6"})
    t.write_arrow(_rows(0, 1000))
    t.write_arrow(_rows(500, 1000))
    level0 = {format_of_file(f.file_name) for sp in t.plan() for f in sp.files if f.level == 0}
    assert level0 == {"avro"}
    for path in _files(tmp_path, "avro"):
        with path.open("rb") as f:
            assert fastavro.reader(f).metadata["avro.codec"] == "snappy"  # level 0's codec, not zstd
    t.compact(full=True)
    files = [f for sp in t.plan() for f in sp.files]
    assert {(f.level, format_of_file(f.file_name)) for f in files} == {(5, "orc")}
    assert t.to_arrow().sort_by("id").equals(_rows(0, 1500))


def test_per_level_formats_do_not_apply_to_append_tables(tmp_path: Path) -> None:
    """Paimon's append writers always use file.format."""
    t = _table(tmp_path, {"file.format.per.level": "0:avro"}, pk=False)
    t.write_arrow(_rows(0, 100))
    assert _files(tmp_path, "parquet") and not _files(tmp_path, "avro")


def test_unknown_format_options_refuse_writes_but_not_maintenance(tmp_path: Path) -> None:
    """A parquet writer key we do not know (carried by a table another engine wrote) blocks writes
    and compaction of Parquet tables, never reads, expiry, orphan removal, rollback or tags."""
    from tests.unit.test_option_registry import _carry

    t = _table(tmp_path, {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    t.write_arrow(_rows(0, 10))
    t.write_arrow(_rows(10, 10))
    # orc.compress: a key of a format this Parquet table never writes (Java ignores it too)
    t = _carry(t, **{"parquet.page.row.count.limit": "100", "orc.compress": "ZLIB", "parquet.page.size": "big"})
    with pytest.raises(UnsupportedFeatureError, match=r"Cannot write to db.t: option parquet.page.size = 'big'.*"
                       r"option parquet.page.row.count.limit") as err:
        t.write_arrow(_rows(20, 10))
    assert "orc.compress" not in str(err.value)
    with pytest.raises(UnsupportedFeatureError, match=r"Cannot compact db.t"):
        t.compact(full=True)
    assert t.to_arrow().num_rows == 20
    t.create_tag("keep")
    t.expire_snapshots()
    t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    t.rollback_to(tag="keep")
    assert t.to_arrow().sort_by("id").equals(_rows(0, 20))
