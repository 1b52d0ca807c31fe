"""What lake_assets refuses per operation (lake_assets/table_support.py): pure planner cases, and the
refusals reaching `Table` before anything on storage changes (crafted metadata of our own tables)."""

from __future__ import annotations

import dataclasses
import json
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog, UnsupportedFeatureError
from lake_assets.errors import OptionError
from lake_assets.formats.file_format import table_format
from lake_assets.spec.manifest import DataFileMeta, FileKind, IndexManifestEntry, ManifestEntry, SimpleStats
from lake_assets.spec.schema import TableSchema
from lake_assets.spec.types import (
    STRING_LENGTH,
    BigIntType,
    DataField,
    DateType,
    LocalZonedTimestampType,
    VarCharType,
)
from lake_assets.table_support import (
    DATA,
    Op,
    data_file_format,
    entry_refusals,
    index_refusals,
    refuse,
    schema_refusals,
)

ALL_OPS = frozenset(Op)


def schema(options: dict[str, str], *, pk: bool = True, version: int = 3) -> TableSchema:
    fields = (DataField(0, "id", BigIntType(nullable=not pk)), DataField(1, "v", VarCharType(STRING_LENGTH)))
    return TableSchema(0, fields, 1, (), ("id",) if pk else (), dict(options), version=version)


def blocked(refusals) -> frozenset[Op]:
    return frozenset(op for op in Op if any(r.blocks(op) for r in refusals))


def entry(name: str = "data-a-0.parquet", *, bucket: int = 0, **file_fields) -> ManifestEntry:
    meta = DataFileMeta(name, 100, 1, b"", b"", SimpleStats.EMPTY, SimpleStats.EMPTY, 0, 0, 0, 0, **file_fields)
    return ManifestEntry(FileKind.ADD, b"", bucket, 2, meta)


def index(kind: str) -> IndexManifestEntry:
    return IndexManifestEntry(FileKind.ADD, b"", 0, kind, "index-x-0", 8, 2)


# ----------------------------------------------------------------------------------- schema rules
def test_supported_tables_refuse_nothing():
    assert schema_refusals(schema({"bucket": "4", "file.format": "parquet"})) == []
    assert schema_refusals(schema({"bucket": "-1"}, pk=False)) == []
    # lake_assets' own options and per-field options are known
    assert schema_refusals(schema({"bucket": "2", "compaction.parallelism": "2",
                                   "fields.v.aggregate-function": "sum"})) == []
    # postpone: batch reads skip bucket-postpone (as Paimon readers), compaction moves it into real
    # buckets (ops/postpone.py), writes go to bucket-postpone (ops/postpone_write.py) and streams
    # read what Paimon's stream scans read (ops/stream_postpone.py)
    assert schema_refusals(schema({"bucket": "-2"})) == []


@pytest.mark.parametrize(("options", "pk", "refused", "named"), [
    # postpone tables whose batch reads merge bucket-postpone in (ops/postpone_merge_read.py):
    # streams and change reads are refused, as Paimon refuses them with the option
    ({"bucket": "-2", "postpone.merge-on-read": "true"}, True, {Op.STREAM},
     "postpone.merge-on-read = true"),
    # dynamic-bucket PK tables are read, compacted and written (with their hash index), and so is
    # a table carrying the dynamic-bucket options lake_assets knows; others refuse writes
    ({"bucket": "-1", "dynamic-bucket.max-buckets": "4"}, True, {Op.WRITE}, "dynamic-bucket.max-buckets"),
    # fixed-bucket append tables are written and compacted (lsm/bucketed_append.py), with
    # compaction.max.file-num and with deletion vectors (one index file per bucket)
    ({"bucket": "3", "bucket-key": "id"}, False, set(), ""),
    ({"bucket": "3", "bucket-key": "id", "compaction.max.file-num": "8"}, False, set(), ""),
    ({"bucket": "3", "bucket-key": "id", "deletion-vectors.enabled": "true"}, False, set(), ""),
    # the unaware-bucket planner honours compaction.max.file-num and its fallback key
    # (lsm/compact_strategy.pick_append_small_files): nothing refused
    ({"bucket": "-1", "compaction.max.file-num": "8"}, False, set(), ""),
    ({"bucket": "-1", "compaction.early-max.file-num": "8"}, False, set(), ""),
    # bucket-function.type of a fixed-bucket append table's key: as for primary-key tables
    ({"bucket": "3", "bucket-key": "v", "bucket-function.type": "mod"}, False, {Op.WRITE},
     "bucket-function.type = 'mod' with bucket key (v)"),
    ({"bucket": "2", "file.format": "csv"}, True, DATA, "option file.format = 'csv'"),
    # ORC files take ORC's compression kinds only: Java's ORC writer fails on the others
    ({"bucket": "2", "file.format": "orc", "file.compression": "gzip"}, True, {Op.WRITE, Op.COMPACT},
     "file.compression = 'gzip' with file.format = 'orc'"),
    # LZO is an ORC kind Java writes but pyarrow's ORC writer does not
    ({"bucket": "2", "file.format": "orc", "file.compression": "LZO"}, True, {Op.WRITE, Op.COMPACT},
     "file.compression = 'LZO' with file.format = 'orc'"),
    # ... and Parquet files have no zlib (parquet-java's CompressionCodecName): the table's, a
    # level's or changelog files'
    ({"bucket": "2", "file.compression": "zlib"}, True, {Op.WRITE, Op.COMPACT},
     "file.compression = 'zlib' with file.format = 'parquet'"),
    ({"bucket": "2", "file.format": "orc", "file.format.per.level": "0:parquet", "file.compression": "zlib"},
     True, {Op.WRITE, Op.COMPACT}, "level 0: 'parquet' files, codec 'zlib'"),
    ({"bucket": "2", "file.format": "orc", "file.compression": "ZLIB", "changelog-file.format": "parquet"}, True,
     {Op.WRITE, Op.COMPACT}, "changelog-file.format = 'parquet' (changelog files: 'parquet', codec 'zlib')"),
    ({"bucket": "2", "changelog-file.compression": "zlib"}, True, {Op.WRITE, Op.COMPACT},
     "changelog-file.compression = 'zlib'"),
    # zlib suits level 0's ORC changelog files, not those a compaction writes at the Parquet levels
    ({"bucket": "2", "file.format.per.level": "0:orc", "changelog-file.compression": "zlib"}, True,
     {Op.WRITE, Op.COMPACT}, "(changelog files: 'parquet', codec 'zlib')"),
    # changelog files in a format lake_assets does not write, or in none (an empty text)
    ({"bucket": "2", "file.format": "parquet", "changelog-file.format": "lance"}, True, {Op.WRITE, Op.COMPACT},
     "changelog-file.format = 'lance'"),
    ({"bucket": "2", "changelog-file.format": ""}, True, {Op.WRITE, Op.COMPACT}, "changelog-file.format = ''"),
    # per-level maps Java's grammar refuses: an empty entry, a level twice, a level no int
    ({"bucket": "2", "file.format.per.level": "0:avro,,3:orc"}, True, {Op.WRITE, Op.COMPACT},
     "file.format.per.level"),
    ({"bucket": "2", "file.compression.per.level": "0:lz4,00:zstd"}, True, {Op.WRITE, Op.COMPACT},
     "file.compression.per.level"),
    ({"bucket": "2", "metadata.stats-mode.per.level": "4294967296:none"}, True, {Op.WRITE, Op.COMPACT},
     "metadata.stats-mode.per.level"),
    # deletion vectors: every engine and producer Paimon allows with them is written and compacted;
    # what Paimon refuses (first-row, full-compaction changelog) stays refused with Paimon's reason
    ({"bucket": "2", "deletion-vectors.enabled": "true", "merge-engine": "partial-update",
      "changelog-producer": "lookup"}, True, set(), ""),
    ({"bucket": "2", "deletion-vectors.enabled": "true", "merge-engine": "aggregation"}, True, set(), ""),
    ({"bucket": "2", "deletion-vectors.enabled": "true", "merge-engine": "first-row"}, True,
     {Op.WRITE, Op.COMPACT}, "First row merge engine does not need deletion vectors"),
    ({"bucket": "2", "deletion-vectors.enabled": "true", "changelog-producer": "full-compaction"}, True,
     {Op.WRITE, Op.COMPACT}, "only supported for NONE/INPUT/LOOKUP changelog producer"),
    ({"bucket": "2", "deletion-vectors.enabled": "true", "sequence.field": "v"}, True, set(), ""),
    ({"bucket": "2", "deletion-vectors.enabled": "true", "ignore-delete": "true"}, True, set(), ""),
    # row tracking: compaction stores each row's ids in its outputs (ops/compact/row_tracking_rewrite.py)
    ({"bucket": "-1", "row-tracking.enabled": "true"}, False, set(), ""),
    ({"bucket": "-1", "row-tracking.enabled": "true", "data-evolution.enabled": "true"}, False,
     set(), ""),  # compaction merges row-id ranges, change streams read each snapshot as HEAD
    # per-level formats are written; a level naming a format we do not write refuses writes only
    ({"bucket": "2", "file.format.per.level": "0:lance"}, True, {Op.WRITE, Op.COMPACT}, "file.format.per.level"),
    ({"bucket": "2", "file.compression.per.level": "0:lzo"}, True, {Op.WRITE, Op.COMPACT},
     "file.compression.per.level"),
    # format writer options: a malformed value, or a key we do not know of a format the table
    # writes, refuses writes and compaction only (never reads, expiry, orphans or rollback)
    ({"bucket": "2", "parquet.page.size": "big"}, True, {Op.WRITE, Op.COMPACT}, "parquet.page.size"),
    ({"bucket": "2", "avro.codec": "xz", "file.format": "avro"}, True, {Op.WRITE, Op.COMPACT}, "avro.codec"),
    ({"bucket": "2", "orc.encoding.strategy": "COMPRESSION", "file.format": "orc"}, True, {Op.WRITE, Op.COMPACT},
     "orc.encoding.strategy"),
    # the formats' own codec options replace file.compression for their files, as in Java
    ({"bucket": "2", "orc.compress": "gzip", "file.format": "orc"}, True, {Op.WRITE, Op.COMPACT},
     "orc.compress = 'gzip'"),
    ({"bucket": "2", "parquet.compression": "zlib", "file.format.per.level": "0:orc"}, True,
     {Op.WRITE, Op.COMPACT}, "parquet.compression = 'zlib'"),
    ({"bucket": "2", "parquet.page.row.count.limit": "100", "file.format.per.level": "0:avro,3:parquet",
      "file.format": "orc"}, True, {Op.WRITE, Op.COMPACT}, "parquet.page.row.count.limit"),
])
def test_schema_refusals_per_operation(options, pk, refused, named):
    refusals = schema_refusals(schema(options, pk=pk))
    assert blocked(refusals) == frozenset(refused)
    assert not refused or any(named in r.property or named in r.why for r in refusals)


def test_non_legacy_partition_names_refuse_only_local_zoned_timestamp_keys():
    """partition.legacy-name = false is implemented for every partition type but TIMESTAMP WITH LOCAL
    TIME ZONE, which Java names in the writing JVM's time zone: a wrong partition path would make
    reads miss files and orphan removal delete live ones, so every path operation is refused."""
    fields = (DataField(0, "id", BigIntType(nullable=False)), DataField(1, "d", DateType(nullable=False)),
              DataField(2, "ts", LocalZonedTimestampType(3, nullable=False)), DataField(3, "v", VarCharType(10)))

    def partitioned(keys: tuple[str, ...], legacy: str) -> TableSchema:
        return TableSchema(0, fields, 3, keys, ("id", *keys), {"bucket": "2", "partition.legacy-name": legacy})

    assert schema_refusals(partitioned(("d",), "false")) == []
    assert schema_refusals(partitioned(("d", "ts"), "true")) == []
    refusals = schema_refusals(partitioned(("d", "ts"), "FALSE"))
    assert blocked(refusals) == DATA | {Op.EXPIRE, Op.ORPHANS}
    assert [r.property for r in refusals] == [
        "partition.legacy-name = false with partition key 'ts' of type TIMESTAMP(3) WITH LOCAL TIME ZONE NOT NULL"]


def test_deletion_vector_tables_of_deduplicate_refuse_nothing():
    """Reads, streams, writes, compaction and maintenance all handle deletion vectors."""
    assert schema_refusals(schema({"bucket": "2", "deletion-vectors.enabled": "true"})) == []
    # unaware-bucket append tables too: compaction applies the vectors, deletes write them
    assert schema_refusals(schema({"bucket": "-1", "deletion-vectors.enabled": "true"}, pk=False)) == []


@pytest.mark.parametrize("options", [
    {"bucket": "2", "file.format": "orc"}, {"bucket": "2", "file.format": "avro"},
    {"bucket": "2", "file.format": "orc", "file.compression": "lz4"},
    {"bucket": "2", "file.format": "avro", "changelog-file.format": "avro"},
    # changelog files in another format or codec, zlib for ORC files (Java's ORC writer takes it),
    # Avro whatever file.compression names (Java's Avro writer writes snappy for all but zstd)
    {"bucket": "2", "changelog-file.format": "AVRO", "changelog-file.compression": "snappy"},
    {"bucket": "2", "file.format": "orc", "file.compression": "zlib"},
    {"bucket": "2", "file.format.per.level": "0:orc", "file.compression.per.level": "0:Zlib"},
    {"bucket": "2", "file.format": "avro", "file.compression": "zlib"},
    {"bucket": "2", "file.compression": "zlib", "parquet.compression": "GZIP", "file.format.per.level": "0:orc",
     "orc.compress": "zlib"},
    {"bucket": "2", "changelog-file.format": "orc", "changelog-file.compression": "zlib",
     "changelog-file.stats-mode": "none", "metadata.stats-mode.per.level": "0:none,5:full"},
    # a level Paimon never writes (negative; Java 0.9 still loads its format: a format we do not
    # write there is refused) and an entry in quotes: parsed as Java parses them
    {"bucket": "2", "file.format.per.level": "-1:orc,'0:avro',"},
])
def test_orc_and_avro_tables_are_supported(options):
    assert schema_refusals(schema(options)) == []


def test_java_09_schema_without_file_format_means_orc():
    # Paimon 0.9 wrote schema version 2 and defaulted to ORC: such a table's data is ORC
    text = json.dumps({"version": 2, "id": 0, "fields": [{"id": 0, "name": "id", "type": "BIGINT NOT NULL"}],
                       "highestFieldId": 0, "partitionKeys": [], "primaryKeys": ["id"],
                       "options": {"bucket": "1"}, "timeMillis": 0})
    old = TableSchema.from_json(text.encode(), "schema-0")
    assert table_format(old) == "orc"
    assert schema_refusals(old) == []


def test_unknown_option_refuses_maintenance_and_reads_unless_harmless():
    future = schema_refusals(schema({"bucket": "2", "paimon.future-feature": "on"}))
    assert blocked(future) == {Op.WRITE, Op.COMPACT, Op.EXPIRE, Op.ORPHANS, Op.ROLLBACK, Op.READ, Op.STREAM}
    assert "option paimon.future-feature = 'on'" in future[0].property
    # a key that never changes which rows a read returns leaves reads alone, but still no maintenance
    harmless = schema_refusals(schema({"bucket": "2", "lookup.remote-file.enabled": "true"}))
    assert blocked(harmless) == {Op.WRITE, Op.COMPACT, Op.EXPIRE, Op.ORPHANS, Op.ROLLBACK}
    # keys that only steer how writers place new rows refuse writes only (a newer Paimon's
    # dynamic-bucket.max-buckets; dynamic-bucket.target-row-num and postpone.batch-write-fixed-bucket
    # are known)
    for key in ("dynamic-bucket.max-buckets", "sink.watermark-time-zone", "postpone.future-writer-knob"):
        assert blocked(schema_refusals(schema({"bucket": "2", key: "8"}))) == {Op.WRITE}
    # tags and schema changes (the way to remove the option) stay allowed
    assert Op.TAG not in blocked(future) and Op.SCHEMA_CHANGE not in blocked(future)


def test_unknown_per_field_option_is_unknown():
    refusals = schema_refusals(schema({"bucket": "2", "fields.v.some-new-thing": "x"}))
    assert Op.COMPACT in blocked(refusals)


# ---------------------------------------------------------------------------------- manifest rules
@pytest.mark.parametrize(("name", "fmt"), [
    ("data-a-0.parquet", "parquet"), ("data-a-0.orc", "orc"), ("data-a-0.avro", "avro"),
    ("data-a-0.zstd.parquet", "parquet"), ("data-a-0.parquet.zst", "parquet"), ("data-a-0", ""),
    # formatIdentifier skips Hadoop codec extensions only (zst, not zstd): Java finds no format "zstd"
    ("data-a-0.parquet.zstd", "zstd"),
    ("DATA-A-0.PARQUET", "parquet"),
])
def test_data_file_format_is_the_extension_paimon_readers_use(name, fmt):
    assert data_file_format(name) == fmt


def test_entry_refusals():
    assert entry_refusals([entry(), entry("data-b-0.parquet", bucket=3)]) == []
    # a table may hold files of every format it had (file.format changed over time)
    assert entry_refusals([entry("data-a-0.avro"), entry("data-b-0.orc"), entry("data-c-0.parquet")]) == []
    csv = entry_refusals([entry("data-a-0.csv"), entry("data-b-0.csv")])
    assert len(csv) == 1 and blocked(csv) == DATA and "'csv'" in csv[0].property
    # bucket-postpone files: every operation handles them (ops/stream_postpone.py for change reads)
    assert entry_refusals([entry(bucket=-2)]) == []
    other = entry_refusals([entry(bucket=-3)])
    assert blocked(other) == DATA and "bucket -3" in other[0].property
    # files of row-tracking tables: read (and merged, data evolution) and written; compacted only
    # in a row-tracking table without data evolution, whose compaction keeps their ids
    assert blocked(entry_refusals([entry(write_cols=("v",))])) == {Op.COMPACT}
    assert blocked(entry_refusals([entry(first_row_id=0)])) == {Op.COMPACT}
    assert entry_refusals([entry(first_row_id=0), entry(write_cols=("v", "_ROW_ID"))], row_tracking=True) == []
    assert blocked(entry_refusals([entry(external_path="s3://elsewhere/data-a-0.parquet")])) == {Op.EXPIRE}


def test_dynamic_bucket_tables_cross_partition_ones_included_refuse_nothing():
    for options in ({"bucket": "-1"}, {}, {"dynamic-bucket.target-row-num": "10",
                                         "dynamic-bucket.initial-buckets": "2"}):
        assert schema_refusals(schema(options)) == []
    fields = (DataField(0, "id", BigIntType(nullable=False)), DataField(1, "dt", VarCharType(STRING_LENGTH)))
    # cross-partition upsert: writers keep the global key index (ops/cross_partition.py)
    cross = TableSchema(0, fields, 1, ("dt",), ("id",), {"bucket": "-1"}, version=3)
    assert schema_refusals(cross) == []
    within = TableSchema(0, fields, 1, ("dt",), ("id", "dt"), {"bucket": "-1"}, version=3)
    assert schema_refusals(within) == []


def test_index_refusals():
    dynamic, fixed = schema({"bucket": "-1"}), schema({"bucket": "2"})
    assert blocked(index_refusals([index("HASH")], dynamic)) == frozenset()
    assert blocked(index_refusals([index("HASH")], fixed)) == {Op.WRITE, Op.COMPACT}
    # applied by reads and maintained by compaction when the option is on; without it Java
    # ignores them, and compacting would keep vectors of rewritten rows
    assert blocked(index_refusals([index("DELETION_VECTORS")], fixed)) == {Op.WRITE, Op.COMPACT}
    dv = schema({"bucket": "2", "deletion-vectors.enabled": "true"})
    assert blocked(index_refusals([index("DELETION_VECTORS")], dv)) == set()
    assert blocked(index_refusals([index("BTREE_GLOBAL")], fixed)) == DATA


def test_refuse_names_table_operation_and_property():
    refusals = schema_refusals(schema({"bucket": "3", "bucket-key": "v", "bucket-function.type": "mod"},
                                      pk=False))
    refuse("db.t", Op.READ, refusals)  # allowed: no error
    refuse("db.t", Op.STREAM, refusals)
    with pytest.raises(UnsupportedFeatureError,
                       match=r"^Cannot write to db\.t: bucket-function.type = 'mod' with bucket key \(v\) "
                             r"is not supported; "):
        refuse("db.t", Op.WRITE, refusals)


# ------------------------------------------------------------------ the Table refuses before acting
def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _set_options(table_dir: Path, extra: dict[str, str]) -> None:
    """Rewrite the newest schema file as another engine would have left it (crafted metadata)."""
    path = max((table_dir / "schema").glob("schema-*"), key=lambda p: int(p.name.split("-")[1]))
    doc = json.loads(path.read_text())
    doc["options"].update(extra)
    path.write_text(json.dumps(doc))


@pytest.fixture
def crafted(tmp_path):
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    s = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = cat.create_table("db.t", s, primary_keys=["id"], options={"bucket": "2", "snapshot.num-retained.min": "1",
                                                                   "snapshot.time-retained": "1 ms",
                                                                   # six snapshots for the tests to act on
                                                                   "write-only": "true"})
    for i in range(6):
        t.write_arrow(pa.table({"id": [i, i + 1], "v": ["x", "y"]}, schema=s))
    return cat, tmp_path / "wh" / "db.db" / "t", s


MAINTENANCE_CALLS = {
    "compact": lambda t, s: t.compact(full=True),
    "expire": lambda t, s: t.expire_snapshots(retain_min=1, older_than=timedelta(0)),
    "orphans": lambda t, s: t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True),
    "rollback": lambda t, s: t.rollback_to(snapshot_id=1),
    "write": lambda t, s: t.write_arrow(pa.table({"id": [1], "v": ["z"]}, schema=s)),
}


@pytest.mark.parametrize("call", sorted(MAINTENANCE_CALLS))
def test_future_option_refuses_maintenance_before_touching_the_table(crafted, call):
    cat, table_dir, s = crafted
    _set_options(table_dir, {"paimon.future-feature": "on"})
    before = tree(table_dir)
    t = cat.get_table("db.t")  # opening is fine: nothing is refused until an operation needs it
    with pytest.raises(UnsupportedFeatureError, match=r"option paimon\.future-feature = 'on' is not supported"):
        MAINTENANCE_CALLS[call](t, s)
    assert tree(table_dir) == before


def test_read_harmless_unknown_option_reads_but_does_not_compact(crafted):
    cat, table_dir, _s = crafted
    expected = cat.get_table("db.t").to_arrow().sort_by("id")
    _set_options(table_dir, {"lookup.remote-file.enabled": "true"})
    t = cat.get_table("db.t")
    assert t.to_arrow().sort_by("id").equals(expected)
    before = tree(table_dir)
    with pytest.raises(UnsupportedFeatureError, match=r"Cannot compact db\.t: option lookup\.remote-file\.enabled"):
        t.compact(full=True)
    assert tree(table_dir) == before


def test_csv_table_is_refused_for_data_but_can_be_tagged_and_expired(crafted):
    cat, table_dir, _s = crafted
    _set_options(table_dir, {"file.format": "csv"})
    t = cat.get_table("db.t")
    before = tree(table_dir)
    for op in (lambda: t.to_arrow(), lambda: list(t.to_batches()), lambda: t.compact(),
               lambda: t.read_changes(1), lambda: t.new_writer("u")):
        with pytest.raises(UnsupportedFeatureError, match=r"file\.format = 'csv' is not supported"):
            op()
    assert tree(table_dir) == before
    # metadata-only operations do not depend on the data format
    t.create_tag("keep", snapshot_id=2)
    assert t.expire_snapshots(retain_min=1, retain_max=1, older_than=timedelta(0)).expired_snapshots


def test_files_in_another_format_are_refused_where_scanned(crafted):
    """A table whose manifests list files of a format lake_assets does not implement (CSV, which a
    newer Paimon writes): refused when a scan finds them, before acting."""
    cat, table_dir, s = crafted
    t = cat.get_table("db.t")
    snap = t.latest_snapshot()
    live = t.store.file_store_scan().live_entries(snap)
    renamed = [dataclasses.replace(e, file=dataclasses.replace(e.file, file_name=e.file.file_name[:-8] + ".csv"))
               if i == 0 else e for i, e in enumerate(live)]
    metas = t.store.manifest_io().write_manifests(renamed)
    base, _ = t.store.manifest_io().write_manifest_list(metas)
    empty, _ = t.store.manifest_io().write_manifest_list([])
    forged = dataclasses.replace(snap, id=snap.id + 1, base_manifest_list=base, delta_manifest_list=empty)
    (table_dir / "snapshot" / f"snapshot-{snap.id + 1}").write_text(forged.to_json())
    before = tree(table_dir)
    t = cat.get_table("db.t")
    for op in (lambda: t.to_arrow(), lambda: t.compact(full=True),
               lambda: t.write_arrow(pa.table({"id": [100], "v": ["z"]}, schema=s))):
        with pytest.raises(UnsupportedFeatureError, match=r"data file format 'csv' \(file data-.*\.csv\)"):
            op()
    assert tree(table_dir) == before
    # an older snapshot has only Parquet files: time travel to it still reads
    assert t.to_arrow(snapshot_id=snap.id).num_rows == 7


@pytest.mark.parametrize("type_json", ["VARIANT", "BLOB NOT NULL", "VECTOR<FLOAT, 3>", {"type": "GEOMETRY"}])
def test_newer_paimon_types_are_refused_when_opened_not_called_corrupt(crafted, type_json):
    cat, table_dir, _s = crafted
    path = table_dir / "schema" / "schema-0"
    doc = json.loads(path.read_text())
    doc["fields"].append({"id": 2, "name": "x", "type": type_json})
    doc["highestFieldId"] = 2
    path.write_text(json.dumps(doc))
    before = tree(table_dir)
    with pytest.raises(UnsupportedFeatureError, match=r"schema-0 of db\.t: type [A-Z]+ \(a newer Paimon type.*\) "
                                                      "is not supported; use Paimon Java HEAD or pypaimon"):
        cat.get_table("db.t")
    assert tree(table_dir) == before


@pytest.mark.parametrize("options", [{"scan.snapshot-id": "1"}, {"scan.tag-name": "t"},
                                     {"scan.mode": "compacted-full"}, {"scan.timestamp-millis": "0"}])
def test_stored_scan_positions_refuse_reads(options):
    # Paimon readers honour a start position stored in the table; ignoring it would read other rows
    assert blocked(schema_refusals(schema({"bucket": "2", **options}))) == {Op.READ, Op.STREAM}


def test_default_scan_mode_reads():
    assert schema_refusals(schema({"bucket": "2", "scan.mode": "latest-full"})) == []


def test_committer_refuses_messages_for_a_table_that_changed_under_the_writer(crafted):
    """Writers ran, then the table gained an option we do not know: the commit does not land."""
    cat, table_dir, s = crafted
    writer = cat.get_table("db.t").new_writer("job-1", write_only=True)
    writer.write_arrow(pa.table({"id": [50], "v": ["late"]}, schema=s))
    messages = writer.prepare_commit()
    _set_options(table_dir, {"paimon.future-feature": "on"})
    before = tree(table_dir)
    with pytest.raises(UnsupportedFeatureError, match=r"Cannot write to db\.t: option paimon\.future-feature"):
        cat.get_table("db.t").new_committer("job-1").commit(messages, 1)
    assert tree(table_dir) == before


@pytest.mark.parametrize(("options", "ops"), [
    # padded names Paimon's writers cannot use: writes and compaction refused, reads go on
    ({"file.compression": " zstd"}, {Op.WRITE, Op.COMPACT}),
    ({"manifest.compression": "ZSTD "}, {Op.WRITE, Op.COMPACT}),
    ({"spill-compression": "zstd\t"}, {Op.WRITE, Op.COMPACT}),
    ({"file.format": "avro", "avro.codec": "Snappy"}, {Op.WRITE, Op.COMPACT}),
    # the case Java folds is no problem at all
    ({"file.format": "PARQUET", "file.compression": "\u017fnappy", "manifest.compression": "ZSTD"}, set()),
    ({"file.format": "Orc", "file.compression": "NONE"}, set()),
])
def test_carried_names_refuse_what_java_refuses(options, ops):
    assert blocked(schema_refusals(schema({"bucket": "2", **options}))) == ops


def test_a_padded_file_format_refuses_the_table():
    # Paimon 0.9 finds no format for it and reads nothing either (its path factory needs one)
    with pytest.raises(OptionError, match=r"'file.format': 'parquet ' is not one of"):
        schema_refusals(schema({"bucket": "2", "file.format": "parquet "}))
