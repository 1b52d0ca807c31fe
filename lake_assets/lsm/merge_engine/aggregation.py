"""The aggregation merge engine (``merge-engine = aggregation``), vectorized over Arrow tables.

Follows docs/format.md §10.1-§10.2 and Paimon's documented behaviour; a key's only record comes
out unchanged (see the package docstring). The functions themselves: `aggregate_functions`.

- Function per column: ``fields.<c>.aggregate-function``, else ``fields.default-aggregate-function``,
  else last_non_null_value. Key columns are kept; ``sequence.field`` columns use last_value.
- ``aggregation.remove-record-on-delete``: a -D resets the key to the -D's whole image (Paimon
  1.4.1+, docs/format.md §10.1), which the records after it fold onto; the result is -D, with
  that image, unless records follow it (`aggregate_reset`). ``ignore-delete`` (or a fallback key:
  ``first-row.ignore-delete``, ``deduplicate.ignore-delete``, ``partial-update.ignore-delete``)
  drops retracts before merging, as the writer does.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
import pyarrow as pa

from lake_assets.errors import OptionError
from lake_assets.lsm.merge import is_retract, kinds_of
from lake_assets.lsm.merge_engine.aggregate_functions import FieldFunction, check_retractable, fold
from lake_assets.lsm.merge_engine.aggregate_reset import ResetImages
from lake_assets.lsm.merge_engine.engine_options import (
    check_aggregate_options,
    checked_sequence_fields,
    field_function,
    refuse_ignore_retract_with_remove_on_delete,
)
from lake_assets.lsm.merge_engine.function import SchemaFields
from lake_assets.lsm.merge_engine.grouping import all_single, group_keys, keep_singles, last_true, one_row_per_group
from lake_assets.lsm.merge_engine.not_null import check_not_null, folded_rows, has_nulls
from lake_assets.lsm.merge_engine.pair_merge import PairInput, fold_pair, merged_pairs, pair_function, reads_old
from lake_assets.options import CoreOptions
from lake_assets.spec.row_kind import RowKind


class Aggregation:
    """The aggregation merge engine (see the module docstring for the exact semantics)."""

    def __init__(
        self, schema_fields: SchemaFields, key_names: Sequence[str], options: CoreOptions,
        not_null: Collection[str] = (), what: str = "",
    ) -> None:
        self.types = {name: dtype for name, dtype in schema_fields}
        self.key_names = tuple(key_names)
        # the NOT NULL columns, whose nulls a copied image or (partial-update) an insert cannot
        # carry (Paimon's nullables, `not_null`); ``what`` names the table in that error
        self.not_null, self.what = frozenset(not_null), what
        # Paimon's lookup wrapper (LookupChangelogMergeFunctionWrapper.calculateResult) merges a
        # key's only record too, where its ReducerMergeFunctionWrapper emits it as it is
        # (keep_singles): set for the compactions that look old values up (ops/dv_old_values.py)
        self.merges_singles = False
        names = set(self.types)
        for k in self.key_names:
            if k not in names:
                raise OptionError(f"Primary-key column {k!r} is not a table column")
        check_aggregate_options(options, names)
        # ignore-delete with its fallback keys, as the writer reads it (Paimon's CoreOptions)
        self.ignore_delete = options.ignore_delete
        self.remove_on_delete = options.aggregation_remove_record_on_delete
        # Paimon 1.1+ FieldAggregatorFactory.create refuses it with ignore-retract, for every column
        refuse_ignore_retract_with_remove_on_delete(options, list(self.types))
        sequence_fields = set(checked_sequence_fields(options, names))
        self.functions: dict[str, FieldFunction] = {}
        for name, dtype in schema_fields:
            if name in self.key_names:
                continue
            if name in sequence_fields:
                self.functions[name] = FieldFunction(name, "last_value", options.ignore_retract(name))
                continue
            function = options.aggregate_function(name) or "last_non_null_value"
            self.functions[name] = field_function(options, name, dtype, function)

    def merge(self, table: pa.Table, key_names: Sequence[str]) -> pa.Table:
        """One row per key of a table sorted by key and sequence (see the module docstring)."""
        if table.num_rows == 0:
            return table
        kinds = kinds_of(table)
        retract = is_retract(kinds)
        if self.ignore_delete and retract.any():
            table = table.filter(pa.array(~retract))
            if table.num_rows == 0:
                return table
            kinds = kinds_of(table)
            retract = is_retract(kinds)
        grouping = group_keys(table, key_names)
        if not self.merges_singles and all_single(grouping, table.num_rows):
            # every key has one record: emitted as it is (see keep_singles); a retraction a
            # function cannot take still fails now rather than when it meets an older record
            if retract.any():
                for fn in self.functions.values():
                    check_retractable(fn, retract & (kinds != RowKind.DELETE) if self.remove_on_delete else retract)
            return table
        starts, ends, gid, n_groups = grouping.starts, grouping.ends, grouping.gid, grouping.count
        entry_retract = retract
        if self.remove_on_delete:
            # every -D the merge takes resets the row to its image (Java's initRow), which must
            # fill the NOT NULL columns
            if has_nulls(table, self.not_null):
                check_not_null(table, (kinds == RowKind.DELETE) & folded_rows(grouping, self.merges_singles),
                               list(self.types), self.not_null, self.what,
                               "a -D record's image (aggregation.remove-record-on-delete resets the row to it)")
            # Records before a reset are dropped unfolded, yet a -U among them is still an error
            # for a function that cannot retract (Paimon applies records one by one).
            retract_events = retract & (kinds != RowKind.DELETE)
            if retract_events.any():
                for fn in self.functions.values():
                    check_retractable(fn, retract_events)
            # A -D resets the key to its whole image (Paimon 1.4.1+ initRow, PR #7645): the
            # group's last -D is folded as an insert of its image, then the records after it.
            last_delete = last_true(kinds == RowKind.DELETE, ends, starts)
            has_delete = last_delete >= 0
            lower = np.where(has_delete, last_delete, starts)
            deleted = has_delete & (last_delete == ends)
            rows = np.flatnonzero(np.arange(table.num_rows) >= lower[gid])
            entry_retract = retract & (kinds != RowKind.DELETE)
        else:
            has_delete = deleted = np.zeros(n_groups, dtype=bool)
            last_delete = np.full(n_groups, -1, dtype=np.int64)
            rows = np.arange(table.num_rows, dtype=np.int64)
        rows_gid, rows_retract = gid[rows], entry_retract[rows]
        reset = ResetImages(kinds, starts, ends, last_delete, has_delete, deleted)

        def merged(name: str, col: pa.Array) -> pa.Array | None:
            fn = self.functions.get(name)
            if fn is None:
                return None
            folded = fold(fn, col, rows, rows_retract, rows_gid, n_groups)
            return reset.apply(fn, col, folded, gid) if has_delete.any() else folded

        merged_rows = one_row_per_group(table, set(key_names) | set(self.key_names), starts, ends, deleted, merged)
        return merged_rows if self.merges_singles else keep_singles(table, grouping, merged_rows)


    def pair_columns(self, records: pa.Table) -> list[str] | None:
        """The columns whose old values `merge_pairs` reads to merge ``records`` (one per key)
        with at most one older row per key (neither a retraction), or None when some column's
        function is left to `merge` (`pair_merge.pair_function`) or a record is a retraction."""
        if is_retract(kinds_of(records)).any():
            return None
        needed = []
        for name in records.column_names:
            fn = self.functions.get(name)
            if fn is None:
                continue
            if not pair_function(fn.function, self.types[name]):
                return None
            if reads_old(fn.function, records.column(name)):
                needed.append(name)
        return needed

    def merge_pairs(self, pairs: PairInput) -> pa.Table:
        """What `merge` gives for each key's old row (if any) followed by its one record, the
        columns `pair_columns` named given in ``pairs.old`` (`lake_assets.lsm.merge_engine.pair_merge`)."""
        merged = {}
        for name in pairs.records.column_names:
            fn = self.functions.get(name)
            if fn is not None:
                merged[name] = fold_pair(name, fn.function, pairs.records.column(name).combine_chunks(),
                                         pairs.old.get(name), pairs.at)
        return merged_pairs(pairs, merged, not self.merges_singles)
