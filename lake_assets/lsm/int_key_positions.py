"""Row positions of integer keys in one data file whose single integer key column is sorted with
one row per key (a file above level 0): the lookup a deletion-vector compaction makes for every
key it outputs (`ops.dv_key_lookup`).

Two ways to answer, chosen once per file when its index is built (`IntKeyPositions`):

- a rank bitmap, when the file's keys are dense enough (their span at most ``DENSE_SPAN_PER_ROW``
  times the row count): one bit per value of the span, plus the count of set bits before each
  64-bit word. A key's row position is the count before its word plus the set bits below it in
  the word: a few vectorised gathers, no search. Measured against ``np.searchsorted`` for 25,000
  sorted keys in 250,000: build 0.35 ms + lookup 0.2 ms, against 0.8 ms per lookup (a binary
  search's probes are unpredictable branches, 30 ns a key);
- a binary search (``np.searchsorted``) of only the wanted keys inside the file's key range,
  for sparse keys, for unsigned 64-bit keys, and for columns that are not strictly increasing
  (never expected above level 0, but then a rank would count the wrong rows).

A position table (the row of each value of the span, 4 bytes per value) was measured too: 0.08
against 0.22 ms a lookup with the table in cache, but 0.41 against 0.30 ms after other work
evicted it, as in a real round (a 4 MB table for a 250,000-row file against the bitmap's 190 KB).

`WantedKeys` answers the other way round, for a file without a built index that holds few rows
against the keys looked up (the newest level, written by the previous round): a mark per value
of the wanted keys' span, and each row of the file tested against it. That costs a gather per
row of the file and builds nothing to keep (0.26 ms for 25,000 keys against a 25,000-row file,
caches cold, against 0.59 ms to build that file's rank bitmap and search it).

Indexes are immutable and their size is ``nbytes``, so a cache can keep one per file.
"""

from __future__ import annotations

import numpy as np

__all__ = ["DENSE_SPAN_PER_ROW", "MARK_SPAN_PER_KEY", "IntKeyPositions", "WantedKeys"]

# at most 64 values of span per row: the bitmap and its counts cost ≤ 16 bytes per row (the key
# column itself costs 8)
DENSE_SPAN_PER_ROW = 64
# a mark of wanted keys costs a byte per value of their span: at most 64 per key
MARK_SPAN_PER_KEY = 64
_HAS_BITCOUNT = hasattr(np, "bitwise_count")  # numpy 2.0+; older numpy searches


def _window(wanted: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """The wanted keys (ascending) within ``[lo, hi]``, compared, never subtracted: no overflow."""
    bounds = np.array((lo, hi), dtype=wanted.dtype)  # a file's own keys: they fit the dtype
    start, end = np.searchsorted(wanted, bounds, side="left")
    end += int(end < wanted.size and wanted[end] == hi)
    return wanted[start:end]


class IntKeyPositions:
    """Where the keys of one file's sorted, one-row-per-key integer key column lie."""

    def __init__(self, keys: np.ndarray) -> None:
        """``keys``: the file's key column in file order (any numpy integer dtype)."""
        self.rows = int(keys.size)
        self._keys: np.ndarray | None = None
        self._words: np.ndarray | None = None
        self._before: np.ndarray | None = None
        self._lo = self._hi = 0
        if self.rows == 0:
            return
        self._lo, self._hi = int(keys[0]), int(keys[-1])
        span = self._hi - self._lo + 1
        dense = (_HAS_BITCOUNT and keys.dtype != np.uint64 and 0 < span <= DENSE_SPAN_PER_ROW * self.rows
                 and bool(np.all(keys[1:] > keys[:-1])))
        if not dense:
            self._keys = keys
            return
        # offsets from the first key: non-negative and below span (span is small), no overflow
        offsets = keys.astype(np.int64) - self._lo
        word_of = offsets >> 6
        # int64 words: shifts and masks stay in one dtype (uint64 against int64 would go float);
        # 1 << 63 wraps to the sign bit, which is the bit wanted
        bits = np.left_shift(1, offsets & 63)
        # keys strictly increase: each word's bits are distinct, so their sum is their union;
        # a word's sum is the running sum at its last key less the one at the word before it
        # (the sums wrap, but the difference of two wrapped sums is exact): np.add.reduceat pays
        # a call per word (~25,000 words here: 2.5 of the 3 M instructions of a build, callgrind)
        ends = np.flatnonzero(np.concatenate((word_of[1:] != word_of[:-1], [True])))
        sums = np.cumsum(bits)[ends]
        sums[1:] -= sums[:-1].copy()
        words = np.zeros((span + 63) >> 6, dtype=np.int64)
        words[word_of[ends]] = sums
        before = np.zeros(words.size, dtype=np.int64)
        # bitwise_count counts the bits of the absolute value of a signed integer: count unsigned
        np.cumsum(np.bitwise_count(words[:-1].view(np.uint64)), out=before[1:])
        self._words, self._before = words, before

    @property
    def kind(self) -> str:
        """``"rank"`` or ``"search"``: how this file's keys are found."""
        return "rank" if self._words is not None else "search"

    @property
    def nbytes(self) -> int:
        """Bytes held (for a cache's budget)."""
        held = (self._keys, self._words, self._before)
        return sum(int(a.nbytes) for a in held if a is not None)

    def find(self, wanted: np.ndarray) -> np.ndarray:
        """The row positions holding any of ``wanted`` (distinct, ascending, the column's integer
        kind), ascending: one per wanted key the file holds."""
        if self.rows == 0 or wanted.size == 0:
            return np.empty(0, dtype=np.intp)
        wanted = _window(wanted, self._lo, self._hi)
        if self._keys is not None:
            at: np.ndarray = np.searchsorted(self._keys, wanted)
            inside = at < self._keys.size
            at, wanted = at[inside], wanted[inside]
            found: np.ndarray = at[self._keys[at] == wanted]
            return found.astype(np.intp, copy=False)
        assert self._words is not None and self._before is not None
        # in [0, span): the window. Every pass below writes into an array this call made (a
        # fresh array per step cost a third more: 0.23 against 0.18 ms for 25,000 keys)
        offsets = np.subtract(wanted, self._lo, dtype=np.int64)
        word_of = offsets >> 6
        bit = np.bitwise_and(offsets, 63, out=offsets)
        word = self._words[word_of]
        ranks = self._before[word_of]
        mask = np.left_shift(1, bit, out=bit)  # int64: 1 << 63 wraps to the sign bit, the bit wanted
        held = np.bitwise_and(word, mask).astype(bool)
        # the rank of every wanted key, then one selection (three selections of the hits, one per
        # array, cost more than ranking the misses too: a copy call per run of hits)
        mask -= 1  # the bits below the key's
        word &= mask
        ranks += np.bitwise_count(word)
        positions: np.ndarray = ranks[held]
        return positions.astype(np.intp, copy=False)


class WantedKeys:
    """The keys one merge step looks up (distinct, ascending, a signed integer kind), tested row by
    row against files that hold few rows (`positions_in`), through a mark built at first use."""

    def __init__(self, values: np.ndarray) -> None:
        self.values = values
        self._mark: np.ndarray | None = None
        self._lo = 0
        self._span = 0
        self.markable = bool(values.size) and values.dtype != np.uint64 and (
            int(values[-1]) - int(values[0]) + 1 <= MARK_SPAN_PER_KEY * values.size)

    def positions_in(self, keys: np.ndarray) -> np.ndarray:
        """Ascending row positions of ``keys`` (a file's integer key column, any order) whose value
        is wanted. Only when `markable`."""
        if not self.markable:
            raise ValueError("the wanted keys are too sparse for a mark")
        if self._mark is None:
            self._lo = int(self.values[0])
            self._span = int(self.values[-1]) - self._lo + 1
            mark = np.zeros(self._span + 1, dtype=bool)  # the last slot stands for "outside": never set
            mark[self.values.astype(np.int64, copy=False) - self._lo] = True
            self._mark = mark
        if keys.dtype == np.uint64:
            raise ValueError("unsigned 64-bit keys are not marked")
        # offsets wrap for keys far outside (int64 arithmetic), but a wrapped offset lands in
        # [0, span) only for a key that is exactly that value; every other offset, as unsigned,
        # is at least span and looks at the "outside" slot
        offsets = np.subtract(keys, self._lo, dtype=np.int64)  # a new array (one pass), changed below
        unsigned = offsets.view(np.uint64)
        np.minimum(unsigned, self._span, out=unsigned)
        # gathered by the signed view (now all in [0, span]): numpy's fast path takes intp indices
        found: np.ndarray = np.flatnonzero(self._mark[offsets])
        return found
