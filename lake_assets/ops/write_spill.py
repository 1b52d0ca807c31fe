"""The spilling half of the table writer: full bucket buffers go to local sorted runs, merged
into level-0 files at commit (Paimon's spillable write buffer and external sort).

`TableWriter` derives from `SpillingWriter`; the merge engine sees each key's records of every
run at once, in sequence order: one merge over the commit's records, as without spilling.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pyarrow as pa

from lake_assets.formats.data_file import FILE_SOURCE_APPEND, DataFileWriter
from lake_assets.lsm.merge import sort_and_merge, sort_for_merge
from lake_assets.lsm.merge_engine.function import MergeFunction
from lake_assets.lsm.merge_reader import merge_sorted
from lake_assets.ops.spill import SpillDirectory, SpillStats, key_batches, spill_batch_bytes
from lake_assets.ops.writer_state import BucketBuffer
from lake_assets.parallelism import usable_cpus

if TYPE_CHECKING:
    from lake_assets.options import CoreOptions
    from lake_assets.store.file_store import FileStore

# Rows gathered per merge step when spilled runs are merged into level-0 files.
SPILL_MERGE_ROWS = 64 * 1024


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


class SpillingWriter:
    """Spilling of bucket buffers to local runs and their merge (a base of `TableWriter`)."""

    store: FileStore
    options: CoreOptions
    is_pk: bool
    _spill: SpillDirectory | None
    _merge_function: MergeFunction

    def _keys(self) -> list[str]:
        raise NotImplementedError

    def _file_writer(self, buf: BucketBuffer, changelog: bool = False) -> DataFileWriter:
        raise NotImplementedError

    def _spill_directory(self, opts: CoreOptions) -> SpillDirectory | None:
        """The local spill directory when the write buffer spills, else None.

        Paimon leaves ``write-buffer-spillable`` unset and spills for bounded (batch) writes and on
        object stores. Writes through this class are bounded jobs that end in `prepare_commit`,
        and a spill only happens when one commit overflows the buffer, so unset means on. Kept
        off, with today's flush-to-level-0 behaviour:
        - append tables: their files are unsorted arrival order, there is nothing to merge (Paimon
          has a separate ``write-buffer-for-append`` for them);
        - ``changelog-producer=input``: every flush must write its unmerged input as changelog
          files, and the changelog of a commit is that input, not a merge of spilled runs.
        """
        if not self.is_pk or opts.changelog_producer == "input" or opts.write_buffer_spillable is False:
            return None
        return SpillDirectory(compression=opts.spill_compression, zstd_level=opts.spill_zstd_level,
                              max_disk_bytes=opts.write_buffer_spill_max_disk_size,
                              batch_bytes=spill_batch_bytes(opts.write_buffer_size,
                                                            opts.local_sort_max_num_file_handles))

    @property
    def spill_stats(self) -> SpillStats | None:
        """What this writer spilled and merged so far (None when it does not spill)."""
        return None if self._spill is None else self._spill.stats

    @property
    def spilling(self) -> bool:
        """Whether a full write buffer spills to local disk instead of writing level-0 files."""
        return self._spill is not None

    def _merge_chunk(self, chunk: pa.Table) -> pa.Table:
        return sort_and_merge(chunk, self._keys(), self._merge_function, self.options.sequence_fields,
                              self.options.sequence_descending)

    def _sort_chunk(self, chunk: pa.Table) -> pa.Table:
        return sort_for_merge(chunk, self._keys(), self.options.sequence_fields, self.options.sequence_descending)

    def _take_sorted(self, buf: BucketBuffer) -> pa.Table:
        """The bucket's buffered rows in merge order, unmerged (the buffer lets go of them)."""
        presorted = len(buf.tables) == 1  # one routed slice is already in key order
        data = buf.tables[0] if presorted else self._sort_chunk(pa.concat_tables(buf.tables))
        buf.tables.clear()
        buf.nbytes = 0
        return data

    def _merged(self, inputs: list[Iterator[pa.Table]], merge: Callable[[pa.Table], pa.Table]) -> Iterator[pa.Table]:
        """``merge`` over key-ranged chunks of all inputs, in key order; memory holds one batch
        per input plus the chunk. The merge engine sees each key's records of every run at once,
        in sequence order: one merge over the commit's records, as without spilling."""
        return merge_sorted(inputs, self._keys(), merge, min_rows=SPILL_MERGE_ROWS)

    def _spill_buffer(self, buf: BucketBuffer) -> None:
        """Write the bucket's buffer as one sorted run of raw records to local disk."""
        assert self._spill is not None
        data = self._take_sorted(buf)
        keys = self._keys()
        buf.runs.append(self._spill.write_run([data], data.schema, keys))
        if len(buf.runs) >= self.options.local_sort_max_num_file_handles:
            # local-sort.max-num-file-handles bounds the fan-in of the final merge (an open file
            # and a batch per run): sort the runs into one now, as Paimon's external sort does.
            runs = buf.runs
            self._spill.count_merge(len(runs))
            folded = self._spill.write_run(self._merged([r.batches() for r in runs], self._sort_chunk),
                                           data.schema, keys)
            buf.runs = [folded]
            self._spill.delete(runs)

    def _merge_runs(self, buf: BucketBuffer) -> None:
        """Merge the bucket's spilled runs and buffered rows into level-0 files (rolled at the
        target file size), then drop the runs."""
        assert self._spill is not None
        inputs = [run.batches() for run in buf.runs]
        if buf.tables:
            inputs.append(key_batches(self._take_sorted(buf), self._keys()))
        self._spill.count_merge(len(inputs))
        rolling = self._file_writer(buf).rolling(level=0, file_source=FILE_SOURCE_APPEND)
        try:
            for chunk in self._merged(inputs, self._merge_chunk):
                rolling.write(chunk)
            files = rolling.close()
        except BaseException:
            rolling.abort()
            raise
        buf.new_files.extend(files)
        runs, buf.runs = buf.runs, []
        self._spill.delete(runs)
        self.store.fault_point("write.after_data_files")
