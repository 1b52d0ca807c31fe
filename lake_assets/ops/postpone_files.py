"""The rows of a postpone file (``bucket-postpone``) in the order its writer wrote them.

Both consumers of postpone files replay rows through a fixed-bucket writer: the postpone
compaction (`lake_assets.ops.postpone`) reads committed files, and the Spark batch write into real
buckets (`lake_assets.ops.postpone_fixed_bucket.resolve_staged`) reads the files it staged. A
postpone writer does not sort (Java's ``PostponeBucketWriter``): its sequence numbers are the
arrival order, which is the order a merge must see.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.errors import UnsupportedFeatureError
from lake_assets.formats.data_file import SEQUENCE_NUMBER, VALUE_KIND, read_data_file
from lake_assets.spec.manifest import ManifestEntry
from lake_assets.store.file_store import FileStore


def read_postpone_file(store: FileStore, entry: ManifestEntry, action: str = "compact") -> tuple[pa.Table, np.ndarray]:
    """The rows of postpone file ``entry`` (the table's columns) and their row kinds (int8), in
    sequence order.

    A file written under a schema with other columns raises `UnsupportedFeatureError` ("Cannot
    <action> <table>: ..."): replaying it across column changes is not implemented. A schema that
    only changed options has the same columns, and its files read as they are."""
    f = entry.file
    if f.schema_id != store.schema.id and store.schema_by_id(f.schema_id).fields != store.schema.fields:
        raise UnsupportedFeatureError(
            f"Cannot {action} {store.name}: postpone file {f.file_name} was written with schema "
            f"{f.schema_id}, the table is at schema {store.schema.id} with other columns; replaying "
            "postpone files across column changes is not implemented"
        )
    raw = read_data_file(store.file_io, store.data_file_path(entry.partition, entry.bucket, f), file_size=f.file_size)
    raw = raw.take(pc.sort_indices(raw.column(SEQUENCE_NUMBER), sort_keys=[(SEQUENCE_NUMBER, "ascending")]))
    kinds = raw.column(VALUE_KIND).to_numpy(zero_copy_only=False).astype(np.int8)
    return raw.select(list(store.schema.field_names)), kinds
