"""The keep mask of a looked-up file's old deletion vector is sized by the file's own row count
taken from the Parquet footer parsed before (`VectorUpdate._kept_mask`), not by opening the file
again in every compaction unit; a count that disagrees with the manifest still stops the unit."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import CorruptMetadataError
from lake_assets.io.local import LocalFileIO

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])


def _rows(ids: np.ndarray, round_: int) -> pa.Table:
    return pa.table({"id": ids, "v": ids * 10 + round_}, schema=SCHEMA)


def _table(tmp_path: Path):  # type: ignore[no-untyped-def]
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["id"],
                         options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.write_arrow(_rows(np.arange(3_000), 0))
    t.write_arrow(_rows(np.arange(0, 3_000, 7), 1))  # the base file gets a vector
    return t


def _opens(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    opened: Counter[str] = Counter()
    real = LocalFileIO.open_input

    def counting(self: LocalFileIO, path: str, *args: object, **kw: object) -> object:
        opened[path.rsplit("/", 1)[-1]] += 1
        return real(self, path, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(LocalFileIO, "open_input", counting)
    return opened


def test_a_looked_up_file_with_a_vector_is_not_opened_for_its_row_count(tmp_path, monkeypatch):
    t = _table(tmp_path)
    [base] = [f for s in t.plan() for f in s.files if f.row_count == 3_000]
    t.to_arrow()  # a read parses every file's footer (as the compactions before did)
    opened = _opens(monkeypatch)
    for r in range(2, 5):  # three more units, each looking keys up in the base file, each marking it
        t.write_arrow(_rows(np.arange(r, 3_000, 11), r))
    # the third unit rewrites it beside the unit (a third of its rows deleted): one open, to read
    # its rows; before, two more right after, for its row count (the found and the old vector)
    assert opened[base.file_name] == 1
    expected = _rows(np.arange(3_000), 0).to_pandas().set_index("id")
    for r, step in ((1, 7), (2, 11), (3, 11), (4, 11)):
        ids = np.arange(0 if r == 1 else r, 3_000, step)
        expected.loc[ids, "v"] = ids * 10 + r
    got = t.to_arrow().to_pandas().set_index("id").sort_index()
    assert got["v"].tolist() == expected.sort_index()["v"].tolist()


def test_a_footer_count_other_than_the_manifest_stops_the_unit(tmp_path, monkeypatch):
    from lake_assets.ops import dv_compact

    t = _table(tmp_path)
    t.write_arrow(_rows(np.arange(2, 3_000, 11), 2))
    real = dv_compact.checked_row_count

    def damaged(store, path, meta, **kw):  # type: ignore[no-untyped-def]
        return real(store, path, dataclasses.replace(meta, row_count=meta.row_count + 1), **kw)

    monkeypatch.setattr(dv_compact, "checked_row_count", damaged)
    with pytest.raises(CorruptMetadataError, match=r"holds 3000 rows, but its manifest entry says 3001"):
        t.write_arrow(_rows(np.arange(3, 3_000, 11), 3))  # the unit that rewrites the base file
