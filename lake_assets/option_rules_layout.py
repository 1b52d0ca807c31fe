"""Registry rows of the options that shape a table's files and where they go: buckets and their
function, data file and manifest formats and sizes, the write buffer and its spill files, file name
prefixes and directories, partition names, column stats, dynamic and postpone buckets, deletion
vectors, and the catalog's own keys. `lake_assets.option_rules` merges them into the registry in
their place (first).
"""

from __future__ import annotations

from lake_assets.formats.format_options import FILE_CODECS
from lake_assets.option_rules_formats import STATS_NOTE, stats_mode_problem
from lake_assets.option_types import DATA_OPS, KEY_SLOT, MiB, OptionRule
from lake_assets.refusal_actions import COPY_ROWS, USE_PAIMON

# Identifiers of Paimon's data file format factories (HEAD; 0.9 bundles parquet, orc and avro).
FILE_FORMATS = ("parquet", "orc", "avro", "csv", "json", "text", "lance", "vortex", "blob", "row", "mosaic")
MANIFEST_COMPRESSIONS = ("zstd", "zstandard", "none", "null", "deflate", "snappy")
# Codecs of the writer's local spill files (ops/spill.py): Paimon's zstd and lzo, plus lz4 and none.
SPILL_COMPRESSIONS = ("zstd", "lzo", "lz4", "none")


def _bucket(n: object) -> str | None:
    # -2 (postpone bucket mode) is a valid Paimon value for primary-key tables; what tables carrying
    # it may do is decided per operation (lake_assets/table_support.py)
    if n == 0 or (isinstance(n, int) and n < -2):
        return "must be -1 (dynamic for primary-key tables, unaware for append tables) or a bucket count >= 1"
    return None


def path_part_problem(v: object) -> str | None:
    """Values that become part of file names inside the table must be plain (paths.check_path_part)."""
    from lake_assets.errors import UnsafePathError
    from lake_assets.paths import check_path_part

    try:
        check_path_part(v, "a file name")
    except UnsafePathError as exc:
        return f"{exc} (it becomes part of file names inside the table)"
    return None


def _data_directory(v: object) -> str | None:
    """A relative directory inside the table (paths.check_data_directory)."""
    from lake_assets.errors import UnsafePathError
    from lake_assets.paths import check_data_directory

    try:
        check_data_directory(v, "data-file.path-directory")
    except UnsafePathError as exc:
        return str(exc)
    return None


# every operation, ALTER too (`manifest.format`: Java reads every manifest in the format the option names now)
_ALL_OPS = ("READ", "STREAM", "WRITE", "COMPACT", "EXPIRE", "ORPHANS", "TAG", "ROLLBACK", "SCHEMA_CHANGE")

R = OptionRule
LAYOUT_RULES: dict[str, OptionRule] = {r.key: r for r in (
    R("bucket", "int", -1, "Buckets per partition; -1 dynamic (primary key) or unaware (append).", check=_bucket),
    R("bucket-key", "string", None, "Columns hashed to pick the bucket (default: the primary key)."),
    R("bucket-function.type", "enum", "default", "Bucket function of fixed-bucket and postpone tables: "
      "default (Paimon's murmur hash), mod (floorMod of one INT or BIGINT key) or hive (Hive's hash).",
      choices=("default", "mod", "hive"),
      note="all three route writes and prune reads as Paimon HEAD (lake_assets/lsm/bucket_function.py); a "
      "bucket key the function cannot place (mod of anything but one INT or BIGINT, hive of timestamps or "
      "nested types) refuses writes, and compaction of postpone tables, as Paimon throws on it; dynamic-bucket "
      "and append tables ignore the function, as Paimon does"),
    R("file.format", "string", "parquet", "Data file format (matched lower-cased and untrimmed, as Paimon's "
      "CoreOptions.normalizeFileFormat).", choices=FILE_FORMATS, fold="lower",
      supported=("parquet", "orc", "avro"), refuses=DATA_OPS,
      why="only Parquet, ORC and Avro data files are implemented (Paimon Java 0.9 reads no table whose "
      "file.format names no format: its path factory needs one)",
      action=f"{USE_PAIMON}, or {COPY_ROWS} with file.format parquet, orc or avro (changing {KEY_SLOT} "
      "converts no file already written)"),
    R("file.compression", "string", "zstd", "Codec of data files (Parquet: zstd, snappy, gzip, lz4, lz4_raw, "
      "uncompressed; ORC: zstd, snappy, lz4, zlib, none; Avro: zstandard for zstd, else snappy, as Java writes; "
      "matched upper-cased and untrimmed, as Java's Parquet and ORC writers). A codec the format of some file "
      "the table writes has not (file.format, file.format.per.level, changelog-file.format) refuses writes "
      "and compaction.", choices=FILE_CODECS, fold="upper", writer_only=True,
      note="create and ALTER refuse 'none' (Java's writer spells it 'uncompressed') and 'brotli' "
      "(Java cannot read it); tables carrying them stay readable and writable"),
    R("file.compression.zstd-level", "int", 1, "Zstandard level of data files."),
    R("manifest.compression", "string", "zstd", "Avro codec of manifests (zstd in any case, another codec by "
      "Avro's exact name, untrimmed, as Paimon's Avro writer).", choices=MANIFEST_COMPRESSIONS, fold="avro",
      writer_only=True,
      note="create and ALTER refuse 'none' (Java's writer spells it 'null')"),
    R("manifest.format", "string", "avro", "Format of manifest files and manifest lists (Paimon 0.9-1.3; later "
      "Paimon has no such option and writes Avro; matched lower-cased and untrimmed, as file.format).",
      choices=FILE_FORMATS, fold="lower", supported=("avro",), refuses=_ALL_OPS,
      why="lake_assets reads and writes Avro manifests only (Paimon's default), and this table's manifest lists "
      "and manifests are in another format. Changing the option converts nothing (Paimon then reads the existing "
      "manifests as the new format and fails)",
      action="keep maintaining the table with Paimon, or copy it into a table whose manifest.format is avro "
      "(INSERT INTO ... SELECT in Flink or Spark)"),
    R("manifest.target-file-size", "size", 8 * MiB, "Size manifests are merged up to.", minimum=1),
    R("manifest.merge-min-count", "int", 30, "Small manifests that trigger a merge.", minimum=1),
    R("manifest.full-compaction-threshold-size", "size", 16 * MiB, "Delta size that triggers a full manifest "
      "merge.", minimum=1, note="accepted; lake_assets merges manifests by manifest.merge-min-count only "
      "(the layout of manifests never changes what is read)"),
    R("target-file-size", "size", None, "Target data file size (128 mb with a primary key, else 256 mb).",
      minimum=1),
    R("target-file-row-num", "long", None, "Rows after which writers roll a new file.", minimum=1,
      note="a file also rolls once it holds this many rows, as Paimon 1.x's writers (0.9 has no such option)"),
    R("write-buffer-size", "size", 256 * MiB, "Memory a writer buffers before it sorts and spills or flushes.",
      minimum=1),
    R("lookup.cache-max-memory-size", "size", 256 * MiB, "Memory of lookup caches.", minimum=0,
      note="one cache per process, as Java's writer keeps looked-up files local: the key columns and key indexes "
      "of the files a deletion-vector compaction looks keys up in and, for partial-update, aggregation and "
      "sequence.field tables (lookup compaction), the decoded rows of the files it takes old rows from and of "
      "those it writes; an entry above a quarter of it is not kept, 0 keeps none. Per table: a table's entries "
      "stay within its own setting (as each Java table writer has its own cache), the process's cache within the "
      "largest setting of the tables holding entries. Java's lookup joins read it too"),
    R("write-buffer-spillable", "bool", None, "Whether the write buffer spills to local disk (default: the "
      "writer picks)."),
    R("write-buffer-spill.max-disk-size", "size", None, "Local disk a spilling writer may use (unbounded).",
      minimum=1),
    R("spill-compression", "string", "zstd", "Codec of local spill files (matched upper-cased and untrimmed, "
      "as Paimon's BlockCompressionFactory).", choices=SPILL_COMPRESSIONS, fold="upper", writer_only=True),
    R("spill-compression.zstd-level", "int", 1, "Zstandard level of spill files."),
    R("local-sort.max-num-file-handles", "int", 128, "Spill files merged at once.", minimum=2),
    R("page-size", "size", 64 * 1024, "Memory page size (write buffer), not the Parquet page.", minimum=1),
    R("write-only", "bool", False, "Writers skip compaction (a separate job compacts).",
      fallback_keys=("write.compaction-skip",)),
    R("data-file.prefix", "string", "data-", "File name prefix of data files.", check=path_part_problem),
    R("data-file.path-directory", "string", None, "Directory under the table that holds the partition and "
      "bucket directories of data files (Paimon 1.0+; immutable).", check=_data_directory,
      note="honoured by reads, streams, writes, compaction, expiry, orphan removal, tags and rollback; a value "
      "that would leave the table directory (absolute, a scheme, '..') or name one of its own directories is "
      "refused"),
    R("changelog-file.prefix", "string", "changelog-", "File name prefix of changelog files.", check=path_part_problem),
    R("file.suffix.include.compression", "bool", False, "Whether file names carry the codec.",
      note="as Paimon HEAD (1.3+) names them, new data and changelog files of writes, compaction and the Spark "
      "native write are <prefix><uuid>-<n>.<codec>.<format>, the codec the table's file.compression as a "
      "Hadoop file extension (zstd: zst, gzip: gz, snappy, lz4; none: no suffix) or else as written "
      "(lz4_raw, uncompressed), also for levels file.compression.per.level compresses otherwise "
      "(formats/file_names.py); Paimon 1.0 to 1.2 wrote file.compression itself (.zstd.parquet); every "
      "reader takes the format from the last extension"),
    R("partition.default-name", "string", "__DEFAULT_PARTITION__", "Partition value of null and empty keys."),
    R("partition.legacy-name", "bool", True, "Partition directory names from toString of the values (DATE as "
      "the epoch day, TIMESTAMP as 2024-01-05T01:02); false: from the values cast to STRING (DATE as "
      "2024-01-05, TIMESTAMP(p) as 2024-01-05 01:02:00.000, TIME(p) as 01:02:03.5, BINARY as UTF-8 text).",
      note="both honoured by every operation (lake_assets/spec/partition_text.py); with false, tables "
      "partitioned by a TIMESTAMP WITH LOCAL TIME ZONE column are refused for reads, writes and maintenance "
      "(Java names those values in the writing JVM's default time zone), as is any BINARY/VARBINARY "
      "partition value that is not valid UTF-8; changing it on a table with data whose names it changes "
      "is refused (its directories would move)"),
    R("metadata.stats-mode", "string", "truncate(16)", "Column stats mode: none, counts, full, truncate(N).",
      check=stats_mode_problem, note=STATS_NOTE),
    R("dynamic-partition-overwrite", "bool", True, "Overwrite replaces only the partitions written."),
    R("dynamic-bucket.target-row-num", "long", 2_000_000, "Keys per bucket of a dynamic-bucket primary-key "
      "table before its writer opens another bucket.", minimum=1),
    R("cross-partition-upsert.index-ttl", "duration", None, "Age after which a cross-partition upsert "
      "table's writers forget a key: a bucket none of whose files is younger is not bootstrapped into the key "
      "index, so its keys are written as new keys (never).", note="as Paimon's IndexBootstrap: per bucket "
      "(ops/cross_partition.py)"),
    R("dynamic-bucket.initial-buckets", "int", None, "Assigners of a dynamic-bucket writer, so buckets a new "
      "partition starts with.", minimum=1, note="lake_assets runs this many assigners in its one writer "
      "(ops/dynamic_bucket.py)"),
    R("dynamic-bucket.assigner-parallelism", "int", None, "Assigners of a dynamic-bucket writer when "
      "dynamic-bucket.initial-buckets is unset.", minimum=1, note="lake_assets runs this many assigners in its "
      "one writer (ops/dynamic_bucket.py)"),
    R("postpone.default-bucket-num", "int", None, "Buckets a partition of a postpone-bucket table (bucket = -2) "
      "gets when it first receives real buckets (compaction or batch write), and, exactly, the count of every "
      "partition a batch overwrite into real buckets replaces.", minimum=1,
      note="read by the postpone compaction (ops/postpone.py) and by batch writes into real buckets "
      "(ops/postpone_batch.py); a write may override it (a Spark write option or spark.paimon.* conf)"),
    R("postpone.target-row-num-per-bucket", "long", None, "Rows per bucket a postpone partition's first "
      "compaction or batch write aims at when postpone.default-bucket-num is unset.", minimum=1,
      note="read by the postpone compaction (ops/postpone.py, over the partition's postpone files) and by "
      "batch writes into real buckets (ops/postpone_batch.py, over the batch alone, rounded up to a power of "
      "two, as Paimon HEAD's PostponeUtils.decideFixedBucketNum)"),
    R("postpone.target-size-per-bucket", "size", 1024 * MiB, "Bytes per bucket a postpone partition's first "
      "compaction or batch write aims at when neither postpone.default-bucket-num nor "
      "postpone.target-row-num-per-bucket is set.", minimum=1, note="the postpone compaction measures the "
      "postpone files' stored size, as Java's (ops/postpone.py); batch writes into real buckets measure, as "
      "Paimon HEAD (its staged postpone files' stored size), the bytes the batch takes as the table's "
      "postpone files, encoded in memory as the postpone writer encodes them (ops/postpone_size.py; a "
      "Spark write_table scales its per-partition value widths by a sample's encoding), and round the "
      "estimate up to a power of two (ops/postpone_batch.py)"),
    R("postpone.batch-write-fixed-bucket", "bool", True, "Whether batch writes of a postpone-bucket table "
      "(bucket = -2) go into real buckets (each partition's recorded bucket count, or for a new or overwritten "
      "partition postpone.default-bucket-num or the postpone.target-* estimate on the batch) instead of "
      "bucket-postpone.",
      note="as Paimon's Flink and Spark batch sinks, lake_assets' Spark batch writes (df.write, write_table, "
      "the ingest job) write real buckets when it is true or unset (write-only level-0 files, planned per "
      "partition by ops/postpone_batch.py, written by ops/postpone_fixed_bucket.py) and postpone when false; "
      "as in Paimon's Spark connector a write may override it: a write option (df.write.option, write_table's "
      "options=, the ingest job's --write-option) over the spark.paimon.<key> conf (write_table, the ingest "
      "job) over the table's; streaming writes and the core's Table.write_arrow always postpone, as Paimon's "
      "streaming sinks and pypaimon's default batch writer do (ops.postpone_fixed_bucket.write_fixed_buckets "
      "is the core's explicit real-bucket write)"),
    R("postpone.batch-write-fixed-bucket.max-parallelism", "int", 2048, "Largest bucket count a batch write "
      "into real buckets of a postpone table estimates for a partition (the estimate is rounded up to a power "
      "of two, then capped).", minimum=1,
      note="read by the batch bucket planner (ops/postpone_batch.py)"),
    R("postpone.batch-write-fixed-bucket.rescale-load-factor", "int", 32, "How many times its recorded "
      "bucket count a batch may need before a batch write into real buckets rescales a partition (Paimon "
      "HEAD rewrites the partition's real buckets into the larger count first).", minimum=1,
      note="as Paimon HEAD, a batch write into real buckets (ops.postpone_fixed_bucket.write_fixed_buckets, "
      "write_table, the ingest job) first rewrites such a partition's real buckets, merged, into the larger "
      "count in an OVERWRITE snapshot (ops/rescale.py) and then writes the batch; df.write of unrouted input, "
      "whose rows are written into the recorded count before they are measured, rescales at its commit and "
      "replays the written rows into the new count"),
    R("partition.sink-strategy", "enum", "none", "How a write distributes a partitioned append or postpone "
      "table's rows to its tasks: none (as they come), hash (clustered by partition, fewer partitions per "
      "task), partition_dynamic (Flink: balanced by partition traffic).",
      choices=("none", "hash", "partition_dynamic"),
      note="a distribution of rows to writer tasks, not a file layout; lake_assets' Spark write_table, "
      "repartition_by_bucket and the ingest job cluster such a table's rows by partition for hash and "
      "partition_dynamic (as Paimon's Spark write requirement does for every value but none; spark/shuffle.py); "
      "a plain df.write cannot ask Spark for a distribution (pyspark 4.3's Python data sources have no "
      "hook): it writes the caller's rows as given and its commit, when a partition's postponed (or an "
      "unaware-bucket append table's) rows came from several tasks, lands and logs a warning naming the "
      "option (spark/sink_distribution.py); the core's single-process writers have one task"),
    R("postpone.merge-on-read", "bool", False, "Batch reads of a postpone-bucket table merge the rows waiting "
      "in bucket-postpone into the real buckets (Paimon 2.0+).",
      note="batch reads (core and Spark source) route the waiting rows into the buckets the postpone compaction "
      "would give them and merge them through the merge engine after the real buckets' rows "
      "(lake_assets/ops/postpone_merge_read.py); streams and change reads of a table carrying true are refused, "
      "as Paimon refuses them"),
    R("deletion-vectors.enabled", "bool", False, "Deletion vectors mark deleted rows.",
      note="reads (batch, and the full phase of streams) apply them; compaction writes them for deduplicate, "
      "partial-update and aggregation tables (old rows merged in, lake_assets/ops/dv_old_values.py) with "
      "changelog-producer none, input or lookup; first-row and full-compaction changelog are refused, as Paimon "
      "refuses them"),
    R("deletion-vectors.merge-on-read", "bool", False, "Batch reads of a deletion-vector table also merge "
      "level-0 files in (Paimon 2.x)."),
    R("deletion-vectors.bitmap64", "bool", False, "New deletion vectors take the 64-bit form (Paimon 1.2 on).",
      note="reads apply vectors of both forms whatever the value (one index file may hold both); "
      "compaction writes new vectors in the 64-bit form when true and keeps an existing vector's form, as Java "
      "does (lake_assets/spec/deletion_vector.py). Readers before Paimon 1.2 (Java 0.9, pypaimon 2.1) fail on "
      "64-bit vectors"),
    R("deletion-vectors.index-file.target-size", "size", 2 * MiB, "Target size of deletion-vector index files.",
      minimum=1, note="Paimon applies it to bucket-unaware (append) tables only, whose vectors lake_assets "
      "does not write; a bucket of a primary-key table keeps its vectors in one index file whatever the "
      "size (Java 0.9 to 1.x), as lake_assets writes them; readers follow any number"),
    R("bucket-append-ordered", "bool", True, "Append tables keep write order per bucket.",
      note="accepted; lake_assets keeps write order per bucket either way"),
    R("write.sequence-number-init-mode", "string", None, "Where writers start sequence numbers.",
      note="accepted; lake_assets starts after the highest sequence number of the bucket's files, "
      "which every mode's readers order correctly"),
    R("path", "string", None, "Table path as a catalog records it.", note="catalog metadata; not read"),
    R("type", "string", None, "Table type as a catalog records it.", note="catalog metadata; not read"),
)}
del R
