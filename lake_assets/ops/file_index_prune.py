"""Skipping data files of a batch read by their bloom-filter indexes (docs/format.md §7.6).

As Paimon 0.9's append scan and reader do, a file whose index proves that a clause's ``=`` / ``in``
literal on an indexed column is absent from it is not read. Only append tables are pruned: in a
primary-key table a file without the value may still hold the newer version of a key that hides an
older match in another file (Paimon uses indexes there only with deletion vectors). An index only
removes files without a match, so a read returns the same rows with or without it; whatever cannot
be decided (an index that does not parse or is gone, a literal that does not convert to the file's
column type, a column renamed or retyped since the file was written) keeps the file.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from lake_assets.errors import LakeError
from lake_assets.formats.bloom_filter import BloomFilter64
from lake_assets.formats.fast_hash import fast_hash, hashable
from lake_assets.formats.file_index import INDEX_FILE_SUFFIX, bloom_filters
from lake_assets.option_classification import is_true
from lake_assets.predicate import Predicate
from lake_assets.spec.arrow_types import to_arrow
from lake_assets.spec.manifest import ManifestEntry
from lake_assets.spec.schema import TableSchema
from lake_assets.store.file_store import FileStore

log = logging.getLogger(__name__)

_EQUALITY = ("=", "==", "in")


def prunes_by_index(schema: TableSchema, pred: Predicate | None) -> bool:
    """Whether a read with ``pred`` under ``schema`` (the read's) consults file indexes: an append
    table, the option ``file-index.read.enabled`` (default true) on, and some clause pinning a
    column by = or in."""
    if pred is None or schema.primary_keys:
        return False
    if not is_true(schema.options.get("file-index.read.enabled", "true")):
        return False
    return any(op in _EQUALITY for clause in pred.clauses for _, op, _ in clause)


def index_may_match(store: FileStore, entry: ManifestEntry, pred: Predicate, schema: TableSchema) -> bool:
    """False only when the file's bloom filters show that no clause of ``pred`` (naming columns of
    ``schema``, the read's) can match a row of it."""
    meta = entry.file
    index_files = [x for x in meta.extra_files if x.endswith(INDEX_FILE_SUFFIX)]
    if meta.embedded_file_index is None and len(index_files) != 1:
        return True
    try:
        if meta.embedded_file_index is not None:
            data = meta.embedded_file_index
        else:
            (path,) = [p for p in store.written_file_paths(entry.partition, entry.bucket, meta)
                       if p.endswith("/" + index_files[0])]
            data = store.file_io.read_bytes(path)
        filters = bloom_filters(data, f"file index of {meta.file_name}")
    except (LakeError, OSError) as exc:
        # an index we cannot read prunes nothing: the file is read and filtered row by row
        log.warning("Table %s: not using the file index of %s: %s", store.name, meta.file_name, exc)
        return True
    if not filters:
        return True
    file_schema = store.schema_by_id(meta.schema_id)
    return any(_clause_may_match(schema, file_schema, filters, clause) for clause in pred.clauses)


def _clause_may_match(schema: TableSchema, file_schema: TableSchema, filters: dict[str, BloomFilter64],
                      clause: Sequence[tuple[str, str, Any]]) -> bool:
    for column, op, literal in clause:
        if op not in _EQUALITY or not schema.has_field(column):
            continue
        field = schema.field(column)
        file_field = file_schema.field_by_id(field.id)
        if file_field is None or file_field.name not in filters:
            continue
        # the file's values were hashed as its column's type: only the same type hashes alike
        if file_field.type.copy(nullable=True) != field.type.copy(nullable=True) or not hashable(field.type):
            continue
        literals = list(literal) if op == "in" else [literal]
        if not literals or any(v is None for v in literals):
            continue
        try:
            values = pa.array(literals, to_arrow(field.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
            continue  # the residual filter decides (or refuses) such a literal
        if values.to_pylist() != literals:
            # converted with a loss or a change of meaning (a zoned time for a naive column, a
            # float narrowed, NaN): only the residual filter may decide, or refuse, such a literal
            continue
        if not filters[file_field.name].might_contain(fast_hash(values, field.type)).any():
            return False
    return True
