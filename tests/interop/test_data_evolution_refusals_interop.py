"""What lake_assets refuses of data-evolution tables pypaimon 2.1 writes (Paimon Java 0.9 predates
row tracking): a BLOB column (blob files), a global index, deletion vectors. Each refusal names the
type, index or option and says what to do; dropping the global index (pypaimon) makes the table
usable. The refusals at create and ALTER: tests/unit/test_column_subset_write.py."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import UnsupportedFeatureError

from .test_row_tracking_interop import OPTIONS, RowTrackingPaimon, _ipc
from .test_row_tracking_interop import driver as driver  # the fixture

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
BLOB = pa.schema([("id", pa.int64()), ("b", pa.large_binary())])  # pypaimon's BLOB


def _operations(t_name: str, cat: Catalog) -> list:
    return [
        lambda: cat.get_table(t_name).to_arrow(columns=["id"]),
        lambda: cat.get_table(t_name).write_arrow(pa.table({"id": pa.array([9], pa.int64())}), write_columns=["id"]),
        lambda: cat.get_table(t_name).update_columns(pa.table({"_ROW_ID": pa.array([0], pa.int64()),
                                                               "id": pa.array([7], pa.int64())})),
        lambda: cat.get_table(t_name).compact(),
    ]


def test_blob_columns_global_indexes_and_deletion_vectors_are_refused_saying_what_to_do(
        driver: RowTrackingPaimon, tmp_warehouse: str, tmp_path: Path) -> None:
    work = tmp_path
    rows = pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"]})
    driver.steps(tmp_warehouse, work, [
        {"op": "create", "table": "db.blob", "schema": _ipc(work, "blob", BLOB), "options": OPTIONS},
        {"op": "write", "table": "db.blob", "data": _ipc(work, "brows", pa.table(
            {"id": pa.array([1], pa.int64()), "b": pa.array([b"xy"], pa.large_binary())}))},
        {"op": "create", "table": "db.gi", "schema": _ipc(work, "s", SCHEMA), "options": OPTIONS},
        {"op": "write", "table": "db.gi", "data": _ipc(work, "rows", rows)},
        {"op": "global_index", "table": "db.gi", "column": "id"},
        {"op": "create", "table": "db.dv", "schema": _ipc(work, "s", SCHEMA),
         "options": {**OPTIONS, "deletion-vectors.enabled": "true"}},
        {"op": "write", "table": "db.dv", "data": _ipc(work, "rows", rows)},
    ])
    blob_files = list(Path(tmp_warehouse, "db.db", "blob", "bucket-0").glob("*.blob"))
    assert blob_files  # pypaimon kept the BLOB column in a blob file
    cat = Catalog(tmp_warehouse)
    with pytest.raises(UnsupportedFeatureError, match=r"type BLOB \(a newer Paimon type kept in blob files.*use "
                                                      "Paimon Java HEAD or pypaimon"):
        cat.get_table("db.blob")
    cases = {
        "db.gi": r"global index type 'btree' .* drop the index \(pypaimon's drop_global_index",
        "db.dv": r"deletion vectors on a data-evolution table \(deletion-vectors.enabled with data-evolution.enabled\)"
                 r".* use Paimon Java HEAD or pypaimon",
    }
    for name, message in cases.items():
        for operation in _operations(name, cat):
            with pytest.raises(UnsupportedFeatureError, match=message):
                operation()
    assert [s.id for s in cat.get_table("db.dv").snapshots()] == [1]  # nothing written
    # what the refusal says to do works: without the index the table is read and written
    driver.steps(tmp_warehouse, work, [{"op": "global_index", "table": "db.gi", "column": "id", "drop": True}])
    t = cat.get_table("db.gi")
    assert t.to_arrow(columns=["id", "v", "_ROW_ID"]).sort_by("id").to_pylist() == [
        {"id": 1, "v": "a", "_ROW_ID": 0}, {"id": 2, "v": "b", "_ROW_ID": 1}]
    t.write_arrow(pa.table({"id": pa.array([3], pa.int64())}), write_columns=["id"])
    assert t.to_arrow(columns=["id", "_ROW_ID"]).sort_by("id").column("_ROW_ID").to_pylist() == [0, 1, 2]
