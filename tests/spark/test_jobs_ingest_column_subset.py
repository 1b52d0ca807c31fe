"""The ingest job's ``--write-columns`` (a data-evolution table's declared column subset): a range of
days each replacing its partition with new rows of those columns, a re-run of a day replacing it
whole (a column update of it gone, as Paimon's INSERT OVERWRITE of a column list NULL-fills), a
landing directory streamed; and each bad declaration refused with exit 2 before any input is read."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_assets import Catalog, Table
from lake_assets.spark.jobs import ingest
from lake_assets.spark.jobs.errors import EXIT_CONFIG, EXIT_OK
from tests.interop.test_row_tracking_interop import OPTIONS
from tests.spark.test_jobs_common import run_job_main

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SCORES = pa.schema([pa.field("id", pa.int64(), nullable=False), ("dt", pa.string()), ("name", pa.string()),
                    ("score", pa.float64())])
DECLARED = "id,dt,score"


def _day(folder: Path, ids: range, **extra: list) -> str:
    """A day's landing file of (score, id) and ``extra`` columns, without the partition column."""
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"score": [i / 2 for i in ids], "id": pa.array(ids, pa.int64()), **extra}),
                   folder / f"part-{len(list(folder.iterdir()))}.parquet")
    return str(folder)


def _rows(table: Table) -> dict[int, tuple]:
    data = table.to_arrow(columns=["id", "dt", "name", "score", "_ROW_ID"])
    return {r["id"]: (r["dt"], r["name"], r["score"], r["_ROW_ID"]) for r in data.to_pylist()}


def test_write_columns_backfill_overwrite_and_stream(capsys, spark, tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    cat = Catalog(wh)
    cat.create_database("db")
    table = cat.create_table("db.scores", SCORES, partition_keys=["dt"], options=OPTIONS)
    day1, day2 = _day(tmp_path / "d1", range(1, 4)), _day(tmp_path / "d2", range(4, 6))
    base = ["--warehouse", wh, "--table", "db.scores", "--format", "parquet"]
    backfill = [*base, "--write-columns", DECLARED, "--overwrite", "--partition-source", "dt=2024-01-01", day1,
                "--partition-source", "dt=2024-01-02", day2]
    code, out = run_job_main(capsys, ingest.main, *backfill)
    assert code == EXIT_OK, out
    assert out["write_columns"] == ["id", "dt", "score"] and out["rows_in"] == 5
    assert [p["commit_kind"] for p in out["partitions"]] == ["OVERWRITE", "OVERWRITE"]
    table = cat.get_table("db.scores")
    live = [f for s in table.plan() for f in s.files]
    assert {f.write_cols for f in live} == {("id", "dt", "score")}
    assert _rows(table) == {1: ("2024-01-01", None, 0.5, 0), 2: ("2024-01-01", None, 1.0, 1),
                            3: ("2024-01-01", None, 1.5, 2), 4: ("2024-01-02", None, 2.0, 3),
                            5: ("2024-01-02", None, 2.5, 4)}
    # names set by a column update, then day 1 re-delivered: its rows are replaced whole (new row
    # ids, name null again); day 2 keeps its rows, ids and update
    table.update_columns(pa.table({"_ROW_ID": pa.array([0, 3], pa.int64()), "name": ["one", "four"]}))
    _day(tmp_path / "d1", range(10, 11))
    code, out = run_job_main(capsys, ingest.main, *[*base, "--write-columns", DECLARED, "--overwrite",
                                                    "--partition-source", "dt=2024-01-01", day1])
    assert code == EXIT_OK and out["commit_kind"] == "OVERWRITE", out
    after = _rows(cat.get_table("db.scores"))
    assert after == {1: ("2024-01-01", None, 0.5, 5), 2: ("2024-01-01", None, 1.0, 6), 3: ("2024-01-01", None, 1.5, 7),
                     10: ("2024-01-01", None, 5.0, 8), 4: ("2024-01-02", "four", 2.0, 3),
                     5: ("2024-01-02", None, 2.5, 4)}

    # a landing directory streamed (empty at first: the declared columns are its schema)
    land, ck = tmp_path / "land", str(tmp_path / "ck")
    land.mkdir()
    stream = [*base, "--write-columns", DECLARED, "--source", str(land), "--partition", "dt=2024-01-03",
              "--mode", "stream", "--checkpoint", ck]
    code, out = run_job_main(capsys, ingest.main, *stream)
    assert code == EXIT_OK and out["rows_in"] == 0, out
    _day(land, range(20, 22))
    code, out = run_job_main(capsys, ingest.main, *stream)
    assert code == EXIT_OK and out["rows_in"] == 2 and out["commit_kind"] == "APPEND", out
    table = cat.get_table("db.scores")
    assert [e.file.write_cols for e in table.store.file_store_scan().delta_entries(table.latest_snapshot())] == \
        [("id", "dt", "score")]
    assert {k: v for k, v in _rows(table).items() if k >= 20} == {20: ("2024-01-03", None, 10.0, 9),
                                                                  21: ("2024-01-03", None, 10.5, 10)}

    # refused before any input is read (the source does not even exist): exit 2, nothing written
    cat.create_table("db.plain", SCORES, partition_keys=["dt"])
    latest = table.latest_snapshot().id
    nowhere = str(tmp_path / "nowhere")
    for name, declared, message in [
        ("db.scores", "id,dt,nope", r"unknown columns \['nope'\]"),
        ("db.scores", "dt,score", r"NOT NULL columns \['id'\] are left out"),
        ("db.scores", "id,score", r"partition columns \['dt'\] are left out"),
        ("db.scores", "id,,dt", r"expected comma-separated column names"),
        ("db.plain", DECLARED, r"needs a data-evolution table \(data-evolution.enabled = true"),
    ]:
        code, out = run_job_main(capsys, ingest.main, "--warehouse", wh, "--table", name, "--format", "parquet",
                                 "--write-columns", declared, "--source", nowhere, "--partition", "dt=2024-01-04")
        assert code == EXIT_CONFIG, (declared, out)
        assert re.search(message, out["error"]), (message, out["error"])
    # the input must hold exactly the declared columns: a column beyond them is refused by name
    extra = _day(tmp_path / "extra", range(30, 31), name=["x"])
    code, out = run_job_main(capsys, ingest.main, *base, "--write-columns", DECLARED, "--source", extra,
                             "--partition", "dt=2024-01-04")
    assert code == EXIT_CONFIG and "the input has unknown columns ['name'] (--write-columns" in out["error"], out
    assert cat.get_table("db.scores").latest_snapshot().id == latest
    assert cat.get_table("db.plain").latest_snapshot() is None
