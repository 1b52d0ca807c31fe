"""``data-file.path-directory`` values: only a relative directory inside the table, not one of its
own directories (tests/interop/test_data_directory_interop.py checks the option with pypaimon 2.1
and pypaimon-rust 0.4)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import LakeError, OptionError
from lake_assets.paths import TablePaths

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("k", pa.int32(), nullable=False),
                    ("v", pa.string())])
OPTIONS = {"bucket": "2", "data-file.path-directory": "data/files"}


def test_bucket_directories_are_below_it() -> None:
    assert TablePaths("/w/t", "data/files").bucket_dir("dt=a", 3) == "/w/t/data/files/dt=a/bucket-3"
    assert TablePaths("/w/t", "data").bucket_dir("", -2) == "/w/t/data/bucket-postpone"
    assert TablePaths("/w/t").bucket_dir("", 0) == "/w/t/bucket-0"


def test_a_path_out_of_the_table_is_refused(tmp_path: Path) -> None:
    """Values that would leave the table directory, or mix data into its own directories, are
    refused at create; a table carrying one (another engine's) refuses every operation."""
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    for bad in ("../elsewhere", "/abs/data", "s3://bucket/data", "file:/x", "a//b", "a/./b", "manifest", "snapshot/x"):
        with pytest.raises(OptionError, match=r"data-file\.path-directory"):
            catalog.create_table("db.t", SCHEMA, primary_keys=["k"],
                                 options={**OPTIONS, "data-file.path-directory": bad})
    assert not catalog.table_exists("db.t")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["dt", "k"], partition_keys=["dt"], options=OPTIONS)
    carried = dataclasses.replace(t.schema, id=1, options={**OPTIONS, "data-file.path-directory": "../../x"})
    t.file_io.write_bytes(t.paths.schema_file(1), carried.to_json().encode())
    with pytest.raises(LakeError, match=r"'\.\.' for option data-file\.path-directory of db\.t"):
        catalog.get_table("db.t")
