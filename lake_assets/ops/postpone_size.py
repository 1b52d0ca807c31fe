"""The bytes a batch takes as postpone files: what Paimon HEAD measures when it sizes a partition.

HEAD's batch writes into real buckets stage their rows as postpone files first and decide a new
partition's bucket count from the staged files' stored size (``SparkPostponeStagedCommitter``:
``PartitionStats.fileSize`` = the sum of the staged ``DataFileMeta.fileSize``, passed to
``PostponeUtils.decideFixedBucketNum`` against ``postpone.target-size-per-bucket``). Those files
are what ``PostponeBucketFileStoreWrite`` writes: Avro (``metadata.stats-mode = none``) whenever
the row type maps to Avro, else the table's format, with ``file.compression``, keys, sequence
number and row kind included. Arrow's in-memory size is not that: uncompressed, with offsets and
validity buffers, it is several times larger for most tables (a bucket count up to a power of two
or more too high, since the count is rounded up to one).

lake_assets writes a batch into real buckets without staging it as postpone files (one write, not
two), so it measures what the staged files would take: the rows are encoded, in memory, exactly
as `lake_assets.ops.postpone_write.PostponeWriter` encodes its files (the same format, layout and
codec), up to `SAMPLE_ROWS` rows in runs spread evenly over the batch, and the encoded bytes per row,
plus one file header, are scaled to the batch's rows (`postpone_file_bytes`). A batch of many
partitions encodes one sample of the whole batch and scales each partition's Arrow size by the
sample's ratio (`postpone_bytes_per_arrow_byte`), so the measure costs `SAMPLE_ROWS` encoded
rows whatever the partition count. Up to `SAMPLE_ROWS` rows the measure is the size of the
postpone file HEAD would stage (our Avro writer's blocks are Java's ~64 KB blocks
with the same codec; the block framing differs by a few bytes per block).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from lake_assets.formats.data_file import SEQUENCE_NUMBER, VALUE_KIND, DataFileWriter
from lake_assets.ops.postpone_write import avro_mappable

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore

# Rows encoded per measure: above it the bytes per row of an even sample are scaled up (8,192
# rows measure within about 2%; a power-of-two bucket count needs no more)
SAMPLE_ROWS = 8_192
# ... taken as runs of this many neighbouring rows
SAMPLE_RUN_ROWS = 1_024


def _postpone_encoder(store: FileStore) -> DataFileWriter:
    """A writer of the table's postpone files (format, layout, codec), used for encoding only."""
    config = store.data_file_config()
    fmt = "avro" if avro_mappable(store) else config.file_format
    return DataFileWriter(store.file_io, "<memory>", store.schema, dataclasses.replace(config, file_format=fmt))


def _encoded_size(writer: DataFileWriter, data: pa.Table | None) -> int:
    """Bytes of one file holding ``data`` (table columns + sequence number + row kind), or of an
    empty file (its header and trailer) when ``data`` is None."""
    sink = pa.BufferOutputStream()
    options = writer.write_options(data, 0 if data is None else data.num_rows)
    fw = writer.format.open_writer(sink, writer.arrow_schema, writer.schema, options)
    if data is not None and data.num_rows:
        fw.write(writer._layout(data))
    fw.close()
    return int(sink.tell())


def _sample_rows(n: int) -> np.ndarray:
    """Up to `SAMPLE_ROWS` of ``n`` row positions: runs of neighbouring rows, spread evenly (a
    codec compresses neighbours - sorted keys, repeated values - as it would in the file, which
    single rows far apart would hide)."""
    if n <= SAMPLE_ROWS:
        return np.arange(n)
    run = min(SAMPLE_RUN_ROWS, SAMPLE_ROWS)
    starts = np.linspace(0, n - run, max(1, SAMPLE_ROWS // run)).astype(np.int64)
    return np.unique((starts[:, None] + np.arange(run)).ravel())


def postpone_bytes_per_arrow_byte(store: FileStore, data: pa.Table) -> float:
    """Bytes of the table's postpone files per byte of Arrow data (``nbytes``), measured on a
    sample of ``data``: scales the Arrow size of each partition of a large batch."""
    picked = _sample_rows(data.num_rows)
    rows = data if len(picked) == data.num_rows else data.take(pa.array(picked))
    rows = rows.select(list(store.schema.field_names))
    if rows.nbytes == 0:
        return 1.0
    return postpone_file_bytes(store, rows) / float(rows.nbytes)


def postpone_file_bytes(store: FileStore, data: pa.Table, kinds: np.ndarray | None = None) -> int:
    """The stored size ``data`` (rows conformed to ``store``'s table; ``kinds`` their int8 row kinds,
    inserts when None) would have as one of the table's postpone files: HEAD's staged size."""
    n = data.num_rows
    if n == 0:
        return 0
    writer = _postpone_encoder(store)
    picked = _sample_rows(n)
    rows = data if len(picked) == n else data.take(pa.array(picked))
    k = np.zeros(len(picked), np.int8) if kinds is None else np.asarray(kinds, np.int8)[picked]
    rows = rows.select(list(store.schema.field_names))
    rows = rows.append_column(SEQUENCE_NUMBER, pa.array(picked.astype(np.int64)))
    rows = rows.append_column(VALUE_KIND, pa.array(k, pa.int8()))
    total = _encoded_size(writer, rows)
    if len(picked) == n:
        return total
    header = _encoded_size(writer, None)
    return header + int(-(-(total - header) * n // len(picked)))
