"""Routing of written rows to their (partition, bucket) groups, each group in merge order.

One batch of input becomes one slice per group, rows sorted by (key, arrival) for primary-key
tables and in arrival order for append tables, so that a bucket's slice can be flushed without
another sort. The cost is what decides the write path's speed (it runs before any file is
written), so every step is O(rows) or one sort over a single integer array:

- partitions: a hash dictionary-encode per partition column (pyarrow), never a sort of all rows;
- the order: one stable sort of a single int64 that packs (group, key) when the table has one
  integer key (the common case), else pyarrow's multi-column sort with the group as first key;
- the gather: one ``take`` per group on a thread pool (pyarrow releases the GIL); partition
  columns are not gathered at all but rebuilt as the group's constant value.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.formats.data_file import SEQUENCE_NUMBER, VALUE_KIND
from lake_assets.lsm.bucket import assign_buckets
from lake_assets.lsm.merge import sort_order
from lake_assets.spec.types import DataType

# Below this many rows a batch is gathered on the calling thread: a pool costs more than it saves.
PARALLEL_GATHER_ROWS = 64 * 1024
_GROUP_COLUMN = "__group"


@dataclass(frozen=True)
class RouteSpec:
    """What routing needs to know of a table (fixed for a writer)."""

    partition_keys: tuple[str, ...]
    bucket_keys: tuple[str, ...]
    bucket_types: tuple[DataType, ...]
    num_buckets: int  # 1 for append tables (bucket-unaware: every row in bucket 0)
    primary_keys: tuple[str, ...]  # trimmed primary key; empty for append tables
    sequence_fields: tuple[str, ...] = ()
    sequence_descending: bool = False


@dataclass(frozen=True)
class RoutedGroup:
    """The rows of one batch that go to one (partition, bucket), in merge order, with
    ``_VALUE_KIND`` appended (sequence numbers are the buffer's to give)."""

    partition: tuple
    bucket: int
    rows: pa.Table


def partition_groups(data: pa.Table, keys: Sequence[str]) -> tuple[np.ndarray, list[tuple]]:
    """Group id per row (int64) and the distinct partition value tuples, in first-seen order.

    Hash-based: one dictionary-encode per partition column, and for several columns one more
    over the combined codes, so the cost is linear in the rows whatever the partition count.
    """
    n = data.num_rows
    if not keys:
        return np.zeros(n, dtype=np.int64), [()]
    dictionaries: list[list] = []
    codes: list[np.ndarray] = []
    for k in keys:
        enc = pc.dictionary_encode(data.column(k), null_encoding="encode").combine_chunks()
        dictionaries.append(enc.dictionary.to_pylist())
        codes.append(enc.indices.to_numpy(zero_copy_only=False).astype(np.int64, copy=False))
    if len(keys) == 1:
        return codes[0], [(v,) for v in dictionaries[0]]
    combined = np.zeros(n, dtype=np.int64)
    for d, c in zip(dictionaries, codes, strict=True):
        combined = combined * len(d) + c  # mixed radix: exact while the product of sizes fits
    enc = pc.dictionary_encode(pa.array(combined)).combine_chunks()
    distinct = enc.dictionary.to_numpy()
    values: list[tuple] = []
    for code in distinct.tolist():
        digits = []
        for d in reversed(dictionaries):
            code, i = divmod(code, len(d))
            digits.append(d[i])
        values.append(tuple(reversed(digits)))
    return enc.indices.to_numpy(zero_copy_only=False).astype(np.int64, copy=False), values


def _packed_key_order(data: pa.Table, key: str, group: np.ndarray, groups: int) -> np.ndarray | None:
    """Rows ordered by (group, key, arrival) with one stable sort of a packed int64, when the
    table has a single non-null integer key whose range fits beside the group bits."""
    col = data.column(key)
    if not pa.types.is_integer(col.type) or col.null_count or data.num_rows == 0:
        return None
    keys = col.to_numpy()
    lo, hi = int(keys.min()), int(keys.max())
    key_bits = max(1, (hi - lo).bit_length())
    group_bits = max(0, (groups - 1).bit_length())
    if key_bits + group_bits > 63:
        return None
    # int64 arithmetic wraps, but every true difference lies in [0, 2**63): it comes out exact
    packed = keys.astype(np.int64, copy=False) - np.int64(lo)
    if group_bits:
        packed = packed | (group << np.int64(key_bits))
    return np.argsort(packed, kind="stable")  # stable: a key's versions stay in arrival order


def _order(data: pa.Table, group: np.ndarray, groups: int, spec: RouteSpec) -> np.ndarray:
    if not spec.primary_keys:
        # arrival order within each group; a narrow integer makes numpy's stable sort a radix sort
        narrow = np.uint16 if groups <= 1 << 16 else np.int64
        return np.argsort(group.astype(narrow, copy=False), kind="stable")
    if len(spec.primary_keys) == 1 and not spec.sequence_fields:
        fast = _packed_key_order(data, spec.primary_keys[0], group, groups)
        if fast is not None:
            return fast
    cols = list(dict.fromkeys([*spec.primary_keys, *spec.sequence_fields]))
    narrow = data.select(cols).append_column(_GROUP_COLUMN, pa.array(group))
    narrow = narrow.append_column(SEQUENCE_NUMBER, pa.array(np.arange(data.num_rows, dtype=np.int64)))
    return sort_order(narrow, spec.primary_keys, spec.sequence_fields, spec.sequence_descending,
                      prefix=(_GROUP_COLUMN,))


def route(data: pa.Table, kinds: np.ndarray, spec: RouteSpec) -> list[RoutedGroup]:
    """Split ``data`` (conformed to the table, row kinds ``kinds``) into its groups, each sorted
    for the merge; groups come in (partition first seen, bucket) order."""
    part_ids, part_values = partition_groups(data, spec.partition_keys)
    nb = spec.num_buckets
    if spec.primary_keys:
        cols = [data.column(k) for k in spec.bucket_keys]
        group = part_ids * nb + assign_buckets(cols, spec.bucket_types, nb).astype(np.int64)
    else:
        group = part_ids
    groups = len(part_values) * nb
    order = _order(data, group, groups, spec)
    sorted_groups = group[order]
    bounds = np.flatnonzero(np.diff(sorted_groups)) + 1
    starts = np.concatenate(([0], bounds)).astype(np.int64)
    ends = np.concatenate((bounds, [len(order)])).astype(np.int64)
    part_cols = set(spec.partition_keys)
    payload = data.append_column(VALUE_KIND, pa.array(kinds, pa.int8()))
    gathered = payload.drop_columns(list(part_cols)) if part_cols else payload
    names = payload.column_names

    def gather(s: int, e: int) -> RoutedGroup:
        g = int(sorted_groups[s])
        rows = gathered.take(pa.array(order[s:e]))
        if part_cols:
            # a group holds one partition value: repeat it (the exact scalar of one of its rows)
            # instead of gathering the column
            first = int(order[s])
            cols = [rows.column(c) if c not in part_cols
                    else pa.chunked_array([pa.repeat(payload.column(c)[first], e - s)])
                    for c in names]
            rows = pa.Table.from_arrays(cols, schema=payload.schema)
        return RoutedGroup(part_values[g // nb], g % nb, rows)

    spans = list(zip(starts.tolist(), ends.tolist(), strict=True))
    if len(spans) <= 1 or data.num_rows < PARALLEL_GATHER_ROWS:
        return [gather(s, e) for s, e in spans]
    with ThreadPoolExecutor(max_workers=min(len(spans), os.cpu_count() or 2)) as pool:
        return list(pool.map(lambda span: gather(*span), spans))
