"""Where data files roll (lake_assets/formats/rolling_writer.py), without Java: at Paimon's check
points (every 1,000 rows written over the writer's files; an ORC file's row batches), at the first
one holding ``target-file-size``, and at ``target-file-row-num`` rows (Paimon 1.x). Against Java
0.9: tests/differential/test_rolling_java.py."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.formats.rolling_writer import rows_to_check
from lake_assets.table_support import Op


def rows_of(n: int, start: int = 0) -> pa.Table:
    rng = np.random.default_rng(start)
    return pa.table({"id": pa.array(np.arange(start, start + n), pa.int64()), "v": pa.array(rng.random(n))})


def files(t) -> list[tuple[int, int]]:
    t = t.refresh()
    entries = t.store.file_store_scan(Op.COMPACT).live_entries(t.snapshot_manager.latest())
    ordered = sorted(entries, key=lambda e: (e.file.min_sequence_number, e.file.file_name))
    return [(e.file.row_count, e.file.file_size) for e in ordered]


@pytest.fixture()
def catalog(tmp_path) -> Catalog:
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


def test_rows_to_the_next_check_point() -> None:
    assert rows_to_check(0, 1, 1000) == 1000
    assert rows_to_check(0, 1000, 1000) == 1000
    assert rows_to_check(0, 1001, 1000) == 2000
    assert rows_to_check(2500, 0, 1000) == 500  # at least one row: to the next check point
    assert rows_to_check(3000, 0, 1000) == 1000


@pytest.mark.parametrize("fmt", ["parquet", "avro", "orc"])
def test_files_end_at_the_first_check_point_holding_the_target(catalog: Catalog, fmt: str) -> None:
    target = 128 * 1024
    t = catalog.create_table("db.t", rows_of(1).schema,
                             options={"bucket": "-1", "file.format": fmt, "target-file-size": str(target)})
    # several writes: the check points count the rows over the writer's files
    t.write_arrow(pa.concat_tables([rows_of(30_000, 0), rows_of(25_500, 30_000)]))
    got = files(t)
    assert sum(r for r, _ in got) == 55_500 and len(got) >= 3
    every = 1024 if fmt == "orc" else 1000
    for rows, size in got[:-1]:
        assert rows % every == 0, got
        if fmt != "orc":  # measured: the target reached, not one check interval earlier
            assert size >= target and size * (rows - every) / rows < 1.01 * target, got
        else:  # predicted from bytes per row (the stripe is buffered)
            assert 0.85 * target <= size <= 1.15 * target + every * size / rows, got


def test_orc_check_points_are_its_row_batches(catalog: Catalog) -> None:
    t = catalog.create_table("db.t", rows_of(1).schema, options={
        "bucket": "-1", "file.format": "orc", "target-file-size": "64 kb", "orc.write.batch-size": "300"})
    t.write_arrow(rows_of(40_000))
    got = files(t)
    assert len(got) >= 3 and all(r % 300 == 0 for r, _ in got[:-1]), got


@pytest.mark.parametrize("pk", [False, True], ids=["append", "pk"])
def test_target_file_row_num_rolls_files(catalog: Catalog, pk: bool) -> None:
    t = catalog.create_table("db.t", rows_of(1).schema, primary_keys=["id"] if pk else [],
                             options={"bucket": "1" if pk else "-1", "target-file-row-num": "2500"})
    t.write_arrow(rows_of(11_000))
    assert [r for r, _ in files(t)] == [2500, 2500, 2500, 2500, 1000]
    assert t.refresh().to_arrow().num_rows == 11_000
