"""Rules a table's options must satisfy against its columns and keys, at create and on ALTER."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lake_assets.errors import OptionError, UnsupportedFeatureError
from lake_assets.lsm.merge_engine.registry import DEFAULT_MERGE_ENGINE, engine_of
from lake_assets.ops.default_values import check_default_values
from lake_assets.options import CoreOptions
from lake_assets.spec.arrow_types import to_arrow
from lake_assets.spec.data_types import DataField, MapType, VarCharType


def index_type_problems(fields: Sequence[DataField], options: Mapping[str, str]) -> list[tuple[str, str, str, str]]:
    """(index type, column, type, Java's reason) of each column a bsi or range-bitmap index names
    (``file-index.<type>.columns``) whose type Paimon 1.x's ``FileIndexerFactory.validate`` refuses,
    as ``SchemaValidation.validateFileIndex`` checks them: a map value ``m[k]`` by the map's value
    type. Missing columns, nested names of non-maps and what only the writer refuses (bsi's
    DECIMAL above 18, map values) are refused elsewhere."""
    from lake_assets.formats import bsi_index, range_bitmap_keys
    from lake_assets.option_rules_file_index import BSI, RANGE_BITMAP, indexed_columns, top_level_column

    by_name = {f.name: f for f in fields}
    out: list[tuple[str, str, str, str]] = []
    for kind, java_refusal in ((BSI, bsi_index.java_refusal), (RANGE_BITMAP, range_bitmap_keys.java_refusal)):
        for name in indexed_columns(options, kind):
            field = by_name.get(top_level_column(name))
            if field is None:
                continue
            dt = field.type
            if top_level_column(name) != name:
                if not isinstance(dt, MapType):
                    continue
                dt = dt.value
            if (why := java_refusal(dt)) is not None:
                out.append((kind, name, str(dt.copy(nullable=True)), why))
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
    # Paimon 1.x's SchemaValidation.validateFileIndex refuses these at create and ALTER; a table that
    # already carries one (written by an older engine) keeps it: refused at write, readable
    carried = set(index_type_problems(*before)) if before is not None else set()
    for problem in index_type_problems(fields, options):
        if problem not in carried:
            kind, column, type_text, why = problem
            # Java's wording, plus the option; a map value is named m[k] as listed (Java names the map m)
            raise OptionError(f"{what}: Column '{column}' with type '{type_text}' is not supported by '{kind}' index "
                              f"(file-index.{kind}.columns). {why}")
    check_engine_producer(what, core)
    if not primary_keys:
        for k in ("merge-engine", "sequence.field", "rowkind.field"):
            if k in options and not (k == "merge-engine" and core.merge_engine == DEFAULT_MERGE_ENGINE):
                raise OptionError(f"{what}: option {k!r} needs a primary key")
        if core.changelog_producer != "none":
            raise OptionError(f"{what}: option 'changelog-producer' needs a primary key")
        if core.streaming_read_overwrite:
            # Java's SchemaValidation (0.9 to HEAD): "Doesn't support streaming read the changes
            # from overwrite when the primary keys are not defined"
            raise OptionError(f"{what}: option 'streaming-read-overwrite' needs a primary key")
    if core.bucket_key and core.bucket == -1:
        # Paimon's SchemaValidation refuses it too: dynamic-bucket writers hash the trimmed primary
        # key whatever bucket-key says, and unaware-bucket tables hash nothing
        raise OptionError(f"{what}: 'bucket-key' cannot be set with bucket = -1; set a bucket number N > 0")
    if core.bucket_key:
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
    check_default_values(what, fields, primary_keys, partition_keys, options)
    return core


def check_engine_producer(what: str, core: CoreOptions) -> None:
    """Paimon Java refuses a first-row table with changelog-producer input or full-compaction
    (SchemaValidation: "Only support 'none' and 'lookup' changelog-producer on FIRST_MERGE merge
    engine"), at create and ALTER; we refuse those and any write or compaction of a table that
    carries the pair anyway (reads still work: the files are valid)."""
    engine = engine_of(core, what)
    allowed = engine.changelog_producers
    if allowed is not None and core.changelog_producer not in allowed:
        raise UnsupportedFeatureError(
            f"{what}: changelog-producer={core.changelog_producer!r} is not supported with "
            f"merge-engine={engine.name!r} (only {' and '.join(map(repr, allowed))}, as in Paimon)"
        )
