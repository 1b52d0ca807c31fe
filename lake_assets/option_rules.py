"""The option registry: every table option lake_assets knows, one declarative row each.

Each row (`OptionRule`, `lake_assets.option_types`) gives the key, type, default, description,
validator and how lake_assets supports it. Everything else derives from these rows: the known
key sets and refused values (`lake_assets.options`), the typed accessors of `CoreOptions`, which
parse through them once per schema, `CoreOptions.validate` at create and ALTER, the per-operation
refusals of `lake_assets.table_support`, and ``docs/options.md`` (`lake_assets.option_docs`).
Per-field options (``fields.<column>.<suffix>``) are rows of `FIELD_RULES`, keyed by suffix.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from functools import lru_cache

from lake_assets.formats.format_options import FILE_CODECS
from lake_assets.lsm.merge_engine.names import DEFAULT_MERGE_ENGINE, MERGE_ENGINE_NAMES
from lake_assets.option_rules_commit import COMMIT_RULES
from lake_assets.option_rules_engines import ENGINE_RULES, MARK_DONE_RULES, REFUSED_ENGINE_RULES
from lake_assets.option_rules_file_index import FILE_INDEX_RULES, file_index_rule
from lake_assets.option_rules_formats import COLUMN_FORMAT_OPTION, COLUMN_FORMAT_RULES, FORMAT_RULES, STATS_NOTE
from lake_assets.option_rules_formats import stats_mode_problem as _stats_mode
from lake_assets.option_rules_lifecycle import LIFECYCLE_RULES
from lake_assets.option_rules_reads import READ_RULES
from lake_assets.option_rules_row_tracking import ROW_TRACKING_RULES
from lake_assets.option_types import DATA_OPS, INT_MAX, MiB, OptionRule, fallback_rule


def _bucket(n: object) -> str | None:
    # -2 (postpone bucket mode) is a valid Paimon value for primary-key tables; what tables carrying
    # it may do is decided per operation (lake_assets/table_support.py)
    if n == 0 or (isinstance(n, int) and n < -2):
        return "must be -1 (dynamic for primary-key tables, unaware for append tables) or a bucket count >= 1"
    return None




def _path_part(v: object) -> str | None:
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


def _rules(*rows: OptionRule) -> dict[str, OptionRule]:
    return {r.key: r for r in rows}


# Values of option texts that Paimon takes and lake_assets implements (lower case).
MERGE_ENGINES = MERGE_ENGINE_NAMES  # the engine registry's names (one list, no import cycle)
CHANGELOG_PRODUCERS = ("none", "input", "lookup", "full-compaction")
COMPRESSIONS = ("zstd", "snappy", "gzip", "lz4", "lz4_raw", "none", "uncompressed", "brotli")
# Identifiers of Paimon's data file format factories (HEAD; 0.9 bundles parquet, orc and avro).
FILE_FORMATS = ("parquet", "orc", "avro", "csv", "json", "text", "lance", "vortex", "blob", "row", "mosaic")
MANIFEST_COMPRESSIONS = ("zstd", "zstandard", "none", "null", "deflate", "snappy")
# Codecs of the writer's local spill files (ops/spill.py): Paimon's zstd and lzo, plus lz4 and none.
SPILL_COMPRESSIONS = ("zstd", "lzo", "lz4", "none")
_STATS_NOTE = STATS_NOTE

R = OptionRule
RULES: dict[str, OptionRule] = _rules(
    # ---- layout
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
      "file.format names no format: its path factory needs one)"),
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
      "those it writes; an entry above a quarter of it is not kept, 0 keeps none. Java's lookup joins read it "
      "too"),
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
    R("data-file.prefix", "string", "data-", "File name prefix of data files.", check=_path_part),
    R("data-file.path-directory", "string", None, "Directory under the table that holds the partition and "
      "bucket directories of data files (Paimon 1.0+; immutable).", check=_data_directory,
      note="honoured by reads, streams, writes, compaction, expiry, orphan removal, tags and rollback; a value "
      "that would leave the table directory (absolute, a scheme, '..') or name one of its own directories is "
      "refused"),
    R("changelog-file.prefix", "string", "changelog-", "File name prefix of changelog files.", check=_path_part),
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
      check=_stats_mode, note=_STATS_NOTE),
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
)
# ---- data file formats: their own module (lake_assets/option_rules_formats.py), in this place
RULES.update(FORMAT_RULES)
RULES.update(_rules(
    # ---- merging
    R("merge-engine", "enum", DEFAULT_MERGE_ENGINE, "How rows of one key merge.", choices=MERGE_ENGINES),
    R("changelog-producer", "enum", "none", "What produces changelog files.", choices=CHANGELOG_PRODUCERS),
    R("changelog-producer.row-deduplicate", "bool", False, "Drop -U/+U pairs of identical rows."),
    R("sequence.field", "string", None, "Columns that order rows of one key (before the sequence number)."),
    R("sequence.field.sort-order", "enum", "ascending", "Order of sequence.field.",
      choices=("ascending", "descending")),
    R("rowkind.field", "string", None, "Column holding each row's kind (+I, -U, +U, -D)."),
    R("ignore-delete", "bool", False, "Drop deletes and update-befores on write.",
      fallback_keys=("first-row.ignore-delete", "deduplicate.ignore-delete", "partial-update.ignore-delete")),
    R("fields.default-aggregate-function", "string", None, "Aggregate function of columns without their own."),
    R("aggregation.remove-record-on-delete", "bool", False, "A delete removes the aggregated row."),
    R("partial-update.remove-record-on-delete", "bool", False, "A delete removes the partial-update row."),
    R("partial-update.remove-record-on-sequence-group", "string", None, "Sequence fields of the sequence groups "
      "whose -D removes the whole partial-update row (Paimon 1.0+)."),
    # ---- compaction
    R("num-sorted-run.compaction-trigger", "int", 5, "Sorted runs that trigger a compaction.", minimum=1),
    R("num-sorted-run.stop-trigger", "int", None, "Sorted runs that stop writes (compaction-trigger + 3).",
      minimum=1, note="accepted; lake_assets writers compact level 0 at every commit unless write-only, "
      "so runs never pile up behind a writer"),
    R("num-levels", "int", None, "LSM levels (compaction-trigger + 1).", minimum=2),
    R("compaction.max-size-amplification-percent", "int", 200, "Size amplification that triggers a full "
      "compaction.", minimum=0),
    R("compaction.size-ratio", "int", 1, "Percentage flexibility of the size ratio of universal compaction.",
      minimum=0),
    R("compaction.small-file-ratio", "ratio", 0.7, "Files below this share of target-file-size are small "
      "(append compaction)."),
    R("compaction.min.file-num", "int", 5, "Small files that trigger an append compaction.", minimum=1),
    R("compaction.force-up-level-0", "bool", False, "Compaction always picks level 0 up."),
    R("compaction.delete-ratio-threshold", "ratio", 0.2, "Files whose deletion vector hides this share of "
      "their rows are rewritten by compaction.", note="lake_assets applies it to deletion-vector primary-key "
      "tables (Paimon 1.x to append tables)"),
    R("full-compaction.delta-commits", "int", None, "Commits between forced full compactions.", minimum=1),
    R("compaction.parallelism", "int", None, "Compaction units run at once in one process (lake_assets only; "
      "Paimon engines ignore it).", minimum=1, lake_assets_only=True),
    R("compaction.merge-rows", "int", None, "Rows a compaction unit gathers per merge step (lake_assets "
      "only; default 262144; Paimon engines ignore it): a unit holds at most about twice this many input "
      "rows and their merged rows, plus one read batch per sorted run (read.batch-size, less when many "
      "runs share this bound; of an ORC file a stripe, see orc.stripe.size), and compaction.parallelism "
      "units run at once.", minimum=1,
      lake_assets_only=True),
    R("sort-spill-threshold", "int", None, "Sorted runs a compaction merge reads at once "
      "(num-sorted-run.stop-trigger + 1, as Paimon); more are first merged at most this many at a time "
      "into local spill files (spill-compression, within write-buffer-spill.max-disk-size).", minimum=2,
      note="applies to compaction; reads bound their memory by read.batch-size and read.read-ahead"),
    # ---- retention
    R("snapshot.num-retained.min", "int", 10, "Snapshots expiry always keeps.", minimum=1),
    R("snapshot.num-retained.max", "int", INT_MAX, "Snapshots expiry keeps at most.", minimum=1),
    R("snapshot.time-retained", "duration", 3_600_000, "Age after which snapshots expire."),
    R("snapshot.expire.limit", "int", 50, "Snapshots one expiry removes at most.", minimum=1),
    R("snapshot.clean-empty-directories", "bool", False, "Expiry removes emptied partition/bucket directories.",
      fallback_keys=("snapshot.expire.clean-empty-directories",)),
    R("changelog.num-retained.min", "int", None, "Changelogs kept at least (snapshot.num-retained.min).",
      minimum=1),
    R("changelog.num-retained.max", "int", None, "Changelogs kept at most (snapshot.num-retained.max).",
      minimum=1),
    R("changelog.time-retained", "duration", None, "Age after which changelogs expire (snapshot.time-retained)."),
    R("consumer.expiration-time", "duration", None, "Idle consumers expire after this (never)."),
    R("consumer-id", "string", None, "Consumer id of streaming reads.", check=_path_part,
      note="accepted; lake_assets streams take the consumer id as an argument (Table.stream, the Spark "
      "source's read option), and expiry keeps every consumer's snapshots either way"),
))
# ---- lifecycle: their own module (lake_assets/option_rules_lifecycle.py), in this place
RULES.update(LIFECYCLE_RULES)
# ---- commit: their own module (lake_assets/option_rules_commit.py), in this place
RULES.update(COMMIT_RULES)
# ---- scans and read tuning: their own module (lake_assets/option_rules_reads.py), in this place
RULES.update(READ_RULES)
RULES.update(FILE_INDEX_RULES)  # file-index.* (lake_assets/option_rules_file_index.py)
RULES.update(ROW_TRACKING_RULES)  # lake_assets/option_rules_row_tracking.py

# Other engines' runtime options (Flink's and Spark's connectors, Java jobs' caches), accepted
# without effect, and the few connector keys refused by name: their own module.
for _rows in (ENGINE_RULES, REFUSED_ENGINE_RULES, MARK_DONE_RULES):
    if RULES.keys() & _rows.keys():
        raise RuntimeError(f"option rows declared twice: {sorted(RULES.keys() & _rows.keys())}")
    RULES.update(_rows)
del _rows

# Fallback keys (Paimon's withFallbackKeys) -> the key each stands in for; `rule_for` gives their rows.
FALLBACK_OF: dict[str, str] = {fb: r.key for r in RULES.values() for fb in r.fallback_keys}
if FALLBACK_OF.keys() & RULES.keys():
    raise RuntimeError(f"fallback keys declared as rows too: {sorted(FALLBACK_OF.keys() & RULES.keys())}")

# Per-field options ``fields.<column>[,<column>...].<suffix>``, keyed by suffix (the key of a
# row is a pattern). `lake_assets.options.FIELD_OPTION` matches them.
FIELD_RULES: dict[str, OptionRule] = _rules(
    R("aggregate-function", "string", None, "Aggregate function of the column (aggregation, partial-update)."),
    R("ignore-retract", "bool", False, "The column ignores retractions (-U/-D)."),
    R("sequence-group", "string", None, "Columns this sequence field orders (partial-update)."),
    R("list-agg-delimiter", "string", ",", "Delimiter of listagg."),
    R("distinct", "bool", False, "collect (and Paimon 1.x's listagg) keep distinct values.",
      note="collect honours it; listagg with distinct = true (Paimon 1.x) is refused when the merge "
      "engine is built (create, ALTER, reads, writes)"),
    R("stats-mode", "string", None, "Column stats mode of the column.", check=_stats_mode, note=_STATS_NOTE),
    R("nested-key", "string", None, "Fields of the ROW elements that key nested_update and "
      "nested_partial_update (comma-separated)."),
    R("nested-sequence-field", "string", None, "Fields of the ROW elements ordering the rows of one nested "
      "key (nested_update, Paimon 1.x; needs nested-key)."),
    R("nested-key-null-strategy", "enum", "merge", "Rows whose nested key holds a null: merge, ignore or "
      "error (Paimon 1.x; needs nested-key).", choices=("merge", "ignore", "error")),
    R("count-limit", "int", INT_MAX, "Most rows nested_update keeps (Paimon 1.x)."),
    R("ts-field", "string", None, "Field (a string) of the MAP's ROW values ordering merge_map_with_keytime "
      "(Paimon 1.x; default: the ROW's last field)."),
    R("default-value", "string", None, "Default value of the column.",
      note="as Paimon 0.9: reads return it in place of the column's nulls (after the merge; filters "
           "see the filled rows, stats never prune on the column), writes keep the nulls; cast to the "
           "column's type as Java does, not on partition or primary-key columns; Paimon 1.3+ readers "
           "ignore the option (lake_assets.ops.default_values)"),
)
del R

# Per-field options (fields.<name>.<suffix>), one registry row per suffix.
FIELD_OPTION = re.compile(
    r"^fields\.(?P<field>[^.]+(?:,[^.]+)*)\.(?P<suffix>" + "|".join(re.escape(s) for s in FIELD_RULES) + r")$"
)


def rule_for(key: str) -> OptionRule | None:
    """The registry row of ``key``: a plain option's, a fallback key's (its primary's row under its
    own key), a per-field option's by its suffix, or a per-column format option's by its key."""
    rule = RULES.get(key)
    if rule is not None:
        return rule
    if key in FALLBACK_OF:
        return _fallback_rule(key)
    m = FIELD_OPTION.match(key)
    if m:
        return _field_rule(key, m.group("suffix"))
    c = COLUMN_FORMAT_OPTION.match(key)
    if c:
        return dataclasses.replace(COLUMN_FORMAT_RULES[c.group("key")], key=key)
    return file_index_rule(key)


@lru_cache(maxsize=64)
def _fallback_rule(key: str) -> OptionRule:
    return fallback_rule(RULES[FALLBACK_OF[key]], key)


def carried_key(options: Mapping[str, str], key: str) -> str | None:
    """Which key ``options`` sets ``key``'s value with, as Paimon's ``Options.get`` reads it: ``key``
    itself when set, else the first of its fallback keys that is set; None when neither is."""
    if key in options:
        return key
    rule = RULES.get(key)
    return next((fb for fb in rule.fallback_keys if fb in options), None) if rule is not None else None


def is_shadowed(options: Mapping[str, str], key: str) -> bool:
    """Whether ``key`` is a fallback key that ``options`` also sets its option with by an earlier
    key: Paimon never reads it then (nor does lake_assets: it is neither parsed nor validated)."""
    primary = FALLBACK_OF.get(key)
    return primary is not None and carried_key(options, primary) != key


@lru_cache(maxsize=1024)
def _field_rule(key: str, suffix: str) -> OptionRule:
    # the suffix's row under the full key, so that every message names the key the table carries
    return dataclasses.replace(FIELD_RULES[suffix], key=key)


def per_operation_rule(key: str) -> OptionRule | None:
    """The row of ``key`` when a table carrying a refused value of it is refused per operation
    (the row's ``refuses``, or writes and compaction for options only writers read)."""
    rule = rule_for(key)
    return rule if rule is not None and (rule.refuses or rule.writer_only) else None
