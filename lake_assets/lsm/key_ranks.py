"""Row positions of string and composite keys in a table with one row per key (a data file above
level 0, one merge step's records): the sibling of `lsm.int_key_positions` for keys that are not
one integer column.

Each key becomes one code, computed column-wise in numpy, and the table's codes are kept sorted,
so a lookup is one ``np.searchsorted`` of the wanted keys' codes (a uint64 search costs a tenth of
Arrow's ``search_sorted`` of strings: 0.12 against 1.2 ms for 5,000 keys in 50,000):

- an order-preserving code of 8, else 16 bytes (`lsm.key_codes`: integers and dates big-endian
  with their sign bit flipped, strings and binaries whole with a length byte where the file's
  longest fits, else their first bytes). It never decreases in Paimon's key order (byte order
  for strings, `lsm.key_compare`), so a file's codes need no sort; it is used when they strictly
  increase (a distinct code per row). A 16-byte code is numpy's ``S16`` (its search costs about
  1.7x a uint64 one: 0.7 ms for 5,000 keys in 50,000), so (int64, int64), (int64, DATE),
  (int32, short string) or (int32, a 16-byte id's first 12 bytes) keys are ordered, not hashed;
- else a hash of every byte of the key (a polynomial hash of each string's bytes, mixed with its
  length and the other columns), and the codes sorted once with their row positions.

A code found is a candidate row. When the code holds every byte of the key (``exact``: every
column whole), equal codes are equal keys and the row is the key's; else the candidate counts
only when its key columns the code does not hold whole equal the wanted key's (Arrow's equality,
column by column; `CodeLayout.checked`). Distinct
codes per row are checked when the index is built, so a key's row is the only candidate; a table
whose codes collide gets no index (the caller's general path decides).

Columns of integer, DATE, string and binary types only (not floats: Java's equality for them
differs from Arrow's; not nulls: a primary key has none). Indexes are immutable and their size is
``nbytes``, so a cache can keep one per file beside `IntKeyPositions`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.lsm.key_codes import (
    CodeLayout,
    codable,
    integer_values,
    is_bytes,
    low_bytes_mask,
    order_codes,
    word_loads,
)

__all__ = ["KeyRanks", "rankable", "strictly_ascending"]

_MIX = np.uint64(0x9E3779B97F4A7C15)


def rankable(types: Sequence[pa.DataType]) -> bool:
    """Whether key columns of these Arrow types can be indexed (integers, DATE, strings, binaries)."""
    return codable(types)


def _flat(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def _hash_codes(columns: list[pa.Array]) -> np.ndarray:
    """Per row, a 64-bit hash of every byte of its key (equal keys, equal hashes): 8 bytes of
    each value at a time, a pass per 8 bytes of the longest value."""
    code = np.zeros(len(columns[0]), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for column in columns:
            if not is_bytes(column.type):
                part = integer_values(column).astype(np.int64).view(np.uint64)
            else:
                loads, starts, lengths = word_loads(column)
                part = lengths.astype(np.uint64)  # "" and "\0" apart
                longest = int(lengths.max()) if lengths.size else 0
                for at in range(0, longest, 8):
                    word = loads[np.minimum(starts + at, loads.size - 1)] & low_bytes_mask(lengths - at)
                    # a value's hash is its own bytes', whatever the longest value of the array
                    part = np.where(lengths > at, _mixed(part * _MIX + word), part)
            code = _mixed(code * _MIX + _mixed(part))
    return code


def _mixed(z: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: every input bit moves every output bit (a linear combination of
    columns' hashes let (1, "") and (0, "\0") meet)."""
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        mixed: np.ndarray = z ^ (z >> np.uint64(31))
        return mixed


def strictly_ascending(keys: pa.Table) -> bool:
    """Whether the rows of ``keys`` (integer, string or binary columns, no nulls) strictly increase
    in Paimon's key order (columns compared in turn; strings by bytes, as Arrow compares them)."""
    n = keys.num_rows
    if n < 2:
        return True
    decided = np.zeros(n - 1, dtype=bool)  # pairs whose order an earlier column settled (ascending)
    for column in keys.columns:
        flat = _flat(column)
        before, after = flat.slice(0, n - 1), flat.slice(1)
        less = np.asarray(pc.less(before, after).to_numpy(zero_copy_only=False), dtype=bool)
        greater = np.asarray(pc.greater(before, after).to_numpy(zero_copy_only=False), dtype=bool)
        if bool(np.any(greater & ~decided)):
            return False
        decided |= less
    return bool(decided.all())  # a pair equal in every column is one key twice


class KeyRanks:
    """Where the keys of one table (key columns only, one row per key) lie: `build` gives one,
    or None when the table is not such a table."""

    def __init__(self, keys: list[pa.Array], codes: np.ndarray, rows: np.ndarray | None,
                 layout: CodeLayout | None) -> None:
        self._keys = keys  # the table's key columns, to check a candidate row against
        self._codes = codes  # sorted, distinct
        self._rows = rows  # the row of each code (None: the codes are in row order)
        self._layout = layout  # None: hashed
        self.rows = len(keys[0]) if keys else 0

    @classmethod
    def build(cls, keys: pa.Table) -> KeyRanks | None:
        """The index of ``keys`` (its columns in key order), or None when a column is of another
        type or has nulls, or two rows' codes are equal (one key twice, or a hash collision)."""
        columns = [_flat(c) for c in keys.columns]
        if not columns or not rankable([c.type for c in columns]) or any(c.null_count for c in columns):
            return None
        narrow = CodeLayout.plan(columns, 8)
        # an exact code first (its search needs no check of the keys), else the narrower one
        layouts = [narrow] if narrow.exact else sorted([narrow, CodeLayout.plan(columns, 16)],
                                                       key=lambda layout: not layout.exact)
        for layout in layouts:
            codes = order_codes(columns, layout)
            if codes.size < 2 or bool(np.all(codes[1:] > codes[:-1])):
                return cls(columns, codes, None, layout)
            if layout.exact:
                break  # every byte of the keys coded: the rows are out of order or repeat a key
        codes = _hash_codes(columns)
        rows = np.argsort(codes, kind="stable")
        codes = codes[rows]
        if bool(np.any(codes[1:] == codes[:-1])):
            return None
        return cls(columns, codes, rows, None)

    @property
    def kind(self) -> str:
        """How keys are coded: ``"exact"`` (every byte of the key, in order, 8 or 16 bytes),
        ``"prefix"`` (the first 8 or 16 bytes of the key's ordered form) or ``"hash"``."""
        if self._layout is None:
            return "hash"
        return "exact" if self._layout.exact else "prefix"

    @property
    def code_width(self) -> int:
        """Bytes per code (8 or 16)."""
        return 8 if self._layout is None else self._layout.width

    @property
    def nbytes(self) -> int:
        """Bytes held (for a cache's budget; the key columns are counted too, though the cache
        may hold them already)."""
        held = sum(int(c.nbytes) for c in self._keys) + int(self._codes.nbytes)
        return held + (0 if self._rows is None else int(self._rows.nbytes))

    def locate(self, keys: pa.Table, codes: dict[str, np.ndarray] | None = None) -> np.ndarray:
        """Per row of ``keys`` (the same key columns, any order, no nulls), the position of the
        row holding its key, or -1 when none does. ``codes``: the codes of ``keys`` by coding,
        filled and reused when one step's keys are looked up in several files."""
        n = keys.num_rows
        if n == 0 or self.rows == 0:
            return np.full(n, -1, dtype=np.int64)
        wanted = [_flat(c).cast(k.type) for c, k in zip(keys.columns, self._keys, strict=True)]
        # a code depends on the coding and the column types (an integer's width)
        layout = self._layout
        slot = f"{'hash' if layout is None else layout.slot}:{','.join(str(k.type) for k in self._keys)}"
        code = None if codes is None else codes.get(slot)
        if code is None:
            code = _hash_codes(wanted) if layout is None else order_codes(wanted, layout)
            if codes is not None:
                codes[slot] = code
        at = np.searchsorted(self._codes, code)
        hit = at < self._codes.size
        hit[hit] = self._codes[at[hit]] == code[hit]
        rows = at if self._rows is None else self._rows[np.minimum(at, self.rows - 1)]
        candidates = np.flatnonzero(hit)
        checked = range(len(wanted)) if layout is None else layout.checked
        if candidates.size and checked:
            taken = pa.array(rows[candidates])
            index = pa.array(candidates)
            for column in checked:
                mine, theirs = self._keys[column], wanted[column]
                # the code found, the key checked: a prefix or hash equal is not a key equal
                # (columns a code holds whole are equal already)
                same = pc.equal(mine.take(taken), theirs.take(index)).to_numpy(zero_copy_only=False)
                hit[candidates] &= np.asarray(same, dtype=bool)
        return np.where(hit, rows, -1).astype(np.int64, copy=False)

    def find(self, keys: pa.Table, codes: dict[str, np.ndarray] | None = None) -> np.ndarray:
        """The ascending row positions holding any key of ``keys`` (one each; ``codes`` as for
        `locate`)."""
        at = self.locate(keys, codes)
        found = at[at >= 0]
        if found.size > 1 and not bool(np.all(found[1:] > found[:-1])):
            # by a sort (numpy 2's np.unique hashes, much slower): ``keys`` may repeat a key
            found = np.sort(found)
            found = found[np.concatenate(([True], found[1:] != found[:-1]))]
        return found.astype(np.intp, copy=False)
