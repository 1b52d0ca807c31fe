"""Spark layer: the ``lake`` data source, bucket-aware writes, and the session builder.

``register(spark)`` adds ``format("lake")`` to a session; ``write_table`` writes a DataFrame in
one snapshot, routing each bucket of a primary-key table to one task; ``read_table`` reads a
snapshot with Spark's own Parquet reader for the files that need no merge; `write_table_native`
writes a qualifying primary-key table with Spark's own Parquet writer (else as `write_table`).

The names are imported on first use (PEP 562): a Spark Python worker unpickles a task's reader or
writer from its own module (`lake_assets.spark.writer`, `lake_assets.spark.reader`), and importing
this package must not pull in the driver-side modules (the shuffle, the native read and write) in
every fresh worker (issue 17 §3: a worker's start is part of a write's cost).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lake_assets.spark.datasource import LakeDataSource, register
    from lake_assets.spark.native_read import read_table
    from lake_assets.spark.native_write import write_table_native
    from lake_assets.spark.shuffle import repartition_by_bucket, write_table

# public name -> the module that defines it
_EXPORTS = {
    "LakeDataSource": "lake_assets.spark.datasource",
    "register": "lake_assets.spark.datasource",
    "read_table": "lake_assets.spark.native_read",
    "write_table_native": "lake_assets.spark.native_write",
    "repartition_by_bucket": "lake_assets.spark.shuffle",
    "write_table": "lake_assets.spark.shuffle",
}

__all__ = ["LakeDataSource", "read_table", "register", "repartition_by_bucket", "write_table",
           "write_table_native"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:  # also how `from lake_assets.spark import source_options` finds submodules
        raise AttributeError(f"module 'lake_assets.spark' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
