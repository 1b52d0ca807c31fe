"""Which column chunks of a Parquet row group a batched read on an object store fetches whole.

A batched read bounded by ``read.parquet.buffer-size`` (`parquet_read.iter_parquet`) streams each
column chunk through a buffer of its own: on an object store every refill of every column is a
ranged GET, and the reader waits for each in turn, so it makes at least one request per column
chunk where pyarrow's pre-buffered read (whole chunks, coalesced) makes one or two per row group.
On a store each request costs a round trip whatever its size (moto on loopback: ~30 ms for 4 KiB
as for 8 MiB; S3: its first-byte latency), so the count of requests is the cost.

The bound the read is held to is the sum of the columns' buffers (``columns x buffer``, printed by
`ops.compact.memory.run_reader_bytes`; a nested column has a buffer per leaf), not each column's
own buffer. So a column chunk smaller
than its buffer leaves room that a larger one may use: `plan_row_group` reads whole (pre-buffered:
pyarrow fetches the chunks together, adjacent ones in one GET) the smallest chunks while they and
a buffer for each remaining column fit the bound, and gives the remaining columns an equal share of
what is left as their buffer. A row group whose projected chunks fit the bound is read exactly as
the unbounded whole-chunk read reads it; one that does not streams only its largest chunks.

pyarrow's pre-buffered read exposes no bound of its own from Python (`pq.ParquetFile` takes no
`CacheOptions`; those bound how chunks are coalesced, never split a chunk), hence the split.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

# pyarrow's pre-buffering coalesces ranges whose gap is at most this (CacheOptions.hole_size_limit,
# its default): a whole-read chunk may bring that many bytes of a gap with it
HOLE_BYTES = 8192


@dataclass(frozen=True)
class RowGroupPlan:
    """How one row group's projected columns are read: ``whole`` columns' chunks fetched whole and
    together, ``streamed`` ones ``stream_buffer`` bytes at a time (in the projection's order)."""

    whole: tuple[str, ...]
    streamed: tuple[str, ...]
    stream_buffer: int


def _leaves(t: pa.DataType) -> int:
    """The Parquet leaf columns a field of type ``t`` is stored in."""
    if pa.types.is_struct(t):
        return sum(_leaves(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_map(t):
        return _leaves(t.key_type) + _leaves(t.item_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _leaves(t.value_type)
    return 1


def column_chunk_bytes(md: pq.FileMetaData, arrow_schema: pa.Schema, row_group: int) -> dict[str, tuple[int, int]]:
    """Per top-level column of the file: the compressed bytes of its chunks in ``row_group`` (all
    its leaves) and how many leaf columns (buffered streams) it has."""
    rg = md.row_group(row_group)
    out: dict[str, tuple[int, int]] = {}
    leaf = 0
    for field in arrow_schema:
        n = 1 if md.num_columns == len(arrow_schema) else _leaves(field.type)
        out[field.name] = (sum(rg.column(j).total_compressed_size for j in range(leaf, leaf + n)), n)
        leaf += n
    if leaf != md.num_columns:
        raise ValueError(f"the Arrow schema maps to {leaf} leaf columns, the footer has {md.num_columns}")
    return out


def plan_row_group(chunks: dict[str, tuple[int, int]], columns: Sequence[str], buffer_bytes: int) -> RowGroupPlan:
    """Split ``columns`` (top-level names of ``chunks``: bytes and leaf count per column, see
    `column_chunk_bytes`) into the whole-read and the streamed ones, within the bound of
    ``buffer_bytes`` per leaf column: the smallest chunks whole (each with a coalescing gap) while
    they and ``buffer_bytes`` per leaf of every other column fit; the others streamed with an
    equal share of the rest, at least ``buffer_bytes``."""
    # what streaming every column would hold: a buffer per leaf column (one per top-level column
    # of a flat file: the compaction bound's count)
    streamed_leaves = sum(chunks[c][1] for c in columns)
    budget = streamed_leaves * buffer_bytes
    by_size = sorted(columns, key=lambda c: chunks[c][0])
    whole_bytes = 0
    whole: list[str] = []
    for name in by_size:
        size, leaves = chunks[name]
        if whole_bytes + size + HOLE_BYTES + (streamed_leaves - leaves) * buffer_bytes > budget:
            break  # sorted by size: no larger chunk fits either
        whole.append(name)
        whole_bytes += size + HOLE_BYTES
        streamed_leaves -= leaves
    chosen = set(whole)
    streamed = tuple(c for c in columns if c not in chosen)
    share = (budget - whole_bytes) // streamed_leaves if streamed_leaves else 0
    return RowGroupPlan(tuple(c for c in columns if c in chosen), streamed, max(buffer_bytes, share))


__all__ = ["HOLE_BYTES", "RowGroupPlan", "column_chunk_bytes", "plan_row_group"]
