"""Rules a table's options must satisfy against its columns and keys, at create and on ALTER."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lake_assets.errors import OptionError, UnsupportedFeatureError
from lake_assets.lsm.merge_engine.aggregate_sketches import SKETCH_FUNCTIONS
from lake_assets.lsm.merge_engine.registry import DEFAULT_MERGE_ENGINE, engine_of
from lake_assets.ops.default_values import check_default_values
from lake_assets.options import CoreOptions
from lake_assets.refusal_actions import ACTION_MARK
from lake_assets.spec.arrow_types import to_arrow
from lake_assets.spec.data_types import (
    ArrayType,
    BinaryType,
    CharType,
    DataField,
    MapType,
    MultisetType,
    RowType,
    VarCharType,
)


def index_type_problems(fields: Sequence[DataField], options: Mapping[str, str]) -> list[str]:
    """Java's message for each file-index column that Paimon 2.0's ``SchemaValidation.validateFileIndex``
    refuses at create and ALTER: a nested name ``m[k]`` of a column that is not a map or whose map
    keys are not CHAR / VARCHAR, and a column (a map value ``m[k]``: the map's value type) of a type
    the index type's ``FileIndexerFactory.validate`` refuses (bloom-filter: BOOLEAN, DECIMAL, nested
    types; bitmap: BINARY, DECIMAL, nested types; bsi; range-bitmap). Missing columns and what only
    the writer refuses (a BOOLEAN bitmap, bsi's DECIMAL above 18, map values of bitmaps) are refused
    elsewhere."""
    from lake_assets.formats import bitmap_index, bsi_index, fast_hash, range_bitmap_keys
    from lake_assets.option_rules_file_index import (
        BITMAP,
        BLOOM_FILTER,
        BSI,
        RANGE_BITMAP,
        indexed_columns,
        top_level_column,
    )

    by_name = {f.name: f for f in fields}
    out: list[str] = []
    refusals = ((BLOOM_FILTER, fast_hash.java_refusal), (BITMAP, bitmap_index.java_refusal),
                (BSI, bsi_index.java_refusal), (RANGE_BITMAP, range_bitmap_keys.java_refusal))
    for kind, java_refusal in refusals:
        key = f"file-index.{kind}.columns"
        for name in indexed_columns(options, kind):
            top = top_level_column(name)
            field = by_name.get(top)
            if field is None:
                continue
            dt = field.type
            if top != name:
                if not isinstance(dt, MapType):
                    out.append(f"Column '{top}' is configured as nested column in '{key}' but is not a map type. "
                               "Only map type supports nested column.")
                    continue
                if not isinstance(dt.key, (CharType, VarCharType)):
                    out.append(f"Column '{top}' is configured as nested column in '{key}', but its map key type "
                               f"is {dt.key}. Only CHAR/VARCHAR/STRING is supported.")
                    continue
                dt = dt.value
            if (why := java_refusal(dt)) is not None:
                # Java's wording, plus the option; a map value is named m[k] as listed (Java names the map m)
                out.append(f"Column '{name}' with type '{dt.copy(nullable=True)}' is not supported by '{kind}' "
                           f"index ({key}). {why}")
    return out


def check_options(
    what: str,
    fields: Sequence[DataField],
    primary_keys: Sequence[str],
    partition_keys: Sequence[str],
    options: Mapping[str, str],
    *,
    before: tuple[Sequence[DataField], Mapping[str, str]] | None = None,
) -> CoreOptions:
    """Validate ``options`` for these columns and keys; ``what`` starts each message, e.g.
    "Cannot create db.t". Returns the typed options. ``before``: the fields and options of the
    schema an ALTER changes, whose own file-index type problems (a table another engine created)
    stay allowed."""
    names = tuple(f.name for f in fields)
    by_name = {f.name: f for f in fields}
    core = CoreOptions(dict(options), has_primary_key=bool(primary_keys))
    core.validate(field_names=names, strict=True)
    # Paimon 2.0's SchemaValidation.validateFileIndex refuses these at create and ALTER; a table that
    # already carries one (written by an older engine) keeps it: refused at write, readable
    carried = set(index_type_problems(*before)) if before is not None else set()
    for problem in index_type_problems(fields, options):
        if problem not in carried:
            raise OptionError(f"{what}: {problem}")
    check_engine_producer(what, core)
    if _dv_on_data_evolution(options) and not (before is not None and _dv_on_data_evolution(before[1])):
        raise UnsupportedFeatureError(
            f"{what}: deletion-vectors.enabled on a data-evolution table (data-evolution.enabled) is not supported "
            "by lake_assets (its merge of a row-id range's files does not apply deletion vectors): leave "
            "deletion-vectors.enabled out, or use Paimon Java HEAD or pypaimon for such a table")
    if primary_keys and (dv_problem := deletion_vector_problem(core)) is not None:
        raise OptionError(f"{what}: {dv_problem} (deletion-vectors.enabled with changelog-producer = "
                          f"{core.changelog_producer!r}, merge-engine = {core.merge_engine!r}, as in Paimon)")
    if not primary_keys:
        for k in ("merge-engine", "sequence.field", "rowkind.field"):
            if k in options and not (k == "merge-engine" and core.merge_engine == DEFAULT_MERGE_ENGINE):
                raise OptionError(f"{what}: option {k!r} needs a primary key")
        if core.changelog_producer != "none":
            raise OptionError(f"{what}: option 'changelog-producer' needs a primary key")
        if core.streaming_read_overwrite:
            # Java's SchemaValidation (0.9 to HEAD): "Doesn't support streaming read the changes
            # from overwrite when the primary keys are not defined"
            raise OptionError(f"{what}: option 'streaming-read-overwrite' needs a primary key (an append "
                              "table's streams read OVERWRITEs with 'streaming-read-append-overwrite')")
    if core.bucket_key and core.bucket == -1:
        # Paimon's SchemaValidation refuses it too: dynamic-bucket writers hash the trimmed primary
        # key whatever bucket-key says, and unaware-bucket tables hash nothing
        raise OptionError(f"{what}: 'bucket-key' cannot be set with bucket = -1; set a bucket number N > 0")
    if not primary_keys and core.bucket > 0 and not core.bucket_key:
        # Paimon's SchemaValidation.validateBucket, in its words
        raise OptionError(f"{what}: you should define a 'bucket-key' for bucketed append mode (bucket = "
                          f"{core.bucket} on a table without a primary key)")
    if core.bucket_key:
        nested = [k for k in core.bucket_key if k in by_name and isinstance(by_name[k].type, NESTED_TYPES)]
        if nested:
            raise OptionError(f"{what}: nested type can not be in bucket-key, as in Paimon ({nested} are)")
        bad = [k for k in core.bucket_key
               if k not in names or k in partition_keys or (primary_keys and k not in primary_keys)]
        if bad:
            raise OptionError(
                f"{what}: bucket-key {list(core.bucket_key)} must name primary-key columns "
                f"that are not partition keys ({bad} are not)"
            )
    for f in core.sequence_fields:
        if f not in names:
            raise OptionError(f"{what}: sequence.field {f!r} is not a column")
    rk = core.rowkind_field
    if rk is not None:
        if rk not in names:
            raise OptionError(f"{what}: rowkind.field {rk!r} is not a column")
        if not isinstance(by_name[rk].type, VarCharType):
            raise OptionError(f"{what}: rowkind.field {rk!r} must be a string column")
    # the engine's options (aggregate functions, sequence groups) must fit the columns' types
    trimmed = [k for k in primary_keys if k not in partition_keys]
    engine_of(core, what).create([(f.name, to_arrow(f.type)) for f in fields], trimmed, core)
    for col in fields:  # Arrow cannot tell BINARY(n) from VARBINARY; Java's factories refuse BINARY(n)
        function = core.aggregate_function(col.name)
        if (isinstance(col.type, BinaryType) and function and function.strip().lower() in SKETCH_FUNCTIONS
                and col.name not in primary_keys and col.name not in core.sequence_fields):
            raise OptionError(f"{what}: aggregate function {function!r} of column {col.name!r} needs a "
                              f"VARBINARY (BYTES) column, not {col.type}")
    check_default_values(what, fields, primary_keys, partition_keys, options)
    return core


# column types Paimon refuses in a bucket key (SchemaValidation.validateBucket)
NESTED_TYPES = (ArrayType, MapType, MultisetType, RowType)


def _dv_on_data_evolution(options: Mapping[str, str]) -> bool:
    return all(str(options.get(k, "false")).strip().lower() == "true"
               for k in ("deletion-vectors.enabled", "data-evolution.enabled"))


def deletion_vector_problem(core: CoreOptions) -> str | None:
    """Why Paimon refuses this table's deletion vectors, in Java's words (SchemaValidation's
    validateForDeletionVectors, 0.9 and HEAD alike), or None: with changelog-producer
    full-compaction, and with the first-row engine (HEAD allows it only with its
    ``pk-clustering-override`` mode, which lake_assets does not know)."""
    if str(core.raw.get("deletion-vectors.enabled", "false")).strip().lower() != "true":
        return None
    if core.changelog_producer not in ("none", "input", "lookup"):
        return "Deletion vectors mode is only supported for NONE/INPUT/LOOKUP changelog producer now."
    if engine_of(core).refuses_deletion_vectors:
        return ("First row merge engine does not need deletion vectors because there is no deletion of old "
                "data in this merge engine.")
    return None


def check_engine_producer(what: str, core: CoreOptions) -> None:
    """Paimon Java refuses a first-row table with changelog-producer input or full-compaction
    (SchemaValidation: "Only support 'none' and 'lookup' changelog-producer on FIRST_MERGE merge
    engine"), at create and ALTER; we refuse those and any write or compaction of a table that
    carries the pair anyway (reads still work: the files are valid)."""
    engine = engine_of(core, what)
    allowed = engine.changelog_producers
    if allowed is not None and core.changelog_producer not in allowed:
        # changelog-producer may change by ALTER (merge-engine may not): the one way to a valid table
        raise UnsupportedFeatureError(
            f"{what}: changelog-producer={core.changelog_producer!r} is not supported with "
            f"merge-engine={engine.name!r} (only {' and '.join(map(repr, allowed))}, as in Paimon). {ACTION_MARK}"
            f"set changelog-producer to {' or '.join(allowed)} (table.update_schema().set_option(...).commit(), "
            "or ALTER TABLE ... SET in Flink, SET TBLPROPERTIES in Spark); reads are not refused"
        )
