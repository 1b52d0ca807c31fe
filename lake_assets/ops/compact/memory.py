"""What bounds a compaction unit's memory, from the table's options (issue 17 §2).

A unit that streams (an interval of more than ``compaction.merge-rows`` input rows) holds:

- its merge step: rows gathered until at least ``compaction.merge-rows``, one step at most that
  many more (`lsm.merge_reader.merge_sorted`), so at most about twice ``compaction.merge-rows``,
  and the merged rows of that step (no more rows than its input) while they are written;
- one batch per sorted run it merges: ``read.batch-size`` rows (65,536 when unset), fewer when
  the unit merges many runs, so that the runs' batches together stay within
  ``compaction.merge-rows`` down to `MIN_RUN_BATCH_ROWS` rows per run (`run_batch_rows`);
  at most ``sort-spill-threshold`` runs at once (`ops.compact.fan_in`: the excess is merged
  into local spill runs first, in merges of at most that many inputs). A fold holds the same
  as the unit's own merge - one step's input and its sorted output, one batch per input - as
  each step is released once it is written to the spill run (before round 8 of issue 17 §2 the
  fold also held its first step and the previous one: up to three steps).

- the Parquet file each of those runs is read from, beside its batch: per leaf column read (a
  STRUCT, ARRAY or MAP column is one column chunk per leaf: `run_read_columns`), the
  ``read.parquet.buffer-size`` bytes of the column chunk it reads at a time plus the data page
  it decodes, the column's decoded dictionary and a compressed page a refill cut
  (`PARQUET_PAGE_BYTES` each), not the whole
  compressed row group (`run_reader_bytes`; with the option 0 a whole compressed file per run,
  up to ``target-file-size``). On an object store a column asks for at least
  `FileIO.min_chunked_read` (8 MiB on S3: each ask is a GET) and the store's client caches
  nothing beyond it (`FileIO.open_input_chunked`): the bound takes the store's figure. There the
  columns' asks are one budget, not each column's own: a row group's smaller chunks are read
  whole and fetched together while they and an ask for every other column fit it, the larger
  ones streamed with what is left (`formats.parquet_chunk_plan`: fewer GETs, the same bound). An ORC
  file holds a stripe (``orc.stripe.size``), an Avro file a block: the Parquet figure is the
  one counted.

The output writer holds no rows between steps: each merged step is one row group of the open
file, and parquet-cpp keeps about 16 bytes a row of the last one (its column writers), not the
file's rows; so ``target-file-size`` does not enter the bound (Java's writer buffers a row group
up to ``parquet.block.size`` instead).

These are maxima that a unit reaches only with large enough inputs: a step is gathered up to
twice ``compaction.merge-rows`` only when its inputs are that dense, a run's batch is its whole
file when the file is smaller, and a reader's buffers hold a whole column chunk when it is below
``read.parquet.buffer-size``. So the peak of the same layout grows with the files (level-0 files
of 2,500 to 40,000 rows in `bench/bench_memory.py --many-runs 200` at 4M to 64M rows) towards
the bound, not past it.

An append table's unit reads its files ``read.batch-size`` rows at a time and writes them in
row groups of ``compaction.merge-rows`` rows (at most one read batch more).

Files are read batch by batch on the unit's own thread (not Arrow's thread pool, whose heaps
keep what they freed where no release reaches them), and each unit gives its thread's freed
allocator pages back when it ends (`ops.allocator.release_thread_memory`). Up to
``compaction.parallelism`` units run at once: `compaction_rows_bound` and
`compaction_reader_bytes` multiply. Measured in `bench/bench_memory.py`, which prints these
bounds beside the peaks.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from lake_assets.formats.file_layout import file_arrow_schema
from lake_assets.ops.compact.fan_in import sort_spill_threshold
from lake_assets.ops.streaming_read import DEFAULT_BATCH_ROWS

if TYPE_CHECKING:
    from lake_assets.io.file_io import FileIO
    from lake_assets.options import CoreOptions
    from lake_assets.spec.schema import TableSchema

# ``compaction.merge-rows`` when unset: large enough that the merge's per-step work (a sort, a
# gather, one Parquet row group per step) is amortized, small enough for two units at once to
# stay within about 200 MiB of Arrow data at ~80 bytes a row.
DEFAULT_MERGE_ROWS = 256 * 1024
# The fewest rows a sorted run is read in when many runs share the merge: below this, per-batch
# overheads (a reader call, a frontier search) dominate; the runs' batches then exceed
# ``compaction.merge-rows`` (runs x this), which `compaction_rows_bound` says.
MIN_RUN_BATCH_ROWS = 1024
# A Parquet data page and a dictionary page: parquet-java's and pyarrow's writers cut both at
# 1 MiB (``parquet.page.size``, ``parquet.dictionary.page.size``). A column reader holds one
# decoded data page and the decoded dictionary beside its buffered bytes, and the compressed page
# a buffer refill cut, which pyarrow reads whole beside the buffer (measured: a string column
# with a fallen-back dictionary held 2.8 MiB beyond its 8 MiB buffer, bench/RESULTS.md "round 2");
# files written with larger pages hold more.
PARQUET_PAGE_BYTES = 1024 * 1024
PAGES_PER_COLUMN = 3


def merge_rows(options: CoreOptions) -> int:
    """``compaction.merge-rows``: rows a unit gathers per merge step (and the input rows up to
    which an interval is read whole), `DEFAULT_MERGE_ROWS` when unset."""
    configured = options.compaction_merge_rows
    return DEFAULT_MERGE_ROWS if configured is None else configured


def read_batch_rows(options: CoreOptions) -> int:
    """``read.batch-size``: the most rows a sorted run is read in (`DEFAULT_BATCH_ROWS` unset)."""
    configured = options.read_batch_size
    return DEFAULT_BATCH_ROWS if configured is None else configured


def run_batch_rows(chunk_rows: int, batch_rows: int, runs: int) -> int:
    """Rows per read batch of each of ``runs`` sorted runs merged with steps of ``chunk_rows``:
    ``batch_rows``, or an equal share of ``chunk_rows`` when that is smaller, but at least
    `MIN_RUN_BATCH_ROWS` (never more than ``batch_rows``)."""
    share = max(MIN_RUN_BATCH_ROWS, chunk_rows // max(1, runs))
    return max(1, min(batch_rows, share))


@dataclass(frozen=True)
class UnitRowsBound:
    """The rows one streaming unit holds at most, by what holds them."""

    merge_input: int  # rows gathered for one merge step
    merge_output: int  # that step's merged rows, while they are written
    run_batches: int  # one read batch per sorted run

    @property
    def total(self) -> int:
        return self.merge_input + self.merge_output + self.run_batches


def unit_rows_bound(options: CoreOptions, runs: int) -> UnitRowsBound:
    """The rows a streaming unit merging ``runs`` sorted runs holds at most (a step also takes
    the frontier key's other versions, at most one per run). Beyond ``sort-spill-threshold``
    runs the excess is merged into spill runs first, each merge with at most that many inputs
    (`ops.compact.fan_in`), so the bound stops growing there (unless the spill disk is full)."""
    runs = min(runs, sort_spill_threshold(options))
    chunk = merge_rows(options)
    step = 2 * chunk + runs
    return UnitRowsBound(step, step, runs * run_batch_rows(chunk, read_batch_rows(options), runs))


def compaction_rows_bound(options: CoreOptions, runs: int, units: int) -> int:
    """The rows ``units`` streaming units at once, each merging ``runs`` sorted runs, hold at most."""
    return units * unit_rows_bound(options, runs).total


def leaf_columns(fields: Iterable[pa.Field]) -> int:
    """Parquet leaf columns of ``fields``: a struct's fields, a list's element and a map's key and
    value counted by their own leaves (each leaf is a column chunk of its own, read through a
    buffer of its own)."""
    count = 0
    for field in fields:
        t = field.type
        if pa.types.is_struct(t):
            count += leaf_columns(t.field(i) for i in range(t.num_fields))
        elif pa.types.is_map(t):
            count += leaf_columns((t.key_field, t.item_field))
        elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            count += leaf_columns((t.value_field,))
        else:
            count += 1
    return count


def run_read_columns(schema: TableSchema) -> int:
    """The leaf columns a sorted run's reader reads from a data file written under ``schema``:
    keys, sequence number, row kind and values, nested ones by their leaves (`leaf_columns`)."""
    return leaf_columns(file_arrow_schema(schema))


def run_reader_bytes(options: CoreOptions, columns: int, file_io: FileIO | None = None) -> int:
    """Bytes the reader of one sorted run's Parquet file holds beside its read batch, reading
    ``columns`` leaf columns (`run_read_columns`: a nested column has one per leaf): per leaf
    the ``read.parquet.buffer-size`` bytes of its chunk read at a time (on ``file_io``'s store:
    object stores read at least `FileIO.min_chunked_read`; None: local disk), a decoded data
    page, a decoded dictionary page and a cut compressed page (`PAGES_PER_COLUMN` x
    `PARQUET_PAGE_BYTES`); with the option 0 (whole column chunks) a whole compressed file, up
    to ``target-file-size``."""
    buffer = options.read_parquet_buffer_size
    if file_io is not None:
        buffer = file_io.chunked_read_bytes(buffer)
    if buffer == 0:
        return options.target_file_size
    return columns * (buffer + PAGES_PER_COLUMN * PARQUET_PAGE_BYTES)


def compaction_reader_bytes(options: CoreOptions, runs: int, units: int, columns: int,
                            file_io: FileIO | None = None) -> int:
    """Bytes the file readers of ``units`` streaming units at once hold beside their batches,
    each unit merging ``runs`` sorted runs of ``columns`` leaf columns (`run_read_columns`; at most
    ``sort-spill-threshold`` runs open at once: the spill runs' readers hold one batch), on
    ``file_io``'s store (`run_reader_bytes`)."""
    return units * min(runs, sort_spill_threshold(options)) * run_reader_bytes(options, columns, file_io)
