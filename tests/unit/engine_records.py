"""Records of the merge engines' tests: kinds, a raw table of (kind, row) records with sequence
numbers, and the engines built and run over them (tests/unit/test_engines.py and its neighbours)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, settings

from lake_assets.lsm.merge import sort_for_merge
from lake_assets.lsm.merge_engine.aggregation import Aggregation
from lake_assets.lsm.merge_engine.function import MergeFunction
from lake_assets.lsm.merge_engine.partial_update import PartialUpdate
from lake_assets.options import CoreOptions

INS, UB, UA, DEL = 0, 1, 2, 3
SEQ, KIND = "_SEQUENCE_NUMBER", "_VALUE_KIND"
Record = tuple[int, dict[str, Any]]

HYPO = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---------------------------------------------------------------- helpers


def fields_of(schema: pa.Schema) -> list[tuple[str, pa.DataType]]:
    return [(f.name, f.type) for f in schema]


def raw_table(schema: pa.Schema, records: Sequence[Record], first_seq: int = 0) -> pa.Table:
    """Records in arrival order, numbered from first_seq, not yet sorted."""
    t = pa.Table.from_pylist([r for _, r in records], schema=schema)
    n = len(records)
    t = t.append_column(SEQ, pa.array(range(first_seq, first_seq + n), type=pa.int64()))
    return t.append_column(KIND, pa.array([k for k, _ in records], type=pa.int8()))


def merge(fn: MergeFunction, table: pa.Table, keys: Sequence[str] = ("k",)) -> pa.Table:
    return fn.merge(sort_for_merge(table, keys), keys)


def run(fn: MergeFunction, schema: pa.Schema, records: Sequence[Record], keys: Sequence[str] = ("k",)) -> pa.Table:
    return merge(fn, raw_table(schema, records), keys)


def by_key(table: pa.Table, key: str = "k") -> dict[Any, tuple[int, dict[str, Any]]]:
    return {r[key]: (r[KIND], r) for r in table.to_pylist()}


def one(table: pa.Table) -> dict[str, Any]:
    rows = table.to_pylist()
    assert len(rows) == 1, rows
    return rows[0]


def agg(schema: pa.Schema, options: Mapping[str, str], keys: Sequence[str] = ("k",)) -> Aggregation:
    return Aggregation(fields_of(schema), keys, CoreOptions(options))


def pu(schema: pa.Schema, options: Mapping[str, str], keys: Sequence[str] = ("k",)) -> PartialUpdate:
    return PartialUpdate(fields_of(schema), keys, CoreOptions(options))


def int_schema(*cols: str, dtype: pa.DataType | None = None) -> pa.Schema:
    return pa.schema([pa.field("k", pa.int64(), nullable=False), *[(c, dtype or pa.int64()) for c in cols]])
