"""The adaptive radix tree (ART) of Java's ``Roaring64Bitmap`` (RoaringBitmap 1.0.5): nodes, insertion
and serialization, replayed exactly as Java builds them (see `roaring64_bitmap` for the whole
format).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np

NODE4, NODE16, NODE48, NODE256, LEAF = 0, 1, 2, 3, 4
_EMPTY_SLOT = 0xFF


class Roaring64FormatError(ValueError):
    """Bytes that are not a Roaring64Bitmap serialization."""


# ---------------------------------------------------------------- the tree


@dataclass
class Node:
    """An ART node: ``keys`` are Node4/16's raw key bytes (by position), Node48's 256-byte slot map,
    unused by Node256 and leaves; ``children`` Node4/16 by position, Node48 by slot, Node256 by key."""

    kind: int
    prefix: bytes = b""
    count: int = 0
    keys: bytearray = field(default_factory=bytearray)
    children: list[Node | None] = field(default_factory=list)
    leaf_key: bytes = b""
    container_idx: int = 0

    def child_keys(self) -> list[int]:
        """The key bytes of the children, ascending."""
        if self.kind in (NODE4, NODE16):
            return list(self.keys[: self.count])
        if self.kind == NODE48:
            return [k for k in range(256) if self.keys[k] != _EMPTY_SLOT]
        return [k for k in range(256) if self.children[k] is not None]

    def ordered_children(self) -> list[Node]:
        """The children in key order."""
        if self.kind in (NODE4, NODE16):
            return [c for c in self.children[: self.count] if c is not None]
        if self.kind == NODE48:
            return [self.children[self.keys[k]] for k in self.child_keys()]  # type: ignore[misc]
        return [c for c in self.children if c is not None]

    def find(self, key_byte: int) -> int:
        """The position of the child for ``key_byte`` (Node48/256: the key byte itself), else -1."""
        if self.kind in (NODE4, NODE16):
            ks = self.keys[: self.count]
            return ks.index(key_byte) if key_byte in ks else -1
        if self.kind == NODE48:
            return key_byte if self.keys[key_byte] != _EMPTY_SLOT else -1
        return key_byte if self.children[key_byte] is not None else -1

    def child(self, pos: int) -> Node:
        c = self.children[self.keys[pos]] if self.kind == NODE48 else self.children[pos]
        assert c is not None
        return c

    def replace(self, pos: int, node: Node) -> None:
        if self.kind == NODE48:
            self.children[self.keys[pos]] = node
        else:
            self.children[pos] = node


def _leaf(key: bytes, idx: int) -> Node:
    return Node(LEAF, leaf_key=key, container_idx=idx)


def _node4(prefix: bytes) -> Node:
    return Node(NODE4, prefix, 0, bytearray(4), [None] * 4)


def _sorted_insert(node: Node, child: Node, key_byte: int) -> None:
    """Node4/Node16 insertion: the key goes to position ``count``, then an insertion sort of the
    used positions (Node.sortSmallByteArray, unsigned bytes)."""
    n = node.count
    node.keys[n] = key_byte
    node.children[n] = child
    node.count = n + 1
    order = sorted(range(n + 1), key=lambda i: node.keys[i])
    keys = [node.keys[i] for i in order]
    kids = [node.children[i] for i in order]
    node.keys[: n + 1] = bytes(keys)
    node.children[: n + 1] = kids


def insert_leaf(node: Node, child: Node, key_byte: int) -> Node:
    """Node.insertLeaf: add a child, growing Node4 -> 16 -> 48 -> 256 when full."""
    if node.kind == NODE4:
        if node.count < 4:
            _sorted_insert(node, child, key_byte)
            return node
        grown = Node(NODE16, node.prefix, 4, bytearray(node.keys[:4]) + bytearray(12),
                     list(node.children[:4]) + [None] * 12)
        return insert_leaf(grown, child, key_byte)
    if node.kind == NODE16:
        if node.count < 16:
            _sorted_insert(node, child, key_byte)
            return node
        slots = bytearray([_EMPTY_SLOT]) * 256
        kids: list[Node | None] = [None] * 48
        for i in range(16):
            slots[node.keys[i]] = i
            kids[i] = node.children[i]
        return insert_leaf(Node(NODE48, node.prefix, 16, slots, kids), child, key_byte)
    if node.kind == NODE48:
        if node.count < 48:
            pos = node.count
            if node.children[pos] is not None:
                pos = node.children.index(None)
            node.children[pos] = child
            node.keys[key_byte] = pos
            node.count += 1
            return node
        wide: list[Node | None] = [None] * 256
        for k in node.child_keys():
            wide[k] = node.children[node.keys[k]]
        return insert_leaf(Node(NODE256, node.prefix, node.count, bytearray(), wide), child, key_byte)
    node.children[key_byte] = child
    node.count += 1
    return node


def _mismatch(a: bytes, b: bytes) -> int:
    """java.util.Arrays.mismatch: first differing index, the shorter length when one is a prefix
    of the other, -1 when equal."""
    for i in range(min(len(a), len(b))):
        if a[i] != b[i]:
            return i
    return -1 if len(a) == len(b) else min(len(a), len(b))


def art_insert(node: Node | None, key: bytes, depth: int, idx: int) -> Node:
    """Art.insert(node, key, depth, containerIdx) for a key the tree does not hold."""
    if node is None:
        return _leaf(key, idx)
    if node.kind == LEAF:
        common = _mismatch(node.leaf_key[depth:], key[depth:])
        node.prefix = b""
        fresh = _node4(key[depth: depth + common])
        fresh.count = 0
        insert_leaf(fresh, node, node.leaf_key[depth + common])
        insert_leaf(fresh, _leaf(key, idx), key[depth + common])
        return fresh
    if node.prefix:
        pl = len(node.prefix)
        mis = _mismatch(node.prefix, key[depth:])
        if mis != pl:
            fresh = _node4(node.prefix[:mis])
            insert_leaf(fresh, node, node.prefix[mis])
            node.prefix = node.prefix[mis + 1:]
            insert_leaf(fresh, _leaf(key, idx), key[mis + depth])
            return fresh
        depth += pl
    pos = node.find(key[depth])
    if pos >= 0:
        child = node.child(pos)
        fresh = art_insert(child, key, depth + 1, idx)
        if fresh is not child:
            node.replace(pos, fresh)
        return node
    return insert_leaf(node, _leaf(key, idx), key[depth])


def art_find(node: Node | None, key: bytes) -> int:
    """The container index of ``key``, else -1 (Art.findByKey)."""
    depth = 0
    while node is not None:
        if node.kind == LEAF:
            return node.container_idx if node.leaf_key[depth:] == key[depth:] else -1
        if node.prefix:
            if key[depth: depth + len(node.prefix)] != node.prefix:
                return -1
            depth += len(node.prefix)
        pos = node.find(key[depth])
        if pos < 0:
            return -1
        node = node.child(pos)
        depth += 1
    return -1


def leaves(node: Node | None) -> list[Node]:
    """The leaves in key order."""
    out: list[Node] = []
    stack = [node] if node is not None else []
    while stack:
        n = stack.pop()
        if n.kind == LEAF:
            out.append(n)
        else:
            stack.extend(reversed(n.ordered_children()))
    return out


def write_node(node: Node, out: bytearray) -> None:
    stack = [node]
    while stack:
        n = stack.pop()
        out += struct.pack("<BhB", n.kind, n.count, len(n.prefix)) + n.prefix
        if n.kind == LEAF:
            out += n.leaf_key + struct.pack("<q", n.container_idx)
            continue
        if n.kind == NODE4:
            out += bytes(n.keys[:4][::-1])
        elif n.kind == NODE16:
            out += bytes(n.keys[:8][::-1]) + bytes(n.keys[8:16][::-1])
        elif n.kind == NODE48:
            out += b"".join(bytes(n.keys[i: i + 8][::-1]) for i in range(0, 256, 8))
        else:
            bits = np.zeros(256, dtype=np.uint8)
            bits[[k for k in range(256) if n.children[k] is not None]] = 1
            out += np.packbits(bits, bitorder="little").tobytes()
        stack.extend(reversed(n.ordered_children()))


class Reader:
    """Reads a byte string front to back, refusing to run past its end."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.data):
            raise Roaring64FormatError("truncated Roaring64Bitmap")
        out = self.data[self.pos: end]
        self.pos = end
        return out

    def unpack(self, fmt: struct.Struct) -> tuple[Any, ...]:
        try:
            out = fmt.unpack_from(self.data, self.pos)
        except struct.error as e:
            raise Roaring64FormatError("truncated Roaring64Bitmap") from e
        self.pos += fmt.size
        return out


_HEADER = struct.Struct("<BhB")
_LEAF_BODY = struct.Struct("<6sq")


def read_node(r: Reader, depth: int) -> Node:
    if depth > 6:
        raise Roaring64FormatError("ART deeper than 6 key bytes")
    kind, count, prefix_len = r.unpack(_HEADER)
    if prefix_len > 6 or count < 0:
        raise Roaring64FormatError("bad ART node header")
    prefix = r.take(prefix_len) if prefix_len else b""
    if kind == LEAF:
        key, idx = r.unpack(_LEAF_BODY)
        return Node(LEAF, prefix, count, leaf_key=key, container_idx=idx)
    if kind == NODE4:
        node = Node(NODE4, prefix, count, bytearray(r.take(4)[::-1]), [None] * 4)
        limit = 4
    elif kind == NODE16:
        raw = r.take(16)
        node = Node(NODE16, prefix, count, bytearray(raw[:8][::-1] + raw[8:][::-1]), [None] * 16)
        limit = 16
    elif kind == NODE48:
        raw = r.take(256)
        slots = bytearray(b"".join(raw[i: i + 8][::-1] for i in range(0, 256, 8)))
        node = Node(NODE48, prefix, count, slots, [None] * 48)
        limit = 48
    elif kind == NODE256:
        node = Node(NODE256, prefix, count, bytearray(), [None] * 256)
        limit = 256
        bits = np.unpackbits(np.frombuffer(r.take(32), dtype=np.uint8), bitorder="little")
        present = np.flatnonzero(bits).tolist()
    else:
        raise Roaring64FormatError(f"unknown ART node type {kind}")
    if not 0 < count <= limit:
        raise Roaring64FormatError("bad ART child count")
    kids = [read_node(r, depth + 1) for _ in range(count)]
    if kind in (NODE4, NODE16):
        node.children[:count] = kids
    elif kind == NODE48:
        order = [k for k in range(256) if node.keys[k] != _EMPTY_SLOT]
        if len(order) != count or any(node.keys[k] >= 48 for k in order):
            raise Roaring64FormatError("bad Node48 slot map")
        for k, kid in zip(order, kids, strict=True):
            node.children[node.keys[k]] = kid
    else:
        if len(present) != count:
            raise Roaring64FormatError("bad Node256 bitmap")
        for k, kid in zip(present, kids, strict=True):
            node.children[k] = kid
    return node


