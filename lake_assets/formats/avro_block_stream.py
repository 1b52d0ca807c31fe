"""An Avro object container read from a stream a block at a time (docs/format.md §4).

`AvroBlockStream` reads the header, then each block as it is needed, through a read-ahead buffer:
it holds at most one block and one read-ahead, whatever the file's size. `PlainContainer` serves
the decompressed blocks as an uncompressed container to fastavro's reader, which decodes a block
at a time, so a caller that takes N records at a time holds N decoded records and one block.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from lake_assets.formats.avro_container import (
    _MAGIC,
    _SYNC_SIZE,
    AvroError,
    _encode_header,
    _parse_header,
    _read_long,
    _write_long,
)

# Bytes asked of the source at a time (more when a block is bigger): about one of Java's blocks
# (its sync interval is 64,000 bytes), so a file of small blocks costs few reads.
READ_AHEAD_BYTES = 64 * 1024
# The most bytes asked of the source at once: a corrupt block size must not make a reader
# allocate it (pyarrow's files allocate what read(n) asks for); bigger blocks take several reads.
MAX_READ_BYTES = 16 * 1024 * 1024
# A varint of a long takes at most 10 bytes; a block starts with two.
_BLOCK_PREFIX_MAX = 20


class AvroBlockStream:
    """The header and blocks of an Avro container, read from ``source`` (``read(n)`` -> bytes,
    fewer only at the end) as they are needed."""

    def __init__(self, source: Any, read_ahead: int | None = None) -> None:
        self._source = source
        self._read_ahead = max(1, READ_AHEAD_BYTES if read_ahead is None else read_ahead)
        self._buf = b""
        self._pos = 0  # the next unread byte of _buf
        self._eof = False

    def _fill(self, need: int) -> bool:
        """Have at least ``need`` unread bytes buffered (False: the source ended first). Reads
        the shortfall or a read-ahead, whichever is more; consumed bytes are dropped first."""
        have = len(self._buf) - self._pos
        if have >= need:
            return True
        parts = [self._buf[self._pos :]]
        self._buf, self._pos = b"", 0
        while have < need and not self._eof:
            chunk = self._source.read(min(max(need - have, self._read_ahead), MAX_READ_BYTES))
            if not chunk:
                self._eof = True
                break
            parts.append(chunk)
            have += len(chunk)
        self._buf = b"".join(parts)
        return have >= need

    def header(self) -> tuple[dict[str, bytes], bytes]:
        """The file's metadata and sync marker (read once, before the blocks)."""
        need = self._read_ahead
        while True:
            complete = self._fill(need)
            if len(self._buf) >= len(_MAGIC) and self._buf[: len(_MAGIC)] != _MAGIC:
                raise AvroError("not an Avro object container file (bad magic)")
            try:
                meta, sync, end = _parse_header(self._buf)
            except AvroError:
                if not complete:  # the whole rest of the file is buffered: it is bad
                    raise
                need = 2 * len(self._buf)  # a header bigger than the read-ahead
                continue
            self._pos = end
            return meta, sync

    def blocks(self, sync: bytes) -> Iterator[tuple[int, bytes]]:
        """(record count, raw block bytes) of every block, in file order, read as iterated."""
        while self._fill(1):
            self._fill(_BLOCK_PREFIX_MAX)
            buf = self._buf
            count, pos = _read_long(buf, self._pos)
            size, pos = _read_long(buf, pos)
            if count < 0 or size < 0:
                raise AvroError("truncated data block")
            self._pos = pos
            if not self._fill(size + _SYNC_SIZE):
                raise AvroError("truncated data block")
            buf, pos = self._buf, self._pos
            block = buf[pos : pos + size]
            if buf[pos + size : pos + size + _SYNC_SIZE] != sync:
                raise AvroError("sync marker mismatch")
            self._pos = pos + size + _SYNC_SIZE
            yield count, block

    @property
    def buffered_bytes(self) -> int:
        """Bytes read from the source and not yet handed on (tests count them)."""
        return len(self._buf) - self._pos


class PlainContainer:
    """A read-only file over an uncompressed Avro container: ``header`` (codec ``null``), then
    each of ``blocks`` decompressed by ``decompress``, made when fastavro reads up to it."""

    def __init__(self, header: bytes, sync: bytes, blocks: Iterator[tuple[int, bytes]],
                 decompress: Callable[[bytes], bytes]) -> None:
        self._sync = sync
        self._blocks = blocks
        self._decompress = decompress
        self._chunks: list[bytes] = [header]  # served in order; the first from _offset on
        self._offset = 0

    def _next_block(self) -> bool:
        for count, block in self._blocks:
            plain = self._decompress(block)
            self._chunks += [_write_long(count), _write_long(len(plain)), plain, self._sync]
            return True
        return False

    def read(self, n: int = -1) -> bytes:
        """Up to ``n`` bytes (all that is left when negative); b"" at the end."""
        out: list[bytes] = []
        while n != 0:
            if not self._chunks and not self._next_block():
                break
            chunk = self._chunks[0]
            take = len(chunk) - self._offset if n < 0 else min(n, len(chunk) - self._offset)
            out.append(chunk[self._offset : self._offset + take])
            self._offset += take
            if n > 0:
                n -= take
            if self._offset == len(chunk):
                self._chunks.pop(0)
                self._offset = 0
        return out[0] if len(out) == 1 else b"".join(out)


def plain_header(schema_json: bytes, sync: bytes) -> bytes:
    """The header of an uncompressed container of ``schema_json`` with marker ``sync``."""
    return _encode_header({"avro.schema": schema_json, "avro.codec": b"null"}, sync)
