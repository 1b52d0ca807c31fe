"""A k-way merge of key-sorted inputs with memory bounded by its arguments, vectorized per chunk.

Each input yields key-sorted chunks (Parquet batches of one sorted run, spill-run batches). The
merge only takes rows whose key is at most the *frontier*, because every row an input has not
yielded yet is larger than its buffered rows. The frontier is the smallest of: each input's key
at position ``cap`` of its buffer (``cap = max_step_rows / inputs``) and, for inputs not yet
exhausted, its last buffered key. So one step takes at most about ``max_step_rows`` rows however
many inputs there are and however large their chunks - the step size is set by the caller, not
by the fan-in or the table. Cut points are found by `count_at_most` (a search of each key column's
buffers, `key_search.equal_range`; a binary search of decoded keys for other column types: no
per-row work in Python); the rows between them are merged with one Arrow sort by ``merge``,
never row by row in Python.

Precondition (what makes each merged chunk hold *every* version of its keys): an input's chunk
never ends inside a key, i.e. a key's rows of one input never continue into that input's next
chunk. Sorted runs of data files hold each key once; spill runs cut their batches at key
boundaries (`ops.spill.key_batches`).

Memory: one chunk per input (as the input yields it) plus the pending rows of at most
``min_rows + max_step_rows`` (plus the rows of the frontier key itself) and ``merge``'s output.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import pyarrow as pa

from lake_assets.lsm.key_compare import compare_keys
from lake_assets.lsm.key_search import equal_range

__all__ = ["Key", "count_at_most", "count_below", "merge_sorted"]

Key = tuple[object, ...]


def _key_at(table: pa.Table, key_names: Sequence[str], row: int) -> Key:
    return tuple(table.column(k)[row].as_py() for k in key_names)


def _scalar_count(table: pa.Table, key_names: Sequence[str], key: Key, lo: int, hi: int, below: bool) -> int:
    """``lo`` plus the number of rows in ``[lo, hi)`` whose key is < ``key`` (``below``) or <=
    ``key`` (binary search with `compare_keys`, one decoded key per probe)."""

    def before(row: int) -> bool:
        c = compare_keys(_key_at(table, key_names, row), key)
        return c < 0 if below else c <= 0

    if lo >= hi or before(hi - 1):
        return hi
    hi -= 1  # the answer is in [lo, hi]: row hi is known not to come before
    while lo < hi:
        mid = (lo + hi) // 2
        if before(mid):
            lo = mid + 1
        else:
            hi = mid
    return lo


def _count(table: pa.Table, key_names: Sequence[str], key: Key, below: bool) -> int:
    """Leading rows of a key-sorted table whose key is < ``key`` (``below``) or <= ``key``.

    Each key column narrows the range to the rows equal to ``key`` so far with one search of the
    column's buffers (`key_search.equal_range`: integer, temporal, float, decimal, string and
    binary columns; the rows equal in the columns before are sorted by the next one). A column
    type without such a search takes a binary search of decoded keys over the rows left.
    """
    lo, hi = 0, int(table.num_rows)
    for depth, name in enumerate(key_names):
        if lo >= hi:
            return lo
        found = equal_range(table.column(name), key[depth], lo, hi)
        if found is None:
            return _scalar_count(table, key_names[depth:], key[depth:], lo, hi, below)
        lo, hi = lo + found[0], lo + found[1]  # rows before are smaller; rows after are larger
    return lo if below else hi


def count_at_most(table: pa.Table, key_names: Sequence[str], frontier: Key) -> int:
    """Number of leading rows of a key-sorted table whose key is <= ``frontier``.

    Paimon's key order (`compare_keys`: nulls first, floats as ``Double.compare``), the order the
    merge sorted the table in; vectorised per key column (see `_count`). So a step of the merge
    costs a few vectorised calls per input instead of O(log n) Python-level key decodes, which
    grew with rows x runs in the merge of spilled runs.
    """
    return _count(table, key_names, frontier, below=False)


def count_below(table: pa.Table, key_names: Sequence[str], key: Key) -> int:
    """Number of leading rows of a key-sorted table whose key is < ``key`` (as `count_at_most`)."""
    return _count(table, key_names, key, below=True)


def merge_sorted(
    inputs: Sequence[Iterator[pa.Table]],
    key_names: Sequence[str],
    merge: Callable[[pa.Table], pa.Table],
    min_rows: int = 64 * 1024,
    max_step_rows: int | None = None,
) -> Iterator[pa.Table]:
    """Yield ``merge(chunk)`` over key-disjoint chunks covering all inputs, in key order.

    ``merge`` gets the rows of every input for a key range (unsorted across inputs) and must sort
    and collapse them. Rows are gathered until at least ``min_rows`` to amortize the merge; one
    step gathers at most about ``max_step_rows`` (default ``min_rows``), so a chunk holds at most
    about ``min_rows + max_step_rows`` rows whatever the number of inputs.
    """
    if min_rows < 1:
        raise ValueError(f"min_rows must be at least 1, got {min_rows}")
    step_rows = min_rows if max_step_rows is None else max_step_rows
    if step_rows < 1:
        raise ValueError(f"max_step_rows must be at least 1, got {step_rows}")
    iters = list(inputs)
    heads: list[pa.Table | None] = [None] * len(iters)
    done = [False] * len(iters)

    def refill(i: int) -> None:
        head = heads[i]
        while not done[i] and (head is None or head.num_rows == 0):
            try:
                head = next(iters[i])
            except StopIteration:
                done[i] = True
                head = None
        heads[i] = head if head is not None and head.num_rows else None

    for i in range(len(iters)):
        refill(i)
    pending: list[pa.Table] = []
    pending_rows = 0
    while True:
        active = [i for i, head in enumerate(heads) if head is not None]
        if not active:
            break
        cap = max(1, step_rows // len(active))
        frontier: Key | None = None
        for i in active:
            head = heads[i]
            assert head is not None
            if head.num_rows > cap:
                bound = _key_at(head, key_names, cap - 1)
            elif not done[i]:
                bound = _key_at(head, key_names, head.num_rows - 1)  # later chunks hold larger keys
            else:
                continue  # the input's last rows, fewer than cap: no bound needed
            if frontier is None or compare_keys(bound, frontier) < 0:
                frontier = bound
        for i in active:
            head = heads[i]
            assert head is not None
            cut = head.num_rows if frontier is None else count_at_most(head, key_names, frontier)
            if cut:
                pending.append(head.slice(0, cut))
                pending_rows += cut
                heads[i] = head.slice(cut) if cut < head.num_rows else None
            refill(i)
        if pending_rows >= min_rows:
            yield merge(pa.concat_tables(pending))
            pending, pending_rows = [], 0
    if pending:
        yield merge(pa.concat_tables(pending))
