"""Merging the records of a bucket: key groups, the merge sort order, sort-and-merge, and the
sort-free winner search of row-selecting engines, vectorized over Arrow tables.

The merge functions themselves - one per merge engine - and their contract live in
`lake_assets.lsm.merge_engine`: a function takes a table sorted by key and then by sequence
(oldest first) that holds the value columns plus ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND``, and
returns one row per key, still sorted by key. Retract rows (-U/-D) survive the merge so that,
written to a file, they can cancel rows in older files; readers drop them at the end.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeGuard

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.formats.data_file import SEQUENCE_NUMBER, VALUE_KIND
from lake_assets.lsm.key_compare import float_order_codes, key_view
from lake_assets.lsm.lookup_merge import LEVEL, select_lookup_records
from lake_assets.lsm.merge_engine.function import MergeFunction, RowSelectingMerge, RowSelectingMergeFunction
from lake_assets.lsm.radix_sort import radix_applies, radix_order
from lake_assets.spec.row_kind import RowKind

# Plain ints: numpy compares an array with an IntEnum member through the enum's slower path.
_UPDATE_BEFORE = int(RowKind.UPDATE_BEFORE)
_DELETE = int(RowKind.DELETE)


def _selects_rows(merge_function: MergeFunction) -> TypeGuard[RowSelectingMergeFunction]:
    """Whether ``merge_function`` is a `RowSelectingMergeFunction`.

    The built-in engines derive from the `RowSelectingMerge` base class, which an ordinary
    ``isinstance`` answers at once; only other functions take the structural check of the
    runtime-checkable protocol, which looks up every member of the protocol on each call.
    """
    return isinstance(merge_function, (RowSelectingMerge, RowSelectingMergeFunction))  # checked in this order


def key_change_mask(table: pa.Table, key_names: Sequence[str]) -> np.ndarray:
    """Boolean array, True at row i when row i starts a new key (row 0 always does)."""
    n = table.num_rows
    starts = np.zeros(n, dtype=bool)
    if n == 0:
        return starts
    starts[0] = True
    if n == 1:
        return starts
    if len(key_names) == 1:
        keys = _int_values(table.column(key_names[0]))
        if keys is not None:
            # one integer key without nulls (most tables): numpy compares the values in place,
            # a fifth of the kernels' cost on a 25K-row file (a slice pair, a compare, a fill)
            np.not_equal(keys[1:], keys[:-1], out=starts[1:])
            return starts
    diff = np.zeros(n - 1, dtype=bool)
    table = key_view(table.select(list(key_names)), key_names)  # NaN = NaN, -0.0 != 0.0, as Java
    for name in key_names:
        col = table.column(name)
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks()
        ne = pc.not_equal(col.slice(1), col.slice(0, n - 1))
        # Keys are never null, but a null compare result would be unknown: treat as a change.
        diff |= ne.fill_null(True).to_numpy(zero_copy_only=False)
    starts[1:] = diff
    return starts


def _int_values(col: pa.ChunkedArray | pa.Array) -> np.ndarray | None:
    """The values of a null-free integer column in one chunk as numpy (no copy), else None."""
    if not pa.types.is_integer(col.type) or col.null_count:
        return None
    if isinstance(col, pa.ChunkedArray):
        if col.num_chunks != 1:
            return None
        col = col.chunk(0)
    values: np.ndarray = col.to_numpy(zero_copy_only=True)
    return values


def group_bounds(table: pa.Table, key_names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(first row index, last row index) of each key group in a key-sorted table."""
    starts = np.flatnonzero(key_change_mask(table, key_names))
    ends = np.empty_like(starts)
    if len(starts):
        ends[:-1] = starts[1:] - 1
        ends[-1] = table.num_rows - 1
    return starts, ends


def sort_for_merge(
    table: pa.Table,
    key_names: Sequence[str],
    sequence_fields: Sequence[str] = (),
    sequence_descending: bool = False,
) -> pa.Table:
    """Sort by key, then user sequence fields, then ``_SEQUENCE_NUMBER`` (oldest first)."""
    seq_order = "descending" if sequence_descending else "ascending"
    # User sequence fields may be null: a null is the oldest in either order (Paimon's generated
    # comparator returns "smaller" for a null before it applies the descending sign).
    sort_keys = [(k, "ascending", "at_start") for k in key_names]
    sort_keys += [(f, seq_order, "at_start") for f in sequence_fields]
    sort_keys.append((SEQUENCE_NUMBER, "ascending", "at_start"))
    # Float sequence fields order as Paimon's generated comparator orders them (Double.compare),
    # like float keys: key_view turns both into order codes.
    idx = pc.sort_indices(key_view(table, [*key_names, *sequence_fields]), sort_keys=sort_keys)
    return table.take(idx)


def sort_order(
    table: pa.Table,
    key_names: Sequence[str],
    sequence_fields: Sequence[str] = (),
    sequence_descending: bool = False,
    prefix: Sequence[str] = (),
) -> np.ndarray:
    """Row order by (prefix, key, user sequence, ``_SEQUENCE_NUMBER``) without moving any data."""
    fast = _single_int_key_order(table, key_names, sequence_fields, prefix)
    if fast is not None:
        return fast
    seq_order = "descending" if sequence_descending else "ascending"
    sort_keys = [(k, "ascending", "at_start") for k in (*prefix, *key_names)]
    sort_keys += [(f, seq_order, "at_start") for f in sequence_fields]  # nulls oldest, as sort_for_merge
    sort_keys.append((SEQUENCE_NUMBER, "ascending", "at_start"))
    cols = list(dict.fromkeys([*prefix, *key_names, *sequence_fields, SEQUENCE_NUMBER]))
    view = key_view(table.select(cols), [*key_names, *sequence_fields])  # Double.compare, as in sort_for_merge
    order: np.ndarray = pc.sort_indices(view, sort_keys=sort_keys).to_numpy()
    return order


def _single_int_key_order(
    table: pa.Table, key_names: Sequence[str], sequence_fields: Sequence[str], prefix: Sequence[str]
) -> np.ndarray | None:
    """Fast path for the common single integer key, with numpy's SIMD sort on one int64 array.

    Unique keys sort alone; otherwise key and sequence number are packed into one integer when
    their ranges fit in 63 bits (so the unstable sort still orders a key's versions by sequence).
    """
    if len(key_names) != 1 or sequence_fields or len(prefix) > 1:
        return None
    col = table.column(key_names[0])
    if not pa.types.is_integer(col.type) or col.null_count:
        return None
    keys = col.to_numpy().astype(np.int64, copy=False)
    if not prefix and bool(np.all(keys[1:] > keys[:-1])):
        # already in key order with unique keys (sorted sources, upserts of sorted keys): one
        # linear check instead of a sort, and callers can keep the rows where they are
        return np.arange(len(keys), dtype=np.int64)
    order, sorted_keys = _int_key_sort(keys)
    if len(keys) > 1 and bool(np.any(sorted_keys[1:] == sorted_keys[:-1])):
        seq = table.column(SEQUENCE_NUMBER).to_numpy()
        k_lo, k_hi = int(sorted_keys[0]), int(sorted_keys[-1])
        s_lo, s_hi = int(seq.min()), int(seq.max())
        k_bits = max(1, (k_hi - k_lo).bit_length())
        s_bits = max(1, (s_hi - s_lo).bit_length())
        if k_bits + s_bits > 63:
            return None  # does not pack: the general multi-column sort handles it
        packed = ((keys - k_lo).astype(np.uint64) << np.uint64(s_bits)) | (seq - s_lo).astype(np.uint64)
        # equal (key, sequence): input order wins, as the general sort (both orders are stable)
        bits = k_bits + s_bits
        order = radix_order(packed, bits) if radix_applies(len(packed), bits) else np.argsort(packed, kind="stable")
    if prefix:
        groups = table.column(prefix[0]).to_numpy()[order]
        order = order[np.argsort(groups, kind="stable")]
    return order


def _int_key_sort(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(order, keys[order]) of int64 ``keys``; ties in no particular order.

    When the key range and the row numbers fit one uint64 together (nearly always: a bucket's
    keys rarely span more than 2**40), each key is packed above its row number and the packed
    values sorted by value, which numpy's SIMD sort does in about 0.8x the time of an argsort;
    the row numbers come back out of the low bits."""
    n = len(keys)
    if n > 1:
        lo, hi = int(keys.min()), int(keys.max())
        key_bits = (hi - lo).bit_length()
        if radix_applies(n, key_bits):  # linear passes over 16-bit digits (lsm/radix_sort.py)
            order = radix_order((keys - np.int64(lo)).astype(np.uint64), key_bits)
            return order, keys[order]
        row_bits = (n - 1).bit_length()
        if key_bits + row_bits <= 64:
            packed = (keys - np.int64(lo)).astype(np.uint64) << np.uint64(row_bits)
            packed |= np.arange(n, dtype=np.uint64)
            packed.sort()
            order = (packed & np.uint64((1 << row_bits) - 1)).astype(np.int64)
            sorted_keys = (packed >> np.uint64(row_bits)).astype(np.int64) + np.int64(lo)
            return order, sorted_keys
    order = np.argsort(keys)
    return order, keys[order]


def sort_and_merge(
    table: pa.Table,
    key_names: Sequence[str],
    merge_function: MergeFunction,
    sequence_fields: Sequence[str] = (),
    sequence_descending: bool = False,
    *,
    presorted: bool = False,
) -> pa.Table:
    """Sort and merge in one pass; row-selecting engines move the wide columns only once.

    Row-selecting functions (deduplicate, first-row) pick whole rows, so the winners are found on
    the key columns and only the winning rows of the full table are gathered. Other engines get
    the sorted table.

    A table with the `lookup_merge.LEVEL` column (inputs of a table that merges by lookup) first
    loses the records Paimon's ``LookupMergeFunction`` skips: all but each key's newest one above
    level 0. Row-selecting engines skip that step: deduplicate picks a key's last record in merge
    order, which Java 0.9's pick (the last above level 0, plus level 0) always keeps, and HEAD's
    (the lowest level's) too wherever shallower levels hold newer rows; first-row is never wrapped.
    The output has no `LEVEL` column.
    """
    if LEVEL in table.column_names and _selects_rows(merge_function):
        table = table.drop_columns([LEVEL])
    elif LEVEL in table.column_names:
        order = None if presorted else sort_order(table, key_names, sequence_fields, sequence_descending)
        ordered = table if order is None else table.take(pa.array(order))
        starts, _ = group_bounds(ordered.select(list(key_names)), key_names)
        table = select_lookup_records(ordered, starts)
        presorted = True
    if not _selects_rows(merge_function):
        if not presorted:
            table = sort_for_merge(table, key_names, sequence_fields, sequence_descending)
        return merge_function.merge(table, key_names)
    order = None if presorted else sort_order(table, key_names, sequence_fields, sequence_descending)
    narrow = table.select([*key_names, VALUE_KIND])
    if order is not None:
        narrow = narrow.take(pa.array(order))
    picked = merge_function.select_rows(narrow, key_names)
    if picked is None:  # every row survives in this order
        return table if order is None else table.take(pa.array(order))
    rows = picked if order is None else order[picked]
    return table.take(pa.array(rows))


def is_retract(kinds: np.ndarray) -> np.ndarray:
    """True where a ``_VALUE_KIND`` is a retraction (-U or -D)."""
    retract: np.ndarray = (kinds == _UPDATE_BEFORE) | (kinds == _DELETE)
    return retract


def kinds_of(table: pa.Table) -> np.ndarray:
    """The ``_VALUE_KIND`` column of a merge input as a numpy array."""
    kinds: np.ndarray = table.column(VALUE_KIND).to_numpy()
    return kinds


# ------------------------------------------------------------------ row-selecting merge without a sort
# of the data. Readers only need to know which rows win; they do not need them in key order. Every
# key column is turned into a small non-negative integer (integers shifted by their minimum, other
# types dictionary-coded), the codes and the sequence number are packed into one uint64, and one
# numpy argsort of that narrow array finds each key's winner. The wide columns are then filtered
# run by run (a sequential copy, zero-copy when a run loses nothing) instead of being gathered
# with a random-access take.

_MAX_PACKED_BITS = 63


def _key_codes(runs: Sequence[pa.Table], name: str) -> tuple[np.ndarray, int] | None:
    """Non-negative int64 codes of one key column over all runs (equal values, equal codes), and
    the bits the codes need; None when the column cannot be coded (nulls, unsupported type)."""
    chunks = [c for run in runs for c in run.column(name).chunks]
    typ = runs[0].schema.field(name).type
    if any(c.null_count for c in chunks):
        return None
    if pa.types.is_integer(typ):
        values = np.concatenate([c.to_numpy() for c in chunks]) if chunks else np.zeros(0, np.int64)
        if values.size == 0:
            return values.astype(np.int64), 0
        lo, hi = int(values.min()), int(values.max())
        if hi - lo >= 2**62:
            return None
        # uint64 shifts before narrowing: values above 2**63 do not fit int64.
        codes = (values - np.uint64(lo)).astype(np.int64) if values.dtype == np.uint64 else values.astype(np.int64) - lo
        return codes, (hi - lo).bit_length()
    if pa.types.is_floating(typ):  # code Java's float equality (NaN = NaN, -0.0 != 0.0), not IEEE's
        chunks, typ = [float_order_codes(c) for c in chunks], pa.uint64()
    try:
        coded = pa.chunked_array(chunks, type=typ).combine_chunks().dictionary_encode()
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    return coded.indices.to_numpy().astype(np.int64), max(0, len(coded.dictionary) - 1).bit_length()


def _numpy_column(runs: Sequence[pa.Table], name: str, dtype: type) -> np.ndarray:
    parts = [run.column(name).to_numpy() for run in runs]
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)


def winner_masks(
    runs: Sequence[pa.Table],
    key_names: Sequence[str],
    merge_function: MergeFunction,
    sequence_fields: Sequence[str] = (),
    *,
    drop_retract: bool = True,
) -> list[np.ndarray | None] | None:
    """Which rows of ``runs`` survive a deduplicate / first-row merge, without sorting the data.

    ``runs`` hold the key columns, ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND``, in any row order. The
    result is the same row set as `sort_and_merge` over ``pa.concat_tables(runs)`` - including its
    tie-break, a later row wins a sequence-number tie - with retract winners removed when
    ``drop_retract`` (what readers do). One boolean mask per run (None: every row of the run
    survives). Returns None when the fast path does not apply: other engines, user sequence
    fields, or keys plus sequence numbers that do not pack into 63 bits; callers then fall back to
    `sort_and_merge`.
    """
    if sequence_fields or not _selects_rows(merge_function):
        return None
    sizes = [run.num_rows for run in runs]
    total = sum(sizes)
    if total == 0:
        return [None] * len(runs)
    packed = np.zeros(total, dtype=np.int64)
    bits = 0
    for name in key_names:
        coded = _key_codes(runs, name)
        if coded is None:
            return None
        codes, width = coded
        bits += width
        if bits > _MAX_PACKED_BITS:
            return None
        packed = (packed << width) | codes
    seq = _numpy_column(runs, SEQUENCE_NUMBER, np.int64)
    s_lo = int(seq.min())
    s_bits = (int(seq.max()) - s_lo).bit_length()
    if bits + s_bits > _MAX_PACKED_BITS:
        return None
    packed = (packed << s_bits) | (seq - s_lo)
    retract = is_retract(_numpy_column(runs, VALUE_KIND, np.int8))
    ignore_delete = merge_function.ignore_delete
    first = merge_function.keeps_first
    candidates: np.ndarray | None = None
    if retract.any():
        merge_function.check_retracts(retract)
        if ignore_delete:  # retracts never take part: an older version of the key still wins
            candidates = np.flatnonzero(~retract)
            packed = packed[candidates]
    # A stable sort keeps concatenation order among equal (key, sequence) pairs, as the
    # stable multi-column sort of `sort_and_merge` does. Runs are usually key-sorted already,
    # and numpy's stable sort (timsort/radix) is fast on such presorted stretches.
    order = np.argsort(packed, kind="stable")
    keys_sorted = packed[order] >> s_bits
    n = len(order)
    if n == 0:
        winners = order
    else:
        change = np.empty(n, dtype=bool)
        if first:
            change[0] = True
            np.not_equal(keys_sorted[1:], keys_sorted[:-1], out=change[1:])
        else:
            change[-1] = True
            np.not_equal(keys_sorted[:-1], keys_sorted[1:], out=change[:-1])
        winners = order[change]
    if candidates is not None:
        winners = candidates[winners]
    keep = np.zeros(total, dtype=bool)
    keep[winners] = True
    if drop_retract:
        keep &= ~retract
    masks: list[np.ndarray | None] = []
    offset = 0
    for size in sizes:
        m = keep[offset:offset + size]
        masks.append(None if m.all() else m)
        offset += size
    return masks
