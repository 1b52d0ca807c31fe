"""Reading splits: merge-on-read of a bucket's sorted runs, vectorized with pyarrow.

Files of a bucket are grouped into sections of overlapping key ranges. A section of one file
without retract rows is read as it is; larger sections are concatenated, sorted by key and
sequence, and collapsed with the table's merge function. Memory is bounded by a section
(`lsm.run_partition.sections` groups them; `ops.streaming_read` bounds it by batches instead).
Files written under older schemas are mapped to the current schema by field id
(`ops.file_column_map`); a primary-key read drops rows of rejected keys before the merge
(`ops.key_filter`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from lake_assets.errors import ConcurrentMaintenanceError, LakeError, MissingDataFileError, SchemaError
from lake_assets.formats.data_file import SEQUENCE_NUMBER, VALUE_KIND, iter_data_file, read_data_file
from lake_assets.formats.row_mask import arrow_mask
from lake_assets.lsm.lookup_merge import merges_by_lookup, with_level
from lake_assets.lsm.merge import is_retract, sort_and_merge, winner_masks
from lake_assets.lsm.run_partition import sections
from lake_assets.ops.data_evolution_read import SYSTEM_FIELDS, check_disjoint_ranges, raw_units, read_raw
from lake_assets.ops.default_values import ColumnDefaults, prunable
from lake_assets.ops.deletion_vectors import VectorLoader, hides_level0, raw_readable
from lake_assets.ops.file_column_map import KIND_FIELD, FileColumnMap, no_columns
from lake_assets.ops.file_rows import check_rows_read, checked_row_count, row_count_error
from lake_assets.ops.key_filter import key_terms
from lake_assets.ops.not_null_history import relaxed_columns
from lake_assets.ops.plan import file_may_match
from lake_assets.ops.row_tracking import data_evolution_enabled, row_tracking_enabled
from lake_assets.ops.scan import Split
from lake_assets.predicate import Predicate
from lake_assets.spec.arrow_types import to_arrow_field
from lake_assets.spec.deletion_vector import deleted_mask
from lake_assets.spec.manifest import DataFileMeta
from lake_assets.spec.schema import TableSchema

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore


def missing_file_error(store: FileStore, exc: MissingDataFileError, snapshot_id: int | None) -> LakeError:
    """What a data file missing under a read of ``snapshot_id`` means.

    When the planned snapshot (and any long-lived changelog of it) is gone too, compaction
    replaced the file and expiry removed both after the read was planned: a race that a fresh
    plan resolves, reported as `ConcurrentMaintenanceError`. When the snapshot is still there, the
    table lost a file it references: that stays a `MissingDataFileError` (corruption).
    """
    if snapshot_id is None or store.snapshot_manager.exists(snapshot_id):
        return exc
    if store.changelog_manager().exists(snapshot_id):  # a long-lived changelog keeps its files
        return exc
    return ConcurrentMaintenanceError(
        f"Cannot read {store.name}: snapshot {snapshot_id} was expired while the read ran, and its "
        f"files were removed by compaction and expiry ({exc}); plan the read again and retry"
    )


def _exact_constant(typ: pa.DataType) -> bool:
    """Types whose partition value (from the partition row) is exactly the value in the files.

    Floats and timestamps are left out: their partition encoding could differ in the last bit or
    in sub-millisecond precision, so those columns are still decoded from the files."""
    return bool(pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_integer(typ)
                or pa.types.is_date32(typ) or pa.types.is_boolean(typ) or pa.types.is_binary(typ)
                or pa.types.is_decimal(typ))


class SplitReader:
    """Reads splits of one table as of one schema, projecting ``columns`` and applying ``predicate``."""

    def __init__(
        self,
        store: FileStore,
        schema: TableSchema,
        columns: Sequence[str] | None = None,
        predicate: Predicate | None = None,
        *,
        fill_defaults: bool = False,
    ) -> None:
        """``fill_defaults``: return each column's default value (``fields.<column>.default-value``)
        in place of its nulls, as reads of the table's rows do (`ops.default_values`); off for
        compaction and rewrites, which keep the nulls the files hold."""
        self.store = store
        self.schema = schema
        self.columns = list(columns) if columns is not None else list(schema.field_names)
        # row-tracking tables: _ROW_ID / _SEQUENCE_NUMBER when asked for; data-evolution tables
        # merge the files of a row-id range (ops/data_evolution_read.py)
        tracking = row_tracking_enabled(schema.options)
        filtered = predicate.columns if predicate is not None else set()
        self.system_columns = [c for c in SYSTEM_FIELDS if tracking and (c in self.columns or c in filtered)]
        self.data_evolution = data_evolution_enabled(schema.options)
        self.merge_units: dict[tuple[bytes, int, str], list[DataFileMeta]] = {}
        # change reads: a lone data-evolution file gives nulls in the NOT NULL columns it lacks
        self.lone_files_null_fill = False
        self.predicate = predicate
        self.is_pk = bool(schema.primary_keys)
        self.key_names = list(schema.trimmed_primary_keys)
        self.key_types = schema.types(self.key_names)
        opts = schema.core_options
        self.sequence_fields = list(opts.sequence_fields)
        self.sequence_descending = opts.sequence_descending
        self.merge_function = store.merge_function(schema)
        filter_cols = predicate.read_columns if predicate is not None else []
        needed = [c for c in self.columns if c not in self.system_columns]
        for c in filter_cols:
            if c not in needed and schema.has_field(c):
                needed.append(c)
        if self.is_pk:
            for c in (*self.key_names, *self.sequence_fields, *store.merge_extra_columns(schema)):
                if c not in needed:
                    needed.append(c)
        self.read_columns = needed
        # columns made NOT NULL after files with nulls in them were written read as nullable
        # (Java's reads return those nulls: `ops.not_null_history`)
        self.relaxed = relaxed_columns(store, schema)
        self.output_schema = pa.schema([
            SYSTEM_FIELDS[c] if c in self.system_columns else
            to_arrow_field(schema.field(c)).with_nullable(True) if c in self.relaxed else
            to_arrow_field(schema.field(c)) for c in self.columns])
        # Partition columns only output (not merged on) are not decoded from the files: every row
        # of a split holds the split's partition value, so `output_rows` adds them as constants. Not
        # a partition field outside the primary key (a cross-partition upsert table): there it is
        # a value the merge engine merges, which an aggregation's retraction may turn null.
        merge_needs = {*self.key_names, *self.sequence_fields, *store.merge_extra_columns(schema)}
        self._constants: dict[str, int] = {
            name: i for i, name in enumerate(schema.partition_keys)
            if name in needed and name not in merge_needs and _exact_constant(to_arrow_field(schema.field(name)).type)
            and (not self.is_pk or name in schema.primary_keys)
        }
        self.split_columns = [c for c in needed if c not in self._constants]
        self.key_filter = key_terms(predicate, self.key_names) if self.is_pk else None
        self.defaults = ColumnDefaults.of(schema) if fill_defaults else None
        # stats prune with the filter's terms on columns without a default only (`prunable`)
        self.prune_predicate = prunable(schema, predicate)
        self._layouts: dict[tuple[int, tuple[str, ...]], FileColumnMap] = {}
        # Whether pyarrow decodes a file's columns in its own thread pool. Turning it off saves
        # a little CPU on small files; `read_splits_ahead` turns it off for files that are a small
        # share of a pooled read (see `ops.read_ahead`), and keeps it for merges and large files.
        self.file_threads = True
        # The snapshot the splits were planned from: a file missing because that snapshot was
        # expired meanwhile is a retryable race, not corruption (see `missing_file_error`).
        self.snapshot_id: int | None = None
        # Deletion vectors of the splits' buckets (tables with deletion-vectors.enabled).
        self.vectors = VectorLoader(store)
        self.dv_raw = self.is_pk and hides_level0(schema)
        # Every level, also those a batch read skips (level 0 of deletion-vector and first-row
        # tables): a cross-partition writer's key index bootstrap must see every key a later
        # compaction makes visible (Paimon's IndexBootstrap, withLevelFilter(level -> true), 1.4+).
        self.all_levels = False
        # records read for a merge carry their file's level: a lookup table's merge takes a key's
        # level-0 records and its newest one above (lsm/lookup_merge.py)
        self.lookup_levels = self.is_pk and merges_by_lookup(opts)

    # ------------------------------------------------------------ file access
    def _layout(self, schema_id: int, columns: Sequence[str] | None = None) -> FileColumnMap:
        """How files written under ``schema_id`` map to ``columns`` (default: the read columns);
        cached, as it is the same for every file of that schema."""
        cols = tuple(self.read_columns if columns is None else columns)
        layout = self._layouts.get((schema_id, cols))
        if layout is None:
            layout = FileColumnMap.of(self.store, self.schema, schema_id, cols, self.relaxed)
            self._layouts[(schema_id, cols)] = layout  # a racing thread computes the same value
        return layout

    def _file_columns(self, meta: DataFileMeta) -> tuple[list[tuple[str, str | None]], list[str]]:
        """(current name, name in the file) per read column, matched by field id; and file columns."""
        layout = self._layout(meta.schema_id)
        return layout.wanted, layout.file_columns

    def as_read(self, written: pa.Table, meta: DataFileMeta) -> pa.Table | None:
        """What `read_file` (with system columns, no deletion vector) gives for ``meta``, a file of
        the read schema whose rows are ``written`` (the read columns and system columns by name,
        as a writer held them); None when a column is missing or of another type (then read it)."""
        if meta.schema_id != self.schema.id or written.num_rows != meta.row_count:
            return None
        data = self._layout(meta.schema_id).of_written(written)
        if data is None:
            return None
        return with_level(data, meta.level) if self.lookup_levels else data

    def _narrowing_error(self, layout: FileColumnMap, name: str, old: str) -> SchemaError:
        """Why a file's column does not fit the read schema's type: the read schema is older than
        the file's (a pinned or stale handle) and the table widened the column since (INT to
        BIGINT, say), so a value the file holds is outside the older, narrower type."""
        read_type = self.schema.field(name).type
        file_field = self.store.schema_by_id(layout.schema_id).field(old)
        return SchemaError(
            f"Cannot read {self.store.name} with its schema-{self.schema.id}: column {name} holds a value "
            f"outside {read_type} (schema-{layout.schema_id}, which wrote it, has {file_field.type}); "
            "refresh the handle")

    def read_file(
        self, split: Split, meta: DataFileMeta, with_system: bool, columns: Sequence[str] | None = None,
        *, use_threads: bool | None = None, rows: np.ndarray | None = None,
    ) -> pa.Table:
        """Read one file as the current schema's ``columns`` (default: the read columns, matched
        by field id), plus system columns; ``use_threads`` (default `file_threads`) lets pyarrow
        decode the file's columns in its own threads. ``rows`` (a bool per row of the file)
        reads those rows only, in place of what the split's deletion vector keeps."""
        layout = self._layout(meta.schema_id, columns)
        file_cols = layout.file_columns
        if with_system:
            file_cols = [*file_cols, SEQUENCE_NUMBER, VALUE_KIND]
        path = self.store.data_file_path(split.partition, split.bucket, meta)
        try:
            # a missing index file is mapped as a missing data file is (`missing_file_error`)
            keep = self.kept_rows(split, meta, read_follows=bool(file_cols)) if rows is None else rows
            # the format reader drops the rows the deletion vector deletes before it builds strings
            # (`FileFormat.read_rows`)
            threads = self.file_threads if use_threads is None else use_threads
            if not file_cols:  # only partition or system columns asked for: no column, but the rows count (and
                # as nulls the columns added since): the file's count, as Java's (`ops.file_rows`)
                total = checked_row_count(self.store, path, meta) if keep is None else int(keep.sum())
                counted = no_columns(total)
                return layout.to_read(counted, False, self._narrowing_error) if layout.wanted else counted
            raw = read_data_file(self.store.file_io, path, file_cols, meta.file_size, use_threads=threads, keep=keep)
        except MissingDataFileError as exc:
            raise missing_file_error(self.store, exc, self.snapshot_id) from None
        if keep is None:  # a mask is checked against the file's rows by `kept_rows` and the format
            check_rows_read(self.store, path, meta, raw.num_rows)
        data = layout.to_read(raw, with_system, self._narrowing_error)
        if with_system and self.lookup_levels:
            data = with_level(data, meta.level)
        if self.key_filter is not None and data.num_rows:
            # Every version of a key shares its key columns, so dropping keys the filter rejects
            # before the merge changes no result - and holds one file's matches, not the section.
            data = self.key_filter.filter_table(data)
        return data

    def iter_file(
        self,
        split: Split,
        meta: DataFileMeta,
        with_system: bool = True,
        columns: Sequence[str] | None = None,
        batch_rows: int | None = None,
    ) -> Iterator[pa.Table]:
        """Read one file row group by row group, or in batches of at most ``batch_rows`` rows
        (bounded memory), as `read_file` does (key filter included)."""
        layout = self._layout(meta.schema_id, columns)
        file_cols = layout.file_columns
        if with_system:
            file_cols = [*file_cols, SEQUENCE_NUMBER, VALUE_KIND]
        path = self.store.data_file_path(split.partition, split.bucket, meta)
        start = 0
        try:
            keep = self.kept_rows(split, meta, read_follows=bool(file_cols))  # mapped as in `read_file`
            if not file_cols:  # as in `read_file`
                total = checked_row_count(self.store, path, meta) if keep is None else int(keep.sum())
                step = batch_rows or max(total, 1)
                for i in range(0, total, step):
                    counted = no_columns(min(step, total - i))
                    yield layout.to_read(counted, False, self._narrowing_error) if layout.wanted else counted
                return
            buffered = self.schema.core_options.read_parquet_buffer_size
            for raw in iter_data_file(self.store.file_io, path, file_cols, batch_rows, buffered, meta.file_size):
                n = raw.num_rows
                if start + n > meta.row_count:  # more rows than the manifest says: none of them returned
                    raise row_count_error(self.store.name, path, meta, f"more than {meta.row_count}")
                if keep is not None:  # the deletion vector's rows, batch by batch
                    raw = raw.filter(arrow_mask(keep[start:start + n]))
                start += n
                data = layout.to_read(raw, with_system, self._narrowing_error)
                if with_system and self.lookup_levels:
                    data = with_level(data, meta.level)
                if self.key_filter is not None and data.num_rows:
                    data = self.key_filter.filter_table(data)  # as in `read_file`
                yield data
            check_rows_read(self.store, path, meta, start)  # fewer rows than the manifest says
        except MissingDataFileError as exc:
            raise missing_file_error(self.store, exc, self.snapshot_id) from None

    def kept_rows(self, split: Split, meta: DataFileMeta, *, read_follows: bool = False) -> np.ndarray | None:
        """The rows of ``meta`` that its deletion vector in ``split`` keeps, as a bool mask sized by
        the file's own count once it is the manifest's (`ops.file_rows`); None when it has no vector
        (all rows kept; ``read_follows`` as in `checked_row_count`). For readers that decode a file
        themselves (a data-evolution range's files)."""
        vector = self.vectors.vectors(split.dv_entries).get(meta.file_name) if split.dv_entries else None
        if not vector:
            return None
        rows = checked_row_count(self.store, self.store.data_file_path(split.partition, split.bucket, meta), meta,
                                 read_follows=read_follows)
        return deleted_mask(vector, rows, meta.file_name)

    # ------------------------------------------------------------------ reads
    def visible_files(self, split: Split) -> list[DataFileMeta]:
        """The files of ``split`` this reader reads: a batch read's (`FileStore.visible_files`),
        or with ``all_levels`` all of them."""
        if self.all_levels:
            return list(split.files)
        return self.store.visible_files(split.files, self.schema)

    def raw_files(self, split: Split) -> list[DataFileMeta] | None:
        """The files of ``split`` whose rows a read returns file by file, with no merge, in the
        order `read_split` yields them; None when the split needs a merge.

        Append tables, and deletion-vector tables whose visible files are all above level 0
        (each key then has one live row: `raw_readable`); for the latter a file whose value stats
        exclude the filter is left out, as it holds no row the read returns."""
        if not self.is_pk:
            if self.data_evolution:
                return raw_units(self, split)
            if self.system_columns:
                check_disjoint_ranges(split.files, self.store.name)
            return sorted(split.files, key=lambda f: f.min_sequence_number)
        if not self.dv_raw:
            return None
        files = self.visible_files(split)
        if not raw_readable(files):
            return None
        pred = self.prune_predicate if self.prune_predicate is not None and self.prune_predicate.clauses else None
        if pred is None:
            return files
        return [meta for meta in files if file_may_match(self.store, meta, pred, self.schema, by_values=True)]

    def read_raw_file(self, split: Split, meta: DataFileMeta, *, use_threads: bool | None = None) -> pa.Table:
        """The rows one of the `raw_files` of ``split`` contributes to the read."""
        return self.output_rows(read_raw(self, split, meta, use_threads=use_threads), split)

    def read_split(self, split: Split) -> Iterator[pa.Table]:
        """Yield the merged rows of one split, one section (or unmerged file) at a time."""
        raw = self.raw_files(split)
        if raw is not None:
            for meta in raw:
                yield self.read_raw_file(split, meta)
            return
        files = self.visible_files(split)
        for section in sections(files, self.key_types):
            yield self.output_rows(self._merge_section(split, section), split)

    def stream_split(self, split: Split, batch_rows: int, *, with_kind: bool = False) -> Iterator[pa.Table]:
        """Yield the merged rows of one split in batches of about ``batch_rows`` rows (at most
        twice that): a streaming k-way merge of the split's sorted runs, whatever their size;
        ``with_kind`` (primary-key tables) adds each merged row's ``_VALUE_KIND``."""
        from lake_assets.ops.streaming_read import stream_split  # it builds on this module

        yield from stream_split(self, split, batch_rows, with_kind=with_kind)

    def _merge_section(self, split: Split, section: list[DataFileMeta]) -> pa.Table:
        if len(section) == 1 and section[0].delete_row_count == 0:
            return self.read_file(split, section[0], False, self.split_columns)
        runs = [self.read_file(split, f, True, self.split_columns) for f in section]
        masks = winner_masks(runs, self.key_names, self.merge_function, self.sequence_fields)
        if masks is not None:
            # Deduplicate / first-row: filter each run by its winners; no sort, no take. Rows come
            # out run by run, not in key order - batch reads promise no order within a bucket.
            parts = []
            for run, mask in zip(runs, masks, strict=True):
                run = run.select(self.split_columns)  # system columns are done with
                if mask is None:
                    parts.append(run)
                elif mask.any():
                    parts.append(run.filter(pa.array(mask)))
            return pa.concat_tables(parts) if parts else runs[0].select(self.split_columns).slice(0, 0)
        data = pa.concat_tables(runs)
        merged = sort_and_merge(data, self.key_names, self.merge_function, self.sequence_fields,
                                self.sequence_descending)
        kinds = merged.column(VALUE_KIND).to_numpy()
        retract = is_retract(kinds)
        if retract.any():
            merged = merged.filter(pa.array(~retract))
        return merged

    def output_rows(self, data: pa.Table, split: Split, with_kind: bool = False) -> pa.Table:
        """What the read returns of ``data``, rows of ``split`` as read or merged (`split_columns`,
        and `VALUE_KIND` when ``with_kind``): the split's partition values added as constant
        columns, column defaults filled (``fill_defaults``), the predicate applied, projected on
        `columns` and cast to `output_schema`; ``with_kind`` appends each row's kind
        (``_VALUE_KIND``). Every way of reading a split ends here: merged sections, raw files,
        streamed merges, data-evolution ranges, postpone and tag-diff reads."""
        for name, i in self._constants.items():
            field = to_arrow_field(self.schema.field(name))
            value = split.partition_values[i]
            n = data.num_rows
            column = pa.nulls(n, field.type) if value is None else pa.repeat(pa.scalar(value, field.type), n)
            data = data.append_column(field.with_nullable(value is None or field.nullable), column)
        if self.defaults is not None:  # after the merge, before the filter (Java's createReader)
            data = self.defaults.fill(data)
        if self.predicate is not None and data.num_rows:
            data = self.predicate.filter_table(data)
        out = data.select(self.columns)
        if not out.schema.equals(self.output_schema, check_metadata=True):
            # a cast per column otherwise: pyarrow's fixed cost of each call adds up over many files
            out = out.cast(self.output_schema)
        return out.append_column(KIND_FIELD, data.column(VALUE_KIND)) if with_kind else out


def concat_or_empty(tables: list[pa.Table], schema: pa.Schema) -> pa.Table:
    if not tables:
        return schema.empty_table()
    return pa.concat_tables(tables)


