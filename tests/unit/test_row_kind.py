"""RowKind and FileSource: Java's byte values, and their use on vectorised int8 columns."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lake_assets.formats.data_file import VALUE_KIND
from lake_assets.ops.conform import row_kinds
from lake_assets.spec.manifest import FileSource
from lake_assets.spec.row_kind import ROW_KIND_NAMES, RowKind, row_kind_names_array
from lake_assets.spec.schema import TableSchema
from lake_assets.spec.types import STRING_LENGTH, BigIntType, DataField, VarCharType


def test_values_and_short_strings_are_javas() -> None:
    # org.apache.paimon.types.RowKind: (short string, byte value)
    java = {"+I": 0, "-U": 1, "+U": 2, "-D": 3}
    assert {k.short_string: int(k) for k in RowKind} == java
    assert [RowKind(i).short_string for i in range(4)] == list(ROW_KIND_NAMES)
    assert row_kind_names_array().to_pylist() == list(ROW_KIND_NAMES)
    # org.apache.paimon.manifest.FileSource: APPEND 0, COMPACT 1
    assert {s.name: int(s) for s in FileSource} == {"APPEND": 0, "COMPACT": 1}


def test_row_kinds_of_input_compare_with_members_as_a_column() -> None:
    fields = (DataField(0, "k", BigIntType(nullable=False)), DataField(1, "op", VarCharType(STRING_LENGTH)))
    schema = TableSchema(0, fields, 1, (), ("k",), {"bucket": "1", "rowkind.field": "op"})
    data = pa.table({"k": [1, 2, 3, 4], "op": ["+I", "-U", "+U", "-D"]})
    kinds = row_kinds(data, schema, "db.t")
    assert kinds.dtype == np.int8
    assert kinds.tolist() == [RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER, RowKind.DELETE]
    assert ((kinds == RowKind.UPDATE_BEFORE) | (kinds == RowKind.DELETE)).tolist() == [False, True, False, True]
    column = pa.array(np.full(2, RowKind.DELETE, np.int8))
    assert pa.table({VALUE_KIND: column}).column(VALUE_KIND).to_pylist() == [3, 3]
