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
    # every hostile value as a partition value, and one as the default name of the null partition
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["dt"],
                             options={"bucket": "-1", "partition.default-name": "../../x"})
    rows = pa.table({"id": range(len(HOSTILE) + 1), "dt": [*HOSTILE, None]}, schema=SCHEMA)
    t.write_arrow(rows)
    assert sorted(t.to_arrow().to_pylist(), key=lambda r: r["id"]) == rows.to_pylist()
    listed = _listing(t)
    data = [p for p in listed if p.endswith(".parquet")]
    # one file per partition (the null one's beside the value equal to the default name), each one
    # directory below the table: a value is one escaped segment; nothing anywhere else
    assert len(data) == len(HOSTILE) + 1 and all(p.startswith("db.db/t/dt=") and p.count("/") == 4 for p in data), data
    assert all(p.startswith("db.db/") for p in listed)  # (S3 keeps a db.db/.database marker)
    for bad in HOSTILE:
        with pytest.raises(LakeError):
            t.create_tag(bad)
        with pytest.raises(LakeError):
            t.create_branch(bad)
        with pytest.raises(LakeError):
            t.store.consumer_manager().record(bad, 1)
    assert _listing(t) == listed


def test_names_stay_plain_on_a_local_disk(tmp_path: Path) -> None:
    _check_store(Catalog(str(tmp_path / "wh")))


def test_names_stay_plain_on_s3(s3_warehouse: tuple[str, dict[str, Any]]) -> None:
    wh, opts = s3_warehouse
    _check_store(Catalog(wh, **opts))
