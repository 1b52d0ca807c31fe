"""A k-way merge of key-sorted inputs with memory bounded by its arguments, vectorized per chunk.

Each input yields key-sorted chunks (Parquet batches of one sorted run, spill-run batches). The
merge only takes rows whose key is at most the *frontier*, because every row an input has not
yielded yet is larger than its buffered rows. The frontier is the smallest of: each input's key
at position ``cap`` of its buffer and, for inputs not yet exhausted, its last buffered key, where
``cap = max_step_rows / giving`` and the *giving* inputs are those whose first buffered key is at
most the frontier computed with the whole step per input (the others give no rows this step).
So one step takes at most about ``max_step_rows`` rows however many inputs there are and however
large their chunks - the step size is set by the caller, not by the fan-in or the table - and
inputs that barely overlap (a load's spilled runs) give whole steps, not 1/inputs of one. Cut
points are found by `count_at_most` (a search of each key column's buffers,
`key_search.equal_range`; a binary search of decoded keys for other column types: no per-row
work in Python); the rows between them are merged with one Arrow sort by ``merge``, never row by
row in Python.

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


def _merged(merge: Callable[[pa.Table], pa.Table], pending: list[pa.Table]) -> pa.Table:
    """``merge`` of the ``pending`` rows, emptying ``pending`` first: while the caller consumes
    the merged rows (a compaction writes them) the merge's input is no longer held - a generator
    suspended at ``yield merge(concat(pending))`` would keep both alive until it resumes."""
    chunk = pa.concat_tables(pending)
    pending.clear()
    return merge(chunk)


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
    firsts: list[Key | None] = [None] * len(iters)  # each head's first key, decoded once per head
    lasts: list[Key | None] = [None] * len(iters)  # each chunk's last key: a head's until refilled
    done = [False] * len(iters)

    def refill(i: int) -> None:
        head = heads[i]
        while not done[i] and (head is None or head.num_rows == 0):
            try:
                head = next(iters[i])
            except StopIteration:
                done[i] = True
                head = None
        if head is not heads[i]:
            lasts[i] = None
        heads[i] = head if head is not None and head.num_rows else None

    def bound_at(i: int, cap: int) -> Key | None:
        """A key no larger than input ``i``'s key at row ``cap`` - 1 and its last buffered key
        (None: the input's last rows, at most ``cap``, need no bound)."""
        head = heads[i]
        assert head is not None
        if head.num_rows > cap:
            return _key_at(head, key_names, cap - 1)
        if not done[i]:
            last = lasts[i]
            if last is None:  # later chunks hold larger keys
                last = lasts[i] = _key_at(head, key_names, head.num_rows - 1)
            return last
        return None

    def smallest(keys: Iterator[Key | None], start: Key | None) -> Key | None:
        least = start
        for key in keys:
            if key is not None and (least is None or compare_keys(key, least) < 0):
                least = key
        return least

    for i in range(len(iters)):
        refill(i)
    pending: list[pa.Table] = []
    pending_rows = 0
    while True:
        active = [i for i, head in enumerate(heads) if head is not None]
        if not active:
            break
        # The frontier with the whole step per input; only inputs starting at or below it can
        # give rows, so the step is shared among those. Sorted runs that barely overlap (a load's
        # spilled runs) then give a whole step at once instead of 1/len(active) of it, which made
        # the steps per row, and the searches per step, both grow with the number of runs.
        whole = smallest((bound_at(i, step_rows) for i in active), None)
        if whole is None:
            giving = active
        else:
            giving = []
            for i in active:
                first = firsts[i]
                if first is None:
                    head = heads[i]
                    assert head is not None
                    first = firsts[i] = _key_at(head, key_names, 0)
                if compare_keys(first, whole) <= 0:
                    giving.append(i)
        cap = max(1, step_rows // len(giving))
        frontier = smallest((bound_at(i, cap) for i in giving), whole)
        for i in giving:
            head = heads[i]
            assert head is not None
            cut = head.num_rows if frontier is None else count_at_most(head, key_names, frontier)
            if cut:
                pending.append(head.slice(0, cut))
                pending_rows += cut
                heads[i] = head.slice(cut) if cut < head.num_rows else None
                firsts[i] = None
            refill(i)
        if pending_rows >= min_rows:
            yield _merged(merge, pending)
            pending_rows = 0
    if pending:
        yield _merged(merge, pending)
