"""Helpers of the Dagster tests: a two-table lake.yaml with landing files, and metadata access."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[2]
DAYS = ("2024-01-01", "2024-01-02", "2024-01-03")

# The warehouse, Spark (a short local[1] JVM) and automation (stopped) sections of the one-table
# lake.yaml files of single-feature tests; they append their own ``tables:`` section.
ONE_TABLE_SPARK = f"""
warehouse: {{kind: local, path: warehouse}}
spark:
  master: local[1]
  launcher: python
  jobs_dir: {REPO / "jobs"}
  conf:
    spark.ui.enabled: false
    spark.sql.shuffle.partitions: 1
    spark.default.parallelism: 1
    spark.driver.extraJavaOptions: -XX:TieredStopAtLevel=1 -XX:+UseSerialGC
  timeout: 10m
automation: {{default_status: stopped}}
"""

CONFIG = """
warehouse: {{kind: local, path: warehouse}}
spark:
  master: local[1]
  launcher: {launcher}
  jobs_dir: {jobs_dir}
  conf:
    spark.ui.enabled: false
    spark.sql.shuffle.partitions: 1
    spark.default.parallelism: 1
    spark.driver.extraJavaOptions: -XX:TieredStopAtLevel=1 -XX:+UseSerialGC  # short JVMs start faster
  timeout: 10m
automation: {{small_file_sensor_interval_seconds: 15, default_status: stopped}}
tables:
  - identifier: db.orders
    schema: {{id: BIGINT, dt: STRING, name: STRING, amount: DOUBLE}}
    primary_keys: [id, dt]
    partition_keys: [dt]
    options: {{bucket: 2, changelog-producer: lookup}}
    ingest: {{source: "landing/orders/{{date}}/*.parquet", format: parquet, start_date: 2024-01-01,
              partition_column: dt}}
    maintenance:
      small_file_threshold: 3
      level0_runs: 3
      size_amplification_percent: 1000
      max_level0_age: 1h
      compaction_cron: "0 2 * * *"
      expiry_cron: "30 2 * * *"
      retain_min: 2
      retain_max: 5
      changelog_after_ingest: true
      changelog: {{export_path: export/orders}}
      orphans: {{enabled: false, cron: "0 4 * * 0", max_orphan_bytes: 0}}
  - identifier: db.events
    schema: {{event_id: BIGINT, day: DATE, kind: STRING}}
    partition_keys: [day]
    ingest: {{source: "landing/events/{{date}}.csv", format: csv, start_date: 2024-01-01, partition_column: day}}
    maintenance:
      compaction_cron: "0 3 * * *"
      expiry_cron: null
      orphans: {{enabled: true, cron: "0 5 * * *"}}
"""


def write_lake(base: Path, launcher: str = "python") -> Path:
    """A lake.yaml for db.orders (PK, 2 buckets, lookup changelog) and db.events (append), plus
    landing files for DAYS: two Parquet files a day for orders, one CSV a day for events."""
    base.mkdir(parents=True, exist_ok=True)
    for i, day in enumerate(DAYS):
        folder = base / "landing" / "orders" / day
        folder.mkdir(parents=True, exist_ok=True)
        for part in range(2):
            ids = range(100 * i + 10 * part, 100 * i + 10 * part + 10)
            pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "name": [f"n{x}" for x in ids],
                                     "amount": [x * 1.5 for x in ids]}), folder / f"part-{part}.parquet")
        events = base / "landing" / "events"
        events.mkdir(parents=True, exist_ok=True)
        pacsv.write_csv(pa.table({"event_id": [i * 10 + 1, i * 10 + 2], "day": [day, day], "kind": ["a", "b"]}),
                        events / f"{day}.csv")
    path = base / "lake.yaml"
    path.write_text(CONFIG.format(launcher=launcher, jobs_dir=REPO / "jobs"))
    return path


def materialization_metadata(result: dg.ExecuteInProcessResult) -> dict[str, object]:
    """Metadata values of the (single) materialization of a run."""
    events = result.get_asset_materialization_events()
    assert events, "no materialization"
    return {k: v.value for k, v in events[-1].materialization.metadata.items()}
