"""Spark layer: the ``lake`` data source, bucket-aware writes, and the session builder.

``register(spark)`` adds ``format("lake")`` to a session; ``write_table`` writes a DataFrame in
one snapshot, routing each bucket of a primary-key table to one task; ``read_table`` reads a
snapshot with Spark's own Parquet reader for the files that need no merge; `write_table_native`
writes a qualifying primary-key table with Spark's own Parquet writer (else as `write_table`).
"""

from lake_assets.spark.datasource import LakeDataSource, register
from lake_assets.spark.native_read import read_table
from lake_assets.spark.native_write import write_table_native
from lake_assets.spark.shuffle import repartition_by_bucket, write_table

__all__ = ["LakeDataSource", "read_table", "register", "repartition_by_bucket", "write_table",
           "write_table_native"]
