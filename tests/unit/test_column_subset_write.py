"""Column-subset writes of new rows (`Table.write_arrow(..., write_columns=[...])`, `ops/column_subset.py`):
what a data-evolution table's subset file holds, and every refusal, made before anything is written.
pypaimon 2.1 and pypaimon-rust 0.4 reading them: tests/interop/test_column_subset_interop.py."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_assets import Catalog
from lake_assets.errors import InvalidArgumentError, UnsupportedFeatureError

OPTIONS = {"row-tracking.enabled": "true", "data-evolution.enabled": "true", "bucket": "-1"}
SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.string())])


def test_a_subset_file_holds_its_columns_and_the_others_read_null_or_their_default(catalog: Catalog) -> None:
    catalog.create_database("db", ignore_if_exists=True)
    t = catalog.create_table("db.t", SCHEMA, options={**OPTIONS, "fields.v.default-value": "dflt",
                                                      "file-index.bloom-filter.columns": "v"})
    w = t.new_writer("u", write_columns=["id"])
    w.write_arrow(pa.table({"id": pa.array([1, 2], pa.int64())}))
    w.write_arrow(pa.table({"id": pa.array([3], pa.int64())}))
    messages = w.prepare_commit()
    w.close()
    t.new_committer("u").commit(messages, 1)
    (e,) = t.store.file_store_scan().live_entries(t.latest_snapshot())
    f = e.file
    assert (f.write_cols, f.first_row_id, f.row_count, f.extra_files) == (("id",), 0, 3, ())
    stored = t.store.file_io.read_bytes(f"{t.store.bucket_dir(e.partition, 0)}/{f.file_name}")
    assert pq.read_schema(io.BytesIO(stored)).names == ["id"]  # no file index, no other column
    # p has no default: null; v reads as its (Paimon 0.9 read-time) default until updated
    got = t.to_arrow(columns=["id", "p", "v", "_ROW_ID"]).sort_by("id").to_pylist()
    assert got == [{"id": i, "p": None, "v": "dflt", "_ROW_ID": i - 1} for i in (1, 2, 3)]
    t.update_columns(pa.table({"_ROW_ID": pa.array([1], pa.int64()), "v": ["set"]}))
    assert t.to_arrow(columns=["v"]).column("v").to_pylist() == ["dflt", "set", "dflt"]


def test_column_subset_writes_are_refused_with_what_to_do(catalog: Catalog) -> None:
    catalog.create_database("db", ignore_if_exists=True)
    schema = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.string()), pa.field("n", pa.int64(), False)])
    t = catalog.create_table("db.de", schema, partition_keys=["p"], options=OPTIONS)
    plain = catalog.create_table("db.plain", SCHEMA, options={"row-tracking.enabled": "true", "bucket": "-1"})
    row = {"id": [1], "p": ["a"], "n": [1]}
    cases: list[tuple[object, list[str], type[Exception], str]] = [
        (plain, ["id"], UnsupportedFeatureError, "data-evolution.enabled = true"),
        (t, [], InvalidArgumentError, "no column given"),
        (t, ["id", "id", "p", "n"], InvalidArgumentError, r"duplicate columns \['id'\]"),
        (t, ["id", "p", "n", "x"], InvalidArgumentError, r"unknown columns \['x'\]"),
        (t, ["id", "p", "n", "_ROW_ID"], InvalidArgumentError, "assigned by the commit"),
        (t, ["id", "n"], InvalidArgumentError, r"partition columns \['p'\] are left out"),
        (t, ["id", "p"], InvalidArgumentError, r"NOT NULL columns \['n'\] are left out"),
    ]
    for table, columns, error, message in cases:
        with pytest.raises(error, match=message):
            table.write_arrow(pa.table({k: row[k] for k in ("id", "p", "n") if k in columns}), write_columns=columns)
    with pytest.raises(InvalidArgumentError, match="must be a list of column names"):
        t.write_arrow(pa.table(row), write_columns="id")  # type: ignore[arg-type]
    # data that does not match the columns is refused by the write's checks
    with pytest.raises(Exception, match=r"missing columns \['n'\]"):
        t.write_arrow(pa.table({"id": [1], "p": ["a"]}), write_columns=["id", "p", "n"])
    assert t.latest_snapshot() is None and plain.latest_snapshot() is None


def test_features_lake_assets_lacks_on_data_evolution_tables_are_refused_at_create_and_alter(catalog: Catalog) -> None:
    """Deletion vectors, blob files, vector-store files and global indexes of data-evolution tables:
    refused at create and ALTER naming the option and what to do (at open of another engine's
    table: tests/interop/test_data_evolution_refusals_interop.py)."""
    catalog.create_database("db", ignore_if_exists=True)
    with pytest.raises(UnsupportedFeatureError, match=r"deletion-vectors.enabled on a data-evolution table .*leave "
                                                      r"deletion-vectors.enabled out"):
        catalog.create_table("db.dv", SCHEMA, options={**OPTIONS, "deletion-vectors.enabled": "true"})
    t = catalog.create_table("db.t", SCHEMA, options=OPTIONS)
    for key, value, feature in [("blob-field", "v", "BLOB columns and blob files"),
                                ("blob.target-file-size", "1mb", "BLOB columns and blob files"),
                                ("vector-field", "v", "VECTOR columns and vector-store files"),
                                ("vector.file.format", "lance", "VECTOR columns and vector-store files"),
                                ("global-index.enabled", "true", "global indexes of row-tracking tables")]:
        message = f"Unknown table option '{key}' .*: {feature}.* are not implemented by lake_assets; leave it out"
        with pytest.raises(Exception, match=message):
            catalog.create_table(f"db.x{len(key)}", SCHEMA, options={**OPTIONS, key: value})
        with pytest.raises(Exception, match=message):
            t.update_schema().set_option(key, value).commit()
    with pytest.raises(Exception, match="deletion"):
        t.update_schema().set_option("deletion-vectors.enabled", "true").commit()
    assert t.refresh().schema.id == 0 and "dv" not in " ".join(map(str, catalog.list_tables("db")))
