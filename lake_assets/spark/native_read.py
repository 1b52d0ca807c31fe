"""`read_table`: files that need no merge read by Spark's own Parquet reader, the rest by the source.

A Python data source hands Spark Arrow batches from a Python worker, which costs about 2.5x
Spark's vectorized Parquet scan of the same files. Most files of a healthy table need no merge:
every data file holds at most one record per key, so a file whose key range overlaps no other
visible file of its bucket (a section of one file, Paimon's "raw convertible" split) and that has
no retract rows is read as it is - what the core's reader does with it too. `read_table` plans the
snapshot once, reads those files with ``spark.read.parquet`` (only the table's columns: the
``_KEY_*`` / ``_SEQUENCE_NUMBER`` / ``_VALUE_KIND`` columns of primary-key files are not read), and
unions the ``lake`` source reading the other sections of the same snapshot
(``read.merge-sections-only``).

Files qualify when Spark can read them as the table's columns by name: written under a schema
with the same fields (names, types) as the read schema, of flat types, on a local path (Spark
cannot read ``memory://`` and names S3 differently), in a bucket without deletion vectors. Anything
else goes through the source.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lake_assets.formats.file_format import format_of_file
from lake_assets.lsm.run_partition import sections
from lake_assets.ops import postpone_merge_read
from lake_assets.ops.not_null_history import read_arrow_schema
from lake_assets.ops.row_tracking import data_evolution_enabled
from lake_assets.ops.scan import Split
from lake_assets.spark.fallback_plan import has_fallback
from lake_assets.spark.schema import spark_schema
from lake_assets.spark.source_options import STORAGE_PREFIX, SourceOptions, storage_option_text
from lake_assets.spec.manifest import DataFileMeta
from lake_assets.spec.schema import TableSchema
from lake_assets.table import Table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# Options `read_table` passes to its source read: plan the snapshot it planned (the schema stays
# the one the user's options select), and only the sections Spark does not read.
PLANNED_SNAPSHOT = ("read.planned-snapshot-id",)
MERGE_SECTIONS_ONLY = ("read.merge-sections-only",)


@dataclass(frozen=True)
class SplitFiles:
    """One split's files as `read_table` reads them: by Spark's Parquet reader, or merged."""

    native: list[DataFileMeta]
    merged: list[DataFileMeta]


def _flat(t: pa.DataType) -> bool:
    return not (pa.types.is_nested(t) or pa.types.is_dictionary(t) or pa.types.is_time(t))


class NativeFiles:
    """Sorts the files of a read of ``schema`` into the ones Spark reads as they are and the rest."""

    def __init__(self, table: Table, schema: TableSchema) -> None:
        self.table = table
        self.schema = schema
        self.flat = all(_flat(f.type) for f in schema.arrow_schema)
        self._fields = [(f.id, f.name, f.type) for f in schema.fields]
        self._readable: dict[int, bool] = {}
        self.key_types = schema.types(list(schema.trimmed_primary_keys))

    def readable(self, schema_id: int) -> bool:
        """Files of ``schema_id`` hold the read schema's columns under the same names and types."""
        ok = self._readable.get(schema_id)
        if ok is None:
            other = self.table.store.schema_by_id(schema_id)
            ok = self.flat and [(f.id, f.name, f.type) for f in other.fields] == self._fields
            self._readable[schema_id] = ok
        return ok

    def spark_reads(self, f: DataFileMeta) -> bool:
        """Spark's Parquet reader takes the file as it is: a Parquet file (ORC and Avro files of a
        table whose file.format is or was another go through the source) of a readable schema."""
        return format_of_file(f.file_name) == "parquet" and self.readable(f.schema_id)

    def split_files(self, split: Split) -> SplitFiles:
        """Which files of ``split`` Spark reads as they are; the others stay whole merge sections."""
        if not self.schema.primary_keys and not split.dv_entries:
            return SplitFiles([f for f in split.files if self.spark_reads(f)],
                              [f for f in split.files if not self.spark_reads(f)])
        if split.dv_entries:
            return SplitFiles([], list(split.files))  # deletion vectors hide rows: the source applies them
        native: list[DataFileMeta] = []
        merged: list[DataFileMeta] = []
        for section in sections(self.table.store.visible_files(split.files, self.schema), self.key_types):
            f = section[0]
            if len(section) == 1 and f.delete_row_count == 0 and self.spark_reads(f):
                native.append(f)
            else:
                merged += section
        return SplitFiles(native, merged)

    def merge_only(self, splits: list[Split]) -> list[Split]:
        """``splits`` cut down to what `read_table` leaves to the source (``read.merge-sections-only``)."""
        out = []
        for s in splits:
            merged = self.split_files(s).merged
            if merged:
                out.append(Split(s.partition, s.partition_values, s.bucket, s.total_buckets, merged))
        return out


def _local_path(warehouse: str) -> bool:
    return "://" not in warehouse or warehouse.startswith("file://")


def read_table(
    spark: SparkSession,
    warehouse: str,
    identifier: str,
    *,
    storage_options: Mapping[str, Any] | None = None,
    options: Mapping[str, str] | None = None,
) -> DataFrame:
    """A batch read of a table (latest snapshot, or ``options`` ``snapshot-id`` / ``tag`` /
    ``timestamp``) in which Spark's Parquet reader reads every file that needs no merge.

    The result has the columns and rows of ``spark.read.format("lake").load(identifier)``. The
    snapshot is planned now: as with any planned read, its files must outlive the DataFrame's
    queries (expiry keeps the newest snapshots; tag one for long-lived DataFrames). Other read
    options (incremental, ``filter``, ``read.changelog``) go to the source unchanged.
    """
    opts: dict[str, str] = {"warehouse": warehouse, **{k.lower(): str(v) for k, v in (options or {}).items()}}
    for k, v in (storage_options or {}).items():
        opts[STORAGE_PREFIX + k] = storage_option_text(v)

    def source(extra: Mapping[str, str]) -> DataFrame:
        reader = spark.read.format("lake")
        for k, v in {**opts, **extra}.items():
            reader = reader.option(k, v)
        return reader.load(identifier)

    parsed = SourceOptions.parse({**opts, "path": identifier})
    special = parsed.is_incremental or parsed.with_row_kind or parsed.get(("filter",)) is not None
    if special or not _local_path(warehouse):
        return source({})
    table = parsed.table()
    if has_fallback(table):
        return source({})  # the partitions a fallback branch adds are read by the source (spark/fallback_plan.py)
    if postpone_merge_read.configured(table.schema):
        return source({})  # the waiting rows are merged into every bucket: nothing is read as it is
    if data_evolution_enabled(table.schema.options):
        return source({})  # files of one row-id range are merged column by column (ops/data_evolution_read.py)
    travel = parsed.time_travel()
    snap = table.resolve_snapshot(**travel)
    if snap is None:
        return source({})
    schema = table.store.travel_schema(snap) if travel else table.schema
    table.schema = schema
    files = NativeFiles(table, schema)
    paths: list[str] = []
    merging = False
    for split in table.plan(snapshot=snap):
        parts = files.split_files(split)
        paths += [table.store.data_file_path(split.partition, split.bucket, f) for f in parts.native]
        merging = merging or bool(parts.merged)
    pinned = {PLANNED_SNAPSHOT[0]: str(snap.id)}  # a commit meanwhile must not change what the source reads
    if not paths:
        return source(pinned)
    declared = spark_schema(read_arrow_schema(table.store, schema))  # as the source declares it
    native = spark.read.schema(declared).parquet(*paths).select(*declared.names)
    if not merging:
        return native
    return native.unionByName(source({**pinned, MERGE_SECTIONS_ONLY[0]: "true"}))
