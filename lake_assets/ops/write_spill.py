"""The table writer's spillable write buffer: full bucket buffers go to local sorted runs,
merged into level-0 files at commit (Paimon's spillable write buffer and external sort).

`TableWriter` holds a `WriteBufferSpill` (as Paimon's ``MergeTreeWriter`` holds its
``SortBufferWriteBuffer``) when its buffer spills; the merge engine sees each key's records of
every run at once, in sequence order: one merge over the commit's records, as without spilling.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pyarrow as pa

from lake_assets.formats.data_file import FILE_SOURCE_APPEND, DataFileWriter
from lake_assets.lsm.merge import sort_for_merge
from lake_assets.lsm.merge_reader import merge_sorted
from lake_assets.ops.spill import SpillDirectory, SpillStats, key_batches, spill_batch_bytes
from lake_assets.ops.writer_state import BucketBuffer
from lake_assets.parallelism import usable_cpus

if TYPE_CHECKING:
    from lake_assets.options import CoreOptions

# Rows gathered per merge step when spilled runs are merged into level-0 files.
SPILL_MERGE_ROWS = 64 * 1024


WRITER_THREAD_NAME = "lake-writer"  # the name (-<n>) of a kept thread while it serves a writer


def bucket_flush_threads() -> int:
    """Buckets the writer spills or merges into level-0 files at once (`TableWriter._each`)."""
    return usable_cpus()


def spill_merge_bound_bytes(write_buffer_size: int, max_num_file_handles: int) -> int:
    """The most bytes of run batches the writer's commit-time merges hold at once: one batch per
    merged run, at most ``local-sort.max-num-file-handles`` runs per bucket (a bucket that
    reaches it folds its runs into one first), in `bucket_flush_threads` buckets at once. A
    function of the options and the CPUs, not of the data: a merge's fan-in grows with the rows
    one commit writes to a bucket (one run per buffer fill) until it reaches that option."""
    batch = spill_batch_bytes(write_buffer_size, max_num_file_handles)
    return batch * max(1, max_num_file_handles) * bucket_flush_threads()


def take_buffered(buf: BucketBuffer) -> tuple[pa.Table, bool]:
    """The bucket's buffered rows as one table, and whether they are already in merge order (one
    routed slice is); the buffer lets go of them."""
    presorted = len(buf.tables) == 1
    data = buf.tables[0] if presorted else pa.concat_tables(buf.tables)
    buf.tables.clear()
    buf.nbytes = 0
    return data, presorted


class WriteBufferSpill:
    """Spills bucket buffers to local sorted runs of raw records and merges a bucket's runs.

    Holds the local spill directory; the writer decides when to spill (`has_room`), and turns
    the merged records into level-0 files (`merged_records`, then `drop_runs`).
    """

    def __init__(self, directory: SpillDirectory, keys: list[str], options: CoreOptions) -> None:
        self.directory = directory
        self.keys = keys
        self.sequence_fields = options.sequence_fields
        self.sequence_descending = options.sequence_descending
        # local-sort.max-num-file-handles: the most runs a bucket keeps before folding them
        self.max_runs = options.local_sort_max_num_file_handles

    @staticmethod
    def for_writer(
        options: CoreOptions, is_pk: bool, keys: list[str], spill_dir: str | None = None
    ) -> WriteBufferSpill | None:
        """The writer's spill when its write buffer spills, else None; its runs go under
        ``spill_dir`` (a resolved `spill.spill_root`; None: the system temp directory).

        Paimon leaves ``write-buffer-spillable`` unset and spills for bounded (batch) writes and on
        object stores. Writes through `TableWriter` are bounded jobs that end in `prepare_commit`,
        and a spill only happens when one commit overflows the buffer, so unset means on. Kept
        off, with today's flush-to-level-0 behaviour:
        - append tables: their files are unsorted arrival order, there is nothing to merge (Paimon
          has a separate ``write-buffer-for-append`` for them);
        - ``changelog-producer=input``: every flush must write its unmerged input as changelog
          files, and the changelog of a commit is that input, not a merge of spilled runs.
        """
        if not is_pk or options.changelog_producer == "input" or options.write_buffer_spillable is False:
            return None
        directory = SpillDirectory(compression=options.spill_compression, zstd_level=options.spill_zstd_level,
                                   max_disk_bytes=options.write_buffer_spill_max_disk_size,
                                   batch_bytes=spill_batch_bytes(options.write_buffer_size,
                                                                 options.local_sort_max_num_file_handles),
                                   parent=spill_dir)
        return WriteBufferSpill(directory, keys, options)

    @property
    def stats(self) -> SpillStats:
        """What was spilled and merged so far."""
        return self.directory.stats

    def has_room(self, nbytes: int) -> bool:
        """Whether ``nbytes`` more of spill stay within ``write-buffer-spill.max-disk-size``."""
        return self.directory.has_room(nbytes)

    def sort_chunk(self, chunk: pa.Table) -> pa.Table:
        """``chunk`` in merge order (key, then sequence), unmerged."""
        return sort_for_merge(chunk, self.keys, self.sequence_fields, self.sequence_descending)

    def _take_sorted(self, buf: BucketBuffer) -> pa.Table:
        """The bucket's buffered rows in merge order, unmerged (the buffer lets go of them)."""
        data, presorted = take_buffered(buf)
        return data if presorted else self.sort_chunk(data)

    def merged(self, inputs: list[Iterator[pa.Table]], merge: Callable[[pa.Table], pa.Table]) -> Iterator[pa.Table]:
        """``merge`` over key-ranged chunks of all inputs, in key order; memory holds one batch
        per input plus the chunk. The merge engine sees each key's records of every run at once,
        in sequence order: one merge over the commit's records, as without spilling."""
        return merge_sorted(inputs, self.keys, merge, min_rows=SPILL_MERGE_ROWS)

    def spill(self, buf: BucketBuffer) -> None:
        """Write the bucket's buffer as one sorted run of raw records to local disk."""
        data = self._take_sorted(buf)
        buf.runs.append(self.directory.write_run([data], data.schema, self.keys))
        if len(buf.runs) >= self.max_runs:
            # local-sort.max-num-file-handles bounds the fan-in of the final merge (an open file
            # and a batch per run): sort the runs into one now, as Paimon's external sort does.
            runs = buf.runs
            self.directory.count_merge(len(runs))
            folded = self.directory.write_run(self.merged([r.batches() for r in runs], self.sort_chunk),
                                              data.schema, self.keys)
            buf.runs = [folded]
            self.directory.delete(runs)

    def merge_into(self, buf: BucketBuffer, merge: Callable[[pa.Table], pa.Table],
                   writer: DataFileWriter) -> None:
        """Merge the bucket's spilled runs and buffered rows by ``merge`` into level-0 files of
        ``writer`` (rolled at the target file size, added to the bucket's new files), then delete
        the runs. A failure deletes the files begun and keeps the runs (dropped with the buffer)."""
        inputs = [run.batches() for run in buf.runs]
        if buf.tables:
            inputs.append(key_batches(self._take_sorted(buf), self.keys))
        self.directory.count_merge(len(inputs))
        rolling = writer.rolling(level=0, file_source=FILE_SOURCE_APPEND)
        try:
            for chunk in self.merged(inputs, merge):
                rolling.write(chunk)
                # written: the loop variable would hold this merge step while the generator
                # gathers and merges the next one, two steps where the bound counts one
                del chunk
            files = rolling.close()
        except BaseException:
            rolling.abort()
            raise
        buf.new_files.extend(files)
        runs, buf.runs = buf.runs, []
        self.directory.delete(runs)

    def cleanup(self) -> None:
        """Remove the local spill directory (the next spill makes a new one)."""
        self.directory.cleanup()
