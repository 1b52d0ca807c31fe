"""The ingest job: Parquet, CSV and JSON by column name, partition re-runs that replace, streaming."""

from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_assets import Catalog, Table
from lake_assets.spark.jobs import ingest
from lake_assets.spark.jobs.errors import EXIT_CONFIG, EXIT_DATA, EXIT_OK
from tests.spark.test_jobs_common import run_job_main

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

ORDERS = pa.schema([("order_id", pa.int64()), ("dt", pa.string()), ("amount", pa.float64()),
                    ("qty", pa.int32()), ("day", pa.date32())])


def _table(wh: str, *, pk: bool = True) -> Table:
    cat = Catalog(wh)
    cat.create_database("db")
    if pk:
        return cat.create_table("db.orders", ORDERS, primary_keys=["order_id", "dt"], partition_keys=["dt"],
                                options={"bucket": "2"})
    return cat.create_table("db.orders", ORDERS, partition_keys=["dt"])


def _rows(table: Table) -> list[tuple]:
    return sorted(tuple(r.values()) for r in table.to_arrow().to_pylist())


def _args(wh: str, *rest: str) -> list[str]:
    return ["--warehouse", wh, "--table", "db.orders", *rest]


def test_parquet_cast_by_name_then_partition_rerun_replaces(capsys, spark, tmp_path):
    wh = str(tmp_path / "wh")
    table = _table(wh)
    land = tmp_path / "land"
    land.mkdir()
    # columns in another order and wider/narrower types than the table: matched by name and cast
    pq.write_table(pa.table({"qty": pa.array([1, 2, 3], pa.int64()), "order_id": pa.array([1, 2, 3], pa.int32()),
                             "day": [dt.date(2024, 1, 1)] * 3, "amount": [1.5, 2.5, 3.5],
                             "dt": ["2024-01-01"] * 3}), land / "a.parquet")
    code, out = run_job_main(capsys, ingest.main, *_args(wh, "--source", str(land / "*.parquet"),
                                                          "--format", "parquet", "--partition", "dt=2024-01-01"))
    assert code == EXIT_OK, out
    assert out["commit_kind"] == "APPEND" and out["rows_in"] == out["rows_out"] == 3 and out["files_in"] == 1
    assert out["bytes_in"] > 0 and out["partition"] == {"dt": "2024-01-01"}
    assert _rows(table) == [(i, "2024-01-01", i + 0.5, i, dt.date(2024, 1, 1)) for i in (1, 2, 3)]
    other = tmp_path / "other.parquet"
    pq.write_table(pa.table({"order_id": [9], "dt": ["2024-01-02"], "amount": [9.0], "qty": [9],
                             "day": [dt.date(2024, 1, 2)]}), other)
    assert run_job_main(capsys, ingest.main, *_args(wh, "--source", str(other), "--format", "parquet"))[0] == 0
    # the day is re-delivered with one order less: re-running replaces it, the other day stays
    (land / "a.parquet").unlink()
    pq.write_table(pa.table({"order_id": [1, 2], "amount": [10.0, 20.0], "qty": [1, 2],
                             "day": [dt.date(2024, 1, 1)] * 2}), land / "b.parquet")  # no dt column
    for _ in range(2):
        code, out = run_job_main(capsys, ingest.main, *_args(wh, "--source", str(land), "--format", "parquet",
                                                              "--partition", "dt=2024-01-01", "--overwrite"))
        assert code == EXIT_OK, out
        assert out["commit_kind"] == "OVERWRITE"
    assert _rows(table) == [(1, "2024-01-01", 10.0, 1, dt.date(2024, 1, 1)),
                            (2, "2024-01-01", 20.0, 2, dt.date(2024, 1, 1)),
                            (9, "2024-01-02", 9.0, 9, dt.date(2024, 1, 2))]
    # an empty re-delivery of a day replaces it with nothing
    empty = tmp_path / "empty.parquet"
    pq.write_table(ORDERS.empty_table(), empty)
    code, out = run_job_main(capsys, ingest.main, *_args(wh, "--source", str(empty), "--format", "parquet",
                                                          "--partition", "dt=2024-01-02", "--overwrite"))
    assert code == EXIT_OK and out["rows_in"] == 0 and out["commit_kind"] == "OVERWRITE", out
    assert [r[0] for r in _rows(table)] == [1, 2]


def test_csv_uses_the_table_types_and_header_order(capsys, spark, tmp_path):
    wh = str(tmp_path / "wh")
    table = _table(wh, pk=False)
    src = tmp_path / "in.csv"
    src.write_text("day,amount,order_id,qty,dt\n2024-02-01,1.25,7,3,2024-02-01\n2024-02-01,2.5,8,4,2024-02-01\n")
    code, out = run_job_main(capsys, ingest.main, *_args(wh, "--source", str(src), "--format", "csv"))
    assert code == EXIT_OK, out
    assert out["rows_in"] == out["rows_out"] == 2
    day = dt.date(2024, 2, 1)
    assert _rows(table) == [(7, "2024-02-01", 1.25, 3, day), (8, "2024-02-01", 2.5, 4, day)]


def test_json_dynamic_overwrite_replaces_the_partitions_present(capsys, spark, tmp_path):
    wh = str(tmp_path / "wh")
    table = _table(wh)
    table.write_arrow(pa.table({"order_id": [1, 2], "dt": ["2024-03-01", "2024-03-02"], "amount": [1.0, 2.0],
                                "qty": pa.array([1, 2], pa.int32()), "day": [dt.date(2024, 3, 1)] * 2}))
    src = tmp_path / "in.json"
    src.write_text("\n".join(json.dumps(r) for r in [
        {"order_id": 5, "dt": "2024-03-01", "amount": 5, "qty": 5, "day": "2024-03-01"},
        {"order_id": 6, "dt": "2024-03-01", "amount": 6.5, "qty": 6, "day": "2024-03-01"},
    ]))
    code, out = run_job_main(capsys, ingest.main, *_args(wh, "--source", str(src), "--format", "json", "--overwrite"))
    assert code == EXIT_OK, out
    assert out["commit_kind"] == "OVERWRITE" and out["rows_removed"] == 1
    assert [r[:2] for r in _rows(table)] == [(2, "2024-03-02"), (5, "2024-03-01"), (6, "2024-03-01")]


def test_rows_outside_the_partition_fail_without_commit(capsys, spark, tmp_path):
    wh = str(tmp_path / "wh")
    table = _table(wh)
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"order_id": [1, 2], "dt": ["2024-01-01", "2024-01-05"], "amount": [1.0, 2.0],
                             "qty": [1, 2], "day": [dt.date(2024, 1, 1)] * 2}), src)
    code, out = run_job_main(capsys, ingest.main, *_args(wh, "--source", str(src), "--format", "parquet",
                                                          "--partition", "dt=2024-01-01", "--overwrite"))
    assert code == EXIT_DATA, out
    assert "dt=2024-01-05" in out["error"]
    assert table.latest_snapshot() is None


@pytest.mark.parametrize(("columns", "message"), [
    ({"order_id": [1], "dt": ["d"], "amount": [1.0], "qty": [1], "day": [dt.date(2024, 1, 1)], "extra": [1]},
     "unknown columns ['extra']"),
    ({"order_id": [1], "dt": ["d"], "amount": [1.0]}, "missing columns ['qty', 'day']"),
])
def test_unknown_or_missing_columns_exit_2(capsys, spark, tmp_path, columns, message):
    wh = str(tmp_path / "wh")
    _table(wh)
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table(columns), src)
    code, out = run_job_main(capsys, ingest.main, *_args(wh, "--source", str(src), "--format", "parquet"))
    assert code == EXIT_CONFIG and message in out["error"], out


def test_missing_source_and_bad_flags_exit_2(capsys, spark, tmp_path):
    wh = str(tmp_path / "wh")
    _table(wh)
    code, out = run_job_main(capsys, ingest.main, *_args(wh, "--source", str(tmp_path / "nope"), "--format", "json"))
    assert code == EXIT_CONFIG, out
    code, out = run_job_main(capsys, ingest.main, *_args(wh, "--source", str(tmp_path), "--mode", "stream",
                                                          "--format", "json"))
    assert code == EXIT_CONFIG and "--checkpoint" in out["error"]


def test_source_table(capsys, spark, tmp_path):
    wh = str(tmp_path / "wh")
    table = _table(wh, pk=False)
    spark.createDataFrame([(3, "2024-04-01", 1.0, 1, dt.date(2024, 4, 1))],
                          "order_id long, dt string, amount double, qty int, day date").createOrReplaceTempView("v_in")
    code, out = run_job_main(capsys, ingest.main, *_args(wh, "--source-table", "v_in"))
    assert code == EXIT_OK, out
    assert _rows(table) == [(3, "2024-04-01", 1.0, 1, dt.date(2024, 4, 1))]


def test_stream_available_now_is_exactly_once(capsys, spark, tmp_path):
    wh = str(tmp_path / "wh")
    table = _table(wh)
    land = tmp_path / "land"
    land.mkdir()
    ck = str(tmp_path / "ck")

    def drop(name: str, ids: list[int]) -> None:
        (land / name).write_text("order_id,amount,qty,day\n" + "".join(f"{i},{i}.5,{i},2024-05-01\n" for i in ids))

    args = _args(wh, "--source", str(land), "--format", "csv", "--partition", "dt=2024-05-01",
                 "--mode", "stream", "--trigger", "availableNow", "--checkpoint", ck)
    drop("1.csv", [1, 2])
    code, out = run_job_main(capsys, ingest.main, *args)
    assert code == EXIT_OK, out
    assert out["rows_in"] == 2 and out["commit_kind"] == "APPEND"
    drop("2.csv", [3])
    code, out = run_job_main(capsys, ingest.main, *args)
    assert code == EXIT_OK and out["rows_in"] == 1, out
    code, out = run_job_main(capsys, ingest.main, *args)  # nothing new: no snapshot
    assert code == EXIT_OK and out["rows_in"] == 0 and out["snapshot_id"] is None, out
    assert [r[0] for r in _rows(table)] == [1, 2, 3]
    assert len(table.snapshots()) == 2


def _day_file(folder, day: str, ids: range) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    d = dt.date.fromisoformat(day)
    pq.write_table(pa.table({"order_id": pa.array(ids, pa.int64()), "amount": [float(i) for i in ids],
                             "qty": pa.array([1] * len(ids), pa.int32()), "day": [d] * len(ids)}),
                   folder / "part-0.parquet")
    return str(folder / "*.parquet")


def test_partition_sources_one_application_one_overwrite_per_day(capsys, spark, tmp_path):
    """A range in one run: one OVERWRITE commit per day with that day's numbers; retried, the range
    replaces each day again (no duplicates) and leaves days outside it alone."""
    wh = str(tmp_path / "wh")
    table = _table(wh)
    days = ["2024-01-01", "2024-01-02", "2024-01-03"]
    pairs = []
    for i, day in enumerate(days):
        source = _day_file(tmp_path / "land" / day, day, range(10 * i, 10 * i + 3 + i))
        pairs += ["--partition-source", f"dt={day}", source]
    outside = tmp_path / "outside.parquet"
    pq.write_table(pa.table({"order_id": [99], "dt": ["2023-12-31"], "amount": [9.0], "qty": pa.array([9], pa.int32()),
                             "day": [dt.date(2023, 12, 31)]}), outside)
    assert run_job_main(capsys, ingest.main, *_args(wh, "--source", str(outside), "--format", "parquet"))[0] == 0
    for attempt in range(2):
        before = table.snapshot_manager.latest_id()
        code, out = run_job_main(capsys, ingest.main, *_args(wh, *pairs, "--format", "parquet", "--overwrite"))
        assert code == EXIT_OK, out
        per_day = out["partitions"]
        assert [p["partition"] for p in per_day] == [f"dt={d}" for d in days]
        assert [p["rows_in"] for p in per_day] == [3, 4, 5] and out["rows_in"] == 12
        assert [p["commit_kind"] for p in per_day] == ["OVERWRITE"] * 3
        assert [p["snapshot_id"] for p in per_day] == [before + 1, before + 2, before + 3]
        assert [p["rows_out"] for p in per_day] == [3, 4, 5] and [p["files_in"] for p in per_day] == [1, 1, 1]
        assert [p["rows_removed"] for p in per_day] == ([0, 0, 0] if attempt == 0 else [3, 4, 5])
        assert out["snapshot_id"] == before + 3
        counts = {}
        for r in table.to_arrow(columns=["dt"])["dt"].to_pylist():
            counts[r] = counts.get(r, 0) + 1
        assert counts == {"2023-12-31": 1, "2024-01-01": 3, "2024-01-02": 4, "2024-01-03": 5}


def test_partition_sources_checked_before_any_write(capsys, spark, tmp_path):
    """A bad day anywhere in the range fails the job before the first commit."""
    wh = str(tmp_path / "wh")
    table = _table(wh)
    good = _day_file(tmp_path / "a", "2024-01-01", range(3))
    bad_dir = tmp_path / "b"
    bad_dir.mkdir()
    pq.write_table(pa.table({"order_id": [1], "nope": [1]}), bad_dir / "x.parquet")
    code, out = run_job_main(capsys, ingest.main, *_args(
        wh, "--partition-source", "dt=2024-01-01", good, "--partition-source", "dt=2024-01-02",
        str(bad_dir / "*.parquet"), "--format", "parquet", "--overwrite"))
    assert code == EXIT_CONFIG and "unknown columns ['nope']" in out["error"], out
    assert table.snapshot_manager.latest_id() is None
    code, out = run_job_main(capsys, ingest.main, *_args(
        wh, "--partition-source", "dt=2024-01-01", good, "--partition-source", "dt=2024-01-01", good,
        "--format", "parquet"))
    assert code == EXIT_CONFIG and "given twice" in out["error"], out
    code, out = run_job_main(capsys, ingest.main, *_args(
        wh, "--partition-source", "nokey=1", good, "--format", "parquet"))
    assert code == EXIT_CONFIG and "not a partition key" in out["error"], out
    assert table.snapshot_manager.latest_id() is None


@pytest.mark.parametrize("ignore_empty", ["false", "true"])
def test_an_empty_day_commits_an_empty_snapshot_when_the_table_keeps_them(capsys, spark, tmp_path, ignore_empty):
    """``snapshot.ignore-empty-commit = false``: an appended day of no rows is an APPEND snapshot with
    no files (as Paimon's batch commits), reported in that day's numbers; by default none."""
    wh = str(tmp_path / "wh")
    table = _table(wh)
    table.update_schema().set_option("snapshot.ignore-empty-commit", ignore_empty).commit()
    table = Catalog(wh).get_table("db.orders")
    empty = tmp_path / "b" / "part-0.parquet"
    empty.parent.mkdir()
    pq.write_table(ORDERS.empty_table().drop_columns(["dt"]), empty)  # a day delivered with no rows
    pairs = ["--partition-source", "dt=2024-01-01", _day_file(tmp_path / "a", "2024-01-01", range(3)),
             "--partition-source", "dt=2024-01-02", str(empty)]
    code, out = run_job_main(capsys, ingest.main, *_args(wh, *pairs, "--format", "parquet"))
    assert code == EXIT_OK, out
    per_day = out["partitions"]
    assert [p["rows_in"] for p in per_day] == [3, 0] and [p["rows_out"] for p in per_day] == [3, 0]
    if ignore_empty == "false":
        assert [(p["snapshot_id"], p["commit_kind"]) for p in per_day] == [(1, "APPEND"), (2, "APPEND")]
        assert table.snapshot(2).delta_record_count == 0 and table.snapshot(2).total_record_count == 3
    else:
        assert [(p["snapshot_id"], p["commit_kind"]) for p in per_day] == [(1, "APPEND"), (None, None)]
    assert len(_rows(table)) == 3
