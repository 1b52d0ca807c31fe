"""The options of the collection aggregate functions and the column types they take.

``fields.<c>.distinct``, ``nested-key``, ``nested-sequence-field``, ``count-limit``,
``nested-key-null-strategy`` and ``ts-field`` read and checked as Paimon's FieldCollectAgg,
FieldNestedUpdateAgg, FieldNestedPartialUpdateAgg and FieldMergeMapWithKeyTimeAgg factories check
them; the fold itself (what the options mean) is `aggregate_collections`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import pyarrow as pa

from lake_assets.errors import OptionError, UnsupportedFeatureError
from lake_assets.lsm.merge_engine.aggregate_keytime import check_keytime_type, keytime_field
from lake_assets.lsm.merge_engine.collection_values import is_list
from lake_assets.option_types import INT_MAX
from lake_assets.refusal_actions import ACTION_MARK

if TYPE_CHECKING:
    from lake_assets.option_merge import MergeOptions

COLLECTION_FUNCTIONS = frozenset({
    "collect", "merge_map", "nested_update", "nested_partial_update", "merge_map_with_keytime",
})
RETRACTABLE_COLLECTIONS = frozenset({"collect", "merge_map", "nested_update"})


@dataclass(frozen=True)
class CollectionOptions:
    """The per-field options of the collection functions (``fields.<c>.<suffix>``)."""

    distinct: bool = False
    nested_key: tuple[str, ...] = ()
    nested_sequence_field: tuple[str, ...] = ()
    count_limit: int = INT_MAX
    nested_key_null_strategy: str = "merge"
    ts_field: str = ""


NO_COLLECTION_OPTIONS = CollectionOptions()


def check_collection_type(column: str, dtype: pa.DataType, func: str) -> None:
    """Raise Java's error (prefixed with the function and column) when ``func`` does not suit the type."""
    what = f"Aggregate function {func!r} of column {column!r}"
    if func == "collect" and not is_list(dtype):
        raise OptionError(f"{what}: Data type for collect column must be 'Array' but was '{dtype}'.")
    if func == "merge_map" and not pa.types.is_map(dtype):
        raise OptionError(f"{what}: Data type for merge map column must be 'MAP' but was '{dtype}'")
    if func in ("nested_update", "nested_partial_update") and not (
        is_list(dtype) and pa.types.is_struct(dtype.value_type)
    ):
        raise OptionError(f"{what}: Data type for nested table column must be 'Array<Row>' but was '{dtype}'.")
    if func == "merge_map_with_keytime":
        check_keytime_type(column, dtype)


def _names(text: object) -> tuple[str, ...]:
    # Java 1.x splits on ',' and trims each name (0.9 does not trim)
    return () if text is None else tuple(s.strip() for s in str(text).split(","))


def refuse_listagg_distinct(options: MergeOptions, column: str) -> None:
    """Paimon 1.x's listagg honours ``fields.<c>.distinct``; lake_assets' listagg does not."""
    if options.field_option(column, "distinct"):
        raise UnsupportedFeatureError(
            f"Column {column!r}: 'fields.{column}.distinct' = 'true' with aggregate function 'listagg' "
            f"(Paimon 1.x's distinct listagg) is not implemented by lake_assets. {ACTION_MARK}write and compact "
            "the table with Paimon Java 1.x, whose listagg drops repeated values"
        )


def collection_options(options: MergeOptions, column: str, dtype: pa.DataType, func: str) -> CollectionOptions:
    """The options of column ``column``'s collection function ``func``, checked as Java checks them."""
    get = options.field_option
    opts = CollectionOptions(
        distinct=bool(get(column, "distinct")),
        nested_key=_names(get(column, "nested-key")),
        nested_sequence_field=_names(get(column, "nested-sequence-field")),
        count_limit=int(str(get(column, "count-limit"))),
        nested_key_null_strategy=str(get(column, "nested-key-null-strategy")),
    )
    if func == "merge_map_with_keytime":
        ts_field = get(column, "ts-field")
        return replace(opts, ts_field=keytime_field(column, dtype, None if ts_field is None else str(ts_field)))
    if func not in ("nested_update", "nested_partial_update"):
        return opts
    fields = [f.name for f in dtype.value_type]
    for suffix, names in (("nested-key", opts.nested_key), ("nested-sequence-field", opts.nested_sequence_field)):
        for name in names:
            if name not in fields:
                raise OptionError(
                    f"Option 'fields.{column}.{suffix}' names {name!r}, which the rows of column {column!r} "
                    f"do not have (fields: {fields})"
                )
    if opts.nested_key:
        return opts
    if func == "nested_partial_update":
        raise OptionError(
            f"Aggregate function 'nested_partial_update' of column {column!r} needs 'fields.{column}.nested-key'"
        )
    for suffix in ("nested-key-null-strategy", "nested-sequence-field"):
        if f"fields.{column}.{suffix}" in options.raw:
            raise OptionError(
                f"Option 'fields.{column}.{suffix}' requires 'fields.{column}.nested-key' to be configured."
            )
    return opts


__all__ = [
    "COLLECTION_FUNCTIONS",
    "NO_COLLECTION_OPTIONS",
    "RETRACTABLE_COLLECTIONS",
    "CollectionOptions",
    "check_collection_type",
    "collection_options",
    "refuse_listagg_distinct",
]
