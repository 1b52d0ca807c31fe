"""A lookup compaction's level-0 file whose merge with the rows above changes none of its rows is
relabelled to the unit's level instead of written again (`ops.dv_old_values.relabel_candidate`):
when it is (whole rows of a partial-update table), when it is not (a partial row, a sum, a
level-specific format), and that the table reads as its twin without deletion vectors either way."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.spec.manifest import FileSource

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("qty", pa.int32())])


def _rows(ids: np.ndarray, round_: int, partial: bool = False) -> pa.Table:
    names = [None if partial and i % 3 == 0 else f"r{round_}-{i}" for i in ids.tolist()]
    return pa.table({"id": ids, "name": pa.array(names), "qty": (ids % 7 + round_).astype(np.int32)}, schema=SCHEMA)


def _tables(root: Path, options: dict[str, str]):  # type: ignore[no-untyped-def]
    cat = Catalog(str(root))
    cat.create_database("db")
    opts = {"bucket": "2", **options}
    dv = {**opts, "deletion-vectors.enabled": "true"}
    return (cat.create_table("db.dv", SCHEMA, primary_keys=["id"], options=dv),
            cat.create_table("db.plain", SCHEMA, primary_keys=["id"], options=opts))


def _round(tables, data: pa.Table) -> tuple[set[str], list]:  # type: ignore[no-untyped-def]
    """Write ``data`` to both tables; the DV table's file names before, and its files after."""
    dv, plain = tables
    before = {f.file_name for s in dv.plan() for f in s.files}
    dv.write_arrow(data)
    plain.write_arrow(data)
    assert dv.to_arrow().sort_by("id").equals(plain.to_arrow().sort_by("id"))
    return before, [f for s in dv.plan() for f in s.files]


def test_whole_rows_of_a_partial_update_table_are_relabelled_and_read_as_without_vectors(tmp_path: Path) -> None:
    tables = _tables(tmp_path, {"merge-engine": "partial-update"})
    rng = np.random.default_rng(4)
    _round(tables, _rows(np.arange(2_000), 0))
    _round(tables, _rows(np.sort(rng.choice(2_000, 300, replace=False)), 1))
    before, files = _round(tables, _rows(np.sort(rng.choice(2_000, 300, replace=False)), 2))
    # every bucket's new level-0 file now sits above level 0 as the writer wrote it (APPEND, a
    # name no earlier snapshot held), and no compaction output was written beside it
    new = [f for f in files if f.file_name not in before]
    assert new and all(f.level > 0 and f.file_source == FileSource.APPEND for f in new)
    # the rows it replaced above are hidden by vectors: one live row per key
    assert tables[0].to_arrow().num_rows == 2_000


@pytest.mark.parametrize(("options", "partial"), [
    pytest.param({"merge-engine": "partial-update"}, True, id="partial-rows"),
    pytest.param({"merge-engine": "aggregation", "fields.qty.aggregate-function": "sum"}, False, id="sum"),
    pytest.param({"merge-engine": "partial-update", "file.compression.per.level": "0:lz4"}, False,
                 id="level-codec"),
])
def test_rows_the_merge_changes_or_a_level_specific_file_are_written_again(
        tmp_path: Path, options: dict[str, str], partial: bool) -> None:
    tables = _tables(tmp_path, options)
    rng = np.random.default_rng(5)
    _round(tables, _rows(np.arange(2_000), 0))
    _round(tables, _rows(np.sort(rng.choice(2_000, 300, replace=False)), 1, partial))
    before, files = _round(tables, _rows(np.sort(rng.choice(2_000, 300, replace=False)), 2, partial))
    new = [f for f in files if f.file_name not in before]
    assert new and all(f.level > 0 and f.file_source == FileSource.COMPACT for f in new)
