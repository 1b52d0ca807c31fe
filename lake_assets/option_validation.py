"""Validation of a table's options against the option registry, at create, ALTER and open.

Every value is parsed by its registry row and checked against the values lake_assets
implements; then the options' relations to each other, and the spellings Paimon Java's writers
need. `CoreOptions.validate` calls this.
"""

from __future__ import annotations

from lake_assets.errors import OptionError, UnsupportedFeatureError
from lake_assets.option_rules import RULES, is_shadowed
from lake_assets.option_rules_file_index import file_index_problems
from lake_assets.option_types import LakeErrorLike, parse_value, raise_all, suggest, unsupported_value
from lake_assets.options import FIELD_OPTION, CoreOptions, rule_for

# Newer Paimons' features lake_assets does not implement, by the prefixes of their options: a key
# lake_assets does not know is refused naming the feature rather than suggesting a close name.
_NOT_IMPLEMENTED = (
    (("blob-", "blob."), "BLOB columns and blob files of data-evolution tables"),
    (("vector-", "vector."), "VECTOR columns and vector-store files of data-evolution tables"),
    (("global-index.",), "global indexes of row-tracking tables"),
)


def _not_implemented(key: str) -> str | None:
    return next((feature for prefixes, feature in _NOT_IMPLEMENTED if key.startswith(prefixes)), None)


def validate_options(opts: CoreOptions, *, field_names: tuple[str, ...] = (), strict: bool = True) -> None:
    """Reject unknown, malformed, out-of-range and unsupported options, naming each key.

    Every value is checked against its row of the registry (option_rules), and all problems
    are reported at once. ``strict`` (creating or altering a table, writing) also rejects keys
    we do not know, suggesting close names; reading a table another engine wrote only rejects
    options that would change what a read returns.
    """
    problems: list[LakeErrorLike] = []
    for key, value in opts.raw.items():
        rule = rule_for(key)
        if rule is None:
            if strict:
                feature = _not_implemented(key)
                problems.append(OptionError(
                    f"Unknown table option {key!r} (value {value!r}){suggest(key, RULES)}" if feature is None else
                    f"Unknown table option {key!r} (value {value!r}): {feature} are not implemented by lake_assets; "
                    "leave it out, or use Paimon Java HEAD or pypaimon for such a table"))
            continue
        if is_shadowed(opts.raw, key):
            continue  # a fallback key behind its option's own key (or an earlier one): Paimon never reads it
        try:
            parse_value(rule, value)
        except (OptionError, UnsupportedFeatureError) as exc:
            problems.append(exc)
            continue
        refused = unsupported_value(rule, value)
        if refused is not None:
            # name the values we take (and the closest one): the user should not have to guess
            problems.append(refused)
            continue
        m = FIELD_OPTION.match(key)
        if m:
            for f in m.group("field").split(","):
                if field_names and f not in field_names:
                    problems.append(OptionError(
                        f"Option {key!r} names column {f!r}, which the table does not have"
                        f"{suggest(f, field_names)}"))
    raise_all(problems)
    # Every value parses: now the options' relations to each other.
    if strict:
        problems += file_index_problems(opts.raw, field_names)
        try:
            _check_java_spellings(opts)
        except (OptionError, UnsupportedFeatureError) as exc:
            problems.append(exc)
    if opts.snapshot_num_retained_max < opts.snapshot_num_retained_min:
        problems.append(OptionError(
            f"Contradictory options: snapshot.num-retained.max={opts.snapshot_num_retained_max} "
            f"is below snapshot.num-retained.min={opts.snapshot_num_retained_min}"))
    cmin, cmax, _ = opts.changelog_retention()
    if cmax < cmin:
        problems.append(OptionError(
            f"Contradictory options: changelog.num-retained.max={cmax} is below changelog.num-retained.min={cmin}"))
    if opts.num_sorted_run_stop_trigger < opts.num_sorted_run_compaction_trigger:
        problems.append(OptionError(
            "Contradictory options: num-sorted-run.stop-trigger is below num-sorted-run.compaction-trigger"))
    raise_all(problems)




# Values we would write that Paimon Java's writers reject: its Parquet writer takes the codec names
# of parquet-mr's CompressionCodecName, its Avro manifest writer Avro's codec names.
_JAVA_SPELLINGS = {
    ("file.compression", "none"): "uncompressed",
    ("manifest.compression", "none"): "null",
}
# Codecs we could write but Paimon Java cannot read (its bundle has no Hadoop Brotli codec).
_JAVA_UNREADABLE = {("file.compression", "brotli"): "Paimon Java has no Brotli codec to read the files"}


def _check_java_spellings(opts: CoreOptions) -> None:
    """Reject, when a table is created or altered, values a Paimon Java writer could not use.

    Tables that already carry them stay readable and writable here (the files are valid).
    """
    for key, value in (("file.compression", opts.file_compression),
                       ("manifest.compression", opts.manifest_compression)):
        if key not in opts.raw:
            continue
        java = _JAVA_SPELLINGS.get((key, value))
        if java is not None:
            raise OptionError(
                f"Option {key}={opts.raw[key]!r} is not a value Paimon's Java writer accepts; "
                f"use {key}={java!r}"
            )
        why = _JAVA_UNREADABLE.get((key, value))
        if why is not None:
            raise UnsupportedFeatureError(f"Option {key}={opts.raw[key]!r} is not supported: {why}")
