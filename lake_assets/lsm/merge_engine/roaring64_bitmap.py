"""Java's ``Roaring64Bitmap`` serialization (RoaringBitmap 1.0.5, Paimon 0.9's ``rbm64``), and its ``or``.

Paimon's RoaringBitmap64 wraps ``org.roaringbitmap.longlong.Roaring64Bitmap``, whose
``serialize(DataOutput)`` is not the portable 64-bit Roaring format (pyroaring's ``BitMap64``) but
a dump of its in-memory structure, an adaptive radix tree (ART) over the high 48 bits of each
value plus an array of 16-bit Roaring containers, all little-endian:

- one byte: 0 empty (nothing follows), 1 not empty;
- the ART: int64 key count, then its nodes in pre-order. Each node: byte type (0 Node4,
  1 Node16, 2 Node48, 3 Node256, 4 leaf), int16 child count, byte prefix length, the prefix, then
  the body - Node4: int32 of 4 key bytes; Node16: two int64 of 8 key bytes; Node48: 32 int64, a
  256-byte map from key byte to child slot (0xFF: none); Node256: 4 int64, a bitmap of the key
  bytes; leaf: the 6 high key bytes (big-endian) and the int64 index of its container. Children
  follow their node in key order;
- the containers: int32 count of arrays, per array a byte -2, int32 length (the Java array's
  *capacity*: it grows by half as containers are added), per slot a byte 0 (empty) or 1, then
  byte type (0 run, 1 bitmap, 2 array), int32 cardinality and the container (run: uint16 run count
  and (start, length - 1) pairs; bitmap: 1024 int64; array: the uint16 values); then int64
  container count and int32 indexes of the last array and its last used slot.

So the bytes depend on the bitmap's history (node slots, array capacity), not only on its
values. Paimon's union deserializes the accumulator, ``or``s the input into it (existing high keys
``ior`` their container in place, new ones get a clone appended and a leaf inserted),
``runOptimize``s and serializes; this module replays exactly that, node for node, with the
container types Java's ``ior`` and ``runOptimize`` produce.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

from lake_assets.lsm.merge_engine.roaring64_art import (
    Node,
    Reader,
    Roaring64FormatError,
    art_find,
    art_insert,
    leaves,
    read_node,
    write_node,
)

RUN, BITMAP, ARRAY = 0, 1, 2
_ARRAY_MAX = 4096  # ArrayContainer.DEFAULT_MAX_SIZE
_BITMAP_BYTES = 8192
_FULL = 65536
_NOT_TRIMMED = 0xFE  # Containers.NOT_TRIMMED_MARK (-2)


# ---------------------------------------------------------------- containers


@dataclass
class Container:
    """One 16-bit container: its type and its serialized body (``writeArray``), or its values."""

    kind: int
    cardinality: int
    body: bytes | None = None
    _values: np.ndarray | None = None

    def values(self) -> np.ndarray:
        """The sorted uint16 values, as int64."""
        if self._values is None:
            assert self.body is not None
            if self.kind == ARRAY:
                self._values = np.frombuffer(self.body, dtype="<u2").astype(np.int64)
            elif self.kind == BITMAP:
                bits = np.unpackbits(np.frombuffer(self.body, dtype=np.uint8), bitorder="little")
                self._values = np.flatnonzero(bits).astype(np.int64)
            else:
                pairs = np.frombuffer(self.body, dtype="<u2", offset=2).astype(np.int64).reshape(-1, 2)
                lengths = pairs[:, 1] + 1
                starts = np.repeat(pairs[:, 0] - np.cumsum(lengths) + lengths, lengths)
                self._values = np.arange(int(lengths.sum()), dtype=np.int64) + starts
        return self._values

    def encoded(self) -> bytes:
        """The body Java's ``writeArray`` writes."""
        if self.body is None:
            self.body = _encode(self.kind, self.values())
        return self.body


def _runs(values: np.ndarray) -> int:
    return 0 if len(values) == 0 else 1 + int(np.count_nonzero(np.diff(values) != 1))


def _encode(kind: int, values: np.ndarray) -> bytes:
    if kind == ARRAY:
        return values.astype("<u2").tobytes()
    if kind == BITMAP:
        bits = np.zeros(_FULL, dtype=np.uint8)
        bits[values] = 1
        return np.packbits(bits, bitorder="little").tobytes()
    breaks = np.flatnonzero(np.diff(values) != 1) + 1
    starts = values[np.r_[0, breaks]]
    ends = values[np.r_[breaks - 1, len(values) - 1]]
    pairs = np.stack([starts, ends - starts], axis=1).astype("<u2")
    return struct.pack("<H", len(starts)) + pairs.tobytes()


def _made(kind: int, values: np.ndarray) -> Container:
    return Container(kind, len(values), None, values)


def _efficient(values: np.ndarray) -> int:
    """RunContainer.toEfficientContainer's choice for a run container holding ``values``."""
    runs, card = _runs(values), len(values)
    if 2 + 4 * runs <= min(_BITMAP_BYTES, 2 * card + 2):
        return RUN
    return ARRAY if card <= _ARRAY_MAX else BITMAP


def ior(mine: Container, other: Container) -> Container:
    """``mine.ior(other)`` as RoaringBitmap 1.0.5 types its result."""
    union = np.union1d(mine.values(), other.values())
    card = len(union)
    kinds = (mine.kind, other.kind)
    if card == _FULL:
        return _made(RUN, union)  # every path returns RunContainer.full() or a full run
    if kinds == (ARRAY, ARRAY):
        return _made(ARRAY if card <= _ARRAY_MAX else BITMAP, union)
    if kinds in ((ARRAY, RUN), (RUN, ARRAY)):
        return _made(_efficient(union), union)  # RunContainer.or / ior(ArrayContainer)
    if kinds == (RUN, RUN):
        return _made(RUN if 2 + 4 * _runs(union) < _BITMAP_BYTES else BITMAP, union)  # toBitmapIfNeeded
    return _made(BITMAP, union)  # any other pair with a bitmap


def run_optimized(c: Container) -> Container:
    """Roaring64Bitmap.runOptimize: a container becomes a run container when that is smaller;
    a run container stays one (only RunContainer results replace)."""
    if c.kind == RUN:
        return c
    values = c.values()
    size = 2 * len(values) if c.kind == ARRAY else _BITMAP_BYTES
    return _made(RUN, values) if size > 2 + 4 * _runs(values) else c


# ---------------------------------------------------------------- the bitmap


@dataclass
class Roaring64:
    """A deserialized Roaring64Bitmap: its tree, key count and container arrays as Java holds them."""

    root: Node | None = None
    key_count: int = 0
    arrays: list[list[Container | None]] = field(default_factory=list)
    container_count: int = 0
    first_level: int = -1
    second_level: int = 0

    def container(self, idx: int) -> Container:
        c = self.arrays[idx >> 32][idx & 0xFFFFFFFF]
        if c is None:
            raise Roaring64FormatError(f"leaf points at empty container slot {idx}")
        return c

    def add_container(self, c: Container) -> int:
        """Containers.addContainer: the next slot, the array growing by half when full."""
        if self.first_level == -1:
            self.arrays.append([None])
            self.first_level, self.second_level = self.first_level + 1, 0
        else:
            self.second_level += 1
        slots = self.arrays[self.first_level]
        need = self.second_level + 1
        if need > len(slots):
            grown = len(slots) + (len(slots) >> 1)
            slots.extend([None] * (max(grown, need) - len(slots)))
        slots[self.second_level] = c
        self.container_count += 1
        return (self.first_level << 32) | self.second_level

    def or_(self, other: Roaring64) -> None:
        """Roaring64Bitmap.or: per high key of ``other`` in key order, ior or append a copy."""
        for leaf in leaves(other.root):
            theirs = other.container(leaf.container_idx)
            idx = art_find(self.root, leaf.leaf_key)
            if idx < 0:
                copy = Container(theirs.kind, theirs.cardinality, theirs.body, theirs._values)
                self.root = art_insert(self.root, leaf.leaf_key, 0, self.add_container(copy))
                self.key_count += 1
            else:
                self.arrays[idx >> 32][idx & 0xFFFFFFFF] = ior(self.container(idx), theirs)

    def run_optimize(self) -> None:
        """Roaring64Bitmap.runOptimize over every container (`run_optimized`); the run counts of
        all array containers come from one numpy pass, not one per container."""
        arrays: list[tuple[list[Container | None], int, Container]] = []
        for slots in self.arrays:
            for i, c in enumerate(slots):
                if c is None or c.kind == RUN:
                    continue
                if c.kind == BITMAP:
                    slots[i] = run_optimized(c)
                elif c.cardinality >= 4:  # 2 * card > 2 + 4 * runs needs card >= 4
                    arrays.append((slots, i, c))
        if not arrays:
            return
        cards = np.array([c.cardinality for _, _, c in arrays], dtype=np.int64)
        values = np.frombuffer(b"".join(c.encoded() for _, _, c in arrays), dtype="<u2").astype(np.int64)
        starts = np.cumsum(cards) - cards
        breaks = np.r_[True, np.diff(values) != 1]
        breaks[starts] = True  # every container starts a run
        runs = np.add.reduceat(breaks.astype(np.int64), starts)
        for (slots, i, _), start, card, n_runs in zip(arrays, starts.tolist(), cards.tolist(), runs.tolist(),
                                                       strict=True):
            if 2 * card > 2 + 4 * n_runs:
                slots[i] = _made(RUN, values[start: start + card])

    def serialize(self) -> bytes:
        if self.root is None:
            return b"\x00"
        out = bytearray(b"\x01")
        out += struct.pack("<q", self.key_count)
        write_node(self.root, out)
        out += struct.pack("<i", len(self.arrays))
        for slots in self.arrays:
            out += struct.pack("<Bi", _NOT_TRIMMED, len(slots))
            for c in slots:
                if c is None:
                    out += b"\x00"
                else:
                    out += struct.pack("<BBi", 1, c.kind, c.cardinality)
                    out += c.encoded()
        out += struct.pack("<qii", self.container_count, self.first_level, self.second_level)
        return bytes(out)


_CONTAINER_HEAD = struct.Struct("<Bi")
_SLOT_MARK = struct.Struct("<B")
_RUN_COUNT = struct.Struct("<H")
_INT64, _INT32, _TAIL = struct.Struct("<q"), struct.Struct("<i"), struct.Struct("<qii")


def _read_container(r: Reader) -> Container:
    kind, card = r.unpack(_CONTAINER_HEAD)
    if kind == RUN:
        (runs,) = r.unpack(_RUN_COUNT)
        body = _RUN_COUNT.pack(runs) + r.take(4 * runs)
    elif kind == BITMAP:
        body = r.take(_BITMAP_BYTES)
    elif kind == ARRAY:
        body = r.take(2 * card)
    else:
        raise Roaring64FormatError(f"unknown container type {kind}")
    return Container(kind, card, body)


def deserialize(data: bytes) -> Roaring64:
    """Roaring64Bitmap.deserialize(DataInput)."""
    r = Reader(data)
    (tag,) = r.unpack(_SLOT_MARK)
    if tag == 0:
        return Roaring64()
    if tag != 1:
        raise Roaring64FormatError(f"unknown Roaring64Bitmap tag {tag}")
    (key_count,) = r.unpack(_INT64)
    root = read_node(r, 0)
    (n_arrays,) = r.unpack(_INT32)
    if n_arrays < 0:
        raise Roaring64FormatError("bad container array count")
    arrays: list[list[Container | None]] = []
    for _ in range(n_arrays):
        _, size = r.unpack(_CONTAINER_HEAD)
        if size < 0:
            raise Roaring64FormatError("bad container array length")
        slots: list[Container | None] = []
        for _ in range(size):
            (mark,) = r.unpack(_SLOT_MARK)
            if mark not in (0, 1):
                raise Roaring64FormatError(f"bad container mark {mark}")
            slots.append(_read_container(r) if mark else None)
        arrays.append(slots)
    count, first, second = r.unpack(_TAIL)
    if r.pos != len(data):
        raise Roaring64FormatError("trailing bytes after the Roaring64Bitmap")
    return Roaring64(root, key_count, arrays, count, first, second)


def union_serialized(acc: bytes, value: bytes) -> bytes:
    """FieldRoaringBitmap64Agg.agg of two non-null values: the serialized ``acc.or(value)``."""
    return fold_serialized([acc, value])


def fold_serialized(values: list[bytes]) -> bytes:
    """``agg`` over two or more non-null values in order, as Java folds them one by one.

    Java serializes after every step and deserializes for the next; deserialization restores
    exactly the structure serialized (node slots, container array and indexes, container types),
    so the bitmap stays in memory between steps and is serialized once.
    """
    merged = deserialize(values[0])
    for value in values[1:]:
        merged.or_(deserialize(value))
        merged.run_optimize()
    return merged.serialize()
