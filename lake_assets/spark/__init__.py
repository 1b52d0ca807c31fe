"""Spark layer: the ``lake`` data source, bucket-aware writes, and the session builder.

``register(spark)`` adds ``format("lake")`` to a session; ``write_table`` writes a DataFrame in
one snapshot, routing each bucket of a primary-key table to one task; ``read_table`` reads a
snapshot with Spark's own Parquet reader for the files that need no merge; `write_table_native`
writes a qualifying primary-key table with Spark's own Parquet writer (else as `write_table`);
``delete_where`` deletes the rows of an append table with deletion vectors that a Spark SQL
condition selects.

The names are imported on first use (`lake_assets.lazy_exports`): a Spark Python worker unpickles a task's reader or
writer from its own module (`lake_assets.spark.writer`, `lake_assets.spark.reader`), and importing
this package must not pull in the driver-side modules (the shuffle, the native read and write) in
every fresh worker (issue 17 §3: a worker's start is part of a write's cost).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lake_assets.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from lake_assets.spark.datasource import LakeDataSource, register
    from lake_assets.spark.delete import delete_where
    from lake_assets.spark.native_read import read_table
    from lake_assets.spark.native_write import write_table_native
    from lake_assets.spark.shuffle import repartition_by_bucket, write_table

# public name -> the module that defines it
_EXPORTS = {
    "LakeDataSource": "lake_assets.spark.datasource",
    "register": "lake_assets.spark.datasource",
    "delete_where": "lake_assets.spark.delete",
    "read_table": "lake_assets.spark.native_read",
    "write_table_native": "lake_assets.spark.native_write",
    "repartition_by_bucket": "lake_assets.spark.shuffle",
    "write_table": "lake_assets.spark.shuffle",
}

__all__ = ["LakeDataSource", "delete_where", "read_table", "register", "repartition_by_bucket", "write_table",
           "write_table_native"]


if not TYPE_CHECKING:  # checkers see the imports above, and a name not among them stays an error
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
