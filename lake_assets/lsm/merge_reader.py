"""A k-way merge of key-sorted files with bounded memory, vectorized per chunk.

Each input yields key-sorted chunks (e.g. Parquet row groups). The reader only merges rows whose
key is at most the *frontier* - the smallest last-buffered key among inputs that still have data -
because every later row of every input is larger. Memory is one chunk per input plus the output.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.lsm.key_compare import compare_keys, float_code, key_view

Key = tuple[object, ...]


def _last_key(table: pa.Table, key_names: Sequence[str]) -> Key:
    return tuple(table.column(k)[table.num_rows - 1].as_py() for k in key_names)


def count_at_most(table: pa.Table, key_names: Sequence[str], frontier: Key) -> int:
    """Number of leading rows of a key-sorted table whose key is <= ``frontier`` (lexicographic)."""
    n = table.num_rows
    if n == 0:
        return 0
    result = np.zeros(n, dtype=bool)
    equal_prefix = np.ones(n, dtype=bool)
    view = key_view(table.select(list(key_names)), key_names)  # float keys compare as in Java
    for name, value in zip(key_names, frontier, strict=True):
        col = view.column(name)
        if isinstance(value, float) and pa.types.is_floating(table.schema.field(name).type):
            value = float_code(value)
        scalar = pa.scalar(value, type=col.type)
        lt = pc.less(col, scalar).to_numpy(zero_copy_only=False)
        eq = pc.equal(col, scalar).to_numpy(zero_copy_only=False)
        result |= equal_prefix & lt
        equal_prefix &= eq
    result |= equal_prefix
    return int(result.sum())


def merge_sorted(
    inputs: Sequence[Iterator[pa.Table]],
    key_names: Sequence[str],
    merge: Callable[[pa.Table], pa.Table],
    min_rows: int = 64 * 1024,
) -> Iterator[pa.Table]:
    """Yield ``merge(chunk)`` over key-disjoint chunks covering all inputs, in key order.

    ``merge`` gets the rows of every input for a key range (unsorted across inputs) and must sort
    and collapse them. Chunks are gathered until at least ``min_rows`` rows to amortize the merge.
    """
    iters = list(inputs)
    buffers: list[pa.Table | None] = [None] * len(iters)
    done = [False] * len(iters)

    def refill(i: int) -> None:
        buf = buffers[i]
        while not done[i] and (buf is None or buf.num_rows == 0):
            try:
                buf = next(iters[i])
            except StopIteration:
                done[i] = True
                buf = None
        buffers[i] = buf

    for i in range(len(iters)):
        refill(i)
    pending: list[pa.Table] = []
    pending_rows = 0
    while any(b is not None and b.num_rows for b in buffers):
        frontier: Key | None = None
        lasts: list[Key | None] = [None] * len(buffers)
        for i, buf in enumerate(buffers):
            if buf is not None and buf.num_rows and not done[i]:
                key = lasts[i] = _last_key(buf, key_names)
                if frontier is None or compare_keys(key, frontier) < 0:
                    frontier = key
        for i, buf in enumerate(buffers):
            if buf is None or buf.num_rows == 0:
                continue
            last = lasts[i]
            if frontier is None or (last is not None and compare_keys(last, frontier) <= 0):
                # The whole buffer is at most the frontier (always so for the input that set it):
                # no need to compare every row.
                cut = buf.num_rows
            else:
                cut = count_at_most(buf, key_names, frontier)
            if cut:
                pending.append(buf.slice(0, cut))
                pending_rows += cut
                buffers[i] = buf.slice(cut)
            refill(i)
        if pending_rows >= min_rows:
            yield merge(pa.concat_tables(pending))
            pending, pending_rows = [], 0
    if pending:
        yield merge(pa.concat_tables(pending))
