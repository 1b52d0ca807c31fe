"""Per-level formats and codecs, changelog files' format and codec, and ORC zlib against Paimon Java 0.9.

* The texts of ``file.format.per.level`` / ``file.compression.per.level`` parse as Java 0.9's own
  ``CoreOptions.fileFormatPerLevel()`` / ``fileCompressionPerLevel()`` parse them (the map grammar:
  quotes, empty entries, duplicates, ``Integer.valueOf`` levels), with the same {level: value}.
* The same writes, by Java into one table and by us into another with the same options, leave
  files of each level (data and changelog) in the same format and codec, and each side reads the
  other's table as its own.
* ``changelog-file.format`` / ``changelog-file.compression`` are Paimon 1.1+ keys: Java 0.9 ignores
  them and writes changelog files as the level's data files; we follow 1.1+ (HEAD's
  KeyValueFileWriterFactory), and Java 0.9 reads our changes whatever their files' format, which
  its readers take from each file's extension.
* ORC with ``file.compression = zlib``: Java writes it, so do we, and each reads the other's; Parquet
  has no zlib, and Java's Parquet writer fails on it as we refuse it.
"""

from __future__ import annotations

from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

from lake_assets import Catalog, Table
from lake_assets.errors import OptionError, UnsupportedFeatureError
from lake_assets.formats.format_options import parse_level_map
from tests.java.oracle import JavaError, PaimonJava

from .helpers import assert_same_rows, assert_same_table

LEVEL_TEXTS = [
    "0:avro,3:parquet", "0:AVRO, 3 : Parquet ", "0:avro,", ",0:avro", "", " ", "0:avro,,3:orc", "0:", ":avro",
    "0:a:b", "0::avro", "0:avro,0:orc", "0:avro,00:orc", "0:avro,+0:orc", "-1:avro", "+2:orc", "007:orc",
    "1_0:orc", "2147483647:orc", "2147483648:orc", "-2147483648:orc", "\u0663:orc", "\uff15:orc", "\U0001d7d9:orc",
    "'0:avro',\"3:orc\"", "'0':'avro'", "0:'av,ro'", "0:'a''b'", "0:'avro", "0:'avro'x", "\u00a00:avro",
    "\u20030:avro", "\t0:avro\n", "0:avro\u00a0", "0:''", "0:\"\"", "0: zstd", "0:ZSTD,1:\u017fnappy", "a:b",
]

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("n", pa.int32())])


def _ours(text: str, key: str) -> dict[str, str] | str:
    try:
        levels = parse_level_map(text, key)
    except OptionError:
        return "!"
    if key == "file.format.per.level":
        return {str(level): value.lower() for level, value in levels.items()}
    return {str(level): value for level, value in levels.items()}


def test_level_maps_parse_as_java(java: PaimonJava) -> None:
    differ = {}
    for text in LEVEL_TEXTS:
        theirs = java.level_maps(text)
        for key, what in (("file.format.per.level", "format"), ("file.compression.per.level", "compression")):
            expected = theirs[what]
            expected = "!" if isinstance(expected, str) else expected
            ours = _ours(text, key)
            if ours != expected:
                differ[(key, text)] = (ours, theirs[what])
    assert differ == {}


def _codec(path: Path) -> str:
    """The codec a data file was written with, as its own metadata names it."""
    if path.suffix == ".parquet":
        return str(pq.ParquetFile(path).metadata.row_group(0).column(0).compression).lower()
    if path.suffix == ".orc":
        return str(orc.ORCFile(str(path)).compression).lower()
    with path.open("rb") as f:
        return str(fastavro.reader(f).metadata.get("avro.codec", "null"))


def _kinds(t: Table) -> dict[str, set[tuple[int, str, str]]]:
    """(level, format, codec) of the latest snapshot's data files, and of every snapshot's changelog files."""
    store = t.store
    scan = store.file_store_scan()

    def described(entries: list) -> set[tuple[int, str, str]]:  # type: ignore[type-arg]
        return {(e.file.level, e.file.file_name.rsplit(".", 1)[1],
                 _codec(Path(store.data_file_path(e.partition, e.bucket, e.file)))) for e in entries}

    changelog = set()
    for snap in store.snapshot_manager.snapshots():
        if snap.changelog_manifest_list:
            changelog |= described(scan.changelog_entries(snap))
    data = {(f.level, f.file_name.rsplit(".", 1)[1], _codec(Path(store.data_file_path(sp.partition, sp.bucket, f))))
            for sp in t.plan() for f in sp.files}
    return {"data": data, "changelog": changelog}


def _rows(ids: range, v: str) -> pa.Table:
    return pa.table({"id": list(ids), "v": [f"{v}{i}" for i in ids], "n": [i % 7 for i in ids]}, schema=SCHEMA)


BATCHES = [_rows(range(0, 40), "a"), _rows(range(20, 60), "b"), _rows(range(50, 70), "c")]


def _same_writes(java: PaimonJava, wh: str, lake: Catalog, options: dict[str, str]) -> tuple[Table, Table]:
    """The same writes and full compaction by Java into db.theirs and by us into db.ours; both
    tables as we read them."""
    java.create_table(wh, "db.theirs", SCHEMA, primary_keys=["id"], options=options)
    ours = lake.create_table("db.ours", SCHEMA, primary_keys=["id"], options=options)
    for batch in BATCHES[:2]:
        java.write(wh, "db.theirs", batch)
        ours.write_arrow(batch)
    java.compact(wh, "db.theirs", full=True)
    ours.refresh().compact(full=True)
    java.write(wh, "db.theirs", BATCHES[2])
    ours.refresh().write_arrow(BATCHES[2])
    return lake.get_table("db.theirs"), ours.refresh()


def _changes(t: Table) -> pa.Table:
    return t.read_changes(0, t.latest_snapshot().id)


def test_levels_are_written_in_the_formats_and_codecs_java_writes(java: PaimonJava, wh: str, lake: Catalog) -> None:
    """Level 0 as Avro (snappy), the top level as ORC with zlib, changelog files (input producer:
    written at level 0) as level 0's: Java and we write the same kinds of files, and each reads
    the other's table and changes as its own."""
    options = {"bucket": "1", "file.format": "parquet", "file.format.per.level": "0:AVRO, 5:orc",
               "file.compression.per.level": "0:snappy,5:ZLIB", "num-levels": "6", "changelog-producer": "input"}
    theirs, ours = _same_writes(java, wh, lake, options)
    kinds = _kinds(ours)
    assert kinds == _kinds(theirs)
    assert kinds == {"data": {(5, "orc", "zlib"), (0, "avro", "snappy")}, "changelog": {(0, "avro", "snappy")}}
    assert_same_table(java.read(wh, "db.ours"), ours.to_arrow())
    assert_same_table(theirs.to_arrow(), java.read(wh, "db.theirs"))
    latest = ours.latest_snapshot().id
    java_changes = pa.concat_tables([java.read_changes(wh, "db.ours", s - 1, s) for s in range(1, latest + 1)])
    assert_same_rows(_changes(ours).select(java_changes.column_names), java_changes)


def test_changelog_files_take_their_own_format_and_codec(java: PaimonJava, wh: str, lake: Catalog) -> None:
    """changelog-file.format / .compression (Paimon 1.1+): our changelog files are ORC with zlib
    while our data files stay Parquet / Avro by level. Java 0.9 predates the keys and writes its
    changelog files as level 0's data files; it reads ours all the same (a file's format is its
    extension to every reader)."""
    options = {"bucket": "1", "file.format": "parquet", "file.format.per.level": "0:avro", "num-levels": "6",
               "changelog-producer": "input", "changelog-file.format": "ORC", "changelog-file.compression": "zlib"}
    theirs, ours = _same_writes(java, wh, lake, options)
    kinds = _kinds(ours)
    # file.compression zstd: Avro files with zstandard, as Java's Avro writer picks it
    assert kinds == {"data": {(5, "parquet", "zstd"), (0, "avro", "zstandard")}, "changelog": {(0, "orc", "zlib")}}
    assert _kinds(theirs) == {"data": kinds["data"], "changelog": {(0, "avro", "zstandard")}}  # 0.9: the level's
    latest = ours.latest_snapshot().id
    java_changes = pa.concat_tables([java.read_changes(wh, "db.ours", s - 1, s) for s in range(1, latest + 1)])
    assert_same_rows(_changes(ours).select(java_changes.column_names), java_changes)
    assert_same_table(java.read(wh, "db.ours"), ours.to_arrow())


def test_lookup_compaction_rewrites_level0_into_the_format_of_its_level(java: PaimonJava, wh: str,
                                                                          lake: Catalog) -> None:
    """A lookup compaction relabels a lone level-0 file into the top level; with another format
    there, Paimon 1.x rewrites it in that format (LookupMergeTreeCompactRewriter.upgradeStrategy),
    and so do we. Java 0.9 predates it and relabels the Avro file, so its top level holds Avro
    files as well; Java reads ours, changes included, as we do."""
    options = {"bucket": "1", "file.format": "orc", "file.format.per.level": "0:avro", "num-levels": "3",
               "changelog-producer": "lookup"}
    java.create_table(wh, "db.theirs", SCHEMA, primary_keys=["id"], options=options)
    ours = lake.create_table("db.ours", SCHEMA, primary_keys=["id"], options=options)
    java.write(wh, "db.theirs", BATCHES[0])
    ours.write_arrow(BATCHES[0])
    assert _kinds(ours.refresh())["data"] == {(2, "orc", "zstd")}
    assert _kinds(lake.get_table("db.theirs"))["data"] == {(2, "avro", "zstandard")}  # Java 0.9: relabelled
    for batch in BATCHES[1:]:
        ours.refresh().write_arrow(batch)
    ours = ours.refresh()
    assert {fmt for _, fmt, _ in _kinds(ours)["data"]} == {"orc"}
    assert_same_table(java.read(wh, "db.ours"), ours.to_arrow())
    latest = ours.latest_snapshot().id
    java_changes = pa.concat_tables([java.read_changes(wh, "db.ours", s - 1, s) for s in range(1, latest + 1)])
    assert_same_rows(_changes(ours).select(java_changes.column_names), java_changes)


@pytest.mark.parametrize(("fmt", "codec"), [("orc", "zlib"), ("orc", "ZLIB"), ("avro", "zlib")])
def test_zlib_is_written_where_java_writes_it(java: PaimonJava, wh: str, lake: Catalog, fmt: str, codec: str) -> None:
    """ORC files with zlib (Java's CompressionKind.ZLIB); Avro files with snappy, as Java's Avro writer
    writes for every codec but zstd. Each side reads the other's files, compacted by the other."""
    options = {"bucket": "1", "file.format": fmt, "file.compression": codec}
    theirs, ours = _same_writes(java, wh, lake, options)
    kinds = _kinds(ours)
    expected = "zlib" if fmt == "orc" else "snappy"
    assert {c for _, _, c in kinds["data"]} == {expected}
    assert kinds == _kinds(theirs)
    java.compact(wh, "db.ours", full=True)  # Java compacts our files, we compact Java's
    theirs.refresh().compact(full=True)
    assert _kinds(lake.get_table("db.ours")) == _kinds(lake.get_table("db.theirs"))
    assert_same_table(lake.get_table("db.ours").to_arrow(), java.read(wh, "db.ours"))
    assert_same_table(lake.get_table("db.theirs").to_arrow(), java.read(wh, "db.theirs"))


def test_parquet_has_no_zlib_for_java_or_us(java: PaimonJava, wh: str, lake: Catalog) -> None:
    options = {"bucket": "1", "file.format": "orc", "file.compression": "zlib", "file.format.per.level": "0:parquet"}
    java.create_table(wh, "db.theirs", SCHEMA, primary_keys=["id"], options=options)
    with pytest.raises(JavaError, match="ZLIB"):
        java.write(wh, "db.theirs", BATCHES[0])
    ours = lake.create_table("db.ours", SCHEMA, primary_keys=["id"], options=options)
    with pytest.raises(UnsupportedFeatureError, match=r"level 0: 'parquet' files, codec 'zlib'"):
        ours.write_arrow(BATCHES[0])
    assert ours.latest_snapshot() is None
    assert not [p for p in (Path(wh) / "db.db" / "ours").rglob("data-*")]


def test_the_formats_own_codec_options_win_as_in_java(java: PaimonJava, wh: str, lake: Catalog) -> None:
    """parquet.compression and orc.compress replace file.compression (and a level's codec) for every
    file of their format, Java's writers reading them first: the same files on both sides."""
    options = {"bucket": "1", "file.format": "parquet", "file.compression": "zlib", "parquet.compression": "GZIP",
               "file.format.per.level": "0:orc", "file.compression.per.level": "0:lz4", "orc.compress": "Zlib",
               "num-levels": "4"}
    theirs, ours = _same_writes(java, wh, lake, options)
    kinds = _kinds(ours)
    assert kinds == {"data": {(3, "parquet", "gzip"), (0, "orc", "zlib")}, "changelog": set()}
    assert kinds == _kinds(theirs)
    assert_same_table(java.read(wh, "db.ours"), ours.to_arrow())
    assert_same_table(theirs.to_arrow(), java.read(wh, "db.theirs"))
