"""Names that become paths, audited on a local disk and on S3 (moto): partition values and the
``partition.default-name`` option become one escaped directory under the table (``..``, an
absolute path, a scheme, NUL and a backslash included) and read back as written; tag, branch and
consumer names that are not plain names are refused before anything is written, on either store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog, LakeError

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("dt", pa.string())])
HOSTILE = ["../../x", "..", ".", "/abs", "s3://other-bucket/x", "a\x00b", "C:\\x"]


def _listing(t: Any) -> list[str]:
    """Every path under the warehouse (the table's and anything next to it), relative to it."""
    fio = t.file_io
    top = t.paths.root.rsplit("/", 2)[0]
    return sorted(st.path[len(top) + 1:] for st in fio.walk_files(top))


def _check_store(catalog: Catalog) -> None:
    catalog.create_database("db")
    for i, value in enumerate(HOSTILE):
        t = catalog.create_table(f"db.v{i}", SCHEMA, partition_keys=["dt"],
                                 options={"bucket": "-1", "partition.default-name": value})
        t.write_arrow(pa.table({"id": [1, 2], "dt": [value, None]}, schema=SCHEMA))
        assert sorted(t.to_arrow().to_pylist(), key=lambda r: r["id"]) == [{"id": 1, "dt": value},
                                                                             {"id": 2, "dt": None}]
        data = [p for p in _listing(t) if p.endswith(".parquet") and p.startswith(f"db.db/v{i}/")]
        # both files one directory below the table: the value is one escaped path segment
        assert len(data) == 2 and all(p.split("/")[2].startswith("dt=") and p.count("/") == 4 for p in data), data
    assert all(p.startswith("db.db/") for p in _listing(t))  # nothing anywhere else in the warehouse
    t = catalog.get_table("db.v0")
    before = _listing(t)
    for bad in HOSTILE:
        with pytest.raises(LakeError):
            t.create_tag(bad)
        with pytest.raises(LakeError):
            t.create_branch(bad)
        with pytest.raises(LakeError):
            t.store.consumer_manager().record(bad, 1)
    assert _listing(t) == before


def test_names_stay_plain_on_a_local_disk(tmp_path: Path) -> None:
    _check_store(Catalog(str(tmp_path / "wh")))


def test_names_stay_plain_on_s3(s3_warehouse: tuple[str, dict[str, Any]]) -> None:
    wh, opts = s3_warehouse
    _check_store(Catalog(wh, **opts))
