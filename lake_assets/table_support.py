"""Which operations lake_assets may run on a table, from what the table carries on storage.

A table written by another engine can carry properties lake_assets does not implement: a bucket
mode, a file format, deletion vectors, row tracking, an option a newer Paimon added. Running an
operation that depends on such a property would misread the table or corrupt it for every other
engine, so each operation first asks this module, and an operation that is refused fails with
`UnsupportedFeatureError` naming the property, before it reads, writes or deletes anything.

The rules are pure functions of what the table carries:

* `schema_refusals` - the schema: options, bucket mode. Checked per operation (`FileStore.require`),
  at no I/O cost beyond the schema the table already loaded.
* `entry_refusals` - the manifest entries an operation scans: data file formats (by extension, as
  Paimon readers choose the format), negative buckets other than ``bucket-postpone``, row-tracking
  and data-evolution fields of DataFileMeta, external paths. Checked where the operation scans its manifests, before
  it acts (`FileStoreScan`'s guard).
* `index_refusals` - the snapshot's index manifest: deletion vectors, hash indexes, other types.

`Op`, `Refusal` and `refuse` live in `lake_assets.refusal`, the two file rules in
`lake_assets.file_refusals`, the classes of option keys in `lake_assets.option_classification`;
this module computes the schema's refusals and re-exports the rest, the one place operations ask.

Each refusal lists the operations it blocks: what lake_assets implements is allowed, anything else
is refused. Reads stay allowed where their result is provably what Paimon readers return.

Keys of the data file formats' writers (``parquet.*``, ``orc.*``, ``avro.*``) that the registry does
not list refuse writes and compaction only, and only when the table writes that format: Paimon hands
them to the format's writer, so they shape nothing but new files (`lake_assets.formats.format_options`).
Options that only steer another engine's runtime (Paimon's Flink and Spark connectors, Java's lookup
caches: `lake_assets.option_rules_engines`) are rows of the registry and refuse nothing, except the few
that module refuses by name. Other options a table carries that lake_assets does not know (a newer
Paimon's, say) follow one rule:
writes and every maintenance operation (compact, expire, orphan removal, rollback) are refused,
because we cannot know what the option means for the files they create or delete; reads are
allowed only for keys listed in `READ_HARMLESS_KEYS` / `READ_HARMLESS_PREFIXES` (options that steer
writers, compaction, retention, catalogs or engines but never which rows a read returns), and
refused otherwise. Keys under `WRITER_ONLY_PREFIXES` (how writers place new rows: dynamic-bucket
sizing, sink parallelism, postpone staging) refuse writes only. Tags and schema changes stay
allowed: a tag only copies a snapshot, and a schema change is how a user removes the option.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from lake_assets.errors import OptionError, UnsupportedFeatureError
from lake_assets.file_refusals import (
    DATA_FILE_FORMATS,
    POSTPONE_BUCKET,
    data_file_format,
    entry_refusals,
    index_refusals,
)
from lake_assets.formats.file_format import file_format
from lake_assets.formats.file_index import write_problems as file_index_write_problems
from lake_assets.formats.format_options import FILE_CODECS, FORMAT_PREFIXES, written_formats
from lake_assets.lsm.bucket_function import function_problem
from lake_assets.ops.default_values import default_value_refusals
from lake_assets.option_classification import (
    READ_HARMLESS_KEYS,
    READ_HARMLESS_PREFIXES,
    SCAN_MODES_READ_AS_LATEST,
    SCAN_POSITION_KEYS,
    WRITER_ONLY_PREFIXES,
    is_known_option,
    is_read_harmless,
    is_true,
)
from lake_assets.option_rules import carried_key
from lake_assets.option_types import WRITE_OPS, java_fold_choice, parse_value, unsupported_value
from lake_assets.options import CoreOptions, per_operation_rule
from lake_assets.refusal import DATA, MAINTENANCE, PATHS, READS, Op, Refusal, refuse
from lake_assets.refusal_actions import ALTER_NAMED, COPY_ROWS, USE_PAIMON, remove_option, set_option
from lake_assets.spec.partition import unnameable_partition_keys
from lake_assets.spec.schema import TableSchema
from lake_assets.table_rules import deletion_vector_problem


def _bucket_refusals(schema: TableSchema, bucket: int) -> list[Refusal]:
    pk = bool(schema.primary_keys)
    if pk and bucket > 0:
        return []
    if not pk and bucket == -1:
        # unaware-bucket append: its compaction planner honours compaction.max.file-num as Paimon
        # 0.9-1.0's coordinator (lsm/compact_strategy.pick_append_small_files)
        return []
    if pk and bucket == POSTPONE_BUCKET:
        if is_true(schema.options.get("postpone.merge-on-read")):
            # batch reads merge bucket-postpone in (ops/postpone_merge_read.py); Paimon merges in
            # batch reads only (its Flink source refuses a continuous read with the option:
            # FlinkSourceBuilder, "only supported for batch reads")
            return [Refusal(
                "postpone.merge-on-read = true",
                "Paimon merges bucket-postpone into full batch reads only and refuses streaming and "
                "incremental reads with it (\"requires a full snapshot scan\"); read changes without "
                "the option, as Paimon's stream scans see them",
                frozenset({Op.STREAM}),
                "read the table in batch (full reads merge bucket-postpone in); as Paimon refuses such streams too, "
                f"{remove_option('postpone.merge-on-read')} only if batch reads may skip the rows in "
                "bucket-postpone until a compaction moves them",
            )]
        # postpone bucket mode: writes go to bucket-postpone (ops/postpone_write.py), compaction
        # moves them (ops/postpone.py), batch reads skip bucket-postpone and change reads see what
        # Paimon's scans see (ops/stream.py)
        return []
    if pk and bucket == -1:
        # dynamic bucket mode: writers keep the hash index (ops/dynamic_bucket.py); with a key
        # lacking a partition field (cross-partition upsert) the global key index
        # (ops/cross_partition.py)
        return []
    if not pk and bucket > 0:
        # fixed-bucket append: rows routed by the bucket key (ops/route.py), each bucket an ordered
        # stream compacted as Paimon's BucketedAppendCompactManager (lsm/bucketed_append.py)
        return []
    kind = "primary-key" if pk else "append"
    return [Refusal(f"bucket = {bucket} on a {kind} table", "this bucket mode is not implemented", DATA,
                    f"{COPY_ROWS}, with bucket = N > 0 or -1 (-2 for a primary-key table): ALTER changes a "
                    "bucket count only from one fixed number to another")]


def _bucket_function_refusals(schema: TableSchema, bucket: int) -> list[Refusal]:
    """A ``bucket-function.type`` that cannot place the table's bucket keys (``mod`` of a STRING
    key, ``hive`` of a TIMESTAMP: Paimon HEAD throws when it makes or applies the function). Only
    fixed-bucket writes (primary-key and append tables) and a postpone table's moves into real
    buckets use the function (dynamic and unaware tables ignore it, as Java does), so only they
    are refused; reads do not prune by
    it (`ops.plan.BucketSelector`). A postpone table also refuses its writes into bucket-postpone,
    whose rows no compaction could then place."""
    if not (bucket > 0 or (schema.primary_keys and bucket == POSTPONE_BUCKET)):
        return []
    try:
        function = schema.core_options.bucket_function
        keys = list(schema.bucket_keys)
        types = schema.types(keys)
    except (OptionError, UnsupportedFeatureError):  # a malformed value is refused when the table opens
        return []
    problem = function_problem(function, types)
    if problem is None:
        return []
    ops = frozenset({Op.WRITE}) if bucket > 0 else frozenset({Op.WRITE, Op.COMPACT})
    return [Refusal(f"bucket-function.type = {function!r} with bucket key ({', '.join(keys)})",
                    f"{problem}, as in Paimon", ops,
                    f"the option is immutable and Paimon's writers fail on it too: {COPY_ROWS}, with a "
                    "bucket-function.type that places this key (default places any key); reads are not refused")]


def cross_partition_fields(schema: TableSchema) -> list[str]:
    """Partition fields a primary key lacks: with ``bucket = -1`` Paimon's cross-partition upsert
    mode (a key may move between partitions), where writes need a global key index."""
    return [k for k in schema.partition_keys if k not in schema.primary_keys]


def _option_refusals(options: Mapping[str, str]) -> list[Refusal]:
    out: list[Refusal] = []
    # values the option registry refuses per operation (unsupported, or not parsing at all), with
    # the operations they block
    for option, text in options.items():
        rule = per_operation_rule(option)
        if rule is None:
            continue
        try:
            parse_value(rule, text)
        except (OptionError, UnsupportedFeatureError) as exc:
            ops = frozenset(Op[n] for n in rule.refuses or WRITE_OPS)
            out.append(Refusal(f"option {option} = {text!r}", f"the value is not valid ({exc})", ops,
                               f"give it a valid value with ALTER TABLE ... SET ({option!r} = ...) in Flink (SET "
                               f"TBLPROPERTIES in Spark), or "
                               f"{remove_option(option, here=Op.SCHEMA_CHANGE not in ops)}"))
            continue
        if unsupported_value(rule, text) is not None:
            out.append(Refusal(f"option {option} = {text!r}", rule.why, frozenset(Op[n] for n in rule.refuses),
                               rule.advice()))
    # key -> (whether a stored value is the unimplemented feature, why it is refused, what it blocks,
    # what the user can do)
    feature: dict[str, tuple[Callable[[str], bool], str, frozenset[Op], str]] = {
        # row-tracking.enabled and data-evolution.enabled refuse nothing by themselves: writes get
        # their row ids at commit (ops/row_tracking.py), reads merge the files of a row-id range
        # (ops/data_evolution_read.py), change reads those of one snapshot as Paimon HEAD's delta
        # splits (ops/stream_reader.py), column updates write files of some columns
        # (ops/column_update.py), compaction stores each row's ids in its outputs
        # (ops/compact/row_tracking_rewrite.py) and merges each unit's row-id ranges into one file
        # (ops/compact/data_evolution_compact.py). What they still refuse is a property they
        # carry: deletion vectors (`_dv_refusals`), files of a format not implemented (blob) and
        # index types not implemented (global indexes), in `file_refusals`.
        "data-file.external-paths": (bool, "writing data files to external paths is not implemented",
                                     frozenset({Op.WRITE, Op.COMPACT}),
                                     "write and compact the table with Paimon Java (1.1+), or, if new files may go "
                                     f"to the table's directory, {remove_option('data-file.external-paths')}; "
                                     "files already written there are still read"),
    }
    # how Paimon 1.1+'s writers spread new files over those paths (.weights: HEAD): they shape only
    # where new files go; a file already in an external path names it in its manifest entry, which
    # reads and expiry refuse per file (`entry_refusals`, `FileStore.data_file_path`)
    for suffix in ("strategy", "specific-fs", "weights"):
        feature[f"data-file.external-paths.{suffix}"] = (
            bool, "placing data files in external paths is not implemented", frozenset({Op.WRITE, Op.COMPACT}),
            "write and compact the table with Paimon Java (1.1+), or, if new files may go to the table's "
            f"directory, {remove_option(f'data-file.external-paths.{suffix}')}")
    for key in SCAN_POSITION_KEYS:
        feature[key] = (bool, "Paimon readers start from this stored position, lake_assets' reads do not",
                        READS, _SCAN_POSITION_ACTION)
    feature["scan.mode"] = (lambda v: str(v).strip().lower() not in SCAN_MODES_READ_AS_LATEST,
                            "Paimon readers start where this stored scan mode says, lake_assets' reads do not",
                            READS, _SCAN_POSITION_ACTION)
    for key, (active, why, ops, action) in feature.items():
        carried = carried_key(options, key) or key  # log.scan for scan.mode, as Paimon reads it
        value = options.get(carried)
        if value is not None and active(value):
            out.append(Refusal(f"option {carried} = {value!r}", why, ops, action.replace("{key}", carried)))
    written = _formats_written(options)
    for key, value in options.items():
        if is_known_option(key) or key in feature:
            continue
        if key.startswith(FORMAT_PREFIXES):
            # a key the format's writer takes (Paimon passes them through): it can shape only the
            # files of that format we would write; reads and maintenance never depend on it
            if key.split(".", 1)[0] in written:
                out.append(Refusal(
                    f"option {key} = {value!r}",
                    f"lake_assets does not know this {key.split('.', 1)[0]} writer option and cannot tell "
                    "whether the files it writes would honour it", frozenset({Op.WRITE, Op.COMPACT}),
                    "write and compact the table with Paimon Java, whose writer takes it, or, if new files need not "
                    f"honour it, {remove_option(key)}"))
            continue
        if key.startswith(WRITER_ONLY_PREFIXES):
            ops = frozenset({Op.WRITE})
        else:
            ops = MAINTENANCE if is_read_harmless(key) else MAINTENANCE | READS
        out.append(Refusal(
            f"option {key} = {value!r}",
            "lake_assets does not know this option (a newer Paimon's?) and cannot tell what it means for "
            "the files it would write or delete",
            ops,
            "if it turns on a newer Paimon's feature, maintain the table with that Paimon; if it is stale or a typo, "
            f"{remove_option(key)}",
        ))
    return out


# Scan positions are meant per query (Spark's read options, Flink's OPTIONS hint); lake_assets reads
# a snapshot, tag or time by its read's own arguments.
_SCAN_POSITION_ACTION = (f"{remove_option('{key}')}: Paimon's readers then start from the latest snapshot too, "
                         "unless a query passes the option (Spark's read options, Flink's /*+ OPTIONS(...) */ "
                         "hint); here, read a snapshot, tag or time with the read's own arguments (to_arrow("
                         "snapshot_id=..., tag=..., timestamp=...))")
# A file index lake_assets cannot build for a column: new files may go without it (an index only
# lets readers skip files).
_INDEX_ACTION = (f"{ALTER_NAMED} so that it no longer names that column (files written so far keep their "
                 "indexes), or write with Paimon Java where its writer takes the index")


def _written(options: Mapping[str, str], primary_key: bool) -> list[tuple[str, str, str]]:
    codec = options.get("file.compression", "zstd")
    try:
        return written_formats(options, primary_key, _table_format(options),
                               java_fold_choice(codec, FILE_CODECS, "upper") or codec)
    except OptionError:  # a malformed per-level value is refused by its registry row
        return [("file.format", _table_format(options), codec)]


def _formats_written(options: Mapping[str, str]) -> set[str]:
    return {fmt for _, fmt, _ in _written(options, True)}


def _format_refusals(schema: TableSchema) -> list[Refusal]:
    """Every kind of file a writer of the table writes (the table's format and codec, each level's,
    changelog files'), in a format lake_assets writes with a codec that format's writer takes as
    Paimon Java's does; else writes and compaction are refused, naming the options that chose it."""
    out: list[Refusal] = []
    for where, fmt, codec in _written(schema.options, bool(schema.primary_keys)):
        if fmt not in DATA_FILE_FORMATS:
            why = (f"lake_assets writes {', '.join(sorted(DATA_FILE_FORMATS))} files, not {fmt!r} ones" if fmt
                   else "an empty text names no format (Paimon Java fails on it too)")
            action = (f"{ALTER_NAMED} to parquet, orc or avro (this shapes new files only: files already written "
                      f"keep their format), or {USE_PAIMON}")
        else:
            codecs = file_format(fmt).codecs
            if codecs is None or codec in codecs:
                continue
            why = (f"{fmt} files are written with {', '.join(sorted(codecs))}, not {codec!r} (Paimon Java's "
                   f"{fmt} writer fails on it, or lake_assets' cannot write it)")
            action = (f"{ALTER_NAMED} to a codec of {', '.join(sorted(codecs))} (this shapes new files only; reads "
                      "are not refused), or write with Paimon Java if its writer takes the codec")
        out.append(Refusal(where, why, frozenset({Op.WRITE, Op.COMPACT}), action))
    return out


def _dv_refusals(schema: TableSchema) -> list[Refusal]:
    """What deletion-vector tables refuse: reads (batch, and the full phase of streams) apply the
    vectors; compaction writes them for every primary-key engine Paimon allows with vectors
    (ops/deletion_vectors.py, ops/dv_compact.py; partial-update, aggregation and sequence.field
    merge each key's old row in, ops/dv_old_values.py), with changelog-producer none, input or
    lookup; that of append tables (unaware and fixed bucket) applies them and deletes mark them
    (ops/append_vectors.py). What Paimon refuses (first-row, full-compaction changelog) is refused
    for writes and compaction with Paimon's reason (`table_rules.deletion_vector_problem`). Both
    vector forms (``deletion-vectors.bitmap64``) are read and written."""
    options = schema.options
    if not is_true(options.get("deletion-vectors.enabled")):
        return []
    out: list[Refusal] = []
    opts = schema.core_options
    if is_true(options.get("data-evolution.enabled")):
        out.append(Refusal("deletion vectors on a data-evolution table (deletion-vectors.enabled with "
                           "data-evolution.enabled)",
                           "the merge of a row range's files does not apply deletion vectors", DATA,
                           "use Paimon Java HEAD or pypaimon for this table"))
    if not schema.primary_keys:
        # compaction applies and drops the vectors, deletes mark them (ops/append_vectors.py): in
        # one index file per bucket in fixed-bucket tables (Paimon's BucketedAppendDeletionFileMaintainer)
        return out
    try:
        problem = deletion_vector_problem(opts)
    except UnsupportedFeatureError:  # an unknown merge-engine is refused when the table opens
        return out
    if problem is not None:
        if opts.changelog_producer not in ("none", "input", "lookup"):
            what = "changelog-producer to lookup, none or input, which Paimon accepts with deletion vectors"
            action = f"{set_option('changelog-producer', 'lookup', what=what)}; reads are not refused"
        else:  # the engine (first-row) is immutable
            action = f"reads are not refused; to write, {COPY_ROWS} without deletion-vectors.enabled"
        out.append(Refusal(f"deletion vectors with merge-engine {opts.merge_engine!r} and changelog-producer "
                           f"{opts.changelog_producer!r}", f"Paimon refuses the table: {problem}",
                           frozenset({Op.WRITE, Op.COMPACT}), action))
    return out


def _partition_name_refusals(schema: TableSchema) -> list[Refusal]:
    """Partition keys whose directory names lake_assets cannot reproduce (`unnameable_partition_keys`):
    every operation that computes a data file's path is refused."""
    keys = list(schema.partition_keys)
    if not keys:
        return []
    types = schema.types(keys)
    by_key = dict(zip(keys, types, strict=True))
    legacy = schema.core_options.partition_legacy_name
    action = (f"{USE_PAIMON}: changing partition.legacy-name renames no directory already written, so it cannot "
              "make the names match")
    return [Refusal(f"partition.legacy-name = false with partition key {key!r} of type {by_key[key]}", why, PATHS,
                    action) for key, why in unnameable_partition_keys(keys, types, legacy_name=legacy)]


def _table_format(options: Mapping[str, str]) -> str:
    # Paimon's normalizeFileFormat: lower-cased, never trimmed (a padded value refuses by its row)
    return (options.get("file.format") or "parquet").lower()


def schema_refusals(schema: TableSchema) -> list[Refusal]:
    """The refusals that follow from the schema alone (options, bucket mode). Pure."""
    options = schema.options
    bucket = schema.core_options.bucket
    # bloom-filter indexes our writers cannot build (docs/format.md §7.6) refuse what writes files
    index = [Refusal(what, why, frozenset({Op.WRITE, Op.COMPACT}), _INDEX_ACTION)
             for what, why in file_index_write_problems(schema)]
    return (_bucket_refusals(schema, bucket) + _bucket_function_refusals(schema, bucket)
            + _option_refusals(options) + _format_refusals(schema)
            + _dv_refusals(schema) + _partition_name_refusals(schema) + index + default_value_refusals(schema))


def alter_refusals(schema: TableSchema) -> list[Refusal]:
    """The refusals of a table opened for an ALTER of its options only (`FileStore` ``for_alter``),
    whose options may not parse: the option registry's rows that refuse schema changes (a manifest
    format lake_assets cannot read, a stored ``branch``), each parsed on its own."""
    return [r for r in _option_refusals(schema.options) if r.blocks(Op.SCHEMA_CHANGE)]


def validate_open(schema: TableSchema, table: str | None = None) -> None:
    """Checks that make a table unusable for every operation: malformed option values, engines and
    changelog producers we do not implement (raised as before). Options handled per operation here
    are left out, so that e.g. an ORC table can still be tagged or expired. With the ``table``'s
    name, a refusal an ALTER of options can repair says how (`repair_advice`)."""

    def check(options: Mapping[str, str]) -> None:
        rest = {k: v for k, v in options.items() if per_operation_rule(k) is None}
        CoreOptions(rest, has_primary_key=bool(schema.primary_keys)).validate(
            field_names=schema.field_names, strict=False
        )

    try:
        check(schema.options)
    except (OptionError, UnsupportedFeatureError) as exc:
        # only a refused table pays for the schema-change rules (a healthy open never imports them)
        from lake_assets.ops.schema_option_change import repair_advice, repairable_by_alter

        if table is None or not repairable_by_alter(schema.options, check):
            raise
        raise type(exc)(f"{exc}. {repair_advice(table)}") from exc


__all__ = [
    "DATA",
    "DATA_FILE_FORMATS",
    "MAINTENANCE",
    "PATHS",
    "POSTPONE_BUCKET",
    "READS",
    "READ_HARMLESS_KEYS",
    "READ_HARMLESS_PREFIXES",
    "WRITER_ONLY_PREFIXES",
    "Op",
    "Refusal",
    "alter_refusals",
    "cross_partition_fields",
    "data_file_format",
    "entry_refusals",
    "index_refusals",
    "is_known_option",
    "is_read_harmless",
    "refuse",
    "schema_refusals",
    "validate_open",
]
