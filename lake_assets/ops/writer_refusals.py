"""The tables and writes a `TableWriter` refuses before it buffers a row: bucket modes it does not
write, a dropped table, a table whose engine or changelog producer Paimon forbids, and overwrites of
cross-partition upsert tables. Each fails naming the table and what to do instead."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lake_assets.errors import NoSuchTableError, UnsupportedFeatureError
from lake_assets.table_rules import check_engine_producer
from lake_assets.table_support import cross_partition_fields

if TYPE_CHECKING:
    from lake_assets.spec.schema import TableSchema
    from lake_assets.store.file_store import FileStore


def check_writable(store: FileStore, schema: TableSchema, num_buckets: int, *, ignore_previous_files: bool) -> None:
    """Raise unless a writer may write ``schema``'s rows into ``num_buckets`` buckets of ``store``
    (``ignore_previous_files``: an overwrite)."""
    is_pk = bool(schema.primary_keys)
    dynamic = is_pk and num_buckets == -1  # an assigner and the table's hash index decide each key's bucket
    if is_pk and num_buckets <= 0 and not dynamic:
        mode = "dynamic bucket (bucket = -1)" if num_buckets == -1 else f"bucket = {num_buckets}"
        raise UnsupportedFeatureError(
            f"Table {store.name}: primary-key tables with {mode} are not supported; set 'bucket' to N > 0"
        )
    if not is_pk and (num_buckets == 0 or num_buckets < -1):
        raise UnsupportedFeatureError(
            f"Table {store.name}: append tables with bucket = {num_buckets} are not supported; "
            "use bucket = -1 (unaware) or a bucket count N > 0 with a bucket-key"
        )
    if not store.file_io.exists(store.paths.schema_file(schema.id)):
        raise NoSuchTableError(f"Cannot write to {store.name}: the table does not exist (dropped?)")
    check_engine_producer(f"Cannot write to {store.name}", schema.core_options)
    if ignore_previous_files and dynamic and cross_partition_fields(schema):
        raise UnsupportedFeatureError(
            f"Cannot overwrite {store.name}: overwrites of cross-partition upsert tables are not supported "
            "(a key of a replaced partition may live on in another); write, or delete the rows, instead")
