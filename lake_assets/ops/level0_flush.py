"""A bucket's write buffer becomes level-0 files: the writer's flush of one (partition, bucket).

`TableWriter` buffers routed rows per bucket (and, when it spills, sorted runs on local disk); at a
full buffer or at `prepare_commit` each bucket's rows are sorted, merged by the merge engine and
written as level-0 data files (with ``changelog-producer = input`` the unmerged input is also
written as the bucket's changelog). `Level0Flush` does that for one bucket, on the writer's threads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from lake_assets.formats.data_file import FILE_SOURCE_APPEND, DataFileWriter
from lake_assets.lsm.lookup_merge import merges_by_lookup
from lake_assets.lsm.merge import sort_and_merge, sort_for_merge
from lake_assets.ops.dv_key_lookup import remember_written_keys
from lake_assets.ops.dv_row_cache import flushed_key, remember_written_rows
from lake_assets.ops.lookup_unit_rules import needs_old_values
from lake_assets.ops.write_spill import WriteBufferSpill, take_buffered
from lake_assets.ops.writer_state import BucketBuffer, bucket_file_writer

if TYPE_CHECKING:
    from lake_assets.spec.data_types import DataType
    from lake_assets.spec.schema import TableSchema
    from lake_assets.store.file_store import FileStore


class Level0Flush:
    """Writes one bucket's buffered rows and spilled runs as level-0 files (`flush`); made once per
    writer, with the writer's schema (fixed when the writer was made), for every bucket it flushes."""

    def __init__(self, store: FileStore, schema: TableSchema, partition_types: list[DataType],
                 spill: WriteBufferSpill | None, *, write_only: bool) -> None:
        self.store = store
        self.schema = schema
        self.options = schema.core_options
        self.is_pk = bool(schema.primary_keys)
        # a write-only writer compacts nothing inline, so nothing looks the written keys up
        self.write_only = write_only
        self.keys = list(schema.trimmed_primary_keys)
        self.partition_types = partition_types
        self._spill = spill
        self._merge_function = store.merge_function()
        # one config for every bucket's file writer (a round can touch hundreds of buckets)
        self._file_config = store.data_file_config()
        # level-0 files a lookup compaction rewrites, merging old rows in (ops/dv_old_values.py)
        self._rewritten_by_lookup = self.is_pk and merges_by_lookup(self.options) and needs_old_values(self.options)

    def flush(self, buf: BucketBuffer) -> None:
        """The bucket's runs and buffered rows become level-0 files, listed in ``buf.new_files``
        (and ``buf.new_changelog``); the buffer lets go of its rows."""
        if buf.runs:
            self._merge_runs(buf)
            return
        if not buf.tables:
            return
        opts = self.options
        if self.is_pk and opts.changelog_producer != "input":
            data = self._take_merged(buf)
        else:
            data, presorted = take_buffered(buf)
            if self.is_pk:
                # the input itself, unmerged and with its row kinds, is the changelog
                raw = data if presorted else sort_for_merge(data, self.keys, opts.sequence_fields,
                                                            opts.sequence_descending)
                buf.new_changelog.extend(self._file_writer(buf, changelog=True).write(raw, level=0))
                data = sort_and_merge(raw, self.keys, self._merge_function, opts.sequence_fields,
                                      opts.sequence_descending, presorted=True)
        files = self._file_writer(buf).write(data, level=0, file_source=FILE_SOURCE_APPEND)
        if not self.write_only:  # the inline compaction looks these keys up next (deletion vectors)
            remember_written_keys(self.store, buf.partition, buf.bucket, files, data)
            if self._rewritten_by_lookup:  # ... and rewrites these rows through the merge
                remember_written_rows(
                    files, data, lambda m: flushed_key(self.store.data_file_path(buf.partition, buf.bucket, m), m,
                                                       self.schema.id), self.options.lookup_cache_max_memory_size,
                    self.store.paths.root)
        buf.new_files.extend(files)
        self.store.fault_point("write.after_data_files")

    def _file_writer(self, buf: BucketBuffer, changelog: bool = False) -> DataFileWriter:
        return bucket_file_writer(self.store, self.schema, buf, self._file_config, self.partition_types,
                                  changelog=changelog)

    def _merge_chunk(self, chunk: pa.Table) -> pa.Table:
        """The merge engine over ``chunk``'s records (all versions of each key it holds)."""
        return sort_and_merge(chunk, self.keys, self._merge_function, self.options.sequence_fields,
                              self.options.sequence_descending)

    def _take_merged(self, buf: BucketBuffer) -> pa.Table:
        """The bucket's buffered rows sorted and merged (one copy, as a flush makes); the buffer
        lets go of them."""
        data, presorted = take_buffered(buf)
        return sort_and_merge(data, self.keys, self._merge_function, self.options.sequence_fields,
                              self.options.sequence_descending, presorted=presorted)

    def _merge_runs(self, buf: BucketBuffer) -> None:
        """Merge the bucket's spilled runs and buffered rows into level-0 files (rolled at the
        target file size), then drop the runs."""
        assert self._spill is not None
        self._spill.merge_into(buf, self._merge_chunk, self._file_writer(buf))
        self.store.fault_point("write.after_data_files")
