"""Rules a table's options must satisfy against its columns and keys, at create and on ALTER."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lake_assets.errors import OptionError, UnsupportedFeatureError
from lake_assets.lsm.merge_engine.registry import DEFAULT_MERGE_ENGINE, engine_of
from lake_assets.ops.default_values import check_default_values
from lake_assets.options import CoreOptions
from lake_assets.spec.arrow_types import to_arrow
from lake_assets.spec.data_types import DataField, VarCharType


def bsi_type_problems(fields: Sequence[DataField], options: Mapping[str, str]) -> list[tuple[str, str]]:
    """(column, type) of each column ``file-index.bsi.columns`` names whose type Paimon's bsi index
    cannot key (map values ``m[k]`` and missing columns are refused elsewhere)."""
    from lake_assets.formats.bsi_index import keyable_type
    from lake_assets.option_rules_file_index import BSI, indexed_columns

    by_name = {f.name: f for f in fields}
    return [(name, str(by_name[name].type.copy(nullable=True))) for name in indexed_columns(options, BSI)
            if name in by_name and not keyable_type(by_name[name].type)]


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
    schema an ALTER changes, whose own bsi problems (a table another engine created) stay allowed."""
    names = tuple(f.name for f in fields)
    by_name = {f.name: f for f in fields}
    core = CoreOptions(dict(options), has_primary_key=bool(primary_keys))
    core.validate(field_names=names, strict=True)
    # Paimon 1.x's SchemaValidation.validateFileIndex refuses these at create and ALTER; a table that
    # already carries one (written by an older engine) keeps it: refused at write, readable
    carried = set(bsi_type_problems(*before)) if before is not None else set()
    for column, type_text in bsi_type_problems(fields, options):
        if (column, type_text) not in carried:
            raise OptionError(
                f"{what}: Column '{column}' with type '{type_text}' is not supported by 'bsi' index "
                f"(file-index.bsi.columns). {type_text} type is not support to build bsi index yet "
                "(Paimon's bsi index keys TINYINT, SMALLINT, INT, BIGINT, DATE, TIME, TIMESTAMP, TIMESTAMP_LTZ "
                "and DECIMAL only)")
    check_engine_producer(what, core)
    if not primary_keys:
        for k in ("merge-engine", "sequence.field", "rowkind.field"):
            if k in options and not (k == "merge-engine" and core.merge_engine == DEFAULT_MERGE_ENGINE):
                raise OptionError(f"{what}: option {k!r} needs a primary key")
        if core.changelog_producer != "none":
            raise OptionError(f"{what}: option 'changelog-producer' needs a primary key")
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
