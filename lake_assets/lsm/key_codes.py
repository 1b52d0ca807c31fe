"""Order-preserving codes of 8 or 16 bytes for primary keys of integer, date, string and binary
columns (`lsm.key_ranks.KeyRanks` searches a file's keys by them).

A key's code is its columns' bytes one after another, compared as unsigned bytes:

- an integer (or a DATE, days as int32) as big-endian bytes with its sign bit flipped, at its
  full width: byte order is then numeric order;
- a string or binary, when every value of the file fits: its bytes zero-padded to the file's
  longest value, then one byte of its length. Padded bytes equal, the shorter value sorts first
  as Paimon's byte order puts a prefix first; so the pair is exact and ordered, and the next
  column can follow;
- else the first bytes that are left (a string, or an integer cut to what is left), and the code
  ends there: keys equal in those bytes share a code.

A code never decreases in Paimon's key order (columns compared in turn, strings and binaries by
their bytes, `lsm.key_compare`), so keys whose codes strictly increase strictly increase, and a
file's codes in file order are sorted already. A code of 8 bytes is a ``uint64``; one of 16 is
numpy's ``S16`` (fixed-width bytes compared as unsigned bytes, shorter-is-smaller after its
trailing zeros, which for codes of one width is the bytes' order). The layout of the string
parts depends on the file's longest values (`CodeLayout.plan`); keys looked up in the file are
coded with the file's layout, longer values included: such a value is not in the file, and its
length byte (its length up to 255) is no file value's. A code shared by keys that differ in a
column the layout cuts or leaves out is told apart by the caller's check of those columns
(`CodeLayout.checked`): it costs a check, never a wrong row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

__all__ = ["CodeLayout", "bytes_of", "codable", "integer_values", "is_bytes", "low_bytes_mask", "order_codes",
           "word_loads"]

# (column index, bytes taken, whether a length byte follows: a whole string or binary value)
_Part = tuple[int, int, bool]


def is_bytes(t: pa.DataType) -> bool:
    """Whether ``t`` is a string or binary type (compared by its bytes)."""
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t)
                or pa.types.is_binary(t) or pa.types.is_large_binary(t))


def codable(types: Sequence[pa.DataType]) -> bool:
    """Whether key columns of these Arrow types can be coded (integers, DATE, strings, binaries)."""
    return bool(types) and all(is_bytes(t) or pa.types.is_integer(t) or pa.types.is_date32(t) for t in types)


def integer_values(column: pa.Array) -> np.ndarray:
    """An integer or DATE column (no nulls) as numpy integers (DATE: its days since the epoch)."""
    if pa.types.is_date32(column.type):
        column = column.view(pa.int32())
    values: np.ndarray = column.to_numpy()
    return values


def _integer_width(t: pa.DataType) -> int:
    return 4 if pa.types.is_date32(t) else int(t.bit_width) // 8


def bytes_of(column: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The data bytes and the ``n + 1`` offsets of a string or binary array without nulls."""
    offsets_type = np.int64 if pa.types.is_large_string(column.type) or pa.types.is_large_binary(column.type) \
        else np.int32
    _, offsets_buffer, data_buffer = column.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype=offsets_type)[column.offset:column.offset + len(column) + 1]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    return data, offsets.astype(np.int64)


def word_loads(column: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A little-endian uint64 view of a string or binary array's data at every byte offset (an
    unaligned, overlapping view: one gather loads 8 bytes of every value), the values' starts and
    their lengths. The data is copied once with 8 zero bytes after it, so no load runs past it."""
    data, offsets = bytes_of(column)
    padded = np.concatenate((data, np.zeros(8, np.uint8)))
    loads = np.ndarray(shape=(padded.size - 7,), dtype="<u8", buffer=padded, offset=0, strides=(1,))
    return loads, offsets[:-1], np.diff(offsets)


def low_bytes_mask(count: np.ndarray) -> np.ndarray:
    """Per value, a mask of its lowest ``count`` bytes (``count`` clipped to 0-8)."""
    bits = (np.clip(count, 0, 8) * 8).astype(np.uint64)
    full = bits == 64
    mask = (np.uint64(1) << np.where(full, np.uint64(0), bits)) - np.uint64(1)
    mask[full] = np.uint64(0xFFFFFFFFFFFFFFFF)
    return mask


@dataclass(frozen=True)
class CodeLayout:
    """Which bytes of which key columns make a code of ``width`` (8 or 16) bytes. ``checked``:
    the key columns a code does not hold whole (one cut short, those left out), in key order;
    two keys of equal codes are equal in every other column (the parts before a cut one have
    fixed widths, a longer value than the file's longest has a length byte no value of the file
    has). ``exact`` when there are none: then equal codes are equal keys."""

    width: int
    parts: tuple[_Part, ...]
    checked: tuple[int, ...]

    @property
    def exact(self) -> bool:
        """Whether every key column is coded whole."""
        return not self.checked

    @classmethod
    def plan(cls, columns: Sequence[pa.Array], width: int) -> CodeLayout:
        """The layout of ``columns`` (a file's key columns, no nulls) in ``width`` bytes: columns
        in turn while they fit whole (a string or binary: its longest value and a length byte)."""
        parts: list[_Part] = []
        left = width
        for i, column in enumerate(columns):
            rest = tuple(range(i, len(columns)))
            if left == 0:
                return cls(width, tuple(parts), rest)
            if not is_bytes(column.type):
                full = _integer_width(column.type)
                parts.append((i, min(full, left), False))
                if full > left:
                    return cls(width, tuple(parts), rest)
                left -= full
                continue
            lengths = np.diff(bytes_of(column)[1])
            longest = int(lengths.max()) if lengths.size else 0
            if longest + 1 <= left:  # at most 15 bytes: a length byte up to 255 tells longer ones
                parts.append((i, longest, True))
                left -= longest + 1
                continue
            # too long: its first bytes end the code
            parts.append((i, left, False))
            return cls(width, tuple(parts), rest)
        return cls(width, tuple(parts), ())

    @property
    def slot(self) -> str:
        """A name of this layout (codes of one layout can be reused across files)."""
        return f"{self.width}:{self.parts}"


def order_codes(columns: Sequence[pa.Array], layout: CodeLayout) -> np.ndarray:
    """Per row of ``columns`` (the key columns, no nulls, of the types `layout` was planned for),
    its code: ``uint64`` for 8 bytes, ``S16`` for 16.

    The code is built as a 128-bit integer in two uint64 words, each part's bytes shifted in as
    big-endian integers of up to 8 bytes (a byte matrix filled column by column cost 2.1 ms for
    50,000 keys of 16 bytes, this ~0.5 ms)."""
    n = len(columns[0]) if columns else 0
    code = _Code(n)
    for index, taken, whole in layout.parts:
        column = columns[index]
        if is_bytes(column.type):
            loads, starts, lengths = word_loads(column)
            for first in range(0, taken, 8):
                size = min(8, taken - first)
                # a little-endian load's bytes in memory are the value's in order: swapped, its
                # first byte is the most significant (zeros past the value's end)
                word = (loads[np.minimum(starts + first, loads.size - 1)]
                        & low_bytes_mask(lengths - first)).byteswap()
                code.push(word >> np.uint64(8 * (8 - size)) if size < 8 else word, size)
            if whole:
                code.push(np.minimum(lengths, 255).astype(np.uint64), 1)
            continue
        values = integer_values(column)
        full = values.dtype.itemsize
        if values.dtype.kind == "i":
            # two's complement to offset binary (the sign bit flipped): unsigned order is numeric order
            flipped = values.astype(np.int64).view(np.uint64) ^ np.uint64(1 << (8 * full - 1))
            unsigned = flipped & np.uint64((1 << (8 * full)) - 1) if full < 8 else flipped
        else:
            unsigned = values.astype(np.uint64)
        code.push(unsigned >> np.uint64(8 * (full - taken)) if taken < full else unsigned, taken)
    return code.finish(layout.width)


class _Code:
    """A 128-bit code per row, two uint64 words (``high``, ``low``), filled from the front."""

    def __init__(self, n: int) -> None:
        self.high = np.zeros(n, dtype=np.uint64)
        self.low = np.zeros(n, dtype=np.uint64)
        self.size = 0  # bytes pushed

    def push(self, part: np.ndarray, size: int) -> None:
        """Append ``size`` (1-8) bytes: ``part``'s low bytes, most significant first."""
        self._shift(size)
        self.low |= part
        self.size += size

    def _shift(self, size: int) -> None:
        """Shift the code left by ``size`` bytes (0-8)."""
        if size == 0:
            return
        bits = 8 * size
        if bits == 64:
            self.high, self.low = self.low, np.zeros_like(self.low)
            return
        self.high = (self.high << np.uint64(bits)) | (self.low >> np.uint64(64 - bits))
        self.low = self.low << np.uint64(bits)

    def finish(self, width: int) -> np.ndarray:
        """The codes, padded with zero bytes to ``width`` (8: ``uint64``; 16: ``S16``)."""
        left = width - self.size
        while left > 0:
            step = min(8, left)
            self._shift(step)
            left -= step
        if width == 8:
            return self.low
        words = np.empty((self.low.size, 2), dtype=">u8")
        words[:, 0] = self.high
        words[:, 1] = self.low
        return words.view("S16").reshape(self.low.size)
