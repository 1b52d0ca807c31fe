"""The partial-update merge engine (``merge-engine = partial-update``), vectorized over Arrow tables.

Follows docs/format.md §10.1 and Paimon's documented behaviour; a key's only record comes out
unchanged (see the package docstring).

- A newer record overwrites only its non-null fields. -U/-D records raise ``InvalidDataError``
  unless ``ignore-delete`` (or a fallback key, e.g. ``partial-update.ignore-delete``) drops them,
  ``partial-update.remove-record-on-delete`` makes a -D delete the whole row, or sequence groups are
  configured. The two delete options conflict with each other, and remove-on-delete conflicts with
  sequence groups, as in Paimon (``OptionError``).
- Leading retraction (Paimon 1.4.1+ and 2.0, ``initRow``; bug fixes #5077 and #7645, no option):
  a key whose first record *in a merge* is a -U/-D starts from that record's whole image (every
  column, nulls included; 1.1-1.4.0 took its NOT NULL columns only, 0.9 nothing), whatever the
  options; the record then acts as any retraction: ``ignore-delete`` drops it (the image stays),
  remove-on-delete resets to the same image, sequence groups retract the groups its sequence sets
  from the image (an aggregate from the image's own value: a sum gives 0), leaving the groups it
  leaves unset and the ungrouped columns with its values. Merging in parts (a flush, a compaction
  level, then a read) therefore differs from merging at once wherever a part starts a key with a
  retraction - as in Java, whose merges by level we follow.
- ``ignore-delete``: every retraction but a key's leading one is dropped before merging; an ignored
  record never sets the result's sequence number, so a key of only retractions merges to a -D of
  the leading image with sequence number 0 (Java's ``latestSequenceNumber`` reset), which a later
  merge sorts first. A key's only record (counting the dropped ones) is emitted as it is.
- remove-on-delete: a -D resets the row to its own image (Paimon 1.4.1+ and 2.0; 1.0 reset to an
  empty row, 1.1-1.4.0 to its NOT NULL columns); later inserts overwrite the image's non-null
  fields, a later -U changes no field. The result is -D when the key's last record is a -D or it
  saw no insert at all, else +I: as in Paimon 1.1+, a -U after a -D flips the row back to a +I of
  the -D's image when an insert came before.
- ``fields.<s1>[,<s2>].sequence-group = <a>,<b>``: a record whose group sequence is all-null leaves
  the group alone. A record whose sequence tuple (nulls smallest) is not older than the group's
  current one wins the group: an insert sets every column of the group (nulls included), a retract
  nulls them. Retracts compare with ``>=`` like inserts (as Paimon's code does), so a -D carrying
  the current sequence deletes the group. The group's sequence columns keep the largest sequence.
- ``partial-update.remove-record-on-sequence-group = <seq>[,<seq>]`` (Paimon 1.0+; sequence fields
  of groups): a -D whose sequence in a named group is set and not older than the group's removes
  the record: the row becomes the -D's image (as Paimon HEAD's ``initRow``), the result is -D
  unless later records follow, and those merge on top of the image (`group_delete`). Conflicts
  with ``ignore-delete``.
- Aggregate functions are allowed on grouped columns only (Paimon rejects any other function than
  last_non_null_value outside a group). Inside a group they fold the group's records in
  group-sequence order, ties in arrival order. That equals Paimon for plain columns, last_value and
  the order-free functions (sum, product, min, max, bool_*), and for every function when group
  sequences arrive in non-decreasing order; Paimon releases disagree among themselves about
  out-of-order first_value/last_non_null_value/listagg, so we keep the plain definition.
- Result kind: +I when the key saw an insert; -D when it saw only retracts (Paimon: "no insert
  seen") or its last record removed it. A -D row carries what Java's row holds then (the leading
  image, retracted), so merging it again later gives what Java's merge of it gives.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.errors import InvalidDataError, OptionError
from lake_assets.formats.data_file import SEQUENCE_NUMBER
from lake_assets.lsm.merge import is_retract, kinds_of
from lake_assets.lsm.merge_engine.aggregate_functions import FieldFunction, fold
from lake_assets.lsm.merge_engine.engine_options import (
    check_aggregate_options,
    checked_sequence_fields,
    checked_sequence_groups,
    field_function,
    refuse_ignore_retract_with_remove_on_delete,
)
from lake_assets.lsm.merge_engine.function import SchemaFields
from lake_assets.lsm.merge_engine.group_delete import last_resets
from lake_assets.lsm.merge_engine.grouping import (
    Grouping,
    all_single,
    columns_of,
    group_keys,
    group_seq_max,
    keep_singles,
    last_true,
    one_row_per_group,
    segment_bounds,
    sequence_rank,
    take_or_null,
    valid_mask,
)
from lake_assets.lsm.merge_engine.not_null import check_not_null, check_partial_update, folded_rows, has_nulls
from lake_assets.lsm.merge_engine.pair_merge import PairInput, merged_pairs, newest_non_null
from lake_assets.options import CoreOptions
from lake_assets.spec.row_kind import RowKind


class PartialUpdate:
    """The partial-update merge engine (see the module docstring for the exact semantics)."""

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
        names = [name for name, _ in schema_fields]
        for k in self.key_names:
            if k not in self.types:
                raise OptionError(f"Primary-key column {k!r} is not a table column")
        check_aggregate_options(options, set(names))
        # ignore-delete with its fallback keys, as the writer reads it (Paimon's CoreOptions)
        self.ignore_delete = options.ignore_delete
        self.remove_on_delete = options.partial_update_remove_record_on_delete
        self.groups = checked_sequence_groups(options, names, self.key_names)
        if self.ignore_delete and self.remove_on_delete:
            raise OptionError(
                "Options 'ignore-delete' and 'partial-update.remove-record-on-delete' conflict; set only one"
            )
        self.delete_groups = self._delete_groups(options)
        if self.remove_on_delete and self.groups:
            raise OptionError(
                "Sequence groups and 'partial-update.remove-record-on-delete' conflict; set only one"
            )
        seq_fields = {f for g in self.groups for f in g.sequence_fields}
        seq_fields |= set(checked_sequence_fields(options, set(names)))
        grouped = {m for g in self.groups for m in g.members}
        self.functions: dict[str, FieldFunction] = {}
        for name, dtype in schema_fields:
            if name in self.key_names or name in seq_fields:
                continue  # Paimon aggregates neither keys nor sequence fields
            function = options.aggregate_function(name)
            if function is None:
                if name in grouped:
                    self.functions[name] = FieldFunction(name, "last_value")
                continue
            fn = field_function(options, name, dtype, function)
            if name not in grouped:
                if fn.function != "last_non_null_value":
                    raise OptionError(
                        f"Aggregate function {fn.function!r} of column {name!r} needs a sequence group: "
                        "partial-update allows aggregation only on columns of a "
                        "'fields.<seq>.sequence-group' (except last_non_null_value)"
                    )
                continue  # last_non_null_value is what partial-update does anyway
            self.functions[name] = fn
        # the columns Paimon builds a FieldAggregator for: keys (its primary-key aggregator) and
        # those with an aggregate function (HEAD's PartialUpdateMergeFunction.getAggFuncName)
        aggregated = [n for n in names if n in self.key_names or (
            n not in seq_fields and options.aggregate_function(n) is not None)]
        refuse_ignore_retract_with_remove_on_delete(options, aggregated)

    def pair_columns(self, records: pa.Table) -> list[str] | None:
        """The columns whose old values `merge_pairs` reads to merge ``records`` (one per key)
        with at most one older row per key (neither a retraction): the value columns holding a
        null; None with sequence groups or a retraction among the records (left to `merge`)."""
        if self.groups or is_retract(kinds_of(records)).any():
            return None
        keys = set(self.key_names)
        return [name for name in records.column_names
                if name in self.types and name not in keys and records.column(name).null_count]

    def merge_pairs(self, pairs: PairInput) -> pa.Table:
        """What `merge` gives for each key's old row (if any) followed by its one record: each
        value column the record's where not null, else the old row's
        (`lake_assets.lsm.merge_engine.pair_merge`)."""
        merged = {name: newest_non_null(pairs.records.column(name).combine_chunks(), old, pairs.at)
                  for name, old in pairs.old.items()}
        return merged_pairs(pairs, merged, not self.merges_singles)

    def _delete_groups(self, options: CoreOptions) -> tuple[int, ...]:
        """Indexes into ``self.groups`` of the groups whose -D removes the whole record
        (``partial-update.remove-record-on-sequence-group`` names their sequence fields)."""
        key = "partial-update.remove-record-on-sequence-group"
        raw = options.raw.get(key)
        if raw is None:
            return ()
        if self.ignore_delete:
            raise OptionError(f"Options 'ignore-delete' and {key!r} conflict; set only one")
        fields = [f.strip() for f in str(raw).split(",")]
        owner = {f: i for i, g in enumerate(self.groups) for f in g.sequence_fields}
        if not fields or any(f not in owner for f in fields):
            # Paimon's message: every name must be a sequence field of a sequence group
            raise OptionError(f"Field '{raw}' defined in {key!r} option must be part of sequence groups "
                              "(each must be a sequence field of a 'fields.<seq>.sequence-group')")
        return tuple(sorted({owner[f] for f in fields}))

    def merge(self, table: pa.Table, key_names: Sequence[str]) -> pa.Table:
        """One row per key of a table sorted by key and sequence (see the module docstring)."""
        if table.num_rows == 0:
            return table
        kinds = kinds_of(table)
        retract = is_retract(kinds)
        raw, raw_grouping, grouping = table, None, None
        if retract.any():
            if self.ignore_delete:
                # ignored, but a key's first record still starts its row from its image (Paimon
                # 1.4.1+ runs initRow before it checks ignore-delete): keep each key's first record
                raw_grouping = group_keys(table, key_names)
                keep = ~retract
                keep[raw_grouping.starts] = True
                table = table.filter(pa.array(keep))
                grouping = _kept_grouping(raw_grouping, keep)
            elif not self.remove_on_delete and not self.groups:
                raise InvalidDataError(
                    "The partial-update merge engine got a -U/-D record, which it cannot apply by "
                    "default: set 'ignore-delete' = 'true' (or 'partial-update.ignore-delete') to drop "
                    "them, 'partial-update.remove-record-on-delete' = 'true' to delete the whole row on "
                    "-D, or configure 'fields.<seq>.sequence-group' to retract groups of columns"
                )
            kinds = kinds_of(table)
            retract = is_retract(kinds)
        if grouping is None:
            grouping = group_keys(table, key_names)
        if raw_grouping is None:
            raw, raw_grouping = table, grouping
        if not self.groups and not self.merges_singles and all_single(raw_grouping, raw.num_rows):
            return raw  # every key has one record: emitted as it is (see keep_singles)
        if has_nulls(table, self.not_null):
            check_partial_update(self, table, folded_rows(raw_grouping, self.merges_singles, grouping.gid),
                                 grouping, kinds, retract)
        if self.groups:
            # merged even when every key has one record: a retraction a grouped function cannot
            # take fails now rather than when it meets an older record
            merged = self._merge_groups(table, key_names, grouping, retract, kinds)
        else:
            merged = self._merge_plain(table, key_names, grouping, kinds)
        if self.ignore_delete and retract.any():
            merged = _sequence_of_inserts(merged, table, grouping, retract)
        # a key's only record is emitted as it is: only in the raw input (Java's reducer wrapper
        # sees the ignored retractions too)
        return merged if self.merges_singles else keep_singles(raw, raw_grouping, merged)

    def _merge_plain(
        self, table: pa.Table, key_names: Sequence[str], grouping: Grouping, kinds: np.ndarray
    ) -> pa.Table:
        # Only remove-record-on-delete and ignore-delete (a key's leading retraction, the others
        # dropped) get here with retractions (Paimon HEAD's add): a key's first record, if a -U/-D,
        # starts the row from its whole image (initRow, Paimon 1.4.1+ and 2.0; 1.1-1.4.0 took its
        # NOT NULL columns only), and each -D restarts the row from its image; a -U changes no
        # field. The inserts after the last restart overwrite its non-null fields. The result is
        # -D when the key's last record is a -D, or when it saw no insert at all; else +I - so a -U
        # after a -D flips the row back to +I if an insert came before.
        starts, ends = grouping.starts, grouping.ends
        insert = ~is_retract(kinds)
        keys = set(key_names) | set(self.key_names)
        if insert.all():
            # no retraction (an upsert's usual input): no reset and no image, every key an insert;
            # a column without nulls is its key's last record's (what `one_row_per_group` takes
            # for None), as the general path below finds it at a cost of numpy passes per column
            def newest(name: str, col: pa.Array) -> pa.Array | None:
                if name not in self.types or not col.null_count:
                    return None
                return take_or_null(col, last_true(valid_mask(col), ends, starts))

            return one_row_per_group(table, keys, starts, ends, np.zeros(starts.size, dtype=bool), newest)
        reset = kinds == RowKind.DELETE
        reset[starts] |= ~insert[starts]
        last_reset = last_true(reset, ends, starts)
        lower = np.maximum(starts, last_reset)
        deleted = (kinds[ends] == RowKind.DELETE) | (last_true(insert, ends, starts) < 0)
        image = np.zeros(table.num_rows, dtype=bool)
        image[last_reset[last_reset >= 0]] = True

        def merged(name: str, col: pa.Array) -> pa.Array | None:
            # the last non-null value of an insert after the last reset, else the reset's own
            # (null or not)
            if name not in self.types:
                return None
            return take_or_null(col, last_true((valid_mask(col) & insert) | image, ends, lower))

        return one_row_per_group(table, keys, starts, ends, deleted, merged)

    def _merge_groups(
        self, table: pa.Table, key_names: Sequence[str], grouping: Grouping, retract: np.ndarray, kinds: np.ndarray
    ) -> pa.Table:
        starts, ends, gid, n_groups = grouping.starts, grouping.ends, grouping.gid, grouping.count
        cols = columns_of(table)
        insert = ~retract
        has_insert = last_true(insert, ends, starts) >= 0
        # Each key's *origin*, the row whose whole image starts it (Paimon 1.4.1+ initRow): the last
        # remove-record-on-sequence-group reset (records before it are gone, see group_delete),
        # else its first record if that is a retraction, else none (the row starts empty).
        resets = np.zeros(table.num_rows, dtype=bool)  # every reset's image is copied (initRow)
        reset = self._resets(cols, grouping, kinds, resets)
        if resets.any() and has_nulls(table, self.not_null):
            check_not_null(table, resets & folded_rows(grouping, self.merges_singles), list(self.types),
                           self.not_null, self.what,
                           "a -D record's image (partial-update.remove-record-on-sequence-group resets the row to it)")
        leading = np.where(retract[starts] & (reset < 0), starts, -1)
        origin = np.maximum(reset, leading)
        live = image = None  # no origin: every row counts, none is an image (the common case, no extra work)
        if (origin >= 0).any():
            pos, origin_row = np.arange(table.num_rows, dtype=np.int64), origin[gid]
            live, image = pos >= origin_row, pos == origin_row
        # A leading retraction (not a reset) retracts its groups from its own image right after
        # (ignore-delete: it only gives the image); a reset's image is all that is left of it.
        lead_retracts = leading[leading >= 0] if not self.ignore_delete else np.zeros(0, dtype=np.int64)
        results: dict[str, pa.Array] = {}
        for group in self.groups:
            missing = [f for f in group.sequence_fields if f not in cols]
            present = [m for m in group.members if m in cols]
            if missing:
                if present:
                    raise InvalidDataError(
                        f"Columns {present} need their sequence fields {list(group.sequence_fields)} to merge"
                    )
                continue
            seq_cols = [cols[f] for f in group.sequence_fields]
            unset = _unset(seq_cols)
            # an origin's image sets every group, even one its sequence leaves unset
            entries = np.flatnonzero(~unset if live is None else (~unset & live) | image)
            as_retract = retract[entries] if image is None else retract[entries] & ~image[entries]
            again = lead_retracts[~unset[lead_retracts]]  # the image's own retraction: a second entry
            entries = np.concatenate((entries, again))
            as_retract = np.concatenate((as_retract, np.ones(len(again), dtype=bool)))
            second = np.concatenate((np.zeros(len(entries) - len(again), dtype=bool), np.ones(len(again), dtype=bool)))
            # Group-sequence order, ties in arrival order, an image before its own retraction.
            rank = sequence_rank(seq_cols)
            order = np.lexsort((second, entries, rank[entries], gid[entries]))
            rows, rows_retract = entries[order], as_retract[order]
            rows_gid = gid[rows]
            _, last = segment_bounds(rows_gid)
            seq_idx = np.full(n_groups, -1, dtype=np.int64)
            seq_idx[rows_gid[last]] = rows[last]
            for f in group.sequence_fields:
                results[f] = take_or_null(cols[f], seq_idx)
            for m in present:
                fn = self.functions.get(m) or FieldFunction(m, "last_value")
                results[m] = fold(fn, cols[m], rows, rows_retract, rows_gid, n_groups)
                if fn.function == "listagg" and image is not None:
                    # the fold skips a blank image, Java's initRow keeps it until a non-blank value
                    # comes (Paimon 2.0+ #8480: agg(" ", v) = v), as `aggregate_reset` does
                    kept = pc.and_(pa.array(origin >= 0), results[m].is_null())
                    results[m] = pc.if_else(kept, take_or_null(cols[m], origin), results[m])

        def merged(name: str, col: pa.Array) -> pa.Array | None:
            if name in results:
                return results[name]
            if name in self.types:
                # Ungrouped columns: last non-null value of an insert (or of the origin's image);
                # retracts never touch them.
                counted = insert if live is None else (insert & live) | image
                return take_or_null(col, last_true(valid_mask(col) & counted, ends, starts))
            return None

        keys = (set(key_names) | set(self.key_names)) - set(results)
        # -D when the key saw no insert, or when its last record reset it
        return one_row_per_group(table, keys, starts, ends, ~has_insert | (reset == ends), merged)

    def _resets(
        self, cols: dict[str, pa.Array], grouping: Grouping, kinds: np.ndarray, every: np.ndarray
    ) -> np.ndarray:
        """Per key group, the row of its last remove-record-on-sequence-group reset, else -1;
        ``every`` gets each reset row set."""
        none = np.full(grouping.count, -1, dtype=np.int64)
        is_delete = kinds == RowKind.DELETE
        if not self.delete_groups or not is_delete.any():
            return none
        ranks = []
        for i in self.delete_groups:
            fields = self.groups[i].sequence_fields
            if any(f not in cols for f in fields):
                return none  # a read without the group's sequence cannot see its deletes (as Paimon)
            seq_cols = [cols[f] for f in fields]
            ranks.append(np.where(_unset(seq_cols), -1, sequence_rank(seq_cols)))
        return last_resets(is_delete, ranks, grouping, every)


def _unset(seq_cols: Sequence[pa.Array]) -> np.ndarray:
    """Rows whose group sequence is all null: they leave the group alone."""
    empty = np.ones(len(seq_cols[0]), dtype=bool)
    for c in seq_cols:
        empty &= ~valid_mask(c)
    return empty



def _kept_grouping(raw: Grouping, keep: np.ndarray) -> Grouping:
    """The key groups of the rows ``keep`` selects: every key keeps its first row, so they are the
    raw key groups, in the same order, at the kept rows' new positions."""
    position = np.cumsum(keep, dtype=np.int64) - 1
    starts = position[raw.starts]
    ends = np.empty_like(starts)
    if len(starts):
        ends[:-1] = starts[1:] - 1
        ends[-1] = position[-1]
    return Grouping(raw.gid[keep], starts, ends)


def _sequence_of_inserts(merged: pa.Table, table: pa.Table, grouping: Grouping, retract: np.ndarray) -> pa.Table:
    """``merged`` with each key's sequence number taken from its inserts only, 0 when it has none:
    an ignored retraction never sets Paimon's ``latestSequenceNumber`` (reset to 0 per key), so a
    key of only ignored retractions merges to a -D of sequence 0 - which a later merge sorts first."""
    if SEQUENCE_NUMBER not in merged.column_names:
        return merged
    seq = np.where(retract, 0, table.column(SEQUENCE_NUMBER).to_numpy())
    index = merged.schema.get_field_index(SEQUENCE_NUMBER)
    return merged.set_column(index, merged.schema.field(index), group_seq_max(seq, grouping.starts))
