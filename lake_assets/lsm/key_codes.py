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
    its code: ``uint64`` for 8 bytes, ``S16`` for 16."""
    n = len(columns[0]) if columns else 0
    out = np.zeros((n, layout.width), dtype=np.uint8)
    at = 0
    for index, taken, whole in layout.parts:
        column = columns[index]
        if is_bytes(column.type):
            loads, starts, lengths = word_loads(column)
            words = -(-taken // 8)
            # 8 bytes at a time, zeros past each value's end; a little-endian word's bytes in
            # memory are the value's bytes in order
            block = np.empty((n, max(words, 1)), dtype="<u8")
            for w in range(words):
                block[:, w] = loads[np.minimum(starts + 8 * w, loads.size - 1)] & low_bytes_mask(lengths - 8 * w)
            out[:, at:at + taken] = block.view(np.uint8).reshape(n, 8 * block.shape[1])[:, :taken]
            at += taken
            if whole:
                out[:, at] = np.minimum(lengths, 255).astype(np.uint8)
                at += 1
            continue
        values = integer_values(column)
        full = values.dtype.itemsize
        signed = values.dtype.kind == "i"
        big = values.astype(f">{'i' if signed else 'u'}{full}").view(np.uint8).reshape(n, full)
        if signed:
            big = big.copy()
            big[:, 0] ^= 0x80  # two's complement to offset binary: byte order is numeric order
        out[:, at:at + taken] = big[:, :taken]
        at += taken
    if layout.width == 8:
        codes: np.ndarray = out.view(">u8").reshape(n).astype(np.uint64)
        return codes
    return np.ascontiguousarray(out).view("S16").reshape(n)
