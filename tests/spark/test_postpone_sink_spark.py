"""Postpone tables' sink options on Spark's own ``df.write.format("lake")``, on real Spark local:

* ``partition.sink-strategy`` (spark/sink_distribution.py): a Python data source cannot ask Spark
  for a distribution, so the commit checks the tasks' partitions: rows the caller clustered by
  partition are taken silently, unclustered rows land as written (valid, one file per task) with a
  warning naming the option; ``none`` takes rows as given silently.
* ``visibility-callback.enabled`` (ops/visibility_wait.py): the driver's commit returns once
  another job's compaction made the postponed rows visible."""

from __future__ import annotations

import os
import stat
import threading
import time

import pyarrow as pa
import pytest

from lake_assets import Catalog, Table
from lake_assets.table_support import Op

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string())])
# the data source's commit runs in a Python worker of the driver: its warnings go to its stderr
WARNING = "option partition.sink-strategy = hash asks for each partition's rows in one writer task"


def data(dts: tuple[str, ...] = ("d1", "d2", "d3"), n: int = 40) -> pa.Table:
    return pa.table({"k": [k for _ in dts for k in range(n)], "dt": [d for d in dts for _ in range(n)],
                     "v": [f"v{k}" for _ in dts for k in range(n)]}, schema=SCHEMA)


def make(wh: str, name: str, pk: bool, **options: str) -> Table:
    cat = Catalog(wh)
    if "db" not in cat.list_databases():
        cat.create_database("db")
    if pk:
        options = {"bucket": "-2", "postpone.batch-write-fixed-bucket": "false", **options}
    return cat.create_table(name, SCHEMA, primary_keys=["k", "dt"] if pk else [], partition_keys=["dt"],
                            options=options)


def files_per_partition(t: Table) -> dict[str, int]:
    t = t.refresh()
    scan = t.store.file_store_scan(Op.COMPACT)
    out: dict[str, int] = {}
    for e in scan.live_entries(t.store.snapshot_manager.latest()):
        dt = scan.partition_values(e.partition)[0]
        out[dt] = out.get(dt, 0) + 1
    return out


class DriverStderr:
    """What the Spark driver JVM writes to its stderr from now on. The data source's commit runs in
    a Python worker of the driver, whose stderr the JVM copies to its own (the file pytest captured
    when the session started, which ``capfd`` does not see): read it through ``/proc``."""

    def __init__(self, spark) -> None:  # type: ignore[no-untyped-def]
        self.path = f"/proc/{spark.sparkContext._gateway.proc.pid}/fd/2"
        if not stat.S_ISREG(os.stat(self.path).st_mode):
            pytest.skip("the driver's stderr is not a file (pytest -s): its warnings cannot be read back")
        self.start = os.stat(self.path).st_size

    def lines_until(self, needle: str, timeout: float = 60) -> list[str]:
        """Every line written since the start, waiting (the copy is asynchronous) until one holds ``needle``."""
        deadline = time.monotonic() + timeout
        while True:
            with open(self.path, "rb") as f:
                f.seek(self.start)
                lines = f.read().decode("utf-8", "replace").splitlines()
            if any(needle in line for line in lines) or time.monotonic() > deadline:
                return lines
            time.sleep(0.2)


@pytest.mark.parametrize("pk", [True, False], ids=["postpone", "append"])
def test_plain_df_write_checks_partition_sink_strategy(spark, tmp_path, pk: bool) -> None:
    wh = str(tmp_path / "wh")
    df = spark.createDataFrame(data().to_pandas())
    stderr = DriverStderr(spark)
    hashed = make(wh, "db.h", pk, **{"partition.sink-strategy": "hash"})
    # the caller clustered the rows: one task per partition, one file each, nothing said
    df.repartition(4, "dt").write.format("lake").mode("append").option("warehouse", wh).save("db.h")
    assert files_per_partition(hashed) == {"d1": 1, "d2": 1, "d3": 1}
    # none (the default): rows as given, as the table asks
    plain = make(wh, "db.n", pk)
    df.repartition(4).write.format("lake").mode("append").option("warehouse", wh).save("db.n")
    assert files_per_partition(plain) == {"d1": 4, "d2": 4, "d3": 4}
    # unclustered rows (4 tasks, each holding every partition) and hash: written as given, warned
    df.repartition(4).write.format("lake").mode("append").option("warehouse", wh).save("db.h")
    assert files_per_partition(hashed) == {"d1": 5, "d2": 5, "d3": 5}
    assert len(hashed.refresh().snapshots()) == 2  # both commits landed
    warned = [line for line in stderr.lines_until(WARNING) if "partition.sink-strategy" in line]
    assert len(warned) == 1  # the last write's only
    assert ("Write to db.h: option partition.sink-strategy = hash" in warned[0]
            and "3 partition(s) were written by several tasks (e.g. {'dt': 'd" in warned[0]
            and "by 4)" in warned[0] and "df.repartition('dt')" in warned[0])
    if pk:
        hashed.refresh().compact()
        assert hashed.refresh().to_arrow().num_rows == 120


def test_fixed_bucket_batch_write_is_not_checked(spark, tmp_path) -> None:
    # a postpone table's batch write into real buckets is planned per (partition, bucket): not concerned
    wh = str(tmp_path / "wh")
    t = make(wh, "db.f", True, **{"partition.sink-strategy": "hash", "postpone.batch-write-fixed-bucket": "true",
                                  "postpone.default-bucket-num": "2"})
    stderr = DriverStderr(spark)
    spark.createDataFrame(data().to_pandas()).repartition(4).write.format("lake").mode("append") \
        .option("warehouse", wh).save("db.f")
    assert t.refresh().to_arrow().num_rows == 120
    # then a postponing write of unclustered rows: its warning is the only one
    u = make(wh, "db.u", True, **{"partition.sink-strategy": "hash"})
    spark.createDataFrame(data().to_pandas()).repartition(4).write.format("lake").mode("append") \
        .option("warehouse", wh).save("db.u")
    assert files_per_partition(u) == {"d1": 4, "d2": 4, "d3": 4}
    warned = [line for line in stderr.lines_until(WARNING) if "partition.sink-strategy" in line]
    assert len(warned) == 1 and "Write to db.u:" in warned[0]


def test_df_write_waits_for_visibility_until_another_job_compacts(spark, tmp_path) -> None:
    wh = str(tmp_path / "wh")
    t = make(wh, "db.v", True, **{"visibility-callback.enabled": "true",
                                  "visibility-callback.check-interval": "100 ms",
                                  "visibility-callback.timeout": "120 s"})
    outcome: dict[str, object] = {}

    def write() -> None:
        try:
            spark.createDataFrame(data().to_pandas()).repartition(2).write.format("lake").mode("append") \
                .option("warehouse", wh).save("db.v")
            outcome["done"] = time.monotonic()
        except BaseException as exc:  # reported below
            outcome["error"] = exc

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    deadline = time.monotonic() + 120
    while t.snapshot_manager.latest_id() is None:
        assert writer.is_alive() and time.monotonic() < deadline, outcome
        time.sleep(0.05)
    time.sleep(0.5)
    assert writer.is_alive() and not outcome  # committed, waiting: its rows are still postponed
    assert t.refresh().to_arrow().num_rows == 0
    compacted = time.monotonic()
    Catalog(wh).get_table("db.v").compact()  # the other job
    writer.join(60)
    assert "error" not in outcome and isinstance(outcome.get("done"), float)
    assert outcome["done"] >= compacted  # type: ignore[operator]
    assert t.refresh().to_arrow().num_rows == 120
